/* b2stream convert: contiguous frame <-> sparse frame.  Chunks are copied
 * as stored (no recompression), with the metalayers, the vlmetalayers and
 * the header's compression defaults. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "b2s_frame_lock.h"
#include "b2s_frame_writer.h"

static const char help[] =
    "usage: b2stream convert SRC DST [--sparse | --contiguous]\n"
    "                        [--ceph-conf FILE]\n"
    "\n"
    "Copy the frame SRC into a new frame DST (which must not exist) of the\n"
    "other type: a contiguous frame becomes a sparse frame directory and a\n"
    "sparse frame a contiguous file, unless --sparse or --contiguous says\n"
    "which.  Chunks are copied as stored, without recompression; metalayers,\n"
    "vlmetalayers and the compression defaults of the header are kept.\n"
    "\n"
    "SRC may be a distributed frame (rados://POOL/NAME or\n"
    "dir:///ABS/DIR/NAME): its committed chunks are exported to a local\n"
    "frame DST, contiguous unless --sparse, with its records frame beside it\n"
    "(DST's NAME.records.b2frame) and the series metadata; c-blosc2 and\n"
    "python-blosc2 open it unchanged.  Prints 'exported N chunks'.\n"
    "\n"
    "  --ceph-conf FILE  the Ceph configuration of a rados:// SRC (default\n"
    "                    $CEPH_CONF, else librados's own search)\n";

/* Writer options that reproduce SRC's header defaults. */
static int opts_from(const b2s_frame_header *h, b2s_fwriter_opts *wo) {
  *wo = B2S_FWRITER_OPTS_DEFAULTS;
  return b2s_frame_header_cparams(h, &wo->cparams);
}

static int copy_chunks(cli_src *src, b2s_fwriter *w, const char *dst) {
  int64_t n = cli_src_nchunks(src);
  for (int64_t i = 0; i < n; i++) {
    cli_chunk d;
    if (cli_src_chunk(src, i, &d) < 0)
      return -1;
    int64_t rc = b2s_fwriter_append(w, d.bytes, (size_t)d.cbytes);
    if (rc < 0) {
      cli_err("%s: cannot append chunk %lld: %s", dst, (long long)i,
              b2s_strerror((int)rc));
      return -1;
    }
  }
  return 0;
}

static int copy_vlmetas(cli_src *src, b2s_fwriter *w, const char *dst) {
  const b2s_frame_metas *m = b2s_frame_vlmetalayers(src->frame);
  for (int32_t k = 0; k < m->n; k++) {
    uint8_t *content;
    int32_t len;
    const char *name = m->items[k].name;
    int rc = b2s_frame_vlmeta_get(src->frame, name, src->ctx, &content, &len);
    if (rc < 0) {
      cli_src_frame_err(src, rc);
      return -1;
    }
    rc = b2s_fwriter_vlmeta_set(w, name, content, len);
    free(content);
    if (rc < 0) {
      cli_err("%s: cannot copy vlmetalayer '%s': %s", dst, name,
              b2s_strerror(rc));
      return -1;
    }
  }
  return 0;
}

static int convert(cli_src *src, const char *dst, bool sparse) {
  b2s_fwriter_opts wo;
  int rc = opts_from(b2s_frame_header_get(src->frame), &wo);
  if (rc < 0) {
    cli_err("%s: typesize above %d cannot be written", src->path,
            B2S_MAX_TYPESIZE);
    return CLI_EXIT_FAIL;
  }
  b2s_fwriter *w;
  rc = b2s_fwriter_create(dst, sparse, &wo, b2s_frame_metalayers(src->frame),
                          &w);
  if (rc < 0) {
    cli_err("%s: cannot create the frame: %s", dst, b2s_strerror(rc));
    return CLI_EXIT_FAIL;
  }
  if (copy_chunks(src, w, dst) < 0 || copy_vlmetas(src, w, dst) < 0) {
    b2s_fwriter_free(w);
    cli_remove_frame(dst);
    return CLI_EXIT_FAIL;
  }
  if ((rc = b2s_fwriter_close(w)) < 0) {
    cli_err("%s: cannot close the frame: %s", dst, b2s_strerror(rc));
    cli_remove_frame(dst);
    return CLI_EXIT_FAIL;
  }
  return CLI_EXIT_OK;
}

/* Export a distributed frame's committed chunks to the new frame dst. */
static int convert_dist(const char *src_path, const char *conf,
                        const char *dst, bool sparse) {
  char rpath[4096];
  struct stat st;
  if (b2s_records_path(dst, rpath, sizeof rpath) < 0) {
    cli_err("%s: name too long", dst);
    return CLI_EXIT_FAIL;
  }
  if (lstat(rpath, &st) == 0) {
    cli_err("%s: already exists", rpath);   /* the export's records frame */
    return CLI_EXIT_FAIL;
  }
  cli_src src;
  if (cli_src_open_dist(src_path, conf, &src) < 0)
    return CLI_EXIT_FAIL;
  int64_t n = b2s_dframe_export(src.dframe, dst, sparse);
  int status = CLI_EXIT_OK;
  if (n < 0) {
    const char *words = b2s_store_last_error();
    cli_err("%s: cannot export to %s: %s%s%s", src_path, dst,
            b2s_strerror((int)n), words[0] ? ": " : "", words);
    /* a partial export must not pass for the frame */
    cli_remove_frame(rpath);
    cli_remove_frame(dst);
    status = CLI_EXIT_FAIL;
  } else {
    printf("exported %lld chunks\n", (long long)n);
    if (!cli_flush_stdout())
      status = CLI_EXIT_FAIL;
  }
  cli_src_close(&src);
  return status;
}

static int run(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *ops[2] = {NULL, NULL}, *operand, *conf = NULL;
  int nops = 0, want = -1;   /* -1: the opposite of SRC */
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    if (t == 2 && nops < 2)
      ops[nops++] = operand;
    else if (t == 2)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    else if (!strcmp(a.opt, "ceph-conf")) {
      if ((conf = cli_args_value(&a)) == NULL)
        return CLI_EXIT_USAGE;
    } else if (strcmp(a.opt, "sparse") && strcmp(a.opt, "contiguous"))
      return cli_unknown_option(&a);
    else if (!cli_args_no_value(&a))
      return CLI_EXIT_USAGE;
    else
      want = !strcmp(a.opt, "sparse");
  }
  if (nops < 2)
    return cli_usage(&a, "needs SRC and DST");
  if (!strcmp(ops[1], "-"))
    return cli_usage(&a, "DST must be a path: a frame is not written to "
                         "stdout");
  cli_dist_url u;
  int dist = cli_dist_parse(ops[0], &u);
  if (dist < 0)
    return CLI_EXIT_USAGE;
  if (dist == 0 && conf != NULL)
    return cli_usage(&a, "--ceph-conf goes with a rados:// SRC");
  struct stat st;
  if (lstat(ops[1], &st) == 0) {
    cli_err("%s: already exists", ops[1]);
    return CLI_EXIT_FAIL;
  }
  if (dist == 1)
    return convert_dist(ops[0], conf, ops[1], want == 1);
  /* a copy taken beside a writer would miss what it commits meanwhile;
   * held until the copy is done, so no writer starts in between */
  int lockfd;
  int rc = b2s_frame_lock(ops[0], &lockfd);
  if (rc == B2S_E_LOCKED) {
    cli_err_locked(ops[0]);
    return CLI_EXIT_FAIL;
  }
  cli_src src;
  if (cli_src_open(ops[0], &src) < 0) {
    if (lockfd >= 0)
      close(lockfd);
    return CLI_EXIT_FAIL;
  }
  int status = CLI_EXIT_FAIL;
  if (src.kind == CLI_KIND_CHUNK)
    cli_err("%s: a chunk file, not a frame", ops[0]);
  else
    status = convert(&src, ops[1],
                     want < 0 ? src.kind == CLI_KIND_CFRAME : want == 1);
  cli_src_close(&src);
  if (lockfd >= 0)
    close(lockfd);
  return status;
}

const cli_cmd cli_cmd_convert = {"convert", "contiguous <-> sparse frame",
                                 help, run};

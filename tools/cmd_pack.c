/* b2stream pack: a raw file or stdin cut into chunks and written as a new
 * frame with the frame writer. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "b2s_frame_writer.h"

#define PACK_DEFAULT_CHUNK (INT64_C(4) << 20)
/* Commit this often so that an interrupted pack leaves a frame holding
 * what was packed so far. */
#define PACK_COMMIT_BYTES (INT64_C(256) << 20)

static const char help[] =
    "usage: b2stream pack [OPTIONS] INPUT OUTPUT\n"
    "\n"
    "Cut INPUT (a file, or '-' for stdin) into chunks, compress them and\n"
    "write a new frame OUTPUT (which must not exist).\n"
    "\n"
    "  --sparse           write a sparse frame (a directory)\n"
    "  --codec C          blosclz, lz4, lz4hc, zlib or zstd (default lz4)\n"
    "  --clevel L         0..9 (default 5; 0 stores the data uncompressed)\n"
    "  --typesize T       item size for the filters, 1..255 (default 8)\n"
    "  --filters LIST     comma list applied in order, each NAME[:META]:\n"
    "                     shuffle, bitshuffle, delta, truncprec:BITS;\n"
    "                     'none' for no filter (default shuffle)\n"
    "  --chunk-bytes N    bytes per chunk (default 4M); units k, K, KiB,\n"
    "                     M, MiB, G, GiB (powers of 1024) or kB, KB, MB, GB\n"
    "                     (powers of 1000)\n"
    "  --meta NAME=HEX    add a fixed-size metalayer (repeatable)\n";

typedef struct pack_opts {
  const char *input, *output;
  bool sparse;
  b2s_cparams cp;
  int64_t chunk_bytes;
  b2s_frame_metas metas;
} pack_opts;

static int add_meta(cli_args *a, pack_opts *o, const char *v) {
  const char *eq = strchr(v, '=');
  size_t nlen = eq ? (size_t)(eq - v) : 0;
  char name[B2S_FRAME_NAME_MAX + 1];
  if (eq == NULL || nlen == 0 || nlen > B2S_FRAME_NAME_MAX)
    return cli_usage(a, "--meta needs NAME=HEX with a 1..%d byte name",
                     B2S_FRAME_NAME_MAX);
  memcpy(name, v, nlen);
  name[nlen] = '\0';
  uint8_t *content;
  int32_t len;
  if (cli_parse_hex(eq + 1, &content, &len) < 0)
    return cli_usage(a, "--meta %s: content is not an even-length hex string",
                     name);
  int rc = o->metas.n >= B2S_FRAME_MAX_METALAYERS
               ? B2S_E_TOO_BIG
               : b2s_frame_metas_add(&o->metas, name, content, len);
  free(content);
  if (rc < 0)
    return cli_usage(a, "--meta %s: %s", name,
                     rc == B2S_E_TOO_BIG ? "too many metalayers"
                                         : "duplicate name");
  return 0;
}

/* One option with its value v. */
static int pack_option(cli_args *a, pack_opts *o, const char *v) {
  int64_t n;
  int code;
  if (!strcmp(a->opt, "codec")) {
    if ((code = b2s_codec_from_name(v)) < 0)
      return cli_usage(a, "unknown codec '%s'", v);
    o->cp.codec = code;
  } else if (!strcmp(a->opt, "clevel")) {
    if (cli_parse_int(v, 0, 9, &n) < 0)
      return cli_usage(a, "--clevel needs 0..9, not '%s'", v);
    o->cp.clevel = (int)n;
  } else if (!strcmp(a->opt, "typesize")) {
    if (cli_parse_int(v, 1, B2S_MAX_TYPESIZE, &n) < 0)
      return cli_usage(a, "--typesize needs 1..%d, not '%s'",
                       B2S_MAX_TYPESIZE, v);
    o->cp.typesize = (int32_t)n;
  } else if (!strcmp(a->opt, "filters")) {
    if (cli_parse_filters(v, o->cp.filters, o->cp.filters_meta) < 0)
      return cli_usage(a, "bad filter list '%s'", v);
  } else if (!strcmp(a->opt, "chunk-bytes")) {
    if (cli_parse_size(v, 1, B2S_MAX_BUFFERSIZE, &o->chunk_bytes) < 0)
      return cli_usage(a, "--chunk-bytes needs a size of 1 byte to %d bytes, "
                          "not '%s'", B2S_MAX_BUFFERSIZE, v);
  } else {
    return add_meta(a, o, v);
  }
  return 0;
}

static int parse(int argc, char **argv, pack_opts *o) {
  static const char *const valued[] = {"codec", "clevel", "typesize",
                                       "filters", "chunk-bytes", "meta"};
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *operand, *v;
  int nops = 0;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    if (t == 2) {
      if (nops == 2)
        return cli_usage(&a, "unexpected argument '%s'", operand);
      *(nops++ ? &o->output : &o->input) = operand;
      continue;
    }
    if (!strcmp(a.opt, "sparse")) {
      if (!cli_args_no_value(&a))
        return CLI_EXIT_USAGE;
      o->sparse = true;
      continue;
    }
    bool known = false;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
      known = known || !strcmp(a.opt, valued[k]);
    if (!known)
      return cli_unknown_option(&a);
    if ((v = cli_args_value(&a)) == NULL)
      return CLI_EXIT_USAGE;
    int rc = pack_option(&a, o, v);
    if (rc != 0)
      return rc;
  }
  if (nops < 2)
    return cli_usage(&a, "needs INPUT and OUTPUT");
  if (!strcmp(o->output, "-"))
    return cli_usage(&a, "OUTPUT must be a path: a frame is not written to "
                         "stdout");
  return 0;
}

/* Fill buf with up to n bytes; fewer only at the end of the input. */
static int64_t read_block(int fd, uint8_t *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -errno;
    if (r == 0)
      break;
    got += (size_t)r;
  }
  return (int64_t)got;
}

static int pack_stream(const pack_opts *o, int in, b2s_fwriter *w) {
  uint8_t *buf = malloc((size_t)o->chunk_bytes);
  b2s_ctx *ctx = b2s_ctx_new();
  int status = CLI_EXIT_OK;
  int64_t since_commit = 0, got, rc;
  if (buf == NULL || ctx == NULL) {
    cli_err("out of memory for %lld-byte chunks", (long long)o->chunk_bytes);
    status = CLI_EXIT_FAIL;
  }
  while (status == CLI_EXIT_OK &&
         (got = read_block(in, buf, (size_t)o->chunk_bytes)) != 0) {
    if (got < 0) {
      cli_err("%s: %s", o->input, strerror((int)-got));
      status = CLI_EXIT_FAIL;
    } else if ((rc = b2s_fwriter_append_buffer(w, ctx, buf, (int32_t)got)) <
               0) {
      cli_err("%s: cannot append a chunk: %s", o->output,
              b2s_strerror((int)rc));
      status = CLI_EXIT_FAIL;
    } else if ((since_commit += got) >= PACK_COMMIT_BYTES) {
      since_commit = 0;
      if ((rc = b2s_fwriter_commit(w)) < 0) {
        cli_err("%s: cannot commit: %s", o->output, b2s_strerror((int)rc));
        status = CLI_EXIT_FAIL;
      }
    }
  }
  b2s_ctx_free(ctx);
  free(buf);
  return status;
}

static int pack(const pack_opts *o) {
  int in = STDIN_FILENO;
  if (strcmp(o->input, "-") != 0 &&
      (in = open(o->input, O_RDONLY | O_CLOEXEC)) < 0) {
    cli_err("%s: %s", o->input, strerror(errno));
    return CLI_EXIT_FAIL;
  }
  b2s_fwriter_opts wo = B2S_FWRITER_OPTS_DEFAULTS;
  wo.cparams = o->cp;
  b2s_fwriter *w;
  int rc = b2s_fwriter_create(o->output, o->sparse, &wo, &o->metas, &w);
  int status = CLI_EXIT_FAIL;
  if (rc < 0) {
    cli_err("%s: cannot create the frame: %s", o->output, b2s_strerror(rc));
  } else if ((status = pack_stream(o, in, w)) != CLI_EXIT_OK) {
    b2s_fwriter_free(w);
    cli_remove_frame(o->output);
  } else if ((rc = b2s_fwriter_close(w)) < 0) {
    cli_err("%s: cannot close the frame: %s", o->output, b2s_strerror(rc));
    cli_remove_frame(o->output);
    status = CLI_EXIT_FAIL;
  }
  if (in != STDIN_FILENO)
    close(in);
  return status;
}

static int run(int argc, char **argv) {
  pack_opts o = {.cp = B2S_CPARAMS_DEFAULTS,
                 .chunk_bytes = PACK_DEFAULT_CHUNK};
  b2s_frame_metas_init(&o.metas);
  int status = parse(argc, argv, &o);
  if (status == 0)
    status = pack(&o);
  b2s_frame_metas_fini(&o.metas);
  return status;
}

const cli_cmd cli_cmd_pack = {"pack", "raw bytes to a new frame", help, run};

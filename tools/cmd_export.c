/* b2stream export: a frame as an HDF5 file (docs/EXPORT.md).  One frame
 * chunk is one HDF5 chunk; with the Blosc2 filter the stored chunk is
 * written as it is (cmd_export_wrap.c), with bitshuffle+LZ4 it is re-encoded
 * in that filter's framing. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd_export.h"
#include "b2s_frame_lock.h"

static const char help[] =
    "usage: b2stream export FRAME OUT.h5 [--layout nxmx|dectris|plain]\n"
    "                       [--codec blosc2|bslz4] [--follow [--idle MS]]\n"
    "                       [--images-per-file N] [--pixel-mask FRAME]\n"
    "                       [--source-name S] [--source-type T]\n"
    "                       [--source-probe P] [--instrument-name S]\n"
    "                       [--sample-name S] [--beam-flux PHOTONS_PER_S]\n"
    "\n"
    "Write the frame's chunks as an HDF5 dataset chunked one frame chunk per\n"
    "HDF5 chunk (for a b2nd frame of images: one image per chunk), of a fixed\n"
    "shape.  OUT must not exist.\n"
    "\n"
    "  --codec blosc2  (default) each HDF5 chunk holds the frame's chunk as\n"
    "                  stored, for the HDF5 Blosc2 filter (id 32026,\n"
    "                  hdf5plugin >= 4): no decompression, no recompression\n"
    "  --codec bslz4   each chunk re-encoded as bitshuffle+LZ4 (filter\n"
    "                  32008), for readers that only know that filter\n"
    "  --layout plain  (default) the dataset /data, the series map as JSON\n"
    "                  in its attribute 'series'\n"
    "  --layout nxmx   NeXus NXmx: /entry/data/data; the detector, geometry,\n"
    "                  beam, source and sample from the series metadata's\n"
    "                  Stream V2 fields (docs/EXPORT.md 2.4); the records as\n"
    "                  datasets in /entry/records, gaps as zero images\n"
    "  --layout dectris  NXmx as a DECTRIS detector writes it: OUT (name it\n"
    "                  NAME_master.h5) links /entry/data/data_NNNNNN to the\n"
    "                  data files NAME_data_NNNNNN.h5 beside it; with\n"
    "                  --codec bslz4 what XDS (Durin, neggia) reads\n"
    "  --images-per-file N  (dectris) images per data file (default 1000)\n"
    "  --pixel-mask FRAME   (NXmx) the pixel mask's frame, instead of the\n"
    "                  companion NAME.pixel_mask.b2frame beside FRAME\n"
    "  --source-name, --source-type, --source-probe, --instrument-name,\n"
    "  --sample-name, --beam-flux  (NXmx) the beamline facts, over the series\n"
    "                  key 'beamline'; type and probe among NXsource's values\n"
    "                  (e.g. 'Synchrotron X-ray Source', 'x-ray'), the flux\n"
    "                  in photons per second\n"
    "  --follow        (plain layout) keep the file growing as the frame\n"
    "                  grows, as an HDF5 SWMR writer: readers opened with\n"
    "                  swmr=True see new images; ends when no writer holds\n"
    "                  the frame and every chunk is out, after --idle MS\n"
    "                  without a new chunk, or at SIGINT/SIGTERM\n"
    "  --idle MS       with --follow: stop after MS ms without a new chunk\n"
    "\n"
    "A frame being written is exported up to the chunks committed when it\n"
    "is opened.  Prints 'exported N chunks' (with --follow first\n"
    "'following after N chunks' once readers may open the file).  A script\n"
    "reading the file must import hdf5plugin first (or set\n"
    "HDF5_PLUGIN_PATH): h5py and silx.io load no filter themselves.\n";

/* The chunk as the blosc2 filter reads it.  A chunk shorter than the HDF5
 * chunk (the last one of a frame without b2nd) is padded with zeros and
 * compressed again, as the filter must return a whole chunk; a flattened
 * image (unflat) is compressed again in blocks of whole rows, as the
 * filter reads it through a b2nd of the image's shape. */
static int blosc2_chunk(cli_exp_job *j, int64_t i, const cli_chunk *d) {
  const uint8_t *bytes = d->bytes;
  int32_t cbytes = d->cbytes, nbytes = d->nbytes;
  const b2s_b2nd *nd = j->sh.unflat ? &j->sh.img
                     : j->sh.b2nd   ? &j->sh.nd : NULL;
  if ((!j->sh.b2nd && nbytes != j->sh.chunk_nbytes) || j->sh.unflat) {
    const uint8_t *dec;
    int n = cli_src_decode(&j->src, i, &dec);
    if (n < 0)
      return -1;
    size_t full = (size_t)j->sh.chunk_nbytes, img = (size_t)j->sh.chunk_nbytes;
    if (j->sh.unflat)
      full = (size_t)j->sh.img_nbytes;
    memset(j->pad, 0, full);
    memcpy(j->pad, dec, (size_t)n < img ? (size_t)n : img);
    b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
    cp.typesize = j->sh.typesize;
    if (j->sh.unflat) {
      cp.codec = B2S_CODEC_LZ4;
      cp.filters[B2S_MAX_FILTERS - 1] = B2S_FILTER_BITSHUFFLE;
      cp.blocksize = nd->blockshape[1] * nd->blockshape[2] * cp.typesize;
    }
    cbytes = b2s_compress(j->src.ctx, &cp, j->pad, (int32_t)full, j->tmp,
                          (int32_t)full + B2S_MAX_OVERHEAD);
    if (cbytes < 0) {
      cli_err("%s: chunk %lld: %s", j->src.path, (long long)i,
              b2s_strerror(cbytes));
      return -1;
    }
    bytes = j->tmp, nbytes = (int32_t)full;
  }
  j->buf.len = 0;
  int rc = cli_exp_wrap_cframe(b2s_frame_header_get(j->src.frame), nd,
                               bytes, cbytes, nbytes, &j->buf);
  if (rc < 0)
    cli_err("%s: chunk %lld: %s", j->src.path, (long long)i, b2s_strerror(rc));
  return rc < 0 ? -1 : 0;
}

/* Chunk i as stored into dst: in a contiguous frame straight from the
 * file at its index offset (the frame reader would read it into its own
 * buffer and copy it), else through the reader. */
static int read_stored(cli_exp_job *j, int64_t i, uint8_t *dst, int32_t cb) {
  const int64_t *ix = b2s_frame_index(j->src.frame);
  int64_t index_off = 0, tr_off, tr_len;
  int32_t ix_cb;
  if (j->fd >= 0 && ix && ix[i] >= 0 &&
      b2s_frame_layout(j->src.frame, &index_off, &ix_cb, &tr_off, &tr_len) == 0) {
    int64_t off = b2s_frame_header_get(j->src.frame)->header_len + ix[i];
    if (off + cb <= index_off) {   /* inside the data section */
      for (int32_t done = 0; done < cb;) {
        ssize_t k = pread(j->fd, dst + done, (size_t)(cb - done), (off_t)(off + done));
        if (k <= 0)
          return k == 0 ? B2S_E_TRUNCATED : -errno;
        done += (int32_t)k;
      }
      return cb;
    }
  }
  return b2s_frame_chunk_read(j->src.frame, i, dst, (size_t)cb);
}

/* Blosc2 codec, a chunk that goes in as stored: read from the frame
 * straight behind the wrapper's header, no copy in between. */
static int blosc2_direct(cli_exp_job *j, int64_t i, int32_t cb, int32_t nb) {
  j->buf.len = 0;
  int rc = cli_exp_wrap_head(b2s_frame_header_get(j->src.frame),
                             j->sh.b2nd ? &j->sh.nd : NULL, cb, nb, &j->buf);
  if (rc == 0)
    rc = b2s_mpbuf_reserve(&j->buf, (size_t)cb);
  if (rc == 0)
    rc = read_stored(j, i, j->buf.data + j->buf.len, cb);
  if (rc >= 0) {
    j->buf.len += (size_t)cb;
    rc = cli_exp_wrap_tail(&j->buf);
  }
  if (rc < 0)
    cli_src_frame_err(&j->src, rc);
  return rc < 0 ? -1 : 0;
}

static int write_buf(cli_exp_job *j, int64_t i, const b2s_mpbuf *b) {
  hsize_t off[B2S_B2ND_MAX_DIM];
  hid_t ds = cli_exp_chunk_target(j, i, off);
  if (H5Dwrite_chunk(ds, H5P_DEFAULT, 0, off, b->len, b->data) < 0) {
    cli_err("%s: cannot write chunk %lld", j->out, (long long)i);
    return -1;
  }
  return 0;
}

/* HDF5 chunk i into j->buf (frame side only: no HDF5 call). */
static int produce(cli_exp_job *j, int64_t i) {
  int32_t cb = 0, nb = 0;
  if (j->codec == EXP_CODEC_BLOSC2 && !j->sh.unflat &&
      b2s_frame_chunk_sizes(j->src.frame, i, &cb, &nb) == 0 &&
      (j->sh.b2nd || nb == j->sh.chunk_nbytes))
    return blosc2_direct(j, i, cb, nb);
  cli_chunk d;
  if (cli_src_chunk(&j->src, i, &d) < 0)
    return -1;
  /* without b2nd, every chunk but the last must fill an HDF5 chunk */
  if (!j->sh.b2nd && d.nbytes != j->sh.chunk_nbytes &&
      (d.nbytes > j->sh.chunk_nbytes || i + 1 < cli_src_nchunks(&j->src) ||
       j->follow)) {
    cli_err("%s: chunk %lld holds %d bytes, not %lld like the first: chunks "
            "of varying sizes make no dataset", j->src.path, (long long)i,
            (int)d.nbytes, (long long)j->sh.chunk_nbytes);
    return -1;
  }
  int rc = j->codec == EXP_CODEC_BSLZ4 ? cli_exp_bslz4_chunk(j, i, &d)
                                       : blosc2_chunk(j, i, &d);
  return rc < 0 ? -1 : 0;
}

/* Chunks [from, n) through a ring of RING buffers: a reader thread
 * prepares HDF5 chunks (frame reads, wrapping or re-encoding) while this
 * thread writes them, the only one calling HDF5, so reading and writing
 * overlap on two cores. */
enum { RING = 4 };
typedef struct ring {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  cli_exp_job *j;
  b2s_mpbuf buf[RING];
  int64_t from, n, filled, written;   /* chunks [from, filled) ready */
  bool failed, stop;
} ring;

static void *reader(void *arg) {
  ring *r = arg;
  for (int64_t i = r->from; i < r->n; i++) {
    pthread_mutex_lock(&r->mu);
    while (i - r->written >= RING && !r->stop)
      pthread_cond_wait(&r->cv, &r->mu);
    bool stop = r->stop;
    pthread_mutex_unlock(&r->mu);
    if (stop)
      break;
    b2s_mpbuf keep = r->j->buf;        /* produce into the slot's buffer */
    r->j->buf = r->buf[i % RING];
    int rc = produce(r->j, i);
    r->buf[i % RING] = r->j->buf;
    r->j->buf = keep;
    pthread_mutex_lock(&r->mu);
    if (rc < 0)
      r->failed = true;
    else
      r->filled = i + 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (rc < 0)
      break;
  }
  return NULL;
}

static int write_range(cli_exp_job *j, int64_t from, int64_t n) {
  ring r = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
            .j = j, .from = from, .n = n, .filled = from, .written = from};
  pthread_t t;
  if (n <= from)
    return 0;
  if (pthread_create(&t, NULL, reader, &r) != 0) {
    cli_err("cannot start a thread");
    return -1;
  }
  int rc = 0;
  for (int64_t i = from; i < n && rc == 0; i++) {
    pthread_mutex_lock(&r.mu);
    while (r.filled <= i && !r.failed)
      pthread_cond_wait(&r.cv, &r.mu);
    bool ready = r.filled > i;
    pthread_mutex_unlock(&r.mu);
    if (!ready) {
      rc = -1;
      break;
    }
    /* the slot is the reader's again only after `written` moves past it */
    rc = write_buf(j, i, &r.buf[i % RING]);
    pthread_mutex_lock(&r.mu);
    r.written = i + 1;
    pthread_cond_broadcast(&r.cv);
    pthread_mutex_unlock(&r.mu);
  }
  pthread_mutex_lock(&r.mu);
  r.stop = true;
  pthread_cond_broadcast(&r.cv);
  pthread_mutex_unlock(&r.mu);
  pthread_join(t, NULL);
  for (int k = 0; k < RING; k++)
    b2s_mpbuf_fini(&r.buf[k]);
  return rc;
}

static hid_t plain_begin(cli_exp_job *j, const cli_chunk *first) {
  hid_t ds = cli_exp_h5_dataset(j->file, "data", &j->sh, j->codec, first,
                                j->follow);
  char *series = ds >= 0 ? cli_exp_series_json(&j->src) : NULL;
  if (series && cli_exp_h5_attr_str(ds, "series", series) < 0) {
    H5Dclose(ds);
    ds = -1;
  }
  free(series);
  return ds;
}

/* The contiguous frame's file for read_stored (-1: read through the
 * frame reader). */
static void open_direct(cli_exp_job *j) {
  if (j->fd >= 0)
    close(j->fd);
  j->fd = j->src.kind == CLI_KIND_CFRAME && j->src.offset <= 0
              ? open(j->src.path, O_RDONLY | O_CLOEXEC) : -1;
}

static volatile sig_atomic_t stop_follow;
static void on_stop(int sig) { (void)sig; stop_follow = 1; }

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Chunks committed since: the frame re-opened (a reader sees a new
 * commit only by reading the index again), the dataset extended, the new
 * chunks written and flushed for SWMR readers. */
static int follow_step(cli_exp_job *j, const char *path, int64_t *n) {
  cli_src_close(&j->src);
  if (cli_src_open(path, &j->src) < 0)
    return -1;
  open_direct(j);   /* the file the index just read belongs to */
  int64_t n2 = cli_src_nchunks(&j->src);
  if (n2 <= *n)
    return 0;
  cli_exp_shape_extent(&j->sh, n2);
  if (H5Dset_extent(j->ds, j->sh.dims) < 0) {
    cli_err("%s: cannot extend the dataset", j->out);
    return -1;
  }
  if (write_range(j, *n, n2) < 0)
    return -1;
  if (H5Dflush(j->ds) < 0) {
    cli_err("%s: cannot flush the dataset", j->out);
    return -1;
  }
  int64_t got = n2 - *n;
  *n = n2;
  return (int)(got > 0);
}

/* --follow: SWMR from here on; poll the frame every 100 ms. */
static int follow(cli_exp_job *j, int64_t n) {
  if (H5Fstart_swmr_write(j->file) < 0) {
    cli_err("%s: cannot start SWMR writing", j->out);
    return -1;
  }
  printf("following after %lld chunks\n", (long long)n);
  if (!cli_flush_stdout())
    return -1;
  signal(SIGINT, on_stop);
  signal(SIGTERM, on_stop);
  char path[4096];
  snprintf(path, sizeof path, "%s", j->src.path);
  int64_t last = now_ms();
  while (!stop_follow) {
    /* the holder first: once it is gone, the next read sees its last commit */
    bool writer = b2s_lock_holder(path) != 0;
    int rc = follow_step(j, path, &n);
    if (rc < 0)
      return -1;
    if (rc > 0)
      last = now_ms();
    else if (!writer || (j->idle_ms > 0 && now_ms() - last >= j->idle_ms))
      break;
    struct timespec ts = {0, 100 * 1000000};
    nanosleep(&ts, NULL);
  }
  printf("exported %lld chunks\n", (long long)n);
  return 0;
}

static int open_out(cli_exp_job *j) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  /* the 1.10 format: what SWMR needs, and what every reader in use opens */
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110);
  j->file = H5Fcreate(j->out, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  if (j->file < 0) {
    cli_err("%s: cannot create the HDF5 file (it must not exist)", j->out);
    return -1;
  }
  return 0;
}

static int run(cli_exp_job *j) {
  if (j->src.kind != CLI_KIND_CFRAME && j->src.kind != CLI_KIND_SFRAME) {
    cli_err("%s: not a local frame", j->src.path);
    return -1;
  }
  if (cli_exp_h5_register() < 0 || cli_exp_shape_from(&j->src, &j->sh) < 0)
    return -1;
  open_direct(j);
  int64_t n = cli_src_nchunks(&j->src);
  cli_exp_shape_extent(&j->sh, n);
  size_t full = (size_t)j->sh.chunk_nbytes;
  if (j->sh.unflat && (size_t)j->sh.img_nbytes > full)
    full = (size_t)j->sh.img_nbytes;
  j->pad = malloc(full + B2S_MAX_OVERHEAD);
  j->tmp = malloc(full + B2S_MAX_OVERHEAD);
  if (!j->pad || !j->tmp) {
    cli_err("out of memory");
    return -1;
  }
  cli_chunk first, *fp = NULL;
  if (n > 0) {
    if (cli_src_chunk(&j->src, 0, &first) < 0)
      return -1;
    fp = &first;
  }
  if (open_out(j) < 0)
    return -1;
  if (j->layout == EXP_LAYOUT_PLAIN)
    j->ds = plain_begin(j, fp);
  else if (cli_exp_nxmx_begin(j, fp) < 0)
    return -1;
  /* the dectris layout's data files carry the series map themselves */
  if (j->layout != EXP_LAYOUT_DECTRIS &&
      (j->ds < 0 || cli_exp_h5_keep_meta(j->ds, &j->src, &j->sh) < 0)) {
    cli_err("%s: cannot create the image dataset", j->out);
    return -1;
  }
  if (write_range(j, 0, n) < 0)
    return -1;
  if (j->follow)
    return follow(j, n);
  if (j->layout != EXP_LAYOUT_PLAIN && cli_exp_nxmx_finish(j, n) < 0)
    return -1;
  if (!j->follow)
    printf("exported %lld chunks\n", (long long)n);
  return 0;
}

static bool nx_opts;               /* a beamline option was given */

/* --source-name, --source-type, --source-probe, --instrument-name,
 * --sample-name, --beam-flux: 1 when taken, 0 when a.opt is none of them,
 * -1 for a bad value (reported). */
static int beamline_opt(cli_args *a, cli_nx_beamline *b) {
  static const char *const names[] = {"source-name", "source-type", "source-probe",
                                      "instrument-name", "sample-name"};
  char **dst[] = {&b->source_name, &b->source_type, &b->source_probe,
                  &b->instrument_name, &b->sample_name};
  const char *v;
  for (int k = 0; k < 5; k++) {
    if (strcmp(a->opt, names[k]))
      continue;
    if (!(v = cli_args_value(a)))
      return -1;
    if ((k == 1 || k == 2) && !cli_nx_source_value_ok(v, k == 2)) {
      cli_usage(a, "--%s: '%s' is not one of NXsource's %s values", names[k], v,
                k == 2 ? "probe" : "type");
      return -1;
    }
    *dst[k] = (char *)v;
    nx_opts = true;
    return 1;
  }
  if (strcmp(a->opt, "beam-flux"))
    return 0;
  if (!(v = cli_args_value(a)))
    return -1;
  char *end;
  double f = strtod(v, &end);
  if (*v == '\0' || *end || !(f >= 0) || f > 1e30) {
    cli_usage(a, "--beam-flux: '%s' is not photons per second", v);
    return -1;
  }
  b->has_flux = true, b->beam_flux = f;
  nx_opts = true;
  return 1;
}

static int parse(int argc, char **argv, cli_exp_job *j, const char **path) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *op, *ops[2] = {NULL, NULL};
  int nops = 0, k;
  while ((k = cli_args_next(&a, &op)) > 0) {
    if (k == 2) {
      if (nops == 2)
        return cli_usage(&a, "too many operands");
      ops[nops++] = op;
      continue;
    }
    const char *v;
    if (!strcmp(a.opt, "layout")) {
      if (!(v = cli_args_value(&a)))
        return CLI_EXIT_USAGE;
      if (!strcmp(v, "nxmx"))
        j->layout = EXP_LAYOUT_NXMX;
      else if (!strcmp(v, "dectris"))
        j->layout = EXP_LAYOUT_DECTRIS;
      else if (!strcmp(v, "plain"))
        j->layout = EXP_LAYOUT_PLAIN;
      else
        return cli_usage(&a, "--layout: '%s' is not nxmx, dectris or plain", v);
    } else if (!strcmp(a.opt, "images-per-file")) {
      if (!(v = cli_args_value(&a)))
        return CLI_EXIT_USAGE;
      if (cli_parse_int(v, 1, INT32_MAX, &j->per_file) < 0)
        return cli_usage(&a, "--images-per-file: '%s' is not a count of images", v);
    } else if (!strcmp(a.opt, "pixel-mask")) {
      if (!(j->pixel_mask = cli_args_value(&a)))
        return CLI_EXIT_USAGE;
    } else if ((k = beamline_opt(&a, &j->opt)) != 0) {
      if (k < 0)
        return CLI_EXIT_USAGE;
    } else if (!strcmp(a.opt, "codec")) {
      if (!(v = cli_args_value(&a)))
        return CLI_EXIT_USAGE;
      if (!strcmp(v, "blosc2"))
        j->codec = EXP_CODEC_BLOSC2;
      else if (!strcmp(v, "bslz4"))
        j->codec = EXP_CODEC_BSLZ4;
      else
        return cli_usage(&a, "--codec: '%s' is not blosc2 or bslz4", v);
    } else if (!strcmp(a.opt, "follow")) {
      if (!cli_args_no_value(&a))
        return CLI_EXIT_USAGE;
      j->follow = true;
    } else if (!strcmp(a.opt, "idle")) {
      if (!(v = cli_args_value(&a)))
        return CLI_EXIT_USAGE;
      if (cli_parse_int(v, 1, INT64_MAX / 2, &j->idle_ms) < 0)
        return cli_usage(&a, "--idle: '%s' is not a number of milliseconds", v);
    } else {
      return cli_unknown_option(&a);
    }
  }
  if (k < 0)
    return CLI_EXIT_USAGE;
  if (nops != 2)
    return cli_usage(&a, "needs FRAME and OUT");
  /* SWMR allows no new objects once it starts, and NXmx has per-image
   * fields beside the images */
  if (j->follow && j->layout != EXP_LAYOUT_PLAIN)
    return cli_usage(&a, "--follow goes with --layout plain");
  if (j->per_file && j->layout != EXP_LAYOUT_DECTRIS)
    return cli_usage(&a, "--images-per-file goes with --layout dectris");
  if ((j->pixel_mask || nx_opts) && j->layout == EXP_LAYOUT_PLAIN)
    return cli_usage(&a, "--pixel-mask and the beamline options go with "
                     "--layout nxmx or dectris");
  if (!j->per_file)
    j->per_file = 1000;
  if (j->idle_ms && !j->follow)
    return cli_usage(&a, "--idle goes with --follow");
  *path = ops[0];
  j->out = ops[1];
  return CLI_EXIT_OK;
}

static int cmd_export(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(help, stdout);
    return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
  }
  cli_exp_job j;
  memset(&j, 0, sizeof j);
  j.file = j.ds = -1;
  j.fd = -1;
  const char *path = NULL;
  int st = parse(argc, argv, &j, &path);
  if (st != CLI_EXIT_OK)
    return st;
  if (cli_src_open(path, &j.src) < 0)
    return CLI_EXIT_FAIL;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);   /* our own one-line errors */
  int rc = run(&j);
  if (j.nds && cli_exp_dectris_end(&j, rc < 0) < 0)
    rc = -1;
  if (j.ds >= 0)
    H5Dclose(j.ds);
  if (j.file >= 0 && H5Fclose(j.file) < 0 && rc == 0) {
    cli_err("%s: cannot close the HDF5 file", j.out);
    rc = -1;
  }
  if (rc < 0 && j.file >= 0)
    unlink(j.out);   /* no partial output */
  b2s_mpbuf_fini(&j.buf);
  free(j.pad);
  free(j.tmp);
  cli_src_close(&j.src);
  if (j.fd >= 0)
    close(j.fd);
  return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

const cli_cmd cli_cmd_export = {"export", "frame -> HDF5 (Blosc2 or bitshuffle filter, NeXus NXmx)",
                                help, cmd_export};

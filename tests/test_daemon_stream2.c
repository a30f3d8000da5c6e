/* The daemon as a DECTRIS Stream V2 receiver: a sender written from the
 * spec (tests/support/b2s_s2enc.c) pushes start, image and end messages with
 * bslz4 and lz4 images, 8/16/32-bit, 1-3 channels, through a real PUSH
 * socket to the real daemon's source; every image must be in its
 * channel's frame bit for bit at index image_id - first, gaps filled, with
 * its record; hostile messages in between change nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zmq.h>

#include "b2s_chunk.h"
#include "b2s_h5lz4.h"
#include "b2s_meta.h"
#include "daemon_harness.h"
#include "venv_python.h"
#include "b2s_frame.h"
#include "b2s_msgpack.h"
#include "b2s_s2enc.h"
#include "textfile.h"

static const char *const CH[] = {"threshold_1", "threshold_2", "threshold_3"};

static void config(env *e, char *yaml, size_t n) {
  snprintf(yaml, n,
           ENV_YAML_HEAD "workers: 2\n"
           "templates:\n  eiger: {}\n"
           "sources:\n"
           "  - kind: dectris-stream2\n"
           "    endpoint: 'ipc://%s/det.sock'\n"
           "    template: eiger\n"
           "    name: 'det-{series_id}-{channel}'\n"
           "    series_timeout_ms: 2000\n", e->dir);
}

/* Pixels of image i, channel c: detector-like counts. */
static void pixels(uint8_t *p, size_t npix, int ts, uint64_t i, int c) {
  for (size_t k = 0; k < npix; k++) {
    uint32_t v = (k * 7 + i * 13 + (uint64_t)c * 5) % 29 == 0
                     ? (uint32_t)(k + i + (uint64_t)c) : 0;
    memcpy(p + k * (size_t)ts, &v, (size_t)ts);   /* little endian host */
  }
}

typedef struct series {
  uint64_t id;
  int nch, ts;
  uint64_t ny, nx;
  int nimages;
  uint64_t skip, skip2;      /* image ids never sent or refused (gaps) */
  int declared;              /* number_of_images sent, when not nimages */
  int arrays;                /* the start carries flatfield, mask, table */
  int part;                  /* 0: everything; 1: the start alone; 2: all
                                but the start; 3: all but the end */
  int images;                /* layout: images ((images, y, x)), else flat */
  int lz4;                   /* compression: lz4 (a block per image); the
                                channels' codecs swap: even ones lz4 */
  int bare;                  /* the start gives no image_dtype nor size */
  uint64_t salt;             /* makes this series' pixels its own */
  unsigned suffix;           /* its names' suffix .N (0: none) */
  const char *uid;           /* series_unique_id (NULL: u-ID) */
} series;

/* Stream name of channel c of series s, as source_name.c makes it for the
 * pattern det-{series_id}-{channel}. */
static void series_name(const series *s, int c, char *out, size_t cap) {
  char sfx[16] = "";
  if (s->suffix > 1)
    snprintf(sfx, sizeof sfx, ".%u", s->suffix);
  snprintf(out, cap, "det-%llu%s-%s", (unsigned long long)s->id, sfx, CH[c]);
}

static void series_uid(const series *s, char *out, size_t cap) {
  if (s->uid)
    snprintf(out, cap, "%s", s->uid);
  else
    snprintf(out, cap, "u-%llu", (unsigned long long)s->id);
}

/* The start's large arrays: flatfield (float32, raw), pixel_mask
 * (uint32, bslz4) per channel, and a count-rate table (1-D uint32). */
static float FLAT[4 * 6];
static uint32_t MASK[4 * 6], LUT[16];

static void start_arrays(b2s_s2enc *e, const series *s) {
  for (int k = 0; k < 24; k++) {
    FLAT[k] = 0.5f + (float)k / 24.0f;
    MASK[k] = k % 5 == 0;
  }
  for (int k = 0; k < 16; k++)
    LUT[k] = (uint32_t)(k * k);
  b2s_h5_params p = {.kind = B2S_H5_BSLZ4, .elem_size = 4, .typesize = 4, .clevel = 5};
  static uint8_t fm[1024];
  int64_t fl = b2s_h5_compress(&p, 0, MASK, sizeof MASK, fm, sizeof fm);
  assert_true(fl > 0);
  b2s_s2e_text(e, "flatfield");
  b2s_s2e_map(e, (uint64_t)s->nch);
  for (int c = 0; c < s->nch; c++) {
    b2s_s2e_part f = {CH[c], 4, 4, 6, NULL, FLAT, sizeof FLAT, 85};
    b2s_s2e_text(e, CH[c]);
    b2s_s2e_mdarray(e, &f);
  }
  b2s_s2e_text(e, "pixel_mask");
  b2s_s2e_map(e, (uint64_t)s->nch);
  for (int c = 0; c < s->nch; c++) {
    b2s_s2e_part m = {CH[c], 4, 4, 6, "bslz4", fm, (size_t)fl, 0};
    b2s_s2e_text(e, CH[c]);
    b2s_s2e_mdarray(e, &m);
  }
  b2s_s2e_text(e, "countrate_correction_lookup_table");
  b2s_s2e_tag(e, 70);
  b2s_s2e_bytes(e, LUT, sizeof LUT);
}

/* Companion stream `name` holds one chunk: want[n], b2nd of ndim dims. */
static void check_companion(env *e, const char *name, const void *want,
                            size_t n, int ndim, const char *dtype) {
  char path[512];
  frame_path(e, name, path, sizeof path);
  b2s_frame *f = NULL;
  for (int t = 0; t < WAIT_MS / 50; t++) {
    if (f)
      b2s_frame_free(f);
    f = NULL;
    if (b2s_frame_open(path, &f, NULL) == 0 && b2s_frame_nchunks(f) == 1)
      break;
    usleep(50000);
  }
  assert_non_null(f);
  assert_int_equal(b2s_frame_nchunks(f), 1);
  b2s_b2nd nd;
  assert_int_equal(b2s_frame_b2nd_get(f, &nd), 0);
  assert_int_equal(nd.ndim, ndim);
  assert_memory_equal(nd.dtype, dtype, 3);
  b2s_ctx *ctx = b2s_ctx_new();
  uint8_t out[256];
  assert_int_equal(b2s_frame_chunk_decompress(f, 0, ctx, out, sizeof out), (int)n);
  assert_memory_equal(out, want, n);
  b2s_ctx_free(ctx);
  b2s_frame_free(f);
}

static void send_msg(void *push, const b2s_s2enc *e) {
  assert_int_equal(zmq_send(push, e->b, e->n, 0), (int)e->n);
}

/* Whether channel c comes lz4 (else bslz4): odd channels, even ones when
 * the source expects lz4. */
static bool chan_lz4(const series *s, int c) { return (c % 2) ^ s->lz4; }

/* Channel c of image i, framed as chan_lz4 says. */
static size_t framed(const series *s, uint64_t i, int c, uint8_t *pix,
                     uint8_t **out) {
  size_t n = s->ny * s->nx * (size_t)s->ts;
  pixels(pix, s->ny * s->nx, s->ts, i + s->salt, c);
  b2s_h5_params p = {.kind = chan_lz4(s, c) ? B2S_H5_LZ4 : B2S_H5_BSLZ4,
                     .elem_size = s->ts, .typesize = s->ts, .clevel = 5};
  size_t cap = b2s_h5_compress_bound(&p, 0, n);
  *out = malloc(cap);
  int64_t len = b2s_h5_compress(&p, 0, pix, n, *out, cap);
  assert_true(len > 0);
  return (size_t)len;
}

static void send_series(void *push, const series *s, int hostile) {
  b2s_s2enc e = {0};
  static const char *const dt[] = {NULL, "uint8", "uint16", NULL, "uint32"};
  char uid[64];
  series_uid(s, uid, sizeof uid);
  b2s_s2e_start(&e, s->id, uid, CH, s->nch, s->bare ? NULL : dt[s->ts],
           s->bare ? 0 : s->ny, s->bare ? 0 : s->nx,
           (uint64_t)(s->declared ? s->declared : s->nimages), s->arrays ? 3 : 0);
  if (s->arrays)
    start_arrays(&e, s);
  if (s->part != 2)
    send_msg(push, &e);
  if (s->part == 1) {
    b2s_s2e_free(&e);
    return;
  }
  size_t n = s->ny * s->nx * (size_t)s->ts;
  uint8_t *pix = malloc(n);
  for (int i = 0; i < s->nimages; i++) {
    uint64_t id = 1 + (uint64_t)i;        /* the detector counts from 1 */
    if (id == s->skip)
      continue;
    b2s_s2e_part parts[3];
    uint8_t *bufs[3];
    for (int c = 0; c < s->nch; c++) {
      size_t len = framed(s, id, c, pix, &bufs[c]);
      const char *comp = chan_lz4(s, c) ? "lz4" : "bslz4";
      if (c == 2) {               /* a third channel comes uncompressed */
        memcpy(bufs[c], pix, n);
        len = n;
        comp = NULL;
      }
      parts[c] = (b2s_s2e_part){CH[c], (uint32_t)s->ts, s->ny, s->nx, comp,
                                 bufs[c], len, 0};
    }
    b2s_s2e_reset(&e);
    b2s_s2e_image(&e, s->id, uid, id, parts, s->nch, id * 1000003, id * 1000003 + 999,
             999, 100000000, i % 2 ? "odd" : NULL);
    send_msg(push, &e);
    if (hostile && i == 1) {
      static const uint8_t junk[] = {0xa2, 0x64, 't', 'y', 'p', 'e', 0x65,
                                     'i', 'm', 'a', 'g', 'e', 0xff};
      assert_int_equal(zmq_send(push, junk, sizeof junk, 0), (int)sizeof junk);
      /* an image of a series that is not open */
      b2s_s2e_reset(&e);
      b2s_s2e_image(&e, s->id + 1000, "x", 1, parts, s->nch, 0, 1, 1, 1, NULL);
      send_msg(push, &e);
    }
    for (int c = 0; c < s->nch; c++)
      free(bufs[c]);
  }
  b2s_s2e_reset(&e);
  b2s_s2e_end(&e, s->id, uid);
  if (s->part != 3)
    send_msg(push, &e);
  free(pix);
  b2s_s2e_free(&e);
}

/* The expected record map of image id (as source_s2.c writes it). */
static void expect_user(b2s_mpbuf *b, const series *s, uint64_t id, int odd) {
  b->len = 0;
  b2s_mp_put_map(b, odd ? 7 : 6);
  b2s_mp_put_str(b, "image_id", 8);
  b2s_mp_put_uint(b, id);
  b2s_mp_put_str(b, "series_id", 9);
  b2s_mp_put_uint(b, s->id);
  b2s_mp_put_str(b, "start_time_ns", 13);
  b2s_mp_put_int(b, (int64_t)(id * 1000003 * 10));
  b2s_mp_put_str(b, "stop_time_ns", 12);
  b2s_mp_put_int(b, (int64_t)((id * 1000003 + 999) * 10));
  b2s_mp_put_str(b, "real_time_ns", 12);
  b2s_mp_put_int(b, 9990);
  b2s_mp_put_str(b, "time_base", 9);
  b2s_mp_put_uint(b, 100000000);
  if (odd) {
    b2s_mp_put_str(b, "user_data", 9);
    b2s_mp_put_map(b, 1);
    b2s_mp_put_str(b, "note", 4);
    b2s_mp_put_str(b, "odd", 3);
  }
}

/* Wait until channel c's frame holds every image, then check each. */
/* The frame's b2nd layout; returns a chunk's padded size.  flat: images
 * flattened, blocks of bitshuffle's 8 KiB; images: (images, y, x), blocks
 * of as many whole rows as fit in 8 KiB (at least one).  A source that
 * expects lz4 makes the whole image one block, either way. */
static size_t check_layout(b2s_frame *f, const series *s, int rows) {
  b2s_b2nd nd;
  assert_int_equal(b2s_frame_b2nd_get(f, &nd), 0);
  static const char *const dts[] = {NULL, "|u1", "<u2", NULL, "<u4"};
  assert_int_equal(nd.dtype_len, 3);
  assert_memory_equal(nd.dtype, dts[s->ts], 3);
  assert_int_equal(nd.shape[0], rows);
  assert_int_equal(nd.chunkshape[0], 1);
  assert_int_equal(nd.blockshape[0], 1);
  size_t row = s->nx * (size_t)s->ts;
  if (!s->images) {
    size_t block = s->lz4 ? s->ny * row : 8192;
    assert_int_equal(nd.ndim, 2);
    assert_int_equal(nd.shape[1], (int64_t)(s->ny * s->nx));
    assert_int_equal(nd.chunkshape[1], (int32_t)(s->ny * s->nx));
    assert_int_equal(nd.blockshape[1], (int32_t)(block / (size_t)s->ts));
    return (s->ny * row + block - 1) / block * block;
  }
  size_t per = row >= 8192 ? 1 : 8192 / row;
  if (per > s->ny || s->lz4)
    per = s->ny;
  assert_int_equal(nd.ndim, 3);
  assert_int_equal(nd.shape[1], (int64_t)s->ny);
  assert_int_equal(nd.shape[2], (int64_t)s->nx);
  assert_int_equal(nd.chunkshape[1], (int32_t)s->ny);
  assert_int_equal(nd.chunkshape[2], (int32_t)s->nx);
  assert_int_equal(nd.blockshape[1], (int32_t)per);
  assert_int_equal(nd.blockshape[2], (int32_t)s->nx);
  return (s->ny + per - 1) / per * per * row;
}

static void check_series(env *e, const series *s) {
  size_t n = s->ny * s->nx * (size_t)s->ts;
  uint8_t *pix = malloc(n);
  b2s_ctx *ctx = b2s_ctx_new();
  b2s_mpbuf want;
  b2s_mpbuf_init(&want);
  int rows = s->declared ? s->declared : s->nimages;
  for (int c = 0; c < s->nch; c++) {
    char name[128], path[512];
    series_name(s, c, name, sizeof name);
    frame_path(e, name, path, sizeof path);
    b2s_frame *f = NULL;
    for (int t = 0; t < WAIT_MS / 50; t++) {
      if (f)
        b2s_frame_free(f);
      f = NULL;
      if (b2s_frame_open(path, &f, NULL) == 0 &&
          b2s_frame_nchunks(f) == rows)
        break;
      usleep(50000);
    }
    assert_non_null(f);
    assert_int_equal(b2s_frame_nchunks(f), rows);
    size_t padded = check_layout(f, s, rows);
    b2s_records *rs = NULL;
    assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
    uint8_t *out = malloc(padded);
    for (int i = 0; i < rows; i++) {
      uint64_t id = 1 + (uint64_t)i;
      int got = b2s_frame_chunk_decompress(f, i, ctx, out, padded);
      assert_int_equal(got, (int)padded);
      b2s_record rec;
      assert_int_equal(b2s_records_get(rs, i, &rec), 0);
      if (id == s->skip || id == s->skip2 || i >= s->nimages) {   /* gaps */
        for (size_t k = 0; k < padded; k++)
          assert_int_equal(out[k], 0);
        assert_true(rec.flags != 0);
        continue;
      }
      pixels(pix, s->ny * s->nx, s->ts, id + s->salt, c);
      assert_memory_equal(out, pix, n);
      for (size_t k = n; k < padded; k++)
        assert_int_equal(out[k], 0);
      assert_true(rec.has_frame && rec.frame == (uint64_t)i);
      assert_true(rec.has_ts && rec.ts == (int64_t)(id * 1000003 * 10));
      expect_user(&want, s, id, i % 2);
      assert_int_equal(rec.user_len, want.len);
      assert_memory_equal(rec.user, want.data, want.len);
    }
    free(out);
    b2s_records_free(rs);
    b2s_frame_free(f);
  }
  b2s_mpbuf_fini(&want);
  b2s_ctx_free(ctx);
  free(pix);
}

/* One number of one stream's STATS_REPLY (as test_daemon.c reads it);
 * stream NULL: the first occurrence of name anywhere (the sources). */
static double stats_value(void *s, const char *stream, const char *name) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_STATS);
  m.tag = 11;
  m.stats.stream = b2s_wire_cstr(stream ? stream : "");
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_STATS_REPLY, &r);
  char key[80];
  char *at = (char *)r.payload;
  if (stream) {
    snprintf(key, sizeof key, "\"%s\":{", stream);
    at = strstr(at, key);
    assert_non_null(at);
  }
  snprintf(key, sizeof key, "\"%s\":", name);
  char *d = strstr(at, key);
  assert_non_null(d);
  double v = strtod(d + strlen(key), NULL);
  rx_free(&r);
  return v;
}

/* Wait until a number of a stream's STATS reaches want (the workers
 * count images as they convert them). */
static void wait_listed(void *s, const char *name, bool want);
static void stats_wait(void *s, const char *stream, const char *name,
                       double want) {
  wait_listed(s, stream, true);        /* made at the series' start */
  double v = -1;
  for (int t = 0; t < WAIT_MS / 20 && v != want; t++) {
    v = stats_value(s, stream, name);
    if (v != want)
      usleep(20000);
  }
  if (v != want)
    fail_msg("%s of %s: %g, not %g", name, stream, v, want);
}

/* Whether STATS of all streams lists stream `name`. */
static bool stats_lists(void *s, const char *name) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_STATS);
  m.tag = 12;
  m.stats.stream = b2s_wire_cstr("");
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_STATS_REPLY, &r);
  char key[160];
  snprintf(key, sizeof key, "\"%s\":{", name);
  bool found = strstr((char *)r.payload, key) != NULL;
  rx_free(&r);
  return found;
}

/* Wait until stream `name` is listed (want true) or gone (false). */
static void wait_listed(void *s, const char *name, bool want) {
  for (int t = 0; t < WAIT_MS / 20 && stats_lists(s, name) != want; t++)
    usleep(20000);
  assert_true(stats_lists(s, name) == want);
}

static void *pusher(env *e) {
  void *push = zmq_socket(zctx, ZMQ_PUSH);
  char ep[400];
  snprintf(ep, sizeof ep, "ipc://%s/det.sock", e->dir);
  assert_int_equal(zmq_bind(push, ep), 0);
  return push;
}

/* The daemon with the source of config() and the lines `extra`, up; the
 * detector's PUSH socket, bound.  fsize_limit: RLIMIT_FSIZE (0: none). */
static void *daemon_up(env *e, const char *extra, long fsize_limit) {
  char yaml[1200];
  env_init_config(e, "");
  config(e, yaml, sizeof yaml);
  strncat(yaml, extra, sizeof yaml - strlen(yaml) - 1);
  env_write_config(e, yaml);
  e->fsize_limit = fsize_limit;
  void *push = pusher(e);
  env_start(e);
  return push;
}

/* python-blosc2 (c-blosc2 3.3) opens the frame at path as an array of
 * shape (Python tuple), equal to the raw pixels in file want, whole and
 * at [slice]. */
static bool blosc2_reads(const char *py, const char *path, const char *want,
                         const char *shape, const char *slice) {
  char cmd[3000];
  snprintf(cmd, sizeof cmd,
           "'%s' -c 'import sys, numpy as np, blosc2\n"
           "a = blosc2.open(sys.argv[1])\n"
           "assert a.shape == %s, a.shape\n"
           "w = np.fromfile(sys.argv[2], dtype=a.dtype).reshape(a.shape)\n"
           "assert (a[:] == w).all()\n"
           "assert (a[%s] == w[%s]).all()' '%s' '%s'",
           py, shape, slice, slice, path, want);
  return system(cmd) == 0;
}

/* b2stream export --layout nxmx, either codec: h5py with hdf5plugin reads
 * /entry/data/data as (images, y, x), whichever the frame's layout, equal
 * to the pixels in file `want`; b2stream import makes of it a frame that
 * python-blosc2 reads the same, in slices across gaps too. */
static void nxmx_check(env *e, const char *py, const char *path,
                       const char *want, int rows, const series *s) {
  const char *cli = getenv("B2S_CLI");
  static const char *const codecs[] = {"blosc2", "bslz4"};
  for (int k = 0; cli && k < 2; k++) {
    char out[512], cmd[3000];
    snprintf(out, sizeof out, "%s/x-%llu-%s.h5", e->dir,
             (unsigned long long)s->id, codecs[k]);
    snprintf(cmd, sizeof cmd, "'%s' export '%s' '%s' --layout nxmx --codec %s "
             ">/dev/null", cli, path, out, codecs[k]);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "'%s' -c 'import sys, numpy as np, h5py, hdf5plugin\n"
             "d = h5py.File(sys.argv[1])[\"entry/data/data\"]\n"
             "assert d.shape == (%d, %d, %d), d.shape\n"
             "w = np.fromfile(sys.argv[2], dtype=d.dtype).reshape(d.shape)\n"
             "assert (d[:] == w).all()\n"
             "assert (d[1:, 3:9, 2:] == w[1:, 3:9, 2:]).all()' '%s' '%s'",
             py, rows, (int)s->ny, (int)s->nx, out, want);
    if (system(cmd) != 0)
      fail_msg("h5py does not read the %s export of %s as images", codecs[k],
               path);
    char back[600];
    snprintf(back, sizeof back, "%s.b2frame", out);
    snprintf(cmd, sizeof cmd, "'%s' import '%s' '%s' >/dev/null", cli, out,
             back);
    assert_int_equal(system(cmd), 0);
    char shape[64];
    snprintf(shape, sizeof shape, "(%d, %d, %d)", rows, (int)s->ny, (int)s->nx);
    if (!blosc2_reads(py, back, want, shape, "1:, 3:9, 2:"))
      fail_msg("python-blosc2 does not read the import of %s", out);
  }
}

/* python-blosc2 (c-blosc2 3.3, $B2S_VENV) opens series s's first
 * channel as an array of (images, y, x) or (images, pixels) with every
 * image's pixels, gaps zeros, whole and in slices across chunks. */
static void blosc2_check(env *e, const series *s) {
  char py[400];
  if (!ts_venv_python(py, sizeof py))
    return;
  char name[128], path[512], want[600];
  series_name(s, 0, name, sizeof name);
  frame_path(e, name, path, sizeof path);
  snprintf(want, sizeof want, "%s/want.bin", e->dir);
  size_t n = s->ny * s->nx * (size_t)s->ts;
  int rows = s->declared ? s->declared : s->nimages;
  uint8_t *pix = calloc((size_t)rows, n);
  for (int i = 0; i < s->nimages; i++)
    if (1 + (uint64_t)i != s->skip)
      pixels(pix + (size_t)i * n, s->ny * s->nx, s->ts, 1 + (uint64_t)i + s->salt, 0);
  FILE *fp = fopen(want, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(pix, n, (size_t)rows, fp), (size_t)rows);
  fclose(fp);
  free(pix);
  char shape[64];
  if (s->images)
    snprintf(shape, sizeof shape, "(%d, %d, %d)", rows, (int)s->ny, (int)s->nx);
  else
    snprintf(shape, sizeof shape, "(%d, %d)", rows, (int)(s->ny * s->nx));
  if (!blosc2_reads(py, path, want, shape, "1:, 3:9"))
    fail_msg("python-blosc2 does not read %s as %s", path, shape);
  nxmx_check(e, py, path, want, rows, s);
}

static void test_series(void **state) {
  (void)state;
  env e;
  void *push = daemon_up(&e, "", 0);
  series all[] = {
    {.id = 5, .nch = 2, .ts = 2, .ny = 514, .nx = 1030, .nimages = 6, .skip = 4},
    {.id = 6, .nch = 3, .ts = 1, .ny = 37, .nx = 91, .nimages = 5, .skip = 0,
     .declared = 7},
    {.id = 7, .nch = 2, .ts = 4, .ny = 64, .nx = 128, .nimages = 4, .skip = 0,
     .arrays = 1},
  };
  /* a series' streams close for good once it ended: their counters are
   * read while it is open (the next start or the end closes it) */
  void *c = cli_producer(&e);
  all[0].part = all[1].part = all[2].part = 3;
  send_series(push, &all[0], 1);
  /* how the images became chunks: bslz4 with blocks of the frame's by
   * rewriting (the last block re-encoded when the image is not a whole
   * number of blocks), lz4 (one block per image) compressed again */
  stats_wait(c, "det-5-threshold_1", "images_patched", 5);
  stats_wait(c, "det-5-threshold_2", "images_recompressed", 5);
  send_series(push, &all[1], 0);
  stats_wait(c, "det-6-threshold_1", "images_patched", 5);
  stats_wait(c, "det-6-threshold_3", "buffers_in", 5);        /* raw */
  assert_true(stats_value(c, "det-6-threshold_3", "images_patched") == 0);
  send_series(push, &all[2], 0);
  stats_wait(c, "det-7-threshold_1", "images_rewritten", 4);
  assert_true(stats_value(c, "det-7-threshold_1", "images_refused") == 0);
  all[2].part = 2;
  all[2].nimages = 0;                  /* the end alone */
  send_series(push, &all[2], 0);
  all[2].nimages = 4;
  for (size_t k = 0; k < 3; k++)
    check_series(&e, &all[k]);
  blosc2_check(&e, &all[0]);           /* a gap at image 4 */
  blosc2_check(&e, &all[1]);           /* 2 rows never sent */
  /* the start's large arrays, each channel's in a stream of its own */
  for (int c = 0; c < 2; c++) {
    char name[128];
    snprintf(name, sizeof name, "det-7-%s.flatfield", CH[c]);
    check_companion(&e, name, FLAT, sizeof FLAT, 2, "<f4");
    snprintf(name, sizeof name, "det-7-%s.pixel_mask", CH[c]);
    check_companion(&e, name, MASK, sizeof MASK, 2, "<u4");
    snprintf(name, sizeof name, "det-7-%s.countrate", CH[c]);
    check_companion(&e, name, LUT, sizeof LUT, 1, "<u4");
  }
  /* the broken message and the stray image were refused, logged once */
  assert_int_equal(env_log_count(&e, "logged once"), 2);
  assert_true(stats_value(c, NULL, "unknown_series") == 1);
  assert_true(stats_value(c, NULL, "refused") == 2);
  assert_true(stats_value(c, NULL, "series") == 3);
  assert_true(stats_value(c, NULL, "images") == 5 + 5 + 4);
  zmq_close(c);
  zmq_close(push);
  env_down(&e);
}

/* Images of one series up to `upto` (no end message). */
static void send_part(void *push, const series *s, int from, int upto) {
  b2s_s2enc e = {0};
  char uid[32];
  snprintf(uid, sizeof uid, "u-%llu", (unsigned long long)s->id);
  if (from == 0) {
    b2s_s2e_start(&e, s->id, uid, CH, s->nch, "uint16", s->ny, s->nx, 100, 0);
    send_msg(push, &e);
  }
  uint8_t *pix = malloc(s->ny * s->nx * 2);
  for (int i = from; i < upto; i++) {
    uint8_t *buf;
    size_t len = framed(s, 1 + (uint64_t)i, 0, pix, &buf);
    b2s_s2e_part part = {CH[0], 2, s->ny, s->nx, "bslz4", buf, len, 0};
    b2s_s2e_reset(&e);
    b2s_s2e_image(&e, s->id, uid, 1 + (uint64_t)i, &part, 1, 0, 1, 1, 1, NULL);
    send_msg(push, &e);
    free(buf);
  }
  free(pix);
  b2s_s2e_free(&e);
}

/* kill -9 in the middle of a series: every image committed before is in
 * the frame, intact; the restarted daemon takes the next series. */
static void test_kill_mid_series(void **state) {
  (void)state;
  env e;
  void *push = daemon_up(&e, "", 0);
  series s = {.id = 9, .nch = 1, .ts = 2, .ny = 100, .nx = 200, .nimages = 8};
  send_part(push, &s, 0, 8);
  char path[512];
  frame_path(&e, "det-9-threshold_1", path, sizeof path);
  b2s_frame *f = NULL;
  for (int t = 0; t < WAIT_MS / 20; t++) {     /* some images committed */
    if (f)
      b2s_frame_free(f);
    f = NULL;
    if (b2s_frame_open(path, &f, NULL) == 0 && b2s_frame_nchunks(f) >= 3)
      break;
    usleep(20000);
  }
  assert_non_null(f);
  b2s_frame_free(f);
  send_part(push, &s, 8, 40);                  /* more on their way */
  assert_int_equal(env_stop(&e, SIGKILL), -1);
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  int64_t n = b2s_frame_nchunks(f);
  assert_true(n >= 3);
  b2s_ctx *ctx = b2s_ctx_new();
  size_t nb = 100 * 200 * 2, padded = (nb + 8191) / 8192 * 8192;
  uint8_t *out = malloc(padded), *pix = malloc(nb);
  for (int64_t i = 0; i < n; i++) {
    assert_int_equal(b2s_frame_chunk_decompress(f, i, ctx, out, padded), (int)padded);
    pixels(pix, 100 * 200, 2, 1 + (uint64_t)i, 0);
    assert_memory_equal(out, pix, nb);
  }
  b2s_frame_free(f);
  free(out);
  free(pix);
  b2s_ctx_free(ctx);
  env_start(&e);
  series next = {.id = 10, .nch = 1, .ts = 2, .ny = 16, .nx = 16, .nimages = 3};
  send_series(push, &next, 0);
  check_series(&e, &next);
  zmq_close(push);
  env_down(&e);
}

/* More series than max_streams allows at once: each ended series' streams
 * close for good (their frames complete and closed, gone from STATS, no
 * longer counted), so the daemon keeps taking series; a follower of one
 * gets every chunk, then its end (ERROR B2S_E_CLOSED, closed_ref). */
static void test_series_close_streams(void **state) {
  (void)state;
  env e;
  void *push = daemon_up(&e, "max_streams: 4\n", 0);
  void *c = cli_producer(&e);
  void *cons = cli_connect(&e);
  cli_hello(cons, B2S_WIRE_HELLO_CONSUMER);
  const int N = 6;                     /* 12 streams, 4 at most at once */
  for (int k = 0; k < N; k++) {
    series s = {.id = 20 + (uint64_t)k, .nch = 2, .ts = 2, .ny = 32,
                .nx = 48, .nimages = 3 + k, .skip = k == 4 ? 2 : 0,
                .declared = k == 2 ? 7 : 0};
    char n0[64], n1[64];
    snprintf(n0, sizeof n0, "det-%d-%s", 20 + k, CH[0]);
    snprintf(n1, sizeof n1, "det-%d-%s", 20 + k, CH[1]);
    uint32_t fid = 0;
    if (k == 1) {                      /* followed from its start */
      s.part = 1;
      send_series(push, &s, 0);
      wait_listed(c, n0, true);
      b2s_wire_msg m;
      b2s_wire_init(&m, B2S_WIRE_FOLLOW);
      m.tag = 5;
      m.follow.target = b2s_wire_cstr(n0);
      cli_send(cons, &m, NULL, 0);
      rx r;
      cli_expect(cons, B2S_WIRE_FOLLOWING, &r);
      fid = r.m.following.follow_id;
      rx_free(&r);
      s.part = 2;
    }
    send_series(push, &s, 0);
    check_series(&e, &s);              /* every row */
    wait_listed(c, n0, false);
    wait_listed(c, n1, false);
    check_series(&e, &s);              /* closed, it reopens whole */
    if (k == 1) {
      uint64_t next = 0;
      rx r;
      for (;;) {
        cli_recv(cons, &r);
        if (r.m.type != B2S_WIRE_NOTIFY)
          break;
        assert_int_equal(r.m.notify.follow_id, fid);
        assert_int_equal(r.m.notify.first, next);
        next += r.m.notify.count;
        rx_free(&r);
      }
      assert_int_equal(next, (uint64_t)s.nimages);
      assert_int_equal(r.m.type, B2S_WIRE_ERROR);
      assert_int_equal(r.m.error.code, B2S_E_CLOSED);
      assert_true(r.m.flags & B2S_WIRE_ERROR_CLOSED_REF);
      assert_int_equal(r.m.error.ref_id, fid);
      assert_int_equal(r.m.error.ref_index, (uint64_t)s.nimages);
      rx_free(&r);
    }
  }
  env_log_wait(&e, "closed for good", 2 * N);
  assert_int_equal(env_log_count(&e, "refused: the maximum"), 0);
  assert_true(stats_value(c, NULL, "series") == N);
  assert_true(stats_value(c, NULL, "refused") == 0);
  /* an ended series' name no longer opens */
  b2s_wire_msg o;
  assert_int_equal(cli_open(c, "det-20-threshold_1", "", &o), B2S_E_NOSTREAM);
  zmq_close(cons);
  zmq_close(c);
  zmq_close(push);
  env_down(&e);
}

/* Noise pixels of image i: bslz4 cannot shrink them. */
static void noise(uint8_t *p, size_t n, uint64_t i) {
  uint64_t x = 0x9e3779b97f4a7c15ull * (i + 1);
  for (size_t k = 0; k < n; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[k] = (uint8_t)x;
  }
}

/* Images from..upto-1 of noise series `id` (n declared), 512x512
 * uint16; with its start when from is 0, its end when upto is n. */
static void send_noise(void *push, uint64_t id, int n, int from, int upto) {
  b2s_s2enc e = {0};
  char uid[32];
  snprintf(uid, sizeof uid, "u-%llu", (unsigned long long)id);
  b2s_s2e_start(&e, id, uid, CH, 1, "uint16", 512, 512, (uint64_t)n, 0);
  if (from == 0)
    send_msg(push, &e);
  size_t nb = 512 * 512 * 2;
  b2s_h5_params p = {.kind = B2S_H5_BSLZ4, .elem_size = 2, .typesize = 2,
                     .clevel = 5};
  size_t cap = b2s_h5_compress_bound(&p, 0, nb);
  uint8_t *pix = malloc(nb), *buf = malloc(cap);
  for (int i = from; i < upto; i++) {
    noise(pix, nb, (uint64_t)i);
    int64_t len = b2s_h5_compress(&p, 0, pix, nb, buf, cap);
    assert_true(len > 0);
    b2s_s2e_part part = {CH[0], 2, 512, 512, "bslz4", buf, (size_t)len, 0};
    b2s_s2e_reset(&e);
    b2s_s2e_image(&e, id, uid, 1 + (uint64_t)i, &part, 1, 0, 1, 1, 1, NULL);
    send_msg(push, &e);
  }
  b2s_s2e_reset(&e);
  b2s_s2e_end(&e, id, uid);
  if (upto == n)
    send_msg(push, &e);
  free(pix);
  free(buf);
  b2s_s2e_free(&e);
}

/* Frame `path` once it holds at least n chunks. */
static b2s_frame *frame_wait(const char *path, int64_t n) {
  b2s_frame *f = NULL;
  for (int t = 0; t < WAIT_MS / 20; t++) {
    if (b2s_frame_open(path, &f, NULL) == 0 && b2s_frame_nchunks(f) >= n)
      return f;
    b2s_frame_free(f);
    f = NULL;
    usleep(20000);
  }
  fail_msg("%s: fewer than %lld chunks", path, (long long)n);
  return NULL;
}

/* A series whose frame fails (the file-size limit, as a full disk) still
 * closes for good when it ends: its stream leaves the daemon and no longer
 * counts against max_streams, so later series open; what it committed
 * before the failure stays intact. */
static void test_failed_series_closes(void **state) {
  (void)state;
  env e;
  /* a file-size limit above the frame's 1 MiB data reserve */
  void *push = daemon_up(&e, "max_streams: 1\n", 3000000);
  void *c = cli_producer(&e);
  for (int k = 0; k < 2; k++) {  /* 12 images of 512 KiB: about 6 MB */
    uint64_t id = 40 + (uint64_t)k;
    char name[64], path[512];
    snprintf(name, sizeof name, "det-%llu-%s", (unsigned long long)id, CH[0]);
    frame_path(&e, name, path, sizeof path);
    send_noise(push, id, 12, 0, 2);
    b2s_frame_free(frame_wait(path, 2));      /* committed before it fails */
    send_noise(push, id, 12, 2, 12);
    env_log_wait(&e, "closed for good", k + 1);
    wait_listed(c, name, false);
    b2s_frame *f = NULL;
    assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
    int64_t n = b2s_frame_nchunks(f);
    assert_true(n >= 2 && n < 12);   /* it failed part way */
    size_t nb = 512 * 512 * 2;
    uint8_t *pix = malloc(nb), *out = malloc(nb);
    b2s_ctx *ctx = b2s_ctx_new();
    for (int64_t i = 0; i < n; i++) {
      assert_int_equal(b2s_frame_chunk_decompress(f, i, ctx, out, nb), (int)nb);
      noise(pix, nb, (uint64_t)i);
      assert_memory_equal(out, pix, nb);
    }
    b2s_ctx_free(ctx);
    free(pix);
    free(out);
    b2s_frame_free(f);
  }
  assert_true(env_log_count(&e, "failed") >= 2);
  /* the one stream max_streams allows is free again */
  series ok = {.id = 50, .nch = 1, .ts = 2, .ny = 16, .nx = 16, .nimages = 3};
  send_series(push, &ok, 0);
  check_series(&e, &ok);
  assert_int_equal(env_log_count(&e, "refused: the maximum"), 0);
  zmq_close(c);
  zmq_close(push);
  env_down(&e);
}

/* layout: images: frames of (images, y, x) that c-blosc2 opens as such;
 * an image whose row block is bitshuffle's 8 KiB is still stored by
 * rewriting, others are compressed again in blocks of whole rows. */
static void test_layout_images(void **state) {
  (void)state;
  env e;
  void *push = daemon_up(&e, "    layout: images\n", 0);
  void *c = cli_producer(&e);
  series all[] = {
    /* 128 x 2 bytes a row, 32 rows a block: 8 KiB, as bslz4's */
    {.id = 60, .nch = 1, .ts = 2, .ny = 64, .nx = 128, .nimages = 4,
     .skip = 2, .images = 1, .part = 3},
    /* 91-byte rows: 37 rows (the whole image) a block; bslz4 (compressed
     * again) and lz4 (stored as it came) */
    {.id = 61, .nch = 2, .ts = 1, .ny = 37, .nx = 91, .nimages = 3,
     .declared = 5, .images = 1, .part = 3},
    /* 3000 x 4 bytes a row: one row a block */
    {.id = 62, .nch = 1, .ts = 4, .ny = 5, .nx = 3000, .nimages = 2,
     .images = 1},
  };
  send_series(push, &all[0], 0);
  stats_wait(c, "det-60-threshold_1", "images_rewritten", 3);
  send_series(push, &all[1], 0);
  stats_wait(c, "det-61-threshold_1", "images_recompressed", 3);
  /* its lz4 image is one block of the whole image, as the frame's */
  stats_wait(c, "det-61-threshold_2", "images_rewritten", 3);
  send_series(push, &all[2], 0);
  for (size_t k = 0; k < 3; k++)
    check_series(&e, &all[k]);
  /* an image whose y, x differ from the start's (same pixel count) */
  series bad = {.id = 63, .nch = 1, .ts = 2, .ny = 64, .nx = 128,
                .nimages = 2, .images = 1};
  b2s_s2enc en = {0};
  b2s_s2e_start(&en, bad.id, "u-63", CH, 1, "uint16", 64, 128, 1, 0);
  send_msg(push, &en);
  uint8_t pix[64 * 128 * 2], *buf;
  bad.ny = 128;
  bad.nx = 64;
  size_t len = framed(&bad, 1, 0, pix, &buf);
  b2s_s2e_part part = {CH[0], 2, 128, 64, "bslz4", buf, len, 0};
  b2s_s2e_reset(&en);
  b2s_s2e_image(&en, bad.id, "u-63", 1, &part, 1, 0, 1, 1, 1, NULL);
  send_msg(push, &en);
  free(buf);
  for (int t = 0; t < WAIT_MS / 20 && stats_value(c, NULL, "refused") < 1; t++)
    usleep(20000);
  assert_true(stats_value(c, NULL, "refused") == 1);
  b2s_s2e_free(&en);
  blosc2_check(&e, &all[0]);
  blosc2_check(&e, &all[1]);
  blosc2_check(&e, &all[2]);
  zmq_close(c);
  zmq_close(push);
  env_down(&e);
}

/* compression: lz4: the frames' blocks are whole images, so the lz4
 * images (one LZ4 block per image, as the HDF5 LZ4 filter frames them) are
 * stored as they came, flat and as images; bslz4 images are compressed
 * again in those blocks; c-blosc2 reads both. */
static void test_lz4_source(void **state) {
  (void)state;
  static const char *const extra[] = {
    "    compression: lz4\n", "    compression: lz4\n    layout: images\n"};
  series all[][2] = {
    {{.id = 70, .nch = 3, .ts = 2, .ny = 514, .nx = 1030, .nimages = 5,
      .skip = 3, .lz4 = 1, .part = 3},
     {.id = 71, .nch = 2, .ts = 1, .ny = 37, .nx = 91, .nimages = 3,
      .declared = 5, .lz4 = 1, .part = 3}},
    {{.id = 72, .nch = 2, .ts = 4, .ny = 64, .nx = 300, .nimages = 4,
      .skip = 2, .lz4 = 1, .images = 1, .part = 3},
     {.id = 73, .nch = 1, .ts = 2, .ny = 5, .nx = 3000, .nimages = 2,
      .lz4 = 1, .images = 1, .part = 3}},
  };
  for (int k = 0; k < 2; k++) {
    env e;
    void *push = daemon_up(&e, extra[k], 0);
    void *c = cli_producer(&e);
    for (int j = 0; j < 2; j++) {
      series *s = &all[k][j];
      char name[64];
      int sent = s->nimages - (s->skip ? 1 : 0);
      send_series(push, s, 0);
      snprintf(name, sizeof name, "det-%llu-threshold_1",
               (unsigned long long)s->id);
      stats_wait(c, name, "images_rewritten", sent);
      assert_true(stats_value(c, name, "images_patched") == 0);
      assert_true(stats_value(c, name, "images_recompressed") == 0);
      if (s->nch > 1) {
        name[strlen(name) - 1] = '2';
        stats_wait(c, name, "images_recompressed", sent);
      }
    }
    for (int j = 0; j < 2; j++) {
      all[k][j].part = 2;
      int n = all[k][j].nimages;
      all[k][j].nimages = 0;          /* the end alone */
      send_series(push, &all[k][j], 0);
      all[k][j].nimages = n;
    }
    for (int j = 0; j < 2; j++) {
      char name[64];
      snprintf(name, sizeof name, "det-%llu-threshold_1",
               (unsigned long long)all[k][j].id);
      wait_listed(c, name, false);     /* closed: its shape is final */
      check_series(&e, &all[k][j]);
      blosc2_check(&e, &all[k][j]);
    }
    zmq_close(c);
    zmq_close(push);
    env_down(&e);
  }
}

/* ---- series metadata, layouts from the first image, names ---------------- */

/* The series metadata of the frame at path (msgpack, malloc'ed). */
static uint8_t *series_of(const char *path, size_t *len) {
  b2s_frame *f = NULL;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  uint8_t *map = NULL;
  assert_int_equal(b2s_frame_series_get(f, &map, len), 0);
  b2s_frame_free(f);
  return map;
}

/* A reader at the value of top-level key `key`; false when absent. */
static bool series_find(const uint8_t *map, size_t len, const char *key,
                        b2s_mpreader *r) {
  b2s_mpreader_init(r, map, len);
  b2s_mpval m;
  if (b2s_mp_read_any(r, &m) < 0 || m.type != B2S_MPT_MAP)
    return false;
  for (uint32_t i = 0; i < m.n; i++) {
    b2s_mpval k;
    assert_int_equal(b2s_mp_read_any(r, &k), 0);
    if (k.type == B2S_MPT_STR && k.n == strlen(key) && !memcmp(k.p, key, k.n))
      return true;
    assert_int_equal(b2s_mp_skip(r, 40), 0);
  }
  return false;
}

static void expect_str(const uint8_t *map, size_t len, const char *key,
                       const char *want) {
  b2s_mpreader r;
  b2s_mpval v;
  if (!series_find(map, len, key, &r))
    fail_msg("series metadata has no %s", key);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_int_equal(v.type, B2S_MPT_STR);
  if (v.n != strlen(want) || memcmp(v.p, want, v.n))
    fail_msg("series %s: '%.*s', not '%s'", key, (int)v.n, v.p, want);
}

static void expect_uint(const uint8_t *map, size_t len, const char *key,
                        uint64_t want) {
  b2s_mpreader r;
  b2s_mpval v;
  if (!series_find(map, len, key, &r))
    fail_msg("series metadata has no %s", key);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_int_equal(v.type, B2S_MPT_UINT);
  assert_int_equal(v.u, want);
}

/* python-blosc2 reads the frame's series metadata: the Python expression
 * cond (on the dict `s`) holds. */
static void blosc2_series(const char *path, const char *cond) {
  char py[400], cmd[2000];
  if (!ts_venv_python(py, sizeof py))
    return;
  snprintf(cmd, sizeof cmd,
           "'%s' -c 'import sys, blosc2\n"
           "a = blosc2.open(sys.argv[1])\n"
           "s = a.schunk.vlmeta[\"series\"]\n"
           "assert %s, s' '%s'", py, cond, path);
  if (system(cmd) != 0)
    fail_msg("python-blosc2: the series metadata of %s fails %s", path, cond);
}

/* A start without image_dtype and image_size_x/y opens its series at the
 * first image: its typed array's tag gives the dtype, its shape y, x, and
 * the series metadata says them.  Later images whose dtype or pixel count
 * differ are refused (counted), their places gaps. */
static void test_first_image_layout(void **state) {
  (void)state;
  env e;
  void *push = daemon_up(&e, "", 0);
  void *c = cli_producer(&e);
  series all[] = {
    {.id = 80, .nch = 2, .ts = 2, .ny = 37, .nx = 91, .nimages = 4, .bare = 1},
    {.id = 81, .nch = 1, .ts = 1, .ny = 64, .nx = 128, .nimages = 3,
     .skip = 2, .bare = 1, .declared = 5},
    {.id = 82, .nch = 3, .ts = 4, .ny = 5, .nx = 300, .nimages = 2, .bare = 1},
  };
  static const char *const dts[] = {NULL, "uint8", "uint16", NULL, "uint32"};
  int closed = 0;
  for (size_t k = 0; k < 3; k++) {
    send_series(push, &all[k], 0);
    closed += all[k].nch;
    env_log_wait(&e, "closed for good", closed);   /* its frames final */
    check_series(&e, &all[k]);
    char name[64], path[512];
    series_name(&all[k], 0, name, sizeof name);
    frame_path(&e, name, path, sizeof path);
    size_t len;
    uint8_t *map = series_of(path, &len);
    expect_str(map, len, "image_dtype", dts[all[k].ts]);
    expect_uint(map, len, "image_size_x", all[k].nx);
    expect_uint(map, len, "image_size_y", all[k].ny);
    expect_str(map, len, "channel", CH[0]);
    b2s_mpreader r;
    assert_false(series_find(map, len, "beamline", &r));   /* none given */
    free(map);
    char cond[200];
    snprintf(cond, sizeof cond, "s[\"image_dtype\"] == \"%s\" and "
             "s[\"image_size_y\"] == %llu and s[\"image_size_x\"] == %llu",
             dts[all[k].ts], (unsigned long long)all[k].ny,
             (unsigned long long)all[k].nx);
    blosc2_series(path, cond);
  }
  blosc2_check(&e, &all[1]);
  assert_true(stats_value(c, NULL, "refused") == 0);
  /* series 83, 32x48 uint16 from its first image; image 2 uint8 of as
   * many bytes, image 3 16x16: refused; image 4 stored */
  series s = {.id = 83, .nch = 1, .ts = 2, .ny = 32, .nx = 48, .nimages = 4,
              .bare = 1};
  b2s_s2enc en = {0};
  b2s_s2e_start(&en, s.id, "u-83", CH, 1, NULL, 0, 0, 4, 0);
  send_msg(push, &en);
  uint8_t pix[64 * 48 * 2];
  for (uint64_t id = 1; id <= 4; id++) {
    series as = s;
    if (id == 2) {
      as.ts = 1;
      as.ny = 64;
    } else if (id == 3) {
      as.ny = as.nx = 16;
    }
    uint8_t *buf;
    size_t len = framed(&as, id, 0, pix, &buf);
    b2s_s2e_part part = {CH[0], (uint32_t)as.ts, as.ny, as.nx, "bslz4", buf,
                         len, 0};
    b2s_s2e_reset(&en);
    b2s_s2e_image(&en, s.id, "u-83", id, &part, 1, id * 1000003,
                  id * 1000003 + 999, 999, 100000000,
                  (id - 1) % 2 ? "odd" : NULL);
    send_msg(push, &en);
    free(buf);
  }
  b2s_s2e_reset(&en);
  b2s_s2e_end(&en, s.id, "u-83");
  send_msg(push, &en);
  b2s_s2e_free(&en);
  env_log_wait(&e, "closed for good", closed + 1);
  s.skip = 2;
  s.skip2 = 3;
  check_series(&e, &s);
  assert_true(stats_value(c, NULL, "refused") == 2);
  assert_int_equal(env_log_count(&e, "where the series' images are 32x48 <u2"), 1);
  zmq_close(c);
  zmq_close(push);
  env_down(&e);
}

/* Series ids repeat.  A detector restarted (series id 1 again, another
 * series_unique_id), the same series armed twice (id and unique id the
 * same, the first still open), a file we did not make where a frame would
 * go, and the daemon restarted: every series is stored whole in frames of
 * its own (suffix .N), byte for byte, and nothing else is touched. */
static void test_names_collide(void **state) {
  (void)state;
  env e;
  void *push = daemon_up(&e, "", 0);
  void *c = cli_producer(&e);
  char foreign[512];
  frame_path(&e, "det-2-threshold_1", foreign, sizeof foreign);
  static const char theirs[] = "not a frame of ours\n";
  FILE *f = fopen(foreign, "w");
  assert_non_null(f);
  fputs(theirs, f);
  fclose(f);
  series all[] = {
    {.id = 1, .nch = 2, .ts = 2, .ny = 37, .nx = 91, .nimages = 3,
     .uid = "A", .salt = 100},
    {.id = 1, .nch = 2, .ts = 2, .ny = 37, .nx = 91, .nimages = 3,
     .uid = "B", .salt = 200, .suffix = 2, .part = 3},    /* no end */
    {.id = 1, .nch = 2, .ts = 2, .ny = 37, .nx = 91, .nimages = 4,
     .uid = "B", .salt = 300, .suffix = 3},   /* its start closes the last */
    {.id = 2, .nch = 1, .ts = 1, .ny = 16, .nx = 40, .nimages = 2,
     .uid = "C", .salt = 400, .suffix = 2, .bare = 1},
    {.id = 1, .nch = 1, .ts = 4, .ny = 8, .nx = 8, .nimages = 2,
     .uid = "D", .salt = 500, .suffix = 4},   /* after a restart */
  };
  for (int k = 0; k < 4; k++)
    send_series(push, &all[k], 0);
  env_log_wait(&e, "closed for good", 2 + 2 + 2 + 1);
  char name[64], path[512];
  for (int k = 0; k < 4; k++) {          /* closed: none took more */
    check_series(&e, &all[k]);
    for (int ch = 0; ch < all[k].nch; ch++) {
      series_name(&all[k], ch, name, sizeof name);
      frame_path(&e, name, path, sizeof path);
      size_t len;
      uint8_t *map = series_of(path, &len);
      expect_str(map, len, "series_unique_id", all[k].uid);
      free(map);
    }
  }
  assert_true(stats_value(c, NULL, "series_renamed") == 3);
  assert_true(stats_value(c, NULL, "refused") == 0);
  assert_int_equal(env_log_count(&e, "stored with suffix .2"), 2);
  assert_int_equal(env_log_count(&e, "stored with suffix .3"), 1);
  size_t n;
  char *now = ts_read_text(foreign, &n);
  assert_non_null(now);
  assert_int_equal(n, strlen(theirs));
  assert_memory_equal(now, theirs, n);
  free(now);
  zmq_close(c);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  env_start(&e);
  c = cli_producer(&e);
  send_series(push, &all[4], 0);
  env_log_wait(&e, "closed for good", 2 + 2 + 2 + 1 + 1);
  for (int k = 0; k < 5; k++)
    check_series(&e, &all[k]);
  assert_true(stats_value(c, NULL, "series_renamed") == 1);
  zmq_close(c);
  zmq_close(push);
  env_down(&e);
}

/* beamline: in every channel stream's series metadata, one map with the
 * configured facts under their keys (what the NXmx export reads). */
static void test_beamline_metadata(void **state) {
  (void)state;
  env e;
  void *push = daemon_up(&e,
      "    beamline:\n"
      "      source_name: Diamond Light Source\n"
      "      source_type: Synchrotron X-ray Source\n"
      "      source_probe: x-ray\n"
      "      instrument_name: I04\n"
      "      sample_name: 'lysozyme, crystal 3'\n"
      "      beam_flux: 2.5e12\n", 0);
  series s = {.id = 90, .nch = 2, .ts = 2, .ny = 16, .nx = 16, .nimages = 2};
  send_series(push, &s, 0);
  env_log_wait(&e, "closed for good", 2);
  check_series(&e, &s);
  static const char *const keys[] = {"source_name", "source_type",
                                     "source_probe", "instrument_name",
                                     "sample_name"};
  static const char *const vals[] = {"Diamond Light Source",
                                     "Synchrotron X-ray Source", "x-ray",
                                     "I04", "lysozyme, crystal 3"};
  for (int ch = 0; ch < 2; ch++) {
    char name[64], path[512];
    series_name(&s, ch, name, sizeof name);
    frame_path(&e, name, path, sizeof path);
    size_t len;
    uint8_t *map = series_of(path, &len);
    b2s_mpreader r;
    b2s_mpval v, k;
    assert_true(series_find(map, len, "beamline", &r));
    assert_int_equal(b2s_mp_read_any(&r, &v), 0);
    assert_int_equal(v.type, B2S_MPT_MAP);
    assert_int_equal(v.n, 6);
    for (int i = 0; i < 5; i++) {
      assert_int_equal(b2s_mp_read_any(&r, &k), 0);
      assert_int_equal(b2s_mp_read_any(&r, &v), 0);
      assert_true(k.n == strlen(keys[i]) && !memcmp(k.p, keys[i], k.n));
      assert_int_equal(v.type, B2S_MPT_STR);
      assert_true(v.n == strlen(vals[i]) && !memcmp(v.p, vals[i], v.n));
    }
    assert_int_equal(b2s_mp_read_any(&r, &k), 0);
    assert_int_equal(b2s_mp_read_any(&r, &v), 0);
    assert_true(k.n == 9 && !memcmp(k.p, "beam_flux", 9));
    assert_int_equal(v.type, B2S_MPT_FLOAT);
    assert_true(v.f == 2.5e12);
    expect_str(map, len, "channel", CH[ch]);
    free(map);
    blosc2_series(path, "s[\"beamline\"] == {\"source_name\": \"Diamond Light "
                  "Source\", \"source_type\": \"Synchrotron X-ray Source\", "
                  "\"source_probe\": \"x-ray\", \"instrument_name\": \"I04\", "
                  "\"sample_name\": \"lysozyme, crystal 3\", \"beam_flux\": "
                  "2.5e12} and type(s[\"beamline\"][\"beam_flux\"]) is float");
  }
  zmq_close(push);
  env_down(&e);
}

/* The three messages tickit-devices 0.4.1 ships as recorded from an EIGER2
 * Si 16M (4362x4148 uint16, bslz4; the start untagged, without
 * image_dtype, its arrays 4-byte byte strings), pushed exactly as recorded
 * to a source configured with kind and endpoint only: the stored image is
 * the pixels hdf5plugin's bitshuffle filter decodes the recorded data to,
 * python-blosc2 reads it and the series metadata holds every field of the
 * start.  The captures come with the venv (scripts/make-venv). */
static void test_recorded_eiger(void **state) {
  (void)state;
  char py[400], cap[500], cmd[4096];
  const char *script = getenv("B2S_CAPTURE_REF");
  if (!script || !ts_venv_python(py, sizeof py))
    skip();
  snprintf(cap, sizeof cap, "%.*s/captures/tickit-devices-0.4.1",
           (int)(strlen(py) - strlen("/bin/python")), py);
  char probe[600];
  snprintf(probe, sizeof probe, "%s/start.cbor", cap);
  if (access(probe, R_OK) != 0) {
    if (getenv("B2S_VENV"))
      fail_msg("no captures at %s: run scripts/make-venv", cap);
    fprintf(stderr, "# no captures at %s (scripts/make-venv): skipped\n", cap);
    skip();
  }
  env e;
  env_init_config(&e, "");
  char yaml[800];
  snprintf(yaml, sizeof yaml,
           ENV_YAML_HEAD "workers: 2\n"
           "sources:\n"
           "  - kind: dectris-stream2\n"
           "    endpoint: 'ipc://%s/det.sock'\n", e.dir);
  env_write_config(&e, yaml);
  void *push = pusher(&e);
  env_start(&e);
  char want[600];
  snprintf(want, sizeof want, "%s/pixels.bin", e.dir);
  snprintf(cmd, sizeof cmd, "'%s' '%s' pixels '%s' '%s' 2>&1", py, script,
           cap, want);
  assert_int_equal(system(cmd), 0);
  static const char *const kinds[] = {"start", "image", "end"};
  for (int k = 0; k < 3; k++) {
    char file[600];
    size_t n;
    snprintf(file, sizeof file, "%s/%s.cbor", cap, kinds[k]);
    char *b = ts_read_text(file, &n);
    assert_non_null(b);
    assert_int_equal(zmq_send(push, b, n, 0), (int)n);
    free(b);
  }
  env_log_wait(&e, "closed for good", 1);
  static const char name[] = "E-32-0117-15614-threshold_1";
  char path[512];
  frame_path(&e, name, path, sizeof path);
  b2s_frame *f = NULL;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), 1);
  size_t npix = 4362 * 4148, nb = npix * 2, padded = (nb + 8191) / 8192 * 8192;
  uint8_t *out = malloc(padded);
  size_t wn;
  char *w = ts_read_text(want, &wn);
  assert_non_null(w);
  assert_int_equal(wn, nb);
  b2s_ctx *ctx = b2s_ctx_new();
  assert_int_equal(b2s_frame_chunk_decompress(f, 0, ctx, out, padded),
                   (int)padded);
  assert_memory_equal(out, w, nb);
  for (size_t k = nb; k < padded; k++)
    assert_int_equal(out[k], 0);
  b2s_ctx_free(ctx);
  b2s_frame_free(f);
  free(out);
  free(w);
  snprintf(cmd, sizeof cmd, "'%s' '%s' check '%s' '%s' '%s'", py, script,
           cap, path, want);
  if (system(cmd) != 0)
    fail_msg("python-blosc2 does not read the recorded series as sent");
  void *c = cli_producer(&e);
  assert_true(stats_value(c, NULL, "images") == 1);
  assert_true(stats_value(c, NULL, "refused") == 0);
  assert_true(stats_value(c, NULL, "series") == 1);
  assert_true(stats_value(c, NULL, "arrays_as_metadata") == 3);
  assert_int_equal(env_log_count(&e, "kept as series metadata"), 3);
  for (int k = 0; k < 3; k++) {                 /* no companion streams */
    static const char *const comp[] = {"flatfield", "pixel_mask", "countrate"};
    char cn[128], cp[512];
    struct stat sb;
    snprintf(cn, sizeof cn, "%s.%s", name, comp[k]);
    frame_path(&e, cn, cp, sizeof cp);
    assert_int_equal(lstat(cp, &sb), -1);
  }
  zmq_close(c);
  zmq_close(push);
  env_down(&e);
}

/* ---- framings written by the HDF5 filters themselves ---------------------- */

static const int REF_N = 3;                /* images a series */
static const char *const REF_SHAPES = "[(514, 1030), (37, 91), (3, 5), (1, 4101)]";
static const char *const REF_DT[] = {"u1", "u2", "u4"};
static const uint64_t REF_YX[][2] = {{514, 1030}, {37, 91}, {3, 5}, {1, 4101}};

/* Image k of a reference set: its framing (or its pixels). */
static uint8_t *ref_file(const char *dir, const char *kind, int d, int sh,
                         int k, const char *ext, size_t *n) {
  char path[700], nth[16] = "";
  if (k > 0)                               /* image 0 has no number */
    snprintf(nth, sizeof nth, ".%d", k);
  snprintf(path, sizeof path, "%s/%s_%s_%llux%llu%s.%s", dir, kind,
           REF_DT[d], (unsigned long long)REF_YX[sh][0],
           (unsigned long long)REF_YX[sh][1], nth, ext);
  uint8_t *b = (uint8_t *)ts_read_text(path, n);
  if (!b)
    fail_msg("cannot read %s", path);
  return b;
}

/* One series of the set's framings of one kind, dtype and shape, but for
 * its end (the stream's counters go with it). */
static void ref_send(void *push, const char *dir, const char *kind, int d,
                     int sh, uint64_t id) {
  static const char *const dts[] = {"uint8", "uint16", "uint32"};
  b2s_s2enc e = {0};
  b2s_s2e_start(&e, id, "ref", CH, 1, dts[d], REF_YX[sh][0], REF_YX[sh][1],
                (uint64_t)REF_N, 0);
  send_msg(push, &e);
  for (int k = 0; k < REF_N; k++) {
    size_t n;
    uint8_t *f = ref_file(dir, kind, d, sh, k, "h5lz4", &n);
    b2s_s2e_part part = {CH[0], 1u << d, REF_YX[sh][0], REF_YX[sh][1], kind,
                         f, n, 0};
    b2s_s2e_reset(&e);
    b2s_s2e_image(&e, id, "ref", 1 + (uint64_t)k, &part, 1, 0, 1, 1, 1, NULL);
    send_msg(push, &e);
    free(f);
  }
  b2s_s2e_free(&e);
}

static void ref_end(void *push, uint64_t id) {
  b2s_s2enc e = {0};
  b2s_s2e_end(&e, id, "ref");
  send_msg(push, &e);
  b2s_s2e_free(&e);
}

/* Images of stream `name` converted so far, by any path. */
static double converted(void *c, const char *name) {
  return stats_value(c, name, "images_rewritten") +
         stats_value(c, name, "images_patched") +
         stats_value(c, name, "images_recompressed");
}

/* The series' frame holds the set's pixels, image by image, padded with
 * zeros; python-blosc2 reads the same.  Returns the images compressed
 * again (stats), after checking none of 32 bytes or more was. */
static double ref_check(env *e, void *push, void *c, const char *py,
                        const char *dir,
                        const char *kind, int d, int sh, uint64_t id) {
  char name[64], path[512];
  snprintf(name, sizeof name, "det-%llu-%s", (unsigned long long)id, CH[0]);
  frame_path(e, name, path, sizeof path);
  wait_listed(c, name, true);
  for (int t = 0; t < WAIT_MS / 20 && converted(c, name) < REF_N; t++)
    usleep(20000);
  assert_true(converted(c, name) == REF_N);
  double recomp = stats_value(c, name, "images_recompressed");
  assert_true(stats_value(c, name, "images_refused") == 0);
  size_t img = REF_YX[sh][0] * REF_YX[sh][1] << d;
  if (img >= 32 && recomp != 0)
    fail_msg("%s: %g of the %s images compressed again", name, recomp, kind);
  ref_end(push, id);
  wait_listed(c, name, false);         /* closed: the frame is final */
  b2s_frame *f = NULL;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), REF_N);
  b2s_ctx *ctx = b2s_ctx_new();
  uint8_t *out = malloc(img + 8192);
  char want[700];
  snprintf(want, sizeof want, "%s/want-%llu.bin", dir, (unsigned long long)id);
  FILE *w = fopen(want, "wb");
  for (int k = 0; k < REF_N; k++) {
    size_t n;
    uint8_t *pix = ref_file(dir, kind, d, sh, k, "pix", &n);
    assert_int_equal(n, img);
    int got = b2s_frame_chunk_decompress(f, k, ctx, out, img + 8192);
    assert_true(got >= (int)img);
    assert_memory_equal(out, pix, img);
    for (int i = (int)img; i < got; i++)
      assert_int_equal(out[i], 0);
    fwrite(pix, 1, n, w);
    free(pix);
  }
  fclose(w);
  free(out);
  b2s_ctx_free(ctx);
  b2s_frame_free(f);
  char shape[64];
  snprintf(shape, sizeof shape, "(%d, %llu)", REF_N,
           (unsigned long long)(REF_YX[sh][0] * REF_YX[sh][1]));
  if (!blosc2_reads(py, path, want, shape, "1:, 3:9"))
    fail_msg("python-blosc2 does not read %s as %s", path, shape);
  return recomp;
}

/* Framings the HDF5 filters wrote (bitshuffle's filter through Debian's
 * python3-hdf5plugin, and the pinned venv's hdf5plugin), read back raw
 * with h5py's direct chunk read, sent as the detector would: bslz4 to a
 * source as shipped, lz4 to one set for lz4.  Prints the share stored
 * without recompression. */
static void test_reference_framings(void **state) {
  (void)state;
  char vpy[400], gen[3000];
  const char *script = getenv("B2S_REF_FRAMINGS");
  if (!script || !ts_venv_python(vpy, sizeof vpy))
    skip();
  const char *pys[] = {"/usr/bin/python3", vpy};
  static const char *const kinds[] = {"bslz4", "lz4"};
  static const char *const extra[] = {"", "    compression: lz4\n"};
  uint64_t id = 100;
  for (int k = 0; k < 2; k++) {
    env e;
    void *push = daemon_up(&e, extra[k], 0);
    void *c = cli_producer(&e);
    for (int p = 0; p < 2; p++) {
      char dir[600];
      snprintf(dir, sizeof dir, "%s/ref%d", e.dir, p);
      snprintf(gen, sizeof gen, "mkdir -p '%s' && '%s' '%s' '%s' \"%s\" "
               "\"['u1', 'u2', 'u4']\" %d >/dev/null 2>&1", dir, pys[p],
               script, dir, REF_SHAPES, REF_N);
      if (system(gen) != 0) {
        assert_true(p == 0);       /* Debian's may be missing; the venv's not */
        fprintf(stderr, "# %s: no h5py/hdf5plugin, set skipped\n", pys[p]);
        continue;
      }
      int images = 0;
      double recomp = 0;
      for (int sh = 0; sh < 4; sh++)
        for (int d = 0; d < 3; d++) {
          ref_send(push, dir, kinds[k], d, sh, id);
          recomp += ref_check(&e, push, c, vpy, dir, kinds[k], d, sh, id++);
          images += REF_N;
        }
      fprintf(stderr, "# %s images of %s: %d, stored without recompression "
              "%.0f%%\n", kinds[k], pys[p], images,
              100.0 * (images - recomp) / images);
    }
    zmq_close(c);
    zmq_close(push);
    env_down(&e);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_series),
    cmocka_unit_test(test_series_close_streams),
    cmocka_unit_test(test_kill_mid_series),
    cmocka_unit_test(test_failed_series_closes),
    cmocka_unit_test(test_layout_images),
    cmocka_unit_test(test_lz4_source),
    cmocka_unit_test(test_reference_framings),
    cmocka_unit_test(test_first_image_layout),
    cmocka_unit_test(test_names_collide),
    cmocka_unit_test(test_beamline_metadata),
    cmocka_unit_test(test_recorded_eiger),
  };
  return harness_run(tests);
}

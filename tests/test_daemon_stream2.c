/* The daemon as a DECTRIS Stream V2 receiver: a sender written from the
 * spec (tests/support/s2enc.c) pushes start, image and end messages with
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
#include <unistd.h>

#include <cmocka.h>
#include <zmq.h>

#include "b2s_chunk.h"
#include "b2s_h5lz4.h"
#include "b2s_meta.h"
#include "daemon_harness.h"
#include "frame.h"
#include "msgpack.h"
#include "s2enc.h"

static const char *const CH[] = {"threshold_1", "threshold_2", "threshold_3"};

static void config(env *e, char *yaml, size_t n) {
  snprintf(yaml, n,
           "listen: [ipc://d.sock]\nrun_dir: run\ndata_dir: data\nworkers: 2\n"
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
  uint64_t skip;             /* an image id never sent (a gap) */
} series;

static void send_msg(void *push, const s2enc *e) {
  assert_int_equal(zmq_send(push, e->b, e->n, 0), (int)e->n);
}

/* Channel c of image i: bslz4 for even channels, lz4 for odd ones. */
static size_t framed(const series *s, uint64_t i, int c, uint8_t *pix,
                     uint8_t **out) {
  size_t n = s->ny * s->nx * (size_t)s->ts;
  pixels(pix, s->ny * s->nx, s->ts, i, c);
  b2s_h5_params p = {.kind = c % 2 ? B2S_H5_LZ4 : B2S_H5_BSLZ4,
                     .elem_size = s->ts, .typesize = s->ts, .clevel = 5};
  size_t cap = b2s_h5_compress_bound(&p, 0, n);
  *out = malloc(cap);
  int64_t len = b2s_h5_compress(&p, 0, pix, n, *out, cap);
  assert_true(len > 0);
  return (size_t)len;
}

static void send_series(void *push, const series *s, int hostile) {
  s2enc e = {0};
  static const char *const dt[] = {NULL, "uint8", "uint16", NULL, "uint32"};
  char uid[32];
  snprintf(uid, sizeof uid, "u-%llu", (unsigned long long)s->id);
  s2_start(&e, s->id, uid, CH, s->nch, dt[s->ts], s->ny, s->nx,
           (uint64_t)s->nimages);
  send_msg(push, &e);
  size_t n = s->ny * s->nx * (size_t)s->ts;
  uint8_t *pix = malloc(n);
  for (int i = 0; i < s->nimages; i++) {
    uint64_t id = 1 + (uint64_t)i;        /* the detector counts from 1 */
    if (id == s->skip)
      continue;
    s2_image_part parts[3];
    uint8_t *bufs[3];
    for (int c = 0; c < s->nch; c++) {
      size_t len = framed(s, id, c, pix, &bufs[c]);
      parts[c] = (s2_image_part){CH[c], (uint32_t)s->ts, s->ny, s->nx,
                                 c % 2 ? "lz4" : "bslz4", bufs[c], len};
    }
    s2_reset(&e);
    s2_image(&e, s->id, uid, id, parts, s->nch, id * 1000003, id * 1000003 + 999,
             999, 100000000, i % 2 ? "odd" : NULL);
    send_msg(push, &e);
    for (int c = 0; c < s->nch; c++)
      free(bufs[c]);
    if (hostile && i == 1) {
      static const uint8_t junk[] = {0xa2, 0x64, 't', 'y', 'p', 'e', 0x65,
                                     'i', 'm', 'a', 'g', 'e', 0xff};
      assert_int_equal(zmq_send(push, junk, sizeof junk, 0), (int)sizeof junk);
      /* an image of a series that is not open */
      s2_reset(&e);
      s2_image(&e, s->id + 1000, "x", 1, parts, 0, 0, 1, 1, 1, NULL);
      send_msg(push, &e);
    }
  }
  s2_reset(&e);
  s2_end(&e, s->id, uid);
  send_msg(push, &e);
  free(pix);
  s2_free(&e);
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
static void check_series(env *e, const series *s) {
  size_t n = s->ny * s->nx * (size_t)s->ts;
  uint8_t *pix = malloc(n);
  b2s_ctx *ctx = b2s_ctx_new();
  b2s_mpbuf want;
  b2s_mpbuf_init(&want);
  for (int c = 0; c < s->nch; c++) {
    char name[128], path[512];
    snprintf(name, sizeof name, "det-%llu-%s", (unsigned long long)s->id, CH[c]);
    frame_path(e, name, path, sizeof path);
    b2s_frame *f = NULL;
    for (int t = 0; t < WAIT_MS / 50; t++) {
      if (f)
        b2s_frame_free(f);
      f = NULL;
      if (b2s_frame_open(path, &f, NULL) == 0 &&
          b2s_frame_nchunks(f) == s->nimages)
        break;
      usleep(50000);
    }
    assert_non_null(f);
    assert_int_equal(b2s_frame_nchunks(f), s->nimages);
    b2s_records *rs = NULL;
    assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
    size_t padded = (n + 8191) / 8192 * 8192;
    uint8_t *out = malloc(padded);
    for (int i = 0; i < s->nimages; i++) {
      uint64_t id = 1 + (uint64_t)i;
      int got = b2s_frame_chunk_decompress(f, i, ctx, out, padded);
      assert_int_equal(got, (int)padded);
      b2s_record rec;
      assert_int_equal(b2s_records_get(rs, i, &rec), 0);
      if (id == s->skip) {            /* the gap: zeros, flagged */
        for (size_t k = 0; k < padded; k++)
          assert_int_equal(out[k], 0);
        assert_true(rec.flags != 0);
        continue;
      }
      pixels(pix, s->ny * s->nx, s->ts, id, c);
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

static void *pusher(env *e) {
  void *push = zmq_socket(zctx, ZMQ_PUSH);
  char ep[400];
  snprintf(ep, sizeof ep, "ipc://%s/det.sock", e->dir);
  assert_int_equal(zmq_bind(push, ep), 0);
  return push;
}

static void test_series(void **state) {
  (void)state;
  env e;
  char yaml[1024];
  env_init_config(&e, "");
  config(&e, yaml, sizeof yaml);
  env_write_config(&e, yaml);
  void *push = pusher(&e);
  env_start(&e);
  series all[] = {
    {.id = 5, .nch = 2, .ts = 2, .ny = 514, .nx = 1030, .nimages = 6, .skip = 4},
    {.id = 6, .nch = 3, .ts = 1, .ny = 37, .nx = 91, .nimages = 5, .skip = 0},
    {.id = 7, .nch = 1, .ts = 4, .ny = 64, .nx = 128, .nimages = 4, .skip = 0},
  };
  for (size_t k = 0; k < 3; k++)
    send_series(push, &all[k], k == 0);
  for (size_t k = 0; k < 3; k++)
    check_series(&e, &all[k]);
  /* the broken message and the stray image were refused, logged once */
  assert_int_equal(env_log_count(&e, "logged once"), 2);
  zmq_close(push);
  env_down(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_series),
  };
  return harness_run(tests);
}

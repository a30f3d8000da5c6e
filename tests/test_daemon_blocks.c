/* Images sent in C order by the client library (b2sc_send, b2sc_send_zc,
 * shared-memory slots) and by `b2stream produce` to the real daemon, on
 * b2nd streams whose blocks are no runs of that order (docs/PROTOCOL.md
 * 3.5): the frame holds each chunk's items block after block, as c-blosc2
 * lays them out, and reads back as sent -- through the core frame reader,
 * a live follow (decompressed: as stored) and python-blosc2 of the
 * reference venv ($B2S_VENV), which skips, saying so, when it is missing.
 * The block order expected is computed here item by item. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "b2s_chunk.h"
#include "b2s_frame.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "venv_python.h"

/* A stream: its chunk and block shapes (3 dimensions, uint16 items). */
typedef struct shape3 {
  const char *name;
  int c[3], b[3];
} shape3;

static const shape3 SQ = {"sq", {1, 128, 128}, {1, 32, 32}};
static const shape3 CUBE = {"cube", {4, 48, 40}, {2, 16, 8}};  /* all split */

#define NCHUNK 8

static const char *config =
    ENV_YAML_HEAD "workers: 2\n"
    "max_buffer: 1MiB\nlog_level: debug\n"
    "streams:\n"
    "  sq:\n"
    "    b2nd: {shape: [0, 128, 128], chunkshape: [1, 128, 128], "
    "blockshape: [1, 32, 32], dtype: \"<u2\"}\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  cube:\n"
    "    filters: [bitshuffle]\n"
    "    b2nd: {shape: [0, 48, 40], chunkshape: [4, 48, 40], "
    "blockshape: [2, 16, 8], dtype: \"<u2\"}\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n";

static size_t items(const shape3 *s) {
  return (size_t)s->c[0] * (size_t)s->c[1] * (size_t)s->c[2];
}

/* Chunk k's C-ordered items: distinct, so any misplaced item shows. */
static void fill_chunk(const shape3 *s, int k, uint16_t *out) {
  for (size_t i = 0; i < items(s); i++)
    out[i] = (uint16_t)(i * 7 + (size_t)k * 1237);
}

/* The position in block order of the item at (z, y, x). */
static size_t blocked(const shape3 *s, int z, int y, int x) {
  int gy = s->c[1] / s->b[1], gx = s->c[2] / s->b[2];
  size_t blk = ((size_t)(z / s->b[0]) * gy + (size_t)(y / s->b[1])) * gx +
               (size_t)(x / s->b[2]);
  size_t in = ((size_t)(z % s->b[0]) * s->b[1] + (size_t)(y % s->b[1])) * s->b[2] +
              (size_t)(x % s->b[2]);
  return blk * s->b[0] * s->b[1] * s->b[2] + in;
}

/* got holds chunk k as stored: block after block. */
static void check_stored(const shape3 *s, int k, const uint16_t *got) {
  uint16_t *want = malloc(items(s) * 2);
  assert_non_null(want);
  fill_chunk(s, k, want);
  size_t i = 0;
  for (int z = 0; z < s->c[0]; z++)
    for (int y = 0; y < s->c[1]; y++)
      for (int x = 0; x < s->c[2]; x++, i++)
        if (got[blocked(s, z, y, x)] != want[i])
          fail_msg("%s chunk %d: item (%d, %d, %d) is %u, not %u", s->name, k,
                   z, y, x, got[blocked(s, z, y, x)], want[i]);
  free(want);
}

/* The frame, through the core reader: n chunks, each in block order. */
static void check_frame_blocks(env *e, const shape3 *s, int n) {
  char path[400];
  frame_path(e, s->name, path, sizeof path);
  b2s_frame *f;
  b2s_frame_error fe;
  assert_int_equal(b2s_frame_open(path, &f, &fe), 0);
  assert_int_equal(b2s_frame_nchunks(f), n);
  uint16_t *buf = malloc(items(s) * 2);
  assert_non_null(buf);
  for (int k = 0; k < n; k++) {
    assert_int_equal(b2s_frame_chunk_decompress(f, k, NULL, buf, items(s) * 2),
                     (int)(items(s) * 2));
    check_stored(s, k, buf);
  }
  free(buf);
  b2s_frame_free(f);
}

/* python-blosc2 reads the frame as the n chunks' C-ordered images: whole,
 * image by image, one pixel across them and a box. */
static void check_blosc2(env *e, const shape3 *s, int n) {
  char py[400];
  if (!ts_venv_python(py, sizeof py))
    return;
  char path[400], want[400], cmd[2400];
  frame_path(e, s->name, path, sizeof path);
  snprintf(want, sizeof want, "%s/want-%s.bin", e->dir, s->name);
  FILE *fp = fopen(want, "wb");
  assert_non_null(fp);
  uint16_t *c = malloc(items(s) * 2);
  assert_non_null(c);
  for (int k = 0; k < n; k++) {
    fill_chunk(s, k, c);
    assert_int_equal(fwrite(c, 2, items(s), fp), items(s));
  }
  free(c);
  fclose(fp);
  snprintf(cmd, sizeof cmd,
           "'%s' -c 'import sys, blosc2, numpy as np\n"
           "a = blosc2.open(sys.argv[1])\n"
           "w = np.fromfile(sys.argv[2], dtype=\"<u2\").reshape(-1, %d, %d)\n"
           "assert a.shape == w.shape, a.shape\n"
           "assert tuple(a.blocks) == (%d, %d, %d), a.blocks\n"
           "assert (a[:] == w).all()\n"
           "assert all((a[i] == w[i]).all() for i in range(w.shape[0]))\n"
           "assert (a[:, 37, 21] == w[:, 37, 21]).all()\n"
           "assert (a[1:, 5:40, 3:31] == w[1:, 5:40, 3:31]).all()' '%s' '%s'",
           py, s->c[1], s->c[2], s->b[0], s->b[1], s->b[2], path, want);
  if (system(cmd) != 0)
    fail_msg("python-blosc2 does not read %s as the images sent", path);
}

/* Chunks 0..NCHUNK-1 by way k % 3: b2sc_send, b2sc_send_zc, a slot. */
static void free_buf(void *buf, void *hint) {
  (void)hint;
  free(buf);
}

static void send_every_way(b2sc_session *ses, const shape3 *s) {
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(ses, s->name, NULL, &p), 0);
  size_t len = items(s) * 2;
  assert_int_equal(b2sc_shm_attach(p, 2, len), 0);
  for (int k = 0; k < NCHUNK; k++) {
    uint16_t *c = malloc(len);
    assert_non_null(c);
    fill_chunk(s, k, c);
    if (k % 3 == 0) {
      assert_int_equal(b2sc_send(p, c, len, WAIT_MS), 0);
      free(c);
    } else if (k % 3 == 1) {
      assert_true(b2sc_wait_credit(p, WAIT_MS) > 0);
      assert_int_equal(b2sc_send_zc(p, c, len, free_buf, NULL), 0);
    } else {
      uint32_t slot;
      void *at;
      size_t cap;
      assert_int_equal(b2sc_shm_acquire(p, WAIT_MS, &slot, &at, &cap), 0);
      assert_true(cap >= len);
      memcpy(at, c, len);           /* the image as it lies in memory */
      assert_int_equal(b2sc_shm_submit(p, slot, len), 0);
      free(c);
    }
  }
  assert_int_equal(b2sc_flush(p, WAIT_MS), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
}

/* A live follow gets each chunk decompressed, as stored. */
static void check_follow(b2sc_session *ses, const shape3 *s, int n) {
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(ses, s->name, 0, B2SC_FOLLOW_PUSH_DECOMPRESSED, &c),
                   0);
  for (int k = 0; k < n; k++) {
    b2sc_chunk_info ci;
    assert_int_equal(b2sc_next(c, WAIT_MS, &ci), 0);
    assert_int_equal(ci.index, k);
    assert_int_equal(ci.len, items(s) * 2);
    check_stored(s, k, ci.data);
  }
  b2sc_unfollow(c);
}

static void test_client_paths(void **state) {
  (void)state;
  env e;
  env_up(&e, config);
  const shape3 *streams[] = {&SQ, &CUBE};
  b2sc_session *ses;
  assert_int_equal(b2sc_connect(e.sock, "blocks", &ses), 0);
  for (int i = 0; i < 2; i++) {
    send_every_way(ses, streams[i]);
    check_follow(ses, streams[i], NCHUNK);
  }
  b2sc_close(ses);
  assert_int_equal(env_stop(&e, SIGTERM), 0);  /* closed: the whole shape */
  for (int i = 0; i < 2; i++) {
    check_frame_blocks(&e, streams[i], NCHUNK);
    check_blosc2(&e, streams[i], NCHUNK);
  }
  env_fini(&e);
}

/* b2stream produce of a raw stack of C-ordered images, one chunk a
 * buffer. */
static void test_produce_tool(void **state) {
  (void)state;
  const char *cli = getenv("B2S_CLI");
  if (!cli)
    skip();
  env e;
  env_up(&e, config);
  const shape3 *streams[] = {&SQ, &CUBE};
  for (int i = 0; i < 2; i++) {
    const shape3 *s = streams[i];
    char in[400], cmd[1200];
    snprintf(in, sizeof in, "%s/%s.raw", e.dir, s->name);
    FILE *fp = fopen(in, "wb");
    assert_non_null(fp);
    uint16_t *c = malloc(items(s) * 2);
    assert_non_null(c);
    for (int k = 0; k < NCHUNK; k++) {
      fill_chunk(s, k, c);
      assert_int_equal(fwrite(c, 2, items(s), fp), items(s));
    }
    free(c);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "'%s' produce --endpoint '%s' --stream %s "
             "--chunk-bytes %zu '%s' >/dev/null", cli, e.sock, s->name,
             items(s) * 2, in);
    assert_int_equal(system(cmd), 0);
  }
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  for (int i = 0; i < 2; i++) {
    check_frame_blocks(&e, streams[i], NCHUNK);
    check_blosc2(&e, streams[i], NCHUNK);
  }
  env_fini(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_client_paths),
    cmocka_unit_test(test_produce_tool),
  };
  return harness_run(tests);
}

/* b2s_fwriter_b2nd_grow: the b2nd shape of a frame growing along its first
 * dimension follows the whole slabs of chunks it holds, in place (same
 * metalayer length), and leaves alone what needs no change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "b2s_chunk.h"
#include "b2s_errors.h"
#include "b2s_frame.h"
#include "b2s_frame_writer.h"
#include "ts.h"

static char dir[256];

static int setup(void **state) {
  (void)state;
  const char *root = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/b2s-grow-XXXXXX", root ? root : "/tmp");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return ts_rmtree(dir);
}

/* A frame with a b2nd metalayer of shape {s0, 8, 6}, chunks {c0, 4, 6}. */
static b2s_fwriter *make(const char *name, int64_t s0, int32_t c0,
                         char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", dir, name);
  b2s_frame_metas metas;
  b2s_frame_metas_init(&metas);
  b2s_b2nd nd = {.version = 0, .ndim = 3, .shape = {s0, 8, 6},
                 .chunkshape = {c0, 4, 6}, .blockshape = {1, 2, 6},
                 .has_dtype = true, .dtype = "<u2", .dtype_len = 3};
  assert_int_equal(b2s_frame_metas_add_b2nd(&metas, &nd), 0);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.cparams.typesize = 2;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, &metas, &w), 0);
  b2s_frame_metas_fini(&metas);
  return w;
}

static void append(b2s_fwriter *w, int n, int32_t c0) {
  uint16_t img[2 * 4 * 6];
  for (int i = 0; i < n; i++) {
    for (size_t k = 0; k < sizeof img / 2; k++)
      img[k] = (uint16_t)(i * 100 + (int)k);
    assert_true(b2s_fwriter_append_buffer(w, NULL, img, c0 * 4 * 6 * 2) > 0);
  }
}

static int64_t shape0(const char *path, int64_t *nchunks) {
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  b2s_b2nd nd;
  assert_int_equal(b2s_frame_b2nd_get(f, &nd), 0);
  assert_int_equal(nd.ndim, 3);
  assert_int_equal(nd.shape[1], 8);
  assert_int_equal(nd.blockshape[1], 2);
  assert_memory_equal(nd.dtype, "<u2", 3);
  *nchunks = b2s_frame_nchunks(f);
  int64_t s = nd.shape[0];
  b2s_frame_free(f);
  return s;
}

/* One image a chunk, two chunks a slab: the shape counts whole slabs. */
static void test_grows_with_slabs(void **state) {
  (void)state;
  char path[300];
  int64_t n;
  b2s_fwriter *w = make("a.b2frame", 0, 1, path, sizeof path);
  assert_int_equal(b2s_fwriter_b2nd_grow(w), 0);     /* nothing yet */
  append(w, 7, 1);
  assert_int_equal(b2s_fwriter_b2nd_grow(w), 1);
  assert_int_equal(b2s_fwriter_commit(w), 0);
  assert_int_equal(shape0(path, &n), 3);              /* 7 chunks: 3 slabs */
  assert_int_equal(n, 7);
  assert_int_equal(b2s_fwriter_b2nd_grow(w), 0);      /* up to date */
  append(w, 1, 1);
  assert_int_equal(b2s_fwriter_b2nd_grow(w), 1);
  assert_int_equal(b2s_fwriter_close(w), 0);
  assert_int_equal(shape0(path, &n), 4);
  assert_int_equal(n, 8);
}

/* Two images a chunk; a shape already past the chunks is never shrunk. */
static void test_chunk_rows_and_no_shrink(void **state) {
  (void)state;
  char path[300];
  int64_t n;
  b2s_fwriter *w = make("b.b2frame", 0, 2, path, sizeof path);
  append(w, 4, 2);
  assert_int_equal(b2s_fwriter_b2nd_grow(w), 1);
  assert_int_equal(b2s_fwriter_close(w), 0);
  assert_int_equal(shape0(path, &n), 4);               /* 2 slabs x 2 */

  w = make("c.b2frame", 10, 1, path, sizeof path);
  append(w, 4, 1);
  assert_int_equal(b2s_fwriter_b2nd_grow(w), 0);
  assert_int_equal(b2s_fwriter_close(w), 0);
  assert_int_equal(shape0(path, &n), 10);
}

static void test_no_b2nd(void **state) {
  (void)state;
  char path[300];
  snprintf(path, sizeof path, "%s/plain.b2frame", dir);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  assert_int_equal(b2s_fwriter_b2nd_grow(w), 0);
  assert_int_equal(b2s_fwriter_b2nd_grow(NULL), B2S_E_ARG);
  assert_int_equal(b2s_fwriter_close(w), 0);
}

/* Made without a block size, the frame's is the b2nd block's (1x2x6 of 2
 * bytes), as c-blosc2 makes the zeros chunks it keeps in the index with
 * it; the chunks appended with the frame's parameters have those blocks. */
static void test_blocksize_from_b2nd(void **state) {
  (void)state;
  char path[300];
  b2s_fwriter *w = make("d.b2frame", 0, 1, path, sizeof path);
  append(w, 2, 1);
  assert_int_equal(b2s_fwriter_close(w), 0);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_header_get(f)->blocksize, 24);
  uint8_t c[256];
  b2s_chunk_info ci;
  for (int64_t i = 0; i < 2; i++) {
    int n = b2s_frame_chunk_read(f, i, c, sizeof c);
    assert_true(n > 0);
    assert_int_equal(b2s_chunk_info_get(c, (size_t)n, &ci), 0);
    assert_int_equal(ci.blocksize, 24);
  }
  b2s_frame_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grows_with_slabs),
      cmocka_unit_test(test_chunk_rows_and_no_shrink),
      cmocka_unit_test(test_no_b2nd),
      cmocka_unit_test(test_blocksize_from_b2nd),
  };
  return ts_run_tests(tests, setup, teardown);
}

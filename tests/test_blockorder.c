/* b2s_blockorder: a chunk's items from C order into b2nd block order and
 * back, checked item by item against the position b2nd gives each item
 * (its block's index in the grid, then its index in the block), computed
 * here from the item's coordinates.  python/tests/test_blockorder.py
 * checks the frames the daemon writes with python-blosc2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "b2s_blockorder.h"
#include "b2s_chunk.h"
#include "ts.h"

typedef struct shape_case {
  int ndim;
  int32_t c[4], b[4];
  int32_t ts;
  bool gather;
} shape_case;

/* The byte offset of the item at C index i of the chunk in block order. */
static int64_t blocked_offset(const shape_case *s, int64_t i) {
  int64_t coord[4];
  for (int d = s->ndim - 1; d >= 0; d--) {
    coord[d] = i % s->c[d];
    i /= s->c[d];
  }
  int64_t blk = 0, in = 0, items = 1;
  for (int d = 0; d < s->ndim; d++) {
    blk = blk * (s->c[d] / s->b[d]) + coord[d] / s->b[d];
    in = in * s->b[d] + coord[d] % s->b[d];
    items *= s->b[d];
  }
  return (blk * items + in) * s->ts;
}

static int64_t chunk_items(const shape_case *s) {
  int64_t n = 1;
  for (int d = 0; d < s->ndim; d++)
    n *= s->c[d];
  return n;
}

static void check_case(const shape_case *s) {
  b2s_blockorder o;
  b2s_errdetail ed;
  assert_int_equal(b2s_blockorder_init(&o, s->ndim, s->c, s->b, s->ts, &ed), 0);
  int64_t n = chunk_items(s);
  assert_int_equal(o.nbytes, n * s->ts);
  assert_int_equal(o.gather, s->gather);
  uint8_t *src = malloc((size_t)o.nbytes), *dst = malloc((size_t)o.nbytes);
  uint8_t *back = malloc((size_t)o.nbytes);
  assert_non_null(src);
  assert_non_null(dst);
  assert_non_null(back);
  for (int64_t i = 0; i < o.nbytes; i++)   /* every byte tells its place */
    src[i] = (uint8_t)(i * 131 + (i >> 8) * 7 + (i >> 16));
  memset(dst, 0xee, (size_t)o.nbytes);
  b2s_blockorder_gather(&o, src, dst);
  if (!s->gather) {
    /* the orders agree: block order is C order (with blocks that do not
     * divide the chunk, the last ones are short, as c-blosc2 reads them) */
    bool divides = true;
    for (int d = 0; d < s->ndim; d++)
      divides = divides && s->c[d] % s->b[d] == 0;
    for (int64_t i = 0; divides && i < n; i++)
      assert_int_equal(blocked_offset(s, i), i * s->ts);
    free(src);
    free(dst);
    free(back);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    assert_memory_equal(dst + blocked_offset(s, i), src + i * s->ts, (size_t)s->ts);
  /* band by band, as the encoder takes them */
  assert_int_equal(o.band_bytes * o.nbands, o.nbytes);
  for (int64_t k = 0; k < o.nbands; k++) {
    memset(back, 0xee, (size_t)o.band_bytes);
    b2s_blockorder_gather_band(&o, src, k, back);
    assert_memory_equal(back, dst + k * o.band_bytes, (size_t)o.band_bytes);
  }
  memset(back, 0xee, (size_t)o.nbytes);
  b2s_blockorder_scatter(&o, dst, back);
  assert_memory_equal(back, src, (size_t)o.nbytes);
  free(src);
  free(dst);
  free(back);
}

static void test_orders_item_by_item(void **state) {
  (void)state;
  static const shape_case cases[] = {
    /* the images: 128x128 in blocks of 32x32 */
    {3, {1, 128, 128}, {1, 32, 32}, 2, true},
    /* every dimension differs from the chunk's */
    {3, {4, 64, 48}, {2, 16, 8}, 2, true},
    {3, {6, 12, 20}, {3, 4, 5}, 4, true},
    {4, {2, 6, 4, 10}, {1, 3, 2, 5}, 1, true},
    {3, {4, 8, 8}, {2, 2, 2}, 8, true},
    /* a whole leading dimension before a split one: no run */
    {2, {4, 64}, {4, 16}, 2, true},
    {3, {2, 8, 8}, {2, 4, 8}, 4, true},
    /* split first, whole after: each block is a run */
    {3, {1, 64, 32}, {1, 16, 32}, 2, false},
    {3, {2, 8, 8}, {1, 8, 8}, 4, false},
    {2, {1, 100}, {1, 30}, 2, false},
    {3, {1, 100, 100}, {1, 30, 100}, 2, false},
    {1, {1000}, {64}, 4, false},
    {3, {4, 8, 8}, {4, 8, 8}, 2, false},
    /* a 1-item-wide block: runs of one item */
    {2, {16, 16}, {4, 1}, 2, true},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    check_case(&cases[k]);
}

static void test_refusals(void **state) {
  (void)state;
  b2s_blockorder o;
  b2s_errdetail ed;
  /* blocks neither dividing the chunk nor runs of its C order */
  int32_t c[3] = {1, 100, 100}, b[3] = {1, 32, 32};
  assert_int_equal(b2s_blockorder_init(&o, 3, c, b, 2, &ed), B2S_E_ARG);
  assert_string_equal(ed.text, "dimension 1: 32 does not divide the chunk's "
                               "100 (blocks that are not runs of the chunk's C "
                               "order must)");
  int32_t c2[2] = {10, 64}, b2[2] = {4, 16};
  assert_int_equal(b2s_blockorder_init(&o, 2, c2, b2, 2, &ed), B2S_E_ARG);
  assert_non_null(strstr(ed.text, "dimension 0: 4 does not divide"));
  int32_t big[2] = {8, 9};
  int32_t c3[2] = {8, 8};
  assert_int_equal(b2s_blockorder_init(&o, 2, c3, big, 2, &ed), B2S_E_ARG);
  assert_string_equal(ed.text, "dimension 1: 9 does not divide the chunk's "
                               "8 (blocks that are not runs of the chunk's C "
                               "order must)");
  /* a detector's flat image in one larger block: a run */
  int32_t flat[2] = {1, 1536}, fb[2] = {1, 4096};
  assert_int_equal(b2s_blockorder_init(&o, 2, flat, fb, 2, &ed), 0);
  assert_false(o.gather);
  assert_int_equal(o.nbytes, 3072);
  int32_t zero[2] = {8, 0};
  assert_int_equal(b2s_blockorder_init(&o, 2, c3, zero, 2, &ed), B2S_E_ARG);
  assert_int_equal(b2s_blockorder_init(&o, 0, c3, c3, 2, &ed), B2S_E_ARG);
  assert_int_equal(b2s_blockorder_init(&o, 17, c3, c3, 2, &ed), B2S_E_ARG);
  assert_int_equal(b2s_blockorder_init(&o, 2, c3, c3, 0, &ed), B2S_E_ARG);
  int32_t huge[3] = {65536, 65536, 2}, hb[3] = {1, 1, 1};
  assert_int_equal(b2s_blockorder_init(&o, 3, huge, hb, 1, &ed), B2S_E_ARG);
  assert_int_equal(b2s_blockorder_init(&o, 2, c3, c3, 2, NULL), 0);
}

/* Items in C order, compressed block by block as gathered, make the very
 * chunk b2s_compress makes of the gathered items, for every codec, the
 * filters (DELTA refers to block 0), a dictionary, clevel 0 and data no
 * codec shrinks (the memcpy fallback); and it decompresses to them. */
static void test_compress_blocks_is_compress_of_the_blocks(void **state) {
  (void)state;
  static const shape_case shapes[] = {
    {3, {1, 128, 128}, {1, 32, 32}, 2, true},
    {3, {4, 48, 40}, {2, 16, 8}, 4, true},
    {2, {4, 4}, {2, 2}, 1, true},               /* 16 bytes: stored as is */
  };
  static const struct { int codec, clevel; uint8_t filter, extra; bool dict; } ps[] = {
    {B2S_CODEC_LZ4, 5, B2S_FILTER_SHUFFLE, 0, false},
    {B2S_CODEC_ZSTD, 1, B2S_FILTER_BITSHUFFLE, 0, false},
    {B2S_CODEC_ZSTD, 3, B2S_FILTER_SHUFFLE, 0, true},
    {B2S_CODEC_BLOSCLZ, 9, B2S_FILTER_SHUFFLE, B2S_FILTER_DELTA, false},
    {B2S_CODEC_LZ4HC, 4, B2S_FILTER_NONE, 0, false},
    {B2S_CODEC_ZLIB, 6, B2S_FILTER_BITSHUFFLE, B2S_FILTER_DELTA, false},
    {B2S_CODEC_LZ4, 0, B2S_FILTER_SHUFFLE, 0, false},
  };
  b2s_ctx *ctx = b2s_ctx_new();
  assert_non_null(ctx);
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    const shape_case *sh = &shapes[k];
    b2s_blockorder o;
    assert_int_equal(b2s_blockorder_init(&o, sh->ndim, sh->c, sh->b, sh->ts, NULL), 0);
    int32_t n = (int32_t)o.nbytes, cap = n + B2S_MAX_OVERHEAD, bs = sh->ts;
    for (int d = 0; d < sh->ndim; d++)
      bs *= sh->b[d];
    uint8_t *src = malloc((size_t)n), *blk = malloc((size_t)n);
    uint8_t *want = malloc((size_t)cap), *got = malloc((size_t)cap);
    uint8_t *back = malloc((size_t)n);
    assert_true(src && blk && want && got && back);
    for (int noise = 0; noise < 2; noise++) {
      uint32_t x = 12345;
      for (int32_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        src[i] = noise ? (uint8_t)(x >> 16) : (uint8_t)(i / 64 + (i % 7));
      }
      b2s_blockorder_gather(&o, src, blk);
      for (size_t q = 0; q < sizeof ps / sizeof ps[0]; q++) {
        b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
        cp.codec = ps[q].codec;
        cp.clevel = ps[q].clevel;
        cp.typesize = sh->ts;
        cp.blocksize = bs;
        cp.use_dict = ps[q].dict;
        cp.filters[5] = ps[q].filter;
        cp.filters[4] = ps[q].extra;
        int a = b2s_compress(ctx, &cp, blk, n, want, cap);
        int b = b2s_compress_blocks(ctx, &cp, &o, src, n, got, cap);
        assert_true(a > 0);
        assert_int_equal(b, a);
        assert_memory_equal(got, want, (size_t)a);
        assert_int_equal(b2s_decompress(ctx, got, (size_t)b, back, (size_t)n), n);
        assert_memory_equal(back, blk, (size_t)n);
      }
    }
    /* an order that is not the chunk's */
    b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
    cp.typesize = sh->ts;
    cp.blocksize = bs * 2 <= n ? bs * 2 : bs;
    if (cp.blocksize != bs)
      assert_int_equal(b2s_compress_blocks(ctx, &cp, &o, src, n, got, cap), B2S_E_ARG);
    cp.blocksize = bs;
    assert_int_equal(b2s_compress_blocks(ctx, &cp, &o, src, n - sh->ts, got, cap),
                     B2S_E_ARG);
    assert_int_equal(b2s_compress_blocks(ctx, &cp, NULL, src, n, got, cap), B2S_E_ARG);
    free(src);
    free(blk);
    free(want);
    free(got);
    free(back);
  }
  b2s_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_orders_item_by_item),
    cmocka_unit_test(test_refusals),
    cmocka_unit_test(test_compress_blocks_is_compress_of_the_blocks),
  };
  return ts_run_tests(tests, NULL, NULL);
}

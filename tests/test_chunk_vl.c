/* Variable-length-block chunks (format version 6, spec 1.11), which c-blosc2
 * writes with blosc2_vlcompress_ctx and we only read.  The chunks here are
 * built by hand from the spec so the test does not depend on our encoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lz4.h>

#include "b2s_chunk.h"
#include "b2s_shuffle.h"
#include "ts.h"

static void put32(uint8_t *p, int32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)((uint32_t)v >> (8 * i));
}

/* Blocks of the given sizes, each shuffled with typesize 4 (and DELTA first
 * when `delta`), lz4-compressed or stored raw when that does not shrink it. */
static size_t build_vl(uint8_t *out, const uint8_t *data, const int32_t *sizes,
                       int nblocks, bool delta) {
  int32_t total = 0;
  for (int i = 0; i < nblocks; i++)
    total += sizes[i];
  memset(out, 0, 32);
  out[0] = 6;                                   /* VL-block format version */
  out[1] = 1;
  out[2] = 0x05 | 0x10 | (delta ? 0x08 : 0) | 1 << 5; /* lz4, not split */
  out[3] = 4;
  put32(out + 4, total);
  put32(out + 8, nblocks);                      /* blocksize = number of blocks */
  out[16 + 5] = B2S_FILTER_SHUFFLE;
  if (delta)
    out[16 + 4] = B2S_FILTER_DELTA;
  out[22] = B2S_CODEC_LZ4;
  out[30] = 0x01;                               /* flags2: VL blocks */
  size_t pos = 32 + 4 * (size_t)nblocks;
  const uint8_t *src = data;
  uint8_t tmp[8192], filt[8192];
  for (int i = 0; i < nblocks; i++) {
    int32_t n = sizes[i];
    const uint8_t *in = src;
    if (delta) {                                /* each VL block is its own reference */
      memcpy(tmp, src, (size_t)n);
      for (int32_t u = n / 4 - 1; u >= 1; u--)
        for (int b = 0; b < 4; b++)
          tmp[4 * u + b] ^= src[4 * (u - 1) + b];
      in = tmp;
    }
    b2s_shuffle_scalar(4, (size_t)n, in, filt);
    put32(out + 32 + 4 * i, (int32_t)pos);
    put32(out + pos, n);
    int c = LZ4_compress_default((const char *)filt, (char *)out + pos + 4, n, n);
    if (c <= 0 || c >= n) {
      memcpy(out + pos + 4, filt, (size_t)n);
      c = n;
    }
    pos += 4 + (size_t)c;
    src += n;
  }
  put32(out + 12, (int32_t)pos);
  return pos;
}

static void fill(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(i / 6 + (i % 11 == 0));
}

static void test_vl_decodes_to_concatenation(void **state) {
  (void)state;
  static const int32_t sizes[] = {1000, 36, 4096, 8, 2000};
  uint8_t data[8000], chunk[16384], out[8000];
  fill(data, sizeof(data));
  for (int delta = 0; delta <= 1; delta++) {
    size_t cb = build_vl(chunk, data, sizes, 5, delta);
    b2s_ctx *ctx = b2s_ctx_new();
    b2s_chunk_info ci;
    assert_int_equal(b2s_chunk_info_get(chunk, cb, &ci), 0);
    assert_true(ci.vl_blocks);
    assert_int_equal(ci.nblocks, 5);
    assert_int_equal(b2s_decompress(ctx, chunk, cb, out, sizeof(out)), 7140);
    assert_memory_equal(out, data, 7140);
    b2s_ctx_free(ctx);
  }
}

static void test_vl_rejects_bad_layout(void **state) {
  (void)state;
  static const int32_t sizes[] = {1000, 36, 4096};
  uint8_t data[8000], chunk[16384], bad[16384], out[8000];
  fill(data, sizeof(data));
  size_t cb = build_vl(chunk, data, sizes, 3, false);
  b2s_ctx *ctx = b2s_ctx_new();
  /* bstart pointing into the header */
  memcpy(bad, chunk, cb);
  put32(bad + 32 + 4, 8);
  assert_int_equal(b2s_decompress(ctx, bad, cb, out, sizeof(out)), B2S_E_BSTARTS);
  /* block sizes that do not add up to nbytes */
  memcpy(bad, chunk, cb);
  put32(bad + 4, 5000);
  assert_int_equal(b2s_decompress(ctx, bad, cb, out, sizeof(out)), B2S_E_CBYTES);
  /* destination too small */
  assert_int_equal(b2s_decompress(ctx, chunk, cb, out, 100), B2S_E_DEST_SMALL);
  /* VL chunks cannot be memcpy'ed */
  memcpy(bad, chunk, cb);
  bad[2] |= 0x02;
  assert_int_equal(b2s_decompress(ctx, bad, cb, out, sizeof(out)), B2S_E_VERSION);
  /* every truncation fails cleanly */
  for (size_t n = 0; n < cb; n++)
    assert_true(b2s_decompress(ctx, chunk, n, out, sizeof(out)) < 0);
  b2s_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vl_decodes_to_concatenation),
      cmocka_unit_test(test_vl_rejects_bad_layout),
  };
  return ts_run_tests(tests, NULL, NULL);
}

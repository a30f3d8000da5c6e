/* bslz4 / lz4 HDF5 framings -> Blosc2 chunks: every conversion decodes to
 * the original pixels, takes the expected path, and malformed framings are
 * refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lz4.h>
#include <lz4hc.h>

#include "b2s_chunk.h"
#include "b2s_h5lz4.h"
#include "ts.h"

/* Detector-like pixels: mostly small counts, compressible; or noise. */
static void fill(uint8_t *p, size_t n, int noisy, uint32_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = noisy ? (uint8_t)(seed >> 16) : (i % 7 == 0 ? (uint8_t)(seed >> 24) & 3 : 0);
  }
}

typedef struct conv {
  uint8_t *pix, *framed, *chunk, *back;
  int64_t flen;
  int clen;
  b2s_h5_result res;
} conv;

static void conv_free(conv *c) {
  free(c->pix); free(c->framed); free(c->chunk); free(c->back);
}

/* Frame n bytes of pixels, convert, decode the chunk; assert equality. */
static conv roundtrip(int kind, int32_t es, size_t n, uint32_t block, int noisy,
                      int verify) {
  conv c = {0};
  b2s_h5_params p = {.kind = kind, .elem_size = es, .typesize = es,
                     .clevel = 5, .verify = verify};
  c.pix = malloc(n + 1);
  fill(c.pix, n, noisy, (uint32_t)n);
  size_t fb = b2s_h5_compress_bound(&p, block, n);
  c.framed = malloc(fb);
  c.flen = b2s_h5_compress(&p, block, c.pix, n, c.framed, fb);
  assert_true(c.flen >= B2S_H5_HEADER_LEN);
  int64_t cb = b2s_h5_chunk_bound(&p, c.framed, (size_t)c.flen);
  assert_true(cb >= (int64_t)n);
  c.chunk = malloc((size_t)cb);
  b2s_ctx *ctx = b2s_ctx_new();
  c.clen = b2s_h5_to_chunk(ctx, &p, c.framed, (size_t)c.flen, (int64_t)n,
                           c.chunk, (size_t)cb, &c.res);
  assert_true(c.clen > 0);
  c.back = malloc(n + 1);
  assert_int_equal(b2s_decompress(ctx, c.chunk, (size_t)c.clen, c.back, n + 1),
                   (int)n);
  assert_memory_equal(c.back, c.pix, n);
  /* The framing decodes to the same pixels on its own. */
  memset(c.back, 0xee, n);
  assert_int_equal(b2s_h5_decompress(&p, c.framed, (size_t)c.flen, c.back, n),
                   (int)n);
  assert_memory_equal(c.back, c.pix, n);
  b2s_chunk_info ci;
  assert_int_equal(b2s_chunk_info_get(c.chunk, (size_t)c.clen, &ci), 0);
  assert_int_equal(ci.typesize, es);
  assert_true(ci.dont_split || ci.memcpyed);
  if (!ci.memcpyed)
    assert_int_equal(ci.filters[5], kind == B2S_H5_BSLZ4 ? B2S_FILTER_BITSHUFFLE : 0);
  b2s_ctx_free(ctx);
  return c;
}

/* A framing's big-endian stream size. */
static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The framed and chunk bytes of every LZ4 stream are the same bytes. */
static void assert_streams_copied(const conv *c) {
  b2s_chunk_info ci;
  assert_int_equal(b2s_chunk_info_get(c->chunk, (size_t)c->clen, &ci), 0);
  size_t pos = B2S_H5_HEADER_LEN;
  for (int32_t b = 0; b < ci.nblocks; b++) {
    uint32_t cs = be32(c->framed + pos);
    int32_t bstart;
    memcpy(&bstart, c->chunk + B2S_HEADER_LEN + 4 * b, 4);
    int32_t ccs;
    memcpy(&ccs, c->chunk + bstart, 4);
    assert_int_equal((int32_t)cs, ccs);
    assert_memory_equal(c->framed + pos + 4, c->chunk + bstart + 4, cs);
    pos += 4 + cs;
  }
}

static void test_bslz4_verbatim(void **state) {
  (void)state;
  int32_t sizes[] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    int32_t es = sizes[i];
    /* 512x1030 pixels (a multiple of 8), a whole number of blocks, one
     * block shorter than the default, and a block larger than the image. */
    size_t ns[] = {512 * 1030, 4096 * 4, 1000, 640};
    for (int k = 0; k < 4; k++) {
      conv c = roundtrip(B2S_H5_BSLZ4, es, ns[k] * (size_t)es, 0, 0, 1);
      assert_int_equal(c.res.path, B2S_H5_VERBATIM);
      assert_int_equal(c.res.reencoded, 0);
      assert_streams_copied(&c);
      conv_free(&c);
    }
  }
}

static void test_bslz4_tail_patched(void **state) {
  (void)state;
  int32_t sizes[] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    /* nelem % 8 != 0 (an EIGER2 500k image: 514x1030 = 4 mod 8): with a
     * short LZ4 block, and with none (the tail follows a full block). */
    size_t ns[] = {514 * 1030, 4096 * 3 + 5, 8192 / (size_t)sizes[i] + 3, 37};
    for (int k = 0; k < 4; k++) {
      conv c = roundtrip(B2S_H5_BSLZ4, sizes[i], ns[k] * (size_t)sizes[i], 0, 0, 1);
      assert_int_equal(c.res.path, B2S_H5_PATCHED);
      assert_int_equal(c.res.reencoded, 1);
      conv_free(&c);
    }
  }
}

static void test_bslz4_incompressible_block(void **state) {
  (void)state;
  /* Noise: LZ4 output is larger than the block; stored raw in Blosc2. */
  conv c = roundtrip(B2S_H5_BSLZ4, 2, 64 * 1024, 0, 1, 0);
  assert_true(c.res.path == B2S_H5_PATCHED || c.res.path == B2S_H5_RECOMPRESSED);
  conv_free(&c);
  /* Under 32 bytes: Blosc2 stores such chunks memcpy'ed. */
  c = roundtrip(B2S_H5_BSLZ4, 2, 24, 0, 0, 1);
  assert_int_equal(c.res.path, B2S_H5_RECOMPRESSED);
  conv_free(&c);
}

static void test_bslz4_odd_blocks(void **state) {
  (void)state;
  /* Non-default block sizes map as they are. */
  uint32_t blocks[] = {16 * 2, 1024, 65536, 1u << 20};
  for (int k = 0; k < 4; k++) {
    conv c = roundtrip(B2S_H5_BSLZ4, 2, 2 * 100000, blocks[k], 0, 1);
    assert_int_equal(c.res.path, B2S_H5_VERBATIM);
    conv_free(&c);
  }
}

/* pad_blocks: the chunk holds the pixels then zeros up to whole blocks,
 * only the last block re-encoded. */
static void test_padded(void **state) {
  (void)state;
  struct { int kind; int32_t es; size_t n; uint32_t block; } cases[] = {
    {B2S_H5_BSLZ4, 2, 514 * 1030, 0}, {B2S_H5_BSLZ4, 4, 4096 + 3, 0},
    {B2S_H5_BSLZ4, 1, 8192 * 2 + 8, 0}, {B2S_H5_LZ4, 2, 10007, 4096},
  };
  for (int k = 0; k < 4; k++) {
    b2s_h5_params p = {.kind = cases[k].kind, .elem_size = cases[k].es,
                       .typesize = cases[k].es, .clevel = 5, .verify = true,
                       .pad_blocks = true};
    size_t n = cases[k].n * (size_t)cases[k].es;
    uint8_t *pix = malloc(n);
    fill(pix, n, 0, 3);
    size_t fb = b2s_h5_compress_bound(&p, cases[k].block, n);
    uint8_t *f = malloc(fb);
    int64_t fl = b2s_h5_compress(&p, cases[k].block, pix, n, f, fb);
    int64_t cb = b2s_h5_chunk_bound(&p, f, (size_t)fl);
    uint8_t *chunk = malloc((size_t)cb);
    b2s_ctx *ctx = b2s_ctx_new();
    b2s_h5_result res;
    int cl = b2s_h5_to_chunk(ctx, &p, f, (size_t)fl, (int64_t)n, chunk, (size_t)cb, &res);
    assert_true(cl > 0);
    assert_int_equal(res.path, B2S_H5_PATCHED);
    assert_int_equal(res.reencoded, 1);
    b2s_chunk_info ci;
    assert_int_equal(b2s_chunk_info_get(chunk, (size_t)cl, &ci), 0);
    assert_int_equal(ci.nbytes % ci.blocksize, 0);
    assert_true((size_t)ci.nbytes > n && (size_t)ci.nbytes < n + (size_t)ci.blocksize);
    uint8_t *back = malloc((size_t)ci.nbytes);
    assert_int_equal(b2s_decompress(ctx, chunk, (size_t)cl, back, (size_t)ci.nbytes),
                     ci.nbytes);
    assert_memory_equal(back, pix, n);
    for (size_t i = n; i < (size_t)ci.nbytes; i++)
      assert_int_equal(back[i], 0);
    b2s_ctx_free(ctx);
    free(back); free(chunk); free(f); free(pix);
  }
}

/* want_block: a framing with the frame's block size is rewritten, one with
 * another block size is decoded and compressed again with the frame's. */
static void test_want_block(void **state) {
  (void)state;
  size_t n = 2 * 514 * 1030;
  uint8_t *pix = malloc(n);
  fill(pix, n, 0, 11);
  uint32_t blocks[] = {8192, 16384, 4096};
  for (int k = 0; k < 3; k++) {
    b2s_h5_params p = {.kind = B2S_H5_BSLZ4, .elem_size = 2, .typesize = 2,
                       .clevel = 5, .verify = true, .pad_blocks = true,
                       .want_block = 8192};
    size_t fb = b2s_h5_compress_bound(&p, blocks[k], n);
    uint8_t *f = malloc(fb);
    int64_t fl = b2s_h5_compress(&p, blocks[k], pix, n, f, fb);
    size_t cap = (size_t)b2s_h5_chunk_bound(&p, f, (size_t)fl);
    uint8_t *chunk = malloc(cap);
    b2s_ctx *ctx = b2s_ctx_new();
    b2s_h5_result res;
    int cl = b2s_h5_to_chunk(ctx, &p, f, (size_t)fl, (int64_t)n, chunk, cap, &res);
    assert_true(cl > 0);
    assert_int_equal(res.path, k == 0 ? B2S_H5_PATCHED : B2S_H5_RECOMPRESSED);
    b2s_chunk_info ci;
    assert_int_equal(b2s_chunk_info_get(chunk, (size_t)cl, &ci), 0);
    assert_int_equal(ci.blocksize, 8192);
    assert_int_equal(ci.nbytes, (n + 8191) / 8192 * 8192);
    uint8_t *back = malloc((size_t)ci.nbytes);
    assert_int_equal(b2s_decompress(ctx, chunk, (size_t)cl, back, (size_t)ci.nbytes),
                     ci.nbytes);
    assert_memory_equal(back, pix, n);
    b2s_ctx_free(ctx);
    free(back); free(chunk); free(f);
  }
  free(pix);
}

/* The HDF5 LZ4 filter writes the block it used, at most the data (as
 * hdf5plugin's does); a framing whose header says more (1 GiB, the
 * filter's default) still has the one block, and maps onto a frame whose
 * block is the whole image. */
static void test_lz4_want_block(void **state) {
  (void)state;
  size_t n = 2 * 514 * 1030;
  uint8_t *pix = malloc(n);
  fill(pix, n, 0, 5);
  b2s_h5_params p = {.kind = B2S_H5_LZ4, .elem_size = 2, .typesize = 2,
                     .clevel = 5, .verify = true, .pad_blocks = true,
                     .want_block = (int32_t)n};
  size_t fb = b2s_h5_compress_bound(&p, 0, n);
  uint8_t *f = malloc(fb);
  int64_t fl = b2s_h5_compress(&p, 0, pix, n, f, fb);
  assert_true(fl > 0);
  int64_t nb;
  uint32_t block;
  b2s_ctx *ctx = b2s_ctx_new();
  size_t cap = n + 4096;
  uint8_t *chunk = malloc(cap), *back = malloc(n);
  for (int k = 0; k < 2; k++) {
    assert_int_equal(b2s_h5_header(f, (size_t)fl, &nb, &block), 0);
    assert_int_equal(nb, (int64_t)n);
    assert_int_equal(block, k ? 1u << 30 : (uint32_t)n);
    b2s_h5_result res;
    int cl = b2s_h5_to_chunk(ctx, &p, f, (size_t)fl, (int64_t)n, chunk, cap,
                             &res);
    assert_true(cl > 0);
    assert_int_equal(res.path, B2S_H5_VERBATIM);
    assert_int_equal(res.nblocks, 1);
    assert_int_equal(b2s_decompress(ctx, chunk, (size_t)cl, back, n), (int)n);
    assert_memory_equal(back, pix, n);
    f[8] = 0x40;                 /* the header's block: 1 GiB */
    f[9] = f[10] = f[11] = 0;
  }
  /* a frame of 8 KiB blocks: the one-block image is compressed again */
  p.want_block = 8192;
  b2s_h5_result res;
  int cl = b2s_h5_to_chunk(ctx, &p, f, (size_t)fl, (int64_t)n, chunk, cap, &res);
  assert_true(cl > 0);
  assert_int_equal(res.path, B2S_H5_RECOMPRESSED);
  b2s_ctx_free(ctx);
  free(back); free(chunk); free(f); free(pix);
}

static void test_lz4_verbatim(void **state) {
  (void)state;
  conv c = roundtrip(B2S_H5_LZ4, 2, 2 * 514 * 1030, 0, 0, 1);
  assert_int_equal(c.res.path, B2S_H5_VERBATIM);
  assert_int_equal(c.res.nblocks, 1);
  assert_streams_copied(&c);
  conv_free(&c);
  c = roundtrip(B2S_H5_LZ4, 4, 4 * 100001, 4096, 0, 1);
  assert_int_equal(c.res.path, B2S_H5_VERBATIM);
  assert_streams_copied(&c);
  conv_free(&c);
  /* Raw blocks (noise) map onto raw Blosc2 streams as they are; a chunk
   * larger than data + 32 becomes the encoder's memcpy chunk. */
  c = roundtrip(B2S_H5_LZ4, 1, 100000, 4096, 1, 1);
  assert_int_equal(c.res.path, B2S_H5_RECOMPRESSED);
  conv_free(&c);
}

/* A valid bslz4 buffer to corrupt. */
static size_t make_bslz4(uint8_t **out, size_t n) {
  b2s_h5_params p = {.kind = B2S_H5_BSLZ4, .elem_size = 2, .typesize = 2,
                     .clevel = 5, .verify = true};
  uint8_t *pix = malloc(n);
  fill(pix, n, 0, 7);
  size_t fb = b2s_h5_compress_bound(&p, 0, n);
  *out = malloc(fb);
  int64_t len = b2s_h5_compress(&p, 0, pix, n, *out, fb);
  free(pix);
  assert_true(len > 0);
  return (size_t)len;
}

static int convert(const uint8_t *src, size_t len, int64_t n, bool verify) {
  b2s_h5_params p = {.kind = B2S_H5_BSLZ4, .elem_size = 2, .typesize = 2,
                     .clevel = 5, .verify = verify};
  size_t cap = (size_t)n + len + 65536;
  uint8_t *dst = malloc(cap);
  b2s_ctx *ctx = b2s_ctx_new();
  int rc = b2s_h5_to_chunk(ctx, &p, src, len, n, dst, cap, NULL);
  b2s_ctx_free(ctx);
  free(dst);
  return rc;
}

static void test_malformed(void **state) {
  (void)state;
  const size_t n = 2 * 20000;
  uint8_t *f;
  size_t len = make_bslz4(&f, n);
  assert_true(convert(f, len, (int64_t)n, true) > 0);
  /* Declared size differs from the image's. */
  assert_int_equal(convert(f, len, (int64_t)n - 2, true), B2S_E_DECODE);
  /* Truncated anywhere, or one byte too many. */
  for (size_t cut = 0; cut < len; cut += len / 17 + 1)
    assert_true(convert(f, cut, (int64_t)n, true) < 0);
  uint8_t *g = malloc(len + 1);
  memcpy(g, f, len);
  g[len] = 0;
  assert_int_equal(convert(g, len + 1, (int64_t)n, true), B2S_E_DECODE);
  /* A stream size past the end, and a zero stream size. */
  memcpy(g, f, len);
  g[12] = 0x7f;
  assert_int_equal(convert(g, len, (int64_t)n, true), B2S_E_DECODE);
  memcpy(g, f, len);
  memset(g + 12, 0, 4);
  assert_int_equal(convert(g, len, (int64_t)n, true), B2S_E_DECODE);
  /* Block size not a multiple of 8 elements. */
  memcpy(g, f, len);
  g[11] = 0x08;
  assert_int_equal(convert(g, len, (int64_t)n, true), B2S_E_DECODE);
  /* A damaged LZ4 stream: verification catches it (the first token's
   * literal count no longer matches). */
  memcpy(g, f, len);
  g[16] ^= 0xf0;
  assert_int_equal(convert(g, len, (int64_t)n, true), B2S_E_DECODE);
  /* without verification it is stored as it came (what verify: false
   * gives up, docs/SOURCES.md) */
  assert_true(convert(g, len, (int64_t)n, false) > 0);
  /* Any one stream damaged, whichever place it has in the pairs the walk
   * checks (the fifth and last is checked alone): a first sequence with
   * no literals has a match with nothing before it. */
  int streams = 0;
  for (size_t at = B2S_H5_HEADER_LEN; at + 4 < len; streams++) {
    uint32_t cs = be32(f + at);
    memcpy(g, f, len);
    g[at + 4] = 0x00;
    assert_int_equal(convert(g, len, (int64_t)n, true), B2S_E_DECODE);
    at += 4 + cs;
  }
  assert_int_equal(streams, 5);
  free(g);
  free(f);
}

/* Whether LZ4_decompress_safe makes exactly n bytes of src[0..len). */
static bool decodes(const uint8_t *src, size_t len, size_t n, uint8_t *out) {
  return LZ4_decompress_safe((const char *)src, (char *)out, (int)len,
                             (int)n) == (int)n;
}

/* The walk of two blocks at once says of each what the walk of it alone
 * says, in either order. */
static void pair_agrees(const uint8_t *a, size_t ca, size_t na,
                        const uint8_t *b, size_t cb, size_t nb) {
  bool ab[2], ba[2];
  b2s_lz4_blocks_ok2(a, ca, na, b, cb, nb, ab);
  b2s_lz4_blocks_ok2(b, cb, nb, a, ca, na, ba);
  bool sa = b2s_lz4_block_ok(a, ca, na), sb = b2s_lz4_block_ok(b, cb, nb);
  assert_int_equal(ab[0], sa);
  assert_int_equal(ab[1], sb);
  assert_int_equal(ba[0], sb);
  assert_int_equal(ba[1], sa);
}

/* The sequence walk (b2s_lz4_block_ok) against the decoder: it takes every
 * block the LZ4 compressors make (fast at several accelerations, HC), at
 * exactly the right size only, and never vouches for a block the decoder
 * refuses: every byte of each block changed in turn, every truncation.
 * Each damaged block is also walked paired with the sound one. */
static void test_lz4_block_check(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 5, 12, 13, 17, 31, 64, 100, 4096, 8192,
                                 8200, 65536, 70001};
  uint8_t *pix = malloc(70001), *out = malloc(70001 + 64);
  int cap = LZ4_compressBound(70001);
  uint8_t *c = malloc((size_t)cap), *bad = malloc((size_t)cap);
  long vouched = 0, refused = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    for (int pattern = 0; pattern < 4; pattern++) {
      fill(pix, n, pattern == 1, (uint32_t)(n * 7 + (size_t)pattern));
      if (pattern == 2)
        memset(pix, 0, n);                      /* one long match */
      if (pattern == 3)
        for (size_t i = 0; i < n; i++)          /* short periods */
          pix[i] = (uint8_t)(i % 3 == 0 ? i / 3 : 7);
      for (int mode = 0; mode < 4; mode++) {
        int len = mode == 3 ? LZ4_compress_HC((const char *)pix, (char *)c,
                                              (int)n, cap, 9)
                            : LZ4_compress_fast((const char *)pix, (char *)c,
                                                (int)n, cap, 1 + mode * 20);
        assert_true(len > 0);
        assert_true(b2s_lz4_block_ok(c, (size_t)len, n));
        assert_false(b2s_lz4_block_ok(c, (size_t)len, n + 1));
        assert_false(b2s_lz4_block_ok(c, (size_t)len, n - 1));
        if (mode != 0 || n > 8200)
          continue;                   /* the damage below: once per block */
        for (int i = 0; i < len; i++)
          for (int flip = 1; flip < 256; flip <<= 2) {
            memcpy(bad, c, (size_t)len);
            bad[i] ^= (uint8_t)flip;
            bool ok = b2s_lz4_block_ok(bad, (size_t)len, n);
            if (ok)
              assert_true(decodes(bad, (size_t)len, n, out));
            pair_agrees(bad, (size_t)len, n, c, (size_t)len, n);
            vouched += ok;
            refused += !ok;
          }
        for (int cut = 0; cut < len; cut++) {
          if (b2s_lz4_block_ok(c, (size_t)cut, n))
            assert_true(decodes(c, (size_t)cut, n, out));
          pair_agrees(c, (size_t)len, n, c, (size_t)cut, n);
        }
      }
    }
  }
  /* the damage is mostly seen; some changes (a literal byte) stay sound */
  assert_true(refused > 0 && vouched > 0);
  free(pix);
  free(out);
  free(c);
  free(bad);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bslz4_verbatim),
    cmocka_unit_test(test_bslz4_tail_patched),
    cmocka_unit_test(test_bslz4_incompressible_block),
    cmocka_unit_test(test_bslz4_odd_blocks),
    cmocka_unit_test(test_padded),
    cmocka_unit_test(test_want_block),
    cmocka_unit_test(test_lz4_want_block),
    cmocka_unit_test(test_lz4_verbatim),
    cmocka_unit_test(test_malformed),
    cmocka_unit_test(test_lz4_block_check),
  };
  return ts_run_tests(tests, NULL, NULL);
}

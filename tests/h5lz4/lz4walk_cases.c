/* Test helper: LZ4 blocks that the sequence walk (b2s_lz4_block_ok)
 * vouches for, made by damaging liblz4's output at random, each stored in a
 * Blosc2 chunk as the detector source stores a stream (the lz4 framing
 * rewritten, streams copied as they came), with liblz4's decoding of it.
 *   lz4walk_cases COUNT SEED OUT
 * OUT: per case u32 LE chunk size, chunk, u32 LE n, n bytes.  Exits 1 when
 * liblz4 itself does not decode a vouched block to n bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>

#include "b2s_h5lz4.h"

static uint32_t rs;
static uint32_t rnd(void) {
  rs ^= rs << 13; rs ^= rs >> 17; rs ^= rs << 5;
  return rs;
}

static void put_be(uint8_t *p, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--, v >>= 8)
    p[i] = (uint8_t)v;
}

static void fill(uint8_t *p, size_t n) {
  int pat = (int)(rnd() % 4);
  for (size_t i = 0; i < n; i++)
    p[i] = pat == 0 ? 0 : pat == 1 ? (rnd() % 16 ? 0 : rnd() & 3)
         : pat == 2 ? (uint8_t)(i % 7) : (uint8_t)rnd();
}

/* Damage c[0..len) a little: a few bits flipped, sometimes a byte set. */
static void damage(uint8_t *c, int len) {
  int k = 1 + (int)(rnd() % 3);
  for (int j = 0; j < k; j++)
    c[rnd() % (uint32_t)len] ^= (uint8_t)(1u << (rnd() % 8));
  if (rnd() % 4 == 0)
    c[rnd() % (uint32_t)len] = (uint8_t)rnd();
}

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  long want = atol(argv[1]), got = 0;
  rs = (uint32_t)atol(argv[2]) | 1;
  FILE *o = fopen(argv[3], "wb");
  b2s_ctx *ctx = b2s_ctx_new();
  static uint8_t src[9100], c[9300], bad[9300], fr[9400], chunk[20000], out[9100];
  b2s_h5_params p = {.kind = B2S_H5_LZ4, .elem_size = 1, .typesize = 1,
                     .clevel = 5, .verify = false};
  while (o && got < want) {
    size_t n = 32 + rnd() % 9000;
    fill(src, n);
    int len = LZ4_compress_fast((const char *)src, (char *)c, (int)n,
                                (int)sizeof c, 1 + (int)(rnd() % 30));
    for (int m = 0; m < 50 && len > 0; m++) {
      memcpy(bad, c, (size_t)len);
      damage(bad, len);
      /* a stream of the block's size would be stored raw, not as LZ4 */
      if ((size_t)len >= n || !b2s_lz4_block_ok(bad, (size_t)len, n))
        continue;
      if (LZ4_decompress_safe((const char *)bad, (char *)out, len, (int)n) !=
          (int)n) {
        fprintf(stderr, "liblz4 does not decode a vouched block\n");
        return 1;
      }
      put_be(fr, n, 8);
      put_be(fr + 8, n, 4);
      put_be(fr + 12, (uint64_t)len, 4);
      memcpy(fr + 16, bad, (size_t)len);
      b2s_h5_result res;
      int cl = b2s_h5_to_chunk(ctx, &p, fr, 16 + (size_t)len, (int64_t)n,
                               chunk, sizeof chunk, &res);
      if (cl <= 0 || res.path != B2S_H5_VERBATIM)
        continue;
      uint32_t a = (uint32_t)cl, b = (uint32_t)n;
      fwrite(&a, 4, 1, o);
      fwrite(chunk, 1, (size_t)cl, o);
      fwrite(&b, 4, 1, o);
      fwrite(out, 1, n, o);
      got++;
    }
  }
  b2s_ctx_free(ctx);
  if (!o || fclose(o) != 0)
    return 2;
  printf("%ld vouched damaged blocks\n", got);
  return 0;
}

/* Bit-row kernels with GFNI on AVX2 registers (this file is compiled with
 * -mavx2 -mgfni); the byte shuffles stay those of shuffle_avx2.c.
 *
 * An 8-byte group is an 8x8 bit matrix, and a bit row wants its transpose:
 * byte b of the result holds bit b of each of the 8 bytes.  GF2P8AFFINEQB
 * multiplies every byte of x by the 8x8 bit matrix held in the matching
 * 64-bit word of A, bit i of a result byte being the parity of
 * (x AND A.byte[7 - i]).  With the group, byte-reversed, as A and byte b of x
 * set to 1 << b, result byte b bit k is bit b of group byte k: the whole
 * transpose in one instruction, where the AVX2 kernel needs twelve masked
 * swaps across eight registers.  The transpose is its own inverse, so the
 * same step serves both directions.
 *
 * Forward, 256 bytes (32 groups) per step: transpose each group, pair the
 * two groups of each 128-bit lane byte by byte, so that 16-bit word b of a
 * lane is row b of both groups, then transpose 8x8 words across the eight
 * registers (three interleave rounds), after which register b holds 32 bytes
 * of row b.  Lane 1 is loaded from the second 128 bytes, so each register
 * comes out as 32 consecutive columns.  Inverse: the same steps reversed.
 *
 * For typesize 2 the byte shuffle folds into the same pass: one in-lane
 * byte shuffle turns a group of 8 items straight into one byte-reversed word
 * per byte position, so the items go from the source to the bit rows without
 * the scratch tile.  (The same for typesize 4, with a dword permute, measured
 * slower than the scratch tile with GFNI bit rows, so it is not done.) */
#include <immintrin.h>
#include <string.h>

#include "b2s_shuffle.h"
#include "shuffle_simd.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

#define SHUF_VEC      __m256i
#define SHUF_UNPACKLO _mm256_unpacklo_epi8
#define SHUF_UNPACKHI _mm256_unpackhi_epi8
#include "shuffle_interleave.h"

/* Per lane, 8x8 16-bit words across the registers: afterwards word w of
 * v[r] is the former word r of v[w].  Each interleave round rotates the index
 * [register(3) | word(3)] left by one bit, so three rounds swap its halves. */
ALWAYS_INLINE void transpose_words8(__m256i *v) {
#pragma GCC unroll 3
  for (int round = 0; round < 3; round++) {
    __m256i t[8];
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
      t[2 * m] = _mm256_unpacklo_epi16(v[m], v[m + 4]);
      t[2 * m + 1] = _mm256_unpackhi_epi16(v[m], v[m + 4]);
    }
#pragma GCC unroll 8
    for (int m = 0; m < 8; m++)
      v[m] = t[m];
  }
}

ALWAYS_INLINE __m256i load_lanes(const uint8_t *lo, const uint8_t *hi) {
  __m256i v = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo));
  return _mm256_inserti128_si256(v, _mm_loadu_si128((const __m128i *)hi), 1);
}

/* Byte b of x is 1 << b (see the top of the file). */
#define BIT_SELECT 0x8040201008040201LL

ALWAYS_INLINE __m256i transpose_groups(__m256i reversed) {
  return _mm256_gf2p8affine_epi64_epi8(_mm256_set1_epi64x(BIT_SELECT), reversed,
                                       0);
}

/* Reverses the bytes of each 64-bit word. */
ALWAYS_INLINE __m256i reverse_words(__m256i v) {
  const __m256i idx =
      _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7,
                       6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
  return _mm256_shuffle_epi8(v, idx);
}

/* Per lane, bytes of words 0 and 1 alternate: byte 2b + h is byte b of
 * word h. */
ALWAYS_INLINE __m256i pair_words(__m256i v) {
  const __m256i idx =
      _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15, 0,
                       8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  return _mm256_shuffle_epi8(v, idx);
}

/* pair_words undone and each word byte-reversed, in one shuffle: byte m of
 * word h comes from byte 2 * (7 - m) + h. */
ALWAYS_INLINE __m256i unpair_reversed(__m256i v) {
  const __m256i idx =
      _mm256_setr_epi8(14, 12, 10, 8, 6, 4, 2, 0, 15, 13, 11, 9, 7, 5, 3, 1, 14,
                       12, 10, 8, 6, 4, 2, 0, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm256_shuffle_epi8(v, idx);
}

void b2s_bitrow_fwd_gfni(const uint8_t *in, size_t nbytes, uint8_t *out,
                         size_t stride) {
  size_t i = 0;
  for (; i + 256 <= nbytes; i += 256) {
    __m256i v[8];
    const uint8_t *s = in + i;
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; k++)
      v[k] = pair_words(transpose_groups(
          reverse_words(load_lanes(s + 16 * k, s + 128 + 16 * k))));
    transpose_words8(v);
    uint8_t *o = out + i / 8;
#pragma GCC unroll 8
    for (size_t b = 0; b < 8; b++)
      _mm256_storeu_si256((__m256i *)(o + b * stride), v[b]);
  }
  /* i is a multiple of 256, so the rest starts on a whole output byte. */
  b2s_bitrow_fwd_avx2(in + i, nbytes - i, out + i / 8, stride);
}

void b2s_bitrow_inv_gfni(const uint8_t *in, size_t stride, size_t nbytes,
                         uint8_t *out) {
  size_t cols = nbytes / 8;
  size_t c = 0;
  for (; c + 32 <= cols; c += 32) {
    __m256i x[8];
#pragma GCC unroll 8
    for (size_t b = 0; b < 8; b++)
      x[b] = _mm256_loadu_si256((const __m256i *)(in + b * stride + c));
    transpose_words8(x);
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; k++)
      x[k] = transpose_groups(unpair_reversed(x[k]));
    /* Lane 0 of x[k] is output bytes 16k.., lane 1 the same 128 later. */
    uint8_t *o = out + 8 * c;
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; k += 2) {
      __m256i lo = _mm256_permute2x128_si256(x[k], x[k + 1], 0x20);
      __m256i hi = _mm256_permute2x128_si256(x[k], x[k + 1], 0x31);
      _mm256_storeu_si256((__m256i *)(o + 16 * k), lo);
      _mm256_storeu_si256((__m256i *)(o + 128 + 16 * k), hi);
    }
  }
  b2s_bitrow_inv_avx2(in + c, stride, nbytes - 8 * c, out + 8 * c);
}

/* ------------------------------------------------------------------------ */
/* Typesize 2: byte shuffle and bit rows in one pass                         */

/* 256 items per step.  Lane 0 of v[k] is group k (items 8k..8k+7), lane 1
 * group 16 + k.  The in-lane shuffle makes word j of a lane byte j of the
 * group's items (reversed), and after the transpose byte y of a lane is the
 * group's byte of row y (row 8j + b: bit b of byte j).  Four byte interleave
 * rounds over the 16 registers then leave row y in v[y]: 16 groups per lane,
 * 32 consecutive output bytes. */
static size_t bitshuffle2(size_t n, const uint8_t *src, uint8_t *dst,
                          size_t rowlen) {
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    __m256i v[16];
    const uint8_t *s = src + 2 * i;
#pragma GCC unroll 16
    for (size_t k = 0; k < 16; k++)
      v[k] = transpose_groups(
          unpair_reversed(load_lanes(s + 16 * k, s + 256 + 16 * k)));
    interleave_rounds(v, 16, 4);
#pragma GCC unroll 16
    for (size_t y = 0; y < 16; y++)
      _mm256_storeu_si256((__m256i *)(dst + y * rowlen + i / 8), v[y]);
  }
  return i;
}

size_t b2s_bitshuffle_items_gfni(size_t ts, size_t n, const uint8_t *src,
                                 uint8_t *dst, size_t rowlen) {
  switch (ts) {
  case 2: return bitshuffle2(n, src, dst, rowlen);
  default: return 0;
  }
}

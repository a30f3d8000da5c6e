/* AVX2 shuffle kernels (this file is compiled with -mavx2).
 *
 * Same algorithms as shuffle_sse2.c (see the comment there), on 256-bit
 * registers.  AVX2 byte interleaves work inside each 128-bit lane, so each
 * lane runs the SSE2 algorithm on its own group of 16 items (or 16 groups of
 * 8 bytes): when the data is gathered into registers, lane 1 is loaded from
 * the next 16 items so that every register comes out as 32 consecutive bytes
 * of a row; when it is scattered back, the two lanes of a register belong 16
 * items apart and are regrouped with a cross-lane permute before storing.
 *
 * Byte shuffles of typesizes 2 and 4 take fewer steps another way: an
 * in-lane byte shuffle (vpshufb) first groups each byte position of the
 * lane's items, then 64-bit (typesize 2) or 32-bit and 64-bit (typesize 4)
 * interleaves and one cross-lane permute per row put the groups in order:
 * 6 shuffles per 64 bytes instead of 10, and 16 per 128 instead of 20, from
 * whole 32-byte loads. */
#include <immintrin.h>
#include <string.h>

#include "b2s_shuffle.h"
#include "shuffle_simd.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

#define SHUF_VEC      __m256i
#define SHUF_UNPACKLO _mm256_unpacklo_epi8
#define SHUF_UNPACKHI _mm256_unpackhi_epi8
#include "shuffle_interleave.h"

ALWAYS_INLINE __m256i load_lanes(const uint8_t *lo, const uint8_t *hi) {
  __m256i v = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo));
  return _mm256_inserti128_si256(v, _mm_loadu_si128((const __m128i *)hi), 1);
}

/* Typesize 2, 32 items.  After the byte shuffle the 64-bit quarters of a
 * are [byte 0 of items 0-7, byte 1 of 0-7, byte 0 of 8-15, byte 1 of 8-15],
 * those of b the same for items 16-31; the interleaves give [0-7, 16-23,
 * 8-15, 24-31] of each byte, which the permute (quarters 0, 2, 1, 3) puts
 * in order. */
ALWAYS_INLINE void shuffle2_group(const uint8_t *src, uint8_t *dst,
                                  size_t stride) {
  const __m256i split =
      _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0,
                       2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  __m256i a =
      _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)src), split);
  __m256i b = _mm256_shuffle_epi8(
      _mm256_loadu_si256((const __m256i *)(src + 32)), split);
  __m256i row0 = _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, b), 0xd8);
  __m256i row1 = _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(a, b), 0xd8);
  _mm256_storeu_si256((__m256i *)dst, row0);
  _mm256_storeu_si256((__m256i *)(dst + stride), row1);
}

/* Typesize 4, 32 items, 8 per register.  After the byte shuffle dword j of
 * a lane is byte j of the lane's 4 items; a 4x4 dword transpose across the
 * registers (32-bit then 64-bit interleaves) makes register j byte j of the
 * lane's items of all four, lane 0 holding items 0-3, 8-11, 16-19, 24-27 and
 * lane 1 the groups between, and the dword permute interleaves the lanes. */
ALWAYS_INLINE void shuffle4_group(const uint8_t *src, uint8_t *dst,
                                  size_t stride) {
  const __m256i split =
      _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0,
                       4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m256i lanes = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256i v[4], t[4];
#pragma GCC unroll 4
  for (size_t k = 0; k < 4; k++)
    v[k] = _mm256_shuffle_epi8(
        _mm256_loadu_si256((const __m256i *)(src + 32 * k)), split);
  t[0] = _mm256_unpacklo_epi32(v[0], v[1]);
  t[1] = _mm256_unpackhi_epi32(v[0], v[1]);
  t[2] = _mm256_unpacklo_epi32(v[2], v[3]);
  t[3] = _mm256_unpackhi_epi32(v[2], v[3]);
  v[0] = _mm256_unpacklo_epi64(t[0], t[2]);
  v[1] = _mm256_unpackhi_epi64(t[0], t[2]);
  v[2] = _mm256_unpacklo_epi64(t[1], t[3]);
  v[3] = _mm256_unpackhi_epi64(t[1], t[3]);
#pragma GCC unroll 4
  for (size_t j = 0; j < 4; j++)
    _mm256_storeu_si256((__m256i *)(dst + j * stride),
                        _mm256_permutevar8x32_epi32(v[j], lanes));
}

/* 32 items of ts bytes at src -> ts rows of 32 bytes at dst + j * stride. */
ALWAYS_INLINE void shuffle_group(size_t ts, const uint8_t *src, uint8_t *dst,
                                 size_t stride) {
  if (ts == 2) {
    shuffle2_group(src, dst, stride);
    return;
  }
  if (ts == 4) {
    shuffle4_group(src, dst, stride);
    return;
  }
  __m256i v[16];
#pragma GCC unroll 16
  for (size_t k = 0; k < ts; k++)
    v[k] = load_lanes(src + 16 * k, src + 16 * ts + 16 * k);
  interleave_rounds(v, ts, 4);
#pragma GCC unroll 16
  for (size_t j = 0; j < ts; j++)
    _mm256_storeu_si256((__m256i *)(dst + j * stride), v[j]);
}

/* ts rows of 32 bytes at src + j * stride -> 32 items of ts bytes at dst. */
ALWAYS_INLINE void unshuffle_group(size_t ts, const uint8_t *src, size_t stride,
                                   uint8_t *dst) {
  __m256i v[16];
#pragma GCC unroll 16
  for (size_t j = 0; j < ts; j++)
    v[j] = _mm256_loadu_si256((const __m256i *)(src + j * stride));
  interleave_rounds(v, ts, log2_pow2(ts));
/* Lane 0 of v[k] is bytes 16k.. of items 0..15, lane 1 the same for
 * items 16..31, which start 16 * ts bytes later.  Stored in address
 * order. */
#pragma GCC unroll 8
  for (size_t k = 0; k < ts; k += 2)
    _mm256_storeu_si256((__m256i *)(dst + 16 * k),
                        _mm256_permute2x128_si256(v[k], v[k + 1], 0x20));
#pragma GCC unroll 8
  for (size_t k = 0; k < ts; k += 2)
    _mm256_storeu_si256((__m256i *)(dst + 16 * ts + 16 * k),
                        _mm256_permute2x128_si256(v[k], v[k + 1], 0x31));
}

ALWAYS_INLINE void copy64(uint8_t *dst, const uint8_t *src) {
  __m256i a = _mm256_loadu_si256((const __m256i *)src);
  __m256i b = _mm256_loadu_si256((const __m256i *)(src + 32));
  _mm256_storeu_si256((__m256i *)dst, a);
  _mm256_storeu_si256((__m256i *)(dst + 32), b);
}

#define SHUF_ITEMS   32
#define SHUF_ALIGN   32
#define SHUF_NAME(x) b2s_##x##_avx2
#include "shuffle_driver.h"

/* ------------------------------------------------------------------------ */
/* Bit rows                                                                  */

/* See swap_bits in shuffle_sse2.c. */
ALWAYS_INLINE void swap_bits(__m256i *lo, __m256i *hi, int shift,
                             __m256i mask) {
  __m256i t = _mm256_and_si256(
      _mm256_xor_si256(_mm256_srli_epi16(*lo, shift), *hi), mask);
  *hi = _mm256_xor_si256(*hi, t);
  *lo = _mm256_xor_si256(*lo, _mm256_slli_epi16(t, shift));
}

/* Per byte lane: afterwards bit b of x[k] is the former bit k of x[b]. */
ALWAYS_INLINE void transpose_bits8(__m256i *x) {
  const __m256i m1 = _mm256_set1_epi8(0x55);
  const __m256i m2 = _mm256_set1_epi8(0x33);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  swap_bits(&x[0], &x[1], 1, m1);
  swap_bits(&x[2], &x[3], 1, m1);
  swap_bits(&x[4], &x[5], 1, m1);
  swap_bits(&x[6], &x[7], 1, m1);
  swap_bits(&x[0], &x[2], 2, m2);
  swap_bits(&x[1], &x[3], 2, m2);
  swap_bits(&x[4], &x[6], 2, m2);
  swap_bits(&x[5], &x[7], 2, m2);
  swap_bits(&x[0], &x[4], 4, m4);
  swap_bits(&x[1], &x[5], 4, m4);
  swap_bits(&x[2], &x[6], 4, m4);
  swap_bits(&x[3], &x[7], 4, m4);
}

/* 256 bytes (32 groups of 8) per step: gather byte k of every group into
 * register k (a shuffle of 32 "items" of 8 bytes), then transpose bits
 * across the 8 registers; register b is then 32 bytes of output row b. */
static size_t bitrow_fwd_256(const uint8_t *in, size_t nbytes, uint8_t *out,
                             size_t stride) {
  size_t i = 0;
  for (; i + 256 <= nbytes; i += 256) {
    __m256i v[8];
    const uint8_t *s = in + i;
#pragma GCC unroll 16
    for (size_t k = 0; k < 8; k++)
      v[k] = load_lanes(s + 16 * k, s + 128 + 16 * k);
    interleave_rounds(v, 8, 4);
    transpose_bits8(v);
    uint8_t *o = out + i / 8;
#pragma GCC unroll 16
    for (size_t b = 0; b < 8; b++)
      _mm256_storeu_si256((__m256i *)(o + b * stride), v[b]);
  }
  return i;
}

/* Remainders: movemask reads bit 7 of 32 bytes at once, so rows come out
 * from 7 down to 0 as the bytes are shifted left by adding them to
 * themselves. */
void b2s_bitrow_fwd_avx2(const uint8_t *in, size_t nbytes, uint8_t *out,
                         size_t stride) {
  size_t i = bitrow_fwd_256(in, nbytes, out, stride);
  for (; i + 32 <= nbytes; i += 32) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(in + i));
    uint8_t *o = out + i / 8;
#pragma GCC unroll 8
    for (size_t row = 8; row-- > 0;) {
      uint32_t m = (uint32_t)_mm256_movemask_epi8(a);
      memcpy(o + row * stride, &m, sizeof m);
      a = _mm256_add_epi8(a, a);
    }
  }
  b2s_bitrow_fwd_scalar_from(in, i, nbytes, out, stride);
}

void b2s_bitrow_inv_avx2(const uint8_t *in, size_t stride, size_t nbytes,
                         uint8_t *out) {
  size_t cols = nbytes / 8;
  size_t c = 0;
  for (; c + 32 <= cols; c += 32) {
    __m256i x[8];
#pragma GCC unroll 16
    for (size_t b = 0; b < 8; b++)
      x[b] = _mm256_loadu_si256((const __m256i *)(in + b * stride + c));
    transpose_bits8(x);
    interleave_rounds(x, 8, 3);
    /* Lane 0 covers columns c..c+15 (128 output bytes), lane 1 the next
     * 16 columns. */
    uint8_t *o = out + 8 * c;
#pragma GCC unroll 16
    for (size_t k = 0; k < 8; k += 2) {
      __m256i lo = _mm256_permute2x128_si256(x[k], x[k + 1], 0x20);
      __m256i hi = _mm256_permute2x128_si256(x[k], x[k + 1], 0x31);
      _mm256_storeu_si256((__m256i *)(o + 16 * k), lo);
      _mm256_storeu_si256((__m256i *)(o + 128 + 16 * k), hi);
    }
  }
  b2s_bitrow_inv_scalar_from(in, stride, 8 * c, nbytes, out);
}

/* SSE2 shuffle kernels (this file is compiled with -msse2).
 *
 * Byte (un)shuffle for typesizes 2, 4, 8 and 16 uses only byte interleaves.
 * Number the bytes of a group of `ts` loaded vectors by an index whose high
 * bits select the vector and whose low 4 bits select the byte in it.  One
 * interleave round (see interleave_round) rotates that index left by one bit.
 * Loading 16 items of 2^t bytes gives index [item(4) | byte(t)]; the rows
 * we want to store are [byte(t) | item(4)]: a rotation by 4, i.e. 4 rounds.
 * Unshuffle goes the other way: a rotation by t, t rounds.
 *
 * Bit rows work on 8 registers at once.  Forward: gather byte k of every
 * group of 8 bytes into register k (the byte shuffle above with 8-byte
 * items), then transpose bits across the 8 registers with three masked swap
 * rounds, after which register b holds a run of output row b.  Inverse: the
 * same steps in the opposite order.
 *
 * The small fixed loops carry unroll pragmas: the kernels only pay off when
 * the vector arrays live entirely in registers. */
#include <emmintrin.h>
#include <string.h>

#include "b2s_shuffle.h"
#include "shuffle_simd.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

#define SHUF_VEC      __m128i
#define SHUF_UNPACKLO _mm_unpacklo_epi8
#define SHUF_UNPACKHI _mm_unpackhi_epi8
#include "shuffle_interleave.h"

/* ------------------------------------------------------------------------ */
/* Byte shuffle                                                              */

/* 16 items of ts bytes at src -> ts rows of 16 bytes at dst + j * stride. */
ALWAYS_INLINE void shuffle_group(size_t ts, const uint8_t *src, uint8_t *dst,
                                 size_t stride) {
  __m128i v[16];
#pragma GCC unroll 16
  for (size_t k = 0; k < ts; k++)
    v[k] = _mm_loadu_si128((const __m128i *)(src + 16 * k));
  interleave_rounds(v, ts, 4);
#pragma GCC unroll 16
  for (size_t j = 0; j < ts; j++)
    _mm_storeu_si128((__m128i *)(dst + j * stride), v[j]);
}

/* ts rows of 16 bytes at src + j * stride -> 16 items of ts bytes at dst. */
ALWAYS_INLINE void unshuffle_group(size_t ts, const uint8_t *src, size_t stride,
                                   uint8_t *dst) {
  __m128i v[16];
#pragma GCC unroll 16
  for (size_t j = 0; j < ts; j++)
    v[j] = _mm_loadu_si128((const __m128i *)(src + j * stride));
  interleave_rounds(v, ts, log2_pow2(ts));
#pragma GCC unroll 16
  for (size_t k = 0; k < ts; k++)
    _mm_storeu_si128((__m128i *)(dst + 16 * k), v[k]);
}

ALWAYS_INLINE void copy64(uint8_t *dst, const uint8_t *src) {
#pragma GCC unroll 4
  for (size_t k = 0; k < 64; k += 16)
    _mm_storeu_si128((__m128i *)(dst + k),
                     _mm_loadu_si128((const __m128i *)(src + k)));
}

#define SHUF_ITEMS   16
#define SHUF_ALIGN   16
#define SHUF_NAME(x) b2s_##x##_sse2
#include "shuffle_driver.h"

/* ------------------------------------------------------------------------ */
/* Bit rows                                                                  */

/* Exchanges bits so that, per byte, the bits selected by `mask` in `hi`
 * trade places with the bits `shift` higher in `lo`.  Shifting 16-bit lanes
 * is safe: the mask drops whatever crossed a byte boundary. */
ALWAYS_INLINE void swap_bits(__m128i *lo, __m128i *hi, int shift,
                             __m128i mask) {
  __m128i t =
      _mm_and_si128(_mm_xor_si128(_mm_srli_epi16(*lo, shift), *hi), mask);
  *hi = _mm_xor_si128(*hi, t);
  *lo = _mm_xor_si128(*lo, _mm_slli_epi16(t, shift));
}

/* Per byte lane: afterwards bit b of x[k] is the former bit k of x[b]. */
ALWAYS_INLINE void transpose_bits8(__m128i *x) {
  const __m128i m1 = _mm_set1_epi8(0x55);
  const __m128i m2 = _mm_set1_epi8(0x33);
  const __m128i m4 = _mm_set1_epi8(0x0f);
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

/* 128 bytes (16 groups of 8) per step. */
void b2s_bitrow_fwd_sse2(const uint8_t *in, size_t nbytes, uint8_t *out,
                         size_t stride) {
  size_t i = 0;
  for (; i + 128 <= nbytes; i += 128) {
    __m128i x[8];
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; k++)
      x[k] = _mm_loadu_si128((const __m128i *)(in + i + 16 * k));
    interleave_rounds(x, 8, 4);
    transpose_bits8(x);
    uint8_t *o = out + i / 8;
#pragma GCC unroll 8
    for (size_t b = 0; b < 8; b++)
      _mm_storeu_si128((__m128i *)(o + b * stride), x[b]);
  }
  /* Remainder, 16 bytes at a time: movemask reads bit 7 of every byte, so
   * rows come out from 7 down to 0 as the bytes are shifted left (added
   * to themselves). */
  for (; i + 16 <= nbytes; i += 16) {
    __m128i a = _mm_loadu_si128((const __m128i *)(in + i));
    uint8_t *o = out + i / 8;
#pragma GCC unroll 8
    for (size_t row = 8; row-- > 0;) {
      uint16_t m = (uint16_t)_mm_movemask_epi8(a);
      memcpy(o + row * stride, &m, sizeof m);
      a = _mm_add_epi8(a, a);
    }
  }
  b2s_bitrow_fwd_scalar_from(in, i, nbytes, out, stride);
}

/* 16 columns of the 8 rows (128 output bytes) per step. */
void b2s_bitrow_inv_sse2(const uint8_t *in, size_t stride, size_t nbytes,
                         uint8_t *out) {
  size_t cols = nbytes / 8;
  size_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    __m128i x[8];
#pragma GCC unroll 8
    for (size_t b = 0; b < 8; b++)
      x[b] = _mm_loadu_si128((const __m128i *)(in + b * stride + c));
    transpose_bits8(x);
    /* x[k] now holds byte k of each group of 8: interleave like an
     * unshuffle of 16 items of 8 bytes. */
    interleave_rounds(x, 8, 3);
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; k++)
      _mm_storeu_si128((__m128i *)(out + 8 * c + 16 * k), x[k]);
  }
  b2s_bitrow_inv_scalar_from(in, stride, 8 * c, nbytes, out);
}

/* Internal interface between the shuffle dispatcher (shuffle.c) and the
 * per-instruction-set kernels (shuffle_sse2.c, shuffle_avx2.c).
 *
 * Bit shuffle is built from two primitives so that each instruction set only
 * has to provide small, testable pieces:
 *   1. a byte shuffle of a tile of items into a scratch buffer, then
 *   2. a "bit row" transpose of each byte row: 8 consecutive bytes (one byte
 *      of 8 consecutive items) become one byte in each of 8 output rows.
 * Bit unshuffle runs the inverse primitives in the opposite order. */
#ifndef B2S_SHUFFLE_SIMD_H
#define B2S_SHUFFLE_SIMD_H

#include <stddef.h>
#include <stdint.h>

/* Forward bit-row transpose: nbytes (a multiple of 8) input bytes; byte q of
 * output row b (at out + b * stride + q) gets bit b of in[8q .. 8q+7]. */
typedef void (*b2s_bitrow_fwd_fn)(const uint8_t *in, size_t nbytes,
                                  uint8_t *out, size_t stride);
/* Inverse: reads 8 rows of nbytes / 8 bytes at in + b * stride and writes
 * nbytes contiguous bytes. */
typedef void (*b2s_bitrow_inv_fn)(const uint8_t *in, size_t stride,
                                  size_t nbytes, uint8_t *out);
typedef void (*b2s_shuffle_fn)(size_t typesize, size_t size, const uint8_t *src,
                               uint8_t *dst);

/* Whole bit shuffle, in one pass, of the first items of n items of
 * `typesize` bytes, writing 8 * typesize rows rowlen bytes apart; returns how
 * many items it did (a multiple of 8; 0 for typesizes it has no kernel for).
 * Rows start at dst + r * rowlen, item i's bits at byte i / 8 of them. */
typedef size_t (*b2s_bitshuffle_items_fn)(size_t typesize, size_t n,
                                          const uint8_t *src, uint8_t *dst,
                                          size_t rowlen);

struct b2s_shuffle_kernels {
  b2s_shuffle_fn shuffle;
  b2s_shuffle_fn unshuffle;
  b2s_bitrow_fwd_fn bitrow_fwd;
  b2s_bitrow_inv_fn bitrow_inv;
  b2s_bitshuffle_items_fn bitshuffle_items; /* optional */
};

/* Scalar pieces the SIMD kernels use for what their vectors do not cover.
 * The *_items functions handle items [from, n) of a block of n items, with
 * rows of n bytes on the shuffled side; they do not touch the tail bytes. */
void b2s_shuffle_items_scalar(size_t typesize, size_t n, size_t from,
                              const uint8_t *src, uint8_t *dst);
void b2s_unshuffle_items_scalar(size_t typesize, size_t n, size_t from,
                                const uint8_t *src, uint8_t *dst);
/* Same contracts as the typedefs above, starting at byte `from` (a multiple
 * of 8) of the contiguous side. */
void b2s_bitrow_fwd_scalar_from(const uint8_t *in, size_t from, size_t nbytes,
                                uint8_t *out, size_t stride);
void b2s_bitrow_inv_scalar_from(const uint8_t *in, size_t stride, size_t from,
                                size_t nbytes, uint8_t *out);

/* x86 kernels; only linked when B2S_HAVE_X86_SIMD is defined. */
void b2s_shuffle_sse2(size_t typesize, size_t size, const uint8_t *src,
                      uint8_t *dst);
void b2s_unshuffle_sse2(size_t typesize, size_t size, const uint8_t *src,
                        uint8_t *dst);
void b2s_bitrow_fwd_sse2(const uint8_t *in, size_t nbytes, uint8_t *out,
                         size_t stride);
void b2s_bitrow_inv_sse2(const uint8_t *in, size_t stride, size_t nbytes,
                         uint8_t *out);

void b2s_shuffle_avx2(size_t typesize, size_t size, const uint8_t *src,
                      uint8_t *dst);
void b2s_unshuffle_avx2(size_t typesize, size_t size, const uint8_t *src,
                        uint8_t *dst);
void b2s_bitrow_fwd_avx2(const uint8_t *in, size_t nbytes, uint8_t *out,
                         size_t stride);
void b2s_bitrow_inv_avx2(const uint8_t *in, size_t stride, size_t nbytes,
                         uint8_t *out);

/* AVX2 with GFNI: bit rows and the one-pass typesize-2 bit shuffle (the byte
 * shuffles are the AVX2 ones); only linked when B2S_HAVE_GFNI is defined. */
void b2s_bitrow_fwd_gfni(const uint8_t *in, size_t nbytes, uint8_t *out,
                         size_t stride);
void b2s_bitrow_inv_gfni(const uint8_t *in, size_t stride, size_t nbytes,
                         uint8_t *out);
size_t b2s_bitshuffle_items_gfni(size_t typesize, size_t n, const uint8_t *src,
                                 uint8_t *dst, size_t rowlen);

#endif

/* Byte shuffle and bit shuffle of one block, with SIMD (SSE2, AVX2) chosen at
 * run time and a scalar fallback that defines the result.
 *
 * Layouts are those of c-blosc2 (spec 3.2, 3.3): shuffle transposes the
 * n = size / typesize complete items and copies the size % typesize tail
 * bytes unchanged; bitshuffle transposes the largest multiple of 8 complete
 * items and copies the rest unchanged.  src and dst must not overlap. */
#ifndef B2S_SHUFFLE_H
#define B2S_SHUFFLE_H

#include <stddef.h>
#include <stdint.h>

void b2s_shuffle(size_t typesize, size_t size, const uint8_t *src, uint8_t *dst);
void b2s_unshuffle(size_t typesize, size_t size, const uint8_t *src, uint8_t *dst);
void b2s_bitshuffle(size_t typesize, size_t size, const uint8_t *src, uint8_t *dst);
void b2s_bitunshuffle(size_t typesize, size_t size, const uint8_t *src, uint8_t *dst);

/* The scalar reference versions, exported so tests can compare. */
void b2s_shuffle_scalar(size_t typesize, size_t size, const uint8_t *src, uint8_t *dst);
void b2s_unshuffle_scalar(size_t typesize, size_t size, const uint8_t *src, uint8_t *dst);
void b2s_bitshuffle_scalar(size_t typesize, size_t size, const uint8_t *src, uint8_t *dst);
void b2s_bitunshuffle_scalar(size_t typesize, size_t size, const uint8_t *src, uint8_t *dst);

/* Which implementation the dispatcher uses: 0 scalar, 1 SSE2, 2 AVX2,
 * 3 AVX2 with GFNI bit rows (when the compiler has -mgfni).
 * b2s_simd_force() lowers it (tests, benchmarks); returns the level in use. */
int b2s_simd_level(void);
int b2s_simd_force(int level);

#endif

/* Data formulas of the reference vectors (spec section 10) and SHA-256.
 *
 * Every formula F(seed) describes an infinite byte stream; a vector chunk
 * holds bytes offset..offset+n of it.  Generating them here lets the tests
 * compare decoded chunks, and recompress the original input, without storing
 * any raw data next to the vectors. */
#ifndef B2S_TEST_VECDATA_H
#define B2S_TEST_VECDATA_H

#include <stddef.h>
#include <stdint.h>

#define VEC_B2ND_MAXDIM 16

/* Shape description of a b2nd array (spec section 6). */
typedef struct vec_b2nd {
  int ndim;
  int64_t shape[VEC_B2ND_MAXDIM];
  int32_t chunkshape[VEC_B2ND_MAXDIM];
  int32_t blockshape[VEC_B2ND_MAXDIM];
  int32_t typesize;
} vec_b2nd;

/* Write bytes offset..offset+n of the stream formula(seed) to dst.  Knows
 * zeros, uninit (as zeros), u32mul, ctr8/16/32/64, f32ramp, f64ramp, text,
 * lcgbytes, steps, nan32, nan64 and pattern:HEX.  "b2nd-layout:F" needs a
 * shape: use vec_fill_b2nd.  Returns 0, or -1 for an unknown formula. */
int vec_fill(const char *formula, uint64_t seed, uint64_t offset, uint8_t *dst,
             size_t n);

/* Size in bytes of every chunk of the array (padded extchunkshape). */
uint64_t vec_b2nd_chunk_nbytes(const vec_b2nd *nd);

/* Write the first n bytes of chunk number chunk_no of the array whose
 * logical C-order content is formula(seed), in the block-major chunk layout
 * (padding zero).  formula may carry the "b2nd-layout:" prefix.  Returns 0,
 * or -1 (unknown formula, bad shape, n larger than the chunk, no memory). */
int vec_fill_b2nd(const char *formula, uint64_t seed, uint64_t chunk_no,
                  const vec_b2nd *nd, uint8_t *dst, size_t n);

/* TRUNC_PREC (spec 3.5) in place on the whole items of buf (typesize 4 or
 * 8); trailing bytes of a partial item stay unchanged.  Returns 0, or -1 for
 * parameters the filter rejects. */
int vec_truncprec(uint8_t *buf, size_t n, int typesize, int prec_bits);

/* Lower-case hex SHA-256 of data[0..n) into out (65 bytes with the NUL). */
void vec_sha256_hex(const void *data, size_t n, char out[65]);

#endif

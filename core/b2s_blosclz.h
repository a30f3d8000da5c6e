/* BloscLZ, c-blosc2's own LZ77 codec (spec 2.5).
 *
 * Decoding accepts any valid stream.  Encoding reproduces c-blosc2's output
 * byte for byte (needed for the frame index chunks it writes). */
#ifndef B2S_BLOSCLZ_H
#define B2S_BLOSCLZ_H

#include <stdint.h>

/* Decode src[0..srclen) into exactly dstlen bytes.  Returns dstlen, or a
 * negative B2S_E_DECODE when the stream is malformed, reads out of bounds
 * or does not produce exactly dstlen bytes. */
int b2s_blosclz_decompress(const uint8_t *src, int32_t srclen, uint8_t *dst,
                           int32_t dstlen);

/* Encode in[0..n) with clevel 1..9 into at most cap bytes.  Returns the
 * stream size, or 0 when c-blosc2 would give up (store the stream raw). */
int b2s_blosclz_compress(int clevel, const uint8_t *in, int32_t n, uint8_t *out,
                         int32_t cap);

#endif

/* Reading the parts of chunks an N-d selection needs (python/b2stream
 * /_ndarray.py): b2s_py_gather.c. */
#ifndef B2S_PY_GATHER_H
#define B2S_PY_GATHER_H

#include <stddef.h>
#include <stdint.h>

#include "b2s_chunk.h"

/* Bytes [start, start + nbytes) of the chunk src[0..len) decompressed into
 * dst, decoding only the blocks that hold them.  0 or a negative code. */
int b2spy_gather_one(b2s_ctx *ctx, const uint8_t *src, size_t len,
                     int64_t start, size_t nbytes, uint8_t *dst);

#endif

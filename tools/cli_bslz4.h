/* The framing of the HDF5 bitshuffle filter (id 32008) with LZ4, as
 * bitshuffle's bshuf_h5filter.c writes and reads it:
 *
 *   uint64 BE  uncompressed bytes
 *   uint32 BE  block size in bytes
 *   per block: uint32 BE compressed size, LZ4 block of the bitshuffled items
 *   the items after the last multiple of 8, as they are
 *
 * No HDF5 here: the export writes chunks with it, import's filter and the
 * fuzz target read them. */
#ifndef B2S_CLI_BSLZ4_H
#define B2S_CLI_BSLZ4_H

#include <stddef.h>
#include <stdint.h>

#include "b2s_msgpack.h"

/* Encode nbytes of items (typesize bytes each) in blocks of block_items
 * items (0: bitshuffle's default for the item size); appended to out. */
int cli_bslz4_encode(const uint8_t *src, size_t nbytes, int32_t typesize,
                 int32_t block_items, b2s_mpbuf *out);
/* Decode src[0..len) (untrusted) into dst[0..cap); returns the
 * uncompressed size, or a negative error for anything malformed. */
int64_t cli_bslz4_decode(const uint8_t *src, size_t len, int32_t typesize,
                     uint8_t *dst, size_t cap);
/* The 12-byte header, appended to out. */
int cli_bslz4_frame_header(b2s_mpbuf *out, uint64_t nbytes, uint32_t block_bytes);
void cli_bslz4_put_be32(uint8_t *p, uint32_t v);

#endif

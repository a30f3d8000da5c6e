/* The framing of the HDF5 bitshuffle filter (id 32008) with LZ4, as
 * bitshuffle's bshuf_h5filter.c writes and reads it:
 *
 *   uint64 BE  uncompressed bytes
 *   uint32 BE  block size in bytes
 *   per block: uint32 BE compressed size, LZ4 block of the bitshuffled items
 *   the items after the last multiple of 8, as they are
 *
 * Encoding and decoding whole images is core's (b2s_h5lz4.h); the export
 * writes the header itself when it rewrites a stored chunk's framing. */
#ifndef B2S_CLI_BSLZ4_H
#define B2S_CLI_BSLZ4_H

#include <stddef.h>
#include <stdint.h>

#include "b2s_msgpack.h"

/* The 12-byte header, appended to out. */
int cli_bslz4_frame_header(b2s_mpbuf *out, uint64_t nbytes, uint32_t block_bytes);
void cli_bslz4_put_be32(uint8_t *p, uint32_t v);

#endif

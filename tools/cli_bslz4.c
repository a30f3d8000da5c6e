/* The header of the HDF5 bitshuffle+LZ4 framing, for the export that
 * rewrites a stored chunk's framing around its LZ4 streams; encoding and
 * decoding whole images is core's (b2s_h5lz4.h). */

#include "b2s_errors.h"
#include "cli_bslz4.h"

void cli_bslz4_put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

int cli_bslz4_frame_header(b2s_mpbuf *out, uint64_t nbytes, uint32_t block_bytes) {
  uint8_t h[12];
  for (int k = 0; k < 8; k++)
    h[k] = (uint8_t)(nbytes >> (56 - 8 * k));
  cli_bslz4_put_be32(h + 8, block_bytes);
  return b2s_mp_write_raw(out, h, sizeof h);
}

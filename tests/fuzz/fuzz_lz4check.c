/* The LZ4 sequence walk (b2s_lz4_block_ok) that vouches for a detector's
 * streams without decoding them, against liblz4's own decoder: bytes 0-1
 * give the block's declared size minus 1 (little-endian), the rest is the
 * block.  Whenever the walk vouches for a block, LZ4_decompress_safe must
 * decode it to exactly that many bytes.  (It may refuse blocks the decoder
 * takes: those are decoded by the caller.)  The walk of two blocks at once
 * (the block, and the block without its first byte) must say of each what
 * the walk of it alone says. */
#include <stdint.h>
#include <stdlib.h>

#include <lz4.h>

#include "b2s_h5lz4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  size_t n = ((size_t)data[0] | (size_t)data[1] << 8) + 1;
  const uint8_t *blk = data + 2;
  size_t len = size - 2;
  bool one = b2s_lz4_block_ok(blk, len, n), two[2];
  b2s_lz4_blocks_ok2(blk, len, n, blk + 1, len - 1, n, two);
  if (two[0] != one || two[1] != b2s_lz4_block_ok(blk + 1, len - 1, n))
    abort();
  if (!one)
    return 0;
  char *out = malloc(n);
  if (LZ4_decompress_safe((const char *)blk, out, (int)len, (int)n) != (int)n)
    abort();
  free(out);
  return 0;
}

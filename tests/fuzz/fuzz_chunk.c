/* libFuzzer target for the chunk decoder: header parsing, whole-chunk
 * decompression and item-range reads must never crash or touch memory
 * outside the buffers, whatever the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_chunk.h"

/* Large enough for every seed, small enough that hostile nbytes values do
 * not make each run allocate gigabytes. */
#define MAX_OUT (4 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static b2s_ctx *ctx;
  if (!ctx)
    ctx = b2s_ctx_new();
  b2s_chunk_info ci;
  if (b2s_chunk_info_get(data, size, &ci) < 0 || ci.nbytes > MAX_OUT)
    return 0;
  uint8_t *out = malloc((size_t)ci.nbytes + 1);
  if (!out)
    return 0;
  int n = b2s_decompress(ctx, data, size, out, (size_t)ci.nbytes);
  /* Items of a repeated-value chunk are as wide as the value. */
  int32_t isz = ci.special == B2S_SPECIAL_VALUE ? ci.cbytes - ci.header_len : ci.typesize;
  if (n >= 0 && !ci.vl_blocks && isz > 0 && ci.nbytes >= isz) {
    /* An item range must agree with the whole decode. */
    int32_t items = ci.nbytes / isz;
    int32_t start = items / 3, count = items - start;
    uint8_t *part = malloc((size_t)count * isz + 1);
    int m = part ? b2s_getitem(ctx, data, size, start, count, part, (size_t)count * isz)
                 : -1;
    if (m > 0 && ci.special != B2S_SPECIAL_UNINIT &&
        memcmp(part, out + (size_t)start * isz, (size_t)m) != 0)
      abort();
    free(part);
  }
  free(out);
  return 0;
}

/* The HDF5 LZ4 framings (b2s_h5lz4.h) on hostile input, as the detector
 * source and `b2stream import` meet them: byte 0 picks the framing and the
 * element size (1..16), the rest is one framed image.  Whatever decodes
 * must encode back to the same bytes, and convert into a Blosc2 chunk
 * that decodes to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_chunk.h"
#include "b2s_h5lz4.h"

#define CAP (1 << 20)

static b2s_ctx *ctx;

static void convert(const b2s_h5_params *p, const uint8_t *src, size_t n,
                    const uint8_t *want, int64_t nbytes) {
  int64_t bound = b2s_h5_chunk_bound(p, src, n);
  if (bound < 0)
    abort();   /* the header decoded above */
  uint8_t *chunk = malloc((size_t)bound), *back = malloc((size_t)nbytes + 1);
  b2s_h5_result res;
  int c = b2s_h5_to_chunk(ctx, p, src, n, nbytes, chunk, (size_t)bound, &res);
  if (c > 0 && b2s_decompress(ctx, chunk, (size_t)c, back, (size_t)nbytes) !=
                   nbytes)
    abort();
  if (c > 0 && memcmp(back, want, (size_t)nbytes) != 0)
    abort();
  free(chunk);
  free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  if (ctx == NULL)
    ctx = b2s_ctx_new();
  b2s_h5_params p = {.kind = data[0] & 0x80 ? B2S_H5_LZ4 : B2S_H5_BSLZ4,
                     .elem_size = (int32_t)(data[0] % 16) + 1, .clevel = 5,
                     .verify = true};
  p.typesize = p.elem_size;
  int64_t nbytes;
  uint32_t block;
  if (b2s_h5_header(data + 1, size - 1, &nbytes, &block) < 0 || nbytes > CAP)
    return 0;
  uint8_t *out = malloc((size_t)nbytes + 1);
  if (b2s_h5_decompress(&p, data + 1, size - 1, out, (size_t)nbytes) >= 0) {
    size_t bound = b2s_h5_compress_bound(&p, 0, (size_t)nbytes);
    uint8_t *enc = malloc(bound), *again = malloc((size_t)nbytes + 1);
    int64_t e = b2s_h5_compress(&p, 0, out, (size_t)nbytes, enc, bound);
    if (e > 0 && (b2s_h5_decompress(&p, enc, (size_t)e, again,
                                    (size_t)nbytes) < 0 ||
                  memcmp(out, again, (size_t)nbytes) != 0))
      abort();
    convert(&p, data + 1, size - 1, out, nbytes);
    free(enc);
    free(again);
  }
  free(out);
  return 0;
}

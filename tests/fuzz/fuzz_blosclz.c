/* libFuzzer target for the BloscLZ codec.
 *
 * Input: 2 bytes little-endian output size, 1 byte clevel selector, then a
 * BloscLZ stream.  Buffers are allocated at their exact sizes so any read
 * or write past them is caught by the sanitizers.  A stream that decodes is
 * re-encoded, and the re-encoded stream must decode to the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_blosclz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *dup_exact(const uint8_t *p, size_t n)
{
  uint8_t *q = malloc(n ? n : 1);
  if (q && n)
    memcpy(q, p, n);
  return q;
}

static void roundtrip(int clevel, const uint8_t *plain, int32_t n)
{
  uint8_t *enc = malloc(n ? (size_t)n : 1);
  uint8_t *dec = malloc(n ? (size_t)n : 1);
  if (!enc || !dec)
    abort();
  int r = b2s_blosclz_compress(clevel, plain, n, enc, n);
  if (r < 0 || r > n)
    abort();
  if (r > 0) {
    uint8_t *stream = dup_exact(enc, (size_t)r);
    if (!stream || b2s_blosclz_decompress(stream, r, dec, n) != n ||
        memcmp(dec, plain, (size_t)n) != 0)
      abort();
    /* one byte less room must fail cleanly, never overflow */
    if (b2s_blosclz_compress(clevel, plain, n, enc, r - 1) != 0)
      abort();
    free(stream);
  }
  free(enc);
  free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 3)
    return 0;
  int32_t n = (int32_t)(data[0] | data[1] << 8);
  int clevel = 1 + data[2] % 9;
  /* exact-size copy so reads past the stream are detected */
  uint8_t *src = dup_exact(data + 3, size - 3);
  uint8_t *dst = malloc(n ? (size_t)n : 1);
  if (!src || !dst)
    abort();
  int r = b2s_blosclz_decompress(src, (int32_t)(size - 3), dst, n);
  if (r == n)
    roundtrip(clevel, dst, n);
  else if (r >= 0)
    abort();
  free(src);
  free(dst);
  return 0;
}

/* libFuzzer target for the messages of distributed frames
 * (b2s_dmsg_decode).
 *
 * Whatever decodes must encode again to exactly the input bytes (one valid
 * encoding per message), and the decoder must never read outside the
 * input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_dmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* a copy of exactly `size` bytes, so reading past it is caught */
  uint8_t *in = malloc(size ? size : 1);
  if (in == NULL)
    return 0;
  memcpy(in, data, size);
  b2s_dmsg m;
  if (b2s_dmsg_decode(in, size, &m) == 0) {
    uint8_t *out = malloc(size);
    if (out == NULL)
      abort();
    if (b2s_dmsg_encode(&m, out, size) != (int)size ||
        memcmp(out, in, size) != 0)
      abort();
    free(out);
  }
  free(in);
  return 0;
}

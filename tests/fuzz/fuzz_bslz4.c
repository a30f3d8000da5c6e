/* cli_bslz4_decode on hostile input: byte 0 picks the item size (1..16), the
 * rest is a chunk in the bitshuffle+LZ4 framing.  Anything it accepts must
 * encode back to a chunk that decodes to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli_bslz4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int32_t ts = (int32_t)(data[0] % 16) + 1;
  size_t cap = 1 << 20;
  uint8_t *out = malloc(cap), *again = malloc(cap);
  int64_t n = cli_bslz4_decode(data + 1, size - 1, ts, out, cap);
  if (n >= 0) {
    b2s_mpbuf b;
    b2s_mpbuf_init(&b);
    if (cli_bslz4_encode(out, (size_t)n, ts, 0, &b) == 0) {
      int64_t m = cli_bslz4_decode(b.data, b.len, ts, again, cap);
      if (m != n || memcmp(out, again, (size_t)n))
        abort();
    }
    b2s_mpbuf_fini(&b);
  }
  free(out);
  free(again);
  return 0;
}

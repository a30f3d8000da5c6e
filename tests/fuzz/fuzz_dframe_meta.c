/* libFuzzer target for NAME.meta of a distributed frame
 * (b2s_dframe_meta_decode, cluster/dframe_meta.c): untrusted bytes from an
 * object store.
 *
 * Whatever decodes must pass the parameter checks, encode, and decode
 * from its encoding to parameters that encode to the same bytes again;
 * the decoder must never read outside the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dframe_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* a copy of exactly `size` bytes, so reading past it is caught */
  uint8_t *in = malloc(size ? size : 1);
  if (in == NULL)
    return 0;
  memcpy(in, data, size);
  b2s_dframe_params p, p2;
  if (b2s_dframe_meta_decode(in, size, &p) == 0) {
    b2s_mpbuf a, b;
    b2s_mpbuf_init(&a);
    b2s_mpbuf_init(&b);
    if (b2s_dframe_params_check(&p) != 0 ||
        b2s_dframe_meta_encode(&p, &a) != 0 ||
        b2s_dframe_meta_decode(a.data, a.len, &p2) != 0 ||
        b2s_dframe_meta_encode(&p2, &b) != 0 || a.len != b.len ||
        memcmp(a.data, b.data, a.len) != 0)
      abort();
    b2s_mpbuf_fini(&a);
    b2s_mpbuf_fini(&b);
  }
  free(in);
  return 0;
}

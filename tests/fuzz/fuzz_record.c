/* libFuzzer target for the chunk record decoder (b2s_record_decode) and
 * the msgpack value reader under it.
 *
 * Whatever decodes must encode again and decode to the same record (user
 * bytes included); the decoder must never read outside the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const b2s_record *a, const b2s_record *b) {
  if (a->has_frame != b->has_frame || a->has_ts != b->has_ts ||
      (a->has_frame && a->frame != b->frame) || (a->has_ts && a->ts != b->ts) ||
      a->xxh64 != b->xxh64 || a->flags != b->flags ||
      a->user_kind != b->user_kind || a->user_len != b->user_len ||
      (a->user_len > 0 && memcmp(a->user, b->user, a->user_len) != 0))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* a copy of exactly `size` bytes, so reading past it is caught */
  uint8_t *in = malloc(size ? size : 1);
  if (in == NULL)
    return 0;
  memcpy(in, data, size);
  b2s_record r, r2;
  if (b2s_record_decode(in, size, &r) == 0) {
    b2s_mpbuf b;
    b2s_mpbuf_init(&b);
    if (b2s_record_encode(&r, &b) != 0 ||
        b2s_record_decode(b.data, b.len, &r2) != 0)
      abort();
    same(&r, &r2);
    b2s_mpbuf_fini(&b);
  }
  b2s_mpreader rd;
  b2s_mpreader_init(&rd, in, size);
  (void)b2s_mp_skip(&rd, B2S_MP_MAX_DEPTH);
  free(in);
  return 0;
}

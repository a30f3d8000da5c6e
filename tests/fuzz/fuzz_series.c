/* libFuzzer target for the series metadata map (b2s_series_check and
 * b2s_series_merge).
 *
 * The input is split at its first byte's value into a base map and an
 * update.  A map that checks must merge into the empty map unchanged in
 * content (same key count, nils dropped); every successful merge must
 * give a map that checks and respects the limits. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void merged_ok(const b2s_mpbuf *out) {
  if (out->len > B2S_SERIES_MAP_MAX ||
      b2s_series_check(out->data, out->len, false) < 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  size_t cut = data[0] < size ? data[0] : size - 1;
  size_t blen = cut, ulen = size - 1 - cut;
  /* exact-size copies, so reading past either part is caught */
  uint8_t *base = malloc(blen ? blen : 1), *upd = malloc(ulen ? ulen : 1);
  if (base == NULL || upd == NULL)
    goto out;
  memcpy(base, data + 1, blen);
  memcpy(upd, data + 1 + blen, ulen);
  b2s_mpbuf m;
  b2s_mpbuf_init(&m);
  int n = b2s_series_check(upd, ulen, false);
  if (n >= 0) {
    /* no nils: merging into nothing keeps every key */
    if (b2s_series_merge(NULL, 0, upd, ulen, &m) != 0 ||
        b2s_series_check(m.data, m.len, false) != n)
      abort();
  }
  if (ulen > 0 && b2s_series_merge(base, blen, upd, ulen, &m) == 0)
    merged_ok(&m);
  b2s_mpbuf_fini(&m);
out:
  free(base);
  free(upd);
  return 0;
}

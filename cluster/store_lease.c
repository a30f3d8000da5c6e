/* Leases (b2s_store.h): argument checks and the handle; the backends
 * (store_local_lease.c, store_rados.c) do the locking. */
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "store_impl.h"

#define HOLDER_MAX 200

struct b2s_lease {
  b2s_store *s;
  void *state;
  int ms;
  char name[STORE_NAME_MAX + 1];
  char holder[HOLDER_MAX + 1];
};

static int holder_ok(const char *h) {
  size_t n = h ? strlen(h) : 0;
  if (n == 0 || n > HOLDER_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (h[i] < 0x20 || h[i] > 0x7e)
      return 0;
  return 1;
}

int b2s_store_lease_take(b2s_store *s, const char *name, const char *holder,
                         int duration_ms, b2s_lease **out, char *who,
                         size_t cap) {
  if (!s || !out || (cap && !who) || duration_ms <= 0)
    return b2s_store_fail(B2S_E_ARG, "lease: missing store, output or duration");
  if (cap)
    who[0] = '\0';
  if (!name || !b2s_store_name_ok(name, STORE_NAME_MAX, 0))
    return b2s_store_fail(B2S_E_ARG, "lease: bad object name");
  if (!holder_ok(holder))
    return b2s_store_fail(B2S_E_ARG, "lease: the holder must be 1..%d printable "
                      "bytes", HOLDER_MAX);
  b2s_lease *l = calloc(1, sizeof *l);
  if (!l)
    return b2s_store_fail(B2S_E_NOMEM, "out of memory");
  l->s = s;
  l->ms = duration_ms;
  strcpy(l->name, name);
  strcpy(l->holder, holder);
  char none[1];
  int rc = s->ops->lease_take(s, name, holder, duration_ms, &l->state,
                              cap ? who : none, cap ? cap : sizeof none);
  if (rc < 0) {
    free(l);
    return rc;
  }
  *out = l;
  return 0;
}

int b2s_store_lease_renew(b2s_lease *l) {
  if (!l)
    return b2s_store_fail(B2S_E_ARG, "lease: none");
  return l->s->ops->lease_renew(l->s, l->name, l->holder, l->ms, l->state);
}

void b2s_store_lease_drop(b2s_lease *l) {
  if (!l)
    return;
  l->s->ops->lease_drop(l->s, l->name, l->holder, l->state);
  free(l);
}

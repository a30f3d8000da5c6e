/* The b2s_store front: URL parsing, argument checks shared by all
 * backends, and dispatch through the backend's operations table
 * (b2s_store.h). */
#include <errno.h>
#include <string.h>

#include "b2s_errors.h"
#include "store_impl.h"

bool b2s_store_have_rados(void) {
#ifdef B2S_HAVE_RADOS
  return true;
#else
  return false;
#endif
}

static int bad_name(const char *name) {
  if (b2s_store_name_ok(name, STORE_NAME_MAX, 0))
    return 0;
  return b2s_store_fail(B2S_E_ARG, "invalid object name (1..200 bytes of "
                    "[A-Za-z0-9._-], not starting with '.')");
}

static int bad_key(const char *key) {
  if (b2s_store_name_ok(key, STORE_KEY_MAX, 1))
    return 0;
  return b2s_store_fail(B2S_E_ARG,
                    "invalid key (1..64 bytes of [A-Za-z0-9._-])");
}

/* "rados://POOL", "file:///ABS/DIR" or a plain path. */
int b2s_store_open(const char *url, const b2s_store_opts *opts,
                   b2s_store **out) {
  static const b2s_store_opts defaults = {0};
  if (out)
    *out = NULL;
  if (!url || !url[0] || !out)
    return b2s_store_fail(B2S_E_ARG, "no store URL");
  if (!opts)
    opts = &defaults;
  if (strncmp(url, "rados://", 8) == 0) {
    const char *pool = url + 8;
    if (!pool[0] || strchr(pool, '/'))
      return b2s_store_fail(B2S_E_ARG, "rados URL needs one pool name: %s", url);
#ifdef B2S_HAVE_RADOS
    return b2s_store_rados_open(pool, opts, out);
#else
    return b2s_store_fail(B2S_E_STORE, "this build has no RADOS support");
#endif
  }
  if (strncmp(url, "file://", 7) == 0) {
    if (url[7] != '/')
      return b2s_store_fail(B2S_E_ARG, "file URL needs an absolute path "
                        "(file:///DIR): %s", url);
    return b2s_store_local_open(url + 7, opts, out);
  }
  if (strstr(url, "://"))
    return b2s_store_fail(B2S_E_ARG, "unknown store URL scheme: %s", url);
  return b2s_store_local_open(url, opts, out);
}

void b2s_store_free(b2s_store *s) {
  if (s)
    s->ops->free(s);
}

const char *b2s_store_kind(const b2s_store *s) {
  return s ? s->ops->kind : "";
}

int b2s_store_put_once(b2s_store *s, const char *name, const void *data,
                       size_t len, const void *attr, size_t attrlen) {
  if (!s || (len && !data) || (attrlen && !attr))
    return b2s_store_fail(B2S_E_ARG, "put_once: missing store or buffer");
  int rc = bad_name(name);
  return rc ? rc : s->ops->put_once(s, name, data, len, attr, attrlen);
}

int b2s_store_put(b2s_store *s, const char *name, const void *data,
                  size_t len) {
  if (!s || (len && !data))
    return b2s_store_fail(B2S_E_ARG, "put: missing store or buffer");
  int rc = bad_name(name);
  return rc ? rc : s->ops->put(s, name, data, len);
}

int b2s_store_get(b2s_store *s, const char *name, size_t max, uint8_t **data,
                  size_t *len) {
  if (!s || !data || !len)
    return b2s_store_fail(B2S_E_ARG, "get: missing store or output");
  *data = NULL;
  *len = 0;
  int rc = bad_name(name);
  return rc ? rc : s->ops->get(s, name, max, data, len);
}

int b2s_store_get_attr(b2s_store *s, const char *name, size_t max,
                       uint8_t **attr, size_t *len) {
  if (!s || !attr || !len)
    return b2s_store_fail(B2S_E_ARG, "get_attr: missing store or output");
  *attr = NULL;
  *len = 0;
  int rc = bad_name(name);
  return rc ? rc : s->ops->get_attr(s, name, max, attr, len);
}

int b2s_store_stat(b2s_store *s, const char *name, uint64_t *size) {
  if (!s || !size)
    return b2s_store_fail(B2S_E_ARG, "stat: missing store or output");
  int rc = bad_name(name);
  return rc ? rc : s->ops->stat(s, name, size);
}

int b2s_store_remove(b2s_store *s, const char *name) {
  if (!s)
    return b2s_store_fail(B2S_E_ARG, "remove: no store");
  int rc = bad_name(name);
  return rc ? rc : s->ops->remove(s, name);
}

int b2s_store_kv_set(b2s_store *s, const char *obj, const b2s_kv *kv,
                     size_t n) {
  if (!s || (n && !kv))
    return b2s_store_fail(B2S_E_ARG, "kv_set: missing store or keys");
  int rc = bad_name(obj);
  for (size_t i = 0; !rc && i < n; i++) {
    rc = bad_key(kv[i].key);
    if (!rc && kv[i].len > STORE_VAL_MAX)
      rc = b2s_store_fail(B2S_E_ARG, "value of key %s over 64 KiB", kv[i].key);
    if (!rc && kv[i].len && !kv[i].val)
      rc = b2s_store_fail(B2S_E_ARG, "value of key %s missing", kv[i].key);
  }
  if (rc || n == 0)
    return rc;
  return s->ops->kv_set(s, obj, kv, n);
}

int b2s_store_kv_get(b2s_store *s, const char *obj, const char *key,
                     uint8_t **val, size_t *len) {
  if (!s || !val || !len)
    return b2s_store_fail(B2S_E_ARG, "kv_get: missing store or output");
  *val = NULL;
  *len = 0;
  int rc = bad_name(obj);
  if (!rc)
    rc = bad_key(key);
  return rc ? rc : s->ops->kv_get(s, obj, key, val, len);
}

int b2s_store_kv_list(b2s_store *s, const char *obj, const char *after,
                      size_t max, b2s_kv_cb cb, void *arg) {
  if (!s || !cb)
    return b2s_store_fail(B2S_E_ARG, "kv_list: missing store or callback");
  int rc = bad_name(obj);
  if (rc)
    return rc;
  if (after && after[0] && strlen(after) > STORE_KEY_MAX)
    return b2s_store_fail(B2S_E_ARG, "kv_list: 'after' longer than a key");
  if (max == 0)
    return 0;
  return s->ops->kv_list(s, obj, after && after[0] ? after : NULL, max, cb,
                         arg);
}

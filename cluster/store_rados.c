/* The RADOS object store: a pool through the librados C API
 * (b2s_store.h).  An object is one RADOS object; its attribute the xattr
 * "b2s.attr", set in the write operation that creates it exclusively; a
 * key log the object's omap, each batch one write operation.  librados
 * handles are thread-safe, so the store keeps no state of its own beyond
 * them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>

#include "b2s_errors.h"
#include "store_impl.h"

#define LIST_PAGE 512   /* omap entries fetched per read operation */

typedef struct store_rados {
  b2s_store base;
  rados_t cluster;
  rados_ioctx_t io;
  char pool[128];
} store_rados;

static int rados_err(const store_rados *rs, int rc, const char *what,
                     const char *name) {
  return b2s_store_fail(rc, "rados %s %s/%s: %s", what, rs->pool, name,
                    strerror(-rc));
}

/* The whole object (at most max bytes) in a malloc'ed buffer.  Reading one
 * byte past the size seen by stat catches an object replaced meanwhile. */
static int read_object(store_rados *rs, const char *name, size_t max,
                       uint8_t **out, size_t *len) {
  for (int tries = 0; tries < 8; tries++) {
    uint64_t size;
    time_t mtime;
    int rc = rados_stat(rs->io, name, &size, &mtime);
    if (rc)
      return rc == -ENOENT ? b2s_store_fail(rc, "rados %s/%s: no such object",
                                        rs->pool, name)
                           : rados_err(rs, rc, "stat", name);
    if (size > max)
      return b2s_store_fail(B2S_E_LIMIT, "rados %s/%s: %llu bytes, over the "
                        "bound %zu", rs->pool, name,
                        (unsigned long long)size, max);
    uint8_t *b = malloc((size_t)size + 1);
    if (!b)
      return b2s_store_fail(B2S_E_NOMEM, "out of memory (%llu bytes)",
                        (unsigned long long)size);
    size_t got = 0;
    int prval = 0;
    rados_read_op_t op = rados_create_read_op();
    rados_read_op_read(op, 0, (size_t)size + 1, (char *)b, &got, &prval);
    rc = rados_read_op_operate(op, rs->io, name, 0);
    rados_release_read_op(op);
    if (rc == 0 && got <= size) {
      *out = b;
      *len = got;
      return 0;
    }
    free(b);
    if (rc)
      return rados_err(rs, rc, "read", name);
  }
  return b2s_store_fail(B2S_E_STORE, "rados %s/%s keeps changing while read",
                    rs->pool, name);
}

/* The object's attribute (empty when it has none). */
static int read_attr(store_rados *rs, const char *name, size_t max,
                     uint8_t **out, size_t *len) {
  rados_xattrs_iter_t it = NULL;
  int prval = 0;
  rados_read_op_t op = rados_create_read_op();
  rados_read_op_getxattrs(op, &it, &prval);
  int rc = rados_read_op_operate(op, rs->io, name, 0);
  rados_release_read_op(op);
  if (rc && it)   /* librados makes the iterator with the operation */
    rados_getxattrs_end(it);
  if (rc)
    return rc == -ENOENT ? b2s_store_fail(rc, "rados %s/%s: no such object",
                                      rs->pool, name)
                         : rados_err(rs, rc, "getxattrs", name);
  const char *xname, *val = NULL;
  size_t vlen = 0;
  *len = 0;
  while (rados_getxattrs_next(it, &xname, &val, &vlen) == 0 && xname) {
    if (strcmp(xname, STORE_ATTR_XATTR) != 0)
      continue;
    if (vlen > max)
      rc = b2s_store_fail(B2S_E_LIMIT, "rados %s/%s: attribute of %zu bytes, "
                      "over the bound %zu", rs->pool, name, vlen, max);
    else
      rc = b2s_store_dup(val, vlen, out);
    if (!rc)
      *len = vlen;
    rados_getxattrs_end(it);
    return rc;
  }
  rados_getxattrs_end(it);
  return b2s_store_dup(NULL, 0, out);
}

/* put_once against an existing object: 0 when it holds these bytes, else
 * B2S_E_OBJ_CONFLICT. */
static int compare_existing(store_rados *rs, const char *name,
                            const void *data, size_t len, const void *attr,
                            size_t attrlen) {
  uint8_t *got = NULL;
  size_t n = 0;
  int rc = read_object(rs, name, len, &got, &n);
  int same = rc == 0 && n == len && (!len || memcmp(got, data, len) == 0);
  free(got);
  if (rc && rc != B2S_E_LIMIT)
    return rc;
  got = NULL;
  if (same) {
    rc = read_attr(rs, name, attrlen, &got, &n);
    same = rc == 0 && n == attrlen &&
           (!attrlen || memcmp(got, attr, attrlen) == 0);
    free(got);
    if (rc && rc != B2S_E_LIMIT)
      return rc;
  }
  return same ? 0 : b2s_store_fail(B2S_E_OBJ_CONFLICT, "rados %s/%s exists "
                               "with other bytes", rs->pool, name);
}

static int rados_put_once(b2s_store *s, const char *name, const void *data,
                          size_t len, const void *attr, size_t attrlen) {
  store_rados *rs = (store_rados *)s;
  rados_write_op_t op = rados_create_write_op();
  rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
  rados_write_op_write_full(op, data, len);
  if (attrlen)
    rados_write_op_setxattr(op, STORE_ATTR_XATTR, attr, attrlen);
  int rc = rados_write_op_operate(op, rs->io, name, NULL, 0);
  rados_release_write_op(op);
  if (rc == -EEXIST)
    return compare_existing(rs, name, data, len, attr, attrlen);
  return rc ? rados_err(rs, rc, "create", name) : 0;
}

static int rados_put(b2s_store *s, const char *name, const void *data,
                     size_t len) {
  store_rados *rs = (store_rados *)s;
  int rc = rados_write_full(rs->io, name, data, len);
  return rc ? rados_err(rs, rc, "write_full", name) : 0;
}

static int rados_get(b2s_store *s, const char *name, size_t max,
                     uint8_t **data, size_t *len) {
  return read_object((store_rados *)s, name, max, data, len);
}

static int rados_get_attr(b2s_store *s, const char *name, size_t max,
                          uint8_t **attr, size_t *len) {
  return read_attr((store_rados *)s, name, max, attr, len);
}

static int rados_stat_obj(b2s_store *s, const char *name, uint64_t *size) {
  store_rados *rs = (store_rados *)s;
  time_t mtime;
  int rc = rados_stat(rs->io, name, size, &mtime);
  return rc ? rados_err(rs, rc, "stat", name) : 0;
}

static int rados_remove_obj(b2s_store *s, const char *name) {
  store_rados *rs = (store_rados *)s;
  int rc = rados_remove(rs->io, name);
  return rc ? rados_err(rs, rc, "remove", name) : 0;
}

static int rados_kv_set(b2s_store *s, const char *obj, const b2s_kv *kv,
                        size_t n) {
  store_rados *rs = (store_rados *)s;
  const char **keys = malloc(n * sizeof *keys);
  const char **vals = malloc(n * sizeof *vals);
  size_t *lens = malloc(n * sizeof *lens);
  int rc = 0;
  if (!keys || !vals || !lens) {
    rc = b2s_store_fail(B2S_E_NOMEM, "out of memory (%zu keys)", n);
  } else {
    for (size_t i = 0; i < n; i++) {
      keys[i] = kv[i].key;
      vals[i] = kv[i].len ? kv[i].val : "";
      lens[i] = kv[i].len;
    }
    rados_write_op_t op = rados_create_write_op();
    rados_write_op_omap_set(op, keys, vals, lens, n);
    rc = rados_write_op_operate(op, rs->io, obj, NULL, 0);
    rados_release_write_op(op);
    if (rc)
      rc = rados_err(rs, rc, "omap_set", obj);
  }
  free(keys);
  free(vals);
  free(lens);
  return rc;
}

static int rados_kv_get(b2s_store *s, const char *obj, const char *key,
                        uint8_t **val, size_t *len) {
  store_rados *rs = (store_rados *)s;
  rados_omap_iter_t it = NULL;
  int prval = 0;
  rados_read_op_t op = rados_create_read_op();
  rados_read_op_omap_get_vals_by_keys(op, &key, 1, &it, &prval);
  int rc = rados_read_op_operate(op, rs->io, obj, 0);
  rados_release_read_op(op);
  if (rc && it)   /* librados makes the iterator with the operation */
    rados_omap_get_end(it);
  if (rc)
    return rados_err(rs, rc, "omap_get", obj);
  char *k = NULL, *v = NULL;
  size_t klen = 0, vlen = 0;
  rc = rados_omap_get_next2(it, &k, &v, &klen, &vlen);
  if (!rc && k && klen == strlen(key) && memcmp(k, key, klen) == 0) {
    rc = b2s_store_dup(v, vlen, val);
    if (!rc)
      *len = vlen;
  } else if (!rc) {
    rc = b2s_store_fail(-ENOENT, "rados %s/%s: no key %s", rs->pool, obj, key);
  }
  rados_omap_get_end(it);
  return rc;
}

/* One page of a listing: visits up to `page` keys after *after (updated
 * to the last key visited); *more when the omap holds further keys. */
static int list_page(store_rados *rs, const char *obj, char *after,
                     size_t page, b2s_kv_cb cb, void *arg, size_t *visited,
                     int *more) {
  rados_omap_iter_t it = NULL;
  unsigned char pmore = 0;
  int prval = 0;
  rados_read_op_t op = rados_create_read_op();
  rados_read_op_omap_get_vals2(op, after, "", page, &it, &pmore, &prval);
  int rc = rados_read_op_operate(op, rs->io, obj, 0);
  rados_release_read_op(op);
  if (rc && it)
    rados_omap_get_end(it);
  if (rc)
    return rados_err(rs, rc, "omap_get_vals", obj);
  char *k, *v;
  size_t klen, vlen;
  while (!rc && rados_omap_get_next2(it, &k, &v, &klen, &vlen) == 0 && k) {
    char key[STORE_KEY_MAX + 1];
    if (klen > STORE_KEY_MAX) {
      rc = b2s_store_fail(B2S_E_STORE, "rados %s/%s: key of %zu bytes",
                      rs->pool, obj, klen);
      break;
    }
    memcpy(key, k, klen);
    key[klen] = '\0';
    rc = cb(arg, key, v ? v : "", vlen);   /* librados: NULL when empty */
    memcpy(after, key, klen + 1);
    (*visited)++;
  }
  rados_omap_get_end(it);
  *more = pmore != 0;
  return rc;
}

static int rados_kv_list(b2s_store *s, const char *obj, const char *after,
                         size_t max, b2s_kv_cb cb, void *arg) {
  store_rados *rs = (store_rados *)s;
  char last[STORE_KEY_MAX + 1];
  snprintf(last, sizeof last, "%s", after ? after : "");
  if (max > INT32_MAX)
    max = INT32_MAX;
  size_t visited = 0;
  int more = 1, rc = 0;
  while (!rc && more && visited < max) {
    size_t page = max - visited < LIST_PAGE ? max - visited : LIST_PAGE;
    rc = list_page(rs, obj, last, page, cb, arg, &visited, &more);
  }
  return rc ? rc : (int)visited;
}

static void rados_free_store(b2s_store *s) {
  store_rados *rs = (store_rados *)s;
  rados_ioctx_destroy(rs->io);
  rados_shutdown(rs->cluster);
  free(rs);
}

/* ---- leases: cls_lock's exclusive lock, the holder its cookie ---------- */

#define LEASE_LOCK "b2s.lease"

static int lease_lock(store_rados *rs, const char *name, const char *holder,
                      int ms) {
  struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
  return rados_lock_exclusive(rs->io, name, LEASE_LOCK, holder,
                              "b2stream lease", &tv,
                              LIBRADOS_LOCK_FLAG_MAY_RENEW);
}

/* The cookie of whoever holds the lock ("" when none is listed). */
static void lease_holder(store_rados *rs, const char *name, char *who,
                         size_t cap) {
  char tag[256], clients[1024], cookies[1024], addrs[1024];
  size_t tl = sizeof tag, cl = sizeof clients, ckl = sizeof cookies,
         al = sizeof addrs;
  int excl = 0;
  who[0] = '\0';
  ssize_t n = rados_list_lockers(rs->io, name, LEASE_LOCK, &excl, tag, &tl,
                                 clients, &cl, cookies, &ckl, addrs, &al);
  if (n > 0)     /* NUL-separated lists: the first locker */
    snprintf(who, cap, "%.*s (client %.*s at %.*s)", (int)strnlen(cookies, ckl),
             cookies, (int)strnlen(clients, cl), clients,
             (int)strnlen(addrs, al), addrs);
}

static int rados_lease_take(b2s_store *s, const char *name,
                            const char *holder, int ms, void **state,
                            char *who, size_t cap) {
  store_rados *rs = (store_rados *)s;
  *state = NULL;
  int rc = lease_lock(rs, name, holder, ms);
  if (rc == -EBUSY || rc == -EEXIST) {
    lease_holder(rs, name, who, cap);
    return b2s_store_fail(B2S_E_BUSY, "rados %s/%s: leased by %s", rs->pool,
                      name, who[0] ? who : "another client");
  }
  return rc ? rados_err(rs, rc, "lock", name) : 0;
}

static int rados_lease_renew(b2s_store *s, const char *name,
                             const char *holder, int ms, void *state) {
  (void)state;
  store_rados *rs = (store_rados *)s;
  int rc = lease_lock(rs, name, holder, ms);
  if (rc == -EBUSY || rc == -EEXIST)
    return b2s_store_fail(B2S_E_BUSY, "rados %s/%s: lease lost", rs->pool, name);
  return rc ? rados_err(rs, rc, "lock", name) : 0;
}

static void rados_lease_drop(b2s_store *s, const char *name,
                             const char *holder, void *state) {
  (void)state;
  store_rados *rs = (store_rados *)s;
  rados_unlock(rs->io, name, LEASE_LOCK, holder);
}

static const store_ops rados_ops = {
    .kind = "rados",
    .free = rados_free_store,
    .put_once = rados_put_once,
    .put = rados_put,
    .get = rados_get,
    .get_attr = rados_get_attr,
    .stat = rados_stat_obj,
    .remove = rados_remove_obj,
    .kv_set = rados_kv_set,
    .kv_get = rados_kv_get,
    .kv_list = rados_kv_list,
    .lease_take = rados_lease_take,
    .lease_renew = rados_lease_renew,
    .lease_drop = rados_lease_drop,
};

/* Configuration file, timeouts, connection. */
static int connect_cluster(store_rados *rs, const b2s_store_opts *opts) {
  char user[128], secs[32];
  snprintf(user, sizeof user, "client.%s",
           opts->client_id ? opts->client_id : "admin");
  int rc = rados_create2(&rs->cluster, "ceph", user, 0);
  if (rc)
    return b2s_store_fail(B2S_E_STORE, "rados_create2(%s): %s", user,
                      strerror(-rc));
  const char *conf = opts->ceph_conf ? opts->ceph_conf : getenv("CEPH_CONF");
  rc = rados_conf_read_file(rs->cluster, conf);
  if (rc) {
    b2s_store_fail(B2S_E_STORE, "ceph configuration %s: %s",
               conf ? conf : "(default search)", strerror(-rc));
    goto fail;
  }
  int ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
  snprintf(secs, sizeof secs, "%d", (ms + 999) / 1000);
  static const char *const timeouts[] = {
      "rados_osd_op_timeout", "rados_mon_op_timeout", "client_mount_timeout"};
  for (size_t i = 0; i < 3; i++)
    rados_conf_set(rs->cluster, timeouts[i], secs);
  rc = rados_connect(rs->cluster);
  if (rc) {
    b2s_store_fail(B2S_E_STORE, "cannot connect to the Ceph cluster (%s): %s",
               conf ? conf : "default configuration", strerror(-rc));
    goto fail;
  }
  rc = rados_ioctx_create(rs->cluster, rs->pool, &rs->io);
  if (rc) {
    b2s_store_fail(B2S_E_STORE, "rados pool %s: %s", rs->pool, strerror(-rc));
    goto fail;
  }
  return 0;
fail:
  rados_shutdown(rs->cluster);
  return B2S_E_STORE;
}

int b2s_store_rados_open(const char *pool, const b2s_store_opts *opts,
                     b2s_store **out) {
  if (strlen(pool) >= sizeof ((store_rados *)0)->pool)
    return b2s_store_fail(B2S_E_ARG, "rados pool name too long: %s", pool);
  store_rados *rs = calloc(1, sizeof *rs);
  if (!rs)
    return b2s_store_fail(B2S_E_NOMEM, "out of memory");
  snprintf(rs->pool, sizeof rs->pool, "%s", pool);
  int rc = connect_cluster(rs, opts);
  if (rc) {
    free(rs);
    return rc;
  }
  rs->base.ops = &rados_ops;
  *out = &rs->base;
  return 0;
}

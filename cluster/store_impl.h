/* Internals of the object stores behind b2s_store.h: the operations table
 * every backend fills, the checks store.c makes before dispatching, and
 * the per-thread last error.  Owned by cluster/store*.c only.
 *
 * store.c validates names, keys, values and pointers, so a backend's
 * operation may assume well-formed arguments. */
#ifndef B2S_STORE_IMPL_H
#define B2S_STORE_IMPL_H

#include "b2s_store.h"

#define STORE_NAME_MAX 200
#define STORE_KEY_MAX 64
#define STORE_VAL_MAX 65536
/* The xattr that carries an object's attribute on RADOS. */
#define STORE_ATTR_XATTR "b2s.attr"

typedef struct store_ops {
  const char *kind;
  void (*free)(b2s_store *s);
  int (*put_once)(b2s_store *s, const char *name, const void *data,
                  size_t len, const void *attr, size_t attrlen);
  int (*put)(b2s_store *s, const char *name, const void *data, size_t len);
  int (*get)(b2s_store *s, const char *name, size_t max, uint8_t **data,
             size_t *len);
  int (*get_attr)(b2s_store *s, const char *name, size_t max, uint8_t **attr,
                  size_t *len);
  int (*stat)(b2s_store *s, const char *name, uint64_t *size);
  int (*remove)(b2s_store *s, const char *name);
  int (*kv_set)(b2s_store *s, const char *obj, const b2s_kv *kv, size_t n);
  int (*kv_get)(b2s_store *s, const char *obj, const char *key,
                uint8_t **val, size_t *len);
  int (*kv_list)(b2s_store *s, const char *obj, const char *after,
                 size_t max, b2s_kv_cb cb, void *arg);
  /* leases (store_lease.c): take fills *state, renew and drop get it */
  int (*lease_take)(b2s_store *s, const char *name, const char *holder,
                    int ms, void **state, char *who, size_t cap);
  int (*lease_renew)(b2s_store *s, const char *name, const char *holder,
                     int ms, void *state);
  void (*lease_drop)(b2s_store *s, const char *name, const char *holder,
                     void *state);
} store_ops;

int b2s_local_lease_take(b2s_store *s, const char *name, const char *holder,
                     int ms, void **state, char *who, size_t cap);
int b2s_local_lease_renew(b2s_store *s, const char *name, const char *holder,
                      int ms, void *state);
void b2s_local_lease_drop(b2s_store *s, const char *name, const char *holder,
                      void *state);

/* Every backend's handle starts with this. */
struct b2s_store {
  const store_ops *ops;
};

/* Record the store's words for this thread's last failure; returns code. */
int b2s_store_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* 1 when name is 1..max bytes of [A-Za-z0-9._-] (and, unless dot_ok, not
 * starting with '.'). */
int b2s_store_name_ok(const char *name, size_t max, int dot_ok);

/* A copy of len bytes in a fresh malloc'ed buffer (never NULL on success,
 * even for len 0); B2S_E_NOMEM. */
int b2s_store_dup(const void *src, size_t len, uint8_t **out);

int b2s_store_local_open(const char *dir, const b2s_store_opts *opts,
                     b2s_store **out);
#ifdef B2S_HAVE_RADOS
int b2s_store_rados_open(const char *pool, const b2s_store_opts *opts,
                     b2s_store **out);
#endif

#endif

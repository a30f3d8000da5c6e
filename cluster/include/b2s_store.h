/* Object stores: where a distributed sparse frame (b2s_dframe.h) keeps its
 * chunk objects, records and index.  Two implementations behind one
 * interface:
 *   - local: a directory; each object is a file, written under a temporary
 *     name and published with link(2), so "create exclusively" is atomic;
 *     an object's attribute is a second file published before it; a key
 *     log is an append-only file of checksummed batches (a torn tail is
 *     ignored when read);
 *   - rados: a Ceph RADOS pool through librados (built when librados is
 *     found); one object per object, the attribute an xattr set in the
 *     same write operation, a key log the object's omap, each batch one
 *     write operation.
 *
 * URLs: "rados://POOL" (Ceph configuration from opts->ceph_conf, else
 * $CEPH_CONF, else librados's default search), "file:///ABS/DIR" or a
 * plain directory path (created if missing, mode 0750).
 *
 * Object names: 1..200 bytes of [A-Za-z0-9._-], not starting with '.'
 * (B2S_E_ARG otherwise), so a name never leaves the local directory.
 *
 * Durability: a call returns 0 only once the store has acknowledged the
 * write: RADOS's acknowledgement, or (local) fsync of the files and the
 * directory when opts->sync is B2S_SYNC_FULL (with B2S_SYNC_NONE local
 * writes survive a crash of the process only).
 *
 * Errors: -ENOENT for an absent object or key, B2S_E_OBJ_CONFLICT for a
 * write-once object that exists with other bytes, B2S_E_LIMIT for an
 * object larger than the caller's bound, B2S_E_STORE (or a -errno) for a
 * store that fails; b2s_store_last_error() gives the store's own words.
 *
 * Ownership: buffers returned through uint8_t ** are malloc'ed and the
 * caller frees them.  Threads: a b2s_store may be used by several threads
 * at once (librados handles are thread-safe; the local store keeps no
 * mutable state besides its last error, which is per thread). */
#ifndef B2S_STORE_H
#define B2S_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct b2s_store b2s_store;

typedef struct b2s_store_opts {
  const char *ceph_conf;   /* rados: ceph.conf path; NULL = $CEPH_CONF or
                              librados's default search */
  const char *client_id;   /* rados: client id, NULL = "admin" */
  int sync;                /* local: enum b2s_sync (b2s_frame_writer.h) */
  int timeout_ms;          /* rados: operation timeout, 0 = 30000 */
} b2s_store_opts;

/* Whether this build has the rados store. */
bool b2s_store_have_rados(void);

int b2s_store_open(const char *url, const b2s_store_opts *opts,
                   b2s_store **out);
void b2s_store_free(b2s_store *s);                /* accepts NULL */
/* "local" or "rados". */
const char *b2s_store_kind(const b2s_store *s);
/* The store's own words on the last failure of this thread ("" if none). */
const char *b2s_store_last_error(void);
/* Forget this thread's last failure (so a later message does not show
 * the words of one already handled). */
void b2s_store_clear_error(void);

/* ---- objects -------------------------------------------------------------- */

/* Create object `name` with data and attr (attr may be NULL, attrlen 0)
 * in one atomic step: readers see no object, or all of it.  When it
 * exists with the same data and attr this is a harmless retry and returns
 * 0; with other bytes, B2S_E_OBJ_CONFLICT (nothing is changed). */
int b2s_store_put_once(b2s_store *s, const char *name, const void *data,
                       size_t len, const void *attr, size_t attrlen);

/* Create or replace object `name` whole, atomically (small objects). */
int b2s_store_put(b2s_store *s, const char *name, const void *data,
                  size_t len);

/* Read a whole object, or its attribute; -ENOENT when absent, B2S_E_LIMIT
 * when larger than max.  An object without attribute has an empty one. */
int b2s_store_get(b2s_store *s, const char *name, size_t max, uint8_t **data,
                  size_t *len);
int b2s_store_get_attr(b2s_store *s, const char *name, size_t max,
                       uint8_t **attr, size_t *len);
/* Size of an object; -ENOENT when absent. */
int b2s_store_stat(b2s_store *s, const char *name, uint64_t *size);

/* Remove an object (and its attribute and key log).  Only for objects the
 * caller created itself (tests, a frame being deleted by its owner). */
int b2s_store_remove(b2s_store *s, const char *name);

/* ---- key logs ------------------------------------------------------------- */

/* An object's ordered map of keys (1..64 bytes of [A-Za-z0-9._-]) to
 * values (at most 64 KiB each).  A batch of keys is set atomically: all
 * of it is visible, or none.  Cost is O(batch), independent of the keys
 * already stored.  A key set again replaces its value. */
typedef struct b2s_kv {
  const char *key;
  const void *val;
  size_t len;
} b2s_kv;

int b2s_store_kv_set(b2s_store *s, const char *obj, const b2s_kv *kv,
                     size_t n);
int b2s_store_kv_get(b2s_store *s, const char *obj, const char *key,
                     uint8_t **val, size_t *len);

/* Visit keys greater than `after` (NULL or "": from the first) in
 * ascending byte order, at most max of them; cb returning nonzero stops
 * the walk with that value.  Returns the number visited or an error. */
typedef int (*b2s_kv_cb)(void *arg, const char *key, const void *val,
                         size_t len);
int b2s_store_kv_list(b2s_store *s, const char *obj, const char *after,
                      size_t max, b2s_kv_cb cb, void *arg);

/* ---- leases --------------------------------------------------------------- */

/* An exclusive lease on `name` (an object name of its own, beside the
 * objects it guards) for `holder`: 1..200 printable bytes that name who
 * holds it (host, process), shown to whoever is refused.
 *   - local: flock(2) on the file .l.NAME, which holds the holder's text;
 *     the kernel drops it when the holder exits or is killed, so
 *     duration_ms does not matter (on a network file system, its lock
 *     manager's rules apply);
 *   - rados: cls_lock's exclusive lock "b2s.lease" on object NAME, the
 *     holder as its cookie, for duration_ms; b2s_store_lease_renew
 *     extends it, and a holder killed keeps it until it expires.
 * B2S_E_BUSY when another holds it: *who gets its holder's text (cap
 * bytes, NUL-terminated; "" when unknown). */
typedef struct b2s_lease b2s_lease;
int b2s_store_lease_take(b2s_store *s, const char *name, const char *holder,
                         int duration_ms, b2s_lease **out, char *who,
                         size_t cap);
/* Extend the lease by its duration; B2S_E_BUSY when it was lost (it
 * expired and another took it), another code when the store failed. */
int b2s_store_lease_renew(b2s_lease *l);
/* Give the lease up (accepts NULL). */
void b2s_store_lease_drop(b2s_lease *l);

#endif

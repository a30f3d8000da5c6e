/* Key logs of the local store: append-only files of checksummed batches
 * (store_kvlog.h).  An appender holds flock(2) on the log, so batches of
 * several processes never interleave; it cuts a torn tail left by a
 * writer that died before appending.  Readers read the whole log. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2s_frame_writer.h"
#include "store_kvlog.h"
#include "store_local.h"

#define LOG_MAX ((size_t)1 << 40)

/* Where the next batch goes in the log (size bytes): normally its end,
 * found by checking the last batch only; after a torn append, the end of
 * the last valid batch, found by reading the log from the start. */
static int log_valid_end(store_local *ls, int fd, const char *rel,
                         uint64_t size, uint64_t *end) {
  uint8_t tail[KVLOG_TAIL], *buf;
  size_t blen = 0, n, valid;
  *end = size;
  if (size == 0)
    return 0;
  if (size >= KVLOG_TAIL &&
      b2s_local_pread_all(fd, tail, KVLOG_TAIL, size - KVLOG_TAIL) == 0)
    blen = b2s_kvlog_last_batch_len(tail, size);
  if (blen && (buf = malloc(blen)) != NULL) {
    int ok = b2s_local_pread_all(fd, buf, blen, size - blen) == 0 &&
             b2s_kvlog_batch_len(buf, blen) == blen;
    free(buf);
    if (ok)
      return 0;
  }
  int rc = b2s_local_read_fd(ls, fd, rel, LOG_MAX, &buf, &n);
  if (rc)
    return rc;
  b2s_kvlog_parse(buf, n, NULL, NULL, &valid);
  free(buf);
  *end = valid;
  return 0;
}

/* The object a key log belongs to exists once the log does (as on
 * RADOS, where the omap is part of the object). */
static int ensure_object(store_local *ls, const char *obj) {
  int fd = openat(ls->dirfd, obj, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0)
    return b2s_local_errno(ls, errno, "create", obj);
  close(fd);
  return b2s_local_sync_dir(ls);
}

static int append_locked(store_local *ls, int fd, const char *obj,
                         const char *rel, const uint8_t *batch, size_t blen) {
  struct stat st;
  uint64_t end;
  if (fstat(fd, &st) != 0)
    return b2s_local_errno(ls, errno, "fstat", rel);
  int rc = log_valid_end(ls, fd, rel, (uint64_t)st.st_size, &end);
  if (rc)
    return rc;
  if (end != (uint64_t)st.st_size && ftruncate(fd, (off_t)end) != 0)
    return b2s_local_errno(ls, errno, "truncate", rel);
  if (end == 0 && (rc = ensure_object(ls, obj)) != 0)
    return rc;
  rc = b2s_local_pwrite_all(fd, batch, blen, end);
  if (!rc && ls->sync == B2S_SYNC_FULL && fsync(fd) != 0)
    rc = -errno;
  if (rc) {
    /* A failed append leaves no partial batch behind when it can help it;
     * the reader would ignore one anyway. */
    int trc = ftruncate(fd, (off_t)end);
    (void)trc;
    return b2s_local_errno(ls, -rc, "append", rel);
  }
  return 0;
}

int b2s_local_kv_set(b2s_store *s, const char *obj, const b2s_kv *kv, size_t n) {
  store_local *ls = (store_local *)s;
  uint8_t *batch;
  size_t blen;
  int rc = b2s_kvlog_encode(kv, n, &batch, &blen);
  if (rc)
    return rc;
  char rel[LOCAL_REL_MAX];
  b2s_local_rel(rel, ".k.", obj);
  int fd = openat(ls->dirfd, rel, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    free(batch);
    return b2s_local_errno(ls, errno, "open", rel);
  }
  while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
    continue;
  rc = rc ? b2s_local_errno(ls, errno, "flock", rel)
          : append_locked(ls, fd, obj, rel, batch, blen);
  close(fd);   /* releases the flock */
  free(batch);
  return rc;
}

/* The whole log of obj; *len 0 and 0 returned when obj exists without a
 * log, -ENOENT when there is no obj either. */
static int read_log(store_local *ls, const char *obj, uint8_t **buf,
                    size_t *len) {
  char rel[LOCAL_REL_MAX];
  struct stat st;
  b2s_local_rel(rel, ".k.", obj);
  *buf = NULL;
  *len = 0;
  int fd = openat(ls->dirfd, rel, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    int rc = b2s_local_read_fd(ls, fd, rel, LOG_MAX, buf, len);
    close(fd);
    return rc;
  }
  if (errno != ENOENT)
    return b2s_local_errno(ls, errno, "open", rel);
  if (fstatat(ls->dirfd, obj, &st, 0) != 0)
    return b2s_local_errno(ls, errno, "stat", obj);
  return 0;
}

typedef struct kv_find {
  const char *key;
  size_t klen;
  const uint8_t *val;
  size_t vlen;
  int found;
} kv_find;

static int find_cb(void *arg, const uint8_t *key, size_t klen,
                   const uint8_t *val, size_t vlen) {
  kv_find *f = arg;
  if (klen == f->klen && memcmp(key, f->key, klen) == 0) {
    f->val = val;   /* a later batch replaces an earlier value */
    f->vlen = vlen;
    f->found = 1;
  }
  return 0;
}

/* Look for f->key from the last batch back, following the trailers: the
 * hot keys (a commit count) are in the latest batches.  1 when found
 * (*hold keeps the batch f points into), 0 when no batch has it, -1 when
 * the chain of batches breaks (a torn tail, damage): then the caller
 * reads the log from the start. */
static int find_backward(int fd, uint64_t size, kv_find *f, uint8_t **hold) {
  uint8_t tail[KVLOG_TAIL];
  for (uint64_t pos = size; pos > 0;) {
    size_t blen = 0;
    if (pos >= KVLOG_TAIL &&
        b2s_local_pread_all(fd, tail, KVLOG_TAIL, pos - KVLOG_TAIL) == 0)
      blen = b2s_kvlog_last_batch_len(tail, pos);
    uint8_t *b = blen ? malloc(blen) : NULL;
    if (!b || b2s_local_pread_all(fd, b, blen, pos - blen) != 0 ||
        b2s_kvlog_batch_len(b, blen) != blen) {
      free(b);
      return -1;
    }
    b2s_kvlog_parse(b, blen, find_cb, f, NULL);
    if (f->found) {
      *hold = b;
      return 1;
    }
    free(b);
    pos -= blen;
  }
  return 0;
}

int b2s_local_kv_get(b2s_store *s, const char *obj, const char *key,
                 uint8_t **val, size_t *len) {
  store_local *ls = (store_local *)s;
  char rel[LOCAL_REL_MAX];
  struct stat st;
  uint8_t *buf = NULL;
  size_t n;
  kv_find f = {.key = key, .klen = strlen(key)};
  b2s_local_rel(rel, ".k.", obj);
  int rc = 0, fd = openat(ls->dirfd, rel, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT)
    return b2s_local_errno(ls, errno, "open", rel);
  if (fd >= 0 && fstat(fd, &st) != 0)
    rc = b2s_local_errno(ls, errno, "fstat", rel);
  if (fd >= 0 && !rc &&
      find_backward(fd, (uint64_t)st.st_size, &f, &buf) < 0) {
    rc = b2s_local_read_fd(ls, fd, rel, LOG_MAX, &buf, &n);
    if (!rc)
      b2s_kvlog_parse(buf, n, find_cb, &f, NULL);
  }
  if (fd >= 0)
    close(fd);
  if (!rc)
    rc = f.found ? b2s_store_dup(f.val, f.vlen, val)
                 : b2s_store_fail(-ENOENT, "%s/%s: no key %s", ls->dir, obj, key);
  if (!rc)
    *len = f.vlen;
  free(buf);
  return rc;
}

typedef struct kv_ent {
  const uint8_t *key, *val;
  size_t klen, vlen, seq;
} kv_ent;

typedef struct kv_all {
  kv_ent *e;
  size_t n, cap;
} kv_all;

static int collect_cb(void *arg, const uint8_t *key, size_t klen,
                      const uint8_t *val, size_t vlen) {
  kv_all *a = arg;
  if (a->n == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 64;
    kv_ent *e = realloc(a->e, cap * sizeof *e);
    if (!e)
      return B2S_E_NOMEM;
    a->e = e;
    a->cap = cap;
  }
  a->e[a->n] = (kv_ent){key, val, klen, vlen, a->n};
  a->n++;
  return 0;
}

static int key_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

/* Ascending key, the latest setting of a key first. */
static int ent_cmp(const void *pa, const void *pb) {
  const kv_ent *a = pa, *b = pb;
  int c = key_cmp(a->key, a->klen, b->key, b->klen);
  return c ? c : (a->seq < b->seq) - (a->seq > b->seq);
}

static int walk(const kv_all *a, const char *after, size_t max, b2s_kv_cb cb,
                void *arg) {
  size_t alen = after ? strlen(after) : 0, visited = 0;
  for (size_t i = 0; i < a->n && visited < max; i++) {
    const kv_ent *e = &a->e[i];
    if (i > 0 && key_cmp(e->key, e->klen, a->e[i - 1].key,
                         a->e[i - 1].klen) == 0)
      continue;   /* an older value of the key just visited */
    if (after && key_cmp(e->key, e->klen, (const uint8_t *)after, alen) <= 0)
      continue;
    char key[STORE_KEY_MAX + 1];
    memcpy(key, e->key, e->klen);
    key[e->klen] = '\0';
    int rc = cb(arg, key, e->val, e->vlen);
    if (rc)
      return rc;
    visited++;
  }
  return (int)visited;
}

/* The `max` smallest keys after `after`, with their latest values, kept
 * sorted while the log is read: a short listing (the head keys of a
 * frame, a run of records) needs no sort of the whole log. */
typedef struct kv_best {
  kv_ent *e;
  size_t n, max, alen;
  const char *after;
} kv_best;

static int best_cb(void *arg, const uint8_t *key, size_t klen,
                   const uint8_t *val, size_t vlen) {
  kv_best *b = arg;
  if (b->after &&
      key_cmp(key, klen, (const uint8_t *)b->after, b->alen) <= 0)
    return 0;
  size_t lo = 0, hi = b->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (key_cmp(b->e[mid].key, b->e[mid].klen, key, klen) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < b->n && key_cmp(b->e[lo].key, b->e[lo].klen, key, klen) == 0) {
    b->e[lo].val = val;   /* a later setting replaces the value */
    b->e[lo].vlen = vlen;
    return 0;
  }
  if (lo == b->max)
    return 0;   /* max smaller keys are already known */
  size_t keep = b->n < b->max ? b->n : b->max - 1;
  memmove(&b->e[lo + 1], &b->e[lo], (keep - lo) * sizeof *b->e);
  b->e[lo] = (kv_ent){key, val, klen, vlen, 0};
  b->n = keep + 1;
  return 0;
}

#define BEST_MAX 4096   /* longer listings sort the whole log instead */

int b2s_local_kv_list(b2s_store *s, const char *obj, const char *after,
                  size_t max, b2s_kv_cb cb, void *arg) {
  store_local *ls = (store_local *)s;
  uint8_t *buf;
  size_t n;
  int rc = read_log(ls, obj, &buf, &n);
  if (rc)
    return rc;
  if (max > INT32_MAX)
    max = INT32_MAX;
  kv_all a = {0};
  if (max <= BEST_MAX) {
    kv_best b = {malloc(max * sizeof *b.e), 0, max,
                 after ? strlen(after) : 0, after};
    rc = b.e ? b2s_kvlog_parse(buf, n, best_cb, &b, NULL) : B2S_E_NOMEM;
    a = (kv_all){b.e, b.n, max};
  } else {
    rc = b2s_kvlog_parse(buf, n, collect_cb, &a, NULL);
    if (!rc && a.n)
      qsort(a.e, a.n, sizeof *a.e, ent_cmp);
  }
  rc = rc ? b2s_store_fail(rc, "out of memory listing %s", obj)
          : walk(&a, after, max, cb, arg);
  free(a.e);
  free(buf);
  return rc;
}

/* The local object store: one directory, objects published atomically by
 * link(2) or rename(2) of complete temporary files (store_local.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2s_frame_writer.h"
#include "store_local.h"

#define TMP_NAME_MAX 64

static int read_rel(store_local *ls, const char *rel, size_t max,
                    uint8_t **out, size_t *len) {
  int fd = openat(ls->dirfd, rel, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? -ENOENT : b2s_local_errno(ls, errno, "open", rel);
  int rc = b2s_local_read_fd(ls, fd, rel, max, out, len);
  close(fd);
  return rc;
}

/* 1 when file rel holds exactly data, 0 when it differs, -ENOENT when
 * absent, or an error. */
static int same_file(store_local *ls, const char *rel, const void *data,
                     size_t len) {
  int fd = openat(ls->dirfd, rel, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? -ENOENT : b2s_local_errno(ls, errno, "open", rel);
  struct stat st;
  int rc = fstat(fd, &st) ? b2s_local_errno(ls, errno, "fstat", rel)
                          : (uint64_t)st.st_size == len;
  uint8_t buf[16384];
  for (size_t off = 0; rc == 1 && off < len; off += sizeof buf) {
    size_t n = len - off < sizeof buf ? len - off : sizeof buf;
    int r = b2s_local_pread_all(fd, buf, n, off);
    rc = r ? b2s_local_errno(ls, -r, "read", rel)
           : memcmp(buf, (const uint8_t *)data + off, n) == 0;
  }
  close(fd);
  return rc;
}

/* put_once against an existing object: 0 when it holds these bytes, else
 * B2S_E_OBJ_CONFLICT; -ENOENT when there is no object. */
static int compare_existing(store_local *ls, const char *name,
                            const void *data, size_t len, const void *attr,
                            size_t attrlen) {
  char rel[LOCAL_REL_MAX];
  int rc = same_file(ls, name, data, len);
  if (rc == 1) {
    b2s_local_rel(rel, ".a.", name);
    rc = same_file(ls, rel, attr, attrlen);
    if (rc == -ENOENT)
      rc = attrlen == 0;
  }
  if (rc == 0)
    return b2s_store_fail(B2S_E_OBJ_CONFLICT, "%s/%s exists with other bytes",
                      ls->dir, name);
  return rc < 0 ? rc : 0;
}

/* Write data to a new temporary file (synced with B2S_SYNC_FULL); its
 * name goes to tmp. */
static int write_temp(store_local *ls, const void *data, size_t len,
                      char tmp[TMP_NAME_MAX]) {
  /* Only uniqueness matters: no other memory is ordered by this counter. */
  static atomic_uint seq;
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 100; tries++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(tmp, TMP_NAME_MAX, ".t.%ld.%u.%lx", (long)getpid(),
             atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed),
             (unsigned long)ts.tv_nsec);
    fd = openat(ls->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                0640);
    if (fd < 0 && errno != EEXIST)
      return b2s_local_errno(ls, errno, "create", tmp);
  }
  if (fd < 0)
    return b2s_local_errno(ls, EEXIST, "create", tmp);
  int rc = b2s_local_pwrite_all(fd, data, len, 0);
  if (!rc && ls->sync == B2S_SYNC_FULL && fsync(fd) != 0)
    rc = -errno;
  close(fd);
  if (rc) {
    unlinkat(ls->dirfd, tmp, 0);
    return b2s_local_errno(ls, -rc, "write", tmp);
  }
  return 0;
}

/* flock(2) on a fresh descriptor of the directory; returns it. */
static int lock_dir(store_local *ls) {
  int fd = openat(ls->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return b2s_local_errno(ls, errno, "open", ".");
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      int rc = b2s_local_errno(ls, errno, "flock", ".");
      close(fd);
      return rc;
    }
  }
  return fd;
}

/* Under the directory lock: attribute, then object.  1 when the object
 * appeared meanwhile. */
static int publish_locked(store_local *ls, const char *name,
                          const char *tdata, const char *tattr) {
  char arel[LOCAL_REL_MAX];
  struct stat st;
  b2s_local_rel(arel, ".a.", name);
  if (fstatat(ls->dirfd, name, &st, 0) == 0)
    return 1;
  if (errno != ENOENT)
    return b2s_local_errno(ls, errno, "stat", name);
  /* An attribute without object is left over by a writer that died. */
  if (tattr ? renameat(ls->dirfd, tattr, ls->dirfd, arel) != 0
            : unlinkat(ls->dirfd, arel, 0) != 0 && errno != ENOENT)
    return b2s_local_errno(ls, errno, "publish", arel);
  int rc = b2s_local_sync_dir(ls);   /* the attribute is durable first */
  if (!rc && linkat(ls->dirfd, tdata, ls->dirfd, name, 0) != 0)
    rc = errno == EEXIST ? 1 : b2s_local_errno(ls, errno, "link", name);
  return rc;
}

static int local_put_once(b2s_store *s, const char *name, const void *data,
                          size_t len, const void *attr, size_t attrlen) {
  store_local *ls = (store_local *)s;
  int rc = compare_existing(ls, name, data, len, attr, attrlen);
  if (rc != -ENOENT)   /* a retry still makes sure the entry is durable */
    return rc ? rc : b2s_local_sync_dir(ls);
  char tdata[TMP_NAME_MAX], tattr[TMP_NAME_MAX] = "";
  rc = write_temp(ls, data, len, tdata);
  if (rc)
    return rc;
  if (attrlen)
    rc = write_temp(ls, attr, attrlen, tattr);
  int lk = rc ? rc : lock_dir(ls);
  if (lk >= 0) {
    rc = publish_locked(ls, name, tdata, attrlen ? tattr : NULL);
    close(lk);
  } else {
    rc = lk;
  }
  unlinkat(ls->dirfd, tdata, 0);
  if (tattr[0])
    unlinkat(ls->dirfd, tattr, 0);   /* ENOENT once renamed */
  if (rc == 1)
    return compare_existing(ls, name, data, len, attr, attrlen);
  return rc ? rc : b2s_local_sync_dir(ls);
}

static int local_put(b2s_store *s, const char *name, const void *data,
                     size_t len) {
  store_local *ls = (store_local *)s;
  char tmp[TMP_NAME_MAX];
  int rc = write_temp(ls, data, len, tmp);
  if (rc)
    return rc;
  /* Under the lock so a put_once never sees the object appear between
   * its check and its link. */
  int lk = lock_dir(ls);
  if (lk < 0) {
    unlinkat(ls->dirfd, tmp, 0);
    return lk;
  }
  if (renameat(ls->dirfd, tmp, ls->dirfd, name) != 0) {
    rc = b2s_local_errno(ls, errno, "rename", name);
    unlinkat(ls->dirfd, tmp, 0);
  }
  close(lk);
  return rc ? rc : b2s_local_sync_dir(ls);
}

static int local_get(b2s_store *s, const char *name, size_t max,
                     uint8_t **data, size_t *len) {
  store_local *ls = (store_local *)s;
  int rc = read_rel(ls, name, max, data, len);
  if (rc == -ENOENT)
    return b2s_store_fail(rc, "%s/%s: no such object", ls->dir, name);
  return rc;
}

static int local_stat(b2s_store *s, const char *name, uint64_t *size) {
  store_local *ls = (store_local *)s;
  struct stat st;
  if (fstatat(ls->dirfd, name, &st, 0) != 0)
    return b2s_local_errno(ls, errno, "stat", name);
  *size = (uint64_t)st.st_size;
  return 0;
}

static int local_get_attr(b2s_store *s, const char *name, size_t max,
                          uint8_t **attr, size_t *len) {
  store_local *ls = (store_local *)s;
  uint64_t size;
  int rc = local_stat(s, name, &size);
  if (rc)
    return rc;
  char rel[LOCAL_REL_MAX];
  b2s_local_rel(rel, ".a.", name);
  rc = read_rel(ls, rel, max, attr, len);
  return rc == -ENOENT ? b2s_store_dup(NULL, 0, attr) : rc;
}

static int local_remove(b2s_store *s, const char *name) {
  store_local *ls = (store_local *)s;
  static const char *const prefixes[] = {"", ".a.", ".k."};
  int lk = lock_dir(ls), removed = 0, rc = 0;
  if (lk < 0)
    return lk;
  for (size_t i = 0; i < 3 && !rc; i++) {
    char rel[LOCAL_REL_MAX];
    b2s_local_rel(rel, prefixes[i], name);
    if (unlinkat(ls->dirfd, rel, 0) == 0)
      removed++;
    else if (errno != ENOENT)
      rc = b2s_local_errno(ls, errno, "unlink", rel);
  }
  close(lk);
  if (!rc && !removed)
    return b2s_store_fail(-ENOENT, "%s/%s: no such object", ls->dir, name);
  return rc ? rc : b2s_local_sync_dir(ls);
}

static void local_free(b2s_store *s) {
  store_local *ls = (store_local *)s;
  close(ls->dirfd);
  free(ls->dir);
  free(ls);
}

static const store_ops local_ops = {
    .kind = "local",
    .free = local_free,
    .put_once = local_put_once,
    .put = local_put,
    .get = local_get,
    .get_attr = local_get_attr,
    .stat = local_stat,
    .remove = local_remove,
    .kv_set = b2s_local_kv_set,
    .kv_get = b2s_local_kv_get,
    .kv_list = b2s_local_kv_list,
    .lease_take = b2s_local_lease_take,
    .lease_renew = b2s_local_lease_renew,
    .lease_drop = b2s_local_lease_drop,
};

/* mkdir -p with mode 0750 for what is created. */
static int make_dirs(char *path) {
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char c = *p;
    *p = '\0';
    int rc = mkdir(path, 0750) != 0 && errno != EEXIST ? -errno : 0;
    *p = c;
    if (rc || c == '\0')
      return rc;
  }
}

int b2s_store_local_open(const char *dir, const b2s_store_opts *opts,
                     b2s_store **out) {
  store_local *ls = calloc(1, sizeof *ls);
  char *path = strdup(dir);
  if (!ls || !path) {
    free(ls);
    free(path);
    return b2s_store_fail(B2S_E_NOMEM, "out of memory");
  }
  int rc = make_dirs(path);
  ls->dirfd = rc ? -1 : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (ls->dirfd < 0) {
    rc = rc ? rc : -errno;
    b2s_store_fail(rc, "store directory %s: %s", dir, strerror(-rc));
    free(path);
    free(ls);
    return rc;
  }
  ls->base.ops = &local_ops;
  ls->sync = opts->sync;
  ls->dir = path;
  *out = &ls->base;
  return 0;
}

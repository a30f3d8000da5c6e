/* File helpers of the local store (store_local.h): paths, errors,
 * whole reads and writes, directory sync. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2s_frame_writer.h"
#include "store_local.h"

void b2s_local_rel(char rel[LOCAL_REL_MAX], const char *prefix, const char *name) {
  snprintf(rel, LOCAL_REL_MAX, "%s%s", prefix, name);
}

int b2s_local_errno(const store_local *ls, int err, const char *what,
                const char *rel) {
  return b2s_store_fail(-err, "%s %s/%s: %s", what, ls->dir, rel, strerror(err));
}

int b2s_local_sync_dir(store_local *ls) {
  if (ls->sync != B2S_SYNC_FULL || fsync(ls->dirfd) == 0)
    return 0;
  return b2s_local_errno(ls, errno, "fsync", ".");
}

int b2s_local_pwrite_all(int fd, const void *buf, size_t len, uint64_t off) {
  const uint8_t *p = buf;
  while (len) {
    ssize_t w = pwrite(fd, p, len, (off_t)off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return w < 0 ? -errno : -EIO;
    p += w;
    off += (uint64_t)w;
    len -= (size_t)w;
  }
  return 0;
}

int b2s_local_pread_all(int fd, void *buf, size_t len, uint64_t off) {
  uint8_t *p = buf;
  while (len) {
    ssize_t r = pread(fd, p, len, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r < 0 ? -errno : -EIO;   /* shorter than fstat said */
    p += r;
    off += (uint64_t)r;
    len -= (size_t)r;
  }
  return 0;
}

int b2s_local_read_fd(store_local *ls, int fd, const char *rel, size_t max,
                  uint8_t **out, size_t *len) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return b2s_local_errno(ls, errno, "fstat", rel);
  if ((uint64_t)st.st_size > max)
    return b2s_store_fail(B2S_E_LIMIT, "%s/%s: %lld bytes, over the bound %zu",
                      ls->dir, rel, (long long)st.st_size, max);
  size_t n = (size_t)st.st_size;
  uint8_t *b = malloc(n ? n : 1);
  if (!b)
    return b2s_store_fail(B2S_E_NOMEM, "out of memory (%zu bytes)", n);
  int rc = b2s_local_pread_all(fd, b, n, 0);
  if (rc) {
    free(b);
    return b2s_local_errno(ls, -rc, "read", rel);
  }
  *out = b;
  *len = n;
  return 0;
}

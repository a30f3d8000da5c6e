/* Leases on the local store (b2s_store.h): flock(2) on .l.NAME, a file
 * that holds the holder's text.  The kernel drops the lock when its
 * descriptor is closed, so a holder killed frees it at once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "store_local.h"

/* The holder's text the file holds, printable bytes only. */
static void read_holder(int fd, char *who, size_t cap) {
  ssize_t n = cap > 0 ? pread(fd, who, cap - 1, 0) : -1;
  if (n < 0)
    n = 0;
  for (ssize_t i = 0; i < n; i++)
    if (who[i] < 0x20 || who[i] > 0x7e)
      who[i] = '?';
  if (cap > 0)
    who[n] = '\0';
}

int b2s_local_lease_take(b2s_store *s, const char *name, const char *holder,
                     int ms, void **state, char *who, size_t cap) {
  (void)ms;
  store_local *ls = (store_local *)s;
  char rel[LOCAL_REL_MAX];
  b2s_local_rel(rel, ".l.", name);
  *state = NULL;
  int fd = openat(ls->dirfd, rel, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0)
    return b2s_local_errno(ls, errno, "open", rel);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    if (e == EWOULDBLOCK)
      read_holder(fd, who, cap);
    close(fd);
    if (e != EWOULDBLOCK)
      return b2s_local_errno(ls, e, "flock", rel);
    return b2s_store_fail(B2S_E_BUSY, "%s/%s is held by %s", ls->dir, rel,
                      cap && who[0] ? who : "another process");
  }
  size_t len = strlen(holder);
  int rc = ftruncate(fd, 0) != 0 ? -errno
                                 : b2s_local_pwrite_all(fd, holder, len, 0);
  if (rc < 0) {
    close(fd);
    return b2s_local_errno(ls, -rc, "write", rel);
  }
  int *keep = malloc(sizeof *keep);
  if (!keep) {
    close(fd);
    return b2s_store_fail(B2S_E_NOMEM, "out of memory");
  }
  *keep = fd;
  *state = keep;
  return 0;
}

int b2s_local_lease_renew(b2s_store *s, const char *name, const char *holder,
                      int ms, void *state) {
  (void)s, (void)name, (void)holder, (void)ms, (void)state;
  return 0;                       /* held while the descriptor is open */
}

void b2s_local_lease_drop(b2s_store *s, const char *name, const char *holder,
                      void *state) {
  (void)s, (void)name, (void)holder;
  int *fd = state;
  if (fd) {
    close(*fd);                   /* releases the flock */
    free(fd);
  }
}

/* See b2s_frame_lock.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2s_frame_lock.h"

/* Errors of a file system that offers no flock: NFS mounted with
 * nolock (ENOLCK), or NFS emulating it with record locks, which need a
 * descriptor open for writing (EBADF: a sparse frame's directory). */
static bool no_flock(int e) {
  return e == ENOLCK || e == EOPNOTSUPP || e == ENOTSUP || e == EBADF ||
         e == EINVAL || e == ENOSYS;
}

int b2s_lock_fd(int fd) {
  while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if (errno == EWOULDBLOCK)
      return B2S_E_LOCKED;
    if (no_flock(errno))
      return 0;
    if (errno != EINTR)
      return -errno;
  }
  return 0;
}

bool b2s_lock_held(int fd) {
  /* taking a lock this descriptor holds again is a no-op that succeeds */
  return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
}

int b2s_frame_lock(const char *path, int *fd) {
  *fd = -1;
  struct stat sb;
  if (stat(path, &sb) < 0)
    return -errno;
  /* a directory opens read-only; a file for writing where it can, which
   * NFS's emulation of flock needs */
  int f = S_ISDIR(sb.st_mode) ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                              : open(path, O_RDWR | O_CLOEXEC);
  if (f < 0 && !S_ISDIR(sb.st_mode) && (errno == EACCES || errno == EROFS))
    f = open(path, O_RDONLY | O_CLOEXEC);
  if (f < 0)
    return -errno;
  int rc = b2s_lock_fd(f);
  if (rc < 0) {
    close(f);
    return rc;
  }
  *fd = f;
  return 0;
}

/* One line of /proc/locks: "N: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INO ..."
 * (waiters have "->" before FLOCK and hold nothing). */
static bool holder_line(const char *line, pid_t *pid, unsigned *maj,
                        unsigned *min, unsigned long *ino) {
  char kind[16], mode[16], access[16];
  int p;
  if (sscanf(line, "%*d: %15s %15s %15s %d %x:%x:%lu", kind, mode, access, &p,
             maj, min, ino) != 7)
    return false;
  *pid = p;
  return strcmp(kind, "FLOCK") == 0 && strcmp(access, "WRITE") == 0 && p > 0;
}

pid_t b2s_lock_holder(const char *path) {
  struct stat sb;
  if (stat(path, &sb) < 0)
    return 0;
  FILE *f = fopen("/proc/locks", "re");
  if (f == NULL)
    return 0;
  /* the device of a lock is its superblock's, which stat reports
   * differently on some file systems (btrfs subvolumes, overlays): an
   * inode match alone counts when it is the only one */
  pid_t exact = 0, by_ino = 0;
  int n_ino = 0;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    pid_t pid;
    unsigned maj, min;
    unsigned long ino;
    if (!holder_line(line, &pid, &maj, &min, &ino) || ino != sb.st_ino)
      continue;
    if (maj == major(sb.st_dev) && min == minor(sb.st_dev))
      exact = pid;
    by_ino = pid;
    n_ino++;
  }
  fclose(f);
  return exact ? exact : n_ino == 1 ? by_ino : 0;
}

/* See dirlock.h.  The lock is flock(2) on a file the daemon creates in
 * each directory; the file holds the PID of the daemon that locked it last,
 * which is only read to name the holder: the lock alone decides.  The file
 * is never removed, so two daemons can never lock two different files of
 * the same name. */
#define _GNU_SOURCE
#include "dirlock.h"
#include "b2s_errors.h"
#include "b2s_frame_lock.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_NAME ".b2streamd.lock"

/* The PID written in the lock file, or 0. */
static long pid_in(int fd) {
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  return strtol(buf, NULL, 10);
}

static int lock_dir(const char *dir) {
  char path[B2S_CONFIG_PATH_MAX + sizeof LOCK_NAME + 1];
  snprintf(path, sizeof path, "%s/%s", dir, LOCK_NAME);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) {
    int e = errno;
    LOG_E("cannot create %s: %s", path, strerror(e));
    return -e;
  }
  int rc = b2s_lock_fd(fd);
  if (rc == B2S_E_LOCKED) {
    long pid = pid_in(fd);
    if (pid <= 0)
      pid = b2s_lock_holder(path);
    LOG_E("%s is in use by another b2streamd (PID %ld, lock file %s); one "
          "daemon per directory", dir, pid, path);
  } else if (rc < 0) {
    LOG_E("cannot lock %s: %s", path, b2s_strerror(rc));
  }
  char line[32];
  int n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
  if (rc == 0 && (ftruncate(fd, 0) < 0 || pwrite(fd, line, (size_t)n, 0) != n))
    LOG_W("cannot write the PID into %s: %s", path, strerror(errno));
  if (rc < 0)
    close(fd);
  return rc;   /* the descriptor stays open: it is the lock */
}

static bool same_dir(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

int b2sd_dirs_lock(const b2s_daemon_cfg *d) {
  int rc = lock_dir(d->run_dir);
  if (rc == 0 && !same_dir(d->run_dir, d->data_dir))
    rc = lock_dir(d->data_dir);
  return rc;
}

void b2sd_umask_private(void) {
  /* the unit is Type=notify; INVOCATION_ID would also be inherited by
   * shells of a terminal that runs as a user service */
  if (getenv("NOTIFY_SOCKET") != NULL)
    return;
  mode_t old = umask(0);
  umask(old | 027);
}

void b2sd_log_locked(const char *stream, const char *path) {
  pid_t pid = b2s_lock_holder(path);
  if (pid > 0)
    LOG_E("stream %s: %s is held by another writer (PID %d)", stream, path,
          (int)pid);
  else
    LOG_E("stream %s: %s is held by another writer", stream, path);
}

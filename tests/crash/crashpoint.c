/* Crash points for the crash test (tests/test_crash.c): an LD_PRELOAD
 * library that counts the calls a process makes that change files under a
 * path prefix, and SIGKILLs the whole process at the N-th one.
 *
 * Environment (read once, at load):
 *   B2S_CRASH_PREFIX  files whose path starts with it are counted (with a
 *                     final '/', the directory itself too); unset or empty:
 *                     the library does nothing
 *   B2S_CRASH_AT      N: the call to die at (1-based); 0 or unset: count only
 *   B2S_CRASH_MODE    before: die instead of making call N;
 *                     after:  make it, then die;
 *                     middle: N counts write calls only; write about half
 *                             of the bytes of the N-th, then die
 *   B2S_CRASH_COUNT   file rewritten after every counted call with
 *                     "calls K writes W\n" (the totals so far)
 *   B2S_CRASH_TRACE   file that gets one line per counted call (debugging)
 *
 * Counted calls: write, pwrite, pwrite64, writev, pwritev, pwritev64,
 * pwritev2, fsync, fdatasync, syncfs, sync_file_range, ftruncate,
 * ftruncate64, unlink, unlinkat, rename, renameat, renameat2.  Descriptors
 * are matched by the target of /proc/self/fd/N, so sockets, eventfds, pipes
 * and logs outside the prefix are never counted.  A counted call runs under
 * one lock, so "after N" means exactly calls 1..N happened.
 *
 * Owns nothing it hands out; its two files stay open until the process
 * ends. */
#define _GNU_SOURCE
/* Define the plain and the 64 symbols separately: with 64-bit file
 * offsets the headers would rename pwrite to pwrite64 and so on. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum mode { MODE_BEFORE, MODE_AFTER, MODE_MIDDLE };

static struct {
  char prefix[PATH_MAX];
  size_t prefix_len;
  long at;
  int mode;
  int count_fd, trace_fd;
  long calls, writes;           /* under lock */
  pthread_mutex_t lock;
} cp = {.count_fd = -1, .trace_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

/* The next definition of a symbol (libc's). */
#define REAL(name) real_##name
#define DECLARE_REAL(ret, name, ...)                                          \
  static ret (*real_##name)(__VA_ARGS__)
#define RESOLVE(name) (real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name))

DECLARE_REAL(ssize_t, write, int, const void *, size_t);
DECLARE_REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
DECLARE_REAL(ssize_t, pwrite64, int, const void *, size_t, off64_t);
DECLARE_REAL(ssize_t, writev, int, const struct iovec *, int);
DECLARE_REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t);
DECLARE_REAL(ssize_t, pwritev64, int, const struct iovec *, int, off64_t);
DECLARE_REAL(ssize_t, pwritev2, int, const struct iovec *, int, off_t, int);
DECLARE_REAL(int, fsync, int);
DECLARE_REAL(int, fdatasync, int);
DECLARE_REAL(int, syncfs, int);
DECLARE_REAL(int, sync_file_range, int, off64_t, off64_t, unsigned int);
DECLARE_REAL(int, ftruncate, int, off_t);
DECLARE_REAL(int, ftruncate64, int, off64_t);
DECLARE_REAL(int, unlink, const char *);
DECLARE_REAL(int, unlinkat, int, const char *, int);
DECLARE_REAL(int, rename, const char *, const char *);
DECLARE_REAL(int, renameat, int, const char *, int, const char *);
DECLARE_REAL(int, renameat2, int, const char *, int, const char *, unsigned);

static void resolve_all(void) {
  RESOLVE(write);
  RESOLVE(pwrite);
  RESOLVE(pwrite64);
  RESOLVE(writev);
  RESOLVE(pwritev);
  RESOLVE(pwritev64);
  RESOLVE(pwritev2);
  RESOLVE(fsync);
  RESOLVE(fdatasync);
  RESOLVE(syncfs);
  RESOLVE(sync_file_range);
  RESOLVE(ftruncate);
  RESOLVE(ftruncate64);
  RESOLVE(unlink);
  RESOLVE(unlinkat);
  RESOLVE(rename);
  RESOLVE(renameat);
  RESOLVE(renameat2);
}

static int open_out(const char *var, int flags) {
  const char *path = getenv(var);
  if (path == NULL || *path == '\0')
    return -1;
  return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | flags, 0644);
}

__attribute__((constructor)) static void crashpoint_init(void) {
  resolve_all();
  const char *prefix = getenv("B2S_CRASH_PREFIX");
  if (prefix == NULL || *prefix == '\0' ||
      strlen(prefix) >= sizeof cp.prefix)
    return;
  strcpy(cp.prefix, prefix);
  cp.prefix_len = strlen(prefix);
  const char *at = getenv("B2S_CRASH_AT");
  cp.at = at ? strtol(at, NULL, 10) : 0;
  const char *mode = getenv("B2S_CRASH_MODE");
  cp.mode = mode == NULL             ? MODE_BEFORE
            : !strcmp(mode, "after")  ? MODE_AFTER
            : !strcmp(mode, "middle") ? MODE_MIDDLE
                                      : MODE_BEFORE;
  cp.count_fd = open_out("B2S_CRASH_COUNT", 0);
  cp.trace_fd = open_out("B2S_CRASH_TRACE", O_APPEND);
}

/* ---- which calls count ------------------------------------------------ */

/* Under the prefix, or the prefix itself without its final '/' (the
 * directory of the frames, whose fsync publishes new names). */
static bool path_counts(const char *path) {
  size_t n = cp.prefix_len;
  if (n == 0)
    return false;
  if (strncmp(path, cp.prefix, n) == 0)
    return true;
  return cp.prefix[n - 1] == '/' && strncmp(path, cp.prefix, n - 1) == 0 &&
         path[n - 1] == '\0';
}

/* The path of dirfd joined with name (AT_FDCWD: the working directory). */
static bool at_path(int dirfd, const char *name, char *out, size_t cap) {
  if (name == NULL)
    return false;
  if (name[0] == '/')
    return (size_t)snprintf(out, cap, "%s", name) < cap;
  char dir[PATH_MAX];
  if (dirfd == AT_FDCWD) {
    if (getcwd(dir, sizeof dir) == NULL)
      return false;
  } else {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, dir, sizeof dir - 1);
    if (n < 0)
      return false;
    dir[n] = '\0';
  }
  return (size_t)snprintf(out, cap, "%s/%s", dir, name) < cap;
}

static bool fd_counts(int fd, char *path, size_t cap) {
  if (cp.prefix_len == 0 || fd < 0)
    return false;
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, cap - 1);
  if (n < 0)
    return false;
  path[n] = '\0';
  return path_counts(path);
}

static bool name_counts(int dirfd, const char *name, char *path, size_t cap) {
  return cp.prefix_len > 0 && at_path(dirfd, name, path, cap) &&
         path_counts(path);
}

/* ---- counting and dying --------------------------------------------------- */

static void out_line(int fd, const char *fmt, ...) {
  if (fd < 0)
    return;
  char line[PATH_MAX + 128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 1)
    n = (int)sizeof line - 1;
  /* the counts only grow, so each line covers the one before */
  if (fd == cp.count_fd)
    (void)REAL(pwrite)(fd, line, (size_t)n, 0);
  else
    (void)REAL(write)(fd, line, (size_t)n);
}

static _Noreturn void die(void) {
  /* SIGKILL goes to every thread: nothing after this point runs */
  kill(getpid(), SIGKILL);
  for (;;)
    pause();
}

/* A counted call begins (lock held until call_end).  Returns true when the
 * call must be cut in the middle; dies here in mode before. */
static bool call_begin(const char *what, const char *path, size_t len,
                       bool is_write) {
  pthread_mutex_lock(&cp.lock);
  cp.calls++;
  cp.writes += is_write;
  out_line(cp.count_fd, "calls %ld writes %ld\n", cp.calls, cp.writes);
  out_line(cp.trace_fd, "%ld %ld %s %s %zu\n", cp.calls, cp.writes, what,
           path, len);
  if (cp.at <= 0)
    return false;
  if (cp.mode == MODE_MIDDLE)
    return is_write && cp.writes == cp.at;
  if (cp.mode == MODE_BEFORE && cp.calls == cp.at)
    die();
  return false;
}

static void call_end(void) {
  bool now = cp.at > 0 && cp.mode == MODE_AFTER && cp.calls == cp.at;
  if (now)
    die();
  pthread_mutex_unlock(&cp.lock);
}

/* Bytes of a cut write: about half, whole blocks for O_DIRECT (which
 * refuses anything else). */
static size_t cut_len(int fd, size_t len) {
  size_t part = len / 2;
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && (fl & O_DIRECT))
    part &= ~(size_t)4095;
  return part;
}

/* ---- writes --------------------------------------------------------------- */

#define WRAP_WRITE(call, cut_call)                                             \
  do {                                                                         \
    char path[PATH_MAX];                                                       \
    if (!fd_counts(fd, path, sizeof path))                                     \
      return call;                                                             \
    if (call_begin(__func__, path, len, true)) {                               \
      size_t part = cut_len(fd, len);                                          \
      if (part > 0)                                                            \
        (void)(cut_call);                                                      \
      die();                                                                   \
    }                                                                          \
    ssize_t rc = call;                                                         \
    int saved = errno;                                                         \
    call_end();                                                                \
    errno = saved;                                                             \
    return rc;                                                                 \
  } while (0)

ssize_t write(int fd, const void *buf, size_t len) {
  WRAP_WRITE(REAL(write)(fd, buf, len), REAL(write)(fd, buf, part));
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
  WRAP_WRITE(REAL(pwrite)(fd, buf, len, off),
             REAL(pwrite)(fd, buf, part, off));
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off) {
  WRAP_WRITE(REAL(pwrite64)(fd, buf, len, off),
             REAL(pwrite64)(fd, buf, part, off));
}

static size_t iov_len(const struct iovec *iov, int n) {
  size_t len = 0;
  for (int i = 0; i < n; i++)
    len += iov[i].iov_len;
  return len;
}

/* The first `part` bytes of iov, at off (-1: the file position). */
static void write_iov_part(int fd, const struct iovec *iov, int n,
                           size_t part, off64_t off) {
  for (int i = 0; i < n && part > 0; i++) {
    size_t k = iov[i].iov_len < part ? iov[i].iov_len : part;
    ssize_t w = off < 0 ? REAL(write)(fd, iov[i].iov_base, k)
                        : REAL(pwrite64)(fd, iov[i].iov_base, k, off);
    if (w <= 0)
      return;
    part -= (size_t)w;
    off = off < 0 ? off : off + w;
  }
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
  size_t len = iov_len(iov, n);
  WRAP_WRITE(REAL(writev)(fd, iov, n),
             (write_iov_part(fd, iov, n, part, -1), 0));
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
  size_t len = iov_len(iov, n);
  WRAP_WRITE(REAL(pwritev)(fd, iov, n, off),
             (write_iov_part(fd, iov, n, part, off), 0));
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off64_t off) {
  size_t len = iov_len(iov, n);
  WRAP_WRITE(REAL(pwritev64)(fd, iov, n, off),
             (write_iov_part(fd, iov, n, part, off), 0));
}

ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off,
                 int flags) {
  size_t len = iov_len(iov, n);
  WRAP_WRITE(REAL(pwritev2)(fd, iov, n, off, flags),
             (write_iov_part(fd, iov, n, part, off), 0));
}

/* ---- everything else ---------------------------------------------------------- */

#define WRAP_OTHER(counts, path, call)                                         \
  do {                                                                         \
    if (!(counts))                                                             \
      return call;                                                             \
    call_begin(__func__, path, 0, false);                                      \
    int rc = call;                                                             \
    int saved = errno;                                                         \
    call_end();                                                                \
    errno = saved;                                                             \
    return rc;                                                                 \
  } while (0)

#define WRAP_FD(call)                                                          \
  do {                                                                         \
    char path[PATH_MAX];                                                       \
    WRAP_OTHER(fd_counts(fd, path, sizeof path), path, call);                  \
  } while (0)

int fsync(int fd) { WRAP_FD(REAL(fsync)(fd)); }
int fdatasync(int fd) { WRAP_FD(REAL(fdatasync)(fd)); }
int syncfs(int fd) { WRAP_FD(REAL(syncfs)(fd)); }
int ftruncate(int fd, off_t len) { WRAP_FD(REAL(ftruncate)(fd, len)); }
int ftruncate64(int fd, off64_t len) { WRAP_FD(REAL(ftruncate64)(fd, len)); }

int sync_file_range(int fd, off64_t off, off64_t len, unsigned int flags) {
  WRAP_FD(REAL(sync_file_range)(fd, off, len, flags));
}

int unlink(const char *name) {
  char path[PATH_MAX];
  WRAP_OTHER(name_counts(AT_FDCWD, name, path, sizeof path), path,
             REAL(unlink)(name));
}

int unlinkat(int dirfd, const char *name, int flags) {
  char path[PATH_MAX];
  WRAP_OTHER(name_counts(dirfd, name, path, sizeof path), path,
             REAL(unlinkat)(dirfd, name, flags));
}

/* A rename counts when either name is under the prefix. */
static bool rename_counts(int odir, const char *old, int ndir,
                          const char *new, char *path, size_t cap) {
  return name_counts(odir, old, path, cap) || name_counts(ndir, new, path, cap);
}

int rename(const char *old, const char *new) {
  char path[PATH_MAX];
  WRAP_OTHER(rename_counts(AT_FDCWD, old, AT_FDCWD, new, path, sizeof path),
             path, REAL(rename)(old, new));
}

int renameat(int odir, const char *old, int ndir, const char *new) {
  char path[PATH_MAX];
  WRAP_OTHER(rename_counts(odir, old, ndir, new, path, sizeof path), path,
             REAL(renameat)(odir, old, ndir, new));
}

int renameat2(int odir, const char *old, int ndir, const char *new,
              unsigned flags) {
  char path[PATH_MAX];
  WRAP_OTHER(rename_counts(odir, old, ndir, new, path, sizeof path), path,
             REAL(renameat2)(odir, old, ndir, new, flags));
}

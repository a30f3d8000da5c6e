/* See endpoint.h. */
#define _GNU_SOURCE
#include "endpoint.h"
#include "b2s_errors.h"
#include "log.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

enum ep_state { EP_FREE, EP_STALE, EP_LIVE, EP_NOT_SOCKET, EP_ERROR };

/* The socket files this daemon bound, by path, device and inode. */
static struct {
  char path[B2S_CONFIG_PATH_MAX];
  dev_t dev;
  ino_t ino;
} bound[B2S_CONFIG_MAX_LISTEN];
static int nbound;

static const char *ipc_path(const char *ep) {
  return strncmp(ep, "ipc://", 6) == 0 ? ep + 6 : NULL;
}

/* Whether someone accepts connections on the socket at path: ECONNREFUSED
 * means nobody listens (what a dead daemon leaves). */
static enum ep_state probe(const char *path, int *err) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  size_t len = strlen(path);
  if (len >= sizeof a.sun_path) {
    *err = ENAMETOOLONG;
    return EP_ERROR;
  }
  memcpy(a.sun_path, path, len + 1);
  /* the socket type of a zmq ipc:// endpoint */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    return EP_ERROR;
  }
  int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
  *err = rc < 0 ? errno : 0;
  close(fd);
  if (rc == 0 || *err == EAGAIN)   /* EAGAIN: a full backlog, still alive */
    return EP_LIVE;
  return *err == ECONNREFUSED ? EP_STALE : EP_ERROR;
}

static enum ep_state state_of(const char *path, int *err) {
  struct stat sb;
  *err = 0;
  if (lstat(path, &sb) < 0) {
    *err = errno;
    return errno == ENOENT ? EP_FREE : EP_ERROR;
  }
  return S_ISSOCK(sb.st_mode) ? probe(path, err) : EP_NOT_SOCKET;
}

/* Log why path cannot be bound; the level is the caller's. */
static void explain(int level, const char *ep, enum ep_state st, int err) {
  if (st == EP_NOT_SOCKET)
    b2sd_log(level, "endpoint %s: %s exists and is not a socket; refusing "
             "to remove it", ep, ep + 6);
  else if (st == EP_LIVE)
    b2sd_log(level, "endpoint %s: socket in use: another process answers "
             "on %s", ep, ep + 6);
  else
    b2sd_log(level, "endpoint %s: cannot check %s: %s", ep, ep + 6,
             strerror(err));
}

int b2sd_endpoint_claim(const char *ep) {
  const char *path = ipc_path(ep);
  if (path == NULL)
    return 0;
  int err;
  enum ep_state st = state_of(path, &err);
  if (st == EP_FREE)
    return 0;
  if (st == EP_STALE) {
    LOG_I("endpoint %s: removing the stale socket %s", ep, path);
    return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
  }
  explain(B2S_LOG_ERROR, ep, st, err);
  return st == EP_ERROR ? -err : B2S_E_BUSY;
}

void b2sd_endpoint_bound(const char *ep) {
  const char *path = ipc_path(ep);
  struct stat sb;
  if (path == NULL || nbound == B2S_CONFIG_MAX_LISTEN || lstat(path, &sb) < 0)
    return;
  snprintf(bound[nbound].path, sizeof bound[nbound].path, "%s", path);
  bound[nbound].dev = sb.st_dev;
  bound[nbound].ino = sb.st_ino;
  nbound++;
}

void b2sd_endpoint_release(const char *ep) {
  const char *path = ipc_path(ep);
  for (int i = 0; path != NULL && i < nbound; i++) {
    struct stat sb;
    if (strcmp(bound[i].path, path) != 0)
      continue;
    if (lstat(path, &sb) == 0 && S_ISSOCK(sb.st_mode) &&
        sb.st_dev == bound[i].dev && sb.st_ino == bound[i].ino)
      unlink(path);
    bound[i].path[0] = '\0';
  }
}

int b2sd_endpoints_check(const b2s_daemon_cfg *d, bool starting) {
  int rc = 0;
  for (int i = 0; i < d->nlisten; i++) {
    const char *path = ipc_path(d->listen[i]);
    int err;
    enum ep_state st = path ? state_of(path, &err) : EP_FREE;
    if (st == EP_LIVE && !starting) {
      explain(B2S_LOG_WARNING, d->listen[i], st, err);
    } else if (st == EP_LIVE || st == EP_NOT_SOCKET ||
               (st == EP_ERROR && err != ENOENT && err != ENOTDIR)) {
      explain(B2S_LOG_ERROR, d->listen[i], st, err);
      rc = B2S_E_CONFIG;
    }
  }
  return rc;
}

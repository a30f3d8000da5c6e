/* Service-manager notifications (sd_notify protocol); see notify.h.
 *
 * Each call resolves $NOTIFY_SOCKET afresh and sends from a socket of its
 * own, as libsystemd does: nothing is cached, so there is nothing to lock,
 * nothing to go stale across fork() and nothing to close at exit.  A ping
 * costs three system calls, and pings come a few times a minute. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "notify.h"

/* The socket address from $NOTIFY_SOCKET: 1 and the address when set, 0
 * when unset or empty, a negative errno when unusable. */
static int notify_target(struct sockaddr_un *sa, socklen_t *salen) {
  const char *e = getenv("NOTIFY_SOCKET");
  if (e == NULL || e[0] == '\0')
    return 0;
  if (e[0] != '/' && e[0] != '@')
    return -EAFNOSUPPORT;   /* relative paths, vsock:..., anything else */
  size_t n = strlen(e);
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  if (e[0] == '/') {
    if (n >= sizeof sa->sun_path)        /* room for the NUL */
      return -ENAMETOOLONG;
    memcpy(sa->sun_path, e, n + 1);
    *salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    return 1;
  }
  if (n == 1)                            /* "@": no name at all */
    return -EINVAL;
  if (n > sizeof sa->sun_path)           /* '@' becomes the leading NUL */
    return -ENAMETOOLONG;
  /* An abstract name is exactly its bytes: no terminating NUL counted. */
  sa->sun_path[0] = '\0';
  memcpy(sa->sun_path + 1, e + 1, n - 1);
  *salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
  return 1;
}

static int send_datagram(const struct sockaddr_un *sa, socklen_t salen,
                         const char *msg, size_t len) {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  ssize_t n;
  do
    n = sendto(fd, msg, len, MSG_NOSIGNAL, (const struct sockaddr *)sa,
               salen);
  while (n < 0 && errno == EINTR);
  int rc = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
  close(fd);
  return rc;
}

int b2s_notify(const char *state) {
  if (state == NULL || state[0] == '\0')
    return -EINVAL;
  struct sockaddr_un sa;
  socklen_t salen;
  int rc = notify_target(&sa, &salen);
  if (rc <= 0)
    return rc;
  size_t len = strlen(state);
  if (len > B2S_NOTIFY_MSG_MAX)
    return -EMSGSIZE;
  return send_datagram(&sa, salen, state, len);
}

/* Length of `s` (len bytes, possibly cut short) without a trailing
 * incomplete UTF-8 sequence; systemd ignores a STATUS that is not UTF-8. */
static size_t utf8_complete(const char *s, size_t len) {
  size_t i = len;
  while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
    i--;                                 /* back over continuation bytes */
  if (i == 0)
    return len;
  unsigned char lead = (unsigned char)s[i - 1];
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return len - (i - 1) < need ? i - 1 : len;
}

/* Send `prefix` followed by the formatted status text, which is made one
 * line (a newline would smuggle in a new assignment) and cut to fit. */
__attribute__((format(printf, 2, 0)))
static int notify_vstatus(const char *prefix, const char *fmt, va_list ap) {
  struct sockaddr_un sa;
  socklen_t salen;
  int rc = notify_target(&sa, &salen);
  if (rc <= 0)
    return rc;
  char msg[B2S_NOTIFY_MSG_MAX + 1];
  size_t off = strlen(prefix);
  memcpy(msg, prefix, off);
  size_t room = sizeof msg - off;
  int n = vsnprintf(msg + off, room, fmt, ap);
  if (n < 0)
    return -EINVAL;
  size_t len = strlen(msg + off);        /* stops at a %c NUL too */
  if ((size_t)n >= room)
    len = utf8_complete(msg + off, len);
  for (size_t i = 0; i < len; i++)
    if (msg[off + i] == '\n' || msg[off + i] == '\r')
      msg[off + i] = ' ';
  return send_datagram(&sa, salen, msg, off + len);
}

__attribute__((format(printf, 2, 3)))
static int notify_status_with(const char *prefix, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = notify_vstatus(prefix, fmt, ap);
  va_end(ap);
  return rc;
}

int b2s_notify_ready(const char *status) {
  if (status == NULL)
    return b2s_notify("READY=1");
  return notify_status_with("READY=1\nSTATUS=", "%s", status);
}

int b2s_notify_status(const char *fmt, ...) {
  if (fmt == NULL)
    return -EINVAL;
  va_list ap;
  va_start(ap, fmt);
  int rc = notify_vstatus("STATUS=", fmt, ap);
  va_end(ap);
  return rc;
}

int b2s_notify_stopping(void) {
  return b2s_notify("STOPPING=1");
}

int b2s_notify_reloading(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
    return -errno;
  uint64_t usec = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
  char msg[64];
  snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, usec);
  return b2s_notify(msg);
}

int b2s_notify_watchdog(void) {
  return b2s_notify("WATCHDOG=1");
}

int b2s_notify_extend_timeout(uint64_t usec) {
  char msg[48];
  snprintf(msg, sizeof msg, "EXTEND_TIMEOUT_USEC=%" PRIu64, usec);
  return b2s_notify(msg);
}

/* Plain decimal digits only: strtoull would take signs and blanks. */
static int parse_u64(const char *s, uint64_t *out) {
  uint64_t v = 0;
  if (*s == '\0')
    return -EINVAL;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -EINVAL;
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10)
      return -ERANGE;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

int b2s_notify_watchdog_usec(uint64_t *usec) {
  if (usec == NULL)
    return -EINVAL;
  *usec = 0;
  const char *e = getenv("WATCHDOG_USEC");
  if (e == NULL)
    return 0;
  uint64_t v;
  int rc = parse_u64(e, &v);
  if (rc < 0)
    return rc;
  if (v == 0)
    return -EINVAL;
  const char *p = getenv("WATCHDOG_PID");
  if (p != NULL) {
    uint64_t pid;
    rc = parse_u64(p, &pid);
    if (rc < 0)
      return rc;
    if (pid == 0)
      return -EINVAL;
    if (pid != (uint64_t)getpid())
      return 0;                          /* meant for another process */
  }
  *usec = v;
  return 1;
}

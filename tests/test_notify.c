/* Service-manager notifications (daemon/notify): the exact datagram each
 * helper sends to a path socket and to an abstract one, silence when
 * $NOTIFY_SOCKET is unset or empty, errors for unusable addresses and
 * oversized messages, status sanitising and UTF-8-safe truncation,
 * concurrent senders, and the $WATCHDOG_USEC / $WATCHDOG_PID rules.
 *
 * The receiving sockets live in a fresh mkdtemp directory and under an
 * abstract name carrying our pid; the group teardown removes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "notify.h"
#include "ts.h"

static char dir[64];             /* mkdtemp directory */
static char path_env[128];       /* its "notify" socket */
static char abstract_env[108];   /* "@b2s-notify-test-<pid>" */
static int path_fd = -1;
static int abstract_fd = -1;

/* ---- helpers ------------------------------------------------------------- */

static int bind_dgram(const struct sockaddr_un *sa, socklen_t len) {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (bind(fd, (const struct sockaddr *)sa, len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* One pending datagram, NUL-terminated in buf; -1 when none is waiting
 * (the sends are synchronous, so anything sent is already queued). */
static ssize_t recv_one(int fd, char *buf, size_t cap) {
  ssize_t n = recv(fd, buf, cap - 1, MSG_DONTWAIT | MSG_TRUNC);
  if (n < 0)
    return -1;
  assert_true((size_t)n < cap);   /* never truncated */
  buf[n] = '\0';
  return n;
}

static void assert_nothing_pending(int fd) {
  char buf[16];
  errno = 0;
  assert_int_equal(recv(fd, buf, sizeof buf, MSG_DONTWAIT), -1);
  assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
}

static void assert_received(int fd, const char *want) {
  char buf[8192];
  ssize_t n = recv_one(fd, buf, sizeof buf);
  assert_int_equal(n, (ssize_t)strlen(want));
  assert_memory_equal(buf, want, (size_t)n);
  assert_nothing_pending(fd);
}

static uint64_t mono_usec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int drain(int fd) {
  char buf[8192];
  int n = 0;
  while (recv_one(fd, buf, sizeof buf) >= 0)
    n++;
  return n;
}

/* ---- fixtures ------------------------------------------------------------ */

static int group_setup(void **state) {
  (void)state;
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  snprintf(dir, sizeof dir, "/tmp/b2s-notify-XXXXXX");
  if (mkdtemp(dir) == NULL)
    return -1;
  snprintf(path_env, sizeof path_env, "%s/notify", dir);

  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, path_env, strlen(path_env) + 1);
  path_fd = bind_dgram(&sa, sizeof sa);

  snprintf(abstract_env, sizeof abstract_env, "@b2s-notify-test-%ld",
           (long)getpid());
  size_t n = strlen(abstract_env);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path + 1, abstract_env + 1, n - 1);
  abstract_fd = bind_dgram(
      &sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
  return path_fd >= 0 && abstract_fd >= 0 ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  if (path_fd >= 0)
    close(path_fd);
  if (abstract_fd >= 0)
    close(abstract_fd);
  unlink(path_env);
  char other[128];
  snprintf(other, sizeof other, "%s/plain", dir);
  unlink(other);
  snprintf(other, sizeof other, "%s/stream", dir);
  unlink(other);
  rmdir(dir);
  return 0;
}

/* Each test starts with no variables set and empty queues. */
static int test_setup(void **state) {
  (void)state;
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  drain(path_fd);
  drain(abstract_fd);
  return 0;
}

/* ---- exact bytes --------------------------------------------------------- */

static void check_helpers(int fd) {
  assert_int_equal(b2s_notify("READY=1\nSTATUS=x"), 0);
  assert_received(fd, "READY=1\nSTATUS=x");

  assert_int_equal(b2s_notify_ready(NULL), 0);
  assert_received(fd, "READY=1");

  assert_int_equal(b2s_notify_ready("serving 2 streams"), 0);
  assert_received(fd, "READY=1\nSTATUS=serving 2 streams");

  assert_int_equal(b2s_notify_status("serving %d streams, %s", 3, "ok"), 0);
  assert_received(fd, "STATUS=serving 3 streams, ok");

  assert_int_equal(b2s_notify_status("%s", ""), 0);
  assert_received(fd, "STATUS=");

  assert_int_equal(b2s_notify_stopping(), 0);
  assert_received(fd, "STOPPING=1");

  assert_int_equal(b2s_notify_watchdog(), 0);
  assert_received(fd, "WATCHDOG=1");

  assert_int_equal(b2s_notify_extend_timeout(90000000u), 0);
  assert_received(fd, "EXTEND_TIMEOUT_USEC=90000000");
  assert_int_equal(b2s_notify_extend_timeout(UINT64_MAX), 0);
  assert_received(fd, "EXTEND_TIMEOUT_USEC=18446744073709551615");

  /* RELOADING carries CLOCK_MONOTONIC in microseconds, taken in the call. */
  uint64_t before = mono_usec();
  assert_int_equal(b2s_notify_reloading(), 0);
  uint64_t after = mono_usec();
  char buf[256];
  ssize_t n = recv_one(fd, buf, sizeof buf);
  assert_true(n > 0);
  static const char head[] = "RELOADING=1\nMONOTONIC_USEC=";
  assert_memory_equal(buf, head, sizeof head - 1);
  const char *digits = buf + sizeof head - 1;
  assert_true(*digits >= '1' && *digits <= '9');
  char *end;
  uint64_t stamp = strtoull(digits, &end, 10);
  assert_int_equal(*end, '\0');
  assert_true(stamp >= before && stamp <= after);
  assert_nothing_pending(fd);
}

static void test_path_socket(void **state) {
  (void)state;
  assert_int_equal(setenv("NOTIFY_SOCKET", path_env, 1), 0);
  check_helpers(path_fd);
  assert_nothing_pending(abstract_fd);
}

static void test_abstract_socket(void **state) {
  (void)state;
  assert_int_equal(setenv("NOTIFY_SOCKET", abstract_env, 1), 0);
  check_helpers(abstract_fd);
  assert_nothing_pending(path_fd);
}

/* ---- no service manager -------------------------------------------------- */

static void send_everything_expect(int want) {
  uint64_t usec = 7;
  assert_int_equal(b2s_notify("READY=1"), want);
  assert_int_equal(b2s_notify_ready("up"), want);
  assert_int_equal(b2s_notify_ready(NULL), want);
  assert_int_equal(b2s_notify_status("n=%d", 1), want);
  assert_int_equal(b2s_notify_stopping(), want);
  assert_int_equal(b2s_notify_reloading(), want);
  assert_int_equal(b2s_notify_watchdog(), want);
  assert_int_equal(b2s_notify_extend_timeout(1), want);
  assert_int_equal(b2s_notify_watchdog_usec(&usec), 0);
  assert_int_equal(usec, 0);
}

static void test_unset_sends_nothing(void **state) {
  (void)state;
  send_everything_expect(0);
  assert_nothing_pending(path_fd);
  assert_nothing_pending(abstract_fd);

  /* NOTIFY_SOCKET= (set but empty) is how a unit clears it. */
  assert_int_equal(setenv("NOTIFY_SOCKET", "", 1), 0);
  send_everything_expect(0);
  assert_nothing_pending(path_fd);
  assert_nothing_pending(abstract_fd);
}

/* ---- errors -------------------------------------------------------------- */

static void test_bad_addresses(void **state) {
  (void)state;
  char buf[256];

  static const char *const unsupported[] = {
      "run/notify", "notify", "vsock:2:1234", " /run/notify"};
  for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
    assert_int_equal(setenv("NOTIFY_SOCKET", unsupported[i], 1), 0);
    assert_int_equal(b2s_notify("READY=1"), -EAFNOSUPPORT);
    assert_int_equal(b2s_notify_status("x"), -EAFNOSUPPORT);
    assert_int_equal(b2s_notify_watchdog(), -EAFNOSUPPORT);
  }

  assert_int_equal(setenv("NOTIFY_SOCKET", "@", 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -EINVAL);

  /* sun_path is 108 bytes: a path needs its NUL, an abstract name not. */
  struct sockaddr_un sa;
  size_t max = sizeof sa.sun_path;
  memset(buf, 'a', sizeof buf);
  buf[0] = '/';
  buf[max] = '\0';                       /* 108 chars: one too many */
  assert_int_equal(setenv("NOTIFY_SOCKET", buf, 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -ENAMETOOLONG);
  buf[max - 1] = '\0';                   /* 107 chars fit: no such file */
  assert_int_equal(setenv("NOTIFY_SOCKET", buf, 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -ENOENT);
  buf[0] = '@';
  buf[max - 1] = 'a';
  buf[max] = 'a';
  buf[max + 1] = '\0';                   /* '@' + 108 chars: too long */
  assert_int_equal(setenv("NOTIFY_SOCKET", buf, 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -ENAMETOOLONG);
  buf[max] = '\0';                       /* '@' + 107 chars: no listener */
  assert_int_equal(setenv("NOTIFY_SOCKET", buf, 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -ECONNREFUSED);

  /* Missing socket, a directory, a regular file, a stream socket. */
  snprintf(buf, sizeof buf, "%s/missing", dir);
  assert_int_equal(setenv("NOTIFY_SOCKET", buf, 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -ENOENT);
  snprintf(buf, sizeof buf, "%s/missing/notify", dir);
  assert_int_equal(setenv("NOTIFY_SOCKET", buf, 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -ENOENT);
  assert_int_equal(setenv("NOTIFY_SOCKET", dir, 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -ECONNREFUSED);

  snprintf(buf, sizeof buf, "%s/plain", dir);
  int f = open(buf, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  assert_true(f >= 0);
  close(f);
  assert_int_equal(setenv("NOTIFY_SOCKET", buf, 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -ECONNREFUSED);

  snprintf(buf, sizeof buf, "%s/stream", dir);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(s >= 0);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, buf, strlen(buf) + 1);
  assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(listen(s, 1), 0);
  assert_int_equal(setenv("NOTIFY_SOCKET", buf, 1), 0);
  assert_int_equal(b2s_notify("READY=1"), -EPROTOTYPE);
  close(s);

  assert_nothing_pending(path_fd);
  assert_nothing_pending(abstract_fd);
}

static void test_bad_arguments(void **state) {
  (void)state;
  /* Checked before the environment: wrong whether or not it is set. */
  assert_int_equal(b2s_notify(NULL), -EINVAL);
  assert_int_equal(b2s_notify(""), -EINVAL);
  int (*status)(const char *, ...) = b2s_notify_status; /* no format check */
  assert_int_equal(status(NULL), -EINVAL);
  assert_int_equal(b2s_notify_watchdog_usec(NULL), -EINVAL);

  assert_int_equal(setenv("NOTIFY_SOCKET", path_env, 1), 0);
  assert_int_equal(b2s_notify(NULL), -EINVAL);
  assert_int_equal(b2s_notify(""), -EINVAL);
  assert_int_equal(status(NULL), -EINVAL);

  /* A raw message must fit the manager's buffer as a whole. */
  static char big[B2S_NOTIFY_MSG_MAX + 2];
  memset(big, 'x', sizeof big - 1);
  big[B2S_NOTIFY_MSG_MAX + 1] = '\0';
  assert_int_equal(b2s_notify(big), -EMSGSIZE);
  assert_nothing_pending(path_fd);
  memcpy(big, "STATUS=", 7);
  big[B2S_NOTIFY_MSG_MAX] = '\0';        /* exactly the limit: sent */
  assert_int_equal(b2s_notify(big), 0);
  assert_received(path_fd, big);
}

/* ---- status text --------------------------------------------------------- */

static void test_status_one_line(void **state) {
  (void)state;
  assert_int_equal(setenv("NOTIFY_SOCKET", path_env, 1), 0);
  /* A newline in the text must not become a READY=1 of its own. */
  assert_int_equal(b2s_notify_status("disk slow\nREADY=1\r\n%s", "x"), 0);
  assert_received(path_fd, "STATUS=disk slow READY=1  x");
  assert_int_equal(b2s_notify_ready("a\nMAINPID=1"), 0);
  assert_received(path_fd, "READY=1\nSTATUS=a MAINPID=1");
}

/* Status text of `unit` repeated, after `lead` ASCII bytes, sent and
 * received: returns the received length and checks the repeated part. */
static size_t send_long_status(const char *unit, size_t lead) {
  static char text[3 * B2S_NOTIFY_MSG_MAX];
  size_t u = strlen(unit), o = 0;
  memset(text, 'x', lead);
  o = lead;
  while (o + u < sizeof text - 1) {
    memcpy(text + o, unit, u);
    o += u;
  }
  text[o] = '\0';
  assert_int_equal(b2s_notify_status("%s", text), 0);

  static char got[2 * B2S_NOTIFY_MSG_MAX];
  ssize_t n = recv_one(path_fd, got, sizeof got);
  assert_true(n > 0);
  assert_true((size_t)n <= B2S_NOTIFY_MSG_MAX);
  assert_memory_equal(got, "STATUS=", 7);
  size_t body = (size_t)n - 7 - lead;
  assert_int_equal(body % u, 0);         /* only whole characters */
  assert_memory_equal(got + 7, text, (size_t)n - 7);
  return (size_t)n;
}

static void test_status_truncation(void **state) {
  (void)state;
  assert_int_equal(setenv("NOTIFY_SOCKET", path_env, 1), 0);
  /* ASCII fills the datagram to the byte. */
  assert_int_equal(send_long_status("a", 0), B2S_NOTIFY_MSG_MAX);
  /* 4089 bytes of room: "é" (2 bytes) leaves a lone lead byte to drop. */
  assert_int_equal(send_long_status("\xc3\xa9", 0), B2S_NOTIFY_MSG_MAX - 1);
  /* "€" (3 bytes) after one ASCII byte: a lead and one continuation byte
   * would be left over; both go. */
  assert_int_equal(send_long_status("\xe2\x82\xac", 1),
                   B2S_NOTIFY_MSG_MAX - 2);
  /* U+1F600 (4 bytes): 4089 = 4 * 1022 + 1. */
  assert_int_equal(send_long_status("\xf0\x9f\x98\x80", 0),
                   B2S_NOTIFY_MSG_MAX - 1);
  /* Three-byte characters that end exactly at the limit stay whole. */
  assert_int_equal(send_long_status("\xe2\x82\xac", 0), B2S_NOTIFY_MSG_MAX);
  /* The same texts when they fit are sent untouched. */
  assert_int_equal(b2s_notify_status("%s", "caf\xc3\xa9 \xe2\x82\xac"), 0);
  assert_received(path_fd, "STATUS=caf\xc3\xa9 \xe2\x82\xac");
}

/* ---- concurrency --------------------------------------------------------- */

#define SENDERS 4
#define PER_SENDER 500

static void *sender(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int i = 0; i < PER_SENDER; i++)
    if (b2s_notify_status("sender %d message %d", id, i) != 0)
      return (void *)1;
  return NULL;
}

/* Blocking senders on several threads: every datagram arrives once and
 * whole.  The queue holds few datagrams, so senders wait on this reader. */
static void test_concurrent_senders(void **state) {
  (void)state;
  assert_int_equal(setenv("NOTIFY_SOCKET", path_env, 1), 0);
  static unsigned char seen[SENDERS][PER_SENDER];
  memset(seen, 0, sizeof seen);
  pthread_t th[SENDERS];
  for (int t = 0; t < SENDERS; t++)
    assert_int_equal(
        pthread_create(&th[t], NULL, sender, (void *)(intptr_t)t), 0);

  struct timeval tv = {.tv_sec = 10};
  assert_int_equal(
      setsockopt(path_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  char buf[256];
  for (int k = 0; k < SENDERS * PER_SENDER; k++) {
    ssize_t n = recv(path_fd, buf, sizeof buf - 1, 0);
    assert_true(n > 0);
    buf[n] = '\0';
    int id, i, used = 0;
    assert_int_equal(
        sscanf(buf, "STATUS=sender %d message %d%n", &id, &i, &used), 2);
    assert_int_equal(used, n);
    assert_true(id >= 0 && id < SENDERS && i >= 0 && i < PER_SENDER);
    assert_int_equal(seen[id][i], 0);
    seen[id][i] = 1;
  }
  for (int t = 0; t < SENDERS; t++) {
    void *ret;
    assert_int_equal(pthread_join(th[t], &ret), 0);
    assert_null(ret);
  }
  struct timeval none = {0};
  setsockopt(path_fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  assert_nothing_pending(path_fd);
}

/* ---- watchdog ------------------------------------------------------------ */

static void expect_watchdog(const char *usec_env, const char *pid_env,
                            int want_rc, uint64_t want_usec) {
  if (usec_env)
    assert_int_equal(setenv("WATCHDOG_USEC", usec_env, 1), 0);
  else
    unsetenv("WATCHDOG_USEC");
  if (pid_env)
    assert_int_equal(setenv("WATCHDOG_PID", pid_env, 1), 0);
  else
    unsetenv("WATCHDOG_PID");
  uint64_t usec = 12345;
  assert_int_equal(b2s_notify_watchdog_usec(&usec), want_rc);
  assert_int_equal(usec, want_usec);
}

static void test_watchdog_usec(void **state) {
  (void)state;
  char me[32], other[32];
  snprintf(me, sizeof me, "%ld", (long)getpid());
  snprintf(other, sizeof other, "%ld", (long)getpid() + 1);

  expect_watchdog(NULL, NULL, 0, 0);
  expect_watchdog(NULL, me, 0, 0);
  expect_watchdog("30000000", NULL, 1, 30000000u);
  expect_watchdog("1", NULL, 1, 1);
  expect_watchdog("18446744073709551615", NULL, 1, UINT64_MAX);
  expect_watchdog("30000000", me, 1, 30000000u);

  /* Inherited from a parent: not ours to ping. */
  expect_watchdog("30000000", other, 0, 0);
  expect_watchdog("30000000", "1", getpid() == 1 ? 1 : 0,
                  getpid() == 1 ? 30000000u : 0);

  /* Malformed values. */
  expect_watchdog("0", NULL, -EINVAL, 0);
  expect_watchdog("", NULL, -EINVAL, 0);
  expect_watchdog("abc", NULL, -EINVAL, 0);
  expect_watchdog("-5", NULL, -EINVAL, 0);
  expect_watchdog(" 5", NULL, -EINVAL, 0);
  expect_watchdog("5 ", NULL, -EINVAL, 0);
  expect_watchdog("+5", NULL, -EINVAL, 0);
  expect_watchdog("30s", NULL, -EINVAL, 0);
  expect_watchdog("18446744073709551616", NULL, -ERANGE, 0);
  expect_watchdog("99999999999999999999999", NULL, -ERANGE, 0);
  expect_watchdog("30000000", "", -EINVAL, 0);
  expect_watchdog("30000000", "0", -EINVAL, 0);
  expect_watchdog("30000000", "12ab", -EINVAL, 0);
  expect_watchdog("30000000", "-1", -EINVAL, 0);

  /* Parsing sends nothing, even with a socket configured. */
  assert_int_equal(setenv("NOTIFY_SOCKET", path_env, 1), 0);
  expect_watchdog("30000000", me, 1, 30000000u);
  assert_nothing_pending(path_fd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_path_socket, test_setup),
      cmocka_unit_test_setup(test_abstract_socket, test_setup),
      cmocka_unit_test_setup(test_unset_sends_nothing, test_setup),
      cmocka_unit_test_setup(test_bad_addresses, test_setup),
      cmocka_unit_test_setup(test_bad_arguments, test_setup),
      cmocka_unit_test_setup(test_status_one_line, test_setup),
      cmocka_unit_test_setup(test_status_truncation, test_setup),
      cmocka_unit_test_setup(test_concurrent_senders, test_setup),
      cmocka_unit_test_setup(test_watchdog_usec, test_setup),
  };
  return ts_run_named("notify", tests, group_setup, group_teardown);
}

/* Resources of the real daemon stay bounded whatever clients do: few file
 * descriptors, a message far larger than any buffer, producers killed
 * without a word, a client that never reads its replies at shutdown.  In
 * each case the daemon stays up (or stops in time), refuses clearly, and
 * keeps what it acknowledged. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "b2s_frame.h"
#include "b2s_wire.h"
#include "ts.h"

static const char config[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 4MiB\n"
    "memory_limit: 64MiB\n"
    "log_level: info\n"
    "shm: {slots: 16, slot_size: 1MiB}\n"
    "streams:\n"
    "  w:\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  big:\n"
    "    codec: lz4\n"
    "    queue_depth: 4\n"
    "    durability: {ack: write, group_count: 2, group_interval_ms: 5}\n"
    "templates:\n"
    "  tm:\n"
    "    codec: lz4\n"
    "    durability: {ack: write, group_count: 1, group_interval_ms: 5}\n";

/* ---- helpers ---------------------------------------------------------------- */

/* The next message within ms; false when none came. */
static bool recv_within(void *s, rx *r, int ms) {
  zmq_pollitem_t it = {.socket = s, .events = ZMQ_POLLIN};
  if (zmq_poll(&it, 1, ms) != 1)
    return false;
  cli_recv(s, r);
  return true;
}

static bool daemon_alive(env *e) {
  int st;
  return waitpid(e->pid, &st, WNOHANG) == 0;
}

/* A daemon figure from STATS ("daemon" object). */
static double daemon_stat(void *s, const char *name) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_STATS);
  m.tag = 11;
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_STATS_REPLY, &r);
  char key[80];
  snprintf(key, sizeof key, "\"%s\":", name);
  char *d = strstr((char *)r.payload, key);
  if (!d)
    fail_msg("STATS has no %s: %s", name, (char *)r.payload);
  double v = strtod(d + strlen(key), NULL);
  rx_free(&r);
  return v;
}

/* Wait until the daemon's STATS figure `name` equals want. */
static void wait_stat(void *s, const char *name, double want) {
  double v = -1;
  for (int i = 0; i < WAIT_MS / 50; i++) {
    if ((v = daemon_stat(s, name)) == want)
      return;
    usleep(50000);
  }
  fail_msg("STATS %s is %g, not %g", name, v, want);
}

/* A /proc/PID/status figure in kB (VmHWM, VmRSS). */
static long proc_kb(pid_t pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  long v = -1;
  size_t fl = strlen(field);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, fl) == 0 && line[fl] == ':')
      v = strtol(line + fl + 1, NULL, 10);
  fclose(f);
  return v;
}

static void *consumer(env *e) {
  void *s = cli_connect(e);
  cli_hello(s, B2S_WIRE_HELLO_CONSUMER);
  return s;
}

/* Send buffers [from, n) of p and wait until all are settled at level. */
static void prod_finish(prod *p, int from, int level) {
  prod_send(p, from, p->n);
  while (p->acked[level] < (uint64_t)p->n) {
    rx r;
    cli_recv(p->s, &r);
    prod_handle(p, &r);
    rx_free(&r);
  }
}

/* ---- shutdown with a client that never reads ------------------------------- */

/* A consumer that never reads: it floods the daemon with PINGs until the
 * daemon's queue to it is full, then asks for a chunk, whose reply the
 * daemon holds for a retry.  SIGTERM: the daemon abandons the replies
 * after a short grace and exits within a few seconds, with every
 * acknowledged buffer in the frame. */
static void test_shutdown_with_a_client_not_reading(void **state) {
  (void)state;
  env e;
  env_init_config(&e, config);
  env_start(&e);
  void *ps = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(ps, "w", "", &o), 0);
  prod p = prod_opened(ps, &o, 200, 20000, 5);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);

  void *c = cli_connect(&e);
  int one = 1;
  zmq_setsockopt(c, ZMQ_RCVHWM, &one, sizeof one);
  zmq_setsockopt(c, ZMQ_RCVBUF, &one, sizeof one);
  cli_hello(c, B2S_WIRE_HELLO_CONSUMER);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_PING);
  for (int i = 0; i < 160000; i++) {
    m.ping.nonce = (uint64_t)i;
    cli_send(c, &m, NULL, 0);
  }
  b2s_wire_init(&m, B2S_WIRE_READ);
  m.tag = 77;
  m.read.stream = b2s_wire_cstr("w");
  cli_send(c, &m, NULL, 0);
  usleep(500000);                  /* the daemon's queue to c fills */
  uint64_t t0 = ts_now_ms();
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  uint64_t took = ts_now_ms() - t0;
  printf("SIGTERM with a client not reading: stopped in %llu ms\n",
         (unsigned long long)took);
  assert_true(took < 5000);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  check_frame(path, &p, p.n);
  zmq_close(c);
  zmq_close(ps);
  env_fini(&e);
}

/* ---- a message far larger than any buffer ---------------------------------- */

/* Send one DATA whose payload is `bytes` of zero pages (the sender's memory
 * stays untouched). */
static void send_huge(void *s, uint32_t handle, size_t bytes) {
  void *big = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
                   MAP_NORESERVE, -1, 0);
  assert_true(big != MAP_FAILED);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_DATA);
  m.data.buffer_id = 0;
  m.data.handle = handle;
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode(&m, hdr, sizeof hdr);
  assert_true(n > 0);
  assert_int_equal(zmq_send(s, hdr, (size_t)n, ZMQ_SNDMORE), n);
  zmq_msg_t pm;
  assert_int_equal(zmq_msg_init_data(&pm, big, bytes, NULL, NULL), 0);
  assert_true(zmq_msg_send(&pm, s, 0) >= 0);
  /* the bytes are the socket's until its I/O thread wrote them: unmapped
   * at the end of the test, when the socket is closed */
}

/* A 1 GiB message to a daemon whose memory_limit is 64 MiB: the daemon's
 * peak RSS stays far below it, the sender is disconnected (no reply; its
 * session ends), the daemon stays up and another producer's buffers are
 * written. */
static void test_huge_message(void **state) {
  (void)state;
  size_t huge = (size_t)1 << 30;
  env e;
  env_init_config(&e, config);
  env_start(&e);
  void *ps = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(ps, "w", "", &o), 0);
  prod p = prod_opened(ps, &o, 100, 5000, 1);
  prod_send(&p, 0, 50);
  long hwm0 = proc_kb(e.pid, "VmHWM");

  void *h = cli_producer(&e);
  assert_int_equal(cli_open(h, "big", "", &o), 0);
  send_huge(h, o.opened.handle, huge);
  /* the sender gets no reply to it: it is disconnected */
  rx r;
  bool replied = recv_within(h, &r, 3000);
  assert_true(daemon_alive(&e));
  long hwm = proc_kb(e.pid, "VmHWM");
  printf("daemon VmHWM: %ld kB before, %ld kB after a %zu MiB message "
         "(memory_limit 64 MiB)\n", hwm0, hwm, huge >> 20);
  if (replied)
    fail_msg("a reply (%s) to a message beyond any limit",
             b2s_wire_type_name(r.m.type));
  assert_true(hwm < 160 * 1024);

  prod_finish(&p, 50, B2S_WIRE_LEVEL_WRITTEN);  /* the other goes on */
  cli_close(&p);
  /* the sender's session ended with its connection */
  wait_stat(ps, "sessions", 1);
  assert_true(daemon_stat(ps, "sessions_reclaimed") >= 1);
  zmq_close(h);
  zmq_close(ps);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  check_frame(path, &p, p.n);
  env_fini(&e);
}

/* ---- producers killed without a word --------------------------------------- */

/* Child: a producer through the real client library (shared memory when
 * shm), opened on stream w; says so on fd `ready` and waits to be
 * killed. */
static void child_producer(env *e, bool shm, int ready) {
  b2sc_session *s;
  b2sc_producer *p;
  if (b2sc_connect(e->sock, shm ? "shm-victim" : "zmq-victim", &s) < 0 ||
      b2sc_producer_open(s, "w", NULL, &p) < 0)
    _exit(2);
  if (shm && b2sc_shm_attach(p, 16, 1u << 20) < 0)
    _exit(3);
  uint8_t b[3000];
  buf_fill(b, sizeof b, 0);
  if (!shm && b2sc_send(p, b, sizeof b, WAIT_MS) < 0)
    _exit(4);
  if (write(ready, "x", 1) != 1)
    _exit(5);
  for (;;)
    pause();
}

static pid_t start_victim(env *e, bool shm) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    child_producer(e, shm, fds[1]);
  }
  close(fds[1]);
  char c;
  assert_int_equal(read(fds[0], &c, 1), 1);
  close(fds[0]);
  return pid;
}

/* Two producers SIGKILLed (one on shared memory holding a 16 MiB segment,
 * one on ZeroMQ): their sessions end, the segment goes and its memory
 * room comes back, STATS counts both, and a new shared-memory producer
 * gets a full segment again. */
static void test_killed_producers_reclaimed(void **state) {
  (void)state;
  env e;
  env_init_config(&e, config);
  env_start(&e);
  void *s = consumer(&e);
  pid_t a = start_victim(&e, true);
  pid_t b = start_victim(&e, false);
  assert_int_equal(daemon_stat(s, "sessions"), 3);
  assert_true(daemon_stat(s, "shm_bytes") >= 16 << 20);
  /* the session keeps them: the pids are not reaped, as a process in
   * another pid namespace (or a zombie) would look alive */
  kill(a, SIGKILL);
  kill(b, SIGKILL);
  uint64_t t0 = ts_now_ms();
  wait_stat(s, "sessions", 1);
  wait_stat(s, "shm_bytes", 0);
  printf("killed producers' sessions reclaimed in %llu ms\n",
         (unsigned long long)(ts_now_ms() - t0));
  assert_int_equal(daemon_stat(s, "sessions_reclaimed"), 2);
  int st;
  assert_int_equal(waitpid(a, &st, 0), a);
  assert_int_equal(waitpid(b, &st, 0), b);

  b2sc_session *cs;
  b2sc_producer *p;
  assert_int_equal(b2sc_connect(e.sock, "next", &cs), 0);
  assert_int_equal(b2sc_producer_open(cs, "w", NULL, &p), 0);
  assert_int_equal(b2sc_shm_attach(p, 16, 1u << 20), 0);
  b2sc_producer_stats ps;
  assert_int_equal(b2sc_producer_stats_get(p, &ps), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(cs);
  zmq_close(s);
  env_down(&e);
}

/* ---- few file descriptors ------------------------------------------------------ */

/* A daemon with 256 descriptors and max_streams 30, and more clients and
 * streams than that: it stays up, refuses the extra streams and sessions
 * with B2S_E_LIMIT (counted in STATS) or, when descriptors run short,
 * closes extra connections at once; a producer that was there keeps being
 * written and acknowledged, and a client is welcome again once the others
 * are gone. */
static void test_few_descriptors(void **state) {
  (void)state;
  enum { NCLI = 160, NSTREAMS = 120 };
  env e;
  char yaml[sizeof config + 32];
  snprintf(yaml, sizeof yaml, "max_streams: 30\n%s", config);
  env_init_config(&e, yaml);
  e.nofile_limit = 256;
  env_start(&e);
  void *ps = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(ps, "w", "", &o), 0);
  prod p = prod_opened(ps, &o, 200, 3000, 7);
  prod_send(&p, 0, 20);

  /* streams from a template until refused */
  void *os = cli_producer(&e);
  int opened = 0, refused = 0;
  for (int i = 0; i < NSTREAMS; i++) {
    char name[32];
    snprintf(name, sizeof name, "t%03d", i);
    b2s_wire_msg to;
    int rc = cli_open(os, name, "tm", &to);
    if (rc == 0) {
      opened++;
    } else {
      assert_int_equal(rc, B2S_E_LIMIT);
      refused++;
    }
  }
  printf("streams from a template: %d opened, %d refused\n", opened, refused);
  assert_int_equal(opened, 30);
  assert_int_equal(refused, NSTREAMS - 30);
  assert_true(daemon_alive(&e));

  /* clients one after the other until the connections are refused */
  static void *cli[NCLI];
  int welcomed = 0, limited = 0, silent = 0, ncli = 0;
  while (ncli < NCLI && silent < 5) {
    void *c = cli[ncli++] = cli_connect(&e);
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_HELLO);
    m.tag = 1;
    m.hello.name = b2s_wire_cstr("many");
    cli_send(c, &m, NULL, 0);
    rx r;
    if (!recv_within(c, &r, 300)) {
      silent++;                    /* connection closed at once */
      continue;
    }
    if (r.m.type == B2S_WIRE_WELCOME) {
      welcomed++;
    } else {
      assert_int_equal(r.m.type, B2S_WIRE_ERROR);
      assert_int_equal(r.m.error.code, B2S_E_LIMIT);
      assert_true(r.m.flags & B2S_WIRE_ERROR_CLOSED_SESSION);
      limited++;
    }
    rx_free(&r);
  }
  printf("clients: %d welcomed, %d refused with B2S_E_LIMIT, %d not "
         "accepted\n", welcomed, limited, silent);
  assert_true(daemon_alive(&e));
  assert_true(welcomed > 0 && limited > 0 && silent > 0);
  printf("daemon: %g connections refused by the system limit, %g "
         "descriptors of %g in use\n", daemon_stat(ps, "accept_failed"),
         daemon_stat(ps, "fd_open"), daemon_stat(ps, "fd_limit"));

  /* the producer that was there goes on */
  prod_finish(&p, 20, B2S_WIRE_LEVEL_WRITTEN);
  assert_true(daemon_stat(ps, "limit_refused") >= limited + refused);
  for (int i = 0; i < ncli; i++)
    zmq_close(cli[i]);
  /* room again once they are gone */
  wait_stat(ps, "sessions", 2);
  void *again = cli_producer(&e);
  zmq_close(again);
  zmq_close(os);
  cli_close(&p);
  zmq_close(ps);
  assert_true(daemon_alive(&e));
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  check_frame(path, &p, p.n);
  env_fini(&e);
}

/* ---- tcp:// connections that never finish their handshake ------------------- */

/* A port nothing listens on now (the kernel's pick for port 0). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

/* 200 tcp:// connections that never say a byte, to a daemon with 128
 * descriptors: it stays up, closes those beyond its reserve at once and
 * the others when their handshake times out; a producer on ipc:// goes on
 * meanwhile. */
static void test_tcp_silent_connections(void **state) {
  (void)state;
  enum { NRAW = 200 };
  int port = free_port();
  char yaml[sizeof config + 64];
  snprintf(yaml, sizeof yaml,
           "listen: [ipc://d.sock, \"tcp://127.0.0.1:%d\"]\n%s", port,
           config + strlen("listen: [ipc://d.sock]\n"));
  env e;
  env_init_config(&e, yaml);
  e.nofile_limit = 192;
  env_start(&e);
  void *ps = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(ps, "w", "", &o), 0);
  prod p = prod_opened(ps, &o, 100, 3000, 3);
  prod_send(&p, 0, 20);
  static int raw[NRAW];
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < NRAW; i++) {
    raw[i] = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(raw[i] >= 0);
    assert_int_equal(connect(raw[i], (struct sockaddr *)&a, sizeof a), 0);
  }
  uint64_t t0 = ts_now_ms();
  prod_finish(&p, 20, B2S_WIRE_LEVEL_WRITTEN);  /* the producer goes on */
  assert_true(daemon_alive(&e));
  /* every silent connection ends: at once beyond the reserve, the others
   * at the handshake timeout */
  int closed = 0;
  uint64_t last = 0;
  for (int i = 0; i < NRAW; i++) {
    char b[256];
    ssize_t n;
    do {                           /* the daemon's greeting, then the end */
      struct pollfd pf = {.fd = raw[i], .events = POLLIN};
      int left = (int)(t0 + 15000 - ts_now_ms());
      assert_int_equal(poll(&pf, 1, left > 0 ? left : 0), 1);
      n = read(raw[i], b, sizeof b);
    } while (n > 0);
    closed++;
    last = ts_now_ms() - t0;
    close(raw[i]);
  }
  double refused = daemon_stat(ps, "accept_failed");
  printf("%d silent tcp:// connections: %g closed at once (descriptor "
         "reserve), all closed within %llu ms\n", closed, refused,
         (unsigned long long)last);
  assert_true(refused > 0);
  assert_true(last >= 8000);       /* the accepted ones had their 10 s */
  cli_close(&p);
  void *again = cli_producer(&e);  /* room again */
  zmq_close(again);
  zmq_close(ps);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  check_frame(path, &p, p.n);
  env_fini(&e);
}

int main(void) {
  if (harness_init())
    return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_shutdown_with_a_client_not_reading),
    cmocka_unit_test(test_huge_message),
    cmocka_unit_test(test_killed_producers_reclaimed),
    cmocka_unit_test(test_few_descriptors),
    cmocka_unit_test(test_tcp_silent_connections),
  };
  int rc = ts_run_tests(tests, NULL, NULL);
  harness_fini();
  return rc;
}

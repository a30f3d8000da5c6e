/* See daemon_harness.h. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_chunk.h"
#include "b2s_errors.h"
#include "b2s_frame.h"
#include "daemon_harness.h"
#include "ts.h"

const char *daemon_path;
void *zctx;


/* ---- daemon process -------------------------------------------------------- */

const char *base_config =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 1MiB\n"
    "log_level: debug\n"
    "streams:\n"
    "  w:\n"
    "    typesize: 4\n"
    "    durability: {ack: write, group_count: 8, group_interval_ms: 5}\n"
    "  f:\n"
    "    codec: lz4\n"
    "    io: buffered\n"
    "    durability: {ack: fsync, group_count: 4, group_interval_ms: 5}\n"
    "  r:\n"
    "    format: sparse\n"
    "    durability: {ack: receipt, group_count: 4, group_interval_ms: 5}\n"
    "  dn:\n"
    "    codec: zstd\n"
    "    clevel: 9\n"
    "    queue_depth: 1\n"
    "    backpressure: drop-newest\n"
    "  do:\n"
    "    codec: zstd\n"
    "    clevel: 9\n"
    "    queue_depth: 1\n"
    "    backpressure: drop-oldest\n"
    "  bl:\n"
    "    queue_depth: 2\n"
    "    backpressure: block\n"
    "  bq:\n"
    "    queue_depth: 12\n"
    "    backpressure: block\n"
    "templates:\n"
    "  tm:\n"
    "    codec: lz4\n";

void env_init(env *e) {
  env_init_config(e, base_config);
}

void env_init_config(env *e, const char *yaml) {
  env_init_config_at(e, "/tmp/b2sd-test-XXXXXX", yaml);
}

void env_init_config_at(env *e, const char *tmpl, const char *yaml) {
  snprintf(e->dir, sizeof e->dir, "%s", tmpl);
  assert_non_null(mkdtemp(e->dir));
  snprintf(e->config, sizeof e->config, "%s/b2streamd.yaml", e->dir);
  snprintf(e->sock, sizeof e->sock, "ipc://%s/run/d.sock", e->dir);
  snprintf(e->log, sizeof e->log, "%s/daemon.log", e->dir);
  FILE *f = fopen(e->config, "w");
  assert_non_null(f);
  fputs(yaml, f);
  fclose(f);
  e->pid = 0;
  e->fsize_limit = 0;
  e->nofile_limit = 0;
}

/* Daemons started, so that those a failed test left running are killed at
 * the end. */
static pid_t started[256];
static size_t nstarted;

void env_start(env *e) {
  char sock[400];
  /* a socket left by a killed daemon would pass for the new one's */
  snprintf(sock, sizeof sock, "%s/run/d.sock", e->dir);
  unlink(sock);
  env_start_as_is(e);
}

void env_start_as_is(env *e) {
  /* Started means "listening on" logged for our socket: the daemon sets
   * the socket file's mode and group after bind, before it logs that. */
  char listening[400];
  snprintf(listening, sizeof listening, "listening on %s", e->sock);
  int listening_before = env_log_count(e, listening);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(e->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);                 /* not the test's pipe: the runner would */
    dup2(fd, 2);                 /* wait for a daemon a failed test left */
    if (e->fsize_limit > 0) {    /* a full disk, as far as the daemon sees */
      /* the soft limit only: a test may give room back (prlimit) */
      struct rlimit rl = {(rlim_t)e->fsize_limit, RLIM_INFINITY};
      getrlimit(RLIMIT_FSIZE, &rl);
      rl.rlim_cur = (rlim_t)e->fsize_limit;
      setrlimit(RLIMIT_FSIZE, &rl);
    }
    if (e->nofile_limit > 0) {   /* few descriptors, as a tight unit has */
      struct rlimit rl = {(rlim_t)e->nofile_limit, (rlim_t)e->nofile_limit};
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    execl(daemon_path, daemon_path, "--config", e->config, (char *)NULL);
    _exit(127);
  }
  e->pid = pid;
  if (nstarted < sizeof started / sizeof started[0])
    started[nstarted++] = pid;
  for (int i = 0; i < WAIT_MS / 10; i++) {
    if (env_log_count(e, listening) > listening_before)
      return;
    int st;
    assert_int_equal(waitpid(pid, &st, WNOHANG), 0);
    usleep(10000);
  }
  fail_msg("daemon did not start");
}

/* Signal the daemon and return its exit status (-1 on a signal death). */
/* A daemon that exits with a failure says why in its log, which env_fini
 * removes: show its end with the failure. */
static void log_tail(const env *e, int rc) {
  fprintf(stderr, "daemon exited with %d; the end of %s:\n", rc, e->log);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "tail -n 120 '%s' >&2", e->log);
  if (system(cmd) != 0)
    fprintf(stderr, "(no log)\n");
}

int env_stop(env *e, int sig) {
  kill(e->pid, sig);
  for (int i = 0; i < WAIT_MS / 10 * 3; i++) {
    int st;
    if (waitpid(e->pid, &st, WNOHANG) == e->pid) {
      e->pid = 0;
      int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      if (rc != 0)
        log_tail(e, rc);
      return rc;
    }
    usleep(10000);
  }
  kill(e->pid, SIGKILL);
  fail_msg("daemon did not stop");
  return -2;
}

void env_fini(env *e) {
  if (e->pid > 0)
    env_stop(e, SIGKILL);
  if (ts_rmtree(e->dir) != 0)
    fprintf(stderr, "cleanup of %s failed: %s\n", e->dir, strerror(errno));
}

void env_up(env *e, const char *yaml) {
  env_init_config(e, yaml);
  env_start(e);
}

void env_down(env *e) {
  assert_int_equal(env_stop(e, SIGTERM), 0);
  env_fini(e);
}

void env_write_config(env *e, const char *yaml) {
  char tmp[320];
  snprintf(tmp, sizeof tmp, "%s.new", e->config);
  FILE *f = fopen(tmp, "w");
  assert_non_null(f);
  fputs(yaml, f);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(rename(tmp, e->config), 0);   /* never seen half written */
}

int env_log_count(env *e, const char *text) {
  FILE *f = fopen(e->log, "r");
  if (!f)
    return 0;
  int n = 0;
  char line[2048];
  while (fgets(line, sizeof line, f))
    n += strstr(line, text) != NULL;
  fclose(f);
  return n;
}

void env_log_wait(env *e, const char *text, int n) {
  for (int i = 0; i < WAIT_MS / 10; i++) {
    if (env_log_count(e, text) >= n)
      return;
    usleep(10000);
  }
  fail_msg("the daemon did not log '%s' %d times", text, n);
}

void frame_path(env *e, const char *stream, char *out, size_t n) {
  snprintf(out, n, "%s/data/%s.b2frame", e->dir, stream);
}

/* ---- raw client ------------------------------------------------------------- */


void *cli_connect(env *e) {
  void *s = zmq_socket(zctx, ZMQ_DEALER);
  int linger = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
  assert_int_equal(zmq_connect(s, e->sock), 0);
  return s;
}

void cli_send(void *s, const b2s_wire_msg *m, const void *p,
                     size_t plen) {
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode(m, hdr, sizeof hdr);
  assert_true(n > 0);
  assert_int_equal(zmq_send(s, hdr, (size_t)n, p ? ZMQ_SNDMORE : 0), n);
  if (p)
    assert_int_equal(zmq_send(s, p, plen, 0), (int)plen);
}

void rx_free(rx *r) {
  free(r->payload);
  r->payload = NULL;
}

/* Next message (fails the test after WAIT_MS). */
void cli_recv(void *s, rx *r) {
  zmq_pollitem_t it = {.socket = s, .events = ZMQ_POLLIN};
  assert_int_equal(zmq_poll(&it, 1, WAIT_MS), 1);
  int n = zmq_recv(s, r->hdr, sizeof r->hdr, 0);
  assert_true(n >= 16 && n <= (int)sizeof r->hdr);
  assert_int_equal(b2s_wire_decode(r->hdr, (size_t)n, &r->m), 0);
  r->payload = NULL;
  r->plen = 0;
  int more;
  size_t ml = sizeof more;
  zmq_getsockopt(s, ZMQ_RCVMORE, &more, &ml);
  if (more) {
    zmq_msg_t p;
    zmq_msg_init(&p);
    assert_true(zmq_msg_recv(&p, s, 0) >= 0);
    r->plen = zmq_msg_size(&p);
    r->payload = malloc(r->plen + 1);
    memcpy(r->payload, zmq_msg_data(&p), r->plen);
    r->payload[r->plen] = 0;
    zmq_msg_close(&p);
  }
  assert_int_equal(b2s_wire_check_payload(&r->m, r->plen, SIZE_MAX), 0);
}

/* Receive until a message of `type` arrives; others are skipped. */
void cli_expect(void *s, int type, rx *r) {
  for (;;) {
    cli_recv(s, r);
    if (r->m.type == type)
      return;
    if (r->m.type == B2S_WIRE_ERROR)
      fail_msg("ERROR %d while waiting for %s", r->m.error.code,
               b2s_wire_type_name(type));
    rx_free(r);
  }
}

void cli_hello(void *s, uint16_t flags) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.flags = flags;
  m.tag = 1;
  m.hello.pid = (uint32_t)getpid();
  m.hello.name = b2s_wire_cstr("test");
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_WELCOME, &r);
  assert_int_equal(r.m.tag, 1);
  assert_int_equal(r.m.welcome.version_min, 1);
}

/* OPEN; returns the OPENED message, or the ERROR code in *err. */
int cli_open(void *s, const char *stream, const char *tmpl,
                    b2s_wire_msg *opened) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_OPEN);
  m.tag = 2;
  m.open.stream = b2s_wire_cstr(stream);
  m.open.tmpl = b2s_wire_cstr(tmpl);
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_recv(s, &r);
  assert_int_equal(r.m.tag, 2);
  if (r.m.type == B2S_WIRE_ERROR)
    return r.m.error.code;
  assert_int_equal(r.m.type, B2S_WIRE_OPENED);
  *opened = r.m;
  return 0;
}

/* ---- data ------------------------------------------------------------------ */

size_t buf_len(int i, size_t base) {
  return base + (size_t)((i * 7919) % 1000);
}

void buf_fill(uint8_t *b, size_t len, int i) {
  uint32_t x = (uint32_t)i * 2654435761u + 1;
  for (size_t k = 0; k < len; k++) {
    if (k % 64 == 0)
      x = x * 1103515245u + 12345u;
    b[k] = (uint8_t)((x >> 16) + (k % 64 < 48 ? 0 : k));
  }
}

void *cli_producer(env *e) {
  void *s = cli_connect(e);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER);
  return s;
}

prod prod_opened(void *s, const b2s_wire_msg *o, int n, size_t base, int seed) {
  return (prod){.s = s, .handle = o->opened.handle,
                .credits = o->opened.credits, .n = n, .base = base,
                .seed = seed};
}

void prod_handle(prod *p, rx *r) {
  switch (r->m.type) {
  case B2S_WIRE_ACK:
    assert_int_equal(r->m.ack.handle, p->handle);
    p->credits += r->m.ack.credits;
    if (r->m.ack.level == B2S_WIRE_LEVEL_RECEIVED && r->m.ack.credits == 0)
      p->bare_acks++;
    assert_true(r->m.ack.upto >= p->acked[r->m.ack.level]);
    p->acked[r->m.ack.level] = r->m.ack.upto;
    p->ack_dropped = r->m.ack.dropped;
    assert_int_equal(r->m.ack.dropped, p->ndropped);
    break;
  case B2S_WIRE_DROPPED:
    assert_true(r->m.dropped.buffer_id < (uint64_t)p->n);
    assert_false(p->dropped[r->m.dropped.buffer_id]);
    p->dropped[r->m.dropped.buffer_id] = 1;
    p->ndropped++;
    p->drop_reason = r->m.dropped.reason;
    break;
  case B2S_WIRE_ERROR:
    fail_msg("ERROR %d (%s) about type %u id %u index %llu, flags 0x%x",
             r->m.error.code, b2s_strerror(r->m.error.code),
             r->m.error.ref_type, r->m.error.ref_id,
             (unsigned long long)r->m.error.ref_index, r->m.flags);
    break;
  default:
    break;
  }
}

void prod_send(prod *p, int from, int to) {
  uint8_t *b = malloc(p->base + 1000);
  assert_true(to <= 256);
  for (int i = from; i < to; i++) {
    while (p->credits == 0) {
      rx r;
      cli_recv(p->s, &r);
      prod_handle(p, &r);
      rx_free(&r);
    }
    size_t len = buf_len(p->seed + i, p->base);
    buf_fill(b, len, p->seed + i);
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_DATA);
    m.data.buffer_id = (uint64_t)i;
    m.data.handle = p->handle;
    cli_send(p->s, &m, b, len);
    p->credits--;
  }
  free(b);
}

void prod_run(prod *p, int level) {
  prod_send(p, 0, p->n);
  while (p->acked[level] < (uint64_t)p->n) {
    rx r;
    cli_recv(p->s, &r);
    prod_handle(p, &r);
    rx_free(&r);
  }
}

void cli_close(prod *p) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_CLOSE);
  m.tag = 4;
  m.close.handle = p->handle;
  cli_send(p->s, &m, NULL, 0);
  for (;;) {
    rx r;
    cli_recv(p->s, &r);
    if (r.m.type == B2S_WIRE_CLOSED) {
      assert_int_equal(r.m.tag, 4);
      assert_int_equal(r.m.closed.upto, (uint64_t)p->n);
      assert_int_equal(r.m.closed.dropped, p->ndropped);
      return;
    }
    prod_handle(p, &r);
    rx_free(&r);
  }
}

/* The frame holds exactly the buffers [seed, seed + n) not dropped, in
 * order, and every chunk decodes. */
void check_frame(const char *path, const prod *p, int64_t expect_min) {
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  int64_t nch = b2s_frame_nchunks(f);
  uint8_t *want = malloc(p->base + 1000), *got = malloc(p->base + 1000);
  int64_t k = 0;
  int64_t nbytes_total = 0;
  for (int i = 0; i < p->n && k < nch; i++) {
    if (p->dropped[i])
      continue;
    size_t len = buf_len(p->seed + i, p->base);
    buf_fill(want, len, p->seed + i);
    int32_t cb = 0, nb = 0;
    assert_int_equal(b2s_frame_chunk_sizes(f, k, &cb, &nb), 0);
    uint8_t *chunk = malloc((size_t)cb);
    assert_int_equal(b2s_frame_chunk_read(f, k, chunk, (size_t)cb), cb);
    b2s_chunk_info info;
    assert_int_equal(b2s_chunk_info_get(chunk, (size_t)cb, &info), 0);
    assert_int_equal(info.nbytes, (int32_t)len);
    free(chunk);
    assert_int_equal(nb, (int32_t)len);
    assert_int_equal(b2s_frame_chunk_decompress(f, k, NULL, got, len),
                     (int)len);
    assert_memory_equal(got, want, len);
    nbytes_total += (int64_t)len;
    k++;
  }
  assert_int_equal(k, nch);     /* nothing extra */
  assert_true(nch >= expect_min);
  assert_int_equal(b2s_frame_header_get(f)->nbytes, nbytes_total);
  free(want);
  free(got);
  b2s_frame_free(f);
}

uint64_t count_kept(const prod *p) {
  return (uint64_t)p->n - p->ndropped;
}

int harness_init(void) {
  daemon_path = getenv("B2S_DAEMON");
  if (!daemon_path) {
    fprintf(stderr, "B2S_DAEMON is not set\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  zctx = zmq_ctx_new();
  return zctx ? 0 : 1;
}

void harness_fini(void) {
  for (size_t i = 0; i < nstarted; i++) {
    int st;
    if (waitpid(started[i], &st, WNOHANG) == 0) {   /* still running */
      kill(started[i], SIGKILL);
      waitpid(started[i], &st, 0);
    }
  }
  /* not zmq_ctx_term: after a failed test a socket may still be open, and
   * the term would wait for it forever instead of reporting the failure */
  zmq_ctx_shutdown(zctx);
}

int harness_run_group(const char *name, const struct CMUnitTest *tests,
                      size_t n) {
  if (harness_init())
    return 1;
  int rc = ts_run_group(name, tests, n, NULL, NULL);
  harness_fini();
  return rc;
}

/* ---- a cluster of ranks ----------------------------------------------------- */

static void cluster_config(cluster *c, int r, const char *streams_yaml) {
  size_t cap = 4096 + strlen(streams_yaml);
  char *y = malloc(cap);
  assert_non_null(y);
  int n = snprintf(y, cap,
                   ENV_YAML_HEAD
                   "workers: 2\n"
                   "max_buffer: 1MiB\n"
                   "log_level: debug\n"
                   "cluster:\n"
                   "  storage: \"%s\"\n"
                   "  ceph_conf: \"%s\"\n"
                   "  rank: %d\n"
                   "  committer: %s\n"
                   "  committer_pub: %s\n"
                   "  frames_per_block: %d\n"
                   "  ranks:\n",
                   c->storage, c->ceph_conf, r, c->committer, c->pub,
                   c->frames_per_block);
  for (int i = 0; i < c->n; i++)
    n += snprintf(y + n, cap - (size_t)n, "    - %s\n", c->rank[i].sock);
  snprintf(y + n, cap - (size_t)n, "%s", streams_yaml);
  env_write_config(&c->rank[r], y);
  free(y);
}

void cluster_init(cluster *c, int n, int frames_per_block,
                  const char *storage, const char *streams_yaml) {
  assert_true(n >= 1 && n <= CLUSTER_MAX);
  memset(c, 0, sizeof *c);
  c->n = n;
  c->frames_per_block = frames_per_block;
  snprintf(c->dir, sizeof c->dir, "/tmp/b2sd-cluster-XXXXXX");
  assert_non_null(mkdtemp(c->dir));
  const char *conf = getenv("B2S_CEPH_CONF");
  if (storage && strncmp(storage, "rados://", 8) == 0 && conf)
    snprintf(c->ceph_conf, sizeof c->ceph_conf, "%s", conf);
  if (storage)
    snprintf(c->storage, sizeof c->storage, "%s", storage);
  else
    snprintf(c->storage, sizeof c->storage, "%s/store", c->dir);
  snprintf(c->committer, sizeof c->committer, "ipc://%s/commit.sock",
           c->dir);
  snprintf(c->pub, sizeof c->pub, "ipc://%s/pub.sock", c->dir);
  for (int i = 0; i < n; i++) {
    env_init_config(&c->rank[i], "");
    c->eps[i] = c->rank[i].sock;
  }
  for (int i = 0; i < n; i++)
    cluster_config(c, i, streams_yaml);
}

void cluster_start(cluster *c) {
  for (int i = 0; i < c->n; i++)
    env_start(&c->rank[i]);
}

void cluster_fini(cluster *c) {
  for (int i = 0; i < c->n; i++) {
    if (c->rank[i].pid > 0)
      assert_int_equal(env_stop(&c->rank[i], SIGTERM), 0);
    env_fini(&c->rank[i]);
  }
  assert_int_equal(ts_rmtree(c->dir), 0);
}

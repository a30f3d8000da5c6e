/* b2stream-committer as a process on a local store: ranks are played by
 * this test (put_chunk, then WRITTEN on a PUSH socket), followers by a SUB
 * socket.  Out-of-order frames, a missing one that becomes a gap after
 * the timeout, END, malformed messages, kill -9 mid-run followed by a
 * restart that loses no committed chunk and rebuilds H, a frame whose
 * lease another holds (taken over on the committer's own clock once the
 * holder goes, no message needed), and a frame every rank ended while no
 * committer ran. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include <cmocka.h>

#include "b2s_dframe.h"
#include "b2s_dmsg.h"
#include "b2s_errors.h"
#include "ts.h"

#define NBYTES 4096
#define CHUNK_CAP (NBYTES + B2S_MAX_OVERHEAD)
#define GAP_MS 300

typedef struct fixture {
  char dir[128], store[160], pull[200], pub[200], log[200];
  char run[64], other[64], nosuch[64];   /* frame names (RADOS: per run) */
  char lease_ms[16];               /* --lease-ms; "": 2000 (RADOS: a
                                      killed one's lease expires soon) */
  b2s_store *s;
  b2s_ctx *ctx;
  void *zctx, *push, *sub;
  pid_t pid;
} fixture;

static bool g_rados;               /* test_committer rados: a RADOS pool */

/* The committer, with --frame for the frame "run" when named (else it
 * learns frames from messages, as b2stream-committer@.service runs it). */
static void start_with(fixture *fx, bool named) {
  const char *exe = getenv("B2S_COMMITTER");
  assert_non_null(exe);
  fx->pid = fork();
  assert_true(fx->pid >= 0);
  if (fx->pid == 0) {
    FILE *log = freopen(fx->log, "a", stderr);
    (void)log;
    char gap[16];
    snprintf(gap, sizeof gap, "%d", GAP_MS);
    const char *argv[20] = {exe, "--store", fx->store, "--pull", fx->pull,
                            "--pub", fx->pub, "--gap-timeout-ms", gap,
                            "--sync", "none", "--lease-ms",
                            fx->lease_ms[0] ? fx->lease_ms : "2000"};
    int n = 13;
    if (named) {
      argv[n++] = "--frame";
      argv[n++] = fx->run;
    }
    if (g_rados) {
      argv[n++] = "--ceph-conf";
      argv[n++] = getenv("B2S_CEPH_CONF");
    }
    argv[n] = NULL;
    execv(exe, (char *const *)argv);
    _exit(127);
  }
}

static void start(fixture *fx) { start_with(fx, true); }

/* How many lines of the committer's log hold text. */
static int log_count(const fixture *fx, const char *text) {
  FILE *f = fopen(fx->log, "r");
  if (f == NULL)
    return 0;
  char line[1024];
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += strstr(line, text) != NULL;
  fclose(f);
  return n;
}

/* Wait (up to ms) for text in the committer's log. */
static void wait_log(const fixture *fx, const char *text, int ms) {
  for (int t = 0; log_count(fx, text) == 0; t += 20) {
    if (t > ms)
      fail_msg("no '%s' in the committer's log", text);
    usleep(20000);
  }
}

/* The committer still runs. */
static void running(fixture *fx) {
  int st;
  pid_t w = waitpid(fx->pid, &st, WNOHANG);
  if (w == fx->pid) {
    fx->pid = 0;
    fail_msg("the committer ended: %s %d", WIFSIGNALED(st) ? "signal"
             : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  }
  assert_int_equal(w, 0);
}

static int stop(fixture *fx, int sig) {
  if (fx->pid <= 0)
    return -1;
  kill(fx->pid, sig);
  int st;
  waitpid(fx->pid, &st, 0);
  fx->pid = 0;
  return st;
}

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  snprintf(fx->dir, sizeof fx->dir, "/tmp/test_committer.XXXXXX");
  assert_non_null(mkdtemp(fx->dir));
  static int runs;
  const char *prefix = "";
  char pbuf[48];
  if (g_rados) {
    snprintf(fx->store, sizeof fx->store, "rados://b2stream");
    snprintf(pbuf, sizeof pbuf, "test-committer-%ld-%d-", (long)getpid(),
             runs++);
    prefix = pbuf;
  } else {
    snprintf(fx->store, sizeof fx->store, "%s/store", fx->dir);
  }
  snprintf(fx->run, sizeof fx->run, "%srun", prefix);
  snprintf(fx->other, sizeof fx->other, "%sother", prefix);
  snprintf(fx->nosuch, sizeof fx->nosuch, "%snosuch", prefix);
  snprintf(fx->pull, sizeof fx->pull, "ipc://%s/pull", fx->dir);
  snprintf(fx->pub, sizeof fx->pub, "ipc://%s/pub", fx->dir);
  snprintf(fx->log, sizeof fx->log, "%s/committer.log", fx->dir);
  b2s_store_opts o = {.ceph_conf = getenv("B2S_CEPH_CONF")};
  assert_int_equal(b2s_store_open(fx->store, &o, &fx->s), 0);
  fx->ctx = b2s_ctx_new();
  fx->zctx = zmq_ctx_new();
  fx->push = zmq_socket(fx->zctx, ZMQ_PUSH);
  fx->sub = zmq_socket(fx->zctx, ZMQ_SUB);
  int linger = 0;
  zmq_setsockopt(fx->push, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(fx->sub, ZMQ_LINGER, &linger, sizeof linger);
  assert_int_equal(zmq_setsockopt(fx->sub, ZMQ_SUBSCRIBE, "", 0), 0);
  assert_int_equal(zmq_connect(fx->push, fx->pull), 0);
  assert_int_equal(zmq_connect(fx->sub, fx->pub), 0);
  *state = fx;
  return 0;
}

/* RADOS: the objects this test made (a shared pool) */
static void remove_objects(fixture *fx) {
  const char *names[] = {fx->run, fx->other, fx->nosuch};
  char obj[200];
  for (int k = 0; k < 3; k++) {
    snprintf(obj, sizeof obj, "%s.meta", names[k]);
    b2s_store_remove(fx->s, obj);
    snprintf(obj, sizeof obj, "%s.index", names[k]);
    b2s_store_remove(fx->s, obj);
    for (int64_t i = 0; i < 64; i++) {
      b2s_dframe_chunk_name(names[k], i, obj, sizeof obj);
      b2s_store_remove(fx->s, obj);
    }
  }
}

static int teardown(void **state) {
  fixture *fx = *state;
  stop(fx, SIGKILL);
  if (g_rados)
    remove_objects(fx);
  zmq_close(fx->push);
  zmq_close(fx->sub);
  zmq_ctx_term(fx->zctx);
  b2s_store_free(fx->s);
  b2s_ctx_free(fx->ctx);
  /* the committer's log helps when something failed */
  char *log = ts_read_text(fx->log, NULL);
  if (log != NULL)
    fputs(log, stderr);
  free(log);
  if (ts_rmtree(fx->dir) != 0)
    return -1;
  free(fx);
  return 0;
}

static b2s_dframe *create(fixture *fx, const char *name) {
  b2s_dframe_params p = {.cparams = B2S_CPARAMS_DEFAULTS,
                         .chunk_nbytes = NBYTES, .ranks = 2,
                         .frames_per_block = 2};
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_create(fx->s, name, &p, &df), 0);
  return df;
}

static int make_chunk(fixture *fx, int64_t i, uint8_t *out) {
  uint32_t src[NBYTES / 4];
  for (int k = 0; k < NBYTES / 4; k++)
    src[k] = (uint32_t)(i * 1000003 + k);
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  int n = b2s_compress(fx->ctx, &cp, src, NBYTES, out, CHUNK_CAP);
  assert_true(n > 0);
  return n;
}

static void send_msg(fixture *fx, const b2s_dmsg *m) {
  uint8_t buf[8 + B2S_DMSG_NAME_MAX + 16 + B2S_DMSG_REC_MAX];
  int n = b2s_dmsg_encode(m, buf, sizeof buf);
  assert_true(n > 0);
  /* a committer that is down loses what is sent: that is the point */
  zmq_send(fx->push, buf, (size_t)n, ZMQ_DONTWAIT);
}

/* A rank's step: store chunk i, then announce it. */
static void rank_put(fixture *fx, b2s_dframe *df, const char *name,
                     int64_t i, bool announce) {
  uint8_t c[CHUNK_CAP];
  int n = make_chunk(fx, i, c);
  b2s_record r = {.has_ts = true, .ts = i * 10};
  assert_int_equal(b2s_dframe_put_chunk(df, i, c, (size_t)n, &r), 0);
  if (!announce)
    return;
  b2s_mpbuf m = {0};
  assert_int_equal(b2s_dframe_stored_record(df, i, &m), 0);
  b2s_dmsg w = {.type = B2S_DMSG_WRITTEN, .name = name,
                .name_len = (uint16_t)strlen(name), .index = i,
                .rank = b2s_dframe_owner(i, 2, 2), .rec = m.data,
                .rec_len = (uint32_t)m.len};
  send_msg(fx, &w);
  b2s_mpbuf_fini(&m);
}

static void rank_end(fixture *fx, const char *name, int32_t rank,
                     int64_t end) {
  b2s_dmsg e = {.type = B2S_DMSG_END, .name = name,
                .name_len = (uint16_t)strlen(name), .index = end,
                .rank = rank};
  send_msg(fx, &e);
}

/* Follow COMMITTED for `name` until H >= target (and closed when asked);
 * every H seen must be >= the one before (*last, updated).  Returns the
 * last H, or -1 on timeout. */
static int64_t follow(fixture *fx, const char *name, int64_t target,
                      bool want_closed, int64_t *last, int timeout_ms) {
  int64_t end = ts_now_ms() + timeout_ms;
  while (ts_now_ms() < end) {
    uint8_t buf[512];
    zmq_pollitem_t it = {.socket = fx->sub, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, 100) <= 0)
      continue;
    int n = zmq_recv(fx->sub, buf, sizeof buf, 0);
    assert_true(n > 0);
    b2s_dmsg m;
    assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &m), 0);
    assert_int_equal(m.type, B2S_DMSG_COMMITTED);
    if (m.name_len != strlen(name) || memcmp(m.name, name, m.name_len) != 0)
      continue;
    assert_true(m.index >= *last);
    *last = m.index;
    if (m.index >= target && (!want_closed || m.closed))
      return m.index;
  }
  return -1;
}

/* Chunks [0, n) committed with their records; gaps where asked. */
static void check_frame(fixture *fx, const char *name, int64_t n,
                        const int64_t *gaps, int ngaps) {
  b2s_dframe *rd;
  assert_int_equal(b2s_dframe_open(fx->s, name, &rd), 0);
  int64_t h;
  assert_int_equal(b2s_dframe_refresh(rd, &h, NULL), 0);
  assert_int_equal(h, n);
  for (int64_t i = 0; i < n; i++) {
    bool gap = false;
    for (int k = 0; k < ngaps; k++)
      gap = gap || gaps[k] == i;
    b2s_record r;
    assert_int_equal(b2s_dframe_record_get(rd, i, &r), 0);
    assert_int_equal(r.frame, i);
    uint8_t *chunk;
    size_t cb;
    assert_int_equal(b2s_dframe_chunk_get(rd, i, &chunk, &cb), 0);
    assert_true(b2s_chunk_xxh64(chunk, cb) == r.xxh64);
    if (gap) {
      assert_int_equal(r.flags, B2S_RECORD_GAP);
    } else {
      uint8_t want[CHUNK_CAP];
      int wn = make_chunk(fx, i, want);
      assert_int_equal(r.flags, 0);
      assert_int_equal(r.ts, i * 10);
      assert_int_equal(cb, (size_t)wn);
      assert_memory_equal(chunk, want, cb);
    }
    free(chunk);
  }
  b2s_dframe_free(rd);
}

/* Frames out of order, one never written: it becomes a gap after the
 * timeout; END from both ranks closes the frame. */
static void test_out_of_order_and_gap(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, fx->run);
  start(fx);
  static const int64_t order[] = {1, 0, 3, 2, 6, 5, 8, 7, 9, 11, 10};
  int64_t last = 0;
  /* the committer publishes H = 0 for its --frame before anything */
  assert_int_equal(follow(fx, fx->run, 0, false, &last, 5000), 0);
  int64_t t0 = ts_now_ms();
  for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
    rank_put(fx, df, fx->run, order[k], true);
  /* 4 never comes */
  assert_int_equal(follow(fx, fx->run, 4, false, &last, 5000), 4);
  assert_int_equal(follow(fx, fx->run, 12, false, &last, 5000), 12);
  assert_true(ts_now_ms() - t0 >= GAP_MS);
  /* garbage on the PULL socket is refused, nothing else happens */
  zmq_send(fx->push, "junk", 4, 0);
  b2s_dmsg bad = {.type = B2S_DMSG_WRITTEN, .name = fx->run,
                  .name_len = (uint16_t)strlen(fx->run),
                  .index = 13, .rank = 0, .rec = (const uint8_t *)"\x90",
                  .rec_len = 1};
  send_msg(fx, &bad);
  rank_put(fx, df, fx->run, 12, true);
  rank_put(fx, df, fx->run, 13, false);
  rank_end(fx, fx->run, 0, 14);
  rank_end(fx, fx->run, 1, 12);
  assert_int_equal(follow(fx, fx->run, 14, true, &last, 5000), 14);
  assert_int_equal(stop(fx, SIGTERM), 0);
  static const int64_t gaps[] = {4};
  check_frame(fx, fx->run, 14, gaps, 1);
  /* a frame the committer learns from a message */
  b2s_dframe *df2 = create(fx, fx->other);
  start(fx);
  int64_t last2 = 0;
  rank_put(fx, df2, fx->other, 0, true);
  assert_int_equal(follow(fx, fx->other, 1, false, &last2, 5000), 1);
  /* a message for a frame that does not exist is refused */
  rank_end(fx, fx->nosuch, 0, 1);
  /* the restarted committer still knows "run" is closed */
  int64_t last3 = 0;
  assert_int_equal(follow(fx, fx->run, 14, true, &last3, 5000), 14);
  /* made later, that frame is committed: the refusal left no lease of
   * this committer behind to refuse it with */
  b2s_dframe *df3 = create(fx, fx->nosuch);
  int64_t last4 = 0;
  rank_put(fx, df3, fx->nosuch, 0, true);
  assert_int_equal(follow(fx, fx->nosuch, 1, false, &last4, 5000), 1);
  assert_int_equal(stop(fx, SIGTERM), 0);
  b2s_dframe_free(df3);
  b2s_dframe_free(df2);
  b2s_dframe_free(df);
  FILE *log = fopen(fx->log, "r");
  assert_non_null(log);
  char line[1024];
  int refused = 0, gaps_logged = 0;
  while (fgets(line, sizeof line, log)) {
    refused += strstr(line, "refused:") != NULL;
    gaps_logged += strstr(line, "chunk 4 missing: gap written") != NULL;
  }
  fclose(log);
  assert_int_equal(refused, 3);
  assert_int_equal(gaps_logged, 1);
}

/* kill -9 mid-run, ranks go on storing, restart: no committed chunk is
 * lost, H is rebuilt from the store, lost messages are made up for. */
static void test_kill_restart(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, fx->run);
  start(fx);
  int64_t last = 0;
  assert_int_equal(follow(fx, fx->run, 0, false, &last, 5000), 0);
  for (int64_t i = 0; i < 30; i++)
    rank_put(fx, df, fx->run, i, true);
  assert_true(follow(fx, fx->run, 20, false, &last, 5000) >= 20);
  /* killed while messages are on their way */
  for (int64_t i = 30; i < 40; i++)
    rank_put(fx, df, fx->run, i, true);
  assert_int_equal(stop(fx, SIGKILL), SIGKILL);
  int64_t before = last;
  /* what the dead committer published is in the store */
  assert_true(b2s_dframe_committed(df) >= before);
  /* the ranks go on: stored chunks whose WRITTEN is lost, 45 never */
  for (int64_t i = 40; i < 60; i++)
    if (i != 45)
      rank_put(fx, df, fx->run, i, false);
  start(fx);
  int64_t last2 = 0;
  /* H rebuilt: never below what was published before the kill */
  assert_true(follow(fx, fx->run, before, false, &last2, 5000) >= before);
  assert_true(last2 >= before);
  /* a stored run up to 44 is found without any message */
  assert_true(follow(fx, fx->run, 45, false, &last2, 5000) >= 45);
  /* new messages above the hole: 45 becomes a gap, the stored chunks
   * after it are found by probes */
  for (int64_t i = 60; i < 64; i++)
    rank_put(fx, df, fx->run, i, true);
  assert_int_equal(follow(fx, fx->run, 64, false, &last2, 10000), 64);
  /* kill again right after a commit, restart: H is what was published */
  assert_int_equal(stop(fx, SIGKILL), SIGKILL);
  assert_int_equal(b2s_dframe_committed(df), 64);
  start(fx);
  int64_t last3 = 0;
  assert_int_equal(follow(fx, fx->run, 64, false, &last3, 5000), 64);
  rank_end(fx, fx->run, 0, 64);
  rank_end(fx, fx->run, 1, 64);
  assert_int_equal(follow(fx, fx->run, 64, true, &last3, 5000), 64);
  assert_int_equal(stop(fx, SIGTERM), 0);
  static const int64_t gaps[] = {45};
  check_frame(fx, fx->run, 64, gaps, 1);
  b2s_dframe_free(df);
  /* one gap only: 46..59 were found in the store, not made gaps */
  FILE *log = fopen(fx->log, "r");
  assert_non_null(log);
  char line[1024];
  int gap_lines = 0;
  while (fgets(line, sizeof line, log))
    gap_lines += strstr(line, "gap written") != NULL;
  fclose(log);
  assert_int_equal(gap_lines, 1);
}

/* The frame's lease is held when the committer first hears of the frame
 * (the systemd unit's committer, no --frame): a committer killed with -9
 * on RADOS (its lease lives on until it expires), a live holder on the
 * directory store (the kernel frees a dead one's at once).  Messages for
 * the frame meanwhile leave it running and the frame kept; once the
 * holder is gone it takes the lease on its own clock, without another
 * message, commits every stored chunk, and closes at the ranks' next END.
 * (Before, the first message made it crash with SIGSEGV.) */
static void test_lease_held_elsewhere(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, fx->run);
  for (int64_t i = 0; i < 8; i++)
    rank_put(fx, df, fx->run, i, false);
  b2s_lease *held = NULL;
  char text[128];
  if (g_rados) {
    /* long enough to outlast the successor's start on a busy machine */
    snprintf(fx->lease_ms, sizeof fx->lease_ms, "5000");
    start(fx);
    snprintf(text, sizeof text, "frame %s: opened", fx->run);
    wait_log(fx, text, 15000);
    assert_int_equal(stop(fx, SIGKILL), SIGKILL);
  } else {
    char name[96], who[256];
    snprintf(name, sizeof name, "%s.lease", fx->run);
    assert_int_equal(b2s_store_lease_take(fx->s, name, "this test", 2000,
                                          &held, who, sizeof who), 0);
  }
  start_with(fx, false);
  wait_log(fx, "started:", 5000);
  /* the ranks go on: a chunk announced, END from both */
  rank_put(fx, df, fx->run, 8, true);
  rank_end(fx, fx->run, 0, 10);
  rank_end(fx, fx->run, 1, 9);
  snprintf(text, sizeof text, "frame %s: %s", fx->run,
           g_rados ? "its lease is held: b2stream-committer on"
                   : "committed by another committer: this test");
  wait_log(fx, text, 5000);
  rank_put(fx, df, fx->run, 9, true);       /* kept, not opened again */
  usleep(300000);
  running(fx);
  assert_int_equal(log_count(fx, text), 1);
  b2s_store_lease_drop(held);               /* the holder goes */
  /* no message from here on until everything stored is committed */
  int64_t last = 0;
  assert_int_equal(follow(fx, fx->run, 10, false, &last, 15000), 10);
  snprintf(text, sizeof text, "frame %s: lease taken over after", fx->run);
  assert_int_equal(log_count(fx, text), 1);
  /* the ranks' END, repeated until the close, closes it */
  rank_end(fx, fx->run, 0, 10);
  rank_end(fx, fx->run, 1, 9);
  assert_int_equal(follow(fx, fx->run, 10, true, &last, 5000), 10);
  running(fx);
  assert_int_equal(stop(fx, SIGTERM), 0);
  check_frame(fx, fx->run, 10, NULL, 0);
  b2s_dframe_free(df);
}

/* Every rank ended the frame while no committer ran: their ENDs were
 * lost, the ranks repeat them (every second, until they see the frame
 * closed).  A committer started later, without --frame, learns the frame
 * from that END, commits what is stored (a hole made a gap, a chunk
 * stored above every END, as a restarted rank leaves it, found by the
 * probe before the close) and closes it. */
static void test_ended_without_committer(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, fx->run);
  /* stored, their WRITTEN and the first ENDs gone with no committer (a
   * PUSH socket would keep them for a committer yet to bind: not sent) */
  for (int64_t i = 0; i < 14; i++)
    if (i != 10)                            /* 10: never stored */
      rank_put(fx, df, fx->run, i, false);
  start_with(fx, false);
  /* rank 1 restarted after its chunks were stored: its END is 0 */
  int64_t last = 0, h = -1;
  for (int k = 0; k < 20 && h < 0; k++) {   /* the ranks' repeats */
    rank_end(fx, fx->run, 0, 12);
    rank_end(fx, fx->run, 1, 0);
    h = follow(fx, fx->run, 14, true, &last, 1000);
  }
  assert_int_equal(h, 14);
  assert_int_equal(stop(fx, SIGTERM), 0);
  static const int64_t gaps[] = {10};
  check_frame(fx, fx->run, 14, gaps, 1);
  b2s_dframe_free(df);
}

static void test_rados_skipped(void **state) {
  (void)state;
  skip();
}

/* test_committer [local|rados]: rados needs B2S_CEPH_CONF (a test
 * cluster's ceph.conf) and a build with librados. */
int main(int argc, char **argv) {
  g_rados = argc > 1 && strcmp(argv[1], "rados") == 0;
  if (g_rados && (!b2s_store_have_rados() || !getenv("B2S_CEPH_CONF"))) {
    printf("rados tests skipped: %s\n", b2s_store_have_rados()
                                            ? "B2S_CEPH_CONF not set"
                                            : "this build has no librados");
    const struct CMUnitTest none[] = {cmocka_unit_test(test_rados_skipped)};
    return ts_run_named("committer_rados", none, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_out_of_order_and_gap, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_kill_restart, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lease_held_elsewhere, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_ended_without_committer, setup,
                                      teardown),
  };
  return ts_run_named(g_rados ? "committer_rados" : "committer_local", tests,
                      NULL, NULL);
}

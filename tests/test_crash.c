/* Crash points of the real daemon (docs/FRAME_COMMIT.md, "Crash-point
 * test").  For a contiguous and a sparse stream acknowledged at level
 * durable, b2streamd runs with the crash-point library preloaded
 * (tests/crash/crashpoint.c, $B2S_CRASHPOINT): a counting run learns how
 * many calls change the frame files in a short run (start, NBUF buffers
 * through the client library, SIGTERM), then every crash point (before,
 * after, or in the middle of a write) gets a fresh run that is SIGKILLed
 * there.  After each, the frame is recovered (b2stream recover, and/or a
 * restart of the daemon, which recovers at start) and must open and hold
 * every acknowledged buffer, in order, byte for byte, and nothing that was
 * not sent; its records frame (made at the latest by the restart) one
 * record per chunk, each with its chunk's checksum.  Failures are printed with their crash point and the test
 * fails at the end.  Under AddressSanitizer (the CI's daemon suite) the
 * library is built with it too and preloaded with verify_asan_link_order=0,
 * and fewer points are tried. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "b2s_meta.h"
#include "b2s_frame.h"
#include "ts.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#define NBUF 16               /* buffers per run: half one by one, half in a burst */
#define BASE 3000             /* buffer sizes BASE .. BASE + 999 */
/* Above this many points per kind, a deterministic stride.  Under
 * AddressSanitizer every run is several times slower: fewer points. */
#ifdef UNDER_ASAN
#define RUNS_PER_KIND 100
#else
#define RUNS_PER_KIND 160
#endif

static const char *cli_path, *shim_path;
/* Processes of the run under way, killed at the end if a failed check
 * left them behind. */
static pid_t live_daemon, live_producer;

static const char *kind_config(bool sparse) {
  return sparse ? ENV_YAML_HEAD
                  "workers: 2\n"
                  "max_buffer: 1MiB\n"
                  "log_level: debug\n"
                  "streams:\n"
                  "  c:\n"
                  "    format: sparse\n"
                  "    codec: lz4\n"
                  "    typesize: 4\n"
                  "    durability: {ack: fsync, group_count: 4, group_interval_ms: 2}\n"
                : ENV_YAML_HEAD
                  "workers: 2\n"
                  "max_buffer: 1MiB\n"
                  "log_level: debug\n"
                  "streams:\n"
                  "  c:\n"
                  "    codec: lz4\n"
                  "    typesize: 4\n"
                  "    durability: {ack: fsync, group_count: 4, group_interval_ms: 2}\n";
}

/* Where to die: point 0 only counts. */
typedef struct crash {
  const char *mode;           /* "before", "after", "middle" */
  long at;
} crash;

/* What one run under the crash-point library did. */
typedef struct outcome {
  bool started;               /* the daemon was serving */
  bool killed;                /* the crash point was reached */
  int exit_code;              /* otherwise: how the daemon ended */
  uint64_t sent, acked;       /* buffers sent and acknowledged durable */
} outcome;

/* ---- the daemon process ----------------------------------------------------- */

static void spawn(env *e, const crash *c, const char *count_file) {
  char sock[400];
  snprintf(sock, sizeof sock, "%s/run/d.sock", e->dir);
  unlink(sock);
  char prefix[PATH_MAX + 8], real[PATH_MAX];
  assert_non_null(realpath(e->dir, real));
  snprintf(prefix, sizeof prefix, "%s/data/", real);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(e->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    if (c) {
      char at[32];
      snprintf(at, sizeof at, "%ld", c->at);
      setenv("LD_PRELOAD", shim_path, 1);
      setenv("B2S_CRASH_PREFIX", prefix, 1);
      setenv("B2S_CRASH_AT", at, 1);
      setenv("B2S_CRASH_MODE", c->mode, 1);
      if (count_file)
        setenv("B2S_CRASH_COUNT", count_file, 1);
#ifdef UNDER_ASAN
      /* the preloaded library comes before the sanitizer runtime, which
       * ASan refuses unless told; its interceptors still sit below ours */
      char opts[1024];
      const char *old = getenv("ASAN_OPTIONS");
      snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0",
               old ? old : "", old && *old ? ":" : "");
      setenv("ASAN_OPTIONS", opts, 1);
#endif
    }
    execl(daemon_path, daemon_path, "--config", e->config, (char *)NULL);
    _exit(127);
  }
  e->pid = live_daemon = pid;
}

/* Reap the daemon if it ended: true with its status. */
static bool reaped(env *e, int *status) {
  if (e->pid <= 0)
    return true;
  if (waitpid(e->pid, status, WNOHANG) != e->pid)
    return false;
  e->pid = live_daemon = 0;
  return true;
}

static void note_end(outcome *o, int st) {
  o->killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
  o->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Wait until the daemon serves (true) or ends (false, noted in o). */
static bool wait_serving(env *e, outcome *o) {
  char path[400];
  snprintf(path, sizeof path, "%s/run/d.sock", e->dir);
  for (int i = 0; i < WAIT_MS; i++) {
    int st;
    if (reaped(e, &st)) {
      note_end(o, st);
      return false;
    }
    struct stat sb;
    if (stat(path, &sb) == 0)
      return true;
    usleep(1000);
  }
  fail_msg("daemon neither served nor ended");
  return false;
}

/* SIGTERM (or no signal) and wait for the end. */
static void stop(env *e, int sig, outcome *o) {
  if (e->pid > 0 && sig)
    kill(e->pid, sig);
  for (int i = 0; i < WAIT_MS * 3; i++) {
    int st;
    if (reaped(e, &st)) {
      note_end(o, st);
      return;
    }
    usleep(1000);
  }
  kill(e->pid, SIGKILL);
  fail_msg("daemon did not stop");
}

/* ---- the producer: a child, so that a dead daemon costs it no linger ------- */

/* sent counts a buffer before it goes (an upper bound, whenever the
 * producer is killed), acked once its ACK arrived (a lower bound). */
typedef struct progress {
  uint64_t sent, acked;
} progress;

static void report(int fd, b2sc_producer *p, uint64_t sending) {
  b2sc_producer_stats st;
  if (b2sc_producer_stats_get(p, &st) < 0)
    _exit(8);
  progress pr = {st.sent + sending, st.durable};
  if (write(fd, &pr, sizeof pr) != sizeof pr)
    _exit(9);
}

/* PING until `want` buffers are durable (ACKs arrive while it waits). */
static void wait_durable(int fd, b2sc_session *s, b2sc_producer *p,
                         uint64_t want) {
  for (;;) {
    b2sc_producer_stats st;
    b2sc_producer_stats_get(p, &st);
    if (st.durable >= want)
      break;
    if (b2sc_ping(s, WAIT_MS) < 0)
      _exit(5);
  }
  report(fd, p, 0);
}

/* Buffers 0..NBUF-1: the first half each waited for, the rest in one
 * burst (group commits); progress goes to fd after every step. */
static _Noreturn void produce(env *e, int fd) {
  b2sc_options o = {.client_name = "crash", .roles = B2SC_ROLE_PRODUCER,
                    .timeout_ms = WAIT_MS};
  b2sc_session *s;
  b2sc_producer *p;
  if (b2sc_connect_opts(e->sock, &o, &s) < 0)
    _exit(2);
  if (b2sc_producer_open(s, "c", NULL, &p) < 0)
    _exit(3);
  uint8_t *b = malloc(BASE + 1000);
  for (int i = 0; i < NBUF; i++) {
    size_t len = buf_len(i, BASE);
    buf_fill(b, len, i);
    report(fd, p, 1);
    if (b2sc_send(p, b, len, WAIT_MS) < 0)
      _exit(4);
    if (i < NBUF / 2)
      wait_durable(fd, s, p, (uint64_t)i + 1);
  }
  wait_durable(fd, s, p, NBUF);
  if (b2sc_producer_close(p) < 0)
    _exit(6);
  b2sc_close(s);
  free(b);
  _exit(0);
}

/* Run the producer until it is done or the daemon dies; the last progress
 * it reported goes to o. */
static void run_producer(env *e, outcome *o) {
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    close(pfd[0]);
    produce(e, pfd[1]);
  }
  live_producer = child;
  close(pfd[1]);
  bool daemon_ended = false;
  for (int t = 0; t < WAIT_MS * 3; t++) {
    struct pollfd it = {.fd = pfd[0], .events = POLLIN};
    if (poll(&it, 1, 1) == 1) {
      progress pr;
      ssize_t n = read(pfd[0], &pr, sizeof pr);
      if (n == 0)
        break;                  /* the producer is done */
      assert_int_equal(n, sizeof pr);
      o->sent = pr.sent;
      o->acked = pr.acked;
      continue;
    }
    int st;
    if (reaped(e, &st)) {
      note_end(o, st);
      daemon_ended = true;
      break;
    }
  }
  /* what the producer reported before the daemon died still counts */
  progress pr;
  if (daemon_ended) {
    kill(child, SIGKILL);
    while (read(pfd[0], &pr, sizeof pr) == sizeof pr) {
      o->sent = pr.sent;
      o->acked = pr.acked;
    }
  }
  close(pfd[0]);
  int st;
  assert_int_equal(waitpid(child, &st, 0), child);
  live_producer = 0;
  if (!daemon_ended && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    int dst;
    if (!reaped(e, &dst))
      fail_msg("the producer failed (status %d) with the daemon alive", st);
    note_end(o, dst);
  }
}

/* One run: start under the library, produce (unless start_only: the
 * frame was made before, with NBUF buffers), SIGTERM if still alive. */
static outcome crash_run(env *e, const crash *c, const char *count_file,
                         bool start_only) {
  outcome o = {0};
  if (start_only)
    o.sent = o.acked = NBUF;
  spawn(e, c, count_file);
  o.started = wait_serving(e, &o);
  if (o.started && !start_only)
    run_producer(e, &o);
  if (e->pid > 0)
    stop(e, SIGTERM, &o);
  return o;
}

/* ---- after the crash ------------------------------------------------------------- */

/* Failures are printed as they happen and counted; the test fails at the
 * end, after the whole sweep. */
typedef struct failures {
  int count;
} failures;

static void failf(failures *f, const char *fmt, ...) {
  f->count++;
  va_list ap;
  va_start(ap, fmt);
  printf("CRASH POINT FAILED: ");
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

/* Empty when the records frame beside f holds exactly one record per
 * chunk and each record's checksum is its chunk's as stored; a missing
 * records frame passes unless need (the daemon makes it at start). */
static void verify_records(const char *path, b2s_frame *f, bool need,
                           char *why, size_t cap) {
  b2s_records *rs = NULL;
  int rc = b2s_records_open(path, &rs, NULL);
  if (rc == -ENOENT && !need)
    return;
  if (rc < 0) {
    snprintf(why, cap, "records do not open: %s", b2s_strerror(rc));
    return;
  }
  int64_t n = b2s_frame_nchunks(f);
  if (b2s_records_count(rs) != n)
    snprintf(why, cap, "%lld records for %lld chunks",
             (long long)b2s_records_count(rs), (long long)n);
  uint8_t *raw = malloc(BASE + 1000 + 64);
  for (int64_t i = 0; !why[0] && i < n; i++) {
    b2s_record rec;
    int32_t cb = 0, nb = 0;
    rc = b2s_records_get(rs, i, &rec);
    if (rc == 0)
      rc = b2s_frame_chunk_sizes(f, i, &cb, &nb);
    if (rc == 0 && (cb <= 0 || cb > BASE + 1000 + 64))
      rc = B2S_E_CBYTES;
    if (rc == 0)
      rc = b2s_frame_chunk_read(f, i, raw, (size_t)cb) == cb ? 0 : B2S_E_CBYTES;
    if (rc < 0)
      snprintf(why, cap, "record or chunk %lld: %s", (long long)i,
               b2s_strerror(rc));
    else if (rec.xxh64 != b2s_chunk_xxh64(raw, (size_t)cb))
      snprintf(why, cap, "record %lld: checksum is not its chunk's",
               (long long)i);
  }
  free(raw);
  b2s_records_free(rs);
}

/* Empty when the frame at path holds buffers 0..k-1 for some k with
 * acked <= k <= sent, each with its record (verify_records); else why
 * not, in why. */
static void verify(const char *path, const outcome *o, bool need_records,
                   char *why, size_t cap) {
  why[0] = '\0';
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  int rc = b2s_frame_open(path, &f, &err);
  if (rc < 0) {
    snprintf(why, cap, "does not open: %s (%s at %lld)", b2s_strerror(rc),
             err.reason ? err.reason : "?", (long long)err.offset);
    return;
  }
  int64_t n = b2s_frame_nchunks(f);
  if (n < (int64_t)o->acked || n > (int64_t)o->sent)
    snprintf(why, cap, "%lld chunks, %llu acknowledged, %llu sent",
             (long long)n, (unsigned long long)o->acked,
             (unsigned long long)o->sent);
  uint8_t *want = malloc(BASE + 1000), *got = malloc(BASE + 1000);
  for (int64_t i = 0; !why[0] && i < n; i++) {
    size_t len = buf_len((int)i, BASE);
    buf_fill(want, len, (int)i);
    rc = b2s_frame_chunk_decompress(f, i, NULL, got, BASE + 1000);
    if (rc != (int)len || memcmp(got, want, len) != 0)
      snprintf(why, cap, "chunk %lld is not buffer %lld (rc %d)",
               (long long)i, (long long)i, rc);
  }
  free(want);
  free(got);
  if (!why[0])
    verify_records(path, f, need_records, why, cap);
  b2s_frame_free(f);
}

static int recover_cli(const char *path) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    execl(cli_path, cli_path, "recover", path, (char *)NULL);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Recover after run o (with the CLI first when `cli`, then by restarting
 * the daemon), checking the frame after each step. */
static void recover_and_check(env *e, const outcome *o, bool cli,
                              const char *where, failures *fl) {
  char path[400], why[256];
  frame_path(e, "c", path, sizeof path);
  struct stat sb;
  if (cli && lstat(path, &sb) == 0) {
    int rc = recover_cli(path);
    if (rc != 0)
      failf(fl, "%s: b2stream recover exit %d\n", where, rc);
    verify(path, o, false, why, sizeof why);
    if (why[0])
      failf(fl, "%s: after b2stream recover: %s\n", where, why);
  } else if (cli && o->acked > 0) {
    failf(fl, "%s: no frame, %llu acknowledged\n", where,
          (unsigned long long)o->acked);
  }
  outcome r = {0};
  spawn(e, NULL, NULL);
  if (!wait_serving(e, &r)) {
    failf(fl, "%s: the daemon does not start again (exit %d)\n", where,
          r.exit_code);
    return;
  }
  stop(e, SIGTERM, &r);
  if (r.exit_code != 0)
    failf(fl, "%s: the restarted daemon exits %d\n", where, r.exit_code);
  verify(path, o, true, why, sizeof why);
  if (why[0])
    failf(fl, "%s: after restart: %s\n", where, why);
}

/* ---- the sweep --------------------------------------------------------------- */

/* A frame without its records frame (written before records, packed, or
 * restored without its companion): NBUF buffers stored by a daemon run,
 * then the records frame removed.  The directory holding data/ is
 * returned in tmpl (an env the caller finalises). */
static void make_norecords(bool sparse, env *tmpl) {
  env_init_config(tmpl, kind_config(sparse));
  outcome o = crash_run(tmpl, NULL, NULL, false);
  assert_true(o.started);
  assert_int_equal(o.exit_code, 0);
  assert_int_equal(o.acked, NBUF);
  char path[400], rpath[420];
  frame_path(tmpl, "c", path, sizeof path);
  assert_true(b2s_records_path(path, rpath, sizeof rpath) > 0);
  assert_int_equal(ts_rmtree(rpath), 0);
  struct stat sb;
  assert_int_equal(lstat(rpath, &sb), -1);
}

/* A fresh env for one run: with tmpl, its data directory copied in. */
static void env_for_run(bool sparse, const env *tmpl, env *e) {
  env_init_config(e, kind_config(sparse));
  if (tmpl) {
    char cmd[1000];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/data' && cp -a '%s/data/.' '%s/data/'",
             e->dir, tmpl->dir, e->dir);
    assert_int_equal(system(cmd), 0);
  }
}

/* Calls and write calls of an uninterrupted run, from the library's count. */
static void count_run(bool sparse, const env *tmpl, long *calls, long *writes) {
  env e;
  env_for_run(sparse, tmpl, &e);
  char count_file[400];
  snprintf(count_file, sizeof count_file, "%s/count", e.dir);
  crash c = {"before", 0};
  outcome o = crash_run(&e, &c, count_file, tmpl != NULL);
  assert_true(o.started);
  assert_int_equal(o.exit_code, 0);
  assert_int_equal(o.acked, NBUF);
  FILE *f = fopen(count_file, "r");
  assert_non_null(f);
  assert_int_equal(fscanf(f, "calls %ld writes %ld", calls, writes), 2);
  fclose(f);
  char path[400], why[256];
  frame_path(&e, "c", path, sizeof path);
  verify(path, &o, true, why, sizeof why);
  assert_string_equal(why, "");
  env_fini(&e);
}

/* One crash run at c, recovered and checked; true when c was reached.
 * The CLI recovers first on every other run (`cli`). */
static bool try_point(bool sparse, const env *tmpl, const crash *c, bool cli,
                      failures *fl) {
  char where[96];
  snprintf(where, sizeof where, "%s%s %s %ld", sparse ? "sparse" : "contiguous",
           tmpl ? " start without records" : "", c->mode, c->at);
  env e;
  env_for_run(sparse, tmpl, &e);
  outcome o = crash_run(&e, c, NULL, tmpl != NULL);
  if (o.killed)
    recover_and_check(&e, &o, cli, where, fl);
  else if (o.exit_code != 0)
    failf(fl, "%s: the daemon exited %d\n", where, o.exit_code);
  env_fini(&e);
  return o.killed;
}

/* Crash points of one kind: every point of every mode, or, when there are
 * more than RUNS_PER_KIND, every stride-th, starting at 1, 2, 3 for the
 * modes so that a stride of 2 still cuts each call before or after
 * ($B2S_CRASH_ALL set: all of them).  Returns the number tried. */
static int sweep(bool sparse, const env *tmpl, failures *fl) {
  const char *kind = tmpl ? (sparse ? "sparse start without records"
                                    : "contiguous start without records")
                          : (sparse ? "sparse" : "contiguous");
  long calls, writes;
  count_run(sparse, tmpl, &calls, &writes);
  assert_true(calls > 0 && writes > 0);
  long total = 2 * calls + writes;
  /* a start without records: every point (outside AddressSanitizer) */
  bool all = getenv("B2S_CRASH_ALL") != NULL;
#ifndef UNDER_ASAN
  all = all || tmpl != NULL;
#endif
  long stride = all ? 1 : (total + RUNS_PER_KIND - 1) / RUNS_PER_KIND;
  printf("%s: %ld frame calls (%ld writes) in a run: %ld crash points "
         "(before and after each call, in the middle of each write)",
         kind, calls, writes, total);
  if (stride > 1)
    printf(", trying one in %ld", stride);
  printf("\n");
  static const char *const modes[] = {"before", "after", "middle"};
  int tried = 0, reached = 0;
  for (int m = 0; m < 3; m++) {
    long n = m < 2 ? calls : writes;
    for (long at = 1 + m % stride; at <= n; at += stride) {
      crash c = {modes[m], at};
      reached += try_point(sparse, tmpl, &c, tried % 2 == 1, fl);
      tried++;
    }
  }
  printf("%s: %d crash points tried, %d reached (a run may make fewer "
         "calls than the counting run)\n", kind, tried, reached);
  assert_true(reached > 0);
  return tried;
}

static void test_crash_points(void **state) {
  (void)state;
#ifdef UNDER_ASAN
  printf("crash points: under AddressSanitizer, at most %d per kind\n",
         RUNS_PER_KIND);
#endif
  failures fl = {0};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int contiguous = sweep(false, NULL, &fl);
  int sparse = sweep(true, NULL, &fl);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("crash points tried: %d (contiguous %d, sparse %d) in %.1f s\n",
         contiguous + sparse, contiguous, sparse,
         (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  fflush(stdout);
  if (fl.count)
    fail_msg("%d failures at crash points (CRASH POINT FAILED above)",
             fl.count);
  assert_true(contiguous + sparse > 0);
}

/* A start on a frame without records frame, killed at every file-system
 * call of it: every one of the NBUF chunks is still there afterwards, each
 * with a record (the records frame is published whole or not at all, and
 * data chunks without records are never cut). */
static void test_crash_start_without_records(void **state) {
  (void)state;
  failures fl = {0};
  int tried = 0;
  for (int sp = 0; sp < 2; sp++) {
    env tmpl;
    make_norecords(sp == 1, &tmpl);
    tried += sweep(sp == 1, &tmpl, &fl);
    env_fini(&tmpl);
  }
  printf("start without records: %d crash points tried\n", tried);
  fflush(stdout);
  if (fl.count)
    fail_msg("%d failures at crash points (CRASH POINT FAILED above)",
             fl.count);
}

int main(void) {
  daemon_path = getenv("B2S_DAEMON");
  cli_path = getenv("B2S_CLI");
  shim_path = getenv("B2S_CRASHPOINT");
  if (!daemon_path || !cli_path || !shim_path) {
    fprintf(stderr, "B2S_DAEMON, B2S_CLI and B2S_CRASHPOINT must be set\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_crash_points),
    cmocka_unit_test(test_crash_start_without_records),
  };
  int rc = ts_run_tests(tests, NULL, NULL);
  pid_t left[] = {live_producer, live_daemon};
  for (int i = 0; i < 2; i++)
    if (left[i] > 0) {
      kill(left[i], SIGKILL);
      waitpid(left[i], NULL, 0);
    }
  return rc;
}

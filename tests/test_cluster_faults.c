/* Distributed streams under faults of their users and operators
 * (docs/DISTRIBUTED.md): real b2streamd ranks, the real
 * b2stream-committer, the real client library, a directory store.
 *   - a closed frame stays closed: buffers written to it again are
 *     refused with a clear error and never committed;
 *   - a producer killed without CLOSE: the ranks send END once it has
 *     been gone for the documented time, and the frame closes;
 *   - b2stream produce --ranks survives a rank's restart, resends what
 *     was not acknowledged, and its summary counts what was. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "b2s_chunk.h"
#include "b2s_dframe.h"
#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2s_store.h"
#include "b2stream_client.h"
#include "cluster_util.h"
#include "daemon_harness.h"

#define CHUNK 4096
#define SEND_MS 10000
#define FLUSH_MS 30000
#define GAP_MS 3000

static const char streams_yaml[] =
    "streams:\n"
    "  img:\n"
    "    format: distributed\n"
    "    chunk_nbytes: 4096\n"
    "    typesize: 4\n"
    "    codec: lz4\n"
    "    durability: {ack: write}\n";

/* committed and closed of frame img as the store says; -1 before its
 * NAME.meta. */
static int64_t store_state(const cluster *c, bool *closed) {
  b2s_store *s = NULL;
  assert_int_equal(cluster_store_open(c, &s), 0);
  b2s_dframe *df = NULL;
  int64_t h = -1;
  *closed = false;
  if (b2s_dframe_open(s, "img", &df) == 0)
    assert_int_equal(b2s_dframe_refresh(df, &h, closed), 0);
  b2s_dframe_free(df);
  b2s_store_free(s);
  return h;
}

/* Wait up to ms for the frame to be closed; its committed count. */
static int64_t wait_closed(const cluster *c, int ms) {
  bool closed = false;
  int64_t h = -1;
  for (int t = 0; t <= ms; t += 100) {
    h = store_state(c, &closed);
    if (closed)
      return h;
    usleep(100000);
  }
  fail_msg("frame not closed after %d ms (committed %lld)", ms, (long long)h);
  return -1;
}

static void send_range(b2sc_cluster *cl, uint64_t from, uint64_t to) {
  uint8_t buf[CHUNK];
  for (uint64_t f = from; f < to; f++) {
    cluster_frame_fill(buf, CHUNK, f);
    int rc = b2sc_cluster_send(cl, f, buf, CHUNK, SEND_MS);
    if (rc != 0)
      fail_msg("frame %llu: %s", (unsigned long long)f,
               b2sc_cluster_last_error(cl));
  }
}

/* Chunks 0..n-1 hold frames 0..n-1 bit for bit. */
static void check_chunks(const cluster *c, int64_t n) {
  b2s_store *s = NULL;
  assert_int_equal(cluster_store_open(c, &s), 0);
  b2s_dframe *df = NULL;
  assert_int_equal(b2s_dframe_open(s, "img", &df), 0);
  int64_t h;
  assert_int_equal(b2s_dframe_refresh(df, &h, NULL), 0);
  assert_true(h >= n);
  b2s_ctx *ctx = b2s_ctx_new();
  uint8_t want[CHUNK], got[CHUNK];
  for (int64_t i = 0; i < n; i++) {
    uint8_t *chunk = NULL;
    size_t len = 0;
    assert_int_equal(b2s_dframe_chunk_get(df, i, &chunk, &len), 0);
    assert_int_equal(b2s_decompress(ctx, chunk, len, got, sizeof got), CHUNK);
    cluster_frame_fill(want, CHUNK, (uint64_t)i);
    assert_memory_equal(got, want, CHUNK);
    free(chunk);
  }
  b2s_ctx_free(ctx);
  b2s_dframe_free(df);
  b2s_store_free(s);
}

/* ---- a closed frame stays closed ------------------------------------------- */

static void test_closed_frame_refused(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 2, 1, NULL, streams_yaml);
  cluster_start(&c);
  pid_t cm = cluster_committer_start(&c, "img", GAP_MS);
  assert_true(cm > 0);
  b2sc_cluster *cl;
  assert_int_equal(b2sc_cluster_open(c.eps, 2, 1, "img", NULL, NULL, &cl), 0);
  send_range(cl, 0, 10);
  assert_int_equal(b2sc_cluster_flush(cl, FLUSH_MS), 0);
  assert_int_equal(b2sc_cluster_close(cl), 0);
  assert_int_equal(wait_closed(&c, 20000), 10);

  /* written again, to the writers still open and to new ones */
  assert_int_equal(b2sc_cluster_open(c.eps, 2, 1, "img", NULL, NULL, &cl), 0);
  send_range(cl, 10, 16);
  int rc = b2sc_cluster_flush(cl, FLUSH_MS);
  assert_int_equal(rc, B2S_E_CLOSED);
  assert_non_null(strstr(b2sc_cluster_last_error(cl),
                         "is closed in the store"));
  for (int r = 0; r < 2; r++) {
    b2sc_producer_stats st;
    assert_int_equal(b2sc_producer_stats_get(b2sc_cluster_producer(cl, r),
                                             &st), 0);
    assert_int_equal(st.rejected, 3);    /* none acknowledged */
  }
  b2sc_cluster_close(cl);
  /* a rank restarted on the closed frame refuses too */
  assert_int_equal(env_stop(&c.rank[0], SIGKILL), -1);
  env_start(&c.rank[0]);
  assert_int_equal(b2sc_cluster_open(c.eps, 2, 1, "img", NULL, NULL, &cl), 0);
  send_range(cl, 16, 18);
  assert_int_equal(b2sc_cluster_flush(cl, FLUSH_MS), B2S_E_CLOSED);
  b2sc_cluster_close(cl);
  sleep(2);                       /* the committer's chance to misbehave */
  bool closed;
  assert_int_equal(store_state(&c, &closed), 10);
  assert_true(closed);
  check_chunks(&c, 10);
  assert_int_equal(cluster_committer_stop(cm, SIGTERM), 0);
  cluster_fini(&c);
}

/* ---- a producer killed without CLOSE ------------------------------------------ */

/* A producer process: frames 0..n-1 acknowledged, then SIGKILL to itself,
 * no CLOSE. */
static pid_t producer_killed(const cluster *c, int n) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    b2sc_cluster *cl;
    if (b2sc_cluster_open(c->eps, c->n, c->frames_per_block, "img", NULL,
                          NULL, &cl) != 0)
      _exit(2);
    uint8_t buf[CHUNK];
    for (int f = 0; f < n; f++) {
      cluster_frame_fill(buf, CHUNK, (uint64_t)f);
      if (b2sc_cluster_send(cl, (uint64_t)f, buf, CHUNK, SEND_MS) != 0)
        _exit(3);
    }
    if (b2sc_cluster_flush(cl, FLUSH_MS) != 0)
      _exit(4);
    kill(getpid(), SIGKILL);
    _exit(5);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  return pid;
}

static void test_producer_killed_ends(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 2, 2, NULL, streams_yaml);
  cluster_start(&c);
  pid_t cm = cluster_committer_start(&c, "img", GAP_MS);
  assert_true(cm > 0);
  struct timespec t0, t1;
  producer_killed(&c, 12);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* each rank ends the stream once its producer has been gone 10 s */
  assert_int_equal(wait_closed(&c, 25000), 12);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) +
                (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("frame closed %.1f s after its producer was killed\n", secs);
  assert_true(secs >= 9.0);
  check_chunks(&c, 12);
  for (int r = 0; r < 2; r++)
    assert_true(env_log_count(&c.rank[r], "went away without CLOSE") == 1);
  assert_int_equal(cluster_committer_stop(cm, SIGTERM), 0);
  cluster_fini(&c);
}

/* ---- a producer configured wrongly ---------------------------------------------- */

/* Run the b2stream tool with args; its exit status, stderr in err. */
static int run_cli(const cluster *c, const char *args, char *err, size_t cap) {
  const char *cli = getenv("B2S_CLI");
  assert_non_null(cli);
  char cmd[2048], errf[400];
  snprintf(errf, sizeof errf, "%s/cli.err", c->dir);
  snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", cli, args, errf);
  int st = system(cmd);
  FILE *f = fopen(errf, "r");
  assert_non_null(f);
  size_t n = fread(err, 1, cap - 1, f);
  err[n] = '\0';
  fclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_misconfigured_producer(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 2, 1, NULL, streams_yaml);
  cluster_start(&c);
  /* a gap timeout longer than the test: only an END could make the holes
   * the misrouted frames left gaps */
  pid_t cm = cluster_committer_start(&c, "img", 60000);
  assert_true(cm > 0);
  /* frames-per-block 2 where the cluster has 1 */
  b2sc_cluster *cl;
  assert_int_equal(b2sc_cluster_open(c.eps, 2, 2, "img", NULL, NULL, &cl), 0);
  send_range(cl, 0, 8);
  assert_int_equal(b2sc_cluster_flush(cl, FLUSH_MS), B2S_E_WRONG_RANK);
  b2sc_cluster_close(cl);
  /* one rank missing from the list: the refusal names the owner */
  char in[400], args[1500], err[4096];
  snprintf(in, sizeof in, "%s/in.bin", c.dir);
  FILE *f = fopen(in, "w");
  assert_non_null(f);
  uint8_t buf[CHUNK];
  for (uint64_t k = 0; k < 4; k++) {
    cluster_frame_fill(buf, CHUNK, k);
    assert_int_equal(fwrite(buf, 1, CHUNK, f), CHUNK);
  }
  fclose(f);
  snprintf(args, sizeof args, "produce --ranks %s --frames-per-block 1 "
           "--frame-number 0 --stream img --chunk-bytes 4096 '%s'",
           c.eps[0], in);
  assert_int_equal(run_cli(&c, args, err, sizeof err), 1);
  char want[600];
  snprintf(want, sizeof want, "belongs to rank 1, not to this rank 0 (%s)",
           c.eps[1]);
  if (!strstr(err, want))
    fail_msg("produce with one rank missing said: %s", err);
  /* neither run closed the frame */
  sleep(3);
  bool closed;
  store_state(&c, &closed);
  assert_false(closed);
  assert_true(env_log_count(&c.rank[0], "no END at this CLOSE") >= 1);
  /* the right producer afterwards: everything stored, then closed */
  assert_int_equal(b2sc_cluster_open(c.eps, 2, 1, "img", NULL, NULL, &cl), 0);
  send_range(cl, 0, 8);
  assert_int_equal(b2sc_cluster_flush(cl, FLUSH_MS), 0);
  assert_int_equal(b2sc_cluster_close(cl), 0);
  assert_int_equal(wait_closed(&c, 20000), 8);
  check_chunks(&c, 8);
  assert_int_equal(cluster_committer_stop(cm, SIGTERM), 0);
  cluster_fini(&c);
}

/* ---- b2stream produce --ranks across a rank's restart ---------------------------- */

#define PRODUCE_FRAMES 3000

/* Chunk objects of img in the directory store. */
static int objects_stored(const cluster *c) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | grep -c '^img\\.c\\.'",
           c->storage);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  int n = 0;
  if (fscanf(f, "%d", &n) != 1)
    n = 0;
  pclose(f);
  return n;
}

static void test_cli_produce_survives_restart(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 3, 1, NULL,
               "streams:\n  img:\n    format: distributed\n"
               "    chunk_nbytes: 4096\n    typesize: 4\n    codec: lz4\n"
               "    durability: {ack: fsync}\n");
  cluster_start(&c);
  pid_t cm = cluster_committer_start(&c, "img", 60000);
  assert_true(cm > 0);
  char in[400], out[400], errf[400];
  snprintf(in, sizeof in, "%s/in.bin", c.dir);
  snprintf(out, sizeof out, "%s/produce.out", c.dir);
  snprintf(errf, sizeof errf, "%s/produce.err", c.dir);
  FILE *f = fopen(in, "w");
  assert_non_null(f);
  uint8_t buf[CHUNK];
  for (uint64_t k = 0; k < PRODUCE_FRAMES; k++) {
    cluster_frame_fill(buf, CHUNK, k);
    assert_int_equal(fwrite(buf, 1, CHUNK, f), CHUNK);
  }
  fclose(f);
  char ranks[1200];
  snprintf(ranks, sizeof ranks, "%s,%s,%s", c.eps[0], c.eps[1], c.eps[2]);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    freopen(out, "w", stdout);
    freopen(errf, "w", stderr);
    const char *cli = getenv("B2S_CLI");
    execl(cli, cli, "produce", "--ranks", ranks, "--frames-per-block", "1",
          "--frame-number", "0", "--stream", "img", "--chunk-bytes", "4096",
          in, (char *)NULL);
    _exit(127);
  }
  /* rank 1 killed and restarted while the tool sends */
  for (int t = 0; objects_stored(&c) < PRODUCE_FRAMES / 5; t += 10) {
    assert_true(t < WAIT_MS);
    usleep(10000);
  }
  assert_int_equal(env_stop(&c.rank[1], SIGKILL), -1);
  int during = objects_stored(&c);
  usleep(300000);
  env_start(&c.rank[1]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  char text[4096] = "", etext[4096] = "";
  FILE *g = fopen(out, "r");
  assert_non_null(g);
  text[fread(text, 1, sizeof text - 1, g)] = '\0';
  fclose(g);
  g = fopen(errf, "r");
  assert_non_null(g);
  etext[fread(etext, 1, sizeof etext - 1, g)] = '\0';
  fclose(g);
  printf("killed at %d of %d stored\n%s%s", during, PRODUCE_FRAMES, text,
         etext);
  assert_true(during < PRODUCE_FRAMES);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  char want[200];
  snprintf(want, sizeof want, "%d acknowledged, 0 refused, 0 dropped, 0 not "
           "acknowledged", PRODUCE_FRAMES);
  assert_non_null(strstr(text, want));
  assert_null(strstr(text, " 0 reconnects"));
  assert_int_equal(wait_closed(&c, 30000), PRODUCE_FRAMES);
  check_chunks(&c, PRODUCE_FRAMES);
  assert_int_equal(cluster_committer_stop(cm, SIGTERM), 0);
  cluster_fini(&c);
}

/* ---- a rank configured with another N -------------------------------------------- */

/* Rank r's configuration without rank `drop`'s endpoint: N one less. */
static void config_without(cluster *c, int r, int drop) {
  FILE *f = fopen(c->rank[r].config, "r");
  assert_non_null(f);
  static char yaml[16384];
  size_t n = fread(yaml, 1, sizeof yaml - 1, f);
  fclose(f);
  yaml[n] = '\0';
  char line[400];
  snprintf(line, sizeof line, "    - %s\n", c->rank[drop].sock);
  char *at = strstr(yaml, line);
  assert_non_null(at);
  memmove(at, at + strlen(line), strlen(at + strlen(line)) + 1);
  env_write_config(&c->rank[r], yaml);
}

static void test_rank_with_other_n(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 3, 1, NULL, streams_yaml);
  config_without(&c, 1, 2);        /* rank 1 thinks there are 2 ranks */
  /* the wrong rank first (a configured stream's writer starts with its
   * daemon): it proposes, it does not create */
  env_start(&c.rank[1]);
  pid_t cm = cluster_committer_start(&c, "img", 60000);
  assert_true(cm > 0);
  b2sc_session *s;
  b2sc_producer *p;
  assert_int_equal(b2sc_connect(c.eps[1], "wrong", &s), 0);
  assert_int_equal(b2sc_producer_open(s, "img", NULL, &p), 0);
  uint8_t buf[CHUNK];
  cluster_frame_fill(buf, CHUNK, 1);
  b2sc_record rec = {.present = B2SC_REC_FRAME, .frame = 1};
  assert_int_equal(b2sc_send_rec(p, buf, CHUNK, &rec, SEND_MS), 0);
  sleep(2);
  bool closed;
  assert_int_equal(store_state(&c, &closed), -1);   /* no NAME.meta */
  assert_true(env_log_count(&c.rank[1], "waiting for a majority") >= 1);
  /* the right ones: two of three agree, the frame is theirs */
  env_start(&c.rank[0]);
  env_start(&c.rank[2]);
  b2sc_cluster *cl;
  assert_int_equal(b2sc_cluster_open(c.eps, 3, 1, "img", NULL, NULL, &cl), 0);
  send_range(cl, 0, 9);
  /* rank 1 refuses 1 and 7 (settings) and 4 (by its N, rank 0's) */
  int rc = b2sc_cluster_flush(cl, FLUSH_MS);
  assert_true(rc == B2S_E_CONFIG || rc == B2S_E_WRONG_RANK);
  assert_int_equal(b2sc_flush(p, FLUSH_MS), B2S_E_CONFIG);
  assert_non_null(strstr(b2sc_last_error(s),
                         "this rank's cluster settings differ"));
  b2s_store *st = NULL;
  assert_int_equal(cluster_store_open(&c, &st), 0);
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_open(st, "img", &df), 0);
  assert_int_equal(b2s_dframe_params_get(df)->ranks, 3);
  b2s_dframe_free(df);
  b2s_store_free(st);
  assert_true(env_log_count(&c.rank[1], "img.meta in the store has ranks "
                            "3") == 1);
  /* refused per buffer, the stream stays: no writer restarted */
  b2sc_producer_stats ps;
  assert_int_equal(b2sc_producer_stats_get(b2sc_cluster_producer(cl, 1), &ps),
                   0);
  assert_int_equal(ps.rejected, 3);
  assert_true(env_log_count(&c.rank[1], "distributed frame in") <= 1);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  b2sc_cluster_close(cl);
  assert_int_equal(cluster_committer_stop(cm, SIGTERM), 0);
  cluster_fini(&c);
}

/* ---- one committer per frame ----------------------------------------------- */

/* The exit status of pid within ms, or -2 while it still runs. */
static int exit_within(pid_t pid, int ms) {
  for (int t = 0; t <= ms; t += 50) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    usleep(50000);
  }
  return -2;
}

/* Whether the committers' log holds text (within ms). */
static bool log_has(const cluster *c, const char *text, int ms) {
  char path[400];
  snprintf(path, sizeof path, "%s/committer.log", c->dir);
  for (int t = 0; t <= ms; t += 50) {
    FILE *f = fopen(path, "r");
    if (f) {
      char line[1024];
      bool found = false;
      while (!found && fgets(line, sizeof line, f))
        found = strstr(line, text) != NULL;
      fclose(f);
      if (found)
        return true;
    }
    usleep(50000);
  }
  return false;
}

static void test_second_committer_refused(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 1, 1, NULL, streams_yaml);
  cluster_start(&c);
  pid_t a = cluster_committer_start(&c, "img", GAP_MS);
  assert_true(a > 0);
  assert_true(log_has(&c, "started:", WAIT_MS));
  /* the same frame and the same endpoints: refused, naming the holder,
   * before it binds anything */
  pid_t b = cluster_committer_start(&c, "img", GAP_MS);
  assert_true(b > 0);
  int st = exit_within(b, 5000);
  if (st == -2)
    cluster_committer_stop(b, SIGKILL);
  assert_int_equal(st, 1);
  char holder[512];
  snprintf(holder, sizeof holder, "frame img: committed by another "
           "committer: b2stream-committer on ");
  assert_true(log_has(&c, holder, 0));
  snprintf(holder, sizeof holder, " pid %ld, pull %s", (long)a, c.committer);
  assert_true(log_has(&c, holder, 0));
  /* the first one still has its endpoints and commits */
  b2sc_cluster *cl;
  assert_int_equal(b2sc_cluster_open(c.eps, 1, 1, "img", NULL, NULL, &cl), 0);
  send_range(cl, 0, 6);
  assert_int_equal(b2sc_cluster_flush(cl, FLUSH_MS), 0);
  assert_int_equal(b2sc_cluster_close(cl), 0);
  assert_int_equal(wait_closed(&c, 20000), 6);
  /* killed: its successor takes the frame over */
  assert_int_equal(cluster_committer_stop(a, SIGKILL), -1);
  pid_t d = cluster_committer_start(&c, "img", GAP_MS);
  assert_true(d > 0);
  char opened[128];
  snprintf(opened, sizeof opened, "frame img: opened, 1 ranks, committed 6");
  assert_true(log_has(&c, opened, WAIT_MS));
  assert_int_equal(exit_within(d, 500), -2);
  assert_int_equal(cluster_committer_stop(d, SIGTERM), 0);
  check_chunks(&c, 6);
  cluster_fini(&c);
}

/* On RADOS the lease is cls_lock's with a duration: a committer killed
 * keeps it until it expires, its successor waits for that and is back
 * within the lease (10 s by default); a second one is refused. */
static void test_second_committer_rados(void **state) {
  (void)state;
  if (!getenv("B2S_CEPH_CONF")) {
    printf("rados committer lease test skipped: B2S_CEPH_CONF not set\n");
    skip();
  }
  char name[64], yaml[256];   /* the pool outlives the test */
  snprintf(name, sizeof name, "lease-%d-%ld", (int)getpid(), (long)time(NULL));
  snprintf(yaml, sizeof yaml, "streams:\n  %s:\n    format: distributed\n"
           "    chunk_nbytes: 4096\n", name);
  cluster c;
  cluster_init(&c, 1, 1, "rados://b2stream", yaml);
  b2s_store *s = NULL;
  assert_int_equal(cluster_store_open(&c, &s), 0);
  b2s_dframe_params p = {.cparams = B2S_CPARAMS_DEFAULTS,
                         .chunk_nbytes = CHUNK, .ranks = 1,
                         .frames_per_block = 1};
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_create(s, name, &p, &df), 0);
  b2s_dframe_free(df);
  pid_t a = cluster_committer_start(&c, name, GAP_MS);
  char opened[160];
  snprintf(opened, sizeof opened, "frame %s: opened", name);
  assert_true(log_has(&c, opened, WAIT_MS));
  pid_t b = cluster_committer_start(&c, name, GAP_MS);
  int st = exit_within(b, 15000);   /* waits out one lease first */
  if (st == -2)
    cluster_committer_stop(b, SIGKILL);
  assert_int_equal(st, 1);
  char holder[512];
  snprintf(holder, sizeof holder, " pid %ld, pull %s", (long)a, c.committer);
  assert_true(log_has(&c, holder, 0));
  assert_int_equal(cluster_committer_stop(a, SIGKILL), -1);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t d = cluster_committer_start(&c, name, GAP_MS);
  /* "opened" a second time: the successor's */
  char path[400], line[1024];
  snprintf(path, sizeof path, "%s/committer.log", c.dir);
  int seen = 0;
  for (int t = 0; seen < 2 && t < WAIT_MS; t += 100) {
    usleep(100000);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    for (seen = 0; fgets(line, sizeof line, f);)
      seen += strstr(line, opened) != NULL;
    fclose(f);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) +
                (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("rados: committer back %.1f s after kill -9 (lease 10 s)\n", secs);
  assert_int_equal(seen, 2);
  assert_true(secs < 12.0);
  assert_int_equal(cluster_committer_stop(d, SIGTERM), 0);
  b2s_store_free(s);
  cluster_fini(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_closed_frame_refused),
      cmocka_unit_test(test_producer_killed_ends),
      cmocka_unit_test(test_misconfigured_producer),
      cmocka_unit_test(test_cli_produce_survives_restart),
      cmocka_unit_test(test_rank_with_other_n),
      cmocka_unit_test(test_second_committer_refused),
      cmocka_unit_test(test_second_committer_rados),
  };
  return harness_run(tests);
}

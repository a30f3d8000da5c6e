/* A distributed stream across hosts, short version: each host a network
 * namespace made here (ip netns, a veth pair into a bridge in a hub
 * namespace, an address of 10.228.0.0/24 each), three ranks on three
 * hosts, the committer on a fourth, `b2stream produce --ranks` on a
 * fifth, all over tcp://, sharing a directory store (the namespaces share
 * the file system).  While the producer runs, rank 1's host and then the
 * committer's host are cut off (ip link set down) for 2 s and healed,
 * then the committer and rank 2 are killed with SIGKILL and restarted.
 * Checked: the producer acknowledges every buffer, the committed prefix
 * read from the store never shrinks, every committed chunk holds its
 * frame bit for bit when first seen and at the end, the frame closes.
 * Needs root (CAP_NET_ADMIN) and iproute2; skipped otherwise. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
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
#include "b2s_store.h"
#include "cluster_util.h"
#include "daemon_harness.h"
#include "netns_hosts.h"
#include "ts.h"

#define HOSTS 5                    /* ranks 0..2, committer 3, producer 4 */
#define NFRAMES 6000
#define CHUNK 4096
#define PORT 7000

static nh_hosts hosts;
static char dir[256];
static env ranks[3];
static int nranks;                 /* ranks[0..nranks) made */
static bool passed;

/* ---- the follower: the store's committed prefix ----------------------------- */

typedef struct follower {
  b2s_store *s;
  b2s_dframe *df;
  int64_t h;                       /* highest seen */
  int64_t regressions, checked;
  b2s_ctx *ctx;
} follower;

static void check_chunk(follower *f, int64_t i) {
  uint8_t *chunk = NULL, got[CHUNK], want[CHUNK];
  size_t len = 0;
  assert_int_equal(b2s_dframe_chunk_get(f->df, i, &chunk, &len), 0);
  assert_int_equal(b2s_decompress(f->ctx, chunk, len, got, sizeof got), CHUNK);
  free(chunk);
  cluster_frame_fill(want, CHUNK, (uint64_t)i);
  if (memcmp(got, want, CHUNK) != 0)
    fail_msg("chunk %lld differs from frame %lld", (long long)i, (long long)i);
  f->checked++;
}

/* What the store says now: H never below one seen (a fresh handle each
 * time, so nothing cached hides a regression), new chunks checked. */
static void follow(follower *f, const char *store) {
  b2s_store *s;
  b2s_dframe *df;
  b2s_store_opts o = {0};
  assert_int_equal(b2s_store_open(store, &o, &s), 0);
  if (b2s_dframe_open(s, "img", &df) != 0) {
    b2s_store_free(s);
    return;
  }
  int64_t h;
  assert_int_equal(b2s_dframe_refresh(df, &h, NULL), 0);
  if (h < f->h)
    f->regressions++;
  b2s_dframe_free(f->df);
  b2s_store_free(f->s);
  f->s = s;
  f->df = df;
  for (int64_t i = f->h; i < h; i++)
    check_chunk(f, i);
  if (h > f->h)
    f->h = h;
}

/* ---- the test ------------------------------------------------------------------- */

/* The test's scratch directory: the ranks', the committer's store, the
 * producer's input. */
static void remove_scratch(void) {
  /* again while a process being killed may still make files in it */
  for (int i = 0; i < 50 && access(dir, F_OK) == 0; i++) {
    if (ts_rmtree(dir) == 0)
      break;
    usleep(100000);
  }
}

/* A failed run's logs, before they are removed. */
static void show_logs(void) {
  static const char *const mine[] = {"produce.log", "committer.log"};
  char path[400];
  for (size_t k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "%s/%s", dir, mine[k]);
    if (access(path, R_OK) == 0)
      nh_sh("echo '--- tail of %s'; tail -25 '%s'", mine[k], path);
  }
  for (int r = 0; r < nranks; r++)
    nh_sh("echo '--- tail of rank %d'; tail -15 '%s'", r, ranks[r].log);
}

/* Also after a failure: every process it started, the namespaces, the
 * files. */
static void cleanup(void) {
  if (!passed && dir[0])
    show_logs();
  nh_down(&hosts);
  nh_janitor_done();
  if (dir[0])
    remove_scratch();
  dir[0] = '\0';
  nranks = 0;
}

static void test_netns_cut_and_heal(void **state) {
  (void)state;
  if (geteuid() != 0 || nh_sh("ip netns list >/dev/null 2>&1") != 0) {
    printf("network namespace test skipped: needs root and iproute2\n");
    skip();
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* made before the janitor starts, so that it knows what to remove */
  snprintf(dir, sizeof dir, "/tmp/b2s-netns-XXXXXX");
  assert_non_null(mkdtemp(dir));
  printf("netns: scratch %s\n", dir);    /* tests/netns_leftovers.sh checks */
  fflush(stdout);
  if (nh_name(&hosts, HOSTS, 228, 's') == 0)
    nh_janitor_start(&hosts, remove_scratch);
  if (hosts.n == 0 || nh_up(&hosts) != 0) {
    nh_down(&hosts);
    nh_janitor_done();
    remove_scratch();
    printf("network namespace test skipped: cannot make namespaces\n");
    skip();
  }
  char store[300], in[300], plog[300], clog[300], cip[32], pull[64], pub[64];
  snprintf(store, sizeof store, "%s/store", dir);
  snprintf(in, sizeof in, "%s/in.bin", dir);
  snprintf(plog, sizeof plog, "%s/produce.log", dir);
  snprintf(clog, sizeof clog, "%s/committer.log", dir);
  nh_ip(&hosts, 3, cip, sizeof cip);
  snprintf(pull, sizeof pull, "tcp://%s:%d", cip, PORT + 1);
  snprintf(pub, sizeof pub, "tcp://%s:%d", cip, PORT + 2);
  FILE *f = fopen(in, "w");
  assert_non_null(f);
  uint8_t buf[CHUNK];
  for (uint64_t k = 0; k < NFRAMES; k++) {
    cluster_frame_fill(buf, CHUNK, k);
    assert_int_equal(fwrite(buf, 1, CHUNK, f), CHUNK);
  }
  fclose(f);

  char *cm_argv[] = {(char *)getenv("B2S_COMMITTER"), "--store", store,
                     "--pull", pull, "--pub", pub, "--frame", "img",
                     "--gap-timeout-ms", "60000", NULL};
  pid_t cm = nh_spawn(&hosts, 3, clog, cm_argv);
  pid_t rp[3];
  char *rank_argv[3][4];
  for (int r = 0; r < 3; r++) {
    nh_rank_config(&hosts, &ranks[r], r, PORT, store, NULL, dir);
    nranks = r + 1;
    rank_argv[r][0] = (char *)getenv("B2S_DAEMON");
    rank_argv[r][1] = "--config";
    rank_argv[r][2] = ranks[r].config;
    rank_argv[r][3] = NULL;
    rp[r] = nh_spawn(&hosts, r, ranks[r].log, rank_argv[r]);
  }
  for (int r = 0; r < 3; r++)
    nh_wait_log(&ranks[r], "listening on tcp://", WAIT_MS);
  printf("netns: daemons up\n");        /* tests/netns_leftovers.sh waits */
  fflush(stdout);
  /* B2S_NETNS_FAIL_AT=N: fail at the N-th fault, to see that a failed run
   * leaves nothing behind (tests/netns_leftovers.sh) */
  const char *fail_env = getenv("B2S_NETNS_FAIL_AT");
  int fail_at = fail_env ? atoi(fail_env) : 0;
  char eps[512], ip[32];
  int n = 0;
  for (int r = 0; r < 3; r++) {
    nh_ip(&hosts, r, ip, sizeof ip);
    n += snprintf(eps + n, sizeof eps - (size_t)n, "%stcp://%s:%d",
                  r ? "," : "", ip, PORT);
  }
  char *pr_argv[] = {(char *)getenv("B2S_CLI"), "produce", "--ranks", eps,
                     "--frames-per-block", "1", "--frame-number", "0",
                     "--stream", "img", "--chunk-bytes", "4096", in, NULL};
  /* the producer's link at 8 Mbit/s (about 230 buffers a second): on an
     idle machine it would otherwise be done before the faults */
  assert_int_equal(nh_sh("ip netns exec %s tc qdisc add dev eth0 root tbf rate "
                      "8mbit burst 32kb latency 500ms", hosts.ns[4]), 0);
  pid_t prod = nh_spawn(&hosts, 4, plog, pr_argv);

  follower fo = {.ctx = b2s_ctx_new()};
  int faults = 0, phase = 0, st = 0;
  struct timespec cut_at;
  for (int t = 0;; t += 50) {
    assert_true(t < 300000);
    follow(&fo, store);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (fail_at > 0 && faults >= fail_at)
      fail_msg("failing on purpose at fault %d (B2S_NETNS_FAIL_AT)", faults);
    if ((phase == 0 && fo.h >= NFRAMES / 6) ||
        (phase == 2 && fo.h >= NFRAMES / 2)) {
      nh_link(&hosts, phase == 0 ? 1 : 3, "down");   /* rank 1, then committer */
      cut_at = now;
      faults++;
      phase++;
    } else if ((phase == 1 || phase == 3) && now.tv_sec - cut_at.tv_sec >= 2) {
      nh_link(&hosts, phase == 1 ? 1 : 3, "up");
      phase++;
    }
    if (phase == 4 && fo.h >= NFRAMES * 2 / 3) {
      assert_int_equal(nh_stop(&cm, SIGKILL), -1);
      assert_int_equal(nh_stop(&rp[2], SIGKILL), -1);
      usleep(300000);
      cm = nh_spawn(&hosts, 3, clog, cm_argv);
      rp[2] = nh_spawn(&hosts, 2, ranks[2].log, rank_argv[2]);
      faults += 2;
      phase++;
    }
    if (phase >= 5 && nh_reap(&prod, &st, false))
      break;
    if (phase < 5 && nh_reap(&prod, &st, false)) {
      char early[2048] = "";
      FILE *pl = fopen(plog, "r");
      if (pl) {
        early[fread(early, 1, sizeof early - 1, pl)] = '\0';
        fclose(pl);
      }
      fail_msg("the producer ended before the faults (phase %d): %s", phase,
               early);
    }
    usleep(50000);
  }
  char out[4096] = "";
  f = fopen(plog, "r");
  assert_non_null(f);
  out[fread(out, 1, sizeof out - 1, f)] = '\0';
  fclose(f);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("produce: %s", out);
  char want[128];
  snprintf(want, sizeof want, "%d acknowledged, 0 refused, 0 dropped, 0 not "
           "acknowledged", NFRAMES);
  assert_non_null(strstr(out, want));
  printf("%s", out);
  /* the producer closed: every rank ends, the committer closes */
  bool closed = false;
  for (int t = 0; !closed || fo.h < NFRAMES; t += 100) {
    if (t > 60000)
      fail_msg("committed %lld of %d, closed %d", (long long)fo.h, NFRAMES,
               closed);
    follow(&fo, store);
    assert_int_equal(b2s_dframe_refresh(fo.df, NULL, &closed), 0);
    usleep(100000);
  }
  assert_int_equal(fo.h, NFRAMES);
  for (int64_t i = 0; i < NFRAMES; i++)      /* again, at the end */
    check_chunk(&fo, i);
  assert_int_equal(fo.regressions, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("netns: %d acknowledged, 0 lost, %lld prefix regressions, %d "
         "faults (2 link cuts, 2 kill -9), %lld chunk checks, %.1f s\n",
         NFRAMES,
         (long long)fo.regressions, faults, (long long)fo.checked,
         (double)(t1.tv_sec - t0.tv_sec) +
             (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
  b2s_dframe_free(fo.df);
  b2s_store_free(fo.s);
  b2s_ctx_free(fo.ctx);
  assert_int_equal(nh_stop(&cm, SIGTERM), 0);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(nh_stop(&rp[r], SIGTERM), 0);
    env_fini(&ranks[r]);
  }
  passed = true;
  cleanup();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_netns_cut_and_heal),
  };
  int rc = harness_run(tests);
  cleanup();                 /* also after a failure */
  return rc;
}

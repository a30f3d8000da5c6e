/* The committer killed with SIGKILL and restarted at once, as a service
 * manager with Restart=always and a short delay restarts it
 * (docs/DISTRIBUTED.md section 9): three ranks (real b2streamd), two
 * routing producers sending 600 interleaved frames, and the real
 * b2stream-committer killed at moments drawn from a seed: while the
 * producers send, right after the last producer's last send, and after
 * the producers closed (every rank sent END).  Each seed's committer runs
 * either with --frame or, as b2stream-committer@.service runs it, learning
 * the frame from the ranks' messages.  On RADOS a killed committer keeps
 * its lease until it expires: its successor takes the frame over on its
 * own clock once it has, whether or not a message comes.  The producers
 * hold their CLOSE until the kill after their last send is done, so that
 * one always comes before the ranks' END.
 *
 * Checked: every frame is acknowledged, the committed count read from the
 * store never moves back, and once the producers are done the frame
 * closes at 600 with every chunk its frame's bytes and no gap.  That is
 * waited for with a generous deadline (the bound is in DISTRIBUTED.md);
 * the time from the last kill to the close is printed, not asserted.
 *
 * B2S_RESTART_SEED (first seed; else the clock), B2S_RESTART_SEEDS (how
 * many, default 2 per store), B2S_RESTART_LEASE_MS (RADOS: the
 * committers' --lease-ms, default 3000; the committer's default is
 * 10000).  On the local store, and on RADOS when $B2S_CEPH_CONF names a
 * test cluster (scripts/ceph-test-cluster); skipped, saying so,
 * otherwise. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "b2s_chunk.h"
#include "b2s_dframe.h"
#include "b2s_errors.h"
#include "b2s_store.h"
#include "b2stream_client.h"
#include "cluster_util.h"
#include "daemon_harness.h"
#include "ts.h"

#define CHUNK 4096
#define NFRAMES 600
#define RANKS 3
#define FPB 2
#define PACE_US 15000              /* between two frames of one producer */
#define SEND_MS 5000
#define GAP_MS 60000               /* no frame goes missing: no gap */
#define RESTART_MAX_MS 250         /* "at once": Restart=always, short */
#define CLOSE_WAIT_MS 90000        /* generous: the bound is a few s */
#define KILLS_MAX 8

/* What a failed run leaves for the teardown to end (main thread only). */
static pid_t g_committer;
static cluster *g_cluster;

static uint64_t rng_next(uint64_t *s) {   /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
  const char *e = getenv(name);
  return e && *e ? strtoull(e, NULL, 0) : dflt;
}

/* ---- producers ------------------------------------------------------------- */

typedef struct producer {
  const cluster *c;
  const char *name;
  int parity;                      /* frames f with f % 2 == parity */
  atomic_int *sent_all;            /* producers past their last send */
  atomic_bool *may_close;          /* set once the kill after the last
                                      send is done */
  atomic_int *closed;              /* producers closed */
  int acked;                       /* frames acknowledged */
  char err[256];
} producer;

static void *producer_main(void *arg) {
  producer *p = arg;
  b2sc_cluster *cl;
  int rc = b2sc_cluster_open(p->c->eps, RANKS, FPB, p->name, NULL, NULL, &cl);
  if (rc != 0) {
    snprintf(p->err, sizeof p->err, "open: %s", b2s_strerror(rc));
    return NULL;
  }
  uint8_t buf[CHUNK];
  for (uint64_t f = (uint64_t)p->parity; f < NFRAMES && rc == 0; f += 2) {
    cluster_frame_fill(buf, CHUNK, f);
    rc = b2sc_cluster_send(cl, f, buf, CHUNK, SEND_MS);
    usleep(PACE_US);
  }
  /* pairs with the kill loop's acquire load */
  atomic_fetch_add_explicit(p->sent_all, 1, memory_order_release);
  if (rc == 0)
    rc = b2sc_cluster_flush(cl, SEND_MS);
  int unacked = 0;
  for (int i = 0; i < RANKS; i++)
    unacked += b2sc_cluster_unacked(cl, i, NULL, 0);
  p->acked = NFRAMES / 2 - unacked;
  if (rc != 0 || unacked != 0)
    snprintf(p->err, sizeof p->err, "producer %d: %s, %d frames not "
             "acknowledged (%s)", p->parity, b2s_strerror(rc), unacked,
             b2sc_cluster_last_error(cl));
  /* pairs with the kill loop's release store: the committer is killed
   * between the last send and the ENDs, which follow within ms */
  while (!atomic_load_explicit(p->may_close, memory_order_acquire))
    usleep(5000);
  rc = b2sc_cluster_close(cl);     /* the ranks send END */
  if (rc != 0 && !p->err[0])
    snprintf(p->err, sizeof p->err, "producer %d: close: %s", p->parity,
             b2s_strerror(rc));
  atomic_fetch_add_explicit(p->closed, 1, memory_order_release);
  return NULL;
}

/* ---- the committer's kills ------------------------------------------------ */

typedef struct run {
  cluster c;
  char name[96];
  uint64_t rng;
  bool named;                      /* the committer has --frame */
  int lease_ms;                    /* 0: the committer's default */
  pid_t committer;
  int kills;
  int64_t t0, last_kill;
  char log[1024];                  /* what was killed when, for a replay */
  /* the store's committed count: never moves back */
  b2s_store *s;
  b2s_dframe *df;
  int64_t h;
  bool closed;
  int64_t closed_seen;             /* when first seen closed */
} run;

static void committer_start(run *r) {
  r->committer = g_committer = cluster_committer_start_opts(
      &r->c, r->named ? r->name : NULL, GAP_MS, r->lease_ms);
  assert_true(r->committer > 0);
}

/* kill -9, then back after 0..RESTART_MAX_MS. */
static void kill_restart(run *r, const char *when) {
  assert_true(r->kills < KILLS_MAX);
  useconds_t pause = (useconds_t)(rng_next(&r->rng) % RESTART_MAX_MS) * 1000;
  size_t at = strlen(r->log);
  snprintf(r->log + at, sizeof r->log - at, " %s@%lldms+%ums", when,
           (long long)(ts_now_ms() - r->t0), (unsigned)(pause / 1000));
  assert_int_equal(cluster_committer_stop(r->committer, SIGKILL), -1);
  r->committer = g_committer = 0;
  usleep(pause);
  committer_start(r);
  r->kills++;
  r->last_kill = ts_now_ms();
}

/* The store's view: H never below one seen, closed only at the end. */
static void sample(run *r) {
  if (!r->df && b2s_dframe_open(r->s, r->name, &r->df) != 0)
    return;                        /* no NAME.meta yet */
  int64_t h = 0;
  bool closed = false;
  assert_int_equal(b2s_dframe_refresh(r->df, &h, &closed), 0);
  if (h < r->h)
    fail_msg("the committed count went from %lld back to %lld",
             (long long)r->h, (long long)h);
  if (closed && h != NFRAMES)
    fail_msg("closed at %lld of %d", (long long)h, NFRAMES);
  r->h = h;
  if (closed && !r->closed)
    r->closed_seen = ts_now_ms();
  r->closed = closed;
}

/* Kills while the producers send (at drawn moments over the sending
 * time), one after their last send, one after they closed. */
static void kill_loop(run *r, atomic_int *sent_all, atomic_bool *may_close,
                      atomic_int *closed) {
  int64_t send_ms = (int64_t)NFRAMES / 2 * PACE_US / 1000;
  int during = 1 + (int)(rng_next(&r->rng) % 2);
  int64_t at[2];
  for (int k = 0; k < during; k++)
    at[k] = 300 + (int64_t)(rng_next(&r->rng) % (uint64_t)(send_ms - 300));
  if (during == 2 && at[1] < at[0]) {
    int64_t t = at[0];
    at[0] = at[1];
    at[1] = t;
  }
  /* the ranks' END follows the close within milliseconds, and the
   * committer's close follows them: some kills come before it, some on
   * a closed frame */
  int64_t after_send = (int64_t)(rng_next(&r->rng) % 500);
  int64_t after_close = (int64_t)(rng_next(&r->rng) % 100);
  int64_t sent_at = -1, closed_at = -1;
  int next = 0;
  bool send_kill = false, close_kill = false;
  while (!close_kill) {
    sample(r);
    int64_t t = ts_now_ms();
    /* pairs with the producers' release increments */
    if (sent_at < 0 &&
        atomic_load_explicit(sent_all, memory_order_acquire) == 2)
      sent_at = t;
    if (closed_at < 0 &&
        atomic_load_explicit(closed, memory_order_acquire) == 2)
      closed_at = t;
    if (next < during && sent_at < 0 && t - r->t0 >= at[next]) {
      kill_restart(r, "sending");
      next++;
    } else if (!send_kill && sent_at >= 0 && t - sent_at >= after_send) {
      kill_restart(r, "sent");
      send_kill = true;
      /* pairs with the producers' acquire loads */
      atomic_store_explicit(may_close, true, memory_order_release);
    } else if (send_kill && closed_at >= 0 && t - closed_at >= after_close) {
      kill_restart(r, "closed");
      close_kill = true;
    }
    usleep(10000);
  }
}

/* ---- the end ------------------------------------------------------------------ */

static void wait_closed(run *r) {
  int64_t dl = ts_now_ms() + CLOSE_WAIT_MS + (r->lease_ms ? r->lease_ms : 10000);
  while (!(r->closed && r->h == NFRAMES)) {
    if (ts_now_ms() > dl)
      fail_msg("committed %lld of %d, closed %d, %lld ms after the last "
               "kill (kills:%s)", (long long)r->h, NFRAMES, r->closed,
               (long long)(ts_now_ms() - r->last_kill), r->log);
    sample(r);
    usleep(20000);
  }
}

/* Every chunk is its frame's bytes, with its record; no gap. */
static void check_chunks(run *r) {
  b2s_ctx *ctx = b2s_ctx_new();
  for (int64_t i = 0; i < NFRAMES; i++) {
    uint8_t *chunk = NULL, got[CHUNK], want[CHUNK];
    size_t len = 0;
    assert_int_equal(b2s_dframe_chunk_get(r->df, i, &chunk, &len), 0);
    b2s_record rec;
    assert_int_equal(b2s_dframe_record_get(r->df, i, &rec), 0);
    assert_int_equal(rec.frame, (uint64_t)i);
    if (rec.flags != 0)
      fail_msg("chunk %lld has flags %u (a gap?)", (long long)i,
               (unsigned)rec.flags);
    assert_true(rec.xxh64 == b2s_chunk_xxh64(chunk, len));
    assert_int_equal(b2s_decompress(ctx, chunk, len, got, sizeof got), CHUNK);
    cluster_frame_fill(want, CHUNK, (uint64_t)i);
    if (memcmp(got, want, CHUNK) != 0)
      fail_msg("chunk %lld is not frame %lld's bytes", (long long)i,
               (long long)i);
    free(chunk);
  }
  b2s_ctx_free(ctx);
}

static void run_seed(const char *storage, uint64_t seed, int lease_ms) {
  run *r = calloc(1, sizeof *r);
  assert_non_null(r);
  r->rng = seed ? seed : 1;        /* xorshift needs a nonzero state */
  r->named = seed & 1;
  r->lease_ms = lease_ms;
  if (storage)                     /* the pool outlives the test */
    snprintf(r->name, sizeof r->name, "restart-%d-%ld-%llu", (int)getpid(),
             (long)time(NULL), (unsigned long long)seed);
  else
    snprintf(r->name, sizeof r->name, "img");
  char yaml[512];
  snprintf(yaml, sizeof yaml, "streams:\n  %s:\n    format: distributed\n"
           "    chunk_nbytes: %d\n    typesize: 4\n    codec: lz4\n"
           "    durability: {ack: write}\n", r->name, CHUNK);
  cluster_init(&r->c, RANKS, FPB, storage, yaml);
  g_cluster = &r->c;
  cluster_start(&r->c);
  assert_int_equal(cluster_store_open(&r->c, &r->s), 0);
  committer_start(r);
  atomic_int sent_all = 0, closed = 0;
  atomic_bool may_close = false;
  producer pr[2];
  pthread_t tp[2];
  r->t0 = ts_now_ms();
  for (int k = 0; k < 2; k++) {
    pr[k] = (producer){.c = &r->c, .name = r->name, .parity = k,
                       .sent_all = &sent_all, .may_close = &may_close,
                       .closed = &closed};
    assert_int_equal(pthread_create(&tp[k], NULL, producer_main, &pr[k]), 0);
  }
  kill_loop(r, &sent_all, &may_close, &closed);
  for (int k = 0; k < 2; k++)
    assert_int_equal(pthread_join(tp[k], NULL), 0);
  for (int k = 0; k < 2; k++)
    if (pr[k].err[0])
      fail_msg("%s (seed %llu)", pr[k].err, (unsigned long long)seed);
  wait_closed(r);
  check_chunks(r);
  char after[64] = "before the last kill";
  if (r->closed_seen > r->last_kill)
    snprintf(after, sizeof after, "%lld ms after the last kill",
             (long long)(r->closed_seen - r->last_kill));
  printf("restart seed %llu (%s, %s): %d kills:%s; %d acknowledged, %lld "
         "committed, closed at %lldms (%s)\n", (unsigned long long)seed,
         storage ? "rados" : "local",
         r->named ? "--frame" : "frame from messages", r->kills, r->log,
         pr[0].acked + pr[1].acked, (long long)r->h,
         (long long)(r->closed_seen - r->t0), after);
  fflush(stdout);
  assert_int_equal(pr[0].acked + pr[1].acked, NFRAMES);
  /* the ranks first, all at once (each lingers to deliver END) */
  for (int i = 0; i < RANKS; i++)
    kill(r->c.rank[i].pid, SIGTERM);
  assert_int_equal(cluster_committer_stop(r->committer, SIGTERM), 0);
  r->committer = g_committer = 0;
  b2s_dframe_free(r->df);
  b2s_store_free(r->s);
  cluster_fini(&r->c);
  g_cluster = NULL;
  free(r);
}

static void run_seeds(const char *storage, int lease_ms) {
  uint64_t first = env_u64("B2S_RESTART_SEED", (uint64_t)time(NULL) ^
                           ((uint64_t)getpid() << 20));
  int n = (int)env_u64("B2S_RESTART_SEEDS", 2);
  printf("restart seeds %llu..%llu (replay with B2S_RESTART_SEED=%llu "
         "B2S_RESTART_SEEDS=%d)\n", (unsigned long long)first,
         (unsigned long long)(first + (uint64_t)n - 1),
         (unsigned long long)first, n);
  fflush(stdout);
  for (int k = 0; k < n; k++)
    run_seed(storage, first + (uint64_t)k, lease_ms);
}

/* After a failure: no committer or rank left running, no directory left
 * behind. */
static int teardown(void **state) {
  (void)state;
  if (g_committer > 0)
    cluster_committer_stop(g_committer, SIGKILL);
  g_committer = 0;
  if (g_cluster) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "tail -30 '%s/committer.log' >&2",
             g_cluster->dir);
    if (system(cmd) != 0)
      fprintf(stderr, "no committer log\n");
    for (int i = 0; i < g_cluster->n; i++)
      env_fini(&g_cluster->rank[i]);
    if (ts_rmtree(g_cluster->dir) != 0)
      fprintf(stderr, "removing %s failed\n", g_cluster->dir);
  }
  g_cluster = NULL;
  return 0;
}

static void test_restart_local(void **state) {
  (void)state;
  run_seeds(NULL, 0);
}

static void test_restart_rados(void **state) {
  (void)state;
  if (!b2s_store_have_rados() || !getenv("B2S_CEPH_CONF")) {
    printf("rados restart test skipped: %s\n",
           b2s_store_have_rados() ? "B2S_CEPH_CONF not set"
                                  : "this build has no librados");
    skip();
  }
  run_seeds("rados://b2stream", (int)env_u64("B2S_RESTART_LEASE_MS", 3000));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_restart_local, teardown),
      cmocka_unit_test_teardown(test_restart_rados, teardown),
  };
  return harness_run(tests);
}

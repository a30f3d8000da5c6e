/* A distributed stream under kill -9 (docs/DISTRIBUTED.md section 5):
 * three ranks (real b2streamd), the real b2stream-committer and two
 * routing producers sending interleaved frame numbers (even and odd), while
 * a chaos loop kills, at pseudo-random moments, a random rank (restarted
 * after a short pause; the producers reconnect and resend what it did not
 * acknowledge) or the committer (restarted), several times per run.  The
 * seed comes from $B2S_CHAOS_SEED, else the clock, and is printed: the
 * same seed replays the same victims, pauses and moments (as far as the
 * machine's timing allows).
 *
 * A follower thread tracks the committed count through COMMITTED on
 * committer_pub and b2s_dframe_refresh: the count never moves back, a
 * published count is in the store, and every chunk it reads below the
 * count is final (its bytes never change after the first read; checked
 * again at random while the run goes on, and all of them at the end).
 *
 * At the end: the frame closes at the expected end; every frame a producer
 * saw acknowledged holds its bytes bit for bit; a frame never acknowledged
 * holds its bytes or is a gap (and gaps are no more than the rejections
 * the producers were told of); records carry the xxh64 of their chunk; the
 * export opens with b2s_frame_open and matches chunk for chunk and record
 * for record.  On the local store, and on RADOS when $B2S_CEPH_CONF names
 * a test cluster (scripts/ceph-test-cluster); skipped, saying so,
 * otherwise.
 *
 * Threads: cmocka asserts only on the main thread; producers and follower
 * note their first failure and the main thread fails with it. */
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

#include <zmq.h>

#include "b2s_chunk.h"
#include "b2s_dframe.h"
#include "b2s_dmsg.h"
#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2s_store.h"
#include "b2stream_client.h"
#include "cluster_util.h"
#include "daemon_harness.h"
#include "b2s_frame.h"
#include "ts.h"

#define CHUNK 4096                 /* bytes of every frame */
#define NFRAMES 300
#define RANKS 3
#define FPB 2                      /* frames per block */
#define PACE_US 45000              /* between two frames of one producer */
#define SHORT_MS 300               /* a send while a rank may be dead */
#define SEND_MS 5000
#define GAP_MS 6000                /* well above a rank's restart */
#define MIN_KILLS 6
#define MIN_EACH 2                 /* kills of ranks, and of the committer */
#define SETTLE_MS 40000            /* producers' final resends */
#define FOLLOW_MS 40000            /* the frame closes after the producers */

/* What a failed run leaves for the teardown to end: the committer, the
 * cluster (main thread only). */
static pid_t g_committer;
static cluster *g_cluster;

static uint64_t rng_next(uint64_t *s) {   /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

/* What the threads share with the chaos loop. */
typedef struct run {
  cluster c;
  const char *name;
  /* incremented (release) once rank i is back after a kill; producers
   * read it (acquire) and resend to that rank */
  atomic_uint epoch[RANKS];
  /* set (release) when the chaos is over; producers and follower read it
   * (acquire) */
  atomic_bool calm;
  /* set (release) by each producer after its last first send; the chaos
   * loop reads it (acquire) */
  atomic_int done_sending;
  /* set (release) by the main thread when the follower must give up;
   * read (acquire) by the follower */
  atomic_bool stop_follow;
} run;

static void note(char *err, size_t cap, const char *fmt, ...) {
  if (err[0])
    return;                        /* the first failure tells most */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
}

/* ---- producers ----------------------------------------------------------------- */

typedef struct producer {
  run *r;
  int parity;                      /* sends frames f with f % 2 == parity */
  b2sc_cluster *cl;
  unsigned seen[RANKS];            /* epoch of the last resend per rank */
  unsigned session[RANKS];         /* per rank: reconnects so far */
  unsigned sent_in[NFRAMES];       /* session of the frame's last send */
  bool acked[NFRAMES];             /* seen acknowledged */
  uint64_t rejected;               /* rejections told, all sessions */
  int send_errors, conflicts, resent;
  char err[512];
} producer;

/* Frames of rank i sent in its current session and no longer
 * unacknowledged were acknowledged, unless the session had a rejection
 * (a frame made a gap first) or a drop: then nothing is claimed. */
static void mark_acked(producer *p, int i) {
  b2sc_producer_stats st;
  b2sc_producer *rp = b2sc_cluster_producer(p->cl, i);
  if (!rp || b2sc_producer_stats_get(rp, &st) != 0)
    return;
  uint64_t un[NFRAMES];
  int n = b2sc_cluster_unacked(p->cl, i, un, NFRAMES);
  if (n < 0 || n > NFRAMES || st.rejected != 0 || st.dropped != 0)
    return;
  bool pending[NFRAMES] = {false};
  for (int k = 0; k < n; k++)
    pending[un[k]] = true;
  for (int f = p->parity; f < NFRAMES; f += 2)
    if (b2sc_cluster_owner(p->cl, (uint64_t)f) == i && !pending[f] &&
        p->sent_in[f] == p->session[i] + 1)
      p->acked[f] = true;
}

/* The rank's session ends: claim what it acknowledged, count what it
 * rejected. */
static void session_end(producer *p, int i) {
  mark_acked(p, i);
  b2sc_producer_stats st;
  b2sc_producer *rp = b2sc_cluster_producer(p->cl, i);
  if (rp && b2sc_producer_stats_get(rp, &st) == 0)
    p->rejected += st.rejected;
  p->session[i]++;
}

static void resend(producer *p, int i) {
  uint64_t un[NFRAMES];
  int n = b2sc_cluster_unacked(p->cl, i, un, NFRAMES);
  session_end(p, i);
  for (int k = 0; k < n && k < NFRAMES; k++)
    p->sent_in[un[k]] = p->session[i] + 1;
  p->resent += n > 0 ? n : 0;
  int rc = cluster_resend(p->cl, i, CHUNK, SHORT_MS);
  if (rc == B2S_E_OBJ_CONFLICT)
    p->conflicts++;
  else if (rc != 0)
    p->send_errors++;              /* still unacknowledged: sent again */
}

/* Resend to every rank restarted since the last look. */
static void catch_up(producer *p) {
  for (int i = 0; i < RANKS; i++) {
    unsigned e = atomic_load_explicit(&p->r->epoch[i], memory_order_acquire);
    if (e != p->seen[i]) {
      p->seen[i] = e;
      resend(p, i);
    }
  }
}

static void send_one(producer *p, uint64_t f) {
  uint8_t buf[CHUNK];
  cluster_frame_fill(buf, CHUNK, f);
  int i = b2sc_cluster_owner(p->cl, f);
  p->sent_in[f] = p->session[i] + 1;
  int rc = b2sc_cluster_send(p->cl, f, buf, CHUNK, SHORT_MS);
  if (rc == B2S_E_OBJ_CONFLICT)
    p->conflicts++;
  else if (rc != 0)
    p->send_errors++;              /* kept unacknowledged for the resend */
}

static int unacked_total(producer *p) {
  int n = 0;
  for (int i = 0; i < RANKS; i++)
    n += b2sc_cluster_unacked(p->cl, i, NULL, 0);
  return n;
}

/* After the chaos: resend until every frame is acknowledged or
 * rejected. */
static void settle(producer *p) {
  int64_t end = ts_now_ms() + SETTLE_MS;
  for (;;) {
    catch_up(p);
    int rc = b2sc_cluster_flush(p->cl, SEND_MS);
    if (rc == B2S_E_OBJ_CONFLICT)
      p->conflicts++;
    if (unacked_total(p) == 0 && (rc == 0 || rc == B2S_E_OBJ_CONFLICT))
      break;
    if (ts_now_ms() > end) {
      note(p->err, sizeof p->err, "producer %d: %d frames still "
           "unacknowledged after the chaos (%s)", p->parity,
           unacked_total(p), b2sc_cluster_last_error(p->cl));
      return;
    }
    for (int i = 0; i < RANKS; i++)
      if (b2sc_cluster_unacked(p->cl, i, NULL, 0) > 0)
        resend(p, i);
  }
  for (int i = 0; i < RANKS; i++)
    session_end(p, i);
}

static void *producer_main(void *arg) {
  producer *p = arg;
  for (uint64_t f = (uint64_t)p->parity; f < NFRAMES; f += 2) {
    catch_up(p);
    send_one(p, f);
    usleep(PACE_US);
  }
  /* pairs with the chaos loop's acquire load */
  atomic_fetch_add_explicit(&p->r->done_sending, 1, memory_order_release);
  /* pairs with the main thread's release store */
  while (!atomic_load_explicit(&p->r->calm, memory_order_acquire)) {
    catch_up(p);
    usleep(20000);
  }
  settle(p);
  int rc = b2sc_cluster_close(p->cl);
  p->cl = NULL;
  if (rc != 0 && rc != B2S_E_OBJ_CONFLICT)
    note(p->err, sizeof p->err, "producer %d: close: %s", p->parity,
         b2s_strerror(rc));
  return NULL;
}

/* ---- the follower --------------------------------------------------------------- */

typedef struct follower {
  run *r;
  uint64_t rng;
  void *sub;
  b2s_store *store;
  b2s_dframe *df;
  int64_t h, published;            /* highest count refreshed, published */
  bool closed;
  uint8_t *seen[NFRAMES];          /* bytes of chunk i at its first read */
  size_t seen_len[NFRAMES];
  int rereads, messages;
  char err[512];
} follower;

static bool same_chunk(follower *fw, int64_t i, const char *when) {
  uint8_t *chunk = NULL;
  size_t len = 0;
  int rc = b2s_dframe_chunk_get(fw->df, i, &chunk, &len);
  if (rc != 0) {
    note(fw->err, sizeof fw->err, "%s: chunk %lld below H %lld: %s", when,
         (long long)i, (long long)fw->h, b2s_strerror(rc));
    return false;
  }
  bool same = len == fw->seen_len[i] && memcmp(chunk, fw->seen[i], len) == 0;
  free(chunk);
  if (!same)
    note(fw->err, sizeof fw->err, "%s: chunk %lld changed after it was "
         "committed", when, (long long)i);
  return same;
}

/* Refresh; read the newly committed chunks once, and one older at
 * random again. */
static bool follow_step(follower *fw) {
  int64_t h = 0;
  bool closed = false;
  int rc = b2s_dframe_refresh(fw->df, &h, &closed);
  if (rc != 0) {
    note(fw->err, sizeof fw->err, "refresh: %s", b2s_strerror(rc));
    return false;
  }
  if (h < fw->h || h < fw->published || h > NFRAMES || (fw->closed &&
      !closed)) {
    note(fw->err, sizeof fw->err, "refresh gave H %lld closed %d after H "
         "%lld closed %d (published %lld)", (long long)h, closed,
         (long long)fw->h, fw->closed, (long long)fw->published);
    return false;
  }
  for (int64_t i = fw->h; i < h; i++) {
    rc = b2s_dframe_chunk_get(fw->df, i, &fw->seen[i], &fw->seen_len[i]);
    b2s_record rec;
    if (rc == 0)
      rc = b2s_dframe_record_get(fw->df, i, &rec);
    if (rc != 0) {
      note(fw->err, sizeof fw->err, "chunk %lld below H %lld: %s",
           (long long)i, (long long)h, b2s_strerror(rc));
      return false;
    }
    if (rec.frame != (uint64_t)i ||
        rec.xxh64 != b2s_chunk_xxh64(fw->seen[i], fw->seen_len[i])) {
      note(fw->err, sizeof fw->err, "record %lld does not match its chunk",
           (long long)i);
      return false;
    }
  }
  fw->h = h;
  fw->closed = closed;
  if (h > 0) {
    fw->rereads++;
    return same_chunk(fw, (int64_t)(rng_next(&fw->rng) % (uint64_t)h),
                      "reread");
  }
  return true;
}

/* A COMMITTED of our frame: its count never moves back (a restarted
 * committer starts from the store, which holds at least what was
 * published). */
static bool follow_msg(follower *fw, const uint8_t *buf, size_t n) {
  b2s_dmsg m;
  if (b2s_dmsg_decode(buf, n, &m) != 0 || m.type != B2S_DMSG_COMMITTED) {
    note(fw->err, sizeof fw->err, "committer_pub: not a COMMITTED");
    return false;
  }
  fw->messages++;
  if (m.index < fw->published || (m.closed && m.index != NFRAMES)) {
    note(fw->err, sizeof fw->err, "COMMITTED %lld closed %d after %lld",
         (long long)m.index, m.closed, (long long)fw->published);
    return false;
  }
  fw->published = m.index;
  return true;
}

static void follower_open(follower *fw) {
  const char *nm = fw->r->name;
  uint8_t prefix[8 + B2S_DMSG_NAME_MAX];
  size_t len = strlen(nm);
  memcpy(prefix, "B2DM\x01\x03", 6);
  prefix[6] = (uint8_t)len;
  prefix[7] = (uint8_t)(len >> 8);
  memcpy(prefix + 8, nm, len);
  fw->sub = zmq_socket(zctx, ZMQ_SUB);
  zmq_setsockopt(fw->sub, ZMQ_SUBSCRIBE, prefix, 8 + len);
  zmq_connect(fw->sub, fw->r->c.pub);
  if (cluster_store_open(&fw->r->c, &fw->store) != 0)
    note(fw->err, sizeof fw->err, "store: %s", b2s_store_last_error());
}

static void *follower_main(void *arg) {
  follower *fw = arg;
  follower_open(fw);
  uint8_t buf[512];
  /* pairs with the main thread's release store */
  while (!fw->err[0] &&
         !atomic_load_explicit(&fw->r->stop_follow, memory_order_acquire)) {
    if (!fw->df) {                 /* until a rank created NAME.meta */
      if (b2s_dframe_open(fw->store, fw->r->name, &fw->df) != 0)
        usleep(50000);
      continue;
    }
    zmq_pollitem_t it = {.socket = fw->sub, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, 50) == 1) {
      int n = zmq_recv(fw->sub, buf, sizeof buf, 0);
      if (n <= 0 || (size_t)n > sizeof buf || !follow_msg(fw, buf, (size_t)n))
        break;
    }
    if (!follow_step(fw) || (fw->closed && fw->h == NFRAMES))
      break;
  }
  int linger = 0;
  zmq_setsockopt(fw->sub, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(fw->sub);
  return NULL;
}

/* ---- chaos ------------------------------------------------------------------------ */

typedef struct chaos {
  uint64_t rng;
  pid_t committer;
  int kills, rank_kills, committer_kills;
  char log[2048];                  /* what was killed when, for a replay */
} chaos;

static void chaos_kill(run *r, chaos *ch, int64_t t0) {
  /* the last kills make up for a victim kind that came up too rarely */
  int left = MIN_KILLS - ch->kills - 1;
  int v = (int)(rng_next(&ch->rng) % (RANKS + 1));   /* RANKS: committer */
  if (left < MIN_EACH - ch->committer_kills)
    v = RANKS;
  else if (left < MIN_EACH - ch->rank_kills)
    v = (int)(rng_next(&ch->rng) % RANKS);
  useconds_t pause = (useconds_t)(50000 + rng_next(&ch->rng) % 750000);
  size_t at = strlen(ch->log);
  snprintf(ch->log + at, sizeof ch->log - at, " %s@%lldms+%ums",
           v == RANKS ? "committer" : (const char *[]){"r0", "r1", "r2"}[v],
           (long long)(ts_now_ms() - t0), (unsigned)(pause / 1000));
  if (v == RANKS) {
    assert_int_equal(cluster_committer_stop(ch->committer, SIGKILL), -1);
    usleep(pause);
    ch->committer = g_committer =
        cluster_committer_start(&r->c, r->name, GAP_MS);
    assert_true(ch->committer > 0);
    ch->committer_kills++;
  } else {
    assert_int_equal(env_stop(&r->c.rank[v], SIGKILL), -1);
    usleep(pause);
    env_start(&r->c.rank[v]);
    /* pairs with the producers' acquire loads in catch_up */
    atomic_fetch_add_explicit(&r->epoch[v], 1, memory_order_release);
    ch->rank_kills++;
  }
  ch->kills++;
}

/* Kill at random moments while the producers send, and at least
 * MIN_KILLS times. */
static void chaos_loop(run *r, chaos *ch) {
  int64_t t0 = ts_now_ms();
  /* pairs with the producers' release increments */
  while (atomic_load_explicit(&r->done_sending, memory_order_acquire) < 2 ||
         ch->kills < MIN_KILLS) {
    usleep((useconds_t)(300000 + rng_next(&ch->rng) % 1200000));
    chaos_kill(r, ch, t0);
  }
}

/* ---- the end: the frame, read back and exported -------------------------------- */

/* Chunk i as the follower saw it: frame i's bytes (or a gap, allowed
 * when nobody saw it acknowledged); counts the gaps. */
static void check_chunk(b2s_dframe *df, const follower *fw,
                        const producer *pr, int64_t i, int *gaps) {
  uint8_t *chunk = NULL;
  size_t len = 0;
  assert_int_equal(b2s_dframe_chunk_get(df, i, &chunk, &len), 0);
  assert_int_equal(len, fw->seen_len[i]);
  assert_memory_equal(chunk, fw->seen[i], len);   /* final since first read */
  b2s_record rec;
  assert_int_equal(b2s_dframe_record_get(df, i, &rec), 0);
  assert_int_equal(rec.frame, (uint64_t)i);
  assert_true(rec.xxh64 == b2s_chunk_xxh64(chunk, len));
  uint8_t want[CHUNK], got[CHUNK];
  b2s_ctx *ctx = b2s_ctx_new();
  assert_int_equal(b2s_decompress(ctx, chunk, len, got, sizeof got), CHUNK);
  b2s_ctx_free(ctx);
  if (rec.flags & B2S_RECORD_GAP) {
    assert_int_equal(rec.flags, B2S_RECORD_GAP);
    if (pr[i % 2].acked[i])
      fail_msg("frame %lld was acknowledged, yet it is a gap", (long long)i);
    memset(want, 0, sizeof want);
    (*gaps)++;
  } else {
    assert_int_equal(rec.flags, 0);
    cluster_frame_fill(want, CHUNK, (uint64_t)i);
  }
  assert_memory_equal(got, want, CHUNK);
  free(chunk);
}

/* The export opens as a local frame and matches the store chunk for
 * chunk, record for record. */
static void check_export(const run *r, b2s_dframe *df, bool sparse) {
  char path[400];
  snprintf(path, sizeof path, "%s/export.%s", r->c.dir,
           sparse ? "b2frame.d" : "b2frame");
  assert_int_equal(b2s_dframe_export(df, path, sparse), NFRAMES);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_is_sparse(f), sparse);
  assert_int_equal(b2s_frame_nchunks(f), NFRAMES);
  b2s_records *rs;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_records_count(rs), NFRAMES);
  for (int64_t i = 0; i < NFRAMES; i++) {
    uint8_t *chunk = NULL, got[CHUNK + 64], want[CHUNK], dec[CHUNK];
    size_t len = 0;
    assert_int_equal(b2s_dframe_chunk_get(df, i, &chunk, &len), 0);
    b2s_record drec, xrec;
    assert_int_equal(b2s_dframe_record_get(df, i, &drec), 0);
    bool gap = drec.flags & B2S_RECORD_GAP;
    uint64_t dxx = drec.xxh64;
    assert_int_equal(b2s_records_get(rs, i, &xrec), 0);
    assert_int_equal(xrec.frame, (uint64_t)i);
    assert_int_equal(xrec.flags, drec.flags);
    int cb = b2s_frame_chunk_read(f, i, got, sizeof got);
    assert_true(cb > 0);
    if (!gap) {                    /* a gap may become a special entry */
      assert_int_equal((size_t)cb, len);
      assert_memory_equal(got, chunk, len);
      assert_true(xrec.xxh64 == dxx);
    }
    assert_true(xrec.xxh64 == b2s_chunk_xxh64(got, (size_t)cb));
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, dec, CHUNK),
                     CHUNK);
    if (gap)
      memset(want, 0, sizeof want);
    else
      cluster_frame_fill(want, CHUNK, (uint64_t)i);
    assert_memory_equal(dec, want, CHUNK);
    free(chunk);
  }
  b2s_records_free(rs);
  b2s_frame_free(f);
}

static void check_end(run *r, follower *fw, producer *pr, bool sparse) {
  assert_int_equal(fw->h, NFRAMES);
  assert_true(fw->closed);
  b2s_store *s;
  assert_int_equal(cluster_store_open(&r->c, &s), 0);
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_open(s, r->name, &df), 0);
  int64_t h;
  bool closed;
  assert_int_equal(b2s_dframe_refresh(df, &h, &closed), 0);
  assert_int_equal(h, NFRAMES);
  assert_true(closed);
  int gaps = 0;
  for (int64_t i = 0; i < NFRAMES; i++)
    check_chunk(df, fw, pr, i, &gaps);
  uint64_t told = pr[0].rejected + pr[1].rejected;
  int acked = 0;
  for (int64_t i = 0; i < NFRAMES; i++)
    acked += pr[i % 2].acked[i];
  printf("chaos: %d frames seen acknowledged, %d gaps, %llu rejections told "
         "to the producers\n", acked, gaps, (unsigned long long)told);
  assert_true((uint64_t)gaps <= told);
  check_export(r, df, sparse);
  b2s_dframe_free(df);
  b2s_store_free(s);
}

/* ---- the run ----------------------------------------------------------------------- */

static uint64_t chaos_seed(void) {
  const char *e = getenv("B2S_CHAOS_SEED");
  uint64_t seed = e ? strtoull(e, NULL, 0)
                    : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
  printf("chaos seed %llu (replay with B2S_CHAOS_SEED=%llu)\n",
         (unsigned long long)seed, (unsigned long long)seed);
  fflush(stdout);
  return seed ? seed : 1;          /* xorshift needs a nonzero state */
}

static void start_threads(run *r, producer *pr, follower *fw,
                          pthread_t *tp, pthread_t *tf, uint64_t seed) {
  fw->r = r;
  fw->rng = seed * 7 + 3;
  assert_int_equal(pthread_create(tf, NULL, follower_main, fw), 0);
  for (int k = 0; k < 2; k++) {
    pr[k].r = r;
    pr[k].parity = k;
    assert_int_equal(b2sc_cluster_open(r->c.eps, RANKS, FPB, r->name, NULL,
                                       NULL, &pr[k].cl), 0);
  }
  for (int k = 0; k < 2; k++)
    assert_int_equal(pthread_create(&tp[k], NULL, producer_main, &pr[k]), 0);
}

/* Wait for the follower to see the frame closed (or give up). */
static void follower_wait(run *r, pthread_t tf) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += FOLLOW_MS / 1000;
  if (pthread_timedjoin_np(tf, NULL, &dl) != 0) {
    /* pairs with the follower's acquire load */
    atomic_store_explicit(&r->stop_follow, true, memory_order_release);
    assert_int_equal(pthread_join(tf, NULL), 0);
  }
}

static void run_chaos(const char *storage, const char *name) {
  uint64_t seed = chaos_seed();
  char yaml[512];
  snprintf(yaml, sizeof yaml, "streams:\n  %s:\n    format: distributed\n"
           "    chunk_nbytes: %d\n    typesize: 4\n    codec: lz4\n"
           "    queue_depth: 4\n    durability: {ack: write}\n", name, CHUNK);
  run *r = calloc(1, sizeof *r);
  producer *pr = calloc(2, sizeof *pr);
  follower *fw = calloc(1, sizeof *fw);
  assert_true(r && pr && fw);
  r->name = name;
  cluster_init(&r->c, RANKS, FPB, storage, yaml);
  cluster_start(&r->c);
  chaos ch = {.rng = seed};
  g_cluster = &r->c;
  ch.committer = g_committer = cluster_committer_start(&r->c, name, GAP_MS);
  assert_true(ch.committer > 0);
  pthread_t tp[2], tf;
  int64_t t0 = ts_now_ms();
  start_threads(r, pr, fw, tp, &tf, seed);
  chaos_loop(r, &ch);
  printf("chaos: %d kills (%d ranks, %d committer):%s\n", ch.kills,
         ch.rank_kills, ch.committer_kills, ch.log);
  /* pairs with the producers' acquire loads */
  atomic_store_explicit(&r->calm, true, memory_order_release);
  for (int k = 0; k < 2; k++)
    assert_int_equal(pthread_join(tp[k], NULL), 0);
  follower_wait(r, tf);
  printf("chaos: %lld ms; producers: %d/%d resent, %d/%d failed sends, "
         "%d/%d conflicts; follower: %d COMMITTED, %d rereads, H %lld\n",
         (long long)(ts_now_ms() - t0), pr[0].resent, pr[1].resent,
         pr[0].send_errors, pr[1].send_errors, pr[0].conflicts,
         pr[1].conflicts, fw->messages, fw->rereads,
         (long long)fw->h);
  fflush(stdout);
  for (int k = 0; k < 2; k++)
    if (pr[k].err[0])
      fail_msg("%s (seed %llu)", pr[k].err, (unsigned long long)seed);
  if (fw->err[0])
    fail_msg("follower: %s (seed %llu)", fw->err, (unsigned long long)seed);
  check_end(r, fw, pr, seed & 1);
  assert_int_equal(cluster_committer_stop(ch.committer, SIGTERM), 0);
  g_committer = 0;
  b2s_dframe_free(fw->df);
  b2s_store_free(fw->store);
  for (int i = 0; i < NFRAMES; i++)
    free(fw->seen[i]);
  cluster_fini(&r->c);
  g_cluster = NULL;
  free(fw);
  free(pr);
  free(r);
}

/* After a failure: no committer or rank left running, no directory left
 * behind. */
static int teardown(void **state) {
  (void)state;
  if (g_committer > 0)
    cluster_committer_stop(g_committer, SIGKILL);
  g_committer = 0;
  if (g_cluster) {
    for (int i = 0; i < g_cluster->n; i++)
      env_fini(&g_cluster->rank[i]);
    if (ts_rmtree(g_cluster->dir) != 0)
      fprintf(stderr, "removing %s failed\n", g_cluster->dir);
  }
  g_cluster = NULL;
  return 0;
}

static void test_chaos_local(void **state) {
  (void)state;
  run_chaos(NULL, "img");
}

static void test_chaos_rados(void **state) {
  (void)state;
  if (!b2s_store_have_rados() || !getenv("B2S_CEPH_CONF")) {
    printf("rados chaos test skipped: %s\n",
           b2s_store_have_rados() ? "B2S_CEPH_CONF not set"
                                  : "this build has no librados");
    skip();
  }
  char name[64];   /* the pool outlives the test: a name of this run */
  snprintf(name, sizeof name, "chaos-%d-%ld", (int)getpid(), (long)time(NULL));
  run_chaos("rados://b2stream", name);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_chaos_local, teardown),
      cmocka_unit_test_teardown(test_chaos_rados, teardown),
  };
  return harness_run(tests);
}

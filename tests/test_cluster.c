/* Distributed streams across ranks (docs/DISTRIBUTED.md): several real
 * b2streamd, each a rank of one cluster with its own configuration, on
 * one machine standing in for many nodes, sharing a local directory store
 * (and a RADOS pool when $B2S_CEPH_CONF names a test cluster).
 *
 * The test is the committer where the committer is not under test: a
 * PULL socket on the cluster's committer endpoint collects WRITTEN and END
 * and each is checked against the store.  What is checked:
 *   - a plain producer (no routing) gets B2S_E_WRONG_RANK for every frame
 *     number another rank owns, naming that rank and its endpoint, and
 *     B2S_E_NEED_FRAME without one; nothing of either is stored;
 *   - the cluster producer lands every frame on its owner: each chunk
 *     object holds the buffer bit for bit, reported once by its owner with
 *     the record the object carries;
 *   - a rank killed with SIGKILL and restarted loses nothing acknowledged:
 *     the producer resends what was not, and every frame is stored;
 *   - b2stream produce --ranks routes the same way; without it, a rank
 *     refuses the others' frames and the tool says which rank owns them;
 *   - series metadata: the configured defaults start the frame's one
 *     series, META and OPEN metadata sent to any rank merge into it;
 *   - END is repeated until a COMMITTED says the frame is closed, not
 *     merely committed up to that END;
 *   - FOLLOW on a distributed stream is refused;
 *   - end to end with the committer process (b2stream-committer): three
 *     ranks, two producers sending interleaved frame numbers, one rank
 *     killed and restarted mid-run, a frame never sent: the frame read
 *     back through b2s_dframe holds every frame bit for bit and a gap
 *     where the missing one was; on the local store, and on RADOS when
 *     $B2S_CEPH_CONF names a test cluster (scripts/ceph-test-cluster). */
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

#include <zmq.h>

#include "b2s_chunk.h"
#include "b2s_dframe.h"
#include "b2s_dmsg.h"
#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2s_store.h"
#include "b2s_msgpack.h"
#include "b2stream_client.h"
#include "cluster_util.h"
#include "daemon_harness.h"

#define CHUNK 4096                 /* bytes of every buffer */
#define NFRAMES 96
#define SEND_MS 10000
#define FLUSH_MS 30000

static const char streams_yaml[] =
    "streams:\n"
    "  img:\n"
    "    format: distributed\n"
    "    chunk_nbytes: 4096\n"
    "    typesize: 4\n"
    "    codec: lz4\n"
    "    durability: {ack: write}\n";

/* Few credits: sends to a dead rank soon time out, and the cluster
 * producer must keep those frames for the resend too. */
static const char small_queue_yaml[] =
    "streams:\n"
    "  img:\n"
    "    format: distributed\n"
    "    chunk_nbytes: 4096\n"
    "    typesize: 4\n"
    "    codec: lz4\n"
    "    queue_depth: 4\n"
    "    durability: {ack: write}\n";

/* Buffer of frame f (cluster_util.h). */
static void frame_fill(uint8_t *b, uint64_t f) {
  cluster_frame_fill(b, CHUNK, f);
}

static int32_t owner(const cluster *c, uint64_t f) {
  return b2s_dframe_owner((int64_t)f, c->frames_per_block, c->n);
}

/* ---- the test's committer: what the ranks report ---------------------------- */

typedef struct reports {
  void *pull;
  int32_t rank_of[NFRAMES];        /* -1: no WRITTEN yet */
  int written[NFRAMES];            /* WRITTEN per frame */
  uint64_t rec_xxh64[NFRAMES];
  int64_t end[CLUSTER_MAX];        /* -1: no END yet */
  int ends;
} reports;

static void reports_open(reports *r, const cluster *c) {
  memset(r, 0, sizeof *r);
  for (int i = 0; i < NFRAMES; i++)
    r->rank_of[i] = -1;
  for (int i = 0; i < CLUSTER_MAX; i++)
    r->end[i] = -1;
  r->pull = zmq_socket(zctx, ZMQ_PULL);
  assert_non_null(r->pull);
  assert_int_equal(zmq_bind(r->pull, c->committer), 0);
}

static void reports_close(reports *r) {
  int linger = 0;
  zmq_setsockopt(r->pull, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(r->pull);
}

static void take(reports *r, const uint8_t *buf, size_t len) {
  b2s_dmsg m;
  assert_int_equal(b2s_dmsg_decode(buf, len, &m), 0);
  assert_int_equal(m.name_len, 3);
  assert_memory_equal(m.name, "img", 3);
  assert_true(m.rank >= 0 && m.rank < CLUSTER_MAX);
  if (m.type == B2S_DMSG_END) {
    r->end[m.rank] = m.index;
    r->ends++;
    return;
  }
  assert_int_equal(m.type, B2S_DMSG_WRITTEN);
  assert_true(m.index >= 0 && m.index < NFRAMES);
  b2s_record rec;
  assert_int_equal(b2s_record_decode(m.rec, m.rec_len, &rec), 0);
  assert_true(rec.has_frame);
  assert_int_equal(rec.frame, (uint64_t)m.index);
  assert_int_equal(rec.flags, 0);
  r->rank_of[m.index] = m.rank;
  r->written[m.index]++;
  r->rec_xxh64[m.index] = rec.xxh64;
}

/* Take reports until `until` returns true (or fail after WAIT_MS). */
static void reports_wait(reports *r, bool (*until)(const reports *, int),
                         int arg) {
  uint8_t buf[B2S_DMSG_NAME_MAX + B2S_DMSG_REC_MAX + 64];
  for (int waited = 0; !until(r, arg); ) {
    zmq_pollitem_t it = {.socket = r->pull, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, 100) == 1) {
      int n = zmq_recv(r->pull, buf, sizeof buf, 0);
      assert_true(n > 0 && (size_t)n <= sizeof buf);
      take(r, buf, (size_t)n);
    } else if ((waited += 100) > WAIT_MS) {
      fail_msg("the ranks did not report what was expected");
    }
  }
}

static bool frames_reported(const reports *r, int n) {
  for (int f = 0; f < n; f++)
    if (r->written[f] == 0)
      return false;
  return true;
}

static bool ends_reported(const reports *r, int n) { return r->ends >= n; }

/* Frames n .. n + 7 reported. */
static bool eight_reported(const reports *r, int n) {
  for (int f = n; f < n + 8; f++)
    if (r->written[f] == 0)
      return false;
  return true;
}

/* ---- the store ---------------------------------------------------------------- */

static b2s_store *store_open(const cluster *c) {
  b2s_store *s = NULL;
  assert_int_equal(cluster_store_open(c, &s), 0);
  return s;
}

static bool stored(b2s_store *s, uint64_t f) {
  char name[256];
  assert_true(b2s_dframe_chunk_name("img", (int64_t)f, name, sizeof name) >= 0);
  uint64_t size;
  return b2s_store_stat(s, name, &size) == 0;
}

/* Object f decompresses to frame f's buffer; its attribute is the record
 * the committer was told, with the checksum of the object's bytes. */
static void check_object(b2s_store *s, const reports *r, uint64_t f) {
  char name[256];
  assert_true(b2s_dframe_chunk_name("img", (int64_t)f, name, sizeof name) >= 0);
  uint8_t *chunk = NULL, *attr = NULL;
  size_t len = 0, alen = 0;
  assert_int_equal(b2s_store_get(s, name, 1 << 20, &chunk, &len), 0);
  assert_int_equal(b2s_store_get_attr(s, name, 1 << 16, &attr, &alen), 0);
  uint8_t want[CHUNK], got[CHUNK];
  frame_fill(want, f);
  b2s_ctx *ctx = b2s_ctx_new();
  assert_int_equal(b2s_decompress(ctx, chunk, len, got, sizeof got), CHUNK);
  b2s_ctx_free(ctx);
  assert_memory_equal(got, want, CHUNK);
  b2s_record rec;
  assert_int_equal(b2s_record_decode(attr, alen, &rec), 0);
  assert_int_equal(rec.frame, f);
  assert_true(rec.xxh64 == b2s_chunk_xxh64(chunk, len));
  if (r)
    assert_true(r->rec_xxh64[f] == rec.xxh64);
  free(chunk);
  free(attr);
}

/* ---- a producer that does not route ------------------------------------------- */

static void test_wrong_rank_refused(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 2, 2, NULL, streams_yaml);
  reports r;
  reports_open(&r, &c);
  cluster_start(&c);
  b2sc_session *s;
  b2sc_producer *p;
  assert_int_equal(b2sc_connect(c.eps[0], "plain", &s), 0);
  assert_int_equal(b2sc_producer_open(s, "img", NULL, &p), 0);
  uint8_t buf[CHUNK];
  for (uint64_t f = 0; f < 8; f++) {   /* rank 0 owns 0, 1, 4, 5 */
    frame_fill(buf, f);
    b2sc_record rec = {.present = B2SC_REC_FRAME, .frame = f};
    assert_int_equal(b2sc_send_rec(p, buf, CHUNK, &rec, SEND_MS), 0);
  }
  assert_int_equal(b2sc_flush(p, FLUSH_MS), B2S_E_WRONG_RANK);
  char want[512];
  snprintf(want, sizeof want, "frame number 7 belongs to rank 1, not to "
           "this rank 0 (%s)", c.eps[1]);
  assert_string_equal(b2sc_last_error(s), want);
  b2sc_producer_stats st;
  assert_int_equal(b2sc_producer_stats_get(p, &st), 0);
  assert_int_equal(st.rejected, 4);
  /* no frame number; a buffer of another size */
  assert_int_equal(b2sc_send(p, buf, CHUNK, SEND_MS), 0);
  assert_int_equal(b2sc_flush(p, FLUSH_MS), B2S_E_NEED_FRAME);
  assert_non_null(strstr(b2sc_last_error(s), "needs a frame number"));
  b2sc_record rec = {.present = B2SC_REC_FRAME, .frame = 9};
  assert_int_equal(b2sc_send_rec(p, buf, CHUNK / 2, &rec, SEND_MS), 0);
  assert_int_equal(b2sc_flush(p, FLUSH_MS), B2S_E_CHUNK_SIZE);
  /* frame 0 again with its bytes: a harmless retry; frame 1 with other
   * bytes: not stored, and the producer is told instead of acknowledged */
  frame_fill(buf, 0);
  rec.frame = 0;
  assert_int_equal(b2sc_send_rec(p, buf, CHUNK, &rec, SEND_MS), 0);
  assert_int_equal(b2sc_flush(p, FLUSH_MS), 0);
  rec.frame = 1;
  assert_int_equal(b2sc_send_rec(p, buf, CHUNK, &rec, SEND_MS), 0);
  assert_int_equal(b2sc_flush(p, FLUSH_MS), B2S_E_OBJ_CONFLICT);
  assert_string_equal(b2sc_last_error(s), "frame number 1 is in the store "
                      "with other bytes (made a gap meanwhile?); this buffer "
                      "was not stored");
  assert_int_equal(b2sc_producer_stats_get(p, &st), 0);
  assert_int_equal(st.sent, 12);
  assert_int_equal(st.rejected, 4 + 2 + 1);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  /* that CLOSE sent no END (its producer sent other ranks' frames); the
   * next producer's does */
  assert_int_equal(b2sc_connect(c.eps[0], "plain", &s), 0);
  assert_int_equal(b2sc_producer_open(s, "img", NULL, &p), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_true(env_log_count(&c.rank[0], "no END at this CLOSE") == 1);

  reports_wait(&r, ends_reported, 1);   /* the last CLOSE: END from rank 0 */
  assert_int_equal(r.end[0], 6);        /* one past frame 5 */
  /* nobody confirms it on committer_pub: END comes again */
  reports_wait(&r, ends_reported, 2);
  assert_int_equal(r.end[0], 6);
  b2s_store *store = store_open(&c);
  for (uint64_t f = 0; f < 10; f++) {
    bool mine = f < 8 && owner(&c, f) == 0;
    assert_int_equal(stored(store, f), mine);
    assert_int_equal(r.written[f], f == 0 ? 2 : mine);   /* 0: retried */
    if (mine) {
      assert_int_equal(r.rank_of[f], 0);
      check_object(store, &r, f);
    }
  }
  b2s_store_free(store);
  reports_close(&r);
  cluster_fini(&c);
}

/* Publish COMMITTED(img, h, closed) every 100 ms for ms while taking
 * reports; the ENDs that came meanwhile. */
static int publish_for(void *pub, reports *r, int64_t h, bool closed, int ms) {
  uint8_t msg[64];
  b2s_dmsg m = {.type = B2S_DMSG_COMMITTED, .name = "img", .name_len = 3,
                .index = h, .closed = closed};
  int n = b2s_dmsg_encode(&m, msg, sizeof msg);
  assert_true(n > 0);
  int ends = r->ends;
  uint8_t buf[B2S_DMSG_NAME_MAX + B2S_DMSG_REC_MAX + 64];
  for (int t = 0; t < ms; t += 100) {
    assert_int_equal(zmq_send(pub, msg, (size_t)n, 0), n);
    zmq_pollitem_t it = {.socket = r->pull, .events = ZMQ_POLLIN};
    while (zmq_poll(&it, 1, 0) == 1) {
      int k = zmq_recv(r->pull, buf, sizeof buf, 0);
      assert_true(k > 0 && (size_t)k <= sizeof buf);
      take(r, buf, (size_t)k);
    }
    usleep(100000);
  }
  return r->ends - ends;
}

/* A rank repeats END until the frame is closed: H at its END is not
 * enough (the committer closes only with every rank's END, and one
 * restarted after H passed this END would never learn it again). */
static void test_end_until_closed(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 1, 1, NULL, streams_yaml);
  reports r;
  reports_open(&r, &c);
  void *pub = zmq_socket(zctx, ZMQ_PUB);
  assert_int_equal(zmq_bind(pub, c.pub), 0);
  cluster_start(&c);
  b2sc_cluster *cl;
  assert_int_equal(b2sc_cluster_open(c.eps, 1, 1, "img", NULL, NULL, &cl), 0);
  uint8_t buf[CHUNK];
  for (uint64_t f = 0; f < 4; f++) {
    frame_fill(buf, f);
    assert_int_equal(b2sc_cluster_send(cl, f, buf, CHUNK, SEND_MS), 0);
  }
  assert_int_equal(b2sc_cluster_close(cl), 0);
  reports_wait(&r, ends_reported, 1);
  assert_int_equal(r.end[0], 4);
  assert_true(publish_for(pub, &r, 4, false, 3000) >= 2);
  publish_for(pub, &r, 4, true, 1500);       /* taken at the next repeat */
  assert_int_equal(publish_for(pub, &r, 4, true, 2500), 0);
  int linger = 0;
  zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(pub);
  reports_close(&r);
  cluster_fini(&c);
}

/* ---- producers that route ------------------------------------------------------ */

/* Send frames first, first + step, ... below NFRAMES through cl. */
static void send_frames(b2sc_cluster *cl, uint64_t first, uint64_t step) {
  uint8_t buf[CHUNK];
  for (uint64_t f = first; f < NFRAMES; f += step) {
    frame_fill(buf, f);
    int rc = b2sc_cluster_send(cl, f, buf, CHUNK, SEND_MS);
    if (rc != 0)
      fail_msg("frame %llu: %s", (unsigned long long)f,
               b2sc_cluster_last_error(cl));
  }
}

static void test_routing_lands_on_owners(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 3, 2, NULL, streams_yaml);
  reports r;
  reports_open(&r, &c);
  cluster_start(&c);
  /* two producers: even and odd frame numbers, interleaved */
  b2sc_cluster *a, *b;
  assert_int_equal(b2sc_cluster_open(c.eps, 3, 2, "img", NULL, NULL, &a), 0);
  assert_int_equal(b2sc_cluster_open(c.eps, 3, 2, "img", NULL, NULL, &b), 0);
  assert_int_equal(b2sc_cluster_ranks(a), 3);
  for (uint64_t f = 0; f < 12; f++)
    assert_int_equal(b2sc_cluster_owner(a, f), owner(&c, f));
  send_frames(a, 0, 2);
  send_frames(b, 1, 2);
  assert_int_equal(b2sc_cluster_flush(a, FLUSH_MS), 0);
  assert_int_equal(b2sc_cluster_flush(b, FLUSH_MS), 0);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(b2sc_cluster_unacked(a, i, NULL, 0), 0);
    b2sc_producer_stats st;
    assert_int_equal(b2sc_producer_stats_get(b2sc_cluster_producer(a, i),
                                             &st), 0);
    assert_int_equal(st.rejected, 0);
  }
  /* wrong use */
  assert_int_equal(b2sc_cluster_send_rec(a, "x", 1, NULL, 0),
                   B2S_E_NEED_FRAME);
  const char *none[1] = {NULL};
  b2sc_cluster *bad;
  assert_int_equal(b2sc_cluster_open(none, 1, 1, "img", NULL, NULL, &bad),
                   B2S_E_ARG);
  assert_int_equal(b2sc_cluster_open(c.eps, 3, 0, "img", NULL, NULL, &bad),
                   B2S_E_ARG);
  assert_int_equal(b2sc_cluster_close(a), 0);
  assert_int_equal(b2sc_cluster_close(b), 0);

  reports_wait(&r, frames_reported, NFRAMES);
  b2s_store *store = store_open(&c);
  for (uint64_t f = 0; f < NFRAMES; f++) {
    assert_int_equal(r.rank_of[f], owner(&c, f));
    assert_int_equal(r.written[f], 1);
    check_object(store, &r, f);
  }
  b2s_store_free(store);
  reports_close(&r);
  cluster_fini(&c);
}

/* ---- a rank killed mid-run ----------------------------------------------------- */

/* Resend what rank i did not acknowledge, through a new session. */
static void resend(b2sc_cluster *cl, int i) {
  assert_int_equal(cluster_resend(cl, i, CHUNK, SEND_MS), 0);
}

static void test_rank_killed_and_restarted(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 3, 1, NULL, small_queue_yaml);
  reports r;
  reports_open(&r, &c);
  cluster_start(&c);
  b2sc_cluster *cl;
  assert_int_equal(b2sc_cluster_open(c.eps, 3, 1, "img", NULL, NULL, &cl), 0);
  uint8_t buf[CHUNK];
  uint64_t f = 0;
  for (; f < NFRAMES / 2; f++) {
    frame_fill(buf, f);
    assert_int_equal(b2sc_cluster_send(cl, f, buf, CHUNK, SEND_MS), 0);
  }
  /* what rank 1 acknowledged so far must survive its death */
  b2sc_producer_stats st;
  b2sc_wait_credit(b2sc_cluster_producer(cl, 1), 0);
  assert_int_equal(b2sc_producer_stats_get(b2sc_cluster_producer(cl, 1), &st),
                   0);
  assert_int_equal(env_stop(&c.rank[1], SIGKILL), -1);
  int timed_out = 0;
  for (; f < NFRAMES; f++) {       /* rank 1's frames fail from here on */
    frame_fill(buf, f);
    int rc = b2sc_cluster_send(cl, f, buf, CHUNK, 200);
    assert_true(rc == 0 || (owner(&c, f) == 1 && rc == B2S_E_TIMEOUT));
    timed_out += rc != 0;
  }
  assert_true(timed_out > 0);      /* out of credits: kept for the resend */
  env_start(&c.rank[1]);
  resend(cl, 1);
  int rc = b2sc_cluster_flush(cl, FLUSH_MS);
  if (rc != 0)
    fail_msg("flush: %s", b2sc_cluster_last_error(cl));
  assert_int_equal(b2sc_cluster_close(cl), 0);

  reports_wait(&r, frames_reported, NFRAMES);
  b2s_store *store = store_open(&c);
  for (uint64_t k = 0; k < NFRAMES; k++) {
    assert_int_equal(r.rank_of[k], owner(&c, k));
    check_object(store, &r, k);
  }
  b2s_store_free(store);
  reports_close(&r);
  cluster_fini(&c);
}

/* ---- the command-line producer ---------------------------------------------------- */

/* Run the b2stream tool with args (a shell word list); its exit status,
 * stderr in err. */
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

static void test_cli_produce(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 2, 2, NULL, streams_yaml);
  reports r;
  reports_open(&r, &c);
  cluster_start(&c);
  char in[400], args[1500], err[2048];
  snprintf(in, sizeof in, "%s/in.bin", c.dir);
  FILE *f = fopen(in, "w");
  assert_non_null(f);
  uint8_t buf[CHUNK];
  for (uint64_t k = 0; k < 8; k++) {   /* frame numbers 10..17 */
    frame_fill(buf, 10 + k);
    assert_int_equal(fwrite(buf, 1, CHUNK, f), CHUNK);
  }
  fclose(f);
  snprintf(args, sizeof args, "produce --ranks %s,%s --frames-per-block 2 "
           "--frame-number 10 --stream img --chunk-bytes 4096 '%s'",
           c.eps[0], c.eps[1], in);
  if (run_cli(&c, args, err, sizeof err) != 0)
    fail_msg("produce --ranks: %s", err);
  /* one rank alone refuses the other's frames, and says whose they are */
  snprintf(args, sizeof args, "produce --endpoint %s --frame-number 10 "
           "--stream img --chunk-bytes 4096 '%s'", c.eps[1], in);
  assert_int_equal(run_cli(&c, args, err, sizeof err), 1);
  assert_non_null(strstr(err, "belongs to rank 0, not to this rank 1"));
  reports_wait(&r, eight_reported, 10);
  b2s_store *store = store_open(&c);
  for (uint64_t k = 0; k < 18; k++) {
    bool sent = k >= 10;
    assert_int_equal(stored(store, k), sent);
    if (sent) {
      assert_int_equal(r.rank_of[k], owner(&c, k));
      check_object(store, &r, k);
    }
  }
  b2s_store_free(store);
  reports_close(&r);
  cluster_fini(&c);
}

/* ---- series metadata ----------------------------------------------------------------- */

/* The value of key in the msgpack map (a string or uint as text, "nil"
 * for a nil), or NULL when absent. */
static const char *series_value(const uint8_t *map, size_t len,
                                const char *key, char *out, size_t cap) {
  b2s_mpreader r;
  b2s_mpreader_init(&r, map, len);
  b2s_mpval m, k, v;
  assert_int_equal(b2s_mp_read_any(&r, &m), 0);
  assert_int_equal(m.type, B2S_MPT_MAP);
  for (uint32_t i = 0; i < m.n; i++) {
    assert_int_equal(b2s_mp_read_any(&r, &k), 0);
    assert_int_equal(k.type, B2S_MPT_STR);
    b2s_mpreader at = r;
    assert_int_equal(b2s_mp_read_any(&at, &v), 0);
    if (k.n == strlen(key) && memcmp(k.p, key, k.n) == 0) {
      if (v.type == B2S_MPT_STR)
        snprintf(out, cap, "%.*s", (int)v.n, (const char *)v.p);
      else if (v.type == B2S_MPT_UINT)
        snprintf(out, cap, "%llu", (unsigned long long)v.u);
      else
        snprintf(out, cap, "type %d", v.type);
      return out;
    }
    assert_int_equal(b2s_mp_skip(&r, B2S_MP_MAX_DEPTH), 0);
  }
  return NULL;
}

static void test_series_metadata(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 2, 1, NULL,
               "streams:\n  img:\n    format: distributed\n"
               "    chunk_nbytes: 4096\n    codec: lz4\n"
               "    series: {beamline: ID11, energy: 12}\n");
  cluster_start(&c);
  b2sc_session *s0, *s1;
  b2sc_producer *p0, *p1;
  static const uint8_t open_meta[] = {0x81, 0xa1, 'a', 0x01};   /* {a: 1} */
  assert_int_equal(b2sc_connect(c.eps[0], "m0", &s0), 0);
  assert_int_equal(b2sc_connect(c.eps[1], "m1", &s1), 0);
  assert_int_equal(b2sc_producer_open_meta(s0, "img", NULL, open_meta,
                                           sizeof open_meta, &p0), 0);
  assert_int_equal(b2sc_producer_open(s1, "img", NULL, &p1), 0);
  assert_int_equal(b2sc_producer_set_meta_str(p1, "b", "two"), 0);
  assert_int_equal(b2sc_producer_set_meta_str(p0, "beamline", NULL), 0);
  assert_int_equal(b2sc_flush(p0, FLUSH_MS), 0);
  assert_int_equal(b2sc_flush(p1, FLUSH_MS), 0);
  b2s_store *store = store_open(&c);
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_open(store, "img", &df), 0);
  uint8_t *map;
  size_t len;
  assert_int_equal(b2s_dframe_series_get(df, &map, &len), 0);
  char v[64];
  assert_null(series_value(map, len, "beamline", v, sizeof v));
  assert_string_equal(series_value(map, len, "energy", v, sizeof v), "12");
  assert_string_equal(series_value(map, len, "a", v, sizeof v), "1");
  assert_string_equal(series_value(map, len, "b", v, sizeof v), "two");
  free(map);
  b2s_dframe_free(df);
  b2s_store_free(store);
  assert_int_equal(b2sc_producer_close(p0), 0);
  assert_int_equal(b2sc_producer_close(p1), 0);
  b2sc_close(s0);
  b2sc_close(s1);
  cluster_fini(&c);
}

static void test_follow_refused(void **state) {
  (void)state;
  cluster c;
  cluster_init(&c, 1, 1, NULL, streams_yaml);
  cluster_start(&c);
  b2sc_session *s;
  b2sc_consumer *fol;
  assert_int_equal(b2sc_connect(c.eps[0], "reader", &s), 0);
  assert_int_equal(b2sc_follow(s, "img", 0, 0, &fol), B2S_E_ARG);
  assert_non_null(strstr(b2sc_last_error(s), "distributed"));
  b2sc_close(s);
  cluster_fini(&c);
}

/* ---- end to end, with the committer process ------------------------------------ */

#define GAP_FRAME 61               /* never sent: the committer's gap */
#define GAP_TIMEOUT_MS 3000        /* longer than a rank's restart */

static pid_t committer_start(const cluster *c, const char *frame) {
  pid_t pid = cluster_committer_start(c, frame, GAP_TIMEOUT_MS);
  assert_true(pid > 0);
  return pid;
}

static void committer_stop(pid_t pid) {
  assert_int_equal(cluster_committer_stop(pid, SIGTERM), 0);
}

/* Frame f through the producer that owns its parity. */
static void send_interleaved(b2sc_cluster *a, b2sc_cluster *b, uint64_t from,
                             uint64_t to, int dead_rank, const cluster *c) {
  uint8_t buf[CHUNK];
  for (uint64_t f = from; f < to; f++) {
    if (f == GAP_FRAME)
      continue;
    frame_fill(buf, f);
    b2sc_cluster *p = f % 2 ? b : a;
    int rc = b2sc_cluster_send(p, f, buf, CHUNK, dead_rank < 0 ? SEND_MS : 200);
    if (rc != 0 && owner(c, f) != dead_rank)
      fail_msg("frame %llu: %s", (unsigned long long)f,
               b2sc_cluster_last_error(p));
  }
}

/* Every committed chunk read back through b2s_dframe: the producers'
 * bytes, their records, and a gap (zeros, gap record) at GAP_FRAME. */
static void read_back(const cluster *c, const char *name) {
  b2s_store *s = store_open(c);
  b2s_dframe *df = NULL;
  int64_t committed = 0;
  bool closed = false;
  for (int ms = 0; committed < NFRAMES; ms += 50) {
    if (!df)
      assert_true(b2s_dframe_open(s, name, &df) == 0 || ms < WAIT_MS);
    if (df)
      assert_int_equal(b2s_dframe_refresh(df, &committed, &closed), 0);
    if (committed < NFRAMES && ms > WAIT_MS)
      fail_msg("%lld of %d chunks committed", (long long)committed, NFRAMES);
    usleep(50000);
  }
  b2s_ctx *ctx = b2s_ctx_new();
  uint8_t want[CHUNK], got[CHUNK];
  for (int64_t i = 0; i < NFRAMES; i++) {
    uint8_t *chunk = NULL;
    size_t len = 0;
    assert_int_equal(b2s_dframe_chunk_get(df, i, &chunk, &len), 0);
    assert_int_equal(b2s_decompress(ctx, chunk, len, got, sizeof got), CHUNK);
    b2s_record rec;
    assert_int_equal(b2s_dframe_record_get(df, i, &rec), 0);
    assert_int_equal(rec.frame, (uint64_t)i);
    assert_true(rec.xxh64 == b2s_chunk_xxh64(chunk, len));
    if (i == GAP_FRAME) {
      memset(want, 0, sizeof want);
      assert_true(rec.flags & B2S_RECORD_GAP);
    } else {
      frame_fill(want, (uint64_t)i);
      assert_int_equal(rec.flags, 0);
    }
    assert_memory_equal(got, want, CHUNK);
    free(chunk);
  }
  b2s_ctx_free(ctx);
  b2s_dframe_free(df);
  b2s_store_free(s);
}

static void run_committed(const char *storage, const char *name) {
  char yaml[512];
  snprintf(yaml, sizeof yaml, "streams:\n  %s:\n    format: distributed\n"
           "    chunk_nbytes: 4096\n    typesize: 4\n    codec: lz4\n"
           "    durability: {ack: write}\n", name);
  cluster c;
  cluster_init(&c, 3, 2, storage, yaml);
  cluster_start(&c);
  pid_t committer = committer_start(&c, name);
  b2sc_cluster *a, *b;
  assert_int_equal(b2sc_cluster_open(c.eps, 3, 2, name, NULL, NULL, &a), 0);
  assert_int_equal(b2sc_cluster_open(c.eps, 3, 2, name, NULL, NULL, &b), 0);
  send_interleaved(a, b, 0, NFRAMES / 2, -1, &c);
  assert_int_equal(env_stop(&c.rank[1], SIGKILL), -1);
  send_interleaved(a, b, NFRAMES / 2, NFRAMES, 1, &c);
  env_start(&c.rank[1]);
  resend(a, 1);
  resend(b, 1);
  assert_int_equal(b2sc_cluster_flush(a, FLUSH_MS), 0);
  assert_int_equal(b2sc_cluster_flush(b, FLUSH_MS), 0);
  assert_int_equal(b2sc_cluster_close(a), 0);
  assert_int_equal(b2sc_cluster_close(b), 0);
  read_back(&c, name);
  committer_stop(committer);
  cluster_fini(&c);
}

static void test_committed_local(void **state) {
  (void)state;
  run_committed(NULL, "img");
}

static void test_committed_rados(void **state) {
  (void)state;
  if (!getenv("B2S_CEPH_CONF")) {
    printf("rados cluster test skipped: B2S_CEPH_CONF not set\n");
    skip();
  }
  char name[64];   /* the pool outlives the test: a name of this run */
  snprintf(name, sizeof name, "img-%d-%ld", (int)getpid(), (long)time(NULL));
  run_committed("rados://b2stream", name);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wrong_rank_refused),
      cmocka_unit_test(test_end_until_closed),
      cmocka_unit_test(test_routing_lands_on_owners),
      cmocka_unit_test(test_rank_killed_and_restarted),
      cmocka_unit_test(test_cli_produce),
      cmocka_unit_test(test_series_metadata),
      cmocka_unit_test(test_follow_refused),
      cmocka_unit_test(test_committed_local),
      cmocka_unit_test(test_committed_rados),
  };
  return harness_run(tests);
}

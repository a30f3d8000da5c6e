/* Integration tests of b2streamd with protocol version 2 (PROTOCOL.md 8.2):
 * HELLO negotiation (a version-1 client is served as before), the records
 * of DATA and SHM_SUBMIT stored next to their chunks (checked in the
 * records frame with core's reader, byte for byte, checksums included),
 * series metadata set with OPEN and META (merge, deletion, limits) and
 * from the configuration's defaults, and
 * the gaps a dropped buffer leaves on a `gaps: fill` stream. */
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
#include <sys/stat.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "b2s_frame.h"
#include "b2s_wire.h"

#define NBUF 12
#define LEN 4000

static const char *meta_config =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 1MiB\n"
    "log_level: debug\n"
    "streams:\n"
    "  w:\n"
    "    typesize: 4\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  r:\n"
    "    format: sparse\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  dn:\n"
    "    codec: zstd\n"
    "    clevel: 9\n"
    "    queue_depth: 1\n"
    "    backpressure: drop-newest\n"
    "    gaps: fill\n"
    "  do:\n"
    "    codec: zstd\n"
    "    clevel: 9\n"
    "    queue_depth: 1\n"
    "    backpressure: drop-oldest\n"
    "    gaps: fill\n"
    "  nd:\n"
    "    typesize: 2\n"
    "    b2nd: {shape: [0, 8], chunkshape: [2, 8]}\n"
    "  o4:\n"
    "    order: frame_number\n"
    "    reorder_window: 4\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  o2:\n"
    "    order: frame_number\n"
    "    reorder_window: 512\n"   /* two producers, 64 credits each */
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n";

/* The user part of buffer i: a map {"i": i} for even i, raw bytes for
 * i % 3 == 1, none otherwise. */
static size_t user_of(int i, uint8_t *u, bool *is_map) {
  *is_map = i % 2 == 0;
  if (*is_map) {
    u[0] = 0x81;
    u[1] = 0xa1;
    u[2] = 'i';
    u[3] = (uint8_t)i;             /* positive fixint */
    return 4;
  }
  if (i % 3 == 1) {
    for (int k = 0; k < 7; k++)
      u[k] = (uint8_t)(0xf0 + i + k);
    return 7;
  }
  return 0;
}

static b2sc_record record_of(int i, uint8_t *u) {
  bool is_map;
  size_t ul = user_of(i, u, &is_map);
  b2sc_record r = {0};
  r.present = B2SC_REC_FRAME | B2SC_REC_TS | (is_map ? B2SC_REC_USER_MAP : 0);
  r.frame = 1000 + (uint64_t)i;
  r.ts_ns = 1700000000000000000ll + i * 1000;
  r.user = ul ? u : NULL;
  r.user_len = ul;
  return r;
}

/* Record i of the frame at path is the one record_of(i) gave (i < nrec;
 * after that, none from the producer), its checksum that of chunk i as
 * stored, and both frames hold n chunks. */
static void check_records(const char *path, int n, int nrec) {
  b2s_records *rs = NULL;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  b2s_frame *f = NULL;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), n);
  assert_int_equal(b2s_records_count(rs), n);
  for (int i = 0; i < n; i++) {
    b2s_record rec;
    assert_int_equal(b2s_records_get(rs, i, &rec), 0);
    int32_t cb, nb;
    assert_int_equal(b2s_frame_chunk_sizes(f, i, &cb, &nb), 0);
    uint8_t *raw = malloc((size_t)cb);
    assert_int_equal(b2s_frame_chunk_read(f, i, raw, (size_t)cb), cb);
    assert_true(rec.xxh64 == b2s_chunk_xxh64(raw, (size_t)cb));
    free(raw);
    assert_int_equal(rec.flags, 0);
    if (i >= nrec) {
      assert_false(rec.has_frame);
      assert_false(rec.has_ts);
      assert_int_equal(rec.user_kind, B2S_RECORD_USER_NONE);
      continue;
    }
    uint8_t u[16];
    b2sc_record want = record_of(i, u);
    assert_true(rec.has_frame && rec.has_ts);
    assert_true(rec.frame == want.frame);
    assert_true(rec.ts == want.ts_ns);
    assert_int_equal(rec.user_len, want.user_len);
    if (want.user_len) {
      assert_int_equal(rec.user_kind, want.present & B2SC_REC_USER_MAP
                                          ? B2S_RECORD_USER_MAP
                                          : B2S_RECORD_USER_BIN);
      assert_memory_equal(rec.user, want.user, want.user_len);
    } else {
      assert_int_equal(rec.user_kind, B2S_RECORD_USER_NONE);
    }
  }
  b2s_frame_free(f);
  b2s_records_free(rs);
}

static void fill(uint8_t *b, size_t len, int i) {
  for (size_t k = 0; k < len; k++)
    b[k] = (uint8_t)(i * 7 + k / 16);
}

/* ---- records over ZeroMQ and shared memory ------------------------------------ */

/* NBUF buffers with records and one without, over ZeroMQ or a segment,
 * then the frame and its records checked after the stop. */
static void records_run(bool shm, const char *stream) {
  env e;
  env_init_config(&e, meta_config);
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "rec", &s), 0);
  assert_int_equal(b2sc_protocol_version(s), 2);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, stream, NULL, &p), 0);
  if (shm)
    assert_int_equal(b2sc_shm_attach(p, 4, LEN), 0);
  uint8_t buf[LEN], u[16];
  for (int i = 0; i <= NBUF; i++) {
    uint8_t *dst = buf;
    uint32_t slot = 0;
    if (shm) {
      void *ptr;
      assert_int_equal(b2sc_shm_acquire(p, 5000, &slot, &ptr, NULL), 0);
      dst = ptr;
    }
    fill(dst, LEN, i);
    b2sc_record r = record_of(i, u);
    const b2sc_record *rp = i < NBUF ? &r : NULL;
    if (shm)
      assert_int_equal(b2sc_shm_submit_rec(p, slot, LEN, rp), 0);
    else
      assert_int_equal(b2sc_send_rec(p, dst, LEN, rp, 5000), 0);
  }
  assert_int_equal(b2sc_flush(p, 10000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, stream, path, sizeof path);
  check_records(path, NBUF + 1, NBUF);
  /* the data is what was sent */
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  uint8_t want[LEN], got[LEN];
  for (int i = 0; i <= NBUF; i++) {
    fill(want, LEN, i);
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, got, LEN), LEN);
    assert_memory_equal(got, want, LEN);
  }
  b2s_frame_free(f);
  env_fini(&e);
}

static void test_records_frames(void **state) {
  (void)state;
  records_run(false, "w");
  records_run(false, "r");         /* sparse */
}

static void test_records_shm(void **state) {
  (void)state;
  records_run(true, "w");
}

/* ---- version 1 and negotiation -------------------------------------------------- */

/* Next message, a header alone, in either version. */
static void recv_v(void *z, rx *r) {
  zmq_pollitem_t it = {.socket = z, .events = ZMQ_POLLIN};
  assert_int_equal(zmq_poll(&it, 1, WAIT_MS), 1);
  int n = zmq_recv(z, r->hdr, sizeof r->hdr, 0);
  assert_true(n >= 16 && n <= (int)sizeof r->hdr);
  assert_int_equal(b2s_wire_decode_v(r->hdr, (size_t)n, 2, &r->m), 0);
  int more;
  size_t ml = sizeof more;
  zmq_getsockopt(z, ZMQ_RCVMORE, &more, &ml);
  assert_false(more);
  r->payload = NULL;
  r->plen = 0;
}

static void hello_version(void *z, int version, rx *r) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.tag = 9;
  m.flags = B2S_WIRE_HELLO_PRODUCER;
  m.hello.name = b2s_wire_cstr("v");
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode_v(&m, version > 2 ? 2 : version, hdr, sizeof hdr);
  assert_true(n > 0);
  hdr[4] = (uint8_t)version;
  assert_int_equal(zmq_send(z, hdr, (size_t)n, 0), n);
  recv_v(z, r);
}

static void test_negotiation(void **state) {
  (void)state;
  env e;
  env_init_config(&e, meta_config);
  env_start(&e);
  void *z = cli_connect(&e);
  rx r;
  hello_version(z, 1, &r);        /* exactly as a version-1 daemon */
  assert_int_equal(r.m.type, B2S_WIRE_WELCOME);
  assert_int_equal(r.m.version, 1);
  assert_int_equal(r.m.welcome.version_min, 1);
  assert_int_equal(r.m.welcome.version_max, 1);
  rx_free(&r);
  /* a version-1 session: a META is no message of it */
  b2s_wire_msg o;
  assert_int_equal(cli_open(z, "w", "", &o), 0);
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_META);
  m.meta.handle = o.opened.handle;
  int n = b2s_wire_encode_v(&m, 2, hdr, sizeof hdr);
  assert_true(n > 0);
  const uint8_t map[] = {0x81, 0xa1, 'k', 0x01};
  assert_int_equal(zmq_send(z, hdr, (size_t)n, ZMQ_SNDMORE), n);
  assert_int_equal(zmq_send(z, map, sizeof map, 0), (int)sizeof map);
  cli_recv(z, &r);
  assert_int_equal(r.m.type, B2S_WIRE_ERROR);
  assert_int_equal(r.m.version, 1);
  assert_int_equal(r.m.error.code, B2S_E_PROTO);
  rx_free(&r);
  /* version 2, and a later one, get a version-2 session */
  hello_version(z, 2, &r);
  assert_int_equal(r.m.type, B2S_WIRE_WELCOME);
  assert_int_equal(r.m.version, 2);
  assert_int_equal(r.m.welcome.version_min, 1);
  assert_int_equal(r.m.welcome.version_max, 2);
  rx_free(&r);
  hello_version(z, 7, &r);
  assert_int_equal(r.m.type, B2S_WIRE_WELCOME);
  assert_int_equal(r.m.version, 2);
  rx_free(&r);
  zmq_close(z);
  env_down(&e);
}

/* A version-1 producer's buffers get records without producer fields. */
static void test_v1_records_empty(void **state) {
  (void)state;
  env e;
  env_init_config(&e, meta_config);
  env_start(&e);
  void *z = cli_producer(&e);      /* the raw client speaks version 1 */
  b2s_wire_msg o;
  assert_int_equal(cli_open(z, "w", "", &o), 0);
  prod p = prod_opened(z, &o, 10, 3000, 3);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  zmq_close(z);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  check_frame(path, &p, 10);
  check_records(path, 10, 0);
  env_fini(&e);
}

/* ---- series metadata ------------------------------------------------------------ */

static void series_expect(const char *path, const uint8_t *want, size_t n) {
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  uint8_t *m;
  size_t len;
  assert_int_equal(b2s_frame_series_get(f, &m, &len), 0);
  assert_int_equal(len, n);
  assert_memory_equal(m, want, n);
  free(m);
  b2s_frame_free(f);
}

static void test_series_meta(void **state) {
  (void)state;
  env e;
  env_init_config(&e, meta_config);
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "meta", &s), 0);
  b2sc_producer *p;
  const uint8_t init[] = {0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x02};
  assert_int_equal(b2sc_producer_open_meta(s, "w", NULL, init, sizeof init,
                                           &p), 0);
  uint8_t buf[LEN];
  fill(buf, LEN, 0);
  assert_int_equal(b2sc_send(p, buf, LEN, 5000), 0);
  assert_int_equal(b2sc_producer_set_meta_str(p, "c", "x"), 0);
  assert_int_equal(b2sc_producer_set_meta_str(p, "a", NULL), 0);
  /* limits: nothing changes */
  char key[80];
  memset(key, 'k', sizeof key - 1);
  key[sizeof key - 1] = '\0';
  assert_int_equal(b2sc_producer_set_meta_str(p, key, "v"), B2S_E_SERIES_KEY);
  size_t big = (64 << 10) + 16;    /* {"z": bin 32 of big bytes} */
  size_t vlen = 3 + 5 + big;
  uint8_t *v = malloc(vlen);
  memcpy(v, "\x81\xa1z\xc6", 4);
  v[4] = (uint8_t)(big >> 24);
  v[5] = (uint8_t)(big >> 16);
  v[6] = (uint8_t)(big >> 8);
  v[7] = (uint8_t)big;
  memset(v + 8, 0x55, big);
  assert_int_equal(b2sc_producer_set_meta(p, v, vlen), B2S_E_SERIES_VALUE);
  free(v);
  /* an OPEN with a refused map makes no handle */
  b2sc_producer *q = NULL;
  const uint8_t bad[] = {0x81, 0xa0, 0x01};   /* empty key */
  assert_int_equal(b2sc_producer_open_meta(s, "w", NULL, bad, sizeof bad, &q),
                   B2S_E_SERIES_KEY);
  fill(buf, LEN, 1);
  assert_int_equal(b2sc_send(p, buf, LEN, 5000), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  /* durable with the commit after it, before the stop */
  const uint8_t want[] = {0x82, 0xa1, 'b', 0x02, 0xa1, 'c', 0xa1, 'x'};
  series_expect(path, want, sizeof want);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  series_expect(path, want, sizeof want);
  /* and after a restart: the daemon's copy comes from the frame */
  env_start(&e);
  assert_int_equal(b2sc_connect(e.sock, "meta", &s), 0);
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  assert_int_equal(b2sc_producer_set_meta_str(p, "b", NULL), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  const uint8_t want2[] = {0x81, 0xa1, 'c', 0xa1, 'x'};
  series_expect(path, want2, sizeof want2);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  env_down(&e);
}

/* A stream made from a template with `series:` defaults starts its frame
 * with them (visible before any chunk); META merges into them; a frame
 * opened again keeps its own map, not the defaults. */
static void test_series_defaults(void **state) {
  (void)state;
  env e;
  env_init_config(&e, ENV_YAML_HEAD
                      "workers: 1\n"
                      "templates:\n"
                      "  beam:\n"
                      "    series: {sample: Fe, n: 3}\n");
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "defaults", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "cam1", "beam", &p), 0);
  char path[400];
  frame_path(&e, "cam1", path, sizeof path);
  const uint8_t defaults[] = {0x82, 0xa6, 's', 'a', 'm', 'p', 'l', 'e',
                              0xa2, 'F', 'e', 0xa1, 'n', 0x03};
  series_expect(path, defaults, sizeof defaults);
  assert_int_equal(b2sc_producer_set_meta_str(p, "op", "ana"), 0);
  assert_int_equal(b2sc_producer_set_meta_str(p, "sample", NULL), 0);
  uint8_t buf[LEN];
  fill(buf, LEN, 0);
  assert_int_equal(b2sc_send(p, buf, LEN, 5000), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  const uint8_t merged[] = {0x82, 0xa1, 'n', 0x03, 0xa2, 'o', 'p',
                            0xa3, 'a', 'n', 'a'};
  series_expect(path, merged, sizeof merged);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  env_start(&e);
  assert_int_equal(b2sc_connect(e.sock, "defaults", &s), 0);
  assert_int_equal(b2sc_producer_open(s, "cam1", "beam", &p), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  series_expect(path, merged, sizeof merged);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  env_down(&e);
}

/* ---- gaps ------------------------------------------------------------------ */

static void noise(uint8_t *b, size_t len, int i) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
  for (size_t k = 0; k < len; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b[k] = (uint8_t)(x & 0x3f);
  }
}

/* A burst on a drop policy with gaps: fill: every buffer keeps its place,
 * chunk i is buffer i or a zero placeholder whose record says dropped. */
static void gaps_run(const char *stream) {
  enum { N = 40, BIG = 256 << 10 };
  env e;
  env_init_config(&e, meta_config);
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "gaps", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, stream, NULL, &p), 0);
  uint8_t *buf = malloc(BIG), *got = malloc(BIG);
  for (int i = 0; i < N; i++) {
    noise(buf, BIG, i);
    b2sc_record r = {.present = B2SC_REC_FRAME, .frame = (uint64_t)i};
    assert_int_equal(b2sc_send_rec(p, buf, BIG, &r, 5000), 0);
  }
  int rc = b2sc_flush(p, 20000);
  assert_true(rc == 0 || rc == B2S_E_DROPPED);
  b2sc_producer_close(p);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, stream, path, sizeof path);
  b2s_frame *f;
  b2s_records *rs;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), N);
  assert_int_equal(b2s_records_count(rs), N);
  int gaps = 0;
  for (int i = 0; i < N; i++) {
    b2s_record rec;
    assert_int_equal(b2s_records_get(rs, i, &rec), 0);
    assert_true(rec.has_frame);
    assert_int_equal(rec.frame, i);          /* chunk index == frame number */
    int32_t cb, nb;
    assert_int_equal(b2s_frame_chunk_sizes(f, i, &cb, &nb), 0);
    uint8_t *raw = malloc((size_t)cb);
    assert_int_equal(b2s_frame_chunk_read(f, i, raw, (size_t)cb), cb);
    assert_true(rec.xxh64 == b2s_chunk_xxh64(raw, (size_t)cb));
    free(raw);
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, got, BIG), BIG);
    if (rec.flags) {
      assert_int_equal(rec.flags, B2S_RECORD_GAP | B2S_RECORD_DROPPED);
      for (int k = 0; k < BIG; k++)
        assert_int_equal(got[k], 0);
      gaps++;
    } else {
      noise(buf, BIG, i);
      assert_memory_equal(got, buf, BIG);
    }
  }
  printf("%s: %d of %d buffers dropped, left as gaps\n", stream, gaps, N);
  assert_true(gaps > 0);
  b2s_records_free(rs);
  b2s_frame_free(f);
  free(buf);
  free(got);
  env_fini(&e);
}

static void test_gaps_drop_newest(void **state) {
  (void)state;
  gaps_run("dn");
}

static void test_gaps_drop_oldest(void **state) {
  (void)state;
  gaps_run("do");
}

/* A b2nd stream fills gaps by default: a buffer of the wrong size is
 * refused and leaves a zero chunk whose record says rejected, with the
 * producer's frame number and timestamp. */
static void test_gaps_b2nd_rejected(void **state) {
  (void)state;
  env e;
  env_init_config(&e, meta_config);
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "nd", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "nd", NULL, &p), 0);
  uint8_t buf[64];
  for (int i = 0; i < 3; i++) {
    memset(buf, 0x10 + i, sizeof buf);
    b2sc_record r = {.present = B2SC_REC_FRAME | B2SC_REC_TS,
                     .frame = 7 + (uint64_t)i, .ts_ns = 100 + i};
    size_t len = i == 1 ? 31 : 32;   /* chunk: 2 x 8 x 2 bytes */
    assert_int_equal(b2sc_send_rec(p, buf, len, &r, 5000), 0);
  }
  assert_int_equal(b2sc_flush(p, 10000), B2S_E_CHUNK_SIZE);
  b2sc_producer_close(p);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "nd", path, sizeof path);
  b2s_frame *f;
  b2s_records *rs;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), 3);
  for (int i = 0; i < 3; i++) {
    b2s_record rec;
    assert_int_equal(b2s_records_get(rs, i, &rec), 0);
    assert_true(rec.has_frame && rec.has_ts);
    assert_int_equal(rec.frame, 7 + i);
    assert_int_equal(rec.ts, 100 + i);
    uint8_t got[32], want[32];
    memset(want, i == 1 ? 0 : 0x10 + i, sizeof want);
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, got, 32), 32);
    assert_memory_equal(got, want, 32);
    assert_int_equal(rec.flags,
                     i == 1 ? B2S_RECORD_GAP | B2S_RECORD_REJECTED : 0);
  }
  b2s_records_free(rs);
  b2s_frame_free(f);
  env_fini(&e);
}

/* ---- order: frame_number --------------------------------------------------- */

static void send_frame(b2sc_producer *p, uint64_t frame) {
  uint8_t buf[256];
  memset(buf, (int)(frame & 0xff), sizeof buf);
  b2sc_record r = {.present = B2SC_REC_FRAME, .frame = frame};
  assert_int_equal(b2sc_send_rec(p, buf, sizeof buf, &r, 5000), 0);
}

/* Chunk i of stream holds frame first + i: the data of that frame, or a
 * gap (is_gap[i]) with gap flags alone and no frame number (the chunk
 * index tells it: every gap of a run shares one stored record). */
static void check_ordered(env *e, const char *stream, uint64_t first, int n,
                          const bool *is_gap) {
  char path[400];
  frame_path(e, stream, path, sizeof path);
  b2s_frame *f;
  b2s_records *rs;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), n);
  assert_int_equal(b2s_records_count(rs), n);
  for (int i = 0; i < n; i++) {
    b2s_record rec;
    assert_int_equal(b2s_records_get(rs, i, &rec), 0);
    bool gap = is_gap && is_gap[i];
    assert_int_equal(rec.has_frame, !gap);
    if (!gap)
      assert_int_equal(rec.frame, first + (uint64_t)i);
    uint8_t got[256], want[256];
    memset(want, is_gap && is_gap[i] ? 0 : (int)((first + i) & 0xff),
           sizeof want);
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, got, 256), 256);
    assert_memory_equal(got, want, 256);
    assert_int_equal(rec.flags, is_gap && is_gap[i] ? B2S_RECORD_GAP : 0);
  }
  b2s_records_free(rs);
  b2s_frame_free(f);
}

/* One producer, window 4: out-of-order frames are put in order, a
 * duplicate and late frames are refused, frames the window passed become
 * gaps, and a FLUSH stores what is held. */
static void test_order_window(void **state) {
  (void)state;
  env e;
  env_init_config(&e, meta_config);
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "ord", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "o4", NULL, &p), 0);
  send_frame(p, 10);
  send_frame(p, 12);
  send_frame(p, 11);
  send_frame(p, 13);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  send_frame(p, 11);               /* stored already */
  assert_int_equal(b2sc_flush(p, 10000), B2S_E_FRAME_DUP);
  send_frame(p, 9);                /* before the first */
  assert_int_equal(b2sc_flush(p, 10000), B2S_E_FRAME_LATE);
  send_frame(p, 20);               /* the window passes 14, 15, 16 */
  send_frame(p, 15);               /* passed: late */
  send_frame(p, 18);
  send_frame(p, 20);               /* waiting: duplicate */
  assert_int_equal(b2sc_flush(p, 10000), B2S_E_FRAME_LATE);
  b2sc_producer_stats ps;
  assert_int_equal(b2sc_producer_stats_get(p, &ps), 0);
  assert_int_equal(ps.rejected, 4);
  /* no frame number on an ordered stream */
  uint8_t buf[256] = {0};
  assert_int_equal(b2sc_send(p, buf, sizeof buf, 5000), 0);
  assert_int_equal(b2sc_flush(p, 10000), B2S_E_ARG);
  /* the refusal says why, naming the stream */
  assert_non_null(strstr(b2sc_last_error(s), "needs a frame number"));
  assert_non_null(strstr(b2sc_last_error(s), "'o4'"));
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  /* 10..20: 14-17 and 19 never came */
  const bool gap[11] = {0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0};
  check_ordered(&e, "o4", 10, 11, gap);
  /* after a restart the window goes on after frame 20: 21 never comes */
  env_start(&e);
  assert_int_equal(b2sc_connect(e.sock, "ord", &s), 0);
  assert_int_equal(b2sc_producer_open(s, "o4", NULL, &p), 0);
  send_frame(p, 22);
  send_frame(p, 20);               /* stored before the restart: late */
  assert_int_equal(b2sc_flush(p, 10000), B2S_E_FRAME_LATE);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  const bool gap2[13] = {0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 0};
  check_ordered(&e, "o4", 10, 13, gap2);
  env_fini(&e);
}

/* Two producers, even and odd frame numbers, interleaved: one stream in
 * frame order, no gap. */
static void test_order_two_producers(void **state) {
  (void)state;
  enum { N = 400 };
  env e;
  env_init_config(&e, meta_config);
  env_start(&e);
  b2sc_session *sa, *sb;
  assert_int_equal(b2sc_connect(e.sock, "even", &sa), 0);
  assert_int_equal(b2sc_connect(e.sock, "odd", &sb), 0);
  b2sc_producer *a, *b;
  assert_int_equal(b2sc_producer_open(sa, "o2", NULL, &a), 0);
  assert_int_equal(b2sc_producer_open(sb, "o2", NULL, &b), 0);
  /* the first buffer stored sets the first frame number: frame 0 first */
  send_frame(a, 0);
  assert_int_equal(b2sc_flush(a, 10000), 0);
  for (int i = 1; i < N; i += 2) {
    send_frame(b, (uint64_t)i);
    if (i + 1 < N)
      send_frame(a, (uint64_t)i + 1);
  }
  /* every frame number came: nothing is held, both close */
  assert_int_equal(b2sc_producer_close(a), 0);
  assert_int_equal(b2sc_producer_close(b), 0);
  b2sc_close(sa);
  b2sc_close(sb);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_ordered(&e, "o2", 0, N, NULL);
  env_fini(&e);
}

/* ---- data frames moved aside ------------------------------------------------------ */

/* Records in a frame of their own (its vlmetalayers and chunks), opened
 * directly: the count of an orphan. */
static int64_t orphan_count(const char *path) {
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  int64_t n = b2s_frame_nchunks(f);
  b2s_frame_free(f);
  return n;
}

/* The operator moves a stream's data frame aside, twice: each time the
 * records frame left without its data goes aside as an orphan, and the
 * second never replaces the first. */
static void test_orphan_records_kept(void **state) {
  (void)state;
  env e;
  env_up(&e, meta_config);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "orphan", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  uint8_t buf[LEN], u[16];
  for (int i = 0; i < 3; i++) {
    fill(buf, LEN, i);
    b2sc_record r = record_of(i, u);
    assert_int_equal(b2sc_send_rec(p, buf, LEN, &r, 5000), 0);
  }
  assert_int_equal(b2sc_flush(p, 10000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  char path[400], moved[450], rpath[450], orphan[470], orphan1[470];
  frame_path(&e, "w", path, sizeof path);
  assert_true(b2s_records_path(path, rpath, sizeof rpath) > 0);
  snprintf(orphan, sizeof orphan, "%s.orphan", rpath);
  snprintf(orphan1, sizeof orphan1, "%s.orphan.1", rpath);
  for (int round = 0; round < 2; round++) {
    assert_int_equal(env_stop(&e, SIGTERM), 0);
    snprintf(moved, sizeof moved, "%s.moved%d", path, round);
    assert_int_equal(rename(path, moved), 0);
    env_start(&e);
  }
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  assert_int_equal(orphan_count(orphan), 3);   /* the first, intact */
  assert_int_equal(orphan_count(orphan1), 0);  /* the new frame's, empty */
  struct stat sb;
  assert_int_equal(lstat(rpath, &sb), 0);      /* the current frame's */
  env_fini(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_negotiation),
      cmocka_unit_test(test_v1_records_empty),
      cmocka_unit_test(test_records_frames),
      cmocka_unit_test(test_records_shm),
      cmocka_unit_test(test_series_meta),
      cmocka_unit_test(test_series_defaults),
      cmocka_unit_test(test_gaps_drop_newest),
      cmocka_unit_test(test_gaps_drop_oldest),
      cmocka_unit_test(test_gaps_b2nd_rejected),
      cmocka_unit_test(test_order_window),
      cmocka_unit_test(test_order_two_producers),
      cmocka_unit_test(test_orphan_records_kept),
  };
  return harness_run(tests);
}

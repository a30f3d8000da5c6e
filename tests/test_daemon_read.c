/* Integration tests of b2streamd: READ and pushed chunks are read off the
 * I/O thread (daemon/serving/readers.c) within bounds of count (B2S_E_BUSY beyond
 * them) and of bytes (reads wait), a failed stream's ERRORs say whether they
 * end a handle or a follow, and b2nd streams take only buffers of their
 * chunk size.  The real daemon ($B2S_DAEMON) runs on a temporary
 * directory; a raw client speaks the protocol (daemon_harness), and the
 * client library is checked where it routes what the daemon sends. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "b2s_frame.h"
#include "b2s_wire.h"

#define BIG (8u << 20)           /* bytes of the large chunks */
#define ND_CHUNK (4 * 64 * 64 * 2) /* stream nd: chunkshape x typesize */

static const char config[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 9MiB\n"
    "memory_limit: 512MiB\n"
    "log_level: info\n"
    "streams:\n"
    "  big:\n"
    "    codec: lz4\n"
    "    queue_depth: 4\n"
    "    durability: {ack: write, group_count: 2, group_interval_ms: 5}\n"
    "  w:\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  x:\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  r:\n"
    "    format: sparse\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  nd:\n"
    "    typesize: 2\n"
    "    b2nd: {shape: [0, 64, 64], chunkshape: [4, 64, 64]}\n"
    "    gaps: skip\n"               /* refused buffers leave no chunk */
    "    durability: {ack: write, group_count: 1, group_interval_ms: 5}\n";

/* ---- helpers ---------------------------------------------------------------- */

static void noise_fill(uint8_t *b, size_t len, int i) {
  uint64_t x = 0x9E3779B97F4A7C15u * (uint64_t)(i + 1);
  for (size_t k = 0; k < len; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b[k] = (uint8_t)x;
  }
}

static void *consumer(env *e) {
  void *s = cli_connect(e);
  cli_hello(s, B2S_WIRE_HELLO_CONSUMER);
  return s;
}

static void send_read(void *s, uint32_t tag, const char *stream,
                      uint32_t follow, uint64_t chunk, bool dec) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_READ);
  m.tag = tag;
  m.flags = dec ? B2S_WIRE_READ_DECOMPRESS : 0;
  m.read.chunk = chunk;
  m.read.follow_id = follow;
  m.read.stream = b2s_wire_cstr(stream);
  cli_send(s, &m, NULL, 0);
}

static void send_ping(void *s, uint64_t nonce) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_PING);
  m.ping.nonce = nonce;
  cli_send(s, &m, NULL, 0);
}

static uint32_t follow(void *s, const char *stream, uint16_t flags) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.tag = 3;
  m.flags = flags;
  m.follow.target = b2s_wire_cstr(stream);
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_FOLLOWING, &r);
  assert_int_equal(r.m.tag, 3);
  return r.m.following.follow_id;
}

static void expect_silence(void *s, int ms) {
  zmq_pollitem_t it = {.socket = s, .events = ZMQ_POLLIN};
  assert_int_equal(zmq_poll(&it, 1, ms), 0);
}

/* A reply to READ: chunk k of stream "big" (producer seed + k), checked
 * byte for byte against what was sent (decompressed) or the frame. */
static void check_big_chunk(const rx *r, b2s_frame *f, int seed, bool dec) {
  uint64_t k = r->m.chunk.index;
  size_t len = buf_len(seed + (int)k, BIG);
  assert_int_equal(r->m.chunk.nbytes, (uint32_t)len);
  int32_t cb = 0;
  assert_int_equal(b2s_frame_chunk_sizes(f, (int64_t)k, &cb, NULL), 0);
  assert_int_equal(r->m.chunk.cbytes, (uint32_t)cb);
  if (dec) {
    assert_int_equal(r->m.flags & ~B2S_WIRE_CHUNK_PUSHED,
                     B2S_WIRE_CHUNK_DECOMPRESSED);
    uint8_t *want = malloc(len);
    buf_fill(want, len, seed + (int)k);
    assert_int_equal(r->plen, len);
    assert_memory_equal(r->payload, want, len);
    free(want);
  } else {
    assert_int_equal(r->m.flags & ~B2S_WIRE_CHUNK_PUSHED, 0);
    uint8_t *stored = malloc((size_t)cb);
    assert_int_equal(b2s_frame_chunk_read(f, (int64_t)k, stored, (size_t)cb),
                     cb);
    assert_int_equal(r->plen, (size_t)cb);
    assert_memory_equal(r->payload, stored, (size_t)cb);
    free(stored);
  }
}

/* nb large chunks in stream "big" (content seed + k); returns its frame. */
static b2s_frame *fill_big(env *e, int nb, int seed) {
  void *s = cli_producer(e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "big", "", &o), 0);
  prod p = prod_opened(s, &o, nb, BIG, seed);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  zmq_close(s);
  char path[400];
  frame_path(e, "big", path, sizeof path);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), nb);
  return f;
}

/* ---- reads off the I/O thread ----------------------------------------------- */

/* Many READs of 8 MiB chunks, then a PING on the same socket and DATA from
 * another producer.  The PONG overtakes the READ replies (they are served
 * by the reader threads, the PING by the I/O thread at once), the producer
 * is acknowledged, and every reply arrives once, intact. */
static void test_large_reads_do_not_stall(void **state) {
  (void)state;
  env e;
  env_up(&e, config);
  enum { NB = 6, NR = 24, SEED = 70 };
  b2s_frame *f = fill_big(&e, NB, SEED);

  void *c = consumer(&e);
  for (int i = 0; i < NR; i++)        /* odd ones as stored */
    send_read(c, 100 + (uint32_t)i, "big", 0, (uint64_t)(i % NB), i % 2 == 0);
  send_ping(c, 77);

  void *ps = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(ps, "w", "", &o), 0);
  prod p = prod_opened(ps, &o, 3, 1000, 5);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);   /* ingest goes on */

  bool seen[NR] = {false};
  int before_pong = -1, nchunks = 0;
  while (nchunks < NR || before_pong < 0) {
    rx r;
    cli_recv(c, &r);
    if (r.m.type == B2S_WIRE_PONG) {
      assert_int_equal(r.m.pong.nonce, 77);
      assert_int_equal(before_pong, -1);
      before_pong = nchunks;
    } else {
      assert_int_equal(r.m.type, B2S_WIRE_CHUNK);
      int i = (int)r.m.tag - 100;
      assert_true(i >= 0 && i < NR);
      assert_false(seen[i]);            /* once */
      seen[i] = true;
      assert_int_equal(r.m.chunk.index, (uint64_t)(i % NB));
      assert_int_equal(r.m.chunk.follow_id, 0);
      check_big_chunk(&r, f, SEED, i % 2 == 0);
      nchunks++;
    }
    rx_free(&r);
  }
  assert_true(before_pong < NR);        /* the PING did not wait */
  expect_silence(c, 100);
  cli_close(&p);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  check_frame(path, &p, 3);
  b2s_frame_free(f);
  zmq_close(ps);
  zmq_close(c);
  env_down(&e);
}

/* Sessions and follows that end with reads in flight: BYE, a new HELLO on
 * the same socket, UNFOLLOW of a push follow, a peer that vanishes.  No
 * stale reply reaches the new session, UNFOLLOWED is the last word about
 * its follow, and the daemon keeps serving and stops cleanly (with the
 * sanitizers: no leak, no use after free). */
static void test_end_with_reads_in_flight(void **state) {
  (void)state;
  env e;
  env_up(&e, config);
  enum { NB = 4, SEED = 400 };
  b2s_frame *f = fill_big(&e, NB, SEED);

  /* BYE with reads in flight and waiting, then a new session */
  void *a = consumer(&e);
  follow(a, "big", B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  for (int i = 0; i < 40; i++)
    send_read(a, 200 + (uint32_t)i, "big", 0, (uint64_t)(i % NB), true);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_BYE);
  cli_send(a, &m, NULL, 0);
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.tag = 1;
  m.flags = B2S_WIRE_HELLO_CONSUMER;
  m.hello.name = b2s_wire_cstr("again");
  cli_send(a, &m, NULL, 0);
  for (;;) {                  /* what the old session got before its BYE */
    rx r;
    cli_recv(a, &r);
    int t = r.m.type;
    if (t == B2S_WIRE_CHUNK)
      check_big_chunk(&r, f, SEED, true);
    rx_free(&r);
    if (t == B2S_WIRE_WELCOME)
      break;
    assert_int_equal(t, B2S_WIRE_CHUNK);
  }
  send_read(a, 999, "big", 0, 1, false);
  send_ping(a, 5);
  rx r;
  for (int got = 0; got < 2; got++) {         /* nothing stale */
    cli_recv(a, &r);
    if (r.m.type == B2S_WIRE_PONG) {
      assert_int_equal(r.m.pong.nonce, 5);
    } else {
      assert_int_equal(r.m.type, B2S_WIRE_CHUNK);
      assert_int_equal(r.m.tag, 999);
      assert_false(r.m.flags & B2S_WIRE_CHUNK_PUSHED);
      check_big_chunk(&r, f, SEED, false);
    }
    rx_free(&r);
  }
  expect_silence(a, 200);

  /* UNFOLLOW of a push follow with chunks on their way */
  void *b = consumer(&e);
  uint32_t fid = follow(b, "big", B2S_WIRE_FOLLOW_PUSH_COMPRESSED);
  cli_recv(b, &r);
  assert_int_equal(r.m.type, B2S_WIRE_CHUNK);
  assert_int_equal(r.m.chunk.index, 0);
  rx_free(&r);
  b2s_wire_init(&m, B2S_WIRE_UNFOLLOW);
  m.tag = 9;
  m.unfollow.follow_id = fid;
  cli_send(b, &m, NULL, 0);
  uint64_t next = 1;
  for (;;) {
    cli_recv(b, &r);
    if (r.m.type == B2S_WIRE_UNFOLLOWED) {
      assert_int_equal(r.m.tag, 9);
      assert_int_equal(r.m.unfollowed.next, next);
      rx_free(&r);
      break;
    }
    assert_int_equal(r.m.type, B2S_WIRE_CHUNK);
    assert_int_equal(r.m.chunk.index, next);     /* in order, once */
    check_big_chunk(&r, f, SEED, false);
    rx_free(&r);
    next++;
  }
  expect_silence(b, 200);                        /* the last word */

  /* a peer that vanishes with READs and pushed chunks in flight */
  void *c = consumer(&e);
  follow(c, "big", B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  for (int i = 0; i < 20; i++)
    send_read(c, 300 + (uint32_t)i, "big", 0, (uint64_t)(i % NB), true);
  int zero = 0;
  zmq_setsockopt(c, ZMQ_LINGER, &zero, sizeof zero);
  zmq_close(c);

  /* the daemon goes on: ingest, reads, a push follow from the start */
  void *ps = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(ps, "w", "", &o), 0);
  prod p = prod_opened(ps, &o, 20, 2000, 9);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  void *d = consumer(&e);
  follow(d, "big", B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  for (uint64_t k = 0; k < NB; k++) {
    cli_recv(d, &r);
    assert_int_equal(r.m.type, B2S_WIRE_CHUNK);
    assert_int_equal(r.m.chunk.index, k);
    check_big_chunk(&r, f, SEED, true);
    rx_free(&r);
  }
  send_read(d, 42, "big", 0, 3, true);
  cli_expect(d, B2S_WIRE_CHUNK, &r);
  assert_int_equal(r.m.tag, 42);
  check_big_chunk(&r, f, SEED, true);
  rx_free(&r);
  b2s_frame_free(f);
  zmq_close(a);
  zmq_close(b);
  zmq_close(d);
  zmq_close(ps);
  env_down(&e);
}

/* READ errors still come back with the READ's tag and chunk. */
static void test_read_errors(void **state) {
  (void)state;
  env e;
  env_up(&e, config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  prod p = prod_opened(s, &o, 2, 1000, 1);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  void *c = consumer(&e);
  rx r;
  send_read(c, 7, "w", 0, 2, true);          /* not committed */
  cli_expect(c, B2S_WIRE_ERROR, &r);
  assert_int_equal(r.m.tag, 7);
  assert_int_equal(r.m.error.code, B2S_E_NCHUNK);
  assert_int_equal(r.m.error.ref_type, B2S_WIRE_READ);
  assert_int_equal(r.m.error.ref_index, 2);
  send_read(c, 8, "nope", 0, 0, true);
  cli_expect(c, B2S_WIRE_ERROR, &r);
  assert_int_equal(r.m.tag, 8);
  assert_int_equal(r.m.error.code, B2S_E_NOSTREAM);
  send_read(c, 10, "", 12345, 0, true);      /* no such follow */
  cli_expect(c, B2S_WIRE_ERROR, &r);
  assert_int_equal(r.m.tag, 10);
  assert_int_equal(r.m.error.code, B2S_E_CLOSED);
  uint32_t fid = follow(c, "w", 0);
  send_read(c, 11, "", fid, 1, true);
  for (;;) {                                 /* NOTIFY may come first */
    cli_recv(c, &r);
    if (r.m.type == B2S_WIRE_CHUNK)
      break;
    assert_int_equal(r.m.type, B2S_WIRE_NOTIFY);
    rx_free(&r);
  }
  assert_int_equal(r.m.tag, 11);
  assert_int_equal(r.m.chunk.follow_id, fid);
  size_t len = buf_len(2, 1000);
  uint8_t *want = malloc(len);
  buf_fill(want, len, 2);
  assert_int_equal(r.plen, len);
  assert_memory_equal(r.payload, want, len);
  free(want);
  rx_free(&r);
  zmq_close(c);
  zmq_close(s);
  env_down(&e);
}

/* ---- a failed stream: ERROR ref_type -------------------------------------- */

/* Start the daemon with a file-size limit: stream x fails once its frame
 * passes it (EFBIG; the sparse stream r, in small files, does not). */
static void start_limited(env *e) {
  env_init_config(e, config);
  e->fsize_limit = 3000000;     /* above a frame's 1 MiB data reserve */
  signal(SIGXFSZ, SIG_IGN);     /* inherited: EFBIG, not a signal death */
  env_start(e);
}

/* Handle 1 and follow 1 on the failing stream x: one ERROR each, with
 * ref_type OPEN for the handle and FOLLOW for the follow. */
static void test_failed_stream_ref_types(void **state) {
  (void)state;
  env e;
  start_limited(&e);
  void *s = cli_connect(&e);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER | B2S_WIRE_HELLO_CONSUMER);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "x", "", &o), 0);
  uint32_t fid = follow(s, "x", 0);
  uint32_t handle = o.opened.handle;
  assert_int_equal(handle, fid);          /* the same number: ambiguous */
  const size_t len = 65536;
  uint8_t *b = malloc(len);
  uint32_t credits = o.opened.credits;
  uint64_t notified = 0;
  bool ended_h = false, ended_f = false;
  for (int i = 0; !(ended_h && ended_f);) {
    if (credits > 0 && !ended_h && i < 200) {
      noise_fill(b, len, i);
      b2s_wire_msg m;
      b2s_wire_init(&m, B2S_WIRE_DATA);
      m.data.buffer_id = (uint64_t)i++;
      m.data.handle = handle;
      cli_send(s, &m, b, len);
      credits--;
      continue;
    }
    rx r;
    cli_recv(s, &r);
    switch (r.m.type) {
    case B2S_WIRE_ACK:
      assert_false(ended_h);
      credits += r.m.ack.credits;
      break;
    case B2S_WIRE_NOTIFY:
      assert_false(ended_f);
      assert_int_equal(r.m.notify.first, notified);
      notified += r.m.notify.count;
      break;
    case B2S_WIRE_ERROR:
      if (r.m.error.ref_type == B2S_WIRE_DATA) {   /* sent after the end */
        assert_true(ended_h);
        assert_int_equal(r.m.error.code, B2S_E_CLOSED);
        assert_int_equal(r.m.flags, 0);
        break;
      }
      assert_int_equal(r.m.error.code, -EFBIG);
      assert_true(r.m.flags & B2S_WIRE_ERROR_CLOSED_REF);
      assert_int_equal(r.m.error.ref_id, handle);
      if (r.m.error.ref_type == B2S_WIRE_OPEN) {
        assert_false(ended_h);
        ended_h = true;
      } else {
        assert_int_equal(r.m.error.ref_type, B2S_WIRE_FOLLOW);
        assert_false(ended_f);
        ended_f = true;
        assert_int_equal(r.m.error.ref_index, notified);
      }
      break;
    default:
      fail_msg("unexpected %s", b2s_wire_type_name(r.m.type));
    }
    rx_free(&r);
  }
  free(b);
  assert_true(notified > 0);
  send_ping(s, 6);
  for (;;) {                  /* nothing more about the handle or follow */
    rx r;
    cli_recv(s, &r);
    int t = r.m.type;
    if (t == B2S_WIRE_ERROR) {
      assert_int_equal(r.m.error.ref_type, B2S_WIRE_DATA);
      assert_int_equal(r.m.error.code, B2S_E_CLOSED);
    }
    rx_free(&r);
    if (t == B2S_WIRE_PONG)
      break;
    assert_int_equal(t, B2S_WIRE_ERROR);
  }
  /* the session goes on */
  assert_int_equal(cli_open(s, "x", "", &o), -EFBIG);
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  zmq_close(s);
  env_down(&e);
}

/* The client library routes the failure by ref_type: the producer on x
 * (handle 1) ends, the consumer of r (follow 1) in the same session goes
 * on receiving. */
static void test_failed_stream_client_routing(void **state) {
  (void)state;
  env e;
  start_limited(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "both", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "x", NULL, &p), 0);
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "r", 0, 0, &c), 0);
  const size_t len = 65536;
  uint8_t *b = malloc(len);
  int rc = 0;
  for (int i = 0; i < 400 && rc == 0; i++) {
    noise_fill(b, len, i);
    rc = b2sc_send(p, b, len, 5000);
  }
  free(b);
  assert_int_equal(rc, -EFBIG);     /* the reason the stream stopped */

  b2sc_session *s2;
  assert_int_equal(b2sc_connect(e.sock, "other", &s2), 0);
  b2sc_producer *q;
  assert_int_equal(b2sc_producer_open(s2, "r", NULL, &q), 0);
  for (int i = 0; i < 3; i++)
    assert_int_equal(b2sc_send(q, "abcd", 4, 1000), 0);
  assert_int_equal(b2sc_producer_close(q), 0);
  b2sc_close(s2);
  b2sc_chunk_info ci;
  for (uint64_t k = 0; k < 3; k++) {
    assert_int_equal(b2sc_next(c, 5000, &ci), 0);
    assert_int_equal(ci.index, k);
  }
  assert_int_equal(b2sc_unfollow(c), 0);
  assert_int_equal(b2sc_producer_close(p), -EFBIG);   /* why it ended */
  b2sc_close(s);
  env_down(&e);
}

/* ---- b2nd streams: one chunk per buffer --------------------------------- */

static void send_data(void *s, uint32_t handle, uint64_t id, size_t len,
                      int seed) {
  uint8_t *b = malloc(len);
  buf_fill(b, len, seed);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_DATA);
  m.tag = 50 + (uint32_t)id;
  m.data.buffer_id = id;
  m.data.handle = handle;
  cli_send(s, &m, b, len);
  free(b);
}

/* DATA of another size than the chunk is rejected per buffer, with both
 * sizes in the message; the others land, and the frame stays a b2nd array
 * of whole chunks. */
static void test_b2nd_chunk_size_data(void **state) {
  (void)state;
  env e;
  env_up(&e, config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "nd", "", &o), 0);
  uint32_t h = o.opened.handle;
  const size_t sizes[] = {ND_CHUNK, 4096, ND_CHUNK, ND_CHUNK + 2,
                          ND_CHUNK / 2, ND_CHUNK};
  enum { N = 6 };
  for (uint64_t i = 0; i < N; i++)
    send_data(s, h, i, sizes[i], (int)i);
  int errors = 0;
  uint64_t written = 0;
  while (written < N || errors < 3) {
    rx r;
    cli_recv(s, &r);
    if (r.m.type == B2S_WIRE_ERROR) {
      uint64_t id = r.m.error.ref_index;
      assert_true(id == 1 || id == 3 || id == 4);
      assert_int_equal(r.m.tag, 50 + id);
      assert_int_equal(r.m.error.code, B2S_E_CHUNK_SIZE);
      assert_int_equal(r.m.flags, 0);         /* the handle stays */
      assert_int_equal(r.m.error.ref_type, B2S_WIRE_DATA);
      assert_int_equal(r.m.error.ref_id, h);
      char want[128], got[B2S_WIRE_TEXT_MAX + 1];
      snprintf(want, sizeof want,
               "buffer is %zu bytes, stream's b2nd chunk is %d bytes",
               sizes[id], ND_CHUNK);
      memcpy(got, r.m.error.message.ptr, r.m.error.message.len);
      got[r.m.error.message.len] = '\0';
      assert_string_equal(got, want);
      errors++;
    } else {
      assert_int_equal(r.m.type, B2S_WIRE_ACK);
      if (r.m.ack.level == B2S_WIRE_LEVEL_WRITTEN)
        written = r.m.ack.upto;
    }
    rx_free(&r);
  }
  assert_int_equal(errors, 3);
  zmq_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "nd", path, sizeof path);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), 3);
  b2s_b2nd nd;
  assert_int_equal(b2s_frame_b2nd_get(f, &nd), 0);
  assert_int_equal(nd.chunkshape[0] * nd.chunkshape[1] * nd.chunkshape[2] * 2,
                   ND_CHUNK);
  uint8_t *got = malloc(ND_CHUNK), *want = malloc(ND_CHUNK);
  const int kept[] = {0, 2, 5};
  for (int k = 0; k < 3; k++) {
    assert_int_equal(b2s_frame_chunk_decompress(f, k, NULL, got, ND_CHUNK),
                     ND_CHUNK);
    buf_fill(want, ND_CHUNK, kept[k]);
    assert_memory_equal(got, want, ND_CHUNK);
  }
  free(got);
  free(want);
  b2s_frame_free(f);
  env_fini(&e);
}

/* The same check for shared-memory buffers (SHM_SUBMIT), through the
 * client library: the wrong size is refused, flush reports it. */
static void test_b2nd_chunk_size_shm(void **state) {
  (void)state;
  env e;
  env_up(&e, config);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "shm", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "nd", NULL, &p), 0);
  assert_int_equal(b2sc_shm_attach(p, 4, 65536), 0);
  const size_t sizes[] = {ND_CHUNK, 1000, ND_CHUNK};
  for (int i = 0; i < 3; i++) {
    uint32_t slot;
    void *ptr;
    size_t cap;
    assert_int_equal(b2sc_shm_acquire(p, 2000, &slot, &ptr, &cap), 0);
    assert_true(cap >= sizes[i]);
    buf_fill(ptr, sizes[i], 10 + i);
    assert_int_equal(b2sc_shm_submit(p, slot, sizes[i]), 0);
  }
  assert_int_equal(b2sc_flush(p, 5000), B2S_E_CHUNK_SIZE);
  assert_int_equal(b2sc_last_error_code(s), B2S_E_CHUNK_SIZE);
  assert_non_null(strstr(b2sc_last_error(s), "buffer is 1000 bytes"));
  b2sc_producer_stats st;
  assert_int_equal(b2sc_producer_stats_get(p, &st), 0);
  assert_int_equal(st.rejected, 1);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "nd", path, sizeof path);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), 2);
  uint8_t *got = malloc(ND_CHUNK), *want = malloc(ND_CHUNK);
  const int kept[] = {10, 12};
  for (int k = 0; k < 2; k++) {
    assert_int_equal(b2s_frame_chunk_decompress(f, k, NULL, got, ND_CHUNK),
                     ND_CHUNK);
    buf_fill(want, ND_CHUNK, kept[k]);
    assert_memory_equal(got, want, ND_CHUNK);
  }
  free(got);
  free(want);
  b2s_frame_free(f);
  env_fini(&e);
}

/* ---- READ bounds: BUSY beyond the waiting room, result bytes ------------ */

/* A consumer whose socket takes at most hwm messages in ahead of the
 * program: while it does not read, the daemon's replies stay with the
 * daemon (the slow consumer the read bounds are for). */
static void *consumer_hwm(env *e, int hwm) {
  void *s = zmq_socket(zctx, ZMQ_DEALER);
  int linger = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
  assert_int_equal(zmq_connect(s, e->sock), 0);
  cli_hello(s, B2S_WIRE_HELLO_CONSUMER);
  return s;
}

/* nb chunks of about base bytes in stream (content seed + k), acknowledged
 * at level written; *want gets what each decompresses to. */
static void fill_stream(env *e, const char *stream, int nb, size_t base,
                        int seed, uint8_t **want) {
  void *s = cli_producer(e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, stream, "", &o), 0);
  prod p = prod_opened(s, &o, nb, base, seed);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  zmq_close(s);
  for (int k = 0; k < nb; k++) {
    size_t len = buf_len(seed + k, base);
    want[k] = malloc(len);
    buf_fill(want[k], len, seed + k);
  }
}

/* A decompressed CHUNK answering READ tag0 + i of chunk i % nb. */
static int check_read_reply(const rx *r, uint32_t tag0, int n, int nb,
                            int seed, size_t base, uint8_t *const *want) {
  int i = (int)(r->m.tag - tag0);
  assert_true(i >= 0 && i < n);
  int k = i % nb;
  size_t len = buf_len(seed + k, base);
  assert_int_equal(r->m.type, B2S_WIRE_CHUNK);
  assert_int_equal(r->m.chunk.index, (uint64_t)k);
  assert_int_equal(r->m.chunk.follow_id, 0);
  assert_int_equal(r->m.flags, B2S_WIRE_CHUNK_DECOMPRESSED);
  assert_int_equal(r->m.chunk.nbytes, (uint32_t)len);
  assert_int_equal(r->plen, len);
  assert_memory_equal(r->payload, want[k], len);
  return i;
}

static long rss_kib(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  long kib = -1;
  while (kib < 0 && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) != 1)
      kib = -1;
  fclose(f);
  assert_true(kib > 0);
  return kib;
}

static const char busy_config[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 1MiB\n"
    "memory_limit: 1MiB\n"       /* reads hold at most 256 KiB of results */
    "log_level: info\n"
    "streams:\n"
    "  w:\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n";

/* One session pipelines more READs than may be in flight plus waiting
 * (B2SD_READS_SESSION 8 + B2SD_READS_WAIT 1024, PROTOCOL.md 7) while it
 * does not read its replies, so they stay in the daemon: the read bytes
 * bound holds the readers, READs pile up, and the surplus is refused.
 * Every READ gets exactly one answer: a CHUNK with the right bytes, or
 * ERROR B2S_E_BUSY naming its tag and chunk, refusing nothing else.  Then
 * the session and the daemon go on: exactly in-flight plus waiting READs
 * are all served (the counts came back to zero), and it stops cleanly. */
static void test_read_busy(void **state) {
  (void)state;
  /* the surplus is far more than the socket buffers between us take in */
  enum { NB = 16, SEED = 30, ROOM = 8 + 1024, N = ROOM + 1000 };
  const size_t base = 64 << 10;
  env e;
  env_up(&e, busy_config);
  uint8_t *want[NB];
  fill_stream(&e, "w", NB, base, SEED, want);

  void *c = consumer_hwm(&e, 1);
  for (int i = 0; i < N; i++)
    send_read(c, 1000 + (uint32_t)i, "w", 0, (uint64_t)(i % NB), true);
  env_log_wait(&e, "READs waiting already; refusing more", 1);
  static bool seen[N];
  memset(seen, 0, sizeof seen);
  int nchunk = 0, nbusy = 0;
  for (int got = 0; got < N; got++) {
    rx r;
    cli_recv(c, &r);
    int i;
    if (r.m.type == B2S_WIRE_ERROR) {
      i = (int)(r.m.tag - 1000);
      assert_true(i >= 0 && i < N);
      assert_int_equal(r.m.error.code, B2S_E_BUSY);
      assert_int_equal(r.m.flags, 0);
      assert_int_equal(r.m.error.ref_type, B2S_WIRE_READ);
      assert_int_equal(r.m.error.ref_id, 0);
      assert_int_equal(r.m.error.ref_index, (uint64_t)(i % NB));
      nbusy++;
    } else {
      i = check_read_reply(&r, 1000, N, NB, SEED, base, want);
      nchunk++;
    }
    assert_false(seen[i]);              /* one answer per READ */
    seen[i] = true;
    rx_free(&r);
  }
  assert_true(nbusy >= 1);
  assert_true(nchunk >= ROOM);          /* nothing within the room refused */
  expect_silence(c, 100);

  /* the same session, again not reading: exactly the room, no refusal */
  int refusals = env_log_count(&e, "refusing more");
  for (int i = 0; i < ROOM; i++)
    send_read(c, 5000 + (uint32_t)i, "w", 0, (uint64_t)(i % NB), true);
  usleep(200000);                       /* let them pile up */
  memset(seen, 0, sizeof seen);
  for (int got = 0; got < ROOM; got++) {
    rx r;
    cli_recv(c, &r);
    int i = check_read_reply(&r, 5000, ROOM, NB, SEED, base, want);
    assert_false(seen[i]);
    seen[i] = true;
    rx_free(&r);
  }
  assert_int_equal(env_log_count(&e, "refusing more"), refusals);

  /* another session reads too: chunk NB - 1, tag 7 + NB - 1 */
  void *d = consumer(&e);
  send_read(d, 7 + NB - 1, "w", 0, NB - 1, true);
  rx r;
  cli_recv(d, &r);
  assert_int_equal(check_read_reply(&r, 7, NB, NB, SEED, base, want), NB - 1);
  rx_free(&r);
  zmq_close(d);
  zmq_close(c);
  for (int k = 0; k < NB; k++)
    free(want[k]);
  env_down(&e);
}

#define RB_CHUNK (2u << 20)      /* about the decompressed chunk size */
#define RB_LIMIT (16u << 20)     /* memory_limit; reads: a quarter */
#define RB_OVERHEAD (24u << 20)  /* what else the daemon may touch meanwhile:
                                  * decompression scratch of the readers,
                                  * ZeroMQ, allocator slack */

static const char bytes_config[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 4MiB\n"
    "memory_limit: 16MiB\n"
    "log_level: info\n"
    "streams:\n"
    "  big:\n"
    "    codec: lz4\n"
    "    queue_depth: 4\n"
    "    durability: {ack: write, group_count: 2, group_interval_ms: 5}\n";

/* The next message on a or b (*from says which). */
static void recv_either(void *a, void *b, rx *r, void **from) {
  zmq_pollitem_t it[2] = {{.socket = a, .events = ZMQ_POLLIN},
                          {.socket = b, .events = ZMQ_POLLIN}};
  assert_true(zmq_poll(it, 2, WAIT_MS) > 0);
  *from = (it[0].revents & ZMQ_POLLIN) ? a : b;
  cli_recv(*from, r);
}

/* A pushed decompressed chunk: the next one of follow fid, intact. */
static void check_pushed(const rx *r, uint32_t fid, uint64_t k, int seed,
                         size_t base, uint8_t *const *want) {
  assert_int_equal(r->m.type, B2S_WIRE_CHUNK);
  assert_int_equal(r->m.chunk.index, k);          /* in order, once */
  assert_int_equal(r->m.chunk.follow_id, fid);
  assert_int_equal(r->m.flags,
                   B2S_WIRE_CHUNK_PUSHED | B2S_WIRE_CHUNK_DECOMPRESSED);
  size_t len = buf_len(seed + (int)k, base);
  assert_int_equal(r->plen, len);
  assert_memory_equal(r->payload, want[k], len);
}

/* With a small memory_limit, a consumer pipelines many READs of large
 * decompressed chunks and does not read for a while: the daemon holds
 * about memory_limit / 4 of results (B2SD_READS_MEMORY_DIV), not every
 * reply (without the bound its resident size grows by N x 2 MiB).  The
 * READs wait, none fails, every reply is right.  Then a push follow and a
 * pipelined reader share a budget that takes one chunk at a time (reads
 * are admitted in issue order, so the follow's in-order delivery cannot
 * deadlock). */
static void test_read_bytes_bound(void **state) {
  (void)state;
  enum { NB = 12, SEED = 90, N = 96 };
  env e;
  env_up(&e, bytes_config);
  uint8_t *want[NB];
  fill_stream(&e, "big", NB, RB_CHUNK, SEED, want);

  void *c = consumer_hwm(&e, 1);
  long before = rss_kib(e.pid), peak = before;
  for (int i = 0; i < N; i++)
    send_read(c, 100 + (uint32_t)i, "big", 0, (uint64_t)(i % NB), true);
  for (int t = 0; t < 100; t++) {       /* 1 s of not reading */
    usleep(10000);
    long now = rss_kib(e.pid);
    if (now > peak)
      peak = now;
  }
  long bound = (long)((RB_LIMIT / 4 + RB_CHUNK + 1000 + RB_OVERHEAD) >> 10);
  print_message("daemon VmRSS %ld KiB before the READs, at most %ld KiB "
                "while they wait (bound: +%ld KiB)\n", before, peak, bound);
  assert_true(peak - before <= bound);
  bool seen[N] = {false};
  for (int got = 0; got < N; got++) {
    rx r;
    cli_recv(c, &r);
    int i = check_read_reply(&r, 100, N, NB, SEED, RB_CHUNK, want);
    assert_false(seen[i]);
    seen[i] = true;
    rx_free(&r);
  }
  expect_silence(c, 100);

  /* a push follow and a pipelined reader at once, both reading */
  void *f = consumer(&e);
  uint32_t fid = follow(f, "big", B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  for (int i = 0; i < 2 * NB; i++)
    send_read(c, 300 + (uint32_t)i, "big", 0, (uint64_t)(i % NB), true);
  memset(seen, 0, sizeof seen);
  for (int pushed = 0, got = 0; pushed < NB || got < 2 * NB;) {
    rx r;
    void *from;
    recv_either(f, c, &r, &from);
    if (from == f) {
      check_pushed(&r, fid, (uint64_t)pushed++, SEED, RB_CHUNK, want);
    } else {
      int i = check_read_reply(&r, 300, 2 * NB, NB, SEED, RB_CHUNK, want);
      assert_false(seen[i]);
      seen[i] = true;
      got++;
    }
    rx_free(&r);
  }
  expect_silence(f, 100);
  zmq_close(f);
  zmq_close(c);
  for (int k = 0; k < NB; k++)
    free(want[k]);
  env_down(&e);
}

static const char share_config[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 2MiB\n"
    "memory_limit: 64MiB\n"      /* reads: 16 MiB, 4 MiB per session */
    "log_level: info\n"
    "streams:\n"
    "  big:\n"
    "    codec: lz4\n"
    "    queue_depth: 4\n"
    "    durability: {ack: write, group_count: 2, group_interval_ms: 5}\n";

/* A consumer that pipelines READs and stops reading holds only its share
 * of the read bytes (B2SD_READS_SESSION_DIV): meanwhile another session's
 * pipelined READs and a push follow are served in full.  Then the stalled
 * one reads and gets every reply. */
static void test_read_stalled_share(void **state) {
  (void)state;
  enum { NB = 16, SEED = 150, N = 64 };
  const size_t base = 1 << 20;
  env e;
  env_up(&e, share_config);
  uint8_t *want[NB];
  fill_stream(&e, "big", NB, base, SEED, want);

  void *stalled = consumer_hwm(&e, 1);
  for (int i = 0; i < N; i++)
    send_read(stalled, 100 + (uint32_t)i, "big", 0, (uint64_t)(i % NB), true);
  usleep(200000);                       /* its replies pile up */

  void *d = consumer(&e), *f = consumer(&e);
  uint32_t fid = follow(f, "big", B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  for (int i = 0; i < N; i++)
    send_read(d, 500 + (uint32_t)i, "big", 0, (uint64_t)(i % NB), true);
  bool seen[N] = {false};
  for (int pushed = 0, got = 0; pushed < NB || got < N;) {
    rx r;
    void *from;
    recv_either(f, d, &r, &from);
    if (from == f) {
      check_pushed(&r, fid, (uint64_t)pushed++, SEED, base, want);
    } else {
      int i = check_read_reply(&r, 500, N, NB, SEED, base, want);
      assert_false(seen[i]);
      seen[i] = true;
      got++;
    }
    rx_free(&r);
  }

  memset(seen, 0, sizeof seen);
  for (int got = 0; got < N; got++) {
    rx r;
    cli_recv(stalled, &r);
    int i = check_read_reply(&r, 100, N, NB, SEED, base, want);
    assert_false(seen[i]);
    seen[i] = true;
    rx_free(&r);
  }
  expect_silence(stalled, 100);
  zmq_close(stalled);
  zmq_close(d);
  zmq_close(f);
  for (int k = 0; k < NB; k++)
    free(want[k]);
  env_down(&e);
}

static const char tail_config[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 2MiB\n"
    "memory_limit: 8MiB\n"       /* reads: 2 MiB, 512 KiB per session */
    "log_level: info\n"
    "streams:\n"
    "  big:\n"
    "    codec: lz4\n"
    "    queue_depth: 4\n"
    "    durability: {ack: write, group_count: 1, group_interval_ms: 5}\n";

/* Two push follows tail a stream while it grows, with a read budget of
 * about two chunks and a session share below one: each follow gets one
 * chunk at a time, its reads are sized out of order by the two reader
 * threads (their frame handles reopen at different times), yet admitted
 * in order, so every chunk arrives, in order, intact, and nothing waits
 * forever. */
static void test_push_follow_tight_budget(void **state) {
  (void)state;
  enum { NB = 64, SEED = 600 };
  const size_t base = 1 << 20;
  env e;
  env_up(&e, tail_config);
  void *f = consumer(&e), *g = consumer(&e);
  uint32_t fid = follow(f, "big", B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  uint32_t gid = follow(g, "big", B2S_WIRE_FOLLOW_PUSH_COMPRESSED);
  uint8_t *want[NB];
  fill_stream(&e, "big", NB, base, SEED, want);
  char path[400];
  frame_path(&e, "big", path, sizeof path);
  b2s_frame *fr;
  assert_int_equal(b2s_frame_open(path, &fr, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(fr), NB);
  for (int pf = 0, pg = 0; pf < NB || pg < NB;) {
    rx r;
    void *from;
    recv_either(f, g, &r, &from);
    if (from == f) {
      check_pushed(&r, fid, (uint64_t)pf++, SEED, base, want);
    } else {
      assert_int_equal(r.m.type, B2S_WIRE_CHUNK);
      assert_int_equal(r.m.chunk.index, (uint64_t)pg);
      assert_int_equal(r.m.chunk.follow_id, gid);
      assert_int_equal(r.m.flags, B2S_WIRE_CHUNK_PUSHED);
      int32_t cb = 0;
      assert_int_equal(b2s_frame_chunk_sizes(fr, pg, &cb, NULL), 0);
      uint8_t *stored = malloc((size_t)cb);
      assert_int_equal(b2s_frame_chunk_read(fr, pg, stored, (size_t)cb), cb);
      assert_int_equal(r.plen, (size_t)cb);
      assert_memory_equal(r.payload, stored, (size_t)cb);
      free(stored);
      pg++;
    }
    rx_free(&r);
  }
  expect_silence(f, 100);
  expect_silence(g, 100);
  b2s_frame_free(fr);
  zmq_close(f);
  zmq_close(g);
  for (int k = 0; k < NB; k++)
    free(want[k]);
  env_down(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_large_reads_do_not_stall),
    cmocka_unit_test(test_end_with_reads_in_flight),
    cmocka_unit_test(test_read_errors),
    cmocka_unit_test(test_failed_stream_ref_types),
    cmocka_unit_test(test_failed_stream_client_routing),
    cmocka_unit_test(test_b2nd_chunk_size_data),
    cmocka_unit_test(test_b2nd_chunk_size_shm),
    cmocka_unit_test(test_read_busy),
    cmocka_unit_test(test_read_bytes_bound),
    cmocka_unit_test(test_read_stalled_share),
    cmocka_unit_test(test_push_follow_tight_budget),
  };
  return harness_run(tests);
}

/* Conformance of the real b2streamd ($B2S_DAEMON) to docs/PROTOCOL.md
 * where a client writer would otherwise find the rules by trial: what
 * CLOSED counts, messages with a frame too many, every buffer answered at
 * shutdown, the per-session limits and their errors, the session timeout
 * that follows from HELLO.ping_ms, following by path, and the STATS
 * members the document lists.  A raw DEALER client (daemon_harness)
 * speaks the protocol byte for byte. */
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

#include <json-c/json.h>
#include <zmq.h>

#include "b2s_errors.h"
#include "b2s_frame.h"
#include "b2s_wire.h"
#include "daemon_harness.h"
#include "protocol_doc.h"

/* ---- helpers ------------------------------------------------------------- */

static void ping_pong(void *s, uint64_t nonce) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_PING);
  m.ping.nonce = nonce;
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_recv(s, &r);
  assert_int_equal(r.m.type, B2S_WIRE_PONG);
  assert_int_equal(r.m.pong.nonce, nonce);
}

/* The next message is an ERROR with code, flags and ref_type; its text
 * into text[cap] when text is not NULL. */
static void expect_error_about(void *s, int code, uint16_t flags,
                               uint8_t ref_type, char *text, size_t cap) {
  rx r;
  cli_recv(s, &r);
  if (r.m.type != B2S_WIRE_ERROR)
    fail_msg("%s instead of ERROR %d", b2s_wire_type_name(r.m.type), code);
  assert_int_equal(r.m.error.code, code);
  assert_int_equal(r.m.flags, flags);
  assert_int_equal(r.m.error.ref_type, ref_type);
  if (text)
    snprintf(text, cap, "%.*s", (int)r.m.error.message.len,
             r.m.error.message.len ? r.m.error.message.ptr : "");
}

static void send_data(void *s, uint32_t handle, uint64_t id, size_t len) {
  uint8_t b[4096];
  assert_true(len <= sizeof b);
  buf_fill(b, len, (int)id);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_DATA);
  m.data.buffer_id = id;
  m.data.handle = handle;
  cli_send(s, &m, b, len);
}

/* ---- CLOSED.upto ------------------------------------------------------------- */

/* A DATA sent right after a CLOSE, while the handle still has buffers
 * pending, is refused per buffer, and CLOSED.upto counts only the buffers
 * sent before the CLOSE (PROTOCOL.md 3.10, 4.2). */
static void test_closed_upto_excludes_data_after_close(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "f", "", &o), 0);   /* ack fsync: pending */
  uint32_t h = o.opened.handle;
  assert_true(o.opened.credits >= 4);
  for (uint64_t id = 0; id < 3; id++)
    send_data(s, h, id, buf_len((int)id, 1000));
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_CLOSE);
  m.tag = 4;
  m.close.handle = h;
  cli_send(s, &m, NULL, 0);
  send_data(s, h, 3, buf_len(3, 1000));
  bool refused = false, closed = false;
  while (!closed) {
    rx r;
    cli_recv(s, &r);
    if (r.m.type == B2S_WIRE_ERROR) {
      assert_false(refused);
      assert_int_equal(r.m.error.code, B2S_E_CLOSED);
      assert_int_equal(r.m.flags, 0);
      assert_int_equal(r.m.error.ref_type, B2S_WIRE_DATA);
      assert_int_equal(r.m.error.ref_id, h);
      assert_int_equal(r.m.error.ref_index, 3);
      refused = true;
    } else if (r.m.type == B2S_WIRE_CLOSED) {
      assert_int_equal(r.m.tag, 4);
      assert_int_equal(r.m.closed.handle, h);
      assert_int_equal(r.m.closed.upto, 3);
      assert_int_equal(r.m.closed.dropped, 0);
      closed = true;
    } else {
      assert_int_equal(r.m.type, B2S_WIRE_ACK);
      assert_int_equal(r.m.ack.handle, h);
    }
    rx_free(&r);
  }
  if (!refused)                  /* sent before CLOSED, answered after */
    expect_error_about(s, B2S_E_CLOSED, 0, B2S_WIRE_DATA, NULL, 0);
  ping_pong(s, 5);               /* nothing else about the handle */
  /* the three buffers sent before the CLOSE, nothing else */
  prod p = {.n = 3, .base = 1000, .seed = 0};
  char path[400];
  frame_path(&e, "f", path, sizeof path);
  zmq_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_frame(path, &p, 3);
  env_fini(&e);
}

/* ---- frames ----------------------------------------------------------------- */

/* Send a client message of type t (fields zero) with `extra` empty frames
 * after its header. */
static void send_with_frames(void *s, const b2s_wire_msg *m, int extra) {
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode(m, hdr, sizeof hdr);
  assert_true(n > 0);
  assert_int_equal(zmq_send(s, hdr, (size_t)n, extra ? ZMQ_SNDMORE : 0), n);
  for (int i = 0; i < extra; i++)
    assert_int_equal(zmq_send(s, "", 0, i + 1 < extra ? ZMQ_SNDMORE : 0), 0);
}

/* A message of one frame that arrives with an empty frame (or two) after
 * its header is refused with B2S_E_PROTO and not carried out (PROTOCOL.md
 * 1, 6.2: a payload where none belongs, whatever its size). */
static void test_extra_empty_frame_refused(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  /* a HELLO with a frame too many starts no session */
  void *s = cli_connect(&e);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.flags = B2S_WIRE_HELLO_PRODUCER;
  m.hello.name = b2s_wire_cstr("x");
  send_with_frames(s, &m, 1);
  expect_error_about(s, B2S_E_PROTO, 0, B2S_WIRE_HELLO, NULL, 0);
  b2s_wire_init(&m, B2S_WIRE_PING);
  cli_send(s, &m, NULL, 0);
  expect_error_about(s, B2S_E_PROTO, B2S_WIRE_ERROR_CLOSED_SESSION,
                     B2S_WIRE_PING, NULL, 0);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER);
  /* PING, STATS, OPEN, FOLLOW: refused, never answered otherwise */
  b2s_wire_init(&m, B2S_WIRE_PING);
  m.ping.nonce = 9;
  send_with_frames(s, &m, 1);
  expect_error_about(s, B2S_E_PROTO, 0, B2S_WIRE_PING, NULL, 0);
  send_with_frames(s, &m, 2);
  expect_error_about(s, B2S_E_PROTO, 0, B2S_WIRE_PING, NULL, 0);
  b2s_wire_init(&m, B2S_WIRE_STATS);
  send_with_frames(s, &m, 1);
  expect_error_about(s, B2S_E_PROTO, 0, B2S_WIRE_STATS, NULL, 0);
  b2s_wire_init(&m, B2S_WIRE_OPEN);
  m.open.stream = b2s_wire_cstr("w");
  send_with_frames(s, &m, 1);
  expect_error_about(s, B2S_E_PROTO, 0, B2S_WIRE_OPEN, NULL, 0);
  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.follow.target = b2s_wire_cstr("w");
  send_with_frames(s, &m, 1);
  expect_error_about(s, B2S_E_PROTO, 0, B2S_WIRE_FOLLOW, NULL, 0);
  ping_pong(s, 10);              /* no OPENED, FOLLOWING or PONG came */
  /* the handle opened now is the session's first: no OPEN was carried out */
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  assert_int_equal(o.opened.handle, 1);
  /* CLOSE with a frame too many leaves the handle open */
  b2s_wire_init(&m, B2S_WIRE_CLOSE);
  m.close.handle = 1;
  send_with_frames(s, &m, 1);
  expect_error_about(s, B2S_E_PROTO, 0, B2S_WIRE_CLOSE, NULL, 0);
  prod p = prod_opened(s, &o, 4, 700, 3);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  zmq_close(s);
  env_down(&e);
}

/* ---- shutdown ----------------------------------------------------------------- */

#define SIGTERM_N 3000
#define SIGTERM_FIRST 100

/* big: room for every buffer of the shutdown test at once; slow: buffers
 * that take a while to compress.  Both durable. */
static const char *proto_config =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 1MiB\n"
    "streams:\n"
    "  big:\n"
    "    queue_depth: 4096\n"
    "    durability: {ack: fsync, group_count: 64, group_interval_ms: 5}\n"
    "  slow:\n"
    "    codec: zstd\n"
    "    clevel: 9\n"
    "    durability: {ack: fsync, group_count: 8, group_interval_ms: 5}\n";

/* A producer has some buffers acknowledged, then sends many more while
 * the daemon is held (SIGSTOP), and the daemon gets SIGTERM before it
 * runs again: before the session is closed (ERROR B2S_E_CLOSED,
 * closed_session), every buffer sent got an ACK at the stream's level or
 * an ERROR of its own, and the frame holds exactly the buffers not
 * refused (PROTOCOL.md 4.1, 6.2). */
static void test_sigterm_answers_every_buffer(void **state) {
  (void)state;
  env e;
  env_up(&e, proto_config);
  void *s = zmq_socket(zctx, ZMQ_DEALER);
  int zero = 0;                  /* queue everything while the daemon halts */
  zmq_setsockopt(s, ZMQ_SNDHWM, &zero, sizeof zero);
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  assert_int_equal(zmq_connect(s, e.sock), 0);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "big", "", &o), 0);
  assert_true(o.opened.credits >= SIGTERM_N);
  uint32_t h = o.opened.handle;
  for (uint64_t id = 0; id < SIGTERM_FIRST; id++)
    send_data(s, h, id, 256 + id % 256);
  uint64_t acked = 0;
  while (acked < SIGTERM_FIRST) {
    rx r;
    cli_expect(s, B2S_WIRE_ACK, &r);
    if (r.m.ack.level == B2S_WIRE_LEVEL_DURABLE)
      acked = r.m.ack.upto;
  }
  kill(e.pid, SIGSTOP);
  for (uint64_t id = SIGTERM_FIRST; id < SIGTERM_N; id++)
    send_data(s, h, id, 256 + id % 256);
  kill(e.pid, SIGTERM);
  kill(e.pid, SIGCONT);
  static uint8_t refused[SIGTERM_N];
  memset(refused, 0, sizeof refused);
  for (;;) {
    rx r;
    cli_recv(s, &r);
    if (r.m.type == B2S_WIRE_ACK) {
      assert_int_equal(r.m.ack.handle, h);
      if (r.m.ack.level == B2S_WIRE_LEVEL_DURABLE)
        acked = r.m.ack.upto;
    } else {
      assert_int_equal(r.m.type, B2S_WIRE_ERROR);
      if (r.m.flags & B2S_WIRE_ERROR_CLOSED_SESSION) {
        assert_int_equal(r.m.error.code, B2S_E_CLOSED);
        assert_int_equal(r.m.error.ref_type, 0);
        rx_free(&r);
        break;
      }
      assert_int_equal(r.m.error.code, B2S_E_CLOSED);
      assert_int_equal(r.m.flags, 0);
      assert_int_equal(r.m.error.ref_type, B2S_WIRE_DATA);
      assert_true(r.m.error.ref_index < SIGTERM_N);
      refused[r.m.error.ref_index] = 1;
    }
    rx_free(&r);
  }
  uint64_t unanswered = 0, first = SIGTERM_N;
  for (uint64_t id = 0; id < SIGTERM_N; id++)
    if (!refused[id] && id >= acked && unanswered++ == 0)
      first = id;
  if (unanswered)
    fail_msg("%llu of %d buffers unanswered at shutdown (first %llu, acked "
             "below %llu)", (unsigned long long)unanswered, SIGTERM_N,
             (unsigned long long)first, (unsigned long long)acked);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  /* ACK.upto covers refused buffers too: the frame holds the others */
  char path[400];
  frame_path(&e, "big", path, sizeof path);
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  int64_t k = 0;
  uint8_t want[512], got[512];
  for (uint64_t id = 0; id < acked; id++) {
    if (refused[id])
      continue;
    size_t len = 256 + id % 256;
    buf_fill(want, len, (int)id);
    assert_int_equal(b2s_frame_chunk_decompress(f, k++, NULL, got, len),
                     (int)len);
    assert_memory_equal(got, want, len);
  }
  assert_int_equal(b2s_frame_nchunks(f), k);
  b2s_frame_free(f);
  zmq_close(s);
  env_fini(&e);
}

/* ---- per-session limits -------------------------------------------------------- */

#define LIMIT 1024               /* PROTOCOL.md 7.2: handles, follows */

/* Send n copies of m with tags 1..n, then read the n answers: every one
 * is `ok` but the last, an ERROR B2S_E_BUSY whose text is returned.  The
 * ids the answers give go to ids[] (when not NULL). */
static void fill_to_limit(void *s, b2s_wire_msg *m, int n, int ok,
                          uint32_t *ids, char *text, size_t cap) {
  for (int i = 1; i <= n; i++) {
    m->tag = (uint32_t)i;
    cli_send(s, m, NULL, 0);
  }
  for (int i = 1; i < n; i++) {
    rx r;
    cli_recv(s, &r);
    if (r.m.type != ok)
      fail_msg("answer %d: %s (code %d)", i, b2s_wire_type_name(r.m.type),
               r.m.type == B2S_WIRE_ERROR ? r.m.error.code : 0);
    assert_int_equal(r.m.tag, i);
    if (ids)
      ids[i - 1] = ok == B2S_WIRE_OPENED ? r.m.opened.handle
                                         : r.m.following.follow_id;
    rx_free(&r);
  }
  expect_error_about(s, B2S_E_BUSY, 0, m->type, text, cap);
}

/* 1024 handles and 1024 follows per session; the next OPEN or FOLLOW gets
 * B2S_E_BUSY with a message that says which limit; closing one makes room,
 * and ids are never reused.  FOLLOW by path is refused (B2S_E_AUTH). */
static void test_session_limits(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  void *s = cli_connect(&e);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER | B2S_WIRE_HELLO_CONSUMER);
  static uint32_t ids[LIMIT];
  char text[B2S_WIRE_TEXT_MAX + 1];
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_OPEN);
  m.open.stream = b2s_wire_cstr("w");
  fill_to_limit(s, &m, LIMIT + 1, B2S_WIRE_OPENED, ids, text, sizeof text);
  assert_non_null(strstr(text, "1024 handles"));
  for (int i = 0; i < LIMIT; i++)
    assert_int_equal(ids[i], (uint32_t)i + 1);
  b2s_wire_init(&m, B2S_WIRE_CLOSE);
  m.tag = 7;
  m.close.handle = 5;
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_CLOSED, &r);
  assert_int_equal(r.m.closed.handle, 5);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  assert_int_equal(o.opened.handle, LIMIT + 1);   /* 5 is not reused */

  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.follow.target = b2s_wire_cstr("w");
  fill_to_limit(s, &m, LIMIT + 1, B2S_WIRE_FOLLOWING, ids, text, sizeof text);
  assert_non_null(strstr(text, "1024 follows"));
  for (int i = 0; i < LIMIT; i++)
    assert_int_equal(ids[i], (uint32_t)i + 1);

  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.flags = B2S_WIRE_FOLLOW_BY_PATH;
  m.follow.target = b2s_wire_cstr("w.b2frame");
  cli_send(s, &m, NULL, 0);
  expect_error_about(s, B2S_E_AUTH, 0, B2S_WIRE_FOLLOW, text, sizeof text);
  assert_non_null(strstr(text, "by path"));
  ping_pong(s, 3);
  zmq_close(s);
  env_down(&e);
}

/* Incompressible bytes for buffer i. */
static void noise_fill(uint8_t *b, size_t len, int i) {
  uint64_t x = 0x9E3779B97F4A7C15u * (uint64_t)(i + 1);
  for (size_t k = 0; k < len; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b[k] = (uint8_t)x;
  }
}

/* At most 64 FLUSHes wait per handle; the next gets B2S_E_BUSY saying so
 * (PROTOCOL.md 7.2).  FLUSHes pipelined behind slow buffers (1 MiB of
 * noise at zstd level 9) wait while the workers compress them; the
 * others are answered once the buffers are durable. */
static void test_flush_limit(void **state) {
  (void)state;
  env e;
  env_up(&e, proto_config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "slow", "", &o), 0);
  uint32_t h = o.opened.handle;
  enum { NB = 8, NF = 1000, LEN = 1 << 20 };
  assert_true(o.opened.credits >= NB);
  uint8_t *b = malloc(LEN);
  b2s_wire_msg m;
  for (int i = 0; i < NB; i++) {
    noise_fill(b, LEN, i);
    b2s_wire_init(&m, B2S_WIRE_DATA);
    m.data.buffer_id = (uint64_t)i;
    m.data.handle = h;
    cli_send(s, &m, b, LEN);
  }
  free(b);
  b2s_wire_init(&m, B2S_WIRE_FLUSH);
  m.flush.handle = h;
  for (int i = 1; i <= NF; i++) {
    m.tag = (uint32_t)(100 + i);
    cli_send(s, &m, NULL, 0);
  }
  int flushed = 0, busy = 0;
  while (flushed + busy < NF) {
    rx r;
    cli_recv(s, &r);
    if (r.m.type == B2S_WIRE_FLUSHED) {
      assert_int_equal(r.m.flushed.upto, NB);
      flushed++;
    } else if (r.m.type == B2S_WIRE_ERROR) {
      assert_int_equal(r.m.error.code, B2S_E_BUSY);
      assert_int_equal(r.m.flags, 0);
      assert_int_equal(r.m.error.ref_type, B2S_WIRE_FLUSH);
      assert_int_equal(r.m.error.ref_id, h);
      char text[B2S_WIRE_TEXT_MAX + 1];
      snprintf(text, sizeof text, "%.*s", (int)r.m.error.message.len,
               r.m.error.message.ptr);
      assert_non_null(strstr(text, "64 FLUSHes"));
      busy++;
    } else {
      assert_int_equal(r.m.type, B2S_WIRE_ACK);
    }
    rx_free(&r);
  }
  assert_true(flushed >= 64);
  assert_true(busy > 0);
  zmq_close(s);
  env_down(&e);
}

/* ---- session timeout ------------------------------------------------------------ */

/* WELCOME.timeout_ms is 3 x HELLO.ping_ms within 3 s .. 1 h, and 0 (never)
 * for ping_ms 0 (PROTOCOL.md 4.6). */
static void test_timeout_follows_ping_ms(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  void *s = cli_connect(&e);
  static const uint32_t ping[] = {0, 1, 999, 1000, 1001, 2500, 1200000,
                                  1200001, UINT32_MAX};
  static const uint32_t want[] = {0, 3000, 3000, 3000, 3003, 7500, 3600000,
                                  3600000, 3600000};
  for (size_t i = 0; i < sizeof ping / sizeof ping[0]; i++) {
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_HELLO);
    m.tag = (uint32_t)i + 1;
    m.hello.ping_ms = ping[i];
    cli_send(s, &m, NULL, 0);
    rx r;
    cli_expect(s, B2S_WIRE_WELCOME, &r);
    assert_int_equal(r.m.tag, i + 1);
    if (r.m.welcome.timeout_ms != want[i])
      fail_msg("ping_ms %u: timeout_ms %u, expected %u", ping[i],
               r.m.welcome.timeout_ms, want[i]);
  }
  zmq_close(s);
  env_down(&e);
}

/* ---- STATS ------------------------------------------------------------------------ */

static void check_members(json_object *obj, const char *kind,
                          const pdoc_member *doc, int ndoc) {
  assert_true(json_object_is_type(obj, json_type_object));
  json_object_object_foreach(obj, key, val) {
    (void)val;
    if (!pdoc_member_find(doc, ndoc, kind, key))
      fail_msg("STATS member %s.%s is not in docs/PROTOCOL.md 4.5", kind,
               key);
  }
}

/* Every member of a real STATS_REPLY, of the daemon and of each stream,
 * is listed in the STATS table of PROTOCOL.md 4.5. */
static void test_stats_members_documented(void **state) {
  (void)state;
  char *doc = pdoc_read();
  static pdoc_member members[256];
  int n = pdoc_stats_members(doc, members, 256);
  assert_true(n > 10);
  env e;
  env_up(&e, base_config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  prod p = prod_opened(s, &o, 6, 900, 1);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_STATS);
  m.tag = 8;
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_STATS_REPLY, &r);
  json_object *root = json_tokener_parse((const char *)r.payload);
  assert_non_null(root);
  json_object *daemon = NULL, *streams = NULL;
  assert_true(json_object_object_get_ex(root, "daemon", &daemon));
  assert_true(json_object_object_get_ex(root, "streams", &streams));
  assert_int_equal(json_object_object_length(root), 2);
  check_members(daemon, "daemon", members, n);
  int nstreams = 0;
  json_object_object_foreach(streams, name, st) {
    (void)name;
    check_members(st, "stream", members, n);
    nstreams++;
  }
  assert_int_equal(nstreams, 7);    /* base_config's streams */
  json_object_put(root);
  rx_free(&r);
  free(doc);
  zmq_close(s);
  env_down(&e);
}

/* The STATS of one b2nd stream carry its array description (documented
 * members) and its series map in hex, for clients on other hosts. */
static void test_stats_b2nd_and_series(void **state) {
  (void)state;
  char *doc = pdoc_read();
  static pdoc_member members[256];
  int n = pdoc_stats_members(doc, members, 256);
  char cfg[2048];
  snprintf(cfg, sizeof cfg, "%s", base_config);
  char *t = strstr(cfg, "templates:\n");
  assert_non_null(t);
  snprintf(t, sizeof cfg - (size_t)(t - cfg),
           "  nd:\n    typesize: 2\n"
           "    b2nd: {shape: [0, 4, 6], chunkshape: [1, 4, 6], "
           "blockshape: [1, 2, 6], dtype: \"<u2\"}\n"
           "    series: {sample: x}\n"
           "templates:\n  tm:\n    codec: lz4\n");
  env e;
  env_up(&e, cfg);
  void *s = cli_producer(&e);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_STATS);
  m.tag = 9;
  m.stats.stream = (b2s_wire_str){"nd", 2};
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_STATS_REPLY, &r);
  json_object *root = json_tokener_parse((const char *)r.payload), *streams,
              *st, *nd, *v;
  assert_non_null(root);
  assert_true(json_object_object_get_ex(root, "streams", &streams));
  assert_true(json_object_object_get_ex(streams, "nd", &st));
  check_members(st, "stream", members, n);
  assert_true(json_object_object_get_ex(st, "b2nd", &nd));
  check_members(nd, "b2nd", members, n);
  assert_string_equal(json_object_to_json_string_ext(nd, JSON_C_TO_STRING_PLAIN),
                      "{\"shape\":[0,4,6],\"chunkshape\":[1,4,6],"
                      "\"blockshape\":[1,2,6],\"dtype\":\"<u2\"}");
  /* {"sample": "x"} as msgpack: 81 a6 "sample" a1 "x" */
  assert_true(json_object_object_get_ex(st, "series_msgpack", &v));
  assert_string_equal(json_object_get_string(v), "81a673616d706c65a178");
  json_object_put(root);
  rx_free(&r);
  free(doc);
  zmq_close(s);
  env_down(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_stats_b2nd_and_series),
    cmocka_unit_test(test_closed_upto_excludes_data_after_close),
    cmocka_unit_test(test_extra_empty_frame_refused),
    cmocka_unit_test(test_sigterm_answers_every_buffer),
    cmocka_unit_test(test_session_limits),
    cmocka_unit_test(test_flush_limit),
    cmocka_unit_test(test_timeout_follows_ping_ms),
    cmocka_unit_test(test_stats_members_documented),
  };
  return harness_run(tests);
}

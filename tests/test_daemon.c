/* Integration tests of b2streamd: the real daemon ($B2S_DAEMON) runs on a
 * temporary directory with its own configuration and ipc sockets; a small
 * raw DEALER client built on proto/b2s_wire.h talks to it byte for byte
 * (docs/PROTOCOL.md), and the frames are checked with the core reader;
 * the memory-bound test drives its producers through the client library.
 *
 * No timing assertions: every wait has a generous timeout and only guards
 * against a hang. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_chunk.h"
#include "b2s_errors.h"
#include "b2stream_client.h"
#include "b2s_frame.h"
#include "b2s_wire.h"
#include "daemon_harness.h"

/* ---- tests ------------------------------------------------------------------ */

static void test_check_config(void **state) {
  (void)state;
  env e;
  env_init(&e);
  char bad[400], out[400];
  snprintf(bad, sizeof bad, "%s/bad.yaml", e.dir);
  snprintf(out, sizeof out, "%s/check.out", e.dir);
  FILE *f = fopen(bad, "w");
  fputs("workers: 1\nstreams:\n  a:\n    clevel: 12\n", f);
  fclose(f);
  const char *files[] = {bad, e.config};
  for (int t = 0; t < 2; t++) {
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      execl(daemon_path, daemon_path, "--check-config", files[t], (char *)NULL);
      _exit(127);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), t == 0 ? 2 : 0);
    if (t == 0) {
      char text[2048] = {0};
      FILE *o = fopen(out, "r");
      size_t n = fread(text, 1, sizeof text - 1, o);
      fclose(o);
      assert_true(n > 0);
      assert_non_null(strstr(text, "bad.yaml:4:"));
      assert_non_null(strstr(text, "clevel"));
    }
  }
  env_fini(&e);
}

/* A producer on an ack-write stream, then SIGTERM: everything acked is in
 * the frame, in order, and the closed frame opens. */
static void test_produce_write_and_drain(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  assert_int_equal(o.opened.ack_level, B2S_WIRE_LEVEL_WRITTEN);
  assert_int_equal(o.opened.policy, B2S_WIRE_POLICY_BLOCK);
  assert_true(o.opened.credits >= 1);
  prod p = prod_opened(s, &o, 60, 3000, 100);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  assert_int_equal(p.ndropped, 0);
  /* above level received, ACKs without credits are not sent on their own */
  assert_int_equal(p.bare_acks, 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  check_frame(path, &p, p.n);      /* visible while the daemon runs */
  cli_close(&p);
  zmq_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_frame(path, &p, p.n);
  /* compacted: the file is not much larger than its chunks */
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_true(sb.st_size < b2s_frame_header_get(f)->cbytes + 16384);
  b2s_frame_free(f);
  env_fini(&e);
}

/* SIGTERM with buffers only acknowledged at receipt: the drain writes
 * them all before exiting. */
static void test_receipt_drain(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "r", "", &o), 0);
  assert_int_equal(o.opened.ack_level, B2S_WIRE_LEVEL_RECEIVED);
  prod p = prod_opened(s, &o, 40, 5000, 7);
  prod_run(&p, B2S_WIRE_LEVEL_RECEIVED);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  /* the daemon told the session it stopped */
  for (;;) {
    rx r;
    cli_recv(s, &r);
    if (r.m.type == B2S_WIRE_ERROR) {
      assert_int_equal(r.m.error.code, B2S_E_CLOSED);
      assert_true(r.m.flags & B2S_WIRE_ERROR_CLOSED_SESSION);
      break;
    }
    rx_free(&r);
  }
  zmq_close(s);
  char path[400];
  frame_path(&e, "r", path, sizeof path);
  check_frame(path, &p, p.n);
  env_fini(&e);
}

/* fsync stream: ACK at level durable; FLUSH on a write stream answers
 * FLUSHED with every buffer sent before it. */
static void test_fsync_and_flush(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "f", "", &o), 0);
  assert_int_equal(o.opened.ack_level, B2S_WIRE_LEVEL_DURABLE);
  prod p = prod_opened(s, &o, 20, 2000, 5);
  prod_run(&p, B2S_WIRE_LEVEL_DURABLE);
  char path[400];
  frame_path(&e, "f", path, sizeof path);
  check_frame(path, &p, p.n);

  b2s_wire_msg o2;
  assert_int_equal(cli_open(s, "w", "", &o2), 0);
  prod w = {.s = s, .handle = o2.opened.handle, .credits = o2.opened.credits,
            .n = 10, .base = 1000, .seed = 50};
  prod_run(&w, B2S_WIRE_LEVEL_RECEIVED);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_FLUSH);
  m.tag = 77;
  m.flush.handle = w.handle;
  cli_send(s, &m, NULL, 0);
  for (;;) {
    rx r;
    cli_recv(s, &r);
    if (r.m.type == B2S_WIRE_FLUSHED) {
      assert_int_equal(r.m.tag, 77);
      assert_int_equal(r.m.flushed.upto, 10);
      assert_int_equal(r.m.flushed.handle, w.handle);
      break;
    }
    prod_handle(&w, &r);
    rx_free(&r);
  }
  /* durable implies written: the frame holds them now */
  frame_path(&e, "w", path, sizeof path);
  check_frame(path, &w, w.n);
  zmq_close(s);
  env_down(&e);
}

/* One number of one stream's STATS_REPLY. */
static double stats_value(void *s, const char *stream, const char *name) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_STATS);
  m.tag = 11;
  m.stats.stream = b2s_wire_cstr(stream);
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_STATS_REPLY, &r);
  assert_int_equal(r.m.tag, 11);
  char key[80];
  snprintf(key, sizeof key, "\"%s\":{", stream);
  char *at = strstr((char *)r.payload, key);
  assert_non_null(at);
  snprintf(key, sizeof key, "\"%s\":", name);
  char *d = strstr(at, key);
  assert_non_null(d);
  double v = strtod(d + strlen(key), NULL);
  rx_free(&r);
  return v;
}

/* Several producers and consumers on one stream: every consumer sees every
 * chunk index exactly once, in order; READ returns the frame's bytes. */
static void test_producers_consumers(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  enum { NP = 3, NC = 3, NB = 25 };
  void *cons[NC];
  uint32_t fid[NC];
  uint64_t next[NC];
  for (int c = 0; c < NC; c++) {
    cons[c] = cli_connect(&e);
    cli_hello(cons[c], B2S_WIRE_HELLO_CONSUMER);
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_FOLLOW);
    m.tag = 5;
    m.follow.target = b2s_wire_cstr("w");
    cli_send(cons[c], &m, NULL, 0);
    rx r;
    cli_expect(cons[c], B2S_WIRE_FOLLOWING, &r);
    assert_int_equal(r.m.following.start, 0);
    assert_int_equal(r.m.following.committed, 0);
    fid[c] = r.m.following.follow_id;
    next[c] = 0;
  }
  void *ps[NP];
  prod p[NP];
  for (int i = 0; i < NP; i++) {
    ps[i] = cli_producer(&e);
    b2s_wire_msg o;
    assert_int_equal(cli_open(ps[i], "w", "", &o), 0);
    p[i] = prod_opened(ps[i], &o, NB, 1500, 1000 * (i + 1));
  }
  /* interleave the producers: each sends its buffers, then waits */
  for (int i = 0; i < NP; i++)
    prod_run(&p[i], B2S_WIRE_LEVEL_WRITTEN);
  const uint64_t total = NP * NB;
  for (int c = 0; c < NC; c++) {
    while (next[c] < total) {
      rx r;
      cli_recv(cons[c], &r);
      assert_int_equal(r.m.type, B2S_WIRE_NOTIFY);
      assert_int_equal(r.m.notify.follow_id, fid[c]);
      assert_int_equal(r.m.notify.first, next[c]);   /* in order, no gap */
      assert_true(r.m.notify.count >= 1);
      assert_true(r.m.notify.first + r.m.notify.count <= r.m.notify.committed);
      next[c] += r.m.notify.count;
      assert_true(next[c] <= total);                 /* exactly once */
    }
  }
  /* the frame holds each producer's buffers in its order */
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), (int64_t)total);
  int seen[NP] = {0};
  uint8_t *got = malloc(3000), *want = malloc(3000);
  for (int64_t k = 0; k < (int64_t)total; k++) {
    int32_t nb = 0;
    b2s_frame_chunk_sizes(f, k, NULL, &nb);
    assert_int_equal(b2s_frame_chunk_decompress(f, k, NULL, got, 3000), nb);
    int match = -1;
    for (int i = 0; i < NP && match < 0; i++) {
      if (seen[i] == NB)
        continue;
      size_t len = buf_len(p[i].seed + seen[i], p[i].base);
      buf_fill(want, len, p[i].seed + seen[i]);
      if ((size_t)nb == len && memcmp(got, want, len) == 0)
        match = i;
    }
    assert_true(match >= 0);
    seen[match]++;
  }
  /* READ by follow, decompressed, and by name, as stored */
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_READ);
  m.tag = 6;
  m.flags = B2S_WIRE_READ_DECOMPRESS;
  m.read.chunk = 3;
  m.read.follow_id = fid[0];
  cli_send(cons[0], &m, NULL, 0);
  rx r;
  cli_expect(cons[0], B2S_WIRE_CHUNK, &r);
  assert_int_equal(r.m.tag, 6);
  assert_int_equal(r.m.chunk.index, 3);
  assert_int_equal(b2s_frame_chunk_decompress(f, 3, NULL, got, 3000),
                   (int)r.plen);
  assert_memory_equal(got, r.payload, r.plen);
  rx_free(&r);
  b2s_wire_init(&m, B2S_WIRE_READ);
  m.tag = 8;
  m.read.chunk = 5;
  m.read.stream = b2s_wire_cstr("w");
  cli_send(cons[1], &m, NULL, 0);
  cli_expect(cons[1], B2S_WIRE_CHUNK, &r);
  int32_t cb = 0;
  b2s_frame_chunk_sizes(f, 5, &cb, NULL);
  assert_int_equal((int)r.plen, cb);
  uint8_t *stored = malloc((size_t)cb);
  b2s_frame_chunk_read(f, 5, stored, (size_t)cb);
  assert_memory_equal(stored, r.payload, r.plen);
  free(stored);
  rx_free(&r);
  /* READ beyond the committed chunks */
  m.read.chunk = total;
  cli_send(cons[1], &m, NULL, 0);
  cli_expect(cons[1], B2S_WIRE_ERROR, &r);
  assert_int_equal(r.m.error.code, B2S_E_NCHUNK);
  /* the daemon timed its NOTIFYs from the commits they announce: at most
   * once per commit, and not at all had the commit stamp been lost */
  double commits = stats_value(cons[0], "w", "commits");
  double notifies = stats_value(cons[0], "w", "notifies");
  double p50 = stats_value(cons[0], "w", "notify_latency_p50_us");
  double p99 = stats_value(cons[0], "w", "notify_latency_p99_us");
  double mx = stats_value(cons[0], "w", "notify_latency_max_us");
  assert_true(notifies >= 1 && notifies <= commits);
  assert_true(p50 > 0 && p50 <= p99 && p99 <= mx);
  /* UNFOLLOW tells where to resume */
  b2s_wire_init(&m, B2S_WIRE_UNFOLLOW);
  m.tag = 9;
  m.unfollow.follow_id = fid[2];
  cli_send(cons[2], &m, NULL, 0);
  cli_expect(cons[2], B2S_WIRE_UNFOLLOWED, &r);
  assert_int_equal(r.m.unfollowed.next, total);
  free(got);
  free(want);
  b2s_frame_free(f);
  for (int i = 0; i < NP; i++)
    zmq_close(ps[i]);
  for (int c = 0; c < NC; c++)
    zmq_close(cons[c]);
  env_down(&e);
}

static long stats_drops(void *s, const char *stream) {
  return (long)stats_value(s, stream, "drops");
}

static void run_drop_policy(const char *stream, int reason) {
  env e;
  env_up(&e, base_config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, stream, "", &o), 0);
  assert_int_equal(o.opened.policy, reason);
  /* large buffers at zstd level 9 and a queue of 1: the producer outruns
   * the workers, so drops happen */
  prod p = prod_opened(s, &o, 60, 200000, 3);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  assert_true(p.ndropped > 0);
  assert_int_equal(p.drop_reason, reason);
  assert_int_equal(p.ack_dropped, p.ndropped);
  assert_int_equal(stats_drops(s, stream), (long)p.ndropped);
  char path[400];
  frame_path(&e, stream, path, sizeof path);
  check_frame(path, &p, (int64_t)count_kept(&p));
  zmq_close(s);
  env_down(&e);
}

static void test_drop_newest(void **state) {
  (void)state;
  run_drop_policy("dn", B2S_WIRE_POLICY_DROP_NEWEST);
}

static void test_drop_oldest(void **state) {
  (void)state;
  run_drop_policy("do", B2S_WIRE_POLICY_DROP_OLDEST);
}

/* block: credits come back as buffers are taken; nothing is dropped; the
 * producer never has more than OPENED.credits outstanding, and by CLOSED
 * every one of them is back.  Stream bq (queue 12) returns credits in
 * batches of 3; 100 buffers end off a batch boundary. */
static void run_block(const char *stream, uint32_t depth, int n) {
  env e;
  env_up(&e, base_config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, stream, "", &o), 0);
  assert_int_equal(o.opened.credits, depth);
  prod p = prod_opened(s, &o, n, 100000, 9);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  assert_int_equal(p.ndropped, 0);
  assert_int_equal(p.bare_acks, 0);
  assert_true(p.credits <= depth);
  cli_close(&p);
  assert_int_equal(p.credits, depth);
  assert_int_equal(stats_drops(s, stream), 0);
  char path[400];
  frame_path(&e, stream, path, sizeof path);
  check_frame(path, &p, p.n);
  zmq_close(s);
  env_down(&e);
}

static void test_block(void **state) {
  (void)state;
  run_block("bl", 2, 40);
  run_block("bq", 12, 100);
}

/* The next ERROR (ACKs before it are skipped). */
static void expect_error(void *s, int code, uint16_t flags) {
  rx r;
  do
    cli_recv(s, &r);
  while (r.m.type == B2S_WIRE_ACK);
  assert_int_equal(r.m.type, B2S_WIRE_ERROR);
  assert_int_equal(r.m.error.code, code);
  assert_int_equal(r.m.flags, flags);
}

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

/* Malformed, oversized and hostile requests get ERROR; the daemon keeps
 * serving this and other clients. */
static void test_bad_input(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  void *s = cli_connect(&e);
  /* before HELLO */
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_PING);
  cli_send(s, &m, NULL, 0);
  expect_error(s, B2S_E_PROTO, B2S_WIRE_ERROR_CLOSED_SESSION);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER);
  /* garbage header */
  assert_int_equal(zmq_send(s, "hello world, not a header", 25, 0), 25);
  expect_error(s, B2S_E_PROTO, 0);
  /* another protocol version */
  uint8_t hdr[64];
  b2s_wire_init(&m, B2S_WIRE_PING);
  int n = b2s_wire_encode(&m, hdr, sizeof hdr);
  hdr[4] = 2;                   /* one we speak, not this session's */
  assert_int_equal(zmq_send(s, hdr, (size_t)n, 0), n);
  expect_error(s, B2S_E_PROTO, 0);
  hdr[4] = 3;
  assert_int_equal(zmq_send(s, hdr, (size_t)n, 0), n);
  rx r;
  cli_recv(s, &r);
  assert_int_equal(r.m.type, B2S_WIRE_ERROR);
  assert_int_equal(r.m.error.code, B2S_E_PROTO_VERSION);
  assert_int_equal(r.m.error.ref_index, 1 + 256 * 2);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER);
  /* a daemon-side type */
  b2s_wire_init(&m, B2S_WIRE_PONG);
  n = b2s_wire_encode(&m, hdr, sizeof hdr);
  assert_int_equal(zmq_send(s, hdr, (size_t)n, 0), n);
  expect_error(s, B2S_E_PROTO, 0);
  /* payload where none belongs */
  b2s_wire_init(&m, B2S_WIRE_PING);
  cli_send(s, &m, "x", 1);
  expect_error(s, B2S_E_PROTO, 0);
  ping_pong(s, 42);
  /* hostile and unknown names */
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "../x", "", &o), B2S_E_STREAM_NAME);
  assert_int_equal(cli_open(s, "a/../../x", "tm", &o), B2S_E_STREAM_NAME);
  assert_int_equal(cli_open(s, ".hidden", "tm", &o), B2S_E_STREAM_NAME);
  assert_int_equal(cli_open(s, "nope", "", &o), B2S_E_NOSTREAM);
  assert_int_equal(cli_open(s, "nope", "notmpl", &o), B2S_E_NOTEMPLATE);
  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.follow.target = b2s_wire_cstr("../w");
  cli_send(s, &m, NULL, 0);
  expect_error(s, B2S_E_STREAM_NAME, 0);
  /* oversized buffer: rejected, credit back, handle stays open */
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  uint32_t h = o.opened.handle;
  size_t big = o.opened.max_buffer + 1u;
  uint8_t *b = calloc(1, big);
  b2s_wire_init(&m, B2S_WIRE_DATA);
  m.data.handle = h;
  m.data.buffer_id = 0;
  cli_send(s, &m, b, big);
  cli_recv(s, &r);
  assert_int_equal(r.m.type, B2S_WIRE_ERROR);
  assert_int_equal(r.m.error.code, B2S_E_OVERSIZE);
  assert_int_equal(r.m.error.ref_index, 0);
  assert_int_equal(r.m.error.ref_id, h);
  assert_int_equal(r.m.flags, 0);
  /* DATA without payload: per buffer */
  m.data.buffer_id = 1;
  cli_send(s, &m, NULL, 0);
  expect_error(s, B2S_E_PROTO, 0);
  /* a good one still goes in (id 2), then a wrong id closes the handle */
  buf_fill(b, 1000, 1);
  m.data.buffer_id = 2;
  cli_send(s, &m, b, 1000);
  uint64_t upto = 0;
  while (upto < 3) {
    cli_recv(s, &r);
    assert_int_equal(r.m.type, B2S_WIRE_ACK);
    if (r.m.ack.level == B2S_WIRE_LEVEL_WRITTEN)
      upto = r.m.ack.upto;
  }
  m.data.buffer_id = 7;
  cli_send(s, &m, b, 1000);
  expect_error(s, B2S_E_PROTO, B2S_WIRE_ERROR_CLOSED_REF);
  m.data.buffer_id = 3;
  cli_send(s, &m, b, 1000);
  expect_error(s, B2S_E_CLOSED, 0);
  free(b);
  /* a template creates a stream at run time */
  assert_int_equal(cli_open(s, "dyn", "tm", &o), 0);
  prod p = prod_opened(s, &o, 5, 800, 2);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  char path[400];
  frame_path(&e, "dyn", path, sizeof path);
  check_frame(path, &p, p.n);
  /* another client is served all along */
  void *s2 = cli_connect(&e);
  cli_hello(s2, 0);
  ping_pong(s2, 7);
  ping_pong(s, 8);
  zmq_close(s2);
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

/* Send buffers of NOISE bytes on handle until the daemon ends it with an
 * ERROR; returns its code and the count acknowledged at level written. */
static int fill_until_error(void *z, const b2s_wire_msg *opened, size_t len,
                            int max, uint64_t *written) {
  uint8_t *b = malloc(len);
  uint32_t handle = opened->opened.handle;
  prod p = {.s = z, .handle = handle, .credits = opened->opened.credits,
            .n = max};
  int code = 0;
  for (int i = 0; i < max && !code; i++) {
    while (p.credits == 0 && !code) {
      rx r;
      cli_recv(z, &r);
      if (r.m.type == B2S_WIRE_ERROR) {
        assert_true(r.m.flags & B2S_WIRE_ERROR_CLOSED_REF);
        assert_int_equal(r.m.error.ref_id, handle);
        code = r.m.error.code;
      } else {
        prod_handle(&p, &r);
      }
      rx_free(&r);
    }
    if (code)
      break;
    noise_fill(b, len, i);
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_DATA);
    m.data.buffer_id = (uint64_t)i;
    m.data.handle = handle;
    cli_send(z, &m, b, len);
    p.credits--;
    /* the first 4 committed while there is room, before the disk fills */
    while (i == 3 && p.acked[B2S_WIRE_LEVEL_WRITTEN] < 4) {
      rx r;
      cli_recv(z, &r);
      prod_handle(&p, &r);
      rx_free(&r);
    }
  }
  while (!code) {              /* everything sent: wait for the failure */
    rx r;
    cli_recv(z, &r);
    if (r.m.type == B2S_WIRE_ERROR)
      code = r.m.error.code;
    else
      prod_handle(&p, &r);
    rx_free(&r);
  }
  /* answers to what was sent after the failure (ERRORs about the closed
   * handle) come before the PONG: skip them */
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_PING);
  m.tag = 77;
  cli_send(z, &m, NULL, 0);
  for (;;) {
    rx r;
    cli_recv(z, &r);
    bool pong = r.m.type == B2S_WIRE_PONG && r.m.tag == 77;
    if (r.m.type == B2S_WIRE_ACK)
      prod_handle(&p, &r);
    rx_free(&r);
    if (pong)
      break;
  }
  free(b);
  *written = p.acked[B2S_WIRE_LEVEL_WRITTEN];
  return code;
}

/* The first `n` chunks of the frame are the noise buffers 0..n-1. */
static void check_noise(const char *path, size_t len, int64_t n) {
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  assert_true(b2s_frame_nchunks(f) >= n);
  uint8_t *want = malloc(len), *got = malloc(len);
  for (int64_t i = 0; i < n; i++) {
    noise_fill(want, len, (int)i);
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, got, len), (int)len);
    assert_memory_equal(got, want, len);
  }
  free(want);
  free(got);
  b2s_frame_free(f);
}

/* A full disk (a file-size limit): the stream fails with EFBIG and says so
 * to its producer, every chunk acknowledged before is intact, the daemon
 * keeps serving other streams and stops cleanly, and after a restart with
 * room the frame opens and takes more data. */
static void test_full_disk(void **state) {
  (void)state;
  env e;
  env_init(&e);
  e.fsize_limit = 3000000;     /* above the frame's 1 MiB data reserve */
  env_start(&e);
  void *z = cli_connect(&e);
  cli_hello(z, 0);
  b2s_wire_msg o;
  assert_int_equal(cli_open(z, "w", "", &o), 0);
  uint64_t written = 0;
  const size_t len = 65536;
  assert_int_equal(fill_until_error(z, &o, len, 100, &written),
                   -EFBIG);
  assert_true(written >= 4 && written < 46);
  /* the stream stays failed; the others work (sparse: small files) */
  assert_int_equal(cli_open(z, "w", "", &o), -EFBIG);
  assert_int_equal(cli_open(z, "r", "", &o), 0);
  prod p = prod_opened(z, &o, 20, 500, 3);
  prod_run(&p, B2S_WIRE_LEVEL_RECEIVED);
  cli_close(&p);
  zmq_close(z);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  check_noise(path, len, (int64_t)written);
  snprintf(path, sizeof path, "%s/data/r.b2frame", e.dir);
  check_frame(path, &p, 20);

  e.fsize_limit = 0;           /* room again */
  env_start(&e);
  z = cli_connect(&e);
  cli_hello(z, 0);
  assert_int_equal(cli_open(z, "w", "", &o), 0);
  frame_path(&e, "w", path, sizeof path);
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  int64_t before = b2s_frame_nchunks(f);
  b2s_frame_free(f);
  prod q = prod_opened(z, &o, 5, 700, 50);
  prod_run(&q, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&q);
  zmq_close(z);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_noise(path, len, (int64_t)written);
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  assert_int_equal(b2s_frame_nchunks(f), before + 5);
  b2s_frame_free(f);
  env_fini(&e);
}

/* SIGKILL mid-stream, then restart: every chunk acknowledged as durable is
 * present and intact, and the frames open and take more data. */
static void test_sigkill_restart(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "f", "", &o), 0);
  prod p = prod_opened(s, &o, 30, 4000, 11);
  prod_run(&p, B2S_WIRE_LEVEL_DURABLE);
  /* more buffers in flight, then the kill */
  uint8_t *b = malloc(6000);
  for (int i = 0; i < (int)o.opened.credits && i < 20; i++) {
    size_t len = buf_len(p.seed + 30 + i, p.base);
    buf_fill(b, len, p.seed + 30 + i);
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_DATA);
    m.data.buffer_id = (uint64_t)(30 + i);
    m.data.handle = p.handle;
    cli_send(s, &m, b, len);
  }
  free(b);
  usleep(20000);
  assert_int_equal(env_stop(&e, SIGKILL), -1);
  zmq_close(s);
  uint64_t acked = p.acked[B2S_WIRE_LEVEL_DURABLE];
  /* restart: recovery runs before serving */
  env_start(&e);
  s = cli_connect(&e);
  cli_hello(s, B2S_WIRE_HELLO_CONSUMER);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.tag = 5;
  m.follow.target = b2s_wire_cstr("f");
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_FOLLOWING, &r);
  assert_true(r.m.following.committed >= acked);
  prod all = {.n = 50, .base = 4000, .seed = 11};
  char path[400];
  frame_path(&e, "f", path, sizeof path);
  check_frame(path, &all, (int64_t)acked);
  zmq_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_frame(path, &all, (int64_t)acked);
  env_fini(&e);
}

/* ---- the writer behind, under memory pressure -------------------------- */

/* Producers through the client library, each on its own session and
 * thread, as fast as credits let, on a `block` stream whose writer fsyncs
 * every chunk (ack fsync, group_count 1): the writer runs far behind and
 * memory_limit is what holds the producers back. */
#define MP_PRODUCERS 4
#define MP_BUFFERS 250           /* per producer */
#define MP_BASE 16384            /* buffer sizes: MP_BASE + 0..999 */
#define MP_LIMIT (1 << 20)       /* memory_limit */
#define MP_QUEUE 2               /* queue_depth: credits per handle */

static const char mp_config[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 64KiB\n"
    "memory_limit: 1MiB\n"
    "log_level: info\n"
    "streams:\n"
    "  slow:\n"
    "    codec: lz4\n"
    "    queue_depth: 2\n"
    "    backpressure: block\n"
    "    durability: {ack: fsync, group_count: 1, group_interval_ms: 1}\n";

/* Buffer i of producer p: its length, and bytes naming (p, i) first. */
static size_t mp_len(int p, int i) {
  return MP_BASE + (size_t)((p * 131 + i * 7919) % 1000);
}

static void mp_fill(uint8_t *b, size_t len, int p, int i) {
  uint32_t x = (uint32_t)(p * 1000003 + i) * 2654435761u + 7;
  for (size_t k = 0; k < len; k++) {
    if (k % 16 == 0)
      x = x * 1103515245u + 12345u;
    b[k] = (uint8_t)((x >> 16) + (k % 16 < 8 ? 0 : k));
  }
  memcpy(b, &p, sizeof p);
  memcpy(b + sizeof p, &i, sizeof i);
}

typedef struct mp_producer {
  const char *endpoint;
  int id;
  int rc;                      /* first failure, or 0 */
  int failed_at;               /* the call that failed */
  int waits;                   /* sends that found no credit */
  pthread_t thread;
} mp_producer;

static atomic_int mp_running;

static void *mp_main(void *arg) {
  mp_producer *m = arg;
  b2sc_session *s = NULL;
  b2sc_producer *p = NULL;
  uint8_t *b = malloc(MP_BASE + 1000);
  char name[32];
  snprintf(name, sizeof name, "mp%d", m->id);
  m->rc = b2sc_connect(m->endpoint, name, &s);
  m->failed_at = -1;
  if (m->rc == 0)
    m->rc = b2sc_set_timeout(s, WAIT_MS);
  if (m->rc == 0)
    m->rc = b2sc_producer_open(s, "slow", NULL, &p);
  for (int i = 0; i < MP_BUFFERS && m->rc == 0; i++) {
    b2sc_producer_stats st;
    m->rc = b2sc_producer_stats_get(p, &st);
    if (m->rc == 0 && st.credits == 0)
      m->waits++;              /* this send waits for credit */
    size_t len = mp_len(m->id, i);
    mp_fill(b, len, m->id, i);
    if (m->rc == 0)
      m->rc = b2sc_send(p, b, len, WAIT_MS);
    if (m->rc < 0)
      m->failed_at = i;
  }
  if (p) {                     /* every buffer acknowledged (durable) */
    int rc = b2sc_producer_close(p);
    if (m->rc == 0)
      m->rc = rc;
  }
  b2sc_close(s);
  free(b);
  /* release: pairs with the acquire load of the sampling loop */
  atomic_fetch_sub_explicit(&mp_running, 1, memory_order_release);
  return NULL;
}

/* A number member of the JSON text after `after` (e.g. a stream's key). */
static long long json_num(const char *json, const char *after,
                          const char *key) {
  const char *at = after ? strstr(json, after) : json;
  assert_non_null(at);
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *v = strstr(at, k);
  assert_non_null(v);
  return strtoll(v + strlen(k), NULL, 10);
}

/* Several producers outrun a writer that fsyncs every chunk.  While they
 * run, the daemon's statistics are sampled: the bytes it holds in flight
 * (buffers not yet compressed, chunks not yet written) reach the memory
 * limit (so the writer was behind and memory was the bound) and never
 * exceed it by more than what the credits already out allow: each handle
 * may send queue_depth buffers after the last credit came back, and each
 * holds its buffer and its chunk for a moment (2 x (buffer + 32)).  The
 * producers found themselves without credit, nothing was dropped, and the
 * frame holds every buffer once, each producer's in order, byte for
 * byte.  Skipped (after all the checks) where fsync is free and the
 * writer never falls behind. */
static void test_writer_behind_memory_bound(void **state) {
  (void)state;
  env e;
  env_up(&e, mp_config);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "sampler", &s), 0);
  mp_producer mp[MP_PRODUCERS];
  /* relaxed: pthread_create orders it before the producers' fetch_sub */
  atomic_store_explicit(&mp_running, MP_PRODUCERS, memory_order_relaxed);
  for (int p = 0; p < MP_PRODUCERS; p++) {
    mp[p] = (mp_producer){.endpoint = e.sock, .id = p};
    assert_int_equal(pthread_create(&mp[p].thread, NULL, mp_main, &mp[p]), 0);
  }
  long long peak = 0, limit = 0;
  int samples = 0, pressed = 0;
  /* acquire: pairs with the producers' release when they finish */
  while (atomic_load_explicit(&mp_running, memory_order_acquire) > 0) {
    char *json = NULL;
    assert_int_equal(b2sc_stats(s, NULL, &json, NULL), 0);
    long long in = json_num(json, "\"daemon\":", "inflight_bytes");
    limit = json_num(json, "\"daemon\":", "memory_limit");
    assert_int_equal(json_num(json, "\"slow\":", "drops"), 0);
    free(json);
    if (in > peak)
      peak = in;
    pressed += in >= limit * 3 / 4;
    samples++;
    usleep(2000);
  }
  for (int p = 0; p < MP_PRODUCERS; p++)
    assert_int_equal(pthread_join(mp[p].thread, NULL), 0);
  long long slack = (long long)MP_PRODUCERS * MP_QUEUE * 2 *
                    (MP_BASE + 1000 + B2S_MAX_OVERHEAD);
  int waits = 0;
  for (int p = 0; p < MP_PRODUCERS; p++) {
    if (mp[p].rc != 0)
      fail_msg("producer %d: %s at buffer %d", p, b2s_strerror(mp[p].rc),
               mp[p].failed_at);
    waits += mp[p].waits;
  }
  print_message("%d samples, %d at >= 3/4 of the limit; in flight at most "
                "%lld bytes (limit %lld + slack %lld); %d sends waited\n",
                samples, pressed, peak, limit, slack, waits);
  assert_int_equal(limit, MP_LIMIT);
  assert_true(peak <= limit + slack);     /* the bound held */
  assert_true(waits > 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);

  char path[400];
  frame_path(&e, "slow", path, sizeof path);
  b2s_frame *f = NULL;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), MP_PRODUCERS * MP_BUFFERS);
  int next[MP_PRODUCERS] = {0};
  uint8_t *got = malloc(MP_BASE + 1000), *want = malloc(MP_BASE + 1000);
  for (int64_t k = 0; k < MP_PRODUCERS * MP_BUFFERS; k++) {
    int n = b2s_frame_chunk_decompress(f, k, NULL, got, MP_BASE + 1000);
    assert_true(n >= MP_BASE);
    int p, i;
    memcpy(&p, got, sizeof p);
    memcpy(&i, got + sizeof p, sizeof i);
    assert_true(p >= 0 && p < MP_PRODUCERS);
    assert_int_equal(i, next[p]);         /* in order, none lost or twice */
    next[p]++;
    assert_int_equal((size_t)n, mp_len(p, i));
    mp_fill(want, (size_t)n, p, i);
    assert_memory_equal(got, want, (size_t)n);
  }
  for (int p = 0; p < MP_PRODUCERS; p++)
    assert_int_equal(next[p], MP_BUFFERS);
  free(got);
  free(want);
  b2s_frame_free(f);
  env_fini(&e);
  /* Where fsync costs nothing (tmpfs) the writer keeps up, memory never
   * fills and the bound above was not put to the test: say so. */
  if (pressed == 0) {
    print_message("the writer never fell behind: fsync is free on this "
                  "file system, the memory bound was not exercised\n");
    skip();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_check_config),
    cmocka_unit_test(test_produce_write_and_drain),
    cmocka_unit_test(test_receipt_drain),
    cmocka_unit_test(test_fsync_and_flush),
    cmocka_unit_test(test_producers_consumers),
    cmocka_unit_test(test_drop_newest),
    cmocka_unit_test(test_drop_oldest),
    cmocka_unit_test(test_block),
    cmocka_unit_test(test_bad_input),
    cmocka_unit_test(test_sigkill_restart),
    cmocka_unit_test(test_full_disk),
    cmocka_unit_test(test_writer_behind_memory_bound),
  };
  return harness_run(tests);
}

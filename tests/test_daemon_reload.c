/* Integration tests of b2streamd: configuration reload on SIGHUP, and
 * follows that push chunks (PROTOCOL.md 3.16).  The real daemon
 * ($B2S_DAEMON) runs on a temporary directory; a raw client speaks the
 * protocol (daemon_harness) and the frames are checked byte for byte.
 * The tests learn that a reload has happened from the daemon's log. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_chunk.h"
#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "b2s_frame.h"
#include "b2s_wire.h"

#define BASE 3000

static const char config_v1[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "log_level: debug\n"
    "streams:\n"
    "  w:\n"
    "    typesize: 4\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  c:\n"
    "    codec: zstd\n"
    "    clevel: 5\n"
    "    queue_depth: 16\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n";

/* v1 with stream c on lz4 and a new stream nw. */
static const char config_v2[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "log_level: debug\n"
    "streams:\n"
    "  w:\n"
    "    typesize: 4\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  c:\n"
    "    codec: lz4\n"
    "    clevel: 1\n"
    "    queue_depth: 16\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  nw:\n"
    "    codec: zlib\n"
    "    format: sparse\n"
    "    durability: {ack: write, group_count: 2, group_interval_ms: 5}\n";

/* Out of range at line 7. */
static const char config_broken[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "streams:\n"
    "  c:\n"
    "    clevel: 12\n";

/* A template for streams made at run time; then a configured stream whose
 * frame is the one of such a stream. */
static const char config_tm[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "log_level: debug\n"
    "templates:\n"
    "  tm:\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n";

static const char config_tm_clash[] =
    ENV_YAML_HEAD
    "workers: 2\n"
    "log_level: debug\n"
    "templates:\n"
    "  tm:\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "streams:\n"
    "  x:\n"
    "    path: dyn.b2frame\n"
    "    codec: lz4\n";

static const char reloaded[] = "configuration reloaded";

/* ---- helpers ---------------------------------------------------------------- */

/* Wait until every buffer below upto is settled at level. */
static void prod_wait(prod *p, int level, uint64_t upto) {
  while (p->acked[level] < upto) {
    rx r;
    cli_recv(p->s, &r);
    prod_handle(p, &r);
    rx_free(&r);
  }
}

static prod prod_open(void *s, const char *stream, int n, int seed) {
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, stream, "", &o), 0);
  return prod_opened(s, &o, n, BASE, seed);
}

/* Codec of every chunk of a stream's frame, in order; returns the count. */
static int64_t frame_codecs(env *e, const char *stream, int *codecs,
                            int64_t cap) {
  char path[400];
  frame_path(e, stream, path, sizeof path);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  int64_t n = b2s_frame_nchunks(f);
  assert_true(n <= cap);
  for (int64_t k = 0; k < n; k++) {
    int32_t cb = 0;
    assert_int_equal(b2s_frame_chunk_sizes(f, k, &cb, NULL), 0);
    uint8_t *chunk = malloc((size_t)cb);
    assert_int_equal(b2s_frame_chunk_read(f, k, chunk, (size_t)cb), cb);
    b2s_chunk_info info;
    assert_int_equal(b2s_chunk_info_get(chunk, (size_t)cb, &info), 0);
    assert_false(info.memcpyed);      /* the codec really ran */
    codecs[k] = info.codec;
    free(chunk);
  }
  b2s_frame_free(f);
  return n;
}

static void ping_pong(void *s, uint64_t nonce) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_PING);
  m.ping.nonce = nonce;
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_PONG, &r);
  assert_int_equal(r.m.pong.nonce, nonce);
}

static void expect_silence(void *s, int ms) {
  zmq_pollitem_t it = {.socket = s, .events = ZMQ_POLLIN};
  assert_int_equal(zmq_poll(&it, 1, ms), 0);
}

/* ---- reload ------------------------------------------------------------------- */

/* A stream added to the file appears after SIGHUP: OPEN works and the
 * data lands in its (sparse, zlib) frame. */
static void test_reload_adds_stream(void **state) {
  (void)state;
  env e;
  env_init_config(&e, config_v1);
  env_start(&e);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "nw", "", &o), B2S_E_NOSTREAM);
  env_write_config(&e, config_v2);
  kill(e.pid, SIGHUP);
  env_log_wait(&e, reloaded, 1);
  assert_int_equal(env_log_count(&e, "reload: stream nw added"), 1);
  prod p = prod_open(s, "nw", 25, 40);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  char path[400];
  frame_path(&e, "nw", path, sizeof path);
  check_frame(path, &p, p.n);
  int codecs[64];
  assert_int_equal(frame_codecs(&e, "nw", codecs, 64), 25);
  for (int k = 0; k < 25; k++)
    assert_int_equal(codecs[k], B2S_CODEC_ZLIB);
  /* a second SIGHUP with the same file changes nothing */
  kill(e.pid, SIGHUP);
  env_log_wait(&e, reloaded, 2);
  assert_int_equal(env_log_count(&e, "reload: stream nw added"), 1);
  zmq_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_frame(path, &p, p.n);
  env_fini(&e);
}

/* A new codec applies to buffers accepted after the reload; buffers sent
 * before and while it happens are all in the frame, intact, in order. */
static void test_reload_codec(void **state) {
  (void)state;
  env e;
  env_init_config(&e, config_v1);
  env_start(&e);
  void *s = cli_producer(&e);
  prod p = prod_open(s, "c", 90, 1);
  prod_send(&p, 0, 20);
  prod_wait(&p, B2S_WIRE_LEVEL_WRITTEN, 20);     /* 0..19: before */
  prod_send(&p, 20, 50);
  env_write_config(&e, config_v2);
  kill(e.pid, SIGHUP);
  prod_send(&p, 50, 60);                         /* 20..59: around */
  env_log_wait(&e, reloaded, 1);
  /* one line per changed key, each as its schema row says */
  assert_int_equal(env_log_count(&e, "reload: streams.c.codec: applies at "
                                     "once, to buffers accepted from now on"),
                   1);
  assert_int_equal(env_log_count(&e, "reload: streams.c.clevel: applies at "
                                     "once"), 1);
  assert_int_equal(env_log_count(&e, "reload: streams.c."), 2);
  assert_int_equal(env_log_count(&e, "reload: streams.w."), 0);
  prod_send(&p, 60, 90);                         /* 60..89: after */
  prod_wait(&p, B2S_WIRE_LEVEL_WRITTEN, 90);
  cli_close(&p);
  assert_int_equal(p.ndropped, 0);
  char path[400];
  frame_path(&e, "c", path, sizeof path);
  check_frame(path, &p, p.n);
  int codecs[128];
  assert_int_equal(frame_codecs(&e, "c", codecs, 128), 90);
  for (int k = 0; k < 90; k++) {
    if (k < 20)
      assert_int_equal(codecs[k], B2S_CODEC_ZSTD);
    else if (k >= 60)
      assert_int_equal(codecs[k], B2S_CODEC_LZ4);
    else
      assert_true(codecs[k] == B2S_CODEC_ZSTD || codecs[k] == B2S_CODEC_LZ4);
    if (k > 0 && codecs[k - 1] == B2S_CODEC_LZ4)   /* one switch, no going back */
      assert_int_equal(codecs[k], B2S_CODEC_LZ4);
  }
  zmq_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_frame(path, &p, p.n);
  env_fini(&e);
}

/* One key of each reload class, changed together: stream k's codec (at
 * once), series (next frame) and path (restart only). */
#define CONFIG_K(codec, series, path)                                          \
  "listen: [ipc://d.sock]\n"                                                   \
  "run_dir: run\n"                                                             \
  "data_dir: data\n"                                                           \
  "workers: 2\n"                                                               \
  "log_level: debug\n"                                                         \
  "streams:\n"                                                                 \
  "  k:\n"                                                                     \
  "    codec: " codec "\n"                                                     \
  "    series: {sample: " series "}\n"                                         \
  "    path: " path "\n"                                                       \
  "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"

/* Four random bits a byte: every codec compresses it (a chunk of it is
 * never stored as it came), none to nothing. */
static void noise(uint8_t *b, size_t len, int i) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
  for (size_t k = 0; k < len; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b[k] = (uint8_t)(x & 0x0f);
  }
}

/* Whether the series map of the frame at path holds the msgpack string
 * text (the value of sample). */
static bool frame_series_has(const char *path, const char *text) {
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  uint8_t *map = NULL;
  int32_t n = 0;
  assert_int_equal(b2s_frame_vlmeta_get(f, B2S_SERIES_VLMETA, NULL, &map, &n),
                   0);
  uint8_t want[32];
  size_t len = strlen(text);
  assert_true(len < 32);
  want[0] = (uint8_t)(0xa0 | len);   /* fixstr */
  memcpy(want + 1, text, len);
  bool has = memmem(map, (size_t)n, want, len + 1) != NULL;
  free(map);
  b2s_frame_free(f);
  return has;
}

static int send_noise(b2sc_producer *p, size_t len, int from, int to) {
  uint8_t *b = malloc(len);
  int rc = 0;
  for (int i = from; i < to && rc == 0; i++) {
    noise(b, len, i);
    rc = b2sc_send(p, b, len, 5000);
  }
  free(b);
  return rc;
}

/* SIGHUP with a new codec, series and path: the log says what each does,
 * and each does it.  The codec applies to the buffers sent after the
 * reload; the running frame keeps its series map, which only a new frame
 * starts with (here: the frame moved aside while the stream was failed
 * on a full disk, so that OPEN makes it anew); the path stays the running
 * one, the new one is never made. */
static void test_reload_classes(void **state) {
  (void)state;
  env e;
  env_init_config(&e, CONFIG_K("zstd", "first", "k.b2frame"));
  e.fsize_limit = 3000000;     /* above the frame's 1 MiB data reserve */
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "classes", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "k", NULL, &p), 0);
  const size_t len = 65536;
  assert_int_equal(send_noise(p, len, 0, 4), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);

  env_write_config(&e, CONFIG_K("lz4", "second", "k2.b2frame"));
  kill(e.pid, SIGHUP);
  env_log_wait(&e, reloaded, 1);
  assert_int_equal(env_log_count(&e, "reload: streams.k.codec: applies at "
                                     "once, to buffers accepted from now on"),
                   1);
  assert_int_equal(env_log_count(&e, "reload: streams.k.series: applies to "
                                     "the next frame (a frame made from now "
                                     "on starts with it"), 1);
  assert_int_equal(env_log_count(&e, "reload: streams.k.path: needs a "
                                     "restart, kept at \"k.b2frame\""), 1);
  assert_int_equal(env_log_count(&e, "reload: streams.k."), 3);
  assert_int_equal(env_log_count(&e, "new settings apply"), 0);

  assert_int_equal(send_noise(p, len, 4, 8), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  char path[400], path2[400], aside[420];
  frame_path(&e, "k", path, sizeof path);
  frame_path(&e, "k2", path2, sizeof path2);
  int codecs[64];
  assert_int_equal(frame_codecs(&e, "k", codecs, 64), 8);
  for (int k = 0; k < 8; k++)          /* at once */
    assert_int_equal(codecs[k], k < 4 ? B2S_CODEC_ZSTD : B2S_CODEC_LZ4);
  assert_true(frame_series_has(path, "first"));   /* not in this frame */
  assert_false(frame_series_has(path, "second"));
  struct stat sb;
  assert_int_equal(stat(path2, &sb), -1);         /* restart only */

  /* a full disk fails the stream; its frame goes aside, room comes back
   * and OPEN makes the stream's next frame */
  assert_int_equal(send_noise(p, len, 8, 2000), -EFBIG);
  assert_int_equal(b2sc_producer_close(p), -EFBIG);
  snprintf(aside, sizeof aside, "%s.full", path);
  assert_int_equal(rename(path, aside), 0);
  struct rlimit rl;
  assert_int_equal(prlimit(e.pid, RLIMIT_FSIZE, NULL, &rl), 0);
  rl.rlim_cur = rl.rlim_max;
  assert_int_equal(prlimit(e.pid, RLIMIT_FSIZE, &rl, NULL), 0);
  assert_int_equal(b2sc_producer_open(s, "k", NULL, &p), 0);
  assert_int_equal(send_noise(p, len, 0, 3), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  assert_true(env_log_count(&e, "stream k: re-opened") >= 1);
  assert_true(frame_series_has(path, "second"));  /* the next frame */
  assert_false(frame_series_has(path, "first"));
  assert_true(frame_series_has(aside, "first"));
  assert_int_equal(frame_codecs(&e, "k", codecs, 64), 3);
  for (int k = 0; k < 3; k++)
    assert_int_equal(codecs[k], B2S_CODEC_LZ4);
  assert_int_equal(stat(path2, &sb), -1);         /* still not made */
  env_fini(&e);
}

/* A broken file on SIGHUP: the error is logged, the daemon keeps serving
 * on the configuration it has (same codec, no new stream), and a later
 * good file still applies. */
static void test_reload_broken_config(void **state) {
  (void)state;
  env e;
  env_init_config(&e, config_v1);
  env_start(&e);
  void *s = cli_producer(&e);
  prod p = prod_open(s, "c", 40, 77);
  prod_send(&p, 0, 10);
  env_write_config(&e, config_broken);
  kill(e.pid, SIGHUP);
  prod_send(&p, 10, 20);
  env_log_wait(&e, "keeping the running configuration", 1);
  assert_int_equal(env_log_count(&e, "b2streamd.yaml:7:"), 1);
  assert_int_equal(env_log_count(&e, reloaded), 0);
  void *s2 = cli_producer(&e);          /* s has ACKs in flight */
  ping_pong(s2, 5);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s2, "nw", "", &o), B2S_E_NOSTREAM);
  prod_send(&p, 20, 30);
  prod_wait(&p, B2S_WIRE_LEVEL_WRITTEN, 30);
  int codecs[64];
  assert_int_equal(frame_codecs(&e, "c", codecs, 64), 30);
  for (int k = 0; k < 30; k++)
    assert_int_equal(codecs[k], B2S_CODEC_ZSTD);
  /* the file fixed: it applies */
  env_write_config(&e, config_v2);
  kill(e.pid, SIGHUP);
  env_log_wait(&e, reloaded, 1);
  prod_send(&p, 30, 40);
  prod_wait(&p, B2S_WIRE_LEVEL_WRITTEN, 40);
  cli_close(&p);
  assert_int_equal(frame_codecs(&e, "c", codecs, 64), 40);
  for (int k = 30; k < 40; k++)
    assert_int_equal(codecs[k], B2S_CODEC_LZ4);
  assert_int_equal(cli_open(s2, "nw", "", &o), 0);
  zmq_close(s2);
  char path[400];
  frame_path(&e, "c", path, sizeof path);
  check_frame(path, &p, p.n);
  zmq_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_frame(path, &p, p.n);
  env_fini(&e);
}

/* A stream added by a reload whose frame a running stream (made from a
 * template) already writes is refused: one writer per frame. */
static void test_reload_path_clash(void **state) {
  (void)state;
  env e;
  env_up(&e, config_tm);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "dyn", "tm", &o), 0);
  prod p = prod_opened(s, &o, 40, BASE, 8);
  prod_send(&p, 0, 20);
  prod_wait(&p, B2S_WIRE_LEVEL_WRITTEN, 20);
  env_write_config(&e, config_tm_clash);
  kill(e.pid, SIGHUP);
  env_log_wait(&e, reloaded, 1);
  assert_int_equal(env_log_count(&e, "reload: stream x added"), 0);
  assert_int_equal(env_log_count(&e, "reload: stream x: "), 1);
  void *s2 = cli_producer(&e);
  assert_int_equal(cli_open(s2, "x", "", &o), B2S_E_NOSTREAM);
  zmq_close(s2);
  prod_send(&p, 20, 40);
  prod_wait(&p, B2S_WIRE_LEVEL_WRITTEN, 40);
  cli_close(&p);
  char path[400];
  frame_path(&e, "dyn", path, sizeof path);
  check_frame(path, &p, p.n);
  zmq_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_frame(path, &p, p.n);
  env_fini(&e);
}

/* ---- pushed follows ------------------------------------------------------------- */

typedef struct pushcons {
  void *s;
  uint32_t fid;
  uint16_t flags;
  uint64_t next;                /* next index expected */
} pushcons;

static pushcons push_follow(env *e, const char *stream, uint16_t flags,
                            uint64_t start, uint64_t committed) {
  pushcons c = {.s = cli_connect(e), .flags = flags};
  cli_hello(c.s, B2S_WIRE_HELLO_CONSUMER);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.tag = 31;
  m.flags = flags;
  m.follow.start = start;
  m.follow.target = b2s_wire_cstr(stream);
  cli_send(c.s, &m, NULL, 0);
  rx r;
  cli_expect(c.s, B2S_WIRE_FOLLOWING, &r);
  assert_int_equal(r.m.tag, 31);
  assert_int_equal(r.m.following.committed, committed);
  c.next = flags & B2S_WIRE_FOLLOW_FROM_END ? committed : start;
  assert_int_equal(r.m.following.start, c.next);
  c.fid = r.m.following.follow_id;
  return c;
}

/* Seed of chunk index k: the first run wrote 0..n1-1 with seed1, the
 * second the rest with seed2. */
typedef struct runs {
  int n1, seed1, seed2;
} runs;

static int seed_of(const runs *r, uint64_t k) {
  return k < (uint64_t)r->n1 ? r->seed1 + (int)k
                             : r->seed2 + (int)(k - (uint64_t)r->n1);
}

/* Receive the CHUNKs of c up to index `upto` and check each: pushed, in
 * order, sizes and bytes as in the frame (compressed) or as the producer
 * sent them (decompressed). */
static void push_receive(pushcons *c, b2s_frame *f, const runs *rn,
                         uint64_t upto) {
  bool dec = c->flags & B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED;
  uint8_t *want = malloc(BASE + 1000);
  while (c->next < upto) {
    rx r;
    cli_recv(c->s, &r);
    assert_int_equal(r.m.type, B2S_WIRE_CHUNK);
    assert_int_equal(r.m.tag, 0);
    assert_int_equal(r.m.flags, B2S_WIRE_CHUNK_PUSHED |
                                    (dec ? B2S_WIRE_CHUNK_DECOMPRESSED : 0));
    assert_int_equal(r.m.chunk.follow_id, c->fid);
    assert_int_equal(r.m.chunk.index, c->next);   /* in order, once */
    int64_t k = (int64_t)c->next;
    int32_t cb = 0, nb = 0;
    assert_int_equal(b2s_frame_chunk_sizes(f, k, &cb, &nb), 0);
    assert_int_equal(r.m.chunk.cbytes, (uint32_t)cb);
    assert_int_equal(r.m.chunk.nbytes, (uint32_t)nb);
    size_t len = buf_len(seed_of(rn, c->next), BASE);
    assert_int_equal(nb, (int32_t)len);
    if (dec) {
      buf_fill(want, len, seed_of(rn, c->next));
      assert_int_equal(r.plen, len);
      assert_memory_equal(r.payload, want, len);
    } else {
      uint8_t *stored = malloc((size_t)cb);
      assert_int_equal(b2s_frame_chunk_read(f, k, stored, (size_t)cb), cb);
      assert_int_equal(r.plen, (size_t)cb);
      assert_memory_equal(r.payload, stored, (size_t)cb);
      free(stored);
    }
    rx_free(&r);
    c->next++;
  }
  free(want);
}

static b2s_frame *frame_of(env *e, const char *stream, int64_t nchunks) {
  char path[400];
  frame_path(e, stream, path, sizeof path);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), nchunks);
  return f;
}

/* Pushed follows, compressed and decompressed: catch-up from 0 (more
 * chunks than one turn pushes) and from the middle after data exists,
 * then live chunks; a from_end follow gets only the live ones.  Each
 * chunk once, in order, with the frame's or the producer's bytes. */
static void test_push_follows(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  void *s = cli_producer(&e);
  runs rn = {.n1 = 150, .seed1 = 10, .seed2 = 3000};
  prod p1 = prod_open(s, "w", rn.n1, rn.seed1);
  prod_run(&p1, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p1);

  pushcons a = push_follow(&e, "w", B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED, 0, 150);
  pushcons b = push_follow(&e, "w", B2S_WIRE_FOLLOW_PUSH_COMPRESSED, 37, 150);
  pushcons c = push_follow(&e, "w", B2S_WIRE_FOLLOW_PUSH_COMPRESSED |
                                        B2S_WIRE_FOLLOW_FROM_END, 0, 150);
  pushcons d = push_follow(&e, "w", B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED, 150, 150);
  b2s_frame *f = frame_of(&e, "w", 150);
  push_receive(&a, f, &rn, 150);
  push_receive(&b, f, &rn, 150);
  expect_silence(c.s, 200);
  expect_silence(d.s, 10);
  b2s_frame_free(f);

  /* live */
  prod p2 = prod_open(s, "w", 60, rn.seed2);
  prod_run(&p2, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p2);
  f = frame_of(&e, "w", 210);
  pushcons *all[] = {&a, &b, &c, &d};
  for (int i = 0; i < 4; i++)
    push_receive(all[i], f, &rn, 210);
  for (int i = 0; i < 4; i++)
    expect_silence(all[i]->s, i == 0 ? 300 : 10);   /* nothing twice */
  b2s_frame_free(f);

  /* UNFOLLOW says where to resume */
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_UNFOLLOW);
  m.tag = 9;
  m.unfollow.follow_id = a.fid;
  cli_send(a.s, &m, NULL, 0);
  rx r;
  cli_expect(a.s, B2S_WIRE_UNFOLLOWED, &r);
  assert_int_equal(r.m.unfollowed.next, 210);
  /* both push bits (the encoder refuses them: patch the flags field) */
  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.tag = 10;
  m.flags = B2S_WIRE_FOLLOW_PUSH_COMPRESSED;
  m.follow.target = b2s_wire_cstr("w");
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode(&m, hdr, sizeof hdr);
  assert_true(n > 0);
  hdr[6] = B2S_WIRE_FOLLOW_PUSH_COMPRESSED | B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED;
  assert_int_equal(zmq_send(a.s, hdr, (size_t)n, 0), n);
  cli_recv(a.s, &r);
  assert_int_equal(r.m.type, B2S_WIRE_ERROR);
  assert_int_equal(r.m.tag, 10);
  assert_int_equal(r.m.error.code, B2S_E_PROTO);
  for (int i = 0; i < 4; i++)
    zmq_close(all[i]->s);
  zmq_close(s);
  env_down(&e);
}

/* A push follow on a stream added by a reload, with a sparse frame. */
static void test_push_after_reload(void **state) {
  (void)state;
  env e;
  env_init_config(&e, config_v1);
  env_start(&e);
  env_write_config(&e, config_v2);
  kill(e.pid, SIGHUP);
  env_log_wait(&e, reloaded, 1);
  pushcons a = push_follow(&e, "nw", B2S_WIRE_FOLLOW_PUSH_COMPRESSED, 0, 0);
  void *s = cli_producer(&e);
  runs rn = {.n1 = 30, .seed1 = 5};
  prod p = prod_open(s, "nw", 30, 5);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  b2s_frame *f = frame_of(&e, "nw", 30);
  push_receive(&a, f, &rn, 30);
  expect_silence(a.s, 200);
  b2s_frame_free(f);
  zmq_close(a.s);
  zmq_close(s);
  env_down(&e);
}

/* Direct-I/O stages count against memory_limit, and streams whose stages
 * would take the direct ones past half of it write through the page cache:
 * with 40 MiB, two of three streams get their 8 MiB of stages, the third
 * is buffered with a warning, the daemon reports 16 MiB of stages, and all
 * three write every byte. */
static void test_stage_budget(void **state) {
  (void)state;
  env e;
  env_init_config(&e, ENV_YAML_HEAD "workers: 2\nlog_level: info\n"
                      "memory_limit: 40MiB\nmax_buffer: 1MiB\n"
                      "streams:\n  a: {}\n  b: {}\n  c: {}\n");
  env_start(&e);
  assert_int_equal(env_log_count(&e, "more bytes of direct-I/O stages"), 1);
  void *s = cli_producer(&e);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_STATS);
  m.tag = 77;
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_STATS_REPLY, &r);
  char *json = strndup((const char *)r.payload, r.plen);
  rx_free(&r);
  assert_non_null(strstr(json, "\"stage_bytes\":16777216,"));
  free(json);
  static const char *const names[] = {"a", "b", "c"};
  prod p[3];
  for (int i = 0; i < 3; i++) {
    p[i] = prod_open(s, names[i], 20, 100000 + 1000 * (size_t)i);
    prod_run(&p[i], B2S_WIRE_LEVEL_WRITTEN);
    cli_close(&p[i]);
  }
  zmq_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  for (int i = 0; i < 3; i++) {
    char path[400];
    frame_path(&e, names[i], path, sizeof path);
    check_frame(path, &p[i], p[i].n);
  }
  env_fini(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reload_adds_stream),
    cmocka_unit_test(test_reload_codec),
    cmocka_unit_test(test_reload_classes),
    cmocka_unit_test(test_reload_broken_config),
    cmocka_unit_test(test_reload_path_clash),
    cmocka_unit_test(test_push_follows),
    cmocka_unit_test(test_push_after_reload),
    cmocka_unit_test(test_stage_budget),
  };
  return harness_run(tests);
}

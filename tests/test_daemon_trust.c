/* Integration tests of b2streamd against hostile or unlucky producers:
 * what the wire accepts the writer stores (a record's user map as deep as
 * the protocol allows), and errors a producer is told are the real ones.
 * Each starts the real daemon (daemon_harness.c) and speaks through the
 * client library or the raw protocol. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "b2s_frame.h"
#include "b2s_wire.h"

#define LEN 4000

static const char *trust_config =
    ENV_YAML_HEAD
    "workers: 2\n"
    "max_buffer: 1MiB\n"
    "log_level: debug\n"
    "streams:\n"
    "  w:\n"
    "    typesize: 4\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  o:\n"
    "    order: frame_number\n"
    "    reorder_window: 4\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n"
    "  os:\n"
    "    format: sparse\n"
    "    order: frame_number\n"
    "    reorder_window: 4\n"
    "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n";

static void fill(uint8_t *b, size_t len, int i) {
  for (size_t k = 0; k < len; k++)
    b[k] = (uint8_t)(i * 13 + k / 8);
}

/* {"a": k nested arrays, the innermost holding nil} */
static size_t nested_map(uint8_t *b, int k) {
  size_t n = 0;
  b[n++] = 0x81;
  b[n++] = 0xa1;
  b[n++] = 'a';
  for (int i = 0; i < k; i++)
    b[n++] = 0x91;
  b[n++] = 0xc0;
  return n;
}

/* ---- N2: user maps as deep as the protocol allows ------------------------- */

/* Buffers whose records carry user maps of 30..32 containers inside the
 * map (32 is the documented maximum) are stored with their user part byte
 * for byte, the stream goes on; 33 is refused before it is sent. */
static void test_user_map_max_depth_stored(void **state) {
  (void)state;
  env e;
  env_init_config(&e, trust_config);
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "deep", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  uint8_t buf[LEN], u[4][64];
  size_t ul[4];
  for (int i = 0; i < 4; i++) {
    fill(buf, LEN, i);
    ul[i] = nested_map(u[i], 30 + (i < 3 ? i : 2));
    b2sc_record r = {.present = B2SC_REC_FRAME | B2SC_REC_USER_MAP,
                     .frame = 10 + (uint64_t)i, .user = u[i],
                     .user_len = ul[i]};
    assert_int_equal(b2sc_send_rec(p, buf, LEN, &r, 5000), 0);
  }
  uint8_t too[64];
  b2sc_record bad = {.present = B2SC_REC_USER_MAP, .user = too,
                     .user_len = nested_map(too, 33)};
  assert_int_equal(b2sc_send_rec(p, buf, LEN, &bad, 5000), B2S_E_ARG);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  b2s_records *rs;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_records_count(rs), 4);
  for (int i = 0; i < 4; i++) {
    b2s_record r;
    assert_int_equal(b2s_records_get(rs, i, &r), 0);
    assert_int_equal(r.frame, 10 + i);
    assert_int_equal(r.user_kind, B2S_RECORD_USER_MAP);
    assert_int_equal(r.user_len, ul[i]);
    assert_memory_equal(r.user, u[i], ul[i]);
  }
  b2s_records_free(rs);
  env_fini(&e);
}

/* ---- frame-number order: the farthest jump ---------------------------------- */

static int send_frame(b2sc_producer *p, uint64_t frame) {
  uint8_t b[LEN];
  fill(b, LEN, (int)(frame % 251));
  b2sc_record r = {.present = B2SC_REC_FRAME, .frame = frame};
  int rc = b2sc_send_rec(p, b, LEN, &r, 5000);
  return rc < 0 ? rc : b2sc_flush(p, 20000);
}

/* Files and their bytes in directory path (a sparse frame). */
static int64_t dir_files(const char *path, int64_t *bytes) {
  DIR *d = opendir(path);
  assert_non_null(d);
  int64_t n = 0;
  *bytes = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    char p[700];
    snprintf(p, sizeof p, "%s/%s", path, de->d_name);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    n++;
    *bytes += sb.st_size;
  }
  closedir(d);
  return n;
}

/* Chunk i of the pair at path has its record's checksum and, for a gap,
 * decompresses to LEN zeros. */
static void check_chunk(b2s_frame *f, b2s_records *rs, int64_t i, bool gap) {
  b2s_record r;
  assert_int_equal(b2s_records_get(rs, i, &r), 0);
  uint8_t raw[LEN + 64], out[LEN];
  int32_t cb = 0, nb = 0;
  assert_int_equal(b2s_frame_chunk_sizes(f, i, &cb, &nb), 0);
  assert_int_equal(b2s_frame_chunk_read(f, i, raw, sizeof raw), cb);
  assert_true(r.xxh64 == b2s_chunk_xxh64(raw, (size_t)cb));
  assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, out, LEN), LEN);
  if (gap) {
    assert_int_equal(r.flags, B2S_RECORD_GAP);
    assert_false(r.has_frame);
    for (int k = 0; k < LEN; k++)
      assert_int_equal(out[k], 0);
  }
}

/* docs/METADATA.md section 4: a frame number reorder_window + 65536 ahead
 * of the next one to store is allowed, one more is B2S_E_ARG; the 65540
 * frame numbers passed are gaps that share one placeholder chunk and one
 * record, so a sparse frame gains a few files, whatever the jump. */
static void jump_run(const char *stream, bool sparse) {
  env e;
  env_init_config(&e, trust_config);
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "jump", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, stream, NULL, &p), 0);
  assert_int_equal(send_frame(p, 0), 0);          /* next to store: 1 */
  uint64_t far = 1 + 4 + 65536;
  assert_int_equal(send_frame(p, far + 1), B2S_E_ARG);
  assert_int_equal(send_frame(p, far), 0);
  assert_int_equal(send_frame(p, far + 3), 0);    /* a short run after */
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400], rpath[420];
  frame_path(&e, stream, path, sizeof path);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), (int64_t)far + 4);
  b2s_records *rs;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_records_count(rs), (int64_t)far + 4);
  b2s_record r;
  int64_t idx[] = {0, (int64_t)far, (int64_t)far + 3};
  for (int k = 0; k < 3; k++) {
    assert_int_equal(b2s_records_get(rs, idx[k], &r), 0);
    assert_true(r.has_frame && r.frame == (uint64_t)idx[k] && r.flags == 0);
    check_chunk(f, rs, idx[k], false);
  }
  int64_t gaps[] = {1, 2, 30000, (int64_t)far - 1, (int64_t)far + 1,
                    (int64_t)far + 2};
  for (int k = 0; k < 6; k++)
    check_chunk(f, rs, gaps[k], true);
  b2s_records_free(rs);
  b2s_frame_free(f);
  if (sparse) {
    /* data: index file + 3 chunks + 2 placeholders; records alike */
    assert_true(b2s_records_path(path, rpath, sizeof rpath) > 0);
    int64_t bytes, rbytes;
    int64_t files = dir_files(path, &bytes), rfiles = dir_files(rpath, &rbytes);
    printf("%s: %llu frame numbers passed: %lld + %lld files, %lld + %lld "
           "bytes\n", stream, (unsigned long long)far - 1, (long long)files,
           (long long)rfiles, (long long)bytes, (long long)rbytes);
    assert_true(files <= 8 && rfiles <= 8);
    /* chunks: 3 x LEN at most; the rest is the index, 8 bytes a chunk */
    assert_true(bytes < 3 * LEN + 9 * (int64_t)far + 65536);
  }
  env_fini(&e);
}

static void test_order_jump_limit(void **state) {
  (void)state;
  jump_run("o", false);
  jump_run("os", true);
}

/* ---- N7: a file-size limit is told as such ------------------------------ */

/* Incompressible bytes, so that the frame grows by what is sent. */
static void noise(uint8_t *b, size_t len, int i) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
  for (size_t k = 0; k < len; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b[k] = (uint8_t)x;
  }
}

/* Under RLIMIT_FSIZE (SIGXFSZ ignored by the daemon) the frame cannot
 * grow: the producer's calls return -EFBIG, file too large, the reason
 * the daemon ended the handle, never a bare "closed". */
static void test_file_size_limit_is_efbig(void **state) {
  (void)state;
  env e;
  env_init_config(&e, trust_config);
  e.fsize_limit = 3000000;     /* above the frame's 1 MiB data reserve */
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "filler", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  const size_t len = 65536;
  uint8_t *b = malloc(len);
  int rc = 0;
  for (int i = 0; i < 2000 && rc == 0; i++) {
    noise(b, len, i);
    rc = b2sc_send(p, b, len, 5000);
  }
  assert_int_equal(rc, -EFBIG);
  assert_int_equal(b2sc_send(p, b, len, 1000), -EFBIG);
  assert_int_equal(b2sc_flush(p, 5000), -EFBIG);
  assert_int_equal(b2sc_last_error_code(s), -EFBIG);
  assert_int_equal(b2sc_producer_close(p), -EFBIG);
  b2sc_close(s);
  free(b);
  env_down(&e);
}

/* ---- protocol: what docs/PROTOCOL.md promises ---------------------------- */

/* Send m in version v (the prefix's version byte then set to `as` when it
 * differs), with `extra` frames of 3 bytes after the header. */
static void send_raw(void *z, const b2s_wire_msg *m, int v, int as,
                     const void *payload, size_t plen, int extra) {
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode_v(m, v, hdr, sizeof hdr);
  assert_true(n > 0);
  hdr[4] = (uint8_t)as;
  bool more = payload || extra;
  assert_int_equal(zmq_send(z, hdr, (size_t)n, more ? ZMQ_SNDMORE : 0), n);
  if (payload)
    assert_int_equal(zmq_send(z, payload, plen, extra ? ZMQ_SNDMORE : 0),
                     (int)plen);
  for (int i = 0; i < extra; i++)
    assert_int_equal(zmq_send(z, "abc", 3, i + 1 < extra ? ZMQ_SNDMORE : 0), 3);
}

/* The next message: its prefix version into *version, decoded in any
 * version up to 2, its frames counted. */
static int recv_raw(void *z, int *version, b2s_wire_msg *m, uint8_t *hdr) {
  zmq_pollitem_t it = {.socket = z, .events = ZMQ_POLLIN};
  if (zmq_poll(&it, 1, 5000) != 1)
    fail_msg("no answer");
  int n = zmq_recv(z, hdr, B2S_WIRE_HEADER_MAX, 0);
  assert_true(n >= 16);
  *version = hdr[4];
  assert_int_equal(b2s_wire_decode_v(hdr, (size_t)n, 2, m), 0);
  int more;
  size_t ml = sizeof more;
  zmq_getsockopt(z, ZMQ_RCVMORE, &more, &ml);
  while (more) {
    uint8_t junk[64];
    zmq_recv(z, junk, sizeof junk, 0);
    zmq_getsockopt(z, ZMQ_RCVMORE, &more, &ml);
  }
  return n;
}

static void hello_v(void *z, int v) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.flags = B2S_WIRE_HELLO_PRODUCER;
  m.tag = 1;
  m.hello.name = b2s_wire_cstr("proto");
  send_raw(z, &m, v, v, NULL, 0, 0);
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int ver;
  recv_raw(z, &ver, &m, hdr);
  assert_int_equal(m.type, B2S_WIRE_WELCOME);
  assert_int_equal(ver, v);
}

static void expect_err(void *z, int version, int code, uint16_t flags,
                       uint8_t ref_type) {
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int ver;
  b2s_wire_msg m;
  recv_raw(z, &ver, &m, hdr);
  if (m.type != B2S_WIRE_ERROR)
    fail_msg("%s instead of ERROR %d", b2s_wire_type_name(m.type), code);
  if (m.error.code != code || m.error.ref_type != ref_type)
    printf("ERROR %d about %d: %.*s\n", m.error.code, m.error.ref_type,
           (int)m.error.message.len, m.error.message.ptr ? m.error.message.ptr : "");
  assert_int_equal(ver, version);
  assert_int_equal(m.error.code, code);
  assert_int_equal(m.flags, flags);
  assert_int_equal(m.error.ref_type, ref_type);
}

/* Section 8: a message in a version the daemon does not speak gets a
 * version-1 ERROR B2S_E_PROTO_VERSION (closed_session, ref_index the
 * daemon's range), even inside a version-2 session: a strict version-1
 * decoder reads it. */
static void test_version_error_is_v1(void **state) {
  (void)state;
  env e;
  env_init_config(&e, trust_config);
  env_start(&e);
  void *z = cli_connect(&e);
  hello_v(z, 2);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_PING);
  m.tag = 7;
  send_raw(z, &m, 2, 9, NULL, 0, 0);
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int ver;
  int n = recv_raw(z, &ver, &m, hdr);
  assert_int_equal(ver, 1);
  b2s_wire_msg v1;                 /* a strict version-1 decoder reads it */
  assert_int_equal(b2s_wire_decode(hdr, (size_t)n, &v1), 0);
  assert_int_equal(m.type, B2S_WIRE_ERROR);
  assert_int_equal(m.error.code, B2S_E_PROTO_VERSION);
  assert_int_equal(m.flags, B2S_WIRE_ERROR_CLOSED_SESSION);
  assert_int_equal(m.error.ref_index, 1 + 256 * 2);
  /* no session: the same */
  b2s_wire_init(&m, B2S_WIRE_PING);
  send_raw(z, &m, 1, 0, NULL, 0, 0);
  expect_err(z, 1, B2S_E_PROTO_VERSION, B2S_WIRE_ERROR_CLOSED_SESSION,
             B2S_WIRE_PING);
  zmq_close(z);
  env_down(&e);
}

/* Section 6.2: a DATA with a frame too many (header, payload and two more
 * in version 1; header, payload, record and one more in version 2) is
 * answered: ERROR B2S_E_PROTO about the DATA, nothing stored, the handle
 * goes on. */
static void test_data_frames_too_many_answered(void **state) {
  (void)state;
  env e;
  env_init_config(&e, trust_config);
  env_start(&e);
  for (int v = 1; v <= 2; v++) {
    void *z = cli_connect(&e);
    hello_v(z, v);
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_OPEN);
    m.tag = 2;
    m.open.stream = b2s_wire_cstr("w");
    send_raw(z, &m, v, v, NULL, 0, 0);
    uint8_t hdr[B2S_WIRE_HEADER_MAX];
    int ver;
    recv_raw(z, &ver, &m, hdr);
    assert_int_equal(m.type, B2S_WIRE_OPENED);
    uint32_t h = m.opened.handle;
    uint8_t b[LEN];
    fill(b, LEN, 0);
    b2s_wire_init(&m, B2S_WIRE_DATA);
    m.data.handle = h;
    m.data.buffer_id = 0;
    send_raw(z, &m, v, v, b, LEN, 2);
    expect_err(z, v, B2S_E_PROTO, 0, B2S_WIRE_DATA);
    if (v == 2) {                /* a record, then one frame too many */
      uint8_t hdr2[B2S_WIRE_HEADER_MAX], rec[B2S_WIRE_REC_FIXED];
      b2s_wire_rec r = {.present = B2S_WIRE_REC_FRAME, .frame = 5};
      assert_int_equal(b2s_wire_rec_encode(&r, rec, sizeof rec),
                       B2S_WIRE_REC_FIXED);
      m.flags = B2S_WIRE_DATA_RECORD;
      int n = b2s_wire_encode_v(&m, 2, hdr2, sizeof hdr2);
      assert_int_equal(zmq_send(z, hdr2, (size_t)n, ZMQ_SNDMORE), n);
      assert_int_equal(zmq_send(z, b, LEN, ZMQ_SNDMORE), LEN);
      assert_int_equal(zmq_send(z, rec, sizeof rec, ZMQ_SNDMORE), (int)sizeof rec);
      assert_int_equal(zmq_send(z, "", 0, 0), 0);
      expect_err(z, v, B2S_E_PROTO, 0, B2S_WIRE_DATA);
    }
    /* the buffer was ignored: id 0 is still the next one */
    b2s_wire_init(&m, B2S_WIRE_DATA);
    m.data.handle = h;
    m.data.buffer_id = 0;
    send_raw(z, &m, v, v, b, LEN, 0);
    do
      recv_raw(z, &ver, &m, hdr);
    while (m.type == B2S_WIRE_ACK && m.ack.upto < 1);
    assert_int_equal(m.type, B2S_WIRE_ACK);
    assert_int_equal(m.ack.upto, 1);
    zmq_close(z);
  }
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), 2);   /* the two good ones */
  b2s_frame_free(f);
  env_fini(&e);
}

/* META about a handle (sections 3, 11.4, 11.5): handle 0 is outside the
 * field's range ("nonzero"), so the header is malformed: B2S_E_PROTO, as
 * for FLUSH or CLOSE with handle 0; a nonzero handle the session does not
 * have is B2S_E_CLOSED.  Neither changes anything. */
static void test_meta_bad_handles(void **state) {
  (void)state;
  env e;
  env_init_config(&e, trust_config);
  env_start(&e);
  void *z = cli_connect(&e);
  hello_v(z, 2);
  static const uint8_t map[] = {0x81, 0xa1, 'k', 0x01};
  b2s_wire_msg m;
  int types[] = {B2S_WIRE_META, B2S_WIRE_FLUSH, B2S_WIRE_CLOSE};
  for (int t = 0; t < 3; t++) {
    b2s_wire_init(&m, (uint8_t)types[t]);
    m.tag = 5;
    m.meta.handle = m.flush.handle = m.close.handle = 1;
    uint8_t hdr[B2S_WIRE_HEADER_MAX];
    int n = b2s_wire_encode_v(&m, 2, hdr, sizeof hdr);
    assert_int_equal(n, 20);
    memset(hdr + 16, 0, 4);          /* handle 0 */
    bool meta = types[t] == B2S_WIRE_META;
    assert_int_equal(zmq_send(z, hdr, 20, meta ? ZMQ_SNDMORE : 0), 20);
    if (meta)
      assert_int_equal(zmq_send(z, map, sizeof map, 0), (int)sizeof map);
    expect_err(z, 2, B2S_E_PROTO, 0, (uint8_t)types[t]);
  }
  b2s_wire_init(&m, B2S_WIRE_META);
  m.meta.handle = 77;
  send_raw(z, &m, 2, 2, map, sizeof map, 0);
  expect_err(z, 2, B2S_E_CLOSED, 0, B2S_WIRE_META);
  zmq_close(z);
  env_down(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_user_map_max_depth_stored),
      cmocka_unit_test(test_file_size_limit_is_efbig),
      cmocka_unit_test(test_order_jump_limit),
      cmocka_unit_test(test_version_error_is_v1),
      cmocka_unit_test(test_data_frames_too_many_answered),
      cmocka_unit_test(test_meta_bad_handles),
  };
  return harness_run(tests);
}

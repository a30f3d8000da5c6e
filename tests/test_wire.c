/* Wire protocol header codec (proto/wire.c) against docs/PROTOCOL.md.
 *
 * Golden bytes are the "Reference bytes" of PROTOCOL.md section 9.1; the
 * rejection tests patch valid headers at the offsets the document's tables
 * give, so a codec that drifts from the document fails here.  The error
 * code table of section 6.3 is checked against core/include/b2s_errors.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2s_wire.h"
#include "ts.h"

/* Every type of the one list (b2s_wire_types.h), with its version. */
static const struct listed_type {
  int type, since;
  const char *name;
} listed[] = {
#define LISTED_(name, value, since) {value, since, #name},
  B2S_WIRE_TYPES(LISTED_)
#undef LISTED_
};
#define NLISTED (sizeof listed / sizeof listed[0])
#define REQ_(name, value, since) +1
#define NREQUESTS (0 B2S_WIRE_REQUESTS(REQ_))

/* The version-1 types, which the tests below walk; filled from the list
 * (setup_types) so that a type added there is walked too. */
static int all_types[NLISTED];
static size_t NTYPES;

static int setup_types(void **state) {
  (void)state;
  for (size_t i = 0; i < NLISTED; i++)
    if (listed[i].since == 1)
      all_types[NTYPES++] = listed[i].type;
  return 0;
}


/* Per type, as PROTOCOL.md section 3 states them: name, "Length N + n"
 * (fixed part including string length fields), defined flag bits. */
static const struct {
  int type;
  const char *name;
  size_t fixed;
  uint16_t flags;
} doc[] = {
  {0x01, "HELLO", 26, 0x0003},      {0x02, "OPEN", 20, 0},
  {0x03, "DATA", 28, 0},            {0x04, "FLUSH", 20, 0},
  {0x05, "CLOSE", 20, 0},           {0x06, "SHM_ATTACH", 28, 0},
  {0x07, "SHM_SUBMIT", 40, 0},      {0x08, "FOLLOW", 26, 0x000F},
  {0x09, "READ", 30, 0x0001},       {0x0A, "UNFOLLOW", 20, 0},
  {0x0B, "STATS", 18, 0},           {0x0C, "PING", 24, 0},
  {0x0D, "BYE", 16, 0},             {0x81, "WELCOME", 32, 0x0001},
  {0x82, "OPENED", 30, 0},          {0x83, "ACK", 41, 0},
  {0x84, "DROPPED", 29, 0},         {0x85, "FLUSHED", 28, 0},
  {0x86, "CLOSED", 36, 0},          {0x87, "SHM_ATTACHED", 34, 0},
  {0x88, "FOLLOWING", 36, 0},       {0x89, "NOTIFY", 40, 0},
  {0x8A, "CHUNK", 36, 0x0003},      {0x8B, "UNFOLLOWED", 28, 0},
  {0x8C, "STATS_REPLY", 16, 0},     {0x8D, "PONG", 32, 0},
  {0x8E, "ERROR", 35, 0x0003},
};

/* ---- helpers ------------------------------------------------------------ */

static int encode(const b2s_wire_msg *m, uint8_t *buf) {
  return b2s_wire_encode(m, buf, B2S_WIRE_HEADER_MAX);
}

static void put_le(uint8_t *p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++, v >>= 8)
    p[i] = (uint8_t)v;
}

/* A valid message of each type with every field set to a distinct value. */
static void sample(int type, b2s_wire_msg *m) {
  b2s_wire_init(m, type);
  m->tag = 0x0A0B0C0Du;
  switch (type) {
  case B2S_WIRE_HELLO:
    m->flags = B2S_WIRE_HELLO_PRODUCER | B2S_WIRE_HELLO_CONSUMER;
    m->hello.pid = 31337;
    m->hello.ping_ms = 250;
    m->hello.name = b2s_wire_cstr("acq-cam\xc3\xa9");   /* UTF-8 e acute */
    break;
  case B2S_WIRE_OPEN:
    m->open.stream = b2s_wire_cstr("beamline/det1");
    m->open.tmpl = b2s_wire_cstr("detector");
    break;
  case B2S_WIRE_DATA:
    m->data.buffer_id = UINT64_C(0x0102030405060708);
    m->data.handle = 0xFFFFFFFFu;
    break;
  case B2S_WIRE_FLUSH: m->flush.handle = 3; break;
  case B2S_WIRE_CLOSE: m->close.handle = 4; break;
  case B2S_WIRE_SHM_ATTACH:
    m->shm_attach.handle = 5;
    m->shm_attach.slot_count = 16;
    m->shm_attach.slot_size = 4u << 20;
    break;
  case B2S_WIRE_SHM_SUBMIT:
    m->shm_submit.buffer_id = 99;
    m->shm_submit.handle = 6;
    m->shm_submit.segment = 7;
    m->shm_submit.slot = 0;
    m->shm_submit.length = 123456;
    break;
  case B2S_WIRE_FOLLOW:
    m->flags = B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED;
    m->follow.start = 42;
    m->follow.target = b2s_wire_cstr("det1");
    break;
  case B2S_WIRE_READ:
    m->flags = B2S_WIRE_READ_DECOMPRESS;
    m->read.chunk = UINT64_MAX;
    m->read.stream = b2s_wire_cstr("det1");
    break;
  case B2S_WIRE_UNFOLLOW: m->unfollow.follow_id = 8; break;
  case B2S_WIRE_STATS: m->stats.stream = b2s_wire_cstr("det2"); break;
  case B2S_WIRE_PING: m->ping.nonce = UINT64_C(0xDEADBEEFCAFEF00D); break;
  case B2S_WIRE_BYE: break;
  case B2S_WIRE_WELCOME:
    m->flags = B2S_WIRE_WELCOME_SHM;
    m->welcome.max_buffer = 64u << 20;
    m->welcome.timeout_ms = 15000;
    m->welcome.session_id = 77;
    m->welcome.version_min = 1;
    m->welcome.version_max = 3;
    m->welcome.server = b2s_wire_cstr("b2streamd 0.1.0");
    break;
  case B2S_WIRE_OPENED:
    m->opened.handle = 9;
    m->opened.credits = 32;
    m->opened.max_buffer = 1u << 24;
    m->opened.ack_level = B2S_WIRE_LEVEL_WRITTEN;
    m->opened.policy = B2S_WIRE_POLICY_DROP_OLDEST;
    break;
  case B2S_WIRE_ACK:
    m->ack.upto = 1000;
    m->ack.dropped = 17;
    m->ack.handle = 10;
    m->ack.credits = 4;
    m->ack.level = B2S_WIRE_LEVEL_DURABLE;
    break;
  case B2S_WIRE_DROPPED:
    m->dropped.buffer_id = 555;
    m->dropped.handle = 11;
    m->dropped.reason = B2S_WIRE_POLICY_DROP_NEWEST;
    break;
  case B2S_WIRE_FLUSHED:
    m->flushed.upto = 12345;
    m->flushed.handle = 12;
    break;
  case B2S_WIRE_CLOSED:
    m->closed.upto = 1u << 31;
    m->closed.dropped = 3;
    m->closed.handle = 13;
    break;
  case B2S_WIRE_SHM_ATTACHED:
    m->shm_attached.handle = 14;
    m->shm_attached.segment = 15;
    m->shm_attached.slot_count = 8;
    m->shm_attached.slot_size = 1u << 20;
    m->shm_attached.shm_name = b2s_wire_cstr("/b2s-main-812-3");
    break;
  case B2S_WIRE_FOLLOWING:
    m->following.start = 5;
    m->following.committed = 9;
    m->following.follow_id = 16;
    break;
  case B2S_WIRE_NOTIFY:
    m->notify.first = 9;
    m->notify.committed = 12;
    m->notify.follow_id = 17;
    m->notify.count = 3;
    break;
  case B2S_WIRE_CHUNK:
    m->flags = B2S_WIRE_CHUNK_PUSHED;
    m->chunk.index = 18;
    m->chunk.follow_id = 19;
    m->chunk.nbytes = 65536;
    m->chunk.cbytes = 1234;
    break;
  case B2S_WIRE_UNFOLLOWED:
    m->unfollowed.next = 20;
    m->unfollowed.follow_id = 21;
    break;
  case B2S_WIRE_STATS_REPLY: break;
  case B2S_WIRE_PONG:
    m->pong.nonce = 22;
    m->pong.time_ns = UINT64_C(1700000000123456789);
    break;
  case B2S_WIRE_ERROR:
    m->flags = B2S_WIRE_ERROR_CLOSED_REF;
    m->error.ref_index = 23;
    m->error.code = B2S_E_OVERSIZE;
    m->error.ref_id = 24;
    m->error.ref_type = B2S_WIRE_DATA;
    m->error.message = b2s_wire_cstr("buffer of 70 MB above the 64 MiB limit");
    break;
  default:
    fail_msg("no sample for type %#x", type);
  }
}

/* The string fields of a message, in wire order. */
static int strings_of(b2s_wire_msg *m, b2s_wire_str **out) {
  switch (m->type) {
  case B2S_WIRE_HELLO: out[0] = &m->hello.name; return 1;
  case B2S_WIRE_OPEN: out[0] = &m->open.stream; out[1] = &m->open.tmpl; return 2;
  case B2S_WIRE_FOLLOW: out[0] = &m->follow.target; return 1;
  case B2S_WIRE_READ: out[0] = &m->read.stream; return 1;
  case B2S_WIRE_STATS: out[0] = &m->stats.stream; return 1;
  case B2S_WIRE_WELCOME: out[0] = &m->welcome.server; return 1;
  case B2S_WIRE_SHM_ATTACHED: out[0] = &m->shm_attached.shm_name; return 1;
  case B2S_WIRE_ERROR: out[0] = &m->error.message; return 1;
  default: return 0;
  }
}

static size_t string_bytes(const b2s_wire_msg *cm) {
  b2s_wire_msg m = *cm;
  b2s_wire_str *s[2];
  size_t n = 0;
  for (int i = 0, k = strings_of(&m, s); i < k; i++)
    n += s[i]->len;
  return n;
}

/* Encode a sample, check it decodes; returns its length. */
static size_t sample_bytes(int type, uint8_t *buf) {
  b2s_wire_msg m, d;
  sample(type, &m);
  int n = encode(&m, buf);
  assert_true(n >= B2S_WIRE_PREFIX_LEN);
  assert_int_equal(b2s_wire_decode(buf, (size_t)n, &d), 0);
  return (size_t)n;
}

static int decode_patched(int type, size_t off, uint64_t v, size_t width) {
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg d;
  size_t n = sample_bytes(type, buf);
  assert_true(off + width <= n);
  put_le(buf + off, v, width);
  return b2s_wire_decode(buf, n, &d);
}

/* ---- golden bytes (PROTOCOL.md 9.1) ------------------------------------- */

static void expect_bytes(const b2s_wire_msg *m, const uint8_t *want,
                         size_t len) {
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  int n = encode(m, buf);
  assert_int_equal(n, (int)len);
  assert_memory_equal(buf, want, len);
}

static void test_golden_hello(void **state) {
  (void)state;
  static const uint8_t want[] = {
    0x42, 0x32, 0x53, 0x57, 0x01, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x92, 0x10, 0x00, 0x00, 0xe8, 0x03, 0x00, 0x00,
    0x04, 0x00, 0x63, 0x61, 0x6d, 0x30};
  b2s_wire_msg m, d;
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.flags = B2S_WIRE_HELLO_PRODUCER;
  m.tag = 1;
  m.hello.pid = 4242;
  m.hello.ping_ms = 1000;
  m.hello.name = b2s_wire_cstr("cam0");
  expect_bytes(&m, want, sizeof want);

  assert_int_equal(b2s_wire_decode(want, sizeof want, &d), 0);
  assert_int_equal(d.version, 1);
  assert_int_equal(d.type, B2S_WIRE_HELLO);
  assert_int_equal(d.flags, B2S_WIRE_HELLO_PRODUCER);
  assert_int_equal(d.tag, 1);
  assert_int_equal(d.hello.pid, 4242);
  assert_int_equal(d.hello.ping_ms, 1000);
  assert_int_equal(d.hello.name.len, 4);
  /* strings borrow from the input */
  assert_ptr_equal(d.hello.name.ptr, (const char *)want + 26);
}

static void test_golden_open(void **state) {
  (void)state;
  static const uint8_t want[] = {
    0x42, 0x32, 0x53, 0x57, 0x01, 0x02, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x64, 0x65, 0x74, 0x31, 0x04, 0x00,
    0x74, 0x6d, 0x70, 0x6c};
  b2s_wire_msg m, d;
  b2s_wire_init(&m, B2S_WIRE_OPEN);
  m.tag = 2;
  m.open.stream = b2s_wire_cstr("det1");
  m.open.tmpl = b2s_wire_cstr("tmpl");
  expect_bytes(&m, want, sizeof want);

  assert_int_equal(b2s_wire_decode(want, sizeof want, &d), 0);
  assert_int_equal(d.open.stream.len, 4);
  assert_memory_equal(d.open.stream.ptr, "det1", 4);
  assert_int_equal(d.open.tmpl.len, 4);
  assert_memory_equal(d.open.tmpl.ptr, "tmpl", 4);
}

static void test_golden_data(void **state) {
  (void)state;
  static const uint8_t want[] = {
    0x42, 0x32, 0x53, 0x57, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00};
  b2s_wire_msg m, d;
  b2s_wire_init(&m, B2S_WIRE_DATA);
  m.data.buffer_id = 7;
  m.data.handle = 1;
  expect_bytes(&m, want, sizeof want);
  assert_int_equal(b2s_wire_decode(want, sizeof want, &d), 0);
  assert_int_equal(d.data.buffer_id, 7);
  assert_int_equal(d.data.handle, 1);
  assert_true(b2s_wire_has_payload(d.type));
}

static void test_golden_ack(void **state) {
  (void)state;
  static const uint8_t want[] = {
    0x42, 0x32, 0x53, 0x57, 0x01, 0x83, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x03};
  b2s_wire_msg m, d;
  b2s_wire_init(&m, B2S_WIRE_ACK);
  m.ack.upto = 8;
  m.ack.handle = 1;
  m.ack.credits = 2;
  m.ack.level = B2S_WIRE_LEVEL_DURABLE;
  expect_bytes(&m, want, sizeof want);
  assert_int_equal(b2s_wire_decode(want, sizeof want, &d), 0);
  assert_int_equal(d.ack.upto, 8);
  assert_int_equal(d.ack.dropped, 0);
  assert_int_equal(d.ack.handle, 1);
  assert_int_equal(d.ack.credits, 2);
  assert_int_equal(d.ack.level, 3);
}

static void test_golden_error(void **state) {
  (void)state;
  static const uint8_t want[] = {
    0x42, 0x32, 0x53, 0x57, 0x01, 0x8e, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x45, 0xfc, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x02, 0x09, 0x00, 0x6e,
    0x6f, 0x20, 0x73, 0x74, 0x72, 0x65, 0x61, 0x6d};
  b2s_wire_msg m, d;
  assert_int_equal(B2S_E_NOSTREAM, -955);
  b2s_wire_init(&m, B2S_WIRE_ERROR);
  m.tag = 2;
  m.error.code = B2S_E_NOSTREAM;
  m.error.ref_type = B2S_WIRE_OPEN;
  m.error.message = b2s_wire_cstr("no stream");
  expect_bytes(&m, want, sizeof want);
  assert_int_equal(b2s_wire_decode(want, sizeof want, &d), 0);
  assert_int_equal(d.error.code, -955);
  assert_int_equal(d.error.ref_type, B2S_WIRE_OPEN);
  assert_int_equal(d.error.ref_id, 0);
  assert_int_equal(d.error.message.len, 9);
  assert_memory_equal(d.error.message.ptr, "no stream", 9);
}

/* ---- round trips -------------------------------------------------------- */

static void test_roundtrip_every_type(void **state) {
  (void)state;
  assert_int_equal(NTYPES, sizeof doc / sizeof doc[0]);
  for (size_t i = 0; i < NTYPES; i++) {
    int type = all_types[i];
    b2s_wire_msg m, d;
    uint8_t buf[B2S_WIRE_HEADER_MAX], again[B2S_WIRE_HEADER_MAX];
    sample(type, &m);
    int n = encode(&m, buf);
    assert_int_equal(doc[i].type, type);
    /* length as the document gives it */
    assert_int_equal(n, (int)(doc[i].fixed + string_bytes(&m)));
    assert_memory_equal(buf, "B2SW\x01", 5);
    assert_int_equal(buf[5], type);

    assert_int_equal(b2s_wire_decode(buf, (size_t)n, &d), 0);
    assert_int_equal(d.version, B2S_WIRE_VERSION);
    assert_int_equal(d.tag, 0x0A0B0C0Du);
    /* same strings (content), then the structs must match exactly: both
     * started zeroed, so padding compares equal */
    b2s_wire_str *sm[2], *sd[2];
    int k = strings_of(&m, sm);
    assert_int_equal(strings_of(&d, sd), k);
    for (int j = 0; j < k; j++) {
      assert_int_equal(sd[j]->len, sm[j]->len);
      if (sm[j]->len > 0) {
        assert_memory_equal(sd[j]->ptr, sm[j]->ptr, sm[j]->len);
        assert_true((const uint8_t *)sd[j]->ptr > buf &&
                    (const uint8_t *)sd[j]->ptr < buf + n);
      }
      /* rewrite both whole, padding included, so memcmp sees values */
      b2s_wire_str same;
      memset(&same, 0, sizeof same);
      same.ptr = sm[j]->ptr;
      same.len = sm[j]->len;
      memcpy(sm[j], &same, sizeof same);
      memcpy(sd[j], &same, sizeof same);
    }
    assert_memory_equal(&d, &m, sizeof m);

    assert_int_equal(encode(&d, again), n);
    assert_memory_equal(again, buf, (size_t)n);
  }
}

/* Every field lands at the offset of its PROTOCOL.md table. */
static void test_field_offsets(void **state) {
  (void)state;
  uint8_t b[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg m;

  sample(B2S_WIRE_SHM_SUBMIT, &m);
  assert_int_equal(encode(&m, b), 40);
  assert_int_equal(b[16], 99);                  /* buffer_id */
  assert_int_equal(b[24], 6);                   /* handle */
  assert_int_equal(b[28], 7);                   /* segment */
  assert_int_equal(b[32], 0);                   /* slot */
  assert_memory_equal(b + 36, "\x40\xe2\x01\x00", 4);   /* 123456 */

  sample(B2S_WIRE_WELCOME, &m);
  assert_int_equal(encode(&m, b), 32 + 15);
  assert_memory_equal(b + 16, "\x00\x00\x00\x04", 4);   /* 64 MiB */
  assert_memory_equal(b + 20, "\x98\x3a\x00\x00", 4);   /* 15000 */
  assert_int_equal(b[24], 77);
  assert_int_equal(b[28], 1);
  assert_int_equal(b[29], 3);
  assert_int_equal(b[30], 15);
  assert_memory_equal(b + 32, "b2streamd 0.1.0", 15);

  sample(B2S_WIRE_OPENED, &m);
  assert_int_equal(encode(&m, b), 30);
  assert_int_equal(b[16], 9);
  assert_int_equal(b[20], 32);
  assert_int_equal(b[27], 1);                   /* 1 << 24 */
  assert_int_equal(b[28], B2S_WIRE_LEVEL_WRITTEN);
  assert_int_equal(b[29], B2S_WIRE_POLICY_DROP_OLDEST);

  sample(B2S_WIRE_NOTIFY, &m);
  assert_int_equal(encode(&m, b), 40);
  assert_int_equal(b[16], 9);
  assert_int_equal(b[24], 12);
  assert_int_equal(b[32], 17);
  assert_int_equal(b[36], 3);

  sample(B2S_WIRE_CHUNK, &m);
  assert_int_equal(encode(&m, b), 36);
  assert_int_equal(b[6], B2S_WIRE_CHUNK_PUSHED);
  assert_int_equal(b[16], 18);
  assert_int_equal(b[24], 19);
  assert_memory_equal(b + 28, "\x00\x00\x01\x00", 4);   /* 65536 */
  assert_memory_equal(b + 32, "\xd2\x04\x00\x00", 4);   /* 1234 */

  sample(B2S_WIRE_READ, &m);
  assert_int_equal(encode(&m, b), 34);
  assert_memory_equal(b + 16, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
  assert_memory_equal(b + 24, "\x00\x00\x00\x00\x04\x00" "det1", 10);

  sample(B2S_WIRE_ERROR, &m);
  m.error.code = -2;                            /* an -errno */
  assert_int_equal(encode(&m, b), 35 + (int)m.error.message.len);
  assert_memory_equal(b + 24, "\xfe\xff\xff\xff", 4);
  assert_int_equal(b[28], 24);
  assert_int_equal(b[32], B2S_WIRE_DATA);
}

static void test_longest_header(void **state) {
  (void)state;
  static char text[B2S_WIRE_TEXT_MAX + 1];
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg m, d;
  memset(text, 'x', B2S_WIRE_TEXT_MAX);
  assert_int_equal(B2S_WIRE_HEADER_MAX, 1059);   /* PROTOCOL.md section 7 */

  sample(B2S_WIRE_ERROR, &m);
  m.error.message = b2s_wire_cstr(text);
  assert_int_equal(b2s_wire_encode(&m, buf, sizeof buf), B2S_WIRE_HEADER_MAX);
  assert_int_equal(b2s_wire_decode(buf, B2S_WIRE_HEADER_MAX, &d), 0);

  sample(B2S_WIRE_FOLLOW, &m);
  m.flags |= B2S_WIRE_FOLLOW_BY_PATH;
  m.follow.target = b2s_wire_cstr(text);
  int n = b2s_wire_encode(&m, buf, sizeof buf);
  assert_int_equal(n, 26 + B2S_WIRE_PATH_MAX);
  assert_int_equal(b2s_wire_decode(buf, (size_t)n, &d), 0);

  /* two full names */
  static char name[B2S_WIRE_NAME_MAX + 1];
  memset(name, 'n', B2S_WIRE_NAME_MAX);
  sample(B2S_WIRE_OPEN, &m);
  m.open.stream = m.open.tmpl = b2s_wire_cstr(name);
  assert_int_equal(encode(&m, buf), 20 + 2 * B2S_WIRE_NAME_MAX);
}

/* ---- rejections --------------------------------------------------------- */

static void test_reject_short_and_magic(void **state) {
  (void)state;
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg d;
  size_t n = sample_bytes(B2S_WIRE_PING, buf);
  for (size_t len = 0; len < B2S_WIRE_PREFIX_LEN; len++) {
    assert_int_equal(b2s_wire_decode(buf, len, &d), B2S_E_PROTO);
    assert_int_equal(d.type, 0);
  }
  assert_int_equal(b2s_wire_decode(NULL, 0, &d), B2S_E_PROTO);
  for (size_t i = 0; i < 4; i++) {
    buf[i] ^= 0x20;
    assert_int_equal(b2s_wire_decode(buf, n, &d), B2S_E_PROTO);
    assert_int_equal(d.type, 0);
    buf[i] ^= 0x20;
  }
  assert_int_equal(b2s_wire_decode(buf, n, &d), 0);
  assert_int_equal(b2s_wire_decode(buf, n, NULL), B2S_E_ARG);
}

static void test_reject_version(void **state) {
  (void)state;
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg d;
  size_t n = sample_bytes(B2S_WIRE_HELLO, buf);
  static const uint8_t versions[] = {0, 2, 0x7f, 0xff};
  for (size_t i = 0; i < sizeof versions; i++) {
    buf[4] = versions[i];
    assert_int_equal(b2s_wire_decode(buf, n, &d), B2S_E_PROTO_VERSION);
    /* the prefix is reported so the daemon can address its ERROR */
    assert_int_equal(d.version, versions[i]);
    assert_int_equal(d.type, B2S_WIRE_HELLO);
    assert_int_equal(d.tag, 0x0A0B0C0Du);
    /* version is judged before anything after the prefix */
    assert_int_equal(b2s_wire_decode(buf, B2S_WIRE_PREFIX_LEN, &d),
                     B2S_E_PROTO_VERSION);
  }
}

static void test_reject_unknown_type(void **state) {
  (void)state;
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg d;
  size_t n = sample_bytes(B2S_WIRE_BYE, buf);
  int known = 0;
  for (int t = 0; t < 256; t++) {
    buf[5] = (uint8_t)t;
    int rc = b2s_wire_decode(buf, n, &d);
    if (rc == 0) {
      known++;
      continue;
    }
    /* only types without fields decode from a bare prefix; every unknown
     * type fails, with its type reported */
    if (strcmp(b2s_wire_type_name(t), "UNKNOWN") == 0) {
      assert_int_equal(rc, B2S_E_PROTO);
      assert_int_equal(d.type, t);
    }
  }
  assert_int_equal(known, 2);                   /* BYE, STATS_REPLY */
  /* 0x0E and 0x8F are META and META_OK since version 2 (section 11): in
   * version 1 they stay unknown types */
  static const int unknown[] = {0x00, 0x0F, 0x7F, 0x80, 0x90, 0xFF};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    assert_string_equal(b2s_wire_type_name(unknown[i]), "UNKNOWN");
  for (int t = 0x0E; t <= 0x8F; t += 0x81) {
    buf[5] = (uint8_t)t;
    assert_int_equal(b2s_wire_decode(buf, n, &d), B2S_E_PROTO);
    assert_int_equal(d.type, t);
  }
}

static void test_reject_reserved_prefix(void **state) {
  (void)state;
  for (size_t off = 12; off < 16; off++)
    assert_int_equal(decode_patched(B2S_WIRE_DATA, off, 1, 1), B2S_E_PROTO);
}

static void test_reject_undefined_flags(void **state) {
  (void)state;
  for (size_t i = 0; i < NTYPES; i++)
    for (int bit = 0; bit < 16; bit++) {
      uint16_t f = (uint16_t)(1u << bit);
      if (doc[i].flags & f)
        continue;
      uint8_t buf[B2S_WIRE_HEADER_MAX];
      b2s_wire_msg d, m;
      size_t n = sample_bytes(doc[i].type, buf);
      buf[6] |= (uint8_t)f;
      buf[7] |= (uint8_t)(f >> 8);
      assert_int_equal(b2s_wire_decode(buf, n, &d), B2S_E_PROTO);
      sample(doc[i].type, &m);
      m.flags |= f;
      assert_int_equal(encode(&m, buf), B2S_E_ARG);
    }
}

static void test_reject_truncated_and_trailing(void **state) {
  (void)state;
  for (size_t i = 0; i < NTYPES; i++) {
    uint8_t buf[B2S_WIRE_HEADER_MAX + 1];
    b2s_wire_msg d;
    size_t n = sample_bytes(all_types[i], buf);
    for (size_t len = B2S_WIRE_PREFIX_LEN; len < n; len++)
      assert_int_equal(b2s_wire_decode(buf, len, &d), B2S_E_PROTO);
    buf[n] = 0;
    assert_int_equal(b2s_wire_decode(buf, n + 1, &d), B2S_E_PROTO);
  }
}

/* Build OPEN bytes by hand, bypassing the encoder's checks. */
static size_t raw_open(uint8_t *b, const char *s1, size_t n1, const char *s2,
                       size_t n2) {
  memcpy(b, "B2SW\x01\x02\0\0\0\0\0\0\0\0\0\0", 16);
  put_le(b + 16, n1, 2);
  memcpy(b + 18, s1, n1);
  put_le(b + 18 + n1, n2, 2);
  memcpy(b + 20 + n1, s2, n2);
  return 20 + n1 + n2;
}

static void test_reject_string_lengths(void **state) {
  (void)state;
  static uint8_t b[4096];
  static char big[2048];
  b2s_wire_msg d;
  memset(big, 'a', sizeof big);

  assert_int_equal(b2s_wire_decode(b, raw_open(b, big, 255, big, 255), &d), 0);
  assert_int_equal(b2s_wire_decode(b, raw_open(b, big, 256, "", 0), &d),
                   B2S_E_PROTO);
  assert_int_equal(b2s_wire_decode(b, raw_open(b, "s", 1, big, 256), &d),
                   B2S_E_PROTO);
  /* the stream name is required */
  assert_int_equal(b2s_wire_decode(b, raw_open(b, "", 0, "t", 1), &d),
                   B2S_E_PROTO);
  /* a length running past the end, and one leaving bytes over */
  size_t n = raw_open(b, "abc", 3, "de", 2);
  put_le(b + 21, 3, 2);
  assert_int_equal(b2s_wire_decode(b, n, &d), B2S_E_PROTO);
  put_le(b + 21, 1, 2);
  assert_int_equal(b2s_wire_decode(b, n, &d), B2S_E_PROTO);
  put_le(b + 21, 0xFFFF, 2);
  assert_int_equal(b2s_wire_decode(b, n, &d), B2S_E_PROTO);

  /* ERROR message: 1024 accepted, 1025 not */
  uint8_t e[B2S_WIRE_HEADER_MAX + 1];
  b2s_wire_msg m;
  sample(B2S_WIRE_ERROR, &m);
  m.error.message.ptr = big;
  m.error.message.len = B2S_WIRE_TEXT_MAX;
  int len = encode(&m, e);
  assert_int_equal(len, B2S_WIRE_HEADER_MAX);
  put_le(e + 33, B2S_WIRE_TEXT_MAX + 1, 2);
  e[len] = 'a';
  assert_int_equal(b2s_wire_decode(e, (size_t)len + 1, &d), B2S_E_PROTO);
  m.error.message.len = B2S_WIRE_TEXT_MAX + 1;
  assert_int_equal(encode(&m, e), B2S_E_ARG);

  /* FOLLOW target: a name up to 255, a path (by_path) up to 1024 */
  sample(B2S_WIRE_FOLLOW, &m);
  m.follow.target.ptr = big;
  m.follow.target.len = 256;
  assert_int_equal(encode(&m, e), B2S_E_ARG);
  m.flags |= B2S_WIRE_FOLLOW_BY_PATH;
  len = encode(&m, e);
  assert_int_equal(len, 26 + 256);
  assert_int_equal(b2s_wire_decode(e, (size_t)len, &d), 0);
  e[6] &= (uint8_t)~B2S_WIRE_FOLLOW_BY_PATH;    /* same bytes, no by_path */
  assert_int_equal(b2s_wire_decode(e, (size_t)len, &d), B2S_E_PROTO);
  m.follow.target.len = B2S_WIRE_PATH_MAX + 1;
  assert_int_equal(encode(&m, e), B2S_E_ARG);
  m.follow.target.len = 0;
  assert_int_equal(encode(&m, e), B2S_E_ARG);

  /* shm name required */
  sample(B2S_WIRE_SHM_ATTACHED, &m);
  m.shm_attached.shm_name.len = 0;
  assert_int_equal(encode(&m, e), B2S_E_ARG);
  m.shm_attached.shm_name = b2s_wire_cstr("/");
  assert_int_equal(encode(&m, e), 35);
  assert_int_equal(b2s_wire_decode(e, 35, &d), 0);
  put_le(e + 32, 0, 2);                         /* same frame, empty name */
  assert_int_equal(b2s_wire_decode(e, 34, &d), B2S_E_PROTO);
}

static void test_reject_bad_utf8(void **state) {
  (void)state;
  static const struct { const char *s; size_t n; bool ok; } cases[] = {
    {"plain", 5, true},
    {"\xc3\xa9", 2, true},                     /* U+00E9 */
    {"\xe2\x82\xac", 3, true},                 /* U+20AC */
    {"\xf0\x9d\x84\x9e", 4, true},             /* U+1D11E */
    {"\xf4\x8f\xbf\xbf", 4, true},             /* U+10FFFF */
    {"\xed\x9f\xbf", 3, true},                 /* U+D7FF */
    {"a\0b", 3, false},                        /* NUL */
    {"\x80", 1, false},                        /* lone continuation */
    {"\xc0\x80", 2, false},                    /* overlong NUL */
    {"\xc1\xbf", 2, false},                    /* overlong */
    {"\xe0\x9f\xbf", 3, false},                /* overlong */
    {"\xf0\x8f\xbf\xbf", 4, false},            /* overlong */
    {"\xed\xa0\x80", 3, false},                /* surrogate U+D800 */
    {"\xf4\x90\x80\x80", 4, false},            /* U+110000 */
    {"\xf5\x80\x80\x80", 4, false},            /* F5 lead */
    {"\xff", 1, false},
    {"\xe2\x82", 2, false},                    /* cut short */
    {"\xc3(", 2, false},                       /* bad continuation */
    {"\xe2\x28\xac", 3, false},
    {"\xf0\x9d\x84(", 4, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t b[64];
    b2s_wire_msg d, m;
    size_t n = raw_open(b, cases[i].s, cases[i].n, "", 0);
    int want = cases[i].ok ? 0 : B2S_E_PROTO;
    if (b2s_wire_decode(b, n, &d) != want)
      fail_msg("case %zu: decode gave the wrong verdict", i);
    b2s_wire_init(&m, B2S_WIRE_OPEN);
    m.open.stream.ptr = cases[i].s;
    m.open.stream.len = (uint16_t)cases[i].n;
    int rc = encode(&m, b);
    if (cases[i].ok ? rc != (int)n : rc != B2S_E_ARG)
      fail_msg("case %zu: encode gave %d", i, rc);
  }
}

static void test_reject_enums_and_ids(void **state) {
  (void)state;
  /* ACK level at 40 */
  assert_int_equal(decode_patched(B2S_WIRE_ACK, 40, 0, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_ACK, 40, 4, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_ACK, 40, 1, 1), 0);
  /* OPENED ack_level at 28, policy at 29 */
  assert_int_equal(decode_patched(B2S_WIRE_OPENED, 28, 0, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_OPENED, 28, 4, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_OPENED, 29, 0, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_OPENED, 29, 4, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_OPENED, 29, 1, 1), 0);
  /* DROPPED reason at 28: only the drop policies */
  assert_int_equal(decode_patched(B2S_WIRE_DROPPED, 28, 1, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_DROPPED, 28, 4, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_DROPPED, 28, 3, 1), 0);
  /* handles and follow ids are never 0 */
  assert_int_equal(decode_patched(B2S_WIRE_DATA, 24, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_FLUSH, 16, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_CLOSE, 16, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_SHM_SUBMIT, 28, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_SHM_SUBMIT, 36, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_SHM_ATTACH, 20, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_UNFOLLOW, 16, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_NOTIFY, 32, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_OPENED, 16, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_OPENED, 24, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_OPENED, 20, 0, 4), 0); /* credits */
  /* WELCOME: the range must contain version 1 */
  assert_int_equal(decode_patched(B2S_WIRE_WELCOME, 28, 0, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_WELCOME, 28, 2, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_WELCOME, 29, 0, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_WELCOME, 29, 1, 1), 0);
  /* ERROR: code negative, ref_type 0 or a client type */
  assert_int_equal(decode_patched(B2S_WIRE_ERROR, 24, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_ERROR, 24, 5, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_ERROR, 24, 0x7FFFFFFF, 4),
                   B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_ERROR, 24, 0x80000000u, 4), 0);
  assert_int_equal(decode_patched(B2S_WIRE_ERROR, 32, 0, 1), 0);
  assert_int_equal(decode_patched(B2S_WIRE_ERROR, 32, 0x0D, 1), 0);
  assert_int_equal(decode_patched(B2S_WIRE_ERROR, 32, 0x0E, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_ERROR, 32, 0x83, 1), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_ERROR, 32, 0xFF, 1), B2S_E_PROTO);
}

static void test_reject_cross_field_rules(void **state) {
  (void)state;
  uint8_t b[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg m;

  /* READ: by follow id or by name, exactly one */
  sample(B2S_WIRE_READ, &m);
  m.read.follow_id = 3;
  assert_int_equal(encode(&m, b), B2S_E_ARG);
  assert_int_equal(decode_patched(B2S_WIRE_READ, 24, 3, 4), B2S_E_PROTO);
  m.read.stream.len = 0;
  assert_int_equal(encode(&m, b), 30);
  m.read.follow_id = 0;
  assert_int_equal(encode(&m, b), B2S_E_ARG);

  /* FOLLOW: one push mode at most; from_end only with start 0 */
  sample(B2S_WIRE_FOLLOW, &m);
  m.flags |= B2S_WIRE_FOLLOW_PUSH_COMPRESSED;
  assert_int_equal(encode(&m, b), B2S_E_ARG);
  assert_int_equal(decode_patched(B2S_WIRE_FOLLOW, 6, 0x0C, 2), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_FOLLOW, 6, 0x07, 2), B2S_E_PROTO);
  sample(B2S_WIRE_FOLLOW, &m);
  m.flags |= B2S_WIRE_FOLLOW_FROM_END;
  assert_int_equal(encode(&m, b), B2S_E_ARG);
  m.follow.start = 0;
  assert_int_equal(encode(&m, b), 30);

  /* FOLLOWING: start <= committed */
  assert_int_equal(decode_patched(B2S_WIRE_FOLLOWING, 16, 10, 8), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_FOLLOWING, 16, 9, 8), 0);

  /* NOTIFY: count >= 1, first + count <= committed, without overflow */
  assert_int_equal(decode_patched(B2S_WIRE_NOTIFY, 36, 0, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_NOTIFY, 36, 4, 4), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_NOTIFY, 16, 10, 8), B2S_E_PROTO);
  assert_int_equal(decode_patched(B2S_WIRE_NOTIFY, 24, 11, 8), B2S_E_PROTO);
  sample(B2S_WIRE_NOTIFY, &m);
  m.notify.first = UINT64_MAX - 1;
  m.notify.committed = UINT64_MAX;
  m.notify.count = 2;                           /* wraps past UINT64_MAX */
  assert_int_equal(encode(&m, b), B2S_E_ARG);
  m.notify.count = 1;
  assert_int_equal(encode(&m, b), 40);

  /* CHUNK: a pushed chunk names its follow */
  assert_int_equal(decode_patched(B2S_WIRE_CHUNK, 24, 0, 4), B2S_E_PROTO);
  sample(B2S_WIRE_CHUNK, &m);
  m.flags = 0;
  m.chunk.follow_id = 0;                        /* READ by name */
  assert_int_equal(encode(&m, b), 36);
}

static void test_encode_errors(void **state) {
  (void)state;
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg m;

  b2s_wire_init(&m, 0x42);
  assert_int_equal(encode(&m, buf), B2S_E_ARG);
  assert_int_equal(b2s_wire_encode(NULL, buf, sizeof buf), B2S_E_ARG);

  /* too small: nothing written; exactly large enough: fine */
  sample(B2S_WIRE_OPEN, &m);
  int n = encode(&m, buf);
  memset(buf, 0xAA, sizeof buf);
  assert_int_equal(b2s_wire_encode(&m, buf, (size_t)n - 1), B2S_E_DEST_SMALL);
  for (size_t i = 0; i < sizeof buf; i++)
    assert_int_equal(buf[i], 0xAA);
  assert_int_equal(b2s_wire_encode(&m, NULL, 0), B2S_E_DEST_SMALL);
  assert_int_equal(b2s_wire_encode(&m, buf, (size_t)n), n);
  assert_int_equal(buf[n], 0xAA);

  /* a string with bytes missing */
  m.open.stream.ptr = NULL;
  assert_int_equal(encode(&m, buf), B2S_E_ARG);
  /* a string too long for any field */
  static char huge[70000];
  memset(huge, 'h', sizeof huge - 1);
  m.open.stream = b2s_wire_cstr(huge);
  assert_int_equal(m.open.stream.len, UINT16_MAX);
  assert_int_equal(encode(&m, buf), B2S_E_ARG);
  /* enum out of range */
  sample(B2S_WIRE_ACK, &m);
  m.ack.level = 0;
  assert_int_equal(encode(&m, buf), B2S_E_ARG);
  /* ERROR code must be negative */
  sample(B2S_WIRE_ERROR, &m);
  m.error.code = 0;
  assert_int_equal(encode(&m, buf), B2S_E_ARG);
  m.error.code = -28;                           /* -ENOSPC passes through */
  assert_true(encode(&m, buf) > 0);
  m.error.ref_type = B2S_WIRE_ACK;
  assert_int_equal(encode(&m, buf), B2S_E_ARG);

  /* the version field of the struct is ignored: encode speaks version 1 */
  sample(B2S_WIRE_PING, &m);
  m.version = 9;
  assert_int_equal(encode(&m, buf), 24);
  assert_int_equal(buf[4], 1);
}

/* ---- helpers of the API ------------------------------------------------- */

/* The one list against the codec: every listed type has its name, exists
 * from its version on (a header of an older version naming it is
 * refused) and round-trips. */
static void test_listed_types(void **state) {
  (void)state;
  for (size_t i = 0; i < NLISTED; i++) {
    const struct listed_type *t = &listed[i];
    assert_string_equal(b2s_wire_type_name(t->type), t->name);
    assert_true(t->since == 1 || t->since == 2);
    /* requests first, then the daemon's replies */
    assert_int_equal(t->type & B2S_WIRE_FROM_DAEMON ? 1 : 0, i >= NREQUESTS);
  }
  assert_int_equal(NTYPES + 2, NLISTED);   /* version 2 added META, META_OK */
}

static void test_type_names_and_payload(void **state) {
  (void)state;
  for (size_t i = 0; i < NTYPES; i++) {
    int t = doc[i].type;
    assert_string_equal(b2s_wire_type_name(t), doc[i].name);
    bool payload = t == B2S_WIRE_DATA || t == B2S_WIRE_CHUNK ||
                   t == B2S_WIRE_STATS_REPLY;
    assert_int_equal(b2s_wire_has_payload(t), payload);
    /* bit 7 marks exactly the daemon's messages (section 3) */
    assert_int_equal((t & B2S_WIRE_FROM_DAEMON) != 0, i >= 13);
  }
  assert_string_equal(b2s_wire_type_name(-1), "UNKNOWN");
  assert_string_equal(b2s_wire_type_name(0x1234), "UNKNOWN");
  assert_false(b2s_wire_has_payload(0));
  assert_false(b2s_wire_has_payload(0xFF));
}

static void test_check_payload(void **state) {
  (void)state;
  b2s_wire_msg m;
  sample(B2S_WIRE_DATA, &m);
  assert_int_equal(b2s_wire_check_payload(&m, 1, 100), 0);
  assert_int_equal(b2s_wire_check_payload(&m, 100, 100), 0);
  assert_int_equal(b2s_wire_check_payload(&m, 101, 100), B2S_E_OVERSIZE);
  assert_int_equal(b2s_wire_check_payload(&m, 0, 100), B2S_E_PROTO);

  sample(B2S_WIRE_STATS_REPLY, &m);
  assert_int_equal(b2s_wire_check_payload(&m, 2, 100), 0);
  assert_int_equal(b2s_wire_check_payload(&m, 0, 100), B2S_E_PROTO);

  sample(B2S_WIRE_CHUNK, &m);                  /* nbytes 65536, cbytes 1234 */
  assert_int_equal(b2s_wire_check_payload(&m, 1234, 1 << 20), 0);
  assert_int_equal(b2s_wire_check_payload(&m, 1233, 1 << 20), B2S_E_PROTO);
  assert_int_equal(b2s_wire_check_payload(&m, 65536, 1 << 20), B2S_E_PROTO);
  assert_int_equal(b2s_wire_check_payload(&m, 1234, 1000), B2S_E_OVERSIZE);
  m.flags |= B2S_WIRE_CHUNK_DECOMPRESSED;
  assert_int_equal(b2s_wire_check_payload(&m, 65536, 1 << 20), 0);
  assert_int_equal(b2s_wire_check_payload(&m, 1234, 1 << 20), B2S_E_PROTO);
  m.chunk.nbytes = 0;                           /* an empty chunk */
  assert_int_equal(b2s_wire_check_payload(&m, 0, 1 << 20), 0);

  for (size_t i = 0; i < NTYPES; i++) {
    if (b2s_wire_has_payload(all_types[i]))
      continue;
    sample(all_types[i], &m);
    assert_int_equal(b2s_wire_check_payload(&m, 0, 100), 0);
    assert_int_equal(b2s_wire_check_payload(&m, 1, 100), B2S_E_PROTO);
  }
  b2s_wire_init(&m, 0x42);
  assert_int_equal(b2s_wire_check_payload(&m, 0, 100), B2S_E_PROTO);
  assert_int_equal(b2s_wire_check_payload(NULL, 0, 100), B2S_E_PROTO);
}

static void test_utf8_cut(void **state) {
  (void)state;
  const char *s = "ab\xc3\xa9" "c\xf0\x9d\x84\x9e";  /* a b é c U+1D11E */
  size_t n = strlen(s);                               /* 9 */
  assert_int_equal(n, 9);
  assert_int_equal(b2s_wire_utf8_cut(s, n, 100), 9);
  assert_int_equal(b2s_wire_utf8_cut(s, n, 9), 9);
  assert_int_equal(b2s_wire_utf8_cut(s, n, 8), 5);   /* not inside U+1D11E */
  assert_int_equal(b2s_wire_utf8_cut(s, n, 6), 5);
  assert_int_equal(b2s_wire_utf8_cut(s, n, 5), 5);
  assert_int_equal(b2s_wire_utf8_cut(s, n, 4), 4);
  assert_int_equal(b2s_wire_utf8_cut(s, n, 3), 2);   /* not inside é */
  assert_int_equal(b2s_wire_utf8_cut(s, n, 0), 0);

  /* a cut message always encodes */
  static char text[1100];
  for (size_t i = 0; i + 2 <= sizeof text - 1; i += 2)
    memcpy(text + i, "\xc3\xa9", 2);
  b2s_wire_msg m;
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  sample(B2S_WIRE_ERROR, &m);
  m.error.message.ptr = text;
  m.error.message.len = (uint16_t)b2s_wire_utf8_cut(text, strlen(text) - 1,
                                                   B2S_WIRE_TEXT_MAX);
  assert_int_equal(m.error.message.len, B2S_WIRE_TEXT_MAX);
  assert_int_equal(encode(&m, buf), B2S_WIRE_HEADER_MAX);

  b2s_wire_str w = b2s_wire_cstr(NULL);
  assert_int_equal(w.len, 0);
  w = b2s_wire_cstr("xyz");
  assert_int_equal(w.len, 3);
}

/* ---- version 2 (PROTOCOL.md 2.4, 8.2) ----------------------------------- */

static int encode_v2(const b2s_wire_msg *m, uint8_t *buf) {
  return b2s_wire_encode_v(m, 2, buf, B2S_WIRE_HEADER_MAX);
}

static void expect_bytes_v2(const b2s_wire_msg *m, const uint8_t *want,
                            size_t len) {
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg d;
  assert_int_equal(encode_v2(m, buf), (int)len);
  assert_memory_equal(buf, want, len);
  assert_int_equal(b2s_wire_decode_v(want, len, 2, &d), 0);
  assert_int_equal(d.version, 2);
  assert_int_equal(d.type, m->type);
  assert_int_equal(d.flags, m->flags);
  /* a version-1 peer never takes it for one of its own */
  assert_int_equal(b2s_wire_decode(want, len, &d), B2S_E_PROTO_VERSION);
}

/* The version-2 record of PROTOCOL.md 9.3: frame 1007, ts, {"exp": 10}. */
static const uint8_t user_exp[] = {0x81, 0xa3, 0x65, 0x78, 0x70, 0x0a};

static b2s_wire_rec sample_rec(void) {
  b2s_wire_rec r = {0};
  r.frame = 1007;
  r.ts_ns = INT64_C(1700000000123456789);
  r.present = B2S_WIRE_REC_FRAME | B2S_WIRE_REC_TS | B2S_WIRE_REC_USER_MAP;
  r.user = user_exp;
  r.user_len = sizeof user_exp;
  return r;
}

static void test_v2_golden_session(void **state) {
  (void)state;
  static const uint8_t hello[] = {
    0x42, 0x32, 0x53, 0x57, 0x02, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x92, 0x10, 0x00, 0x00, 0xe8, 0x03, 0x00, 0x00,
    0x04, 0x00, 0x63, 0x61, 0x6d, 0x30};
  static const uint8_t welcome[] = {
    0x42, 0x32, 0x53, 0x57, 0x02, 0x81, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x01, 0x02, 0x0f, 0x00, 0x62, 0x32, 0x73, 0x74,
    0x72, 0x65, 0x61, 0x6d, 0x64, 0x20, 0x30, 0x2e, 0x32, 0x2e, 0x30};
  static const uint8_t open[] = {
    0x42, 0x32, 0x53, 0x57, 0x02, 0x02, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x64, 0x65, 0x74, 0x31, 0x04, 0x00,
    0x74, 0x6d, 0x70, 0x6c};
  static const uint8_t gain[] = {0x81, 0xa4, 0x67, 0x61, 0x69, 0x6e, 0xcb,
                                 0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
  b2s_wire_msg m, d;
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.flags = B2S_WIRE_HELLO_PRODUCER;
  m.tag = 1;
  m.hello.pid = 4242;
  m.hello.ping_ms = 1000;
  m.hello.name = b2s_wire_cstr("cam0");
  expect_bytes_v2(&m, hello, sizeof hello);
  /* the same HELLO in version 1 differs in the version byte only */
  uint8_t v1[sizeof hello];
  assert_int_equal(encode(&m, v1), (int)sizeof hello);
  assert_int_equal(v1[4], 1);
  assert_memory_equal(v1 + 5, hello + 5, sizeof hello - 5);

  b2s_wire_init(&m, B2S_WIRE_WELCOME);
  m.tag = 1;
  m.welcome.max_buffer = 1u << 20;
  m.welcome.session_id = 5;
  m.welcome.version_min = 1;
  m.welcome.version_max = 2;
  m.welcome.server = b2s_wire_cstr("b2streamd 0.2.0");
  expect_bytes_v2(&m, welcome, sizeof welcome);
  /* a version-2 WELCOME names a range holding 2; version 1 one holding 1 */
  m.welcome.version_max = 1;
  assert_int_equal(encode_v2(&m, v1), B2S_E_ARG);
  m.welcome.version_min = m.welcome.version_max = 2;
  assert_int_equal(encode(&m, v1), B2S_E_ARG);

  b2s_wire_init(&m, B2S_WIRE_OPEN);
  m.flags = B2S_WIRE_OPEN_META;
  m.tag = 2;
  m.open.stream = b2s_wire_cstr("det1");
  m.open.tmpl = b2s_wire_cstr("tmpl");
  expect_bytes_v2(&m, open, sizeof open);
  assert_int_equal(b2s_wire_decode_v(open, sizeof open, 2, &d), 0);
  assert_true(b2s_wire_msg_has_payload(&d));
  assert_int_equal(b2s_wire_msg_frames(&d), 2);
  assert_int_equal(b2s_wire_check_payload(&d, sizeof gain, SIZE_MAX), 0);
  assert_int_equal(b2s_wire_mp_map_check(gain, sizeof gain, true), 0);
  /* the flag does not exist in version 1 */
  assert_int_equal(encode(&m, v1), B2S_E_ARG);
}

static void test_v2_golden_data_record(void **state) {
  (void)state;
  static const uint8_t data[] = {
    0x42, 0x32, 0x53, 0x57, 0x02, 0x03, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00};
  static const uint8_t rec[] = {
    0xef, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x15, 0xcd, 0x85, 0x3d,
    0xfe, 0x9c, 0x97, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x0b, 0x00, 0x00, 0x00, 0x06, 0x00, 0x81, 0xa3, 0x65, 0x78, 0x70, 0x0a};
  b2s_wire_msg m, d;
  b2s_wire_init(&m, B2S_WIRE_DATA);
  m.flags = B2S_WIRE_DATA_RECORD;
  m.data.buffer_id = 7;
  m.data.handle = 1;
  expect_bytes_v2(&m, data, sizeof data);
  assert_int_equal(b2s_wire_decode_v(data, sizeof data, 2, &d), 0);
  assert_true(b2s_wire_msg_has_payload(&d));
  assert_true(b2s_wire_msg_has_record(&d));
  assert_int_equal(b2s_wire_msg_frames(&d), 3);

  b2s_wire_rec r = sample_rec(), q;
  uint8_t buf[B2S_WIRE_REC_MAX];
  assert_int_equal(b2s_wire_rec_len(&r), sizeof rec);
  assert_int_equal(b2s_wire_rec_encode(&r, buf, sizeof buf), (int)sizeof rec);
  assert_memory_equal(buf, rec, sizeof rec);
  assert_int_equal(b2s_wire_rec_decode(rec, sizeof rec, &q), (int)sizeof rec);
  assert_int_equal(q.frame, 1007);
  assert_true(q.ts_ns == INT64_C(1700000000123456789));
  assert_int_equal(q.xxh64, 0);
  assert_int_equal(q.present, r.present);
  assert_int_equal(q.flags, 0);
  assert_int_equal(q.user_len, sizeof user_exp);
  assert_ptr_equal(q.user, rec + B2S_WIRE_REC_FIXED);   /* borrowed */
  assert_int_equal(b2s_wire_rec_check_producer(&q), 0);
  /* one byte short of room */
  assert_int_equal(b2s_wire_rec_encode(&r, buf, sizeof rec - 1),
                   B2S_E_DEST_SMALL);
}

static void test_v2_golden_meta_notify(void **state) {
  (void)state;
  static const uint8_t meta[] = {
    0x42, 0x32, 0x53, 0x57, 0x02, 0x0e, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00};
  static const uint8_t change[] = {0x82, 0xa4, 0x67, 0x61, 0x69, 0x6e,
                                   0xc0, 0xa6, 0x73, 0x61, 0x6d, 0x70,
                                   0x6c, 0x65, 0xa3, 0x46, 0x65, 0x32};
  static const uint8_t meta_ok[] = {
    0x42, 0x32, 0x53, 0x57, 0x02, 0x8f, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00};
  static const uint8_t notify[] = {
    0x42, 0x32, 0x53, 0x57, 0x02, 0x89, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00};
  static const uint8_t stored[] = {
    0xef, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x15, 0xcd, 0x85, 0x3d,
    0xfe, 0x9c, 0x97, 0x17, 0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
    0x0f, 0x00, 0x00, 0x00, 0x06, 0x00, 0x81, 0xa3, 0x65, 0x78, 0x70, 0x0a};
  b2s_wire_msg m, d;
  b2s_wire_init(&m, B2S_WIRE_META);
  m.tag = 3;
  m.meta.handle = 1;
  expect_bytes_v2(&m, meta, sizeof meta);
  assert_int_equal(b2s_wire_decode_v(meta, sizeof meta, 2, &d), 0);
  assert_int_equal(b2s_wire_msg_frames(&d), 2);
  assert_int_equal(b2s_wire_check_payload(&d, sizeof change, SIZE_MAX), 0);
  assert_int_equal(b2s_wire_mp_map_check(change, sizeof change, true), 0);
  assert_string_equal(b2s_wire_type_name(B2S_WIRE_META), "META");
  assert_true(b2s_wire_has_payload(B2S_WIRE_META));

  b2s_wire_init(&m, B2S_WIRE_META_OK);
  m.tag = 3;
  m.meta_ok.upto = 8;
  m.meta_ok.handle = 1;
  expect_bytes_v2(&m, meta_ok, sizeof meta_ok);
  assert_string_equal(b2s_wire_type_name(B2S_WIRE_META_OK), "META_OK");

  b2s_wire_init(&m, B2S_WIRE_NOTIFY);
  m.flags = B2S_WIRE_NOTIFY_RECORDS;
  m.notify.first = 7;
  m.notify.committed = 8;
  m.notify.follow_id = 2;
  m.notify.count = 1;
  expect_bytes_v2(&m, notify, sizeof notify);
  assert_int_equal(b2s_wire_decode_v(notify, sizeof notify, 2, &d), 0);
  assert_int_equal(b2s_wire_msg_frames(&d), 2);
  assert_int_equal(b2s_wire_check_payload(&d, sizeof stored, SIZE_MAX), 0);

  b2s_wire_rec r = sample_rec(), q;
  r.xxh64 = UINT64_C(0x0123456789abcdef);
  r.present |= B2S_WIRE_REC_XXH64;
  uint8_t buf[B2S_WIRE_REC_MAX];
  assert_int_equal(b2s_wire_rec_encode(&r, buf, sizeof buf),
                   (int)sizeof stored);
  assert_memory_equal(buf, stored, sizeof stored);
  assert_int_equal(b2s_wire_rec_decode(stored, sizeof stored, &q),
                   (int)sizeof stored);
  assert_true(q.xxh64 == UINT64_C(0x0123456789abcdef));
  /* the daemon's fields: not for a producer to send */
  assert_int_equal(b2s_wire_rec_check_producer(&q), B2S_E_PROTO);
  q.present &= (uint16_t)~B2S_WIRE_REC_XXH64;
  q.flags = B2S_WIRE_REC_GAP;
  assert_int_equal(b2s_wire_rec_check_producer(&q), B2S_E_PROTO);
}

/* Every version-1 message is the same in both codec entry points, and a
 * version-2 session's messages differ from it only in the version byte. */
static void test_v2_keeps_v1(void **state) {
  (void)state;
  for (size_t i = 0; i < NTYPES; i++) {
    b2s_wire_msg m, d;
    uint8_t a[B2S_WIRE_HEADER_MAX], b[B2S_WIRE_HEADER_MAX];
    sample(all_types[i], &m);
    int n = encode(&m, a);
    assert_int_equal(b2s_wire_encode_v(&m, 1, b, sizeof b), n);
    assert_memory_equal(a, b, (size_t)n);
    assert_int_equal(b2s_wire_decode_v(a, (size_t)n, 2, &d), 0);
    assert_int_equal(d.version, 1);
    assert_int_equal(encode_v2(&m, b), n);
    assert_int_equal(b[4], 2);
    assert_memory_equal(a + 5, b + 5, (size_t)n - 5);
    /* frames, as in version 1 */
    assert_int_equal(b2s_wire_msg_frames(&d),
                     b2s_wire_has_payload(d.type) ? 2 : 1);
    assert_false(b2s_wire_msg_has_record(&d));
  }
  /* versions out of range */
  b2s_wire_msg m, d;
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  sample(B2S_WIRE_PING, &m);
  assert_int_equal(b2s_wire_encode_v(&m, 0, buf, sizeof buf), B2S_E_ARG);
  assert_int_equal(b2s_wire_encode_v(&m, 3, buf, sizeof buf), B2S_E_ARG);
  int n = encode_v2(&m, buf);
  assert_int_equal(b2s_wire_decode_v(buf, (size_t)n, 0, &d), B2S_E_ARG);
  assert_int_equal(b2s_wire_decode_v(buf, (size_t)n, 3, &d), B2S_E_ARG);
  assert_int_equal(b2s_wire_decode_v(buf, (size_t)n, 1, &d),
                   B2S_E_PROTO_VERSION);
  for (int v = 0; v < 256; v++) {
    buf[4] = (uint8_t)v;
    int rc = b2s_wire_decode_v(buf, (size_t)n, 2, &d);
    assert_int_equal(rc, v == 1 || v == 2 ? 0 : B2S_E_PROTO_VERSION);
    assert_int_equal(d.version, v);
  }
}

/* Version-2 types and flag bits are undefined in version 1, both ways; in
 * version 2 the flags still undefined are rejected. */
static void test_v2_flags_per_version(void **state) {
  (void)state;
  static const struct { int type; uint16_t v1, v2; } fl[] = {
    {B2S_WIRE_OPEN, 0, 0x0001},       {B2S_WIRE_DATA, 0, 0x0001},
    {B2S_WIRE_SHM_SUBMIT, 0, 0x0001}, {B2S_WIRE_FOLLOW, 0x000F, 0x001F},
    {B2S_WIRE_READ, 0x0001, 0x0003},  {B2S_WIRE_NOTIFY, 0, 0x0001},
    {B2S_WIRE_CHUNK, 0x0003, 0x0007},
  };
  for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++)
    for (int bit = 0; bit < 16; bit++) {
      uint16_t f = (uint16_t)(1u << bit);
      b2s_wire_msg m, d;
      uint8_t buf[B2S_WIRE_HEADER_MAX];
      sample(fl[i].type, &m);
      m.flags = 0;
      if (m.type == B2S_WIRE_FOLLOW)
        m.follow.start = 0;            /* from_end needs start 0 */
      int n = encode_v2(&m, buf);
      assert_true(n > 0);
      put_le(buf + 6, f, 2);
      bool v2 = (fl[i].v2 & f) != 0;
      assert_int_equal(b2s_wire_decode_v(buf, (size_t)n, 2, &d),
                       v2 ? 0 : B2S_E_PROTO);
      buf[4] = 1;
      assert_int_equal(b2s_wire_decode_v(buf, (size_t)n, 2, &d),
                       (fl[i].v1 & f) ? 0 : B2S_E_PROTO);
      m.flags = f;
      assert_int_equal(encode(&m, buf) > 0, (fl[i].v1 & f) != 0);
    }
  /* META, META_OK: no flags; no such types in version 1 */
  static const int types2[] = {B2S_WIRE_META, B2S_WIRE_META_OK};
  for (size_t i = 0; i < 2; i++) {
    b2s_wire_msg m, d;
    uint8_t buf[B2S_WIRE_HEADER_MAX];
    b2s_wire_init(&m, types2[i]);
    m.meta.handle = 4;                 /* both have the handle ... */
    m.meta_ok.handle = 4;              /* ... at their own offset */
    assert_int_equal(encode(&m, buf), B2S_E_ARG);
    int n = encode_v2(&m, buf);
    assert_true(n > 0);
    buf[4] = 1;
    assert_int_equal(b2s_wire_decode_v(buf, (size_t)n, 2, &d), B2S_E_PROTO);
    assert_int_equal(b2s_wire_decode(buf, (size_t)n, &d), B2S_E_PROTO);
    buf[4] = 2;
    put_le(buf + 6, 1, 2);
    assert_int_equal(b2s_wire_decode_v(buf, (size_t)n, 2, &d), B2S_E_PROTO);
    put_le(buf + 6, 0, 2);
    /* handle 0, a byte short, a byte more */
    put_le(buf + (types2[i] == B2S_WIRE_META ? 16 : 24), 0, 4);
    assert_int_equal(b2s_wire_decode_v(buf, (size_t)n, 2, &d), B2S_E_PROTO);
    put_le(buf + (types2[i] == B2S_WIRE_META ? 16 : 24), 4, 4);
    assert_int_equal(b2s_wire_decode_v(buf, (size_t)n - 1, 2, &d),
                     B2S_E_PROTO);
    assert_int_equal(b2s_wire_decode_v(buf, (size_t)n + 1, 2, &d),
                     B2S_E_PROTO);
    assert_int_equal(b2s_wire_decode_v(buf, (size_t)n, 2, &d), 0);
  }
  /* an ERROR about a META exists in version 2 only */
  b2s_wire_msg m;
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  sample(B2S_WIRE_ERROR, &m);
  m.error.ref_type = B2S_WIRE_META;
  assert_int_equal(encode(&m, buf), B2S_E_ARG);
  assert_true(encode_v2(&m, buf) > 0);
  m.error.ref_type = B2S_WIRE_META_OK;
  assert_int_equal(encode_v2(&m, buf), B2S_E_ARG);
}

static void test_v2_frames_and_payloads(void **state) {
  (void)state;
  b2s_wire_msg m;
  sample(B2S_WIRE_SHM_SUBMIT, &m);
  m.flags = B2S_WIRE_SHM_SUBMIT_RECORD;
  assert_false(b2s_wire_msg_has_payload(&m));
  assert_true(b2s_wire_msg_has_record(&m));
  assert_int_equal(b2s_wire_msg_frames(&m), 2);
  assert_int_equal(b2s_wire_check_payload(&m, 0, 100), 0);
  assert_int_equal(b2s_wire_check_payload(&m, 1, 100), B2S_E_PROTO);

  sample(B2S_WIRE_CHUNK, &m);
  m.flags |= B2S_WIRE_CHUNK_RECORD;
  assert_int_equal(b2s_wire_msg_frames(&m), 3);
  assert_int_equal(b2s_wire_check_payload(&m, 1234, SIZE_MAX), 0);

  sample(B2S_WIRE_FOLLOW, &m);
  m.flags |= B2S_WIRE_FOLLOW_RECORDS;       /* asks; carries nothing */
  assert_int_equal(b2s_wire_msg_frames(&m), 1);
  sample(B2S_WIRE_READ, &m);
  m.flags |= B2S_WIRE_READ_RECORD;
  assert_int_equal(b2s_wire_msg_frames(&m), 1);

  /* metadata payloads: 1..B2S_WIRE_META_MAX bytes, and the receiver's max */
  b2s_wire_init(&m, B2S_WIRE_META);
  m.meta.handle = 1;
  assert_int_equal(b2s_wire_check_payload(&m, 0, SIZE_MAX), B2S_E_PROTO);
  assert_int_equal(b2s_wire_check_payload(&m, 1, SIZE_MAX), 0);
  assert_int_equal(b2s_wire_check_payload(&m, B2S_WIRE_META_MAX, SIZE_MAX), 0);
  assert_int_equal(b2s_wire_check_payload(&m, B2S_WIRE_META_MAX + 1, SIZE_MAX),
                   B2S_E_PROTO);
  assert_int_equal(b2s_wire_check_payload(&m, 10, 9), B2S_E_OVERSIZE);
  sample(B2S_WIRE_OPEN, &m);
  assert_int_equal(b2s_wire_check_payload(&m, 1, SIZE_MAX), B2S_E_PROTO);
  m.flags = B2S_WIRE_OPEN_META;
  assert_int_equal(b2s_wire_check_payload(&m, 1, SIZE_MAX), 0);
  assert_int_equal(b2s_wire_check_payload(&m, 0, SIZE_MAX), B2S_E_PROTO);

  /* NOTIFY records: count of them, 30..4126 bytes each */
  sample(B2S_WIRE_NOTIFY, &m);
  m.flags = B2S_WIRE_NOTIFY_RECORDS;
  m.notify.count = 3;
  m.notify.committed = m.notify.first + 3;
  assert_int_equal(b2s_wire_check_payload(&m, 90, SIZE_MAX), 0);
  assert_int_equal(b2s_wire_check_payload(&m, 89, SIZE_MAX), B2S_E_PROTO);
  assert_int_equal(b2s_wire_check_payload(&m, 3 * B2S_WIRE_REC_MAX, SIZE_MAX),
                   0);
  assert_int_equal(b2s_wire_check_payload(&m, 3 * B2S_WIRE_REC_MAX + 1,
                                          SIZE_MAX), B2S_E_PROTO);
  m.flags = 0;
  assert_int_equal(b2s_wire_check_payload(&m, 90, SIZE_MAX), B2S_E_PROTO);
  /* at most 256 chunks per NOTIFY with records */
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  m.flags = B2S_WIRE_NOTIFY_RECORDS;
  m.notify.count = B2S_WIRE_NOTIFY_RECS_MAX;
  m.notify.committed = m.notify.first + m.notify.count;
  assert_true(encode_v2(&m, buf) > 0);
  m.notify.count++;
  m.notify.committed++;
  assert_int_equal(encode_v2(&m, buf), B2S_E_ARG);
  m.flags = 0;
  assert_true(encode_v2(&m, buf) > 0);
  assert_int_equal(b2s_wire_msg_frames(NULL), 1);
}

static void test_v2_record_rules(void **state) {
  (void)state;
  uint8_t buf[B2S_WIRE_REC_MAX + 8];
  b2s_wire_rec r = sample_rec(), q;
  int n = b2s_wire_rec_encode(&r, buf, sizeof buf);
  assert_int_equal(n, 36);
  /* every truncation fails; extra bytes are left for the caller (a NOTIFY
   * payload holds several records) */
  for (int k = 0; k < n; k++)
    assert_int_equal(b2s_wire_rec_decode(buf, (size_t)k, &q), B2S_E_PROTO);
  assert_int_equal(b2s_wire_rec_decode(buf, (size_t)n + 5, &q), n);
  assert_int_equal(b2s_wire_rec_decode(NULL, 40, &q), B2S_E_PROTO);
  assert_int_equal(b2s_wire_rec_decode(buf, 40, NULL), B2S_E_ARG);
  /* undefined present and flag bits */
  for (int bit = 0; bit < 16; bit++) {
    uint8_t x[64];
    memcpy(x, buf, (size_t)n);
    put_le(x + 24, r.present | (1u << bit), 2);
    int want = (1u << bit) & 0x0F ? 0 : B2S_E_PROTO;
    if ((1u << bit) == B2S_WIRE_REC_XXH64)
      want = n;                      /* xxh64 0 given: valid */
    else if (want == 0)
      want = n;                      /* already set */
    assert_int_equal(b2s_wire_rec_decode(x, (size_t)n, &q), want);
    memcpy(x, buf, (size_t)n);
    put_le(x + 26, 1u << bit, 2);
    assert_int_equal(b2s_wire_rec_decode(x, (size_t)n, &q),
                     (1u << bit) & 0x07 ? n : B2S_E_PROTO);
  }
  /* a value without its present bit */
  static const size_t field_off[] = {0, 8, 16};
  static const uint16_t field_bit[] = {B2S_WIRE_REC_FRAME, B2S_WIRE_REC_TS,
                                       B2S_WIRE_REC_XXH64};
  for (int i = 0; i < 3; i++) {
    uint8_t x[64];
    memcpy(x, buf, (size_t)n);
    put_le(x + 24, (r.present | B2S_WIRE_REC_XXH64) & ~field_bit[i], 2);
    put_le(x + field_off[i], 1, 8);
    assert_int_equal(b2s_wire_rec_decode(x, (size_t)n, &q), B2S_E_PROTO);
    b2s_wire_rec e = r;
    e.present = (uint16_t)(e.present & ~field_bit[i]);
    if (i == 2) e.xxh64 = 5;
    assert_int_equal(b2s_wire_rec_encode(&e, x, sizeof x), B2S_E_ARG);
  }
  /* user_len beyond the frame, beyond 4096 */
  put_le(buf + 28, 7, 2);
  assert_int_equal(b2s_wire_rec_decode(buf, (size_t)n, &q), B2S_E_PROTO);
  static uint8_t big[B2S_WIRE_REC_MAX + 1];
  b2s_wire_rec u = {0};
  u.user = big + B2S_WIRE_REC_FIXED;
  u.user_len = B2S_WIRE_USER_MAX;              /* raw bytes, the limit */
  assert_int_equal(b2s_wire_rec_encode(&u, big, sizeof big), B2S_WIRE_REC_MAX);
  assert_int_equal(b2s_wire_rec_decode(big, sizeof big, &q), B2S_WIRE_REC_MAX);
  put_le(big + 28, B2S_WIRE_USER_MAX + 1, 2);
  assert_int_equal(b2s_wire_rec_decode(big, sizeof big, &q), B2S_E_PROTO);
  u.user_len = B2S_WIRE_USER_MAX + 1;
  assert_int_equal(b2s_wire_rec_encode(&u, big, sizeof big), B2S_E_ARG);
  /* user_map needs one well-formed map; raw bytes need nothing */
  static const uint8_t not_map[] = {0x92, 0x01, 0x02};
  u.user = not_map;
  u.user_len = sizeof not_map;
  assert_int_equal(b2s_wire_rec_encode(&u, big, sizeof big), 33);
  u.present = B2S_WIRE_REC_USER_MAP;
  assert_int_equal(b2s_wire_rec_encode(&u, big, sizeof big), B2S_E_ARG);
  u.user_len = 0;
  assert_int_equal(b2s_wire_rec_encode(&u, big, sizeof big), B2S_E_ARG);
  u.present = 0;
  u.user = NULL;
  u.user_len = 1;
  assert_int_equal(b2s_wire_rec_encode(&u, big, sizeof big), B2S_E_ARG);
  /* an empty record: 30 zero bytes */
  memset(&u, 0, sizeof u);
  assert_int_equal(b2s_wire_rec_encode(&u, big, sizeof big), 30);
  for (int k = 0; k < 30; k++)
    assert_int_equal(big[k], 0);
  /* a negative timestamp survives */
  u.present = B2S_WIRE_REC_TS;
  u.ts_ns = -5;
  assert_int_equal(b2s_wire_rec_encode(&u, big, sizeof big), 30);
  assert_int_equal(b2s_wire_rec_decode(big, 30, &q), 30);
  assert_true(q.ts_ns == -5);
  assert_int_equal(b2s_wire_rec_check_producer(NULL), B2S_E_PROTO);
}

static void test_v2_msgpack_maps(void **state) {
  (void)state;
  static const struct { const char *hex; int want, want_str_keys; } cases[] = {
    {"80", 0, 0},                                 /* {} */
    {"81a16101", 0, 0},                           /* {"a": 1} */
    {"810102", 0, B2S_E_PROTO},                   /* {1: 2}: key not str */
    {"de0001a161c0", 0, 0},                       /* map16, nil */
    {"df00000001d9016100", 0, 0},                 /* map32, str8 key */
    {"81a161c2", 0, 0}, {"81a161c3", 0, 0},       /* bools */
    {"81a161cc01", 0, 0}, {"81a161cd0001", 0, 0},
    {"81a161ce00000001", 0, 0}, {"81a161cf0000000000000001", 0, 0},
    {"81a161d0ff", 0, 0}, {"81a161d1ffff", 0, 0},
    {"81a161d2ffffffff", 0, 0}, {"81a161d3ffffffffffffffff", 0, 0},
    {"81a161ca3f800000", 0, 0}, {"81a161cb3ff0000000000000", 0, 0},
    {"81a161e0", 0, 0},                           /* negative fixint */
    {"81a161c40201ff", 0, 0},                     /* bin8 */
    {"81a161c5000100", 0, 0}, {"81a161c60000000100", 0, 0},
    {"81a161d40100", 0, 0}, {"81a161d5010000", 0, 0},
    {"81a161d60100000000", 0, 0}, {"81a161d7010000000000000000", 0, 0},
    {"81a161d80100000000000000000000000000000000", 0, 0},
    {"81a161c7010100", 0, 0},                     /* ext8 */
    {"81a161c800010100", 0, 0}, {"81a161c9000000010100", 0, 0},
    {"81a161da0002c3a9", 0, 0},                   /* str16 "é" */
    {"81a161db00000000", 0, 0},                   /* str32 "" */
    {"81a16192a1629100", 0, 0},                   /* nested arrays */
    {"81a161dc000101", 0, 0}, {"81a161dd0000000101", 0, 0},
    {"81a16181a162a163", 0, 0},                   /* nested map */
    {"81a16100", 0, 0},                           /* str holds NUL: fine */
    /* not exactly one map */
    {"", B2S_E_PROTO, B2S_E_PROTO}, {"90", B2S_E_PROTO, B2S_E_PROTO},
    {"a161", B2S_E_PROTO, B2S_E_PROTO}, {"c0", B2S_E_PROTO, B2S_E_PROTO},
    {"8080", B2S_E_PROTO, B2S_E_PROTO},           /* trailing bytes */
    {"81a161", B2S_E_PROTO, B2S_E_PROTO},         /* value missing */
    {"82a16101", B2S_E_PROTO, B2S_E_PROTO},       /* entry missing */
    {"81a161c1", B2S_E_PROTO, B2S_E_PROTO},       /* 0xc1 never used */
    {"81a161a2ff", B2S_E_PROTO, B2S_E_PROTO},     /* truncated str */
    {"81a161a1ff", B2S_E_PROTO, B2S_E_PROTO},     /* invalid UTF-8 */
    {"81a2c0af01", B2S_E_PROTO, B2S_E_PROTO},     /* overlong key */
    {"81a161eda080", B2S_E_PROTO, B2S_E_PROTO},   /* not a fixstr 3 */
    {"81a163eda080", B2S_E_PROTO, B2S_E_PROTO},   /* surrogate */
    {"81a161cdff", B2S_E_PROTO, B2S_E_PROTO},     /* truncated uint16 */
    {"81a161c4ff00", B2S_E_PROTO, B2S_E_PROTO},   /* bin8 too long */
    {"81a161c6ffffffff", B2S_E_PROTO, B2S_E_PROTO},
    {"81a161dbffffffff", B2S_E_PROTO, B2S_E_PROTO},
    {"81a161ddffffffff", B2S_E_PROTO, B2S_E_PROTO},   /* huge counts */
    {"dfffffffff", B2S_E_PROTO, B2S_E_PROTO},
    {"81a161c9ffffffff01", B2S_E_PROTO, B2S_E_PROTO},
    {"81a161d801", B2S_E_PROTO, B2S_E_PROTO},     /* short fixext16 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t b[64];
    size_t n = strlen(cases[i].hex) / 2;
    for (size_t k = 0; k < n; k++) {
      unsigned v;
      sscanf(cases[i].hex + 2 * k, "%2x", &v);
      b[k] = (uint8_t)v;
    }
    if (b2s_wire_mp_map_check(b, n, false) != cases[i].want)
      fail_msg("case %zu (%s): %d", i, cases[i].hex,
               b2s_wire_mp_map_check(b, n, false));
    int ws = cases[i].want ? cases[i].want : cases[i].want_str_keys;
    if (b2s_wire_mp_map_check(b, n, true) != ws)
      fail_msg("case %zu (%s) with str keys", i, cases[i].hex);
  }
  assert_int_equal(b2s_wire_mp_map_check(NULL, 0, false), B2S_E_PROTO);
  /* nesting: 32 levels of arrays inside the map pass, 33 do not */
  static uint8_t deep[64];
  for (int depth = 31; depth <= 33; depth++) {
    size_t n = 0;
    deep[n++] = 0x81;
    deep[n++] = 0xa1;
    deep[n++] = 'a';
    for (int k = 1; k < depth; k++)
      deep[n++] = 0x91;
    deep[n++] = 0x90;
    assert_int_equal(b2s_wire_mp_map_check(deep, n, true),
                     depth <= 32 ? 0 : B2S_E_PROTO);
  }
}

/* A user map {"a": k nested arrays}, the innermost empty or holding nil. */
static size_t nested_map(uint8_t *b, int k, bool filled) {
  size_t n = 0;
  b[n++] = 0x81;
  b[n++] = 0xa1;
  b[n++] = 'a';
  for (int i = 0; i < k; i++)
    b[n++] = i == k - 1 && !filled ? 0x90 : 0x91;
  if (filled)
    b[n++] = 0xc0;
  return n;
}

/* What the wire accepts as a record's user map, the records frame stores
 * (b2s_record_encode, the writer's check) and reads back: the same
 * nesting rule on both sides, up to 32 containers inside the map. */
static void test_user_map_depth_agrees(void **state) {
  (void)state;
  uint8_t b[64];
  for (int k = 30; k <= 34; k++)
    for (int filled = 0; filled < 2; filled++) {
      size_t n = nested_map(b, k, filled);
      bool ok = k <= 32;
      assert_int_equal(b2s_wire_mp_map_check(b, n, true), ok ? 0 : B2S_E_PROTO);
      b2s_record r = {.user_kind = B2S_RECORD_USER_MAP, .user = b,
                      .user_len = (uint32_t)n};
      b2s_mpbuf m;
      b2s_mpbuf_init(&m);
      int rc = b2s_record_encode(&r, &m);
      if (rc != (ok ? 0 : B2S_E_RECORD_USER))
        fail_msg("%d arrays (innermost %s): encode %d", k,
                 filled ? "filled" : "empty", rc);
      if (ok) {
        b2s_record back;
        assert_int_equal(b2s_record_decode(m.data, m.len, &back), 0);
        assert_int_equal(back.user_len, n);
        assert_memory_equal(back.user, b, n);
      }
      b2s_mpbuf_fini(&m);
    }
}

/* ---- the error table of PROTOCOL.md 6.3 --------------------------------- */

static const struct { const char *name; int value; } codes[] = {
#define B2S_CODE_(name, value, msg) {#name, value},
  B2S_ERROR_LIST(B2S_CODE_)
#undef B2S_CODE_
};
#define NCODES (sizeof codes / sizeof codes[0])

static char *read_doc(void) {
  const char *path = getenv("B2S_PROTOCOL_MD");
  if (path == NULL)
    fail_msg("B2S_PROTOCOL_MD is not set (tests/meson.build sets it)");
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    fail_msg("cannot open %s", path);
  static char text[1 << 18];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  assert_true(n < sizeof text - 1);
  text[n] = '\0';
  return text;
}

static void test_error_table_matches(void **state) {
  (void)state;
  char *text = read_doc();
  int seen[NCODES] = {0};
  int rows = 0;
  for (char *line = strtok(text, "\n"); line != NULL;
       line = strtok(NULL, "\n")) {
    char name[64], msg[256];
    int value;
    if (sscanf(line, "| `%63[A-Z0-9_]` | %d | %255[^|]|", name, &value,
               msg) != 3)
      continue;
    rows++;
    size_t len = strlen(msg);
    while (len > 0 && msg[len - 1] == ' ')
      msg[--len] = '\0';
    size_t i = 0;
    while (i < NCODES && strcmp(codes[i].name, name) != 0)
      i++;
    if (i == NCODES)
      fail_msg("PROTOCOL.md lists %s, which b2s_errors.h does not have", name);
    if (codes[i].value != value)
      fail_msg("PROTOCOL.md gives %s = %d, b2s_errors.h %d: codes must "
               "never be renumbered", name, value, codes[i].value);
    if (strcmp(msg, b2s_strerror(value)) != 0)
      fail_msg("PROTOCOL.md message of %s is \"%s\", b2s_strerror says "
               "\"%s\"", name, msg, b2s_strerror(value));
    seen[i]++;
  }
  for (size_t i = 0; i < NCODES; i++)
    if (seen[i] != 1)
      fail_msg("%s (%d) is listed %d times in docs/PROTOCOL.md section 6.3; "
               "every code must be there once", codes[i].name,
               codes[i].value, seen[i]);
  assert_int_equal(rows, (int)NCODES);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_golden_hello),
    cmocka_unit_test(test_golden_open),
    cmocka_unit_test(test_golden_data),
    cmocka_unit_test(test_golden_ack),
    cmocka_unit_test(test_golden_error),
    cmocka_unit_test(test_roundtrip_every_type),
    cmocka_unit_test(test_field_offsets),
    cmocka_unit_test(test_longest_header),
    cmocka_unit_test(test_reject_short_and_magic),
    cmocka_unit_test(test_reject_version),
    cmocka_unit_test(test_reject_unknown_type),
    cmocka_unit_test(test_reject_reserved_prefix),
    cmocka_unit_test(test_reject_undefined_flags),
    cmocka_unit_test(test_reject_truncated_and_trailing),
    cmocka_unit_test(test_reject_string_lengths),
    cmocka_unit_test(test_reject_bad_utf8),
    cmocka_unit_test(test_reject_enums_and_ids),
    cmocka_unit_test(test_reject_cross_field_rules),
    cmocka_unit_test(test_encode_errors),
    cmocka_unit_test(test_listed_types),
      cmocka_unit_test(test_type_names_and_payload),
    cmocka_unit_test(test_check_payload),
    cmocka_unit_test(test_utf8_cut),
    cmocka_unit_test(test_v2_golden_session),
    cmocka_unit_test(test_v2_golden_data_record),
    cmocka_unit_test(test_v2_golden_meta_notify),
    cmocka_unit_test(test_v2_keeps_v1),
    cmocka_unit_test(test_v2_flags_per_version),
    cmocka_unit_test(test_v2_frames_and_payloads),
    cmocka_unit_test(test_v2_record_rules),
    cmocka_unit_test(test_v2_msgpack_maps),
    cmocka_unit_test(test_user_map_depth_agrees),
    cmocka_unit_test(test_error_table_matches),
  };
  return ts_run_tests(tests, setup_types, NULL);
}

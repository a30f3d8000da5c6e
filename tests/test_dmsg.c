/* The messages of distributed frames (proto/dmsg.c, b2s_dmsg.h): round
 * trips, the exact bytes, and everything decode must refuse. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "b2s_dmsg.h"
#include "b2s_errors.h"
#include "ts.h"

#define CAP (8 + B2S_DMSG_NAME_MAX + 16 + B2S_DMSG_REC_MAX)

static uint8_t rec_bytes[B2S_DMSG_REC_MAX + 1];

static b2s_dmsg written(const char *name, int64_t i, int32_t rank,
                        uint32_t rec_len) {
  return (b2s_dmsg){.type = B2S_DMSG_WRITTEN, .name = name,
                    .name_len = (uint16_t)strlen(name), .index = i,
                    .rank = rank, .rec = rec_bytes, .rec_len = rec_len};
}

static void same(const b2s_dmsg *a, const b2s_dmsg *b) {
  assert_int_equal(a->type, b->type);
  assert_int_equal(a->name_len, b->name_len);
  assert_memory_equal(a->name, b->name, a->name_len);
  assert_int_equal(a->index, b->index);
  if (a->type != B2S_DMSG_COMMITTED)
    assert_int_equal(a->rank, b->rank);
  if (a->type == B2S_DMSG_WRITTEN) {
    assert_int_equal(a->rec_len, b->rec_len);
    assert_memory_equal(a->rec, b->rec, a->rec_len);
  }
  if (a->type == B2S_DMSG_COMMITTED)
    assert_int_equal(a->closed, b->closed);
}

/* Encode m, decode it back, compare; returns the encoded length. */
static int round_trip(const b2s_dmsg *m, uint8_t *buf) {
  int n = b2s_dmsg_encode(m, buf, CAP);
  assert_true(n > 0);
  b2s_dmsg d;
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), 0);
  same(m, &d);
  /* decoded fields borrow from the buffer */
  assert_ptr_equal(d.name, (const char *)buf + 8);
  return n;
}

static void test_bytes(void **state) {
  (void)state;
  uint8_t buf[CAP];
  rec_bytes[0] = 0x82;
  rec_bytes[1] = 0x07;
  b2s_dmsg w = written("run-1", 0x0102030405LL, 3, 2);
  int n = b2s_dmsg_encode(&w, buf, sizeof buf);
  static const uint8_t want_w[] = {
      'B', '2', 'D', 'M', 1, 1, 5, 0, 'r', 'u', 'n', '-', '1',
      0x05, 0x04, 0x03, 0x02, 0x01, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0,
      0x82, 0x07};
  assert_int_equal(n, sizeof want_w);
  assert_memory_equal(buf, want_w, sizeof want_w);

  b2s_dmsg e = {.type = B2S_DMSG_END, .name = "a", .name_len = 1,
                .index = 258, .rank = 1023};
  static const uint8_t want_e[] = {'B', '2', 'D', 'M', 1, 2, 1, 0, 'a',
                                   2, 1, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0};
  assert_int_equal(b2s_dmsg_encode(&e, buf, sizeof buf), sizeof want_e);
  assert_memory_equal(buf, want_e, sizeof want_e);

  b2s_dmsg c = {.type = B2S_DMSG_COMMITTED, .name = "x.y", .name_len = 3,
                .index = 7, .closed = true};
  static const uint8_t want_c[] = {'B', '2', 'D', 'M', 1, 3, 3, 0, 'x', '.',
                                   'y', 7, 0, 0, 0, 0, 0, 0, 0, 1};
  assert_int_equal(b2s_dmsg_encode(&c, buf, sizeof buf), sizeof want_c);
  assert_memory_equal(buf, want_c, sizeof want_c);
}

static void test_round_trips(void **state) {
  (void)state;
  uint8_t buf[CAP];
  char longname[B2S_DMSG_NAME_MAX + 1];
  memset(longname, 'n', B2S_DMSG_NAME_MAX);
  longname[B2S_DMSG_NAME_MAX] = '\0';
  for (size_t i = 0; i < sizeof rec_bytes; i++)
    rec_bytes[i] = (uint8_t)(i * 7 + 1);
  const int64_t last = (INT64_C(1) << 62) - 1;
  b2s_dmsg w = written(longname, last, 0, B2S_DMSG_REC_MAX);
  assert_int_equal(round_trip(&w, buf), CAP);
  w = written("A_z-0.9", 0, 1023, 1);
  round_trip(&w, buf);
  b2s_dmsg e = {.type = B2S_DMSG_END, .name = "f", .name_len = 1, .index = 0,
                .rank = 5};
  round_trip(&e, buf);
  e.index = last;
  round_trip(&e, buf);
  b2s_dmsg c = {.type = B2S_DMSG_COMMITTED, .name = "f", .name_len = 1,
                .index = 12345, .closed = false};
  round_trip(&c, buf);
  c.closed = true;
  round_trip(&c, buf);
}

/* Every proper prefix of a valid message is refused, as is every extra
 * byte. */
static void test_truncation_and_trailing(void **state) {
  (void)state;
  uint8_t buf[CAP + 1];
  b2s_dmsg msgs[3] = {
      written("frame", 99, 2, 40),
      {.type = B2S_DMSG_END, .name = "frame", .name_len = 5, .index = 3,
       .rank = 1},
      {.type = B2S_DMSG_COMMITTED, .name = "frame", .name_len = 5,
       .index = 3, .closed = true},
  };
  for (int k = 0; k < 3; k++) {
    int n = b2s_dmsg_encode(&msgs[k], buf, CAP);
    assert_true(n > 0);
    b2s_dmsg d;
    for (int len = 0; len < n; len++)
      assert_int_equal(b2s_dmsg_decode(buf, (size_t)len, &d), B2S_E_PROTO);
    buf[n] = 0;
    assert_int_equal(b2s_dmsg_decode(buf, (size_t)n + 1, &d), B2S_E_PROTO);
    assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), 0);
  }
}

static void test_bad_header(void **state) {
  (void)state;
  uint8_t buf[CAP];
  b2s_dmsg w = written("frame", 1, 0, 4);
  int n = b2s_dmsg_encode(&w, buf, sizeof buf);
  b2s_dmsg d;
  for (int i = 0; i < 4; i++) {
    buf[i] ^= 0x20;
    assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), B2S_E_PROTO);
    buf[i] ^= 0x20;
  }
  static const uint8_t versions[] = {0, 2, 255};
  for (size_t i = 0; i < sizeof versions; i++) {
    buf[4] = versions[i];
    assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), B2S_E_PROTO_VERSION);
  }
  buf[4] = 1;
  static const uint8_t types[] = {0, 4, 0x81, 255};
  for (size_t i = 0; i < sizeof types; i++) {
    buf[5] = types[i];
    assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), B2S_E_PROTO);
  }
  buf[5] = B2S_DMSG_WRITTEN;
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), 0);
  /* a name length running past the end */
  buf[6] = 0xff;
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), B2S_E_PROTO);
  assert_int_equal(b2s_dmsg_decode(NULL, 0, &d), B2S_E_PROTO);
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, NULL), B2S_E_ARG);
}

/* An END message for `name` (any bytes) written by hand. */
static size_t raw_end(uint8_t *buf, const char *name, size_t len) {
  memcpy(buf, "B2DM\x01\x02", 6);
  buf[6] = (uint8_t)len;
  buf[7] = (uint8_t)(len >> 8);
  memcpy(buf + 8, name, len);
  memset(buf + 8 + len, 0, 12);
  return 8 + len + 12;
}

static void test_names(void **state) {
  (void)state;
  uint8_t buf[CAP];
  b2s_dmsg d;
  static const char *const bad[] = {"", ".hidden", "a/b", "..", "a b",
                                    "caf\xc3\xa9", "a:b", "a\\b", "new\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    b2s_dmsg e = {.type = B2S_DMSG_END, .name = bad[i],
                  .name_len = (uint16_t)strlen(bad[i]), .rank = 0};
    assert_int_equal(b2s_dmsg_encode(&e, buf, sizeof buf), B2S_E_ARG);
    size_t n = raw_end(buf, bad[i], e.name_len);
    assert_int_equal(b2s_dmsg_decode(buf, n, &d), B2S_E_PROTO);
  }
  size_t n = raw_end(buf, "good", 4);
  assert_int_equal(b2s_dmsg_decode(buf, n, &d), 0);
  assert_int_equal(d.type, B2S_DMSG_END);
  /* a NUL inside the name */
  b2s_dmsg e = {.type = B2S_DMSG_END, .name = "ab\0c", .name_len = 4};
  assert_int_equal(b2s_dmsg_encode(&e, buf, sizeof buf), B2S_E_ARG);
  char longname[B2S_DMSG_NAME_MAX + 2];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  e = (b2s_dmsg){.type = B2S_DMSG_END, .name = longname,
                 .name_len = B2S_DMSG_NAME_MAX + 1};
  assert_int_equal(b2s_dmsg_encode(&e, buf, sizeof buf), B2S_E_ARG);
  e.name_len = B2S_DMSG_NAME_MAX;
  assert_true(b2s_dmsg_encode(&e, buf, sizeof buf) > 0);
  n = raw_end(buf, longname, B2S_DMSG_NAME_MAX);
  assert_int_equal(b2s_dmsg_decode(buf, n, &d), 0);
  n = raw_end(buf, longname, B2S_DMSG_NAME_MAX + 1);
  assert_int_equal(b2s_dmsg_decode(buf, n, &d), B2S_E_PROTO);
}

static void test_values(void **state) {
  (void)state;
  uint8_t buf[CAP + 1];
  b2s_dmsg d;
  /* rec_len: 1..B2S_DMSG_REC_MAX */
  b2s_dmsg w = written("f", 0, 0, B2S_DMSG_REC_MAX + 1);
  assert_int_equal(b2s_dmsg_encode(&w, buf, sizeof buf), B2S_E_ARG);
  w.rec_len = 0;
  assert_int_equal(b2s_dmsg_encode(&w, buf, sizeof buf), B2S_E_ARG);
  w.rec_len = B2S_DMSG_REC_MAX;
  int n = b2s_dmsg_encode(&w, buf, sizeof buf);
  assert_true(n > 0);
  /* claim one byte more and supply it: still refused */
  buf[8 + 1 + 12] = (uint8_t)((B2S_DMSG_REC_MAX + 1) & 0xff);
  buf[8 + 1 + 13] = (uint8_t)((B2S_DMSG_REC_MAX + 1) >> 8);
  buf[n] = 0;
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n + 1, &d), B2S_E_PROTO);
  /* rec_len 0 by hand */
  w.rec_len = 1;
  n = b2s_dmsg_encode(&w, buf, sizeof buf);
  buf[8 + 1 + 12] = 0;
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n - 1, &d), B2S_E_PROTO);
  /* index < 2^62 */
  w = written("f", INT64_C(1) << 62, 0, 1);
  assert_int_equal(b2s_dmsg_encode(&w, buf, sizeof buf), B2S_E_ARG);
  w.index = -1;
  assert_int_equal(b2s_dmsg_encode(&w, buf, sizeof buf), B2S_E_ARG);
  w.index = 0;
  n = b2s_dmsg_encode(&w, buf, sizeof buf);
  buf[8 + 1 + 7] = 0x40;            /* index = 2^62 */
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), B2S_E_PROTO);
  buf[8 + 1 + 7] = 0x80;
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), B2S_E_PROTO);
  /* rank < 1024 */
  w = written("f", 0, 1024, 1);
  assert_int_equal(b2s_dmsg_encode(&w, buf, sizeof buf), B2S_E_ARG);
  w.rank = -1;
  assert_int_equal(b2s_dmsg_encode(&w, buf, sizeof buf), B2S_E_ARG);
  b2s_dmsg e = {.type = B2S_DMSG_END, .name = "f", .name_len = 1, .rank = 1};
  n = b2s_dmsg_encode(&e, buf, sizeof buf);
  buf[8 + 1 + 9] = 4;               /* rank = 1025 */
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), B2S_E_PROTO);
  buf[8 + 1 + 9] = 0;
  buf[8 + 1 + 11] = 0x80;           /* rank negative as int32 */
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), B2S_E_PROTO);
  /* closed is 0 or 1 */
  b2s_dmsg c = {.type = B2S_DMSG_COMMITTED, .name = "f", .name_len = 1};
  n = b2s_dmsg_encode(&c, buf, sizeof buf);
  buf[n - 1] = 2;
  assert_int_equal(b2s_dmsg_decode(buf, (size_t)n, &d), B2S_E_PROTO);
  /* unknown type on encode */
  c.type = 4;
  assert_int_equal(b2s_dmsg_encode(&c, buf, sizeof buf), B2S_E_ARG);
}

static void test_encode_space(void **state) {
  (void)state;
  uint8_t buf[CAP];
  b2s_dmsg w = written("frame", 5, 1, 30);
  int n = b2s_dmsg_encode(&w, buf, sizeof buf);
  assert_int_equal(n, 8 + 5 + 16 + 30);
  for (int cap = 0; cap < n; cap++)
    assert_int_equal(b2s_dmsg_encode(&w, buf, (size_t)cap), -ENOBUFS);
  assert_int_equal(b2s_dmsg_encode(&w, buf, (size_t)n), n);
  assert_int_equal(b2s_dmsg_encode(NULL, buf, sizeof buf), B2S_E_ARG);
  w.rec = NULL;
  assert_int_equal(b2s_dmsg_encode(&w, buf, sizeof buf), B2S_E_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bytes),
      cmocka_unit_test(test_round_trips),
      cmocka_unit_test(test_truncation_and_trailing),
      cmocka_unit_test(test_bad_header),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_encode_space),
  };
  return ts_run_tests(tests, NULL, NULL);
}

/* Acquisition metadata in core: msgpack values, series metadata (limits,
 * merge, durability), chunk records, the paired writer and its recovery
 * after a crash between the two commits. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cmocka.h>

#include "b2s_meta.h"
#include "ts.h"

static char tmpdir[256];

static void path_in(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", tmpdir, name);
}

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/b2s_meta_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return ts_rmtree(tmpdir);
}

/* ---- msgpack ----------------------------------------------------------------- */

static void test_mp_shortest_forms(void **state) {
  (void)state;
  b2s_mpbuf b;
  b2s_mpbuf_init(&b);
  assert_int_equal(b2s_mp_put_uint(&b, 5), 0);
  assert_int_equal(b2s_mp_put_uint(&b, 200), 0);
  assert_int_equal(b2s_mp_put_uint(&b, 70000), 0);
  assert_int_equal(b2s_mp_put_int(&b, -1), 0);
  assert_int_equal(b2s_mp_put_int(&b, -200), 0);
  assert_int_equal(b2s_mp_put_nil(&b), 0);
  assert_int_equal(b2s_mp_put_map(&b, 16), 0);
  assert_int_equal(b2s_mp_put_bin(&b, "ab", 2), 0);
  const uint8_t want[] = {0x05, 0xcc, 0xc8, 0xce, 0x00, 0x01, 0x11, 0x70,
                          0xff, 0xd1, 0xff, 0x38, 0xc0, 0xde, 0x00, 0x10,
                          0xc4, 0x02, 'a', 'b'};
  assert_int_equal(b.len, sizeof want);
  assert_memory_equal(b.data, want, sizeof want);
  b2s_mpbuf_fini(&b);
}

static void test_mp_roundtrip(void **state) {
  (void)state;
  char s40[40];
  memset(s40, 'x', sizeof s40);
  b2s_mpbuf b;
  b2s_mpbuf_init(&b);
  assert_int_equal(b2s_mp_put_array(&b, 9), 0);
  assert_int_equal(b2s_mp_put_uint(&b, UINT64_MAX), 0);
  assert_int_equal(b2s_mp_put_int(&b, INT64_MIN), 0);
  assert_int_equal(b2s_mp_put_float64(&b, 2.5), 0);
  assert_int_equal(b2s_mp_put_str(&b, s40, sizeof s40), 0);
  assert_int_equal(b2s_mp_write_bool(&b, true), 0);
  assert_int_equal(b2s_mp_put_nil(&b), 0);
  assert_int_equal(b2s_mp_put_bin(&b, "", 0), 0);
  assert_int_equal(b2s_mp_put_int(&b, -33), 0);
  assert_int_equal(b2s_mp_put_int(&b, 1234567), 0);
  b2s_mpreader r;
  b2s_mpval v;
  b2s_mpreader_init(&r, b.data, b.len);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_int_equal(v.type, B2S_MPT_ARRAY);
  assert_int_equal(v.n, 9);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_true(v.type == B2S_MPT_UINT && v.u == UINT64_MAX);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_true(v.type == B2S_MPT_INT && v.i == INT64_MIN);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_true(v.type == B2S_MPT_FLOAT && v.f == 2.5);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_true(v.type == B2S_MPT_STR && v.n == 40);
  assert_memory_equal(v.p, s40, 40);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_true(v.type == B2S_MPT_BOOL && v.b);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_int_equal(v.type, B2S_MPT_NIL);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_true(v.type == B2S_MPT_BIN && v.n == 0);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_true(v.type == B2S_MPT_INT && v.i == -33);
  assert_int_equal(b2s_mp_read_any(&r, &v), 0);
  assert_true(v.type == B2S_MPT_UINT && v.u == 1234567);
  assert_int_equal(b2s_mpreader_left(&r), 0);
  /* skip walks the same bytes in one call */
  b2s_mpreader_init(&r, b.data, b.len);
  assert_int_equal(b2s_mp_skip(&r, 4), 0);
  assert_int_equal(r.pos, b.len);
  b2s_mpbuf_fini(&b);
}

static void test_mp_hostile(void **state) {
  (void)state;
  b2s_mpreader r;
  b2s_mpval v;
  const uint8_t never[] = {0xc1};
  b2s_mpreader_init(&r, never, sizeof never);
  assert_int_equal(b2s_mp_read_any(&r, &v), B2S_E_MSGPACK);
  const uint8_t str8[] = {0xd9, 0x10, 'a'};
  b2s_mpreader_init(&r, str8, sizeof str8);
  assert_int_equal(b2s_mp_read_any(&r, &v), B2S_E_TRUNCATED);
  assert_int_equal(r.pos, 0);
  const uint8_t str32[] = {0xdb, 0xff, 0xff, 0xff, 0xff, 'a'};
  b2s_mpreader_init(&r, str32, sizeof str32);
  assert_int_equal(b2s_mp_read_any(&r, &v), B2S_E_TRUNCATED);
  const uint8_t u64[] = {0xcf, 1, 2, 3};
  b2s_mpreader_init(&r, u64, sizeof u64);
  assert_int_equal(b2s_mp_read_any(&r, &v), B2S_E_TRUNCATED);
  /* a huge count with few bytes fails at once */
  const uint8_t arr[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02};
  b2s_mpreader_init(&r, arr, sizeof arr);
  assert_int_equal(b2s_mp_skip(&r, 8), B2S_E_TRUNCATED);
  assert_int_equal(r.pos, 0);
  /* nesting deeper than allowed */
  uint8_t deep[100];
  memset(deep, 0x91, sizeof deep);
  deep[99] = 0xc0;
  b2s_mpreader_init(&r, deep, sizeof deep);
  assert_int_equal(b2s_mp_skip(&r, B2S_MP_MAX_DEPTH), B2S_E_MSGPACK);
  b2s_mpreader_init(&r, deep + 100 - 10, 10);
  assert_int_equal(b2s_mp_skip(&r, B2S_MP_MAX_DEPTH), 0);
  /* UTF-8 */
  assert_true(b2s_utf8_valid((const uint8_t *)"h\xc3\xa9", 3));
  assert_false(b2s_utf8_valid((const uint8_t *)"\xc0\xaf", 2));     /* overlong */
  assert_false(b2s_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3)); /* surrogate */
  assert_false(b2s_utf8_valid((const uint8_t *)"\xe2\x82", 2));     /* cut */
}

/* ---- series metadata ----------------------------------------------------------- */

/* {"a": 1, "b": "two"} */
static const uint8_t map_ab[] = {0x82, 0xa1, 'a', 0x01, 0xa1, 'b',
                                 0xa3, 't',  'w', 'o'};

static void test_series_check(void **state) {
  (void)state;
  assert_int_equal(b2s_series_check(map_ab, sizeof map_ab, false), 2);
  const uint8_t empty[] = {0x80};
  assert_int_equal(b2s_series_check(empty, 1, false), 0);
  const uint8_t notmap[] = {0x91, 0x01};
  assert_int_equal(b2s_series_check(notmap, 2, false), B2S_E_SERIES_FORMAT);
  const uint8_t intkey[] = {0x81, 0x01, 0x02};
  assert_int_equal(b2s_series_check(intkey, 3, false), B2S_E_SERIES_FORMAT);
  const uint8_t emptykey[] = {0x81, 0xa0, 0x02};
  assert_int_equal(b2s_series_check(emptykey, 3, false), B2S_E_SERIES_KEY);
  const uint8_t badutf[] = {0x81, 0xa1, 0xff, 0x02};
  assert_int_equal(b2s_series_check(badutf, 4, false), B2S_E_SERIES_KEY);
  const uint8_t dup[] = {0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02};
  assert_int_equal(b2s_series_check(dup, sizeof dup, false), B2S_E_SERIES_KEY);
  const uint8_t trailing[] = {0x81, 0xa1, 'a', 0x01, 0x00};
  assert_int_equal(b2s_series_check(trailing, sizeof trailing, false),
                   B2S_E_SERIES_FORMAT);
  const uint8_t nil[] = {0x81, 0xa1, 'a', 0xc0};
  assert_int_equal(b2s_series_check(nil, sizeof nil, false), B2S_E_SERIES_FORMAT);
  assert_int_equal(b2s_series_check(nil, sizeof nil, true), 1);
  const uint8_t cut[] = {0x82, 0xa1, 'a', 0x01};
  assert_int_equal(b2s_series_check(cut, sizeof cut, false), B2S_E_SERIES_FORMAT);
}

/* A map of one key of klen bytes with a bin value of vlen bytes. */
static void one_key(b2s_mpbuf *b, size_t klen, size_t vlen) {
  char key[128];
  memset(key, 'k', klen);
  uint8_t *val = calloc(1, vlen + 1);
  b->len = 0;
  assert_int_equal(b2s_mp_put_map(b, 1), 0);
  assert_int_equal(b2s_mp_put_str(b, key, klen), 0);
  assert_int_equal(b2s_mp_put_bin(b, val, vlen), 0);
  free(val);
}

static void test_series_limits(void **state) {
  (void)state;
  b2s_mpbuf b;
  b2s_mpbuf_init(&b);
  one_key(&b, 64, 10);
  assert_int_equal(b2s_series_check(b.data, b.len, false), 1);
  one_key(&b, 65, 10);
  assert_int_equal(b2s_series_check(b.data, b.len, false), B2S_E_SERIES_KEY);
  one_key(&b, 8, (64 << 10) - 3);          /* bin16 header: 3 bytes */
  assert_int_equal(b2s_series_check(b.data, b.len, false), 1);
  one_key(&b, 8, (64 << 10) - 2);
  assert_int_equal(b2s_series_check(b.data, b.len, false), B2S_E_SERIES_VALUE);
  /* five values of 60 KiB: each fits, together they do not */
  b.len = 0;
  uint8_t *val = calloc(1, 60 << 10);
  assert_int_equal(b2s_mp_put_map(&b, 5), 0);
  for (int k = 0; k < 5; k++) {
    char key[2] = {(char)('a' + k), 0};
    assert_int_equal(b2s_mp_put_str(&b, key, 1), 0);
    assert_int_equal(b2s_mp_put_bin(&b, val, 60 << 10), 0);
  }
  assert_int_equal(b2s_series_check(b.data, b.len, false), B2S_E_SERIES_SIZE);
  /* the same reached by merging one at a time */
  b2s_mpbuf acc;
  b2s_mpbuf_init(&acc);
  int rc = 0;
  for (int k = 0; k < 5 && rc == 0; k++) {
    b2s_mpbuf upd;
    b2s_mpbuf_init(&upd);
    char key[2] = {(char)('a' + k), 0};
    b2s_mp_put_map(&upd, 1);
    b2s_mp_put_str(&upd, key, 1);
    b2s_mp_put_bin(&upd, val, 60 << 10);
    rc = b2s_series_merge(acc.data, acc.len, upd.data, upd.len, &acc);
    b2s_mpbuf_fini(&upd);
  }
  assert_int_equal(rc, B2S_E_SERIES_SIZE);
  assert_int_equal(b2s_series_check(acc.data, acc.len, false), 4);
  free(val);
  b2s_mpbuf_fini(&acc);
  b2s_mpbuf_fini(&b);
}

static void test_series_merge(void **state) {
  (void)state;
  /* {"b": nil, "c": "x", "a": 7} over {"a": 1, "b": "two"} */
  const uint8_t upd[] = {0x83, 0xa1, 'b', 0xc0, 0xa1, 'c', 0xa1, 'x',
                         0xa1, 'a', 0x07};
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  assert_int_equal(b2s_series_merge(map_ab, sizeof map_ab, upd, sizeof upd, &out), 0);
  const uint8_t want[] = {0x82, 0xa1, 'a', 0x07, 0xa1, 'c', 0xa1, 'x'};
  assert_int_equal(out.len, sizeof want);
  assert_memory_equal(out.data, want, sizeof want);
  /* a bad update leaves out alone */
  const uint8_t bad[] = {0x81, 0x01, 0x01};
  assert_int_equal(b2s_series_merge(want, sizeof want, bad, sizeof bad, &out),
                   B2S_E_SERIES_FORMAT);
  assert_memory_equal(out.data, want, sizeof want);
  /* deleting everything gives the empty map */
  const uint8_t del[] = {0x82, 0xa1, 'a', 0xc0, 0xa1, 'c', 0xc0};
  assert_int_equal(b2s_series_merge(want, sizeof want, del, sizeof del, &out), 0);
  assert_int_equal(out.len, 1);
  assert_int_equal(out.data[0], 0x80);
  b2s_mpbuf_fini(&out);
}

static void series_of(const char *path, uint8_t **map, size_t *len) {
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_series_get(f, map, len), 0);
  b2s_frame_free(f);
}

static void test_series_durable(void **state) {
  (void)state;
  char path[300];
  path_in(path, sizeof path, "series.b2frame");
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  assert_int_equal(b2s_fwriter_series_set(w, map_ab, sizeof map_ab), 0);
  uint8_t *m;
  size_t n;
  series_of(path, &m, &n);                 /* not committed yet */
  assert_int_equal(n, 1);
  assert_int_equal(m[0], 0x80);
  free(m);
  assert_int_equal(b2s_fwriter_commit(w), 0);
  series_of(path, &m, &n);
  assert_int_equal(n, sizeof map_ab);
  assert_memory_equal(m, map_ab, n);
  free(m);
  assert_int_equal(b2s_fwriter_close(w), 0);
  /* reopen, merge, and the change survives another reopen */
  assert_int_equal(b2s_fwriter_open(path, &o, &w, NULL), 0);
  const uint8_t upd[] = {0x81, 0xa1, 'b', 0xc0};
  assert_int_equal(b2s_fwriter_series_merge(w, upd, sizeof upd), 0);
  assert_int_equal(b2s_fwriter_series_get(w, &m, &n), 0);
  const uint8_t want[] = {0x81, 0xa1, 'a', 0x01};
  assert_int_equal(n, sizeof want);
  assert_memory_equal(m, want, n);
  free(m);
  assert_int_equal(b2s_fwriter_series_merge(w, (const uint8_t[]){0x81, 0xa1, 'a', 0x01, 0x02}, 5),
                   B2S_E_SERIES_FORMAT);
  assert_int_equal(b2s_fwriter_close(w), 0);
  series_of(path, &m, &n);
  assert_int_equal(n, sizeof want);
  assert_memory_equal(m, want, n);
  free(m);
  /* deleting the last key removes the vlmetalayer */
  assert_int_equal(b2s_fwriter_open(path, &o, &w, NULL), 0);
  const uint8_t del[] = {0x81, 0xa1, 'a', 0xc0};
  assert_int_equal(b2s_fwriter_series_merge(w, del, sizeof del), 0);
  assert_int_equal(b2s_fwriter_close(w), 0);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_vlmetalayers(f)->n, 0);
  b2s_frame_free(f);
}

/* ---- records -------------------------------------------------------------------- */

static void test_record_roundtrip(void **state) {
  (void)state;
  const uint8_t user[] = {0x81, 0xa1, 'x', 0x05};
  b2s_record in = {.has_frame = true, .frame = 1ull << 40, .has_ts = true,
                   .ts = -5, .xxh64 = 0x0123456789abcdefull, .flags = 6,
                   .user_kind = B2S_RECORD_USER_MAP, .user = user,
                   .user_len = sizeof user};
  b2s_mpbuf b;
  b2s_mpbuf_init(&b);
  assert_int_equal(b2s_record_encode(&in, &b), 0);
  b2s_record out;
  assert_int_equal(b2s_record_decode(b.data, b.len, &out), 0);
  assert_true(out.has_frame && out.frame == in.frame);
  assert_true(out.has_ts && out.ts == -5);
  assert_true(out.xxh64 == in.xxh64);
  assert_int_equal(out.flags, 6);
  assert_int_equal(out.user_kind, B2S_RECORD_USER_MAP);
  assert_int_equal(out.user_len, sizeof user);
  assert_memory_equal(out.user, user, sizeof user);
  /* minimal: just xxh64 and flags, exact bytes */
  b.len = 0;
  b2s_record min = {.xxh64 = 1, .flags = 0};
  assert_int_equal(b2s_record_encode(&min, &b), 0);
  const uint8_t want[] = {0x82, 0xa5, 'x', 'x', 'h', '6', '4', 0x01,
                          0xa5, 'f', 'l', 'a', 'g', 's', 0x00};
  assert_int_equal(b.len, sizeof want);
  assert_memory_equal(b.data, want, sizeof want);
  assert_int_equal(b2s_record_decode(b.data, b.len, &out), 0);
  assert_false(out.has_frame || out.has_ts);
  assert_int_equal(out.user_kind, B2S_RECORD_USER_NONE);
  /* bin user part; too big a user part */
  b2s_record bin = {.user_kind = B2S_RECORD_USER_BIN, .user = user, .user_len = 3};
  b.len = 0;
  assert_int_equal(b2s_record_encode(&bin, &b), 0);
  assert_int_equal(b2s_record_decode(b.data, b.len, &out), 0);
  assert_int_equal(out.user_kind, B2S_RECORD_USER_BIN);
  assert_int_equal(out.user_len, 3);
  uint8_t *big = calloc(1, B2S_RECORD_USER_MAX + 1);
  bin.user = big;
  bin.user_len = B2S_RECORD_USER_MAX + 1;
  assert_int_equal(b2s_record_encode(&bin, &b), B2S_E_RECORD_USER);
  free(big);
  b2s_record notmap = {.user_kind = B2S_RECORD_USER_MAP, .user = user + 1,
                       .user_len = 2};
  assert_int_equal(b2s_record_encode(&notmap, &b), B2S_E_RECORD_USER);
  b2s_mpbuf_fini(&b);
}

static void test_record_hostile(void **state) {
  (void)state;
  b2s_record r;
  const uint8_t noflags[] = {0x81, 0xa5, 'x', 'x', 'h', '6', '4', 0x01};
  assert_int_equal(b2s_record_decode(noflags, sizeof noflags, &r), B2S_E_RECORD);
  const uint8_t twice[] = {0x83, 0xa5, 'x', 'x', 'h', '6', '4', 0x01,
                           0xa5, 'f', 'l', 'a', 'g', 's', 0x00,
                           0xa5, 'f', 'l', 'a', 'g', 's', 0x00};
  assert_int_equal(b2s_record_decode(twice, sizeof twice, &r), B2S_E_RECORD);
  const uint8_t negframe[] = {0x83, 0xa5, 'x', 'x', 'h', '6', '4', 0x01,
                              0xa5, 'f', 'l', 'a', 'g', 's', 0x00,
                              0xa5, 'f', 'r', 'a', 'm', 'e', 0xff};
  assert_int_equal(b2s_record_decode(negframe, sizeof negframe, &r), B2S_E_RECORD);
  /* unknown keys are skipped */
  const uint8_t extra[] = {0x83, 0xa5, 'x', 'x', 'h', '6', '4', 0x01,
                           0xa5, 'f', 'l', 'a', 'g', 's', 0x02,
                           0xa3, 'n', 'e', 'w', 0x92, 0x01, 0x02};
  assert_int_equal(b2s_record_decode(extra, sizeof extra, &r), 0);
  assert_int_equal(r.flags, 2);
  for (size_t n = 0; n < sizeof extra; n++)
    assert_int_equal(b2s_record_decode(extra, n, &r), B2S_E_RECORD);
}

static void test_records_path(void **state) {
  (void)state;
  char out[64];
  assert_int_equal(b2s_records_path("d/x.b2frame", out, sizeof out), 19);
  assert_string_equal(out, "d/x.records.b2frame");
  assert_true(b2s_records_path("d/x.b2frame/", out, sizeof out) > 0);
  assert_string_equal(out, "d/x.records.b2frame");
  assert_true(b2s_records_path("run", out, sizeof out) > 0);
  assert_string_equal(out, "run.records.b2frame");
  assert_int_equal(b2s_records_path("d/x.b2frame", out, 19), -ENAMETOOLONG);
}

/* ---- the paired writer ------------------------------------------------------------- */

static int make_chunk(int k, uint8_t *dst, int32_t cap) {
  uint32_t data[1000];
  for (int i = 0; i < 1000; i++)
    data[i] = (uint32_t)(i * (k + 1));
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  b2s_ctx *ctx = b2s_ctx_new();
  int rc = b2s_compress(ctx, &cp, data, sizeof data, dst, cap);
  b2s_ctx_free(ctx);
  return rc;
}

/* n chunks with frame numbers 100 + k and timestamps, one gap at `gap`. */
static void write_pair(const char *path, bool sparse, int n, int gap) {
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  b2s_pair *p;
  assert_int_equal(b2s_pair_create(path, sparse, &o, NULL, &p), 0);
  const uint8_t user[] = {0x81, 0xa1, 'e', 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
  for (int k = 0; k < n; k++) {
    b2s_record r = {.has_frame = true, .frame = 100 + (uint64_t)k,
                    .has_ts = true, .ts = 1700000000000000000 + k};
    if (k == 1)
      r.user_kind = B2S_RECORD_USER_MAP, r.user = user, r.user_len = sizeof user;
    int64_t got;
    if (k == gap) {
      got = b2s_pair_append_gap(p, 4000, B2S_RECORD_DROPPED, &r);
    } else {
      uint8_t chunk[4100];
      int cb = make_chunk(k, chunk, sizeof chunk);
      assert_true(cb > 0);
      got = b2s_pair_append(p, chunk, (size_t)cb, &r);
    }
    assert_int_equal(got, k + 1);
  }
  assert_int_equal(b2s_pair_commit(p), 0);
  assert_int_equal(b2s_pair_close(p), 0);
}

static void check_pair(const char *path, int n, int gap) {
  b2s_records *rs;
  b2s_frame *f;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_records_count(rs), n);
  assert_int_equal(b2s_frame_nchunks(f), n);
  for (int k = n - 1; k >= 0; k--) {       /* any order: O(1) by index */
    b2s_record r;
    assert_int_equal(b2s_records_get(rs, k, &r), 0);
    assert_true(r.has_frame && r.frame == 100 + (uint64_t)k);
    assert_true(r.has_ts && r.ts == 1700000000000000000 + k);
    uint8_t chunk[4200];
    int cb = b2s_frame_chunk_read(f, k, chunk, sizeof chunk);
    assert_true(cb > 0);
    assert_true(r.xxh64 == XXH64(chunk, (size_t)cb, 0));
    if (k == gap) {
      assert_int_equal(r.flags, B2S_RECORD_GAP | B2S_RECORD_DROPPED);
      assert_true(cb < 64);                /* a few bytes on disk */
      uint8_t out[4000];
      memset(out, 0xaa, sizeof out);
      assert_int_equal(b2s_frame_chunk_decompress(f, k, NULL, out, sizeof out), 4000);
      for (int i = 0; i < 4000; i++)
        assert_int_equal(out[i], 0);
    } else {
      assert_int_equal(r.flags, 0);
    }
    assert_int_equal(r.user_kind, k == 1 ? B2S_RECORD_USER_MAP : B2S_RECORD_USER_NONE);
  }
  b2s_record r;
  assert_int_equal(b2s_records_get(rs, n, &r), B2S_E_NCHUNK);
  /* the companion says what it is */
  uint8_t *c;
  int32_t len;
  assert_int_equal(b2s_frame_vlmeta_get(b2s_records_frame(rs), "b2stream", NULL, &c, &len), 0);
  assert_true(len > 10 && c[0] == 0x82);
  free(c);
  b2s_frame_free(f);
  b2s_records_free(rs);
}

static void test_pair_contiguous(void **state) {
  (void)state;
  char path[300];
  path_in(path, sizeof path, "pair.b2frame");
  write_pair(path, false, 7, 3);
  check_pair(path, 7, 3);
  char rpath[320];
  path_in(rpath, sizeof rpath, "pair.records.b2frame");
  struct stat st;
  assert_int_equal(stat(rpath, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  /* a second create refuses */
  b2s_pair *p;
  assert_int_equal(b2s_pair_create(path, false, NULL, NULL, &p), -EEXIST);
}

static void test_pair_sparse(void **state) {
  (void)state;
  char path[300], rpath[320];
  path_in(path, sizeof path, "sp.b2frame");
  write_pair(path, true, 5, 0);
  check_pair(path, 5, 0);
  path_in(rpath, sizeof rpath, "sp.records.b2frame");
  struct stat st;
  assert_int_equal(stat(rpath, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  /* reopen and append more: records follow */
  b2s_pair *p;
  assert_int_equal(b2s_pair_open(path, NULL, &p, NULL), 0);
  assert_int_equal(b2s_pair_nchunks(p), 5);
  b2s_record r = {.has_frame = true, .frame = 105, .has_ts = true,
                  .ts = 1700000000000000005};
  uint8_t chunk[4100];
  int cb = make_chunk(5, chunk, sizeof chunk);
  assert_int_equal(b2s_pair_append(p, chunk, (size_t)cb, &r), 6);
  assert_int_equal(b2s_pair_close(p), 0);
  check_pair(path, 6, 0);
}

static void test_pair_special_chunk(void **state) {
  (void)state;
  char path[300];
  path_in(path, sizeof path, "zeros.b2frame");
  b2s_pair *p;
  assert_int_equal(b2s_pair_create(path, false, NULL, NULL, &p), 0);
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  uint8_t z[64];
  int zb = b2s_chunk_zeros(&cp, 8000, z, sizeof z);
  assert_true(zb > 0);
  assert_int_equal(b2s_pair_append(p, z, (size_t)zb, NULL), 1);
  assert_int_equal(b2s_pair_append(p, z, (size_t)zb, NULL), 2);
  assert_int_equal(b2s_pair_close(p), 0);
  b2s_records *rs;
  b2s_frame *f;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  for (int k = 0; k < 2; k++) {
    b2s_record r;
    uint8_t chunk[64];
    assert_int_equal(b2s_records_get(rs, k, &r), 0);
    int cb = b2s_frame_chunk_read(f, k, chunk, sizeof chunk);
    assert_true(cb > 0);
    assert_true(r.xxh64 == XXH64(chunk, (size_t)cb, 0));
  }
  b2s_frame_free(f);
  b2s_records_free(rs);
}

/* A checksum given by the caller (the daemon's workers take it where they
 * compressed) is the one stored; a special chunk, stored as other bytes,
 * gets the checksum of those bytes instead. */
static void test_pair_append_hashed(void **state) {
  (void)state;
  char path[300];
  path_in(path, sizeof path, "hashed.b2frame");
  b2s_pair *p;
  assert_int_equal(b2s_pair_create(path, false, NULL, NULL, &p), 0);
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  uint8_t src[4000], chunk[4000 + B2S_MAX_OVERHEAD], z[64];
  for (size_t i = 0; i < sizeof src; i++)
    src[i] = (uint8_t)(i * 7 / 5);
  b2s_ctx *ctx = b2s_ctx_new();
  int cb = b2s_compress(ctx, &cp, src, sizeof src, chunk, sizeof chunk);
  b2s_ctx_free(ctx);
  assert_true(cb > 0);
  int zb = b2s_chunk_zeros(&cp, 8000, z, sizeof z);
  assert_true(zb > 0);
  uint64_t h = XXH64(chunk, (size_t)cb, 0);
  assert_int_equal(b2s_pair_append_hashed(p, chunk, (size_t)cb, NULL, h), 1);
  /* what the caller says is stored as said */
  assert_int_equal(b2s_pair_append_hashed(p, chunk, (size_t)cb, NULL, h ^ 1), 2);
  assert_int_equal(b2s_pair_append_hashed(p, z, (size_t)zb, NULL, 12345), 3);
  assert_int_equal(b2s_pair_close(p), 0);
  b2s_records *rs;
  b2s_frame *f;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  b2s_record r;
  assert_int_equal(b2s_records_get(rs, 0, &r), 0);
  assert_true(r.xxh64 == h);
  assert_int_equal(b2s_records_get(rs, 1, &r), 0);
  assert_true(r.xxh64 == (h ^ 1));
  assert_int_equal(b2s_records_get(rs, 2, &r), 0);
  uint8_t stored[64];
  int sb = b2s_frame_chunk_read(f, 2, stored, sizeof stored);
  assert_true(sb > 0);
  assert_true(r.xxh64 == XXH64(stored, (size_t)sb, 0));
  b2s_frame_free(f);
  b2s_records_free(rs);
}

static void test_pair_open_backfills(void **state) {
  (void)state;
  char path[300];
  path_in(path, sizeof path, "plain.b2frame");
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  uint8_t chunk[4100];
  for (int k = 0; k < 3; k++) {
    int cb = make_chunk(k, chunk, sizeof chunk);
    assert_true(b2s_fwriter_append(w, chunk, (size_t)cb) > 0);
  }
  assert_int_equal(b2s_fwriter_close(w), 0);
  b2s_pair *p;
  assert_int_equal(b2s_pair_open(path, &o, &p, NULL), 0);
  assert_int_equal(b2s_fwriter_nchunks(b2s_pair_records(p)), 3);
  b2s_pair_free(p);
  b2s_records *rs;
  b2s_frame *f;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_records_count(rs), 3);
  for (int k = 0; k < 3; k++) {
    b2s_record r;
    assert_int_equal(b2s_records_get(rs, k, &r), 0);
    int cb = b2s_frame_chunk_read(f, k, chunk, sizeof chunk);
    assert_true(r.xxh64 == XXH64(chunk, (size_t)cb, 0));
    assert_false(r.has_frame);
    assert_int_equal(r.flags, B2S_RECORD_NONE);
  }
  b2s_frame_free(f);
  b2s_records_free(rs);
}

/* ---- crash between the two commits ------------------------------------------------- */

static int64_t count_of(const char *path) {
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  int64_t n = b2s_frame_nchunks(f);
  b2s_frame_free(f);
  return n;
}

/* 3 chunks committed as a pair, then 2 more of which only one frame's
 * commit happens before the "crash" (free without commit). */
static void crash_after_one_commit(const char *path, bool sparse,
                                   bool records_first) {
  write_pair(path, sparse, 3, -1);
  b2s_pair *p;
  assert_int_equal(b2s_pair_open(path, NULL, &p, NULL), 0);
  uint8_t chunk[4100];
  for (int k = 3; k < 5; k++) {
    b2s_record r = {.has_frame = true, .frame = 100 + (uint64_t)k,
                    .has_ts = true, .ts = 1700000000000000000 + k};
    int cb = make_chunk(k, chunk, sizeof chunk);
    assert_int_equal(b2s_pair_append(p, chunk, (size_t)cb, &r), k + 1);
  }
  b2s_fwriter *first = records_first ? b2s_pair_records(p) : b2s_pair_data(p);
  assert_int_equal(b2s_fwriter_commit(first), 0);
  b2s_pair_free(p);
}

/* Chunks from..n-1 of the pair at path: data kept, each with a "no
 * record" record carrying its checksum. */
static void check_no_record(const char *path, int from, int n) {
  b2s_records *rs;
  b2s_frame *f;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_records_count(rs), n);
  assert_int_equal(b2s_frame_nchunks(f), n);
  for (int k = from; k < n; k++) {
    b2s_record r;
    assert_int_equal(b2s_records_get(rs, k, &r), 0);
    assert_int_equal(r.flags, B2S_RECORD_NONE);
    assert_false(r.has_frame);
    uint8_t chunk[4200], want[4200];
    int cb = b2s_frame_chunk_read(f, k, chunk, sizeof chunk);
    assert_true(cb > 0);
    assert_true(r.xxh64 == XXH64(chunk, (size_t)cb, 0));
    assert_int_equal(make_chunk(k, want, sizeof want), cb);
    assert_memory_equal(chunk, want, (size_t)cb);
  }
  b2s_frame_free(f);
  b2s_records_free(rs);
}

/* Records ahead are cut; data ahead is kept, with "no record" records. */
static void check_crash(const char *name, bool sparse, bool records_first) {
  char path[300], rpath[320];
  path_in(path, sizeof path, name);
  assert_true(b2s_records_path(path, rpath, sizeof rpath) > 0);
  crash_after_one_commit(path, sparse, records_first);
  assert_int_equal(count_of(path), records_first ? 3 : 5);
  assert_int_equal(count_of(rpath), records_first ? 5 : 3);
  b2s_pair_report rep;
  assert_int_equal(b2s_pair_recover(path, false, &rep, NULL), 0);
  assert_true(rep.has_records);
  assert_int_equal(rep.records_cut, records_first ? 2 : 0);
  assert_int_equal(rep.records_filled, records_first ? 0 : 2);
  int n = records_first ? 3 : 5;
  assert_int_equal(count_of(path), n);
  assert_int_equal(count_of(rpath), n);
  if (records_first)
    check_pair(path, 3, -1);
  else
    check_no_record(path, 3, 5);
  /* a second recovery finds nothing to do */
  assert_int_equal(b2s_pair_recover(path, false, &rep, NULL), 0);
  assert_int_equal(rep.records_cut + rep.records_filled, 0);
  /* and the pair appends on from there */
  b2s_pair *p;
  assert_int_equal(b2s_pair_open(path, NULL, &p, NULL), 0);
  uint8_t chunk[4100];
  b2s_record r = {.has_frame = true, .frame = 100 + (uint64_t)n,
                  .has_ts = true, .ts = 1700000000000000000 + n};
  int cb = make_chunk(n, chunk, sizeof chunk);
  assert_int_equal(b2s_pair_append(p, chunk, (size_t)cb, &r), n + 1);
  assert_int_equal(b2s_pair_close(p), 0);
  if (records_first) {
    check_pair(path, 4, -1);
  } else {
    assert_int_equal(count_of(path), 6);
    assert_int_equal(count_of(rpath), 6);
  }
}

static void test_crash_records_ahead(void **state) {
  (void)state;
  check_crash("ahead.b2frame", false, true);
  check_crash("ahead_sp.b2frame", true, true);
}

static void test_crash_data_ahead(void **state) {
  (void)state;
  check_crash("behind.b2frame", false, false);
  check_crash("behind_sp.b2frame", true, false);
}

static void test_open_aligns(void **state) {
  (void)state;
  char path[300], rpath[320];
  path_in(path, sizeof path, "openalign.b2frame");
  b2s_records_path(path, rpath, sizeof rpath);
  crash_after_one_commit(path, false, true);
  b2s_pair *p;
  assert_int_equal(b2s_pair_open(path, NULL, &p, NULL), 0);
  assert_int_equal(b2s_pair_nchunks(p), 3);
  assert_int_equal(b2s_fwriter_nchunks(b2s_pair_records(p)), 3);
  assert_int_equal(b2s_pair_close(p), 0);
  assert_int_equal(count_of(rpath), 3);
  /* data ahead: kept, with "no record" records */
  path_in(path, sizeof path, "openalign2.b2frame");
  crash_after_one_commit(path, false, false);
  assert_int_equal(b2s_pair_open(path, NULL, &p, NULL), 0);
  assert_int_equal(b2s_pair_nchunks(p), 5);
  assert_int_equal(b2s_fwriter_nchunks(b2s_pair_records(p)), 5);
  assert_int_equal(b2s_pair_close(p), 0);
  check_no_record(path, 3, 5);
}

static void test_recover_without_records(void **state) {
  (void)state;
  char path[300];
  path_in(path, sizeof path, "alone.b2frame");
  b2s_fwriter *w;
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  assert_int_equal(b2s_fwriter_close(w), 0);
  b2s_pair_report rep;
  assert_int_equal(b2s_pair_recover(path, false, &rep, NULL), 0);
  assert_false(rep.has_records);
  b2s_records *rs;
  assert_int_equal(b2s_records_open(path, &rs, NULL), -ENOENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_mp_shortest_forms),
    cmocka_unit_test(test_mp_roundtrip),
    cmocka_unit_test(test_mp_hostile),
    cmocka_unit_test(test_series_check),
    cmocka_unit_test(test_series_limits),
    cmocka_unit_test(test_series_merge),
    cmocka_unit_test(test_series_durable),
    cmocka_unit_test(test_record_roundtrip),
    cmocka_unit_test(test_record_hostile),
    cmocka_unit_test(test_records_path),
    cmocka_unit_test(test_pair_contiguous),
    cmocka_unit_test(test_pair_sparse),
    cmocka_unit_test(test_pair_special_chunk),
    cmocka_unit_test(test_pair_append_hashed),
    cmocka_unit_test(test_pair_open_backfills),
    cmocka_unit_test(test_crash_records_ahead),
    cmocka_unit_test(test_crash_data_ahead),
    cmocka_unit_test(test_open_aligns),
    cmocka_unit_test(test_recover_without_records),
  };
  return ts_run_tests(tests, setup, teardown);
}

/* Records for consumers (daemon/serving/recdeliver.c): stored records as record
 * frames, the records of a run of chunks read from a real records frame
 * (reopened when it knows too few), and the NOTIFY and CHUNK headers that
 * carry them, checked through the version-2 codec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "b2s_meta.h"
#include "b2s_chunk.h"
#include "b2s_frame_writer.h"
#include "recdeliver.h"
#include "b2s_wire.h"
#include "ts.h"

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/b2sd_recs_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return ts_rmtree(tmpdir);
}

static const uint8_t user_map[] = {0x81, 0xa1, 'e', 0x07};  /* {"e": 7} */

static void test_rec_to_wire(void **state) {
  (void)state;
  b2s_record rec = {.has_frame = true, .frame = 42, .has_ts = true,
                    .ts = -5, .xxh64 = 0x0123456789abcdefULL,
                    .flags = B2S_RECORD_GAP | B2S_RECORD_DROPPED,
                    .user_kind = B2S_RECORD_USER_MAP, .user = user_map,
                    .user_len = sizeof user_map};
  b2s_wire_rec w;
  b2sd_rec_to_wire(&rec, &w);
  assert_int_equal(w.present, B2S_WIRE_REC_FRAME | B2S_WIRE_REC_TS |
                                  B2S_WIRE_REC_XXH64 | B2S_WIRE_REC_USER_MAP);
  assert_int_equal(w.frame, 42);
  assert_int_equal(w.ts_ns, -5);
  assert_true(w.xxh64 == 0x0123456789abcdefULL);
  assert_int_equal(w.flags, B2S_WIRE_REC_GAP | B2S_WIRE_REC_DROPPED);
  assert_ptr_equal(w.user, user_map);
  assert_int_equal(w.user_len, sizeof user_map);
  /* bytes: no user_map bit; no frame, no ts: those fields stay 0 */
  b2s_record bin = {.xxh64 = 9, .user_kind = B2S_RECORD_USER_BIN,
                    .user = user_map, .user_len = 2};
  b2sd_rec_to_wire(&bin, &w);
  assert_int_equal(w.present, B2S_WIRE_REC_XXH64);
  assert_int_equal(w.frame, 0);
  assert_int_equal(w.ts_ns, 0);
  assert_int_equal(w.user_len, 2);
  uint8_t buf[B2S_WIRE_REC_MAX];
  assert_int_equal(b2s_wire_rec_encode(&w, buf, sizeof buf),
                   B2S_WIRE_REC_FIXED + 2);
}

static void test_notify_build(void **state) {
  (void)state;
  b2s_wire_msg m;
  assert_int_equal(b2sd_notify_build(&m, 3, 10, 1000, true), 256);
  assert_int_equal(m.type, B2S_WIRE_NOTIFY);
  assert_int_equal(m.flags, B2S_WIRE_NOTIFY_RECORDS);
  assert_int_equal(m.notify.first, 10);
  assert_int_equal(m.notify.count, 256);
  assert_int_equal(m.notify.committed, 1000);
  assert_int_equal(m.notify.follow_id, 3);
  assert_int_equal(b2s_wire_msg_frames(&m), 2);
  assert_int_equal(b2sd_notify_build(&m, 3, 10, 12, true), 2);
  /* without records: the whole range, no payload, as in version 1 */
  assert_int_equal(b2sd_notify_build(&m, 3, 10, 1000, false), 990);
  assert_int_equal(m.flags, 0);
  assert_int_equal(b2s_wire_msg_frames(&m), 1);
  assert_int_equal(b2sd_notify_build(&m, 1, 0, UINT64_C(1) << 40, false),
                   UINT32_MAX);
}

static void test_chunk_build(void **state) {
  (void)state;
  b2s_wire_msg m;
  b2sd_chunk_desc d = {.tag = 7, .follow_id = 2, .index = 5, .nbytes = 4000,
                       .cbytes = 100, .push = true, .record = true};
  b2sd_chunk_build(&m, &d);
  assert_int_equal(m.flags, B2S_WIRE_CHUNK_PUSHED | B2S_WIRE_CHUNK_RECORD);
  assert_int_equal(m.tag, 7);
  assert_int_equal(m.chunk.index, 5);
  assert_int_equal(b2s_wire_msg_frames(&m), 3);
  assert_true(b2s_wire_msg_has_record(&m));
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode_v(&m, 2, hdr, sizeof hdr);
  assert_true(n > 0);
  b2s_wire_msg back;
  assert_int_equal(b2s_wire_decode_v(hdr, (size_t)n, 2, &back), 0);
  assert_int_equal(back.version, 2);
  assert_int_equal(back.flags, m.flags);
  assert_int_equal(back.chunk.cbytes, 100);
  assert_int_equal(b2s_wire_check_payload(&back, 100, 1 << 20), 0);
  /* a READ reply, decompressed, without a record: version-1 frames */
  d = (b2sd_chunk_desc){.tag = 9, .index = 1, .nbytes = 8, .cbytes = 4,
                        .decompressed = true};
  b2sd_chunk_build(&m, &d);
  assert_int_equal(m.flags, B2S_WIRE_CHUNK_DECOMPRESSED);
  assert_int_equal(b2s_wire_msg_frames(&m), 2);
  assert_false(b2s_wire_msg_has_record(&m));
}

static int make_chunk(int k, uint8_t *dst, int32_t cap) {
  uint32_t data[1000];
  for (int i = 0; i < 1000; i++)
    data[i] = (uint32_t)(i * (k + 3));
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  b2s_ctx *ctx = b2s_ctx_new();
  int rc = b2s_compress(ctx, &cp, data, sizeof data, dst, cap);
  b2s_ctx_free(ctx);
  return rc;
}

/* Chunks from..to-1 with frame numbers 100 + k, committed. */
static void append_chunks(b2s_pair *p, int from, int to) {
  for (int k = from; k < to; k++) {
    b2s_record r = {.has_frame = true, .frame = 100 + (uint64_t)k,
                    .has_ts = true, .ts = 1700000000000000000 + k};
    if (k == 1)
      r.user_kind = B2S_RECORD_USER_MAP, r.user = user_map,
      r.user_len = sizeof user_map;
    uint8_t chunk[4200];
    int cb = make_chunk(k, chunk, sizeof chunk);
    assert_true(cb > 0);
    assert_int_equal(b2s_pair_append(p, chunk, (size_t)cb, &r), k + 1);
  }
  assert_int_equal(b2s_pair_commit(p), 0);
}

/* The record frames in buf hold chunks first.. of the frame at path. */
static void check_recs(const char *path, const uint8_t *buf, size_t len,
                       int first, int count) {
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  size_t at = 0;
  for (int k = first; k < first + count; k++) {
    b2s_wire_rec w;
    int n = b2s_wire_rec_decode(buf + at, len - at, &w);
    assert_true(n >= B2S_WIRE_REC_FIXED);
    at += (size_t)n;
    uint16_t want = B2S_WIRE_REC_FRAME | B2S_WIRE_REC_TS | B2S_WIRE_REC_XXH64;
    if (k == 1)
      want |= B2S_WIRE_REC_USER_MAP;
    assert_int_equal(w.present, want);
    assert_int_equal(w.frame, 100 + k);
    assert_true(w.ts_ns == 1700000000000000000 + k);
    assert_int_equal(w.flags, 0);
    assert_int_equal(w.user_len, k == 1 ? sizeof user_map : 0);
    if (k == 1)
      assert_memory_equal(w.user, user_map, sizeof user_map);
    uint8_t stored[4200];
    int cb = b2s_frame_chunk_read(f, k, stored, sizeof stored);
    assert_true(cb > 0);
    assert_true(w.xxh64 == b2s_chunk_xxh64(stored, (size_t)cb));
  }
  assert_int_equal(at, len);
  b2s_frame_free(f);
}

static void test_recs_encode(void **state) {
  (void)state;
  char path[300];
  snprintf(path, sizeof path, "%s/s.b2frame", tmpdir);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  b2s_pair *p;
  assert_int_equal(b2s_pair_create(path, false, &o, NULL, &p), 0);
  append_chunks(p, 0, 3);
  b2sd_recsrc src = {0};
  uint8_t *buf;
  size_t len;
  assert_int_equal(b2sd_recs_encode(&src, path, 1, 2, &buf, &len), 0);
  check_recs(path, buf, len, 1, 2);
  free(buf);
  /* more chunks committed: the handle knows 3 records and is reopened */
  append_chunks(p, 3, 5);
  assert_int_equal(b2sd_recs_encode(&src, path, 2, 3, &buf, &len), 0);
  assert_int_equal(b2s_records_count(src.rs), 5);
  check_recs(path, buf, len, 2, 3);
  free(buf);
  assert_int_equal(b2s_pair_close(p), 0);
  /* counts out of range */
  assert_int_equal(b2sd_recs_encode(&src, path, 0, 0, &buf, &len), B2S_E_ARG);
  assert_int_equal(b2sd_recs_encode(&src, path, 0, 257, &buf, &len),
                   B2S_E_ARG);
  assert_null(buf);
  b2sd_recsrc_close(&src);
}

/* A stream without records frame: records with present 0 and flags 0. */
static void test_recs_none(void **state) {
  (void)state;
  char path[300];
  snprintf(path, sizeof path, "%s/none.b2frame", tmpdir);
  b2sd_recsrc src = {0};
  uint8_t *buf;
  size_t len;
  assert_int_equal(b2sd_recs_encode(&src, path, 4, 3, &buf, &len), 0);
  assert_int_equal(len, 3 * B2S_WIRE_REC_FIXED);
  uint8_t zero[3 * B2S_WIRE_REC_FIXED] = {0};
  assert_memory_equal(buf, zero, len);
  free(buf);
  b2sd_recsrc_close(&src);
}

/* NOTIFY with the records read: header and payload pass the codec's
 * checks, the records walk by their user_len. */
static void test_notify_payload(void **state) {
  (void)state;
  char path[300];
  snprintf(path, sizeof path, "%s/n.b2frame", tmpdir);
  b2s_pair *p;
  assert_int_equal(b2s_pair_create(path, false, NULL, NULL, &p), 0);
  append_chunks(p, 0, 4);
  assert_int_equal(b2s_pair_close(p), 0);
  b2sd_recsrc src = {0};
  b2s_wire_msg m;
  uint32_t n = b2sd_notify_build(&m, 1, 0, 4, true);
  uint8_t *buf;
  size_t len;
  assert_int_equal(b2sd_recs_encode(&src, path, 0, n, &buf, &len), 0);
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int hn = b2s_wire_encode_v(&m, 2, hdr, sizeof hdr);
  b2s_wire_msg back;
  assert_int_equal(b2s_wire_decode_v(hdr, (size_t)hn, 2, &back), 0);
  assert_int_equal(back.notify.count, 4);
  assert_true(b2s_wire_msg_has_payload(&back));
  assert_int_equal(b2s_wire_check_payload(&back, len, 1 << 24), 0);
  check_recs(path, buf, len, 0, 4);
  free(buf);
  b2sd_recsrc_close(&src);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rec_to_wire),
      cmocka_unit_test(test_notify_build),
      cmocka_unit_test(test_chunk_build),
      cmocka_unit_test(test_recs_encode),
      cmocka_unit_test(test_recs_none),
      cmocka_unit_test(test_notify_payload),
  };
  return ts_run_tests(tests, setup, teardown);
}

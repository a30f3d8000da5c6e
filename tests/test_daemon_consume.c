/* Records delivered to consumers by the real daemon (docs/PROTOCOL.md
 * 4.4) through the client library, and the b2stream tool's options of
 * protocol version 2 (produce --meta/--frame-number/--timestamp, tail
 * --records).  Written for a daemon that negotiates version 2 in HELLO:
 * against one that speaks only version 1 every test skips, saying so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "b2s_meta.h"
#include "b2stream_client.h"
#include "daemon_harness.h"

#define NBUF 300                 /* more than one NOTIFY with records holds */
#define BUF_LEN 4000

static const uint8_t user_map[] = {0x81, 0xa1, 'e', 0x07};  /* {"e": 7} */

/* A session of version 2, or NULL after skipping the test (the env is
 * then down). */
static b2sc_session *connect_v2(env *e) {
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e->sock, "records", &s), 0);
  if (b2sc_protocol_version(s) >= 2)
    return s;
  fprintf(stderr, "skipped: the daemon answered WELCOME in protocol version "
                  "%d; records need version 2 (negotiated in HELLO)\n",
          b2sc_protocol_version(s));
  b2sc_close(s);
  env_down(e);
  return NULL;
}

static void fill(uint8_t *b, int i) {
  for (int k = 0; k < BUF_LEN; k++)
    b[k] = (uint8_t)((k / 16) * (i + 1));
}

/* NBUF buffers on stream w with frame numbers 1000 + i and timestamps,
 * buffer 1 with a user map, flushed. */
static void produce_recs(b2sc_session *s) {
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  uint8_t buf[BUF_LEN];
  for (int i = 0; i < NBUF; i++) {
    fill(buf, i);
    b2sc_record r = {.present = B2SC_REC_FRAME | B2SC_REC_TS,
                     .frame = 1000 + (uint64_t)i, .ts_ns = 5000 + i};
    if (i == 1)
      r.present |= B2SC_REC_USER_MAP, r.user = user_map,
      r.user_len = sizeof user_map;
    assert_int_equal(b2sc_send_rec(p, buf, sizeof buf, &r, WAIT_MS), 0);
  }
  assert_int_equal(b2sc_flush(p, WAIT_MS), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
}

static void check_rec(const b2sc_record *r, int i) {
  unsigned want = B2SC_REC_FRAME | B2SC_REC_TS | B2SC_REC_XXH64;
  if (i == 1)
    want |= B2SC_REC_USER_MAP;
  assert_int_equal(r->present, want);
  assert_int_equal(r->frame, 1000 + i);
  assert_int_equal(r->ts_ns, 5000 + i);
  assert_int_equal(r->flags, 0);
  assert_int_equal(r->user_len, i == 1 ? sizeof user_map : 0);
  if (i == 1)
    assert_memory_equal(r->user, user_map, sizeof user_map);
}

/* NOTIFY follows (runs of at most 256 records), pushed CHUNKs with their
 * record (checksum of the bytes received) and READ with the record agree
 * with what the producer sent. */
static void test_follow_read_records(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  b2sc_session *s = connect_v2(&e);
  if (!s)
    skip();
  produce_recs(s);
  static uint64_t sums[NBUF];
  b2sc_consumer *c;
  b2sc_chunk_info ci;
  b2sc_record r;
  assert_int_equal(b2sc_follow(s, "w", 0, B2SC_FOLLOW_RECORDS, &c), 0);
  for (int i = 0; i < NBUF; i++) {
    assert_int_equal(b2sc_next_rec(c, WAIT_MS, &ci, &r), 0);
    assert_int_equal(ci.index, i);
    check_rec(&r, i);
    sums[i] = r.xxh64;
  }
  assert_int_equal(b2sc_unfollow(c), 0);
  assert_int_equal(b2sc_follow(s, "w", 0, B2SC_FOLLOW_PUSH_COMPRESSED |
                                              B2SC_FOLLOW_RECORDS, &c), 0);
  for (int i = 0; i < NBUF; i++) {
    assert_int_equal(b2sc_next_rec(c, WAIT_MS, &ci, &r), 0);
    assert_int_equal(ci.index, i);
    check_rec(&r, i);
    assert_true(r.xxh64 == sums[i]);
    assert_true(b2s_chunk_xxh64(ci.data, ci.len) == r.xxh64);
  }
  static uint8_t chunk[BUF_LEN + 64];
  int n = b2sc_read_rec(c, 7, false, chunk, sizeof chunk, &r);
  assert_true(n > 0);
  check_rec(&r, 7);
  assert_true(b2s_chunk_xxh64(chunk, (size_t)n) == sums[7]);
  n = b2sc_read_rec(c, 1, true, chunk, sizeof chunk, &r);
  assert_int_equal(n, BUF_LEN);
  check_rec(&r, 1);
  assert_int_equal(b2sc_unfollow(c), 0);
  b2sc_close(s);
  env_down(&e);
}

/* Output of `b2stream ARGS...` (stdout and stderr) and its exit status. */
static int run_tool(char *out, size_t cap, const char *fmt, ...) {
  char args[2048], cmd[2600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", getenv("B2S_CLI"), args);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  size_t len = fread(out, 1, cap - 1, f);
  out[len] = '\0';
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* produce with metadata, frame numbers and timestamps; tail --records
 * prints them; info shows the series metadata. */
static void test_tool_records(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  b2sc_session *s = connect_v2(&e);
  if (!s)
    skip();
  b2sc_close(s);
  char in[400], out[8192], path[400];
  snprintf(in, sizeof in, "%s/in.bin", e.dir);
  FILE *f = fopen(in, "w");
  assert_non_null(f);
  for (int k = 0; k < 3000; k++)
    fputc(k % 7, f);
  fclose(f);
  assert_int_equal(run_tool(out, sizeof out, "produce --endpoint %s --stream "
                            "f --chunk-bytes 1000 --meta detector=eiger "
                            "--meta exposure=0.5 --meta frames=3 "
                            "--frame-number 7 --timestamp %s", e.sock, in),
                   0);
  assert_non_null(strstr(out, "3 buffers"));
  assert_int_equal(run_tool(out, sizeof out, "tail --endpoint %s --records "
                            "--from 0 --count 3 --idle %d f", e.sock,
                            WAIT_MS), 0);
  for (int k = 0; k < 3; k++) {
    char want[64];
    snprintf(want, sizeof want, "%d 1000 ", k);
    char *line = strstr(out, want);
    assert_non_null(line);
    char frame[32];
    snprintf(frame, sizeof frame, " frame=%d ts=", 7 + k);
    char *nl = strchr(line, '\n');
    assert_non_null(nl);
    *nl = '\0';
    assert_non_null(strstr(line, frame));
    assert_null(strstr(line, "ts=-"));
    assert_non_null(strstr(line, " xxh64="));
    assert_non_null(strstr(line, " flags=0"));
    *nl = '\n';
  }
  frame_path(&e, "f", path, sizeof path);
  assert_int_equal(run_tool(out, sizeof out, "info %s", path), 0);
  assert_non_null(strstr(out, "eiger"));
  assert_non_null(strstr(out, "exposure"));
  env_down(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_follow_read_records),
      cmocka_unit_test(test_tool_records),
  };
  return harness_run(tests);
}

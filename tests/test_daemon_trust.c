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

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "frame.h"
#include "wire.h"

#define LEN 4000

static const char *trust_config =
    "listen: [ipc://d.sock]\n"
    "run_dir: run\n"
    "data_dir: data\n"
    "workers: 2\n"
    "max_buffer: 1MiB\n"
    "log_level: debug\n"
    "streams:\n"
    "  w:\n"
    "    typesize: 4\n"
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
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  env_fini(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_user_map_max_depth_stored),
      cmocka_unit_test(test_file_size_limit_is_efbig),
  };
  return harness_run(tests);
}

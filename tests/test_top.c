/* The table of `b2stream top` (tools/cli_top.c): STATS JSON read into
 * rows, rates between samples, sorting, and the exact screen text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cli_top.h"
#include "ts.h"

static const char first[] =
    "{\"daemon\":{\"version\":\"0.1.0\",\"sessions\":2,\"memory_limit\":"
    "268435456,\"inflight_bytes\":1000000,\"shm_bytes\":500000},"
    "\"streams\":{\"b\":{\"buffers_in\":10,\"bytes_in\":4000000,"
    "\"bytes_out\":1000000,\"drops\":0,\"errors\":0,\"queue_depth\":3,"
    "\"committed\":9,\"failed\":0},\"a\":{\"buffers_in\":5,"
    "\"bytes_in\":500,\"bytes_out\":0,\"drops\":7,\"errors\":1,"
    "\"queue_depth\":0,\"committed\":0,\"failed\":-28}}}";
static const char second[] =
    "{\"daemon\":{\"version\":\"0.1.0\",\"sessions\":2,\"memory_limit\":"
    "268435456,\"inflight_bytes\":0,\"shm_bytes\":0},"
    "\"streams\":{\"b\":{\"buffers_in\":30,\"bytes_in\":12000000,"
    "\"bytes_out\":3000000,\"drops\":0,\"errors\":0,\"queue_depth\":1,"
    "\"committed\":29,\"failed\":0},\"a\":{\"buffers_in\":5,"
    "\"bytes_in\":500,\"bytes_out\":0,\"drops\":7,\"errors\":1,"
    "\"queue_depth\":0,\"committed\":0,\"failed\":-28}}}";

static void test_parse_rates_render(void **state) {
  (void)state;
  static cli_top_sample s0, s1;
  static char out[4096];
  assert_int_equal(cli_top_parse(first, strlen(first), &s0), 0);
  assert_int_equal(s0.nrows, 2);
  cli_top_rates(&s0, NULL, 0);
  cli_top_sort_rows(&s0, CLI_TOP_SORT_NAME);
  cli_top_render(&s0, CLI_TOP_SORT_NAME, 100, out, sizeof out);
  assert_string_equal(out,
    "b2streamd 0.1.0  sessions 2  memory 1.5 of 268 MB  streams 2  sorted by name\n"
    "STREAM               STATE        MB/s     IMG/s  RATIO  QUEUED     DROPS  ERRORS  COMMITTED\n"
    "a                    FAILED          -         -      -       0         7       1          0\n"
    "b                    ok              -         -   4.00       3         0       0          9\n"
    "keys: n name  r rate  u queue  d drops  q quit\n");
  assert_int_equal(cli_top_parse(second, strlen(second), &s1), 0);
  cli_top_rates(&s1, &s0, 2.0);      /* b: 8 MB and 20 buffers in 2 s */
  cli_top_sort_rows(&s1, CLI_TOP_SORT_RATE);
  cli_top_render(&s1, CLI_TOP_SORT_RATE, 1, out, sizeof out);
  assert_string_equal(out,
    "b2streamd 0.1.0  sessions 2  memory 0.0 of 268 MB  streams 2  sorted by rate\n"
    "STREAM               STATE        MB/s     IMG/s  RATIO  QUEUED     DROPS  ERRORS  COMMITTED\n"
    "b                    ok           4.00      10.0   4.00       1         0       0         29\n"
    "keys: n name  r rate  u queue  d drops  q quit\n");
  cli_top_sort_rows(&s1, CLI_TOP_SORT_DROPS);
  assert_string_equal(s1.rows[0].name, "a");
  cli_top_sort_rows(&s1, CLI_TOP_SORT_QUEUE);
  assert_string_equal(s1.rows[0].name, "b");
}

static void test_not_stats(void **state) {
  (void)state;
  static cli_top_sample s;
  const char *bad[] = {"", "[]", "{\"daemon\":{}}", "{\"streams\":{}}",
                       "{\"daemon\":1,\"streams\":{}}", "{\"daemon\":{},"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(cli_top_parse(bad[i], strlen(bad[i]), &s), -1);
  /* a tiny buffer still gets a terminated, truncated screen */
  assert_int_equal(cli_top_parse("{\"daemon\":{},\"streams\":{}}", 26, &s), 0);
  char out[10];
  cli_top_render(&s, CLI_TOP_SORT_NAME, 10, out, sizeof out);
  assert_int_equal(strlen(out), 9);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_rates_render),
      cmocka_unit_test(test_not_stats),
  };
  return ts_run_tests(tests, NULL, NULL);
}

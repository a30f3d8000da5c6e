/* Codec and filter names and the size syntax of b2s_names.h, which the
 * configuration, the b2stream tool and the benchmarks all go through. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "b2s_errors.h"
#include "b2s_names.h"
#include "ts.h"

#define KI INT64_C(1024)

/* ---- names ---------------------------------------------------------------- */

/* Error codes are wire ABI with their values written out: they run
 * consecutively from -999, each has its own message, and anything else
 * negative is read as -errno. */
static void test_error_values(void **state) {
  (void)state;
  static const struct { int value; const char *msg; } list[] = {
#define B2S_ERR_ROW_(name, value, msg) {value, msg},
      B2S_ERROR_LIST(B2S_ERR_ROW_)
#undef B2S_ERR_ROW_
  };
  size_t n = sizeof list / sizeof list[0];
  assert_int_equal(B2S_E_END_ - B2S_E_BASE_ - 1, (int)n);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(list[i].value, -999 + (int)i);
    assert_string_equal(b2s_strerror(list[i].value), list[i].msg);
  }
  assert_int_equal(B2S_E_ARG, -999);
  assert_int_equal(B2S_E_STORE, -928);
  assert_string_equal(b2s_strerror(-ENOENT), strerror(ENOENT));
}

/* Split modes have one list of names, which config and CLI both use. */
static void test_split_names(void **state) {
  (void)state;
  assert_string_equal(b2s_split_name(B2S_SPLIT_ALWAYS), "always");
  assert_string_equal(b2s_split_name(B2S_SPLIT_NEVER), "never");
  assert_string_equal(b2s_split_name(B2S_SPLIT_AUTO), "auto");
  assert_string_equal(b2s_split_name(B2S_SPLIT_FORWARD_COMPAT),
                      "forward_compat");
  assert_null(b2s_split_name(0));
  assert_null(b2s_split_name(5));
}

static void test_codec_names(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int code;
  } want[] = {{"blosclz", 0}, {"lz4", 1}, {"lz4hc", 2}, {"zlib", 4},
              {"zstd", 5}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    assert_int_equal(b2s_codec_from_name(want[i].name), want[i].code);
    assert_string_equal(b2s_codec_name(want[i].code), want[i].name);
  }
  static const char *const bad[] = {"", "LZ4", "lz4 ", " lz4", "lz", "zstd1",
                                    "snappy", "none"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(b2s_codec_from_name(bad[i]), B2S_E_CODEC);
  assert_int_equal(b2s_codec_from_name(NULL), B2S_E_CODEC);
  assert_null(b2s_codec_name(3));     /* c-blosc2's retired snappy */
  assert_null(b2s_codec_name(6));
  assert_null(b2s_codec_name(-1));
}

static void test_filter_names(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int code;
  } want[] = {{"none", 0}, {"shuffle", 1}, {"bitshuffle", 2}, {"delta", 3},
              {"truncprec", 4}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    assert_int_equal(b2s_filter_from_name(want[i].name), want[i].code);
    assert_string_equal(b2s_filter_name(want[i].code), want[i].name);
  }
  static const char *const bad[] = {"", "Shuffle", "shuffle ", "trunc_prec",
                                    "truncprec:8", "bytedelta"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(b2s_filter_from_name(bad[i]), B2S_E_FILTER);
  assert_int_equal(b2s_filter_from_name(NULL), B2S_E_FILTER);
  assert_null(b2s_filter_name(5));
  assert_null(b2s_filter_name(-1));
}

/* The X lists hold the real filters only, in code order, and every codec. */
#define COUNT(name, code) +1
#define CODES(name, code) code,
static void test_name_lists(void **state) {
  (void)state;
  assert_int_equal(0 B2S_CODEC_NAMES(COUNT), 5);
  assert_int_equal(0 B2S_FILTER_NAMES(COUNT), 4);
  static const int filters[] = {B2S_FILTER_NAMES(CODES)};
  for (int i = 0; i < 4; i++)
    assert_int_equal(filters[i], i + 1);
}

/* ---- sizes ------------------------------------------------------------------ */

static void test_size_units(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int64_t bytes;
  } ok[] = {
    {"0", 0}, {"1", 1}, {"007", 7}, {"3B", 3}, {"3 B", 3},
    /* powers of 1024 */
    {"1k", KI}, {"1K", KI}, {"1KiB", KI}, {"2 KiB", 2 * KI},
    {"1M", KI * KI}, {"1MiB", KI * KI}, {"1G", KI * KI * KI},
    {"1GiB", KI * KI * KI}, {"1T", KI * KI * KI * KI},
    {"1TiB", KI * KI * KI * KI},
    /* powers of 1000 */
    {"1kB", 1000}, {"1KB", 1000}, {"2 KB", 2000}, {"1MB", 1000000},
    {"1GB", 1000000000}, {"1TB", INT64_C(1000000000000)},
    /* the largest sizes */
    {"9223372036854775807", INT64_MAX}, {"9223372036854775807B", INT64_MAX},
    {"8388607T", INT64_C(8388607) << 40},
    {"9223372TB", INT64_C(9223372) * 1000000000000},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int64_t v = -1;
    if (b2s_size_parse(ok[i].text, &v) != 0 || v != ok[i].bytes)
      fail_msg("'%s': got %lld", ok[i].text, (long long)v);
  }
}

static void test_size_rejects(void **state) {
  (void)state;
  static const char *const bad[] = {
    /* empty and whitespace */
    "", " ", " 1", "1 ", "1  K", "1\tK", "1K ", "1\n", "1 K B",
    /* signs, fractions, other notations */
    "-1", "-1K", "+1", "1.5M", "1e6", "0x10", "1,000",
    /* unknown or wrongly cased units */
    "K", "1b", "1m", "1g", "1mb", "1Kb", "1kiB", "1KIB", "1Ki", "1iB",
    "1KiBB", "1P", "1PiB", "1EB", "1 bytes",
    /* overflow */
    "9223372036854775808", "99999999999999999999999", "8388608T",
    "8388608TiB", "9223373TB", "9223372036854776K", "18446744073709551616",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t v = 12345;
    if (b2s_size_parse(bad[i], &v) != B2S_E_ARG || v != 12345)
      fail_msg("'%s' parsed (%lld)", bad[i], (long long)v);
  }
  int64_t v;
  assert_int_equal(b2s_size_parse(NULL, &v), B2S_E_ARG);
  assert_int_equal(b2s_size_parse("1", NULL), B2S_E_ARG);
}

static void test_size_format(void **state) {
  (void)state;
  static const struct {
    int64_t bytes;
    const char *text;
  } want[] = {
    {0, "0"}, {1, "1"}, {1000, "1000"}, {1023, "1023"}, {KI, "1KiB"},
    {12 * KI, "12KiB"}, {KI * KI + KI, "1025KiB"}, {64 * KI * KI, "64MiB"},
    {3 * KI * KI * KI, "3GiB"}, {KI * KI * KI * KI, "1TiB"},
    {2048 * KI * KI * KI * KI, "2048TiB"}, {-KI, "-1KiB"},
    {2147483584, "2147483584"}, {INT64_MAX, "9223372036854775807"},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    char buf[32];
    int n = b2s_size_format(want[i].bytes, buf, sizeof buf);
    assert_string_equal(buf, want[i].text);
    assert_int_equal(n, (int)strlen(want[i].text));
    /* what is printed parses back (for sizes, which are not negative) */
    int64_t back;
    if (want[i].bytes >= 0) {
      assert_int_equal(b2s_size_parse(buf, &back), 0);
      assert_int_equal(back, want[i].bytes);
    }
  }
  char small[4];
  assert_int_equal(b2s_size_format(64 * KI * KI, small, sizeof small), 5);
  assert_string_equal(small, "64M");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_values),
      cmocka_unit_test(test_split_names),
      cmocka_unit_test(test_codec_names),
      cmocka_unit_test(test_filter_names),
      cmocka_unit_test(test_name_lists),
      cmocka_unit_test(test_size_units),
      cmocka_unit_test(test_size_rejects),
      cmocka_unit_test(test_size_format),
  };
  return ts_run_tests(tests, NULL, NULL);
}

/* CurveZMQ key files (proto/b2s_curve_key.h): the first key of a key file
 * and the authorized keys list, in memory and from files.  Keys come from
 * zmq_curve_keypair, so every run checks fresh ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2s_curve_key.h"
#include "ts.h"

#define ZLEN B2S_CURVE_KEY_Z85_LEN
#define BLEN B2S_CURVE_KEY_LEN

typedef char zkey[ZLEN + 1];

static void key_make(zkey pub) {
  zkey sec;
  assert_int_equal(zmq_curve_keypair(pub, sec), 0);
}

/* A key with a '#' after its first character (about one in three has). */
static void key_make_with_hash(zkey pub) {
  for (int i = 0; i < 1000; i++) {
    key_make(pub);
    if (strchr(pub + 1, '#') != NULL)
      return;
  }
  fail_msg("no key with a '#' in 1000 tries");
}

static void key_bin(const char *z, uint8_t out[BLEN]) {
  assert_non_null(zmq_z85_decode(out, z));
}

/* b2s_curve_key_parse on a C string. */
static int first_key(const char *text, zkey out) {
  return b2s_curve_key_parse(text, strlen(text), out);
}

/* ---- the first key ---------------------------------------------------------- */

static void test_first_key_after_comments(void **state) {
  (void)state;
  zkey k, other, got;
  key_make(k);
  key_make(other);
  char text[400];
  snprintf(text, sizeof text,
           "# the daemon\n\n   \t\r\n# another comment\n  %s  trailing text\n"
           "%s\n", k, other);
  memset(got, 'x', sizeof got);
  assert_int_equal(first_key(text, got), 0);
  assert_string_equal(got, k);
  /* as `b2stream keygen` writes it, with CRLF, without a final newline */
  snprintf(text, sizeof text, "%s\n", k);
  assert_int_equal(first_key(text, got), 0);
  assert_string_equal(got, k);
  snprintf(text, sizeof text, "#c\r\n\r\n%s\r\n", other);
  assert_int_equal(first_key(text, got), 0);
  assert_string_equal(got, other);
  assert_int_equal(b2s_curve_key_parse(k, ZLEN, got), 0);
  assert_string_equal(got, k);
}

/* Only len bytes count: no NUL needed, nothing after them read. */
static void test_first_key_length_bound(void **state) {
  (void)state;
  zkey k, got;
  key_make(k);
  char text[64];
  snprintf(text, sizeof text, "%sQ", k);
  assert_int_equal(b2s_curve_key_parse(text, ZLEN, got), 0);
  assert_string_equal(got, k);
  assert_int_equal(b2s_curve_key_parse(text, ZLEN + 1, got), B2S_E_ARG);
  assert_int_equal(b2s_curve_key_parse(text, ZLEN - 1, got), B2S_E_ARG);
}

/* Z85 has '#': a line is a comment only when its first word is no key. */
static void test_first_key_hash(void **state) {
  (void)state;
  zkey k, hk, got;
  key_make(k);
  key_make_with_hash(hk);
  char text[400];
  snprintf(text, sizeof text, "# keys with '#' in them\n%s\n%s\n", hk, k);
  assert_int_equal(first_key(text, got), 0);
  assert_string_equal(got, hk);
  /* a 40-character word starting with '#': a key when libzmq decodes it
   * (it refuses them when it checks for overflow), else a comment */
  zkey hword;
  memcpy(hword, k, sizeof hword);
  hword[0] = '#';
  uint8_t bin[BLEN];
  bool is_key = zmq_z85_decode(bin, hword) != NULL;
  snprintf(text, sizeof text, "%s\n%s\n", hword, k);
  assert_int_equal(first_key(text, got), 0);
  assert_string_equal(got, is_key ? hword : k);
}

static void test_first_key_bad_line(void **state) {
  (void)state;
  zkey k, got;
  key_make(k);
  char text[400];
  const char *bad[] = {"not-a-key", "shorter", "\f",
                       "0123456789012345678901234567890123456789x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(text, sizeof text, "# comment\n\n%s\n%s\n", bad[i], k);
    memset(got, 'x', sizeof got);
    assert_int_equal(first_key(text, got), B2S_E_ARG);
    assert_int_equal(got[0], 'x');             /* left alone */
  }
  /* a key glued to text by something other than space, tab, CR or LF */
  snprintf(text, sizeof text, "%s,x\n", k);
  assert_int_equal(first_key(text, got), B2S_E_ARG);
  /* a bad line after the key does not matter */
  snprintf(text, sizeof text, "%s\nnot-a-key\n", k);
  assert_int_equal(first_key(text, got), 0);
  assert_string_equal(got, k);
}

static void test_first_key_none(void **state) {
  (void)state;
  zkey got;
  assert_int_equal(first_key("", got), B2S_E_ARG);
  assert_int_equal(b2s_curve_key_parse(NULL, 0, got), B2S_E_ARG);
  assert_int_equal(first_key("# only comments\n\n  \n#\n", got), B2S_E_ARG);
  assert_int_equal(b2s_curve_key_parse("\0\0\0\n", 4, got), B2S_E_ARG);
  assert_int_equal(b2s_curve_key_parse(NULL, 1, got), B2S_E_ARG);
  assert_int_equal(b2s_curve_key_parse("", 0, NULL), B2S_E_ARG);
}

/* Lines come in pieces of at most B2S_CURVE_KEY_LINE_MAX - 1 bytes, and a
 * NUL byte ends what is seen of a line. */
static void test_first_key_long_line_and_nul(void **state) {
  (void)state;
  zkey k, got;
  key_make(k);
  char text[2000];
  memset(text, '#', 1500);                       /* two comment pieces */
  snprintf(text + 1500, sizeof text - 1500, "\n%s\n", k);
  assert_int_equal(first_key(text, got), 0);
  assert_string_equal(got, k);
  /* a comment whose second piece does not start with '#' */
  memset(text, 'a', 1500);
  text[0] = '#';
  snprintf(text + 1500, sizeof text - 1500, "\n%s\n", k);
  assert_int_equal(first_key(text, got), B2S_E_ARG);
  /* the piece boundary: the key ends the first piece exactly */
  size_t pad = B2S_CURVE_KEY_LINE_MAX - 1 - ZLEN;
  memset(text, ' ', pad);
  memcpy(text + pad, k, ZLEN);
  memcpy(text + pad + ZLEN, "zzz\n", 4);
  assert_int_equal(b2s_curve_key_parse(text, pad + ZLEN + 4, got), 0);
  assert_string_equal(got, k);
  /* text after a NUL byte of a line is not seen */
  int n = snprintf(text, sizeof text, "#c\n%s", k);
  memcpy(text + n, "\0junk\n", 6);
  assert_int_equal(b2s_curve_key_parse(text, (size_t)n + 6, got), 0);
  assert_string_equal(got, k);
  n = snprintf(text, sizeof text, "%.20s", k);
  memcpy(text + n, "\0", 1);
  memcpy(text + n + 1, k + 21, ZLEN - 21);
  assert_int_equal(b2s_curve_key_parse(text, ZLEN, got), B2S_E_ARG);
}

/* ---- authorized keys -------------------------------------------------------- */

static void test_authorized_list(void **state) {
  (void)state;
  zkey k[5];
  for (int i = 0; i < 4; i++)
    key_make(k[i]);
  key_make_with_hash(k[4]);
  char text[600];
  snprintf(text, sizeof text,
           "# clients allowed in\n\n%s\n  %s  camera-1\n\t%s\t# lab\r\n"
           "#%s (retired)\n\n   \n%s\v\f\n%s", k[0], k[1], k[2], k[3], k[4],
           k[0]);
  uint8_t (*keys)[BLEN] = NULL;
  int bad = -1;
  assert_int_equal(b2s_curve_authorized_parse(text, strlen(text), &keys, &bad),
                   5);
  assert_int_equal(bad, 0);
  const int order[5] = {0, 1, 2, 4, 0};         /* k[3] is commented out */
  for (int i = 0; i < 5; i++) {
    uint8_t want[BLEN];
    key_bin(k[order[i]], want);
    assert_memory_equal(keys[i], want, BLEN);
  }
  free(keys);
}

/* More keys than the first allocation holds, in order. */
static void test_authorized_many(void **state) {
  (void)state;
  enum { N = 100 };
  static zkey k[N];
  static char text[N * (ZLEN + 1) + 1];
  size_t len = 0;
  for (int i = 0; i < N; i++) {
    key_make(k[i]);
    len += (size_t)snprintf(text + len, sizeof text - len, "%s\n", k[i]);
  }
  uint8_t (*keys)[BLEN] = NULL;
  int bad = -1;
  assert_int_equal(b2s_curve_authorized_parse(text, len, &keys, &bad), N);
  for (int i = 0; i < N; i++) {
    uint8_t want[BLEN];
    key_bin(k[i], want);
    assert_memory_equal(keys[i], want, BLEN);
  }
  free(keys);
}

/* A line that is no key, no comment and not blank refuses the whole list
 * and names the line (b2streamd logs it and keeps its keys). */
static void test_authorized_invalid_line(void **state) {
  (void)state;
  zkey a, b;
  key_make(a);
  key_make(b);
  char text[400];
  uint8_t (*keys)[BLEN] = (void *)&keys;
  int bad = -1;
  snprintf(text, sizeof text, "# one good, one bad\n%s\nshorter\n%s\n", a, b);
  assert_int_equal(b2s_curve_authorized_parse(text, strlen(text), &keys, &bad),
                   B2S_E_ARG);
  assert_int_equal(bad, 3);
  assert_null(keys);
  /* after the key only space or tab: \v inside the line, a comma, CR */
  const char *tails[] = {"\vcamera", ",camera", "\rcamera", "x"};
  for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
    snprintf(text, sizeof text, "%s\n\n%s%s\n", a, b, tails[i]);
    bad = -1;
    assert_int_equal(
        b2s_curve_authorized_parse(text, strlen(text), &keys, &bad),
        B2S_E_ARG);
    assert_int_equal(bad, 3);
  }
  /* a 40-character word starting with '#' is a comment unless it decodes */
  zkey hword;
  memcpy(hword, a, sizeof hword);
  hword[0] = '#';
  uint8_t bin[BLEN];
  bool is_key = zmq_z85_decode(bin, hword) != NULL;
  snprintf(text, sizeof text, "%s\n%s\n", hword, b);
  assert_int_equal(b2s_curve_authorized_parse(text, strlen(text), &keys, &bad),
                   is_key ? 2 : 1);
  free(keys);
  /* a long comment after a key: its second piece is a line of its own */
  char big[1600];
  int n = snprintf(big, sizeof big, "%s # ", a);
  memset(big + n, 'c', 1200);
  snprintf(big + n + 1200, sizeof big - (size_t)n - 1200, "\n%s\n", b);
  assert_int_equal(b2s_curve_authorized_parse(big, strlen(big), &keys, &bad),
                   B2S_E_ARG);
  assert_int_equal(bad, 2);
}

static void test_authorized_empty(void **state) {
  (void)state;
  uint8_t (*keys)[BLEN] = (void *)&keys;
  int bad = -1;
  assert_int_equal(b2s_curve_authorized_parse("", 0, &keys, &bad), 0);
  assert_null(keys);
  assert_int_equal(bad, 0);
  keys = (void *)&keys;
  assert_int_equal(b2s_curve_authorized_parse(NULL, 0, &keys, &bad), 0);
  assert_null(keys);
  const char *text = "# nobody yet\n\n\t\n";
  assert_int_equal(b2s_curve_authorized_parse(text, strlen(text), &keys, &bad),
                   0);
  assert_null(keys);
  assert_int_equal(b2s_curve_authorized_parse(text, 1, NULL, &bad), B2S_E_ARG);
  assert_int_equal(b2s_curve_authorized_parse(text, 1, &keys, NULL), B2S_E_ARG);
  assert_int_equal(b2s_curve_authorized_parse(NULL, 1, &keys, &bad),
                   B2S_E_ARG);
}

/* ---- files ------------------------------------------------------------------ */

typedef struct tmp {
  char dir[64];
  char path[128];
} tmp;

static void tmp_init(tmp *t) {
  snprintf(t->dir, sizeof t->dir, "/tmp/b2s_curve_key_XXXXXX");
  assert_non_null(mkdtemp(t->dir));
  snprintf(t->path, sizeof t->path, "%s/key", t->dir);
}

static void tmp_write(tmp *t, const char *text, size_t len) {
  FILE *f = fopen(t->path, "w");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

static void tmp_fini(tmp *t) {
  unlink(t->path);
  assert_int_equal(rmdir(t->dir), 0);
}

static void test_files(void **state) {
  (void)state;
  tmp t;
  tmp_init(&t);
  zkey pub, sec, got;
  assert_int_equal(zmq_curve_keypair(pub, sec), 0);
  char text[200];
  snprintf(text, sizeof text, "%s\n", sec);       /* as keygen writes it */
  tmp_write(&t, text, strlen(text));
  assert_int_equal(b2s_curve_key_read(t.path, got), 0);
  assert_string_equal(got, sec);
  snprintf(text, sizeof text, "# lab\n%s cam\n%s\n", pub, sec);
  tmp_write(&t, text, strlen(text));
  uint8_t (*keys)[BLEN] = NULL;
  int bad = -1;
  assert_int_equal(b2s_curve_authorized_read(t.path, &keys, &bad), 2);
  uint8_t want[BLEN];
  key_bin(pub, want);
  assert_memory_equal(keys[0], want, BLEN);
  key_bin(sec, want);
  assert_memory_equal(keys[1], want, BLEN);
  free(keys);
  tmp_write(&t, "# lab\nnope\n", 11);
  assert_int_equal(b2s_curve_authorized_read(t.path, &keys, &bad), B2S_E_ARG);
  assert_int_equal(bad, 2);
  assert_int_equal(b2s_curve_key_read(t.path, got), B2S_E_ARG);
  /* errors of the file itself */
  assert_int_equal(b2s_curve_key_read(t.dir, got), -EISDIR);
  assert_int_equal(b2s_curve_authorized_read(t.dir, &keys, &bad), -EISDIR);
  unlink(t.path);
  assert_int_equal(b2s_curve_key_read(t.path, got), -ENOENT);
  assert_int_equal(b2s_curve_authorized_read(t.path, &keys, &bad), -ENOENT);
  assert_null(keys);
  assert_int_equal(b2s_curve_key_read(NULL, got), B2S_E_ARG);
  tmp_fini(&t);
}

/* Up to B2S_CURVE_KEY_FILE_MAX bytes are read; one more is -EFBIG. */
static void test_file_size_limit(void **state) {
  (void)state;
  tmp t;
  tmp_init(&t);
  zkey k, got;
  key_make(k);
  size_t max = B2S_CURVE_KEY_FILE_MAX;
  char *text = malloc(max + 1);
  assert_non_null(text);
  memset(text, '\n', max + 1);
  memcpy(text + max - ZLEN - 1, k, ZLEN);         /* the last line */
  tmp_write(&t, text, max);
  assert_int_equal(b2s_curve_key_read(t.path, got), 0);
  assert_string_equal(got, k);
  uint8_t (*keys)[BLEN] = NULL;
  int bad = -1;
  assert_int_equal(b2s_curve_authorized_read(t.path, &keys, &bad), 1);
  free(keys);
  tmp_write(&t, text, max + 1);
  assert_int_equal(b2s_curve_key_read(t.path, got), -EFBIG);
  assert_int_equal(b2s_curve_authorized_read(t.path, &keys, &bad), -EFBIG);
  assert_null(keys);
  free(text);
  tmp_fini(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_key_after_comments),
      cmocka_unit_test(test_first_key_length_bound),
      cmocka_unit_test(test_first_key_hash),
      cmocka_unit_test(test_first_key_bad_line),
      cmocka_unit_test(test_first_key_none),
      cmocka_unit_test(test_first_key_long_line_and_nul),
      cmocka_unit_test(test_authorized_list),
      cmocka_unit_test(test_authorized_many),
      cmocka_unit_test(test_authorized_invalid_line),
      cmocka_unit_test(test_authorized_empty),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_file_size_limit),
  };
  return ts_run_tests(tests, NULL, NULL);
}

/* The acquisition API's model without the daemon (acq/): the error and
 * failure code tables read against docs/ACQUISITIONS.md (sections 12 and
 * 7.5) and docs/acquisitions.openapi.yaml (ErrorCode, FailureCode), the
 * error body of 9.3, the strict JSON reader of 9.1 with the offset and
 * error of each refusal, and arm requests (3.1): every member's default,
 * range and refusal, the canonical form byte for byte, the comparison of
 * a repeated arm (6.2) and the series as msgpack. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_acq_errors.h"
#include "b2s_acq_json.h"
#include "b2s_acq_request.h"
#include "b2s_msgpack.h"
#include "protocol_doc.h"
#include "textfile.h"
#include "ts.h"

static char *read_env_file(const char *var) {
  const char *path = getenv(var);
  if (path == NULL)
    fail_msg("%s is not set (tests/meson.build sets it)", var);
  char *t = ts_read_text(path, NULL);
  if (t == NULL)
    fail_msg("cannot read %s", path);
  return t;
}

/* ---- the code tables against the document -------------------------------- */

static void test_error_codes_match_doc(void **state) {
  (void)state;
  char *doc = read_env_file("B2S_ACQUISITIONS_MD");
  char *sec = pdoc_section(doc, "## 12. Error codes");
  int seen[B2S_ACQ_E_END_ - B2S_ACQ_E_BASE_] = {0};
  int rows = 0, prev = B2S_ACQ_E_BASE_;
  for (char *line = strtok(sec, "\n"); line; line = strtok(NULL, "\n")) {
    char code[64], meaning[512];
    int status;
    if (sscanf(line, "| `%63[a-z_]` | %d | %511[^\n]", code, &status,
               meaning) != 3)
      continue;
    size_t n = strlen(meaning);
    assert_true(n > 2 && strcmp(meaning + n - 2, " |") == 0);
    meaning[n - 2] = '\0';
    rows++;
    int v = b2s_acq_code_by_name(code);
    if (v == 0)
      fail_msg("section 12 lists %s, which b2s_acq_errors.h does not have",
               code);
    assert_true(b2s_acq_code_valid(v));
    if (b2s_acq_code_status(v) != status)
      fail_msg("%s: the document gives %d, the code %d", code, status,
               b2s_acq_code_status(v));
    if (strcmp(b2s_acq_code_meaning(v), meaning) != 0)
      fail_msg("%s: the document says \"%s\", the code \"%s\"", code, meaning,
               b2s_acq_code_meaning(v));
    assert_string_equal(b2s_acq_code_name(v), code);
    /* the table's order is the list's: codes are only ever added */
    assert_true(v > prev);
    prev = v;
    seen[v - B2S_ACQ_E_BASE_]++;
  }
  for (int v = B2S_ACQ_E_BASE_ + 1; v < B2S_ACQ_E_END_; v++)
    if (seen[v - B2S_ACQ_E_BASE_] != 1)
      fail_msg("%s is in section 12 %d times; every code must be there once",
               b2s_acq_code_name(v), seen[v - B2S_ACQ_E_BASE_]);
  assert_int_equal(rows, B2S_ACQ_E_END_ - B2S_ACQ_E_BASE_ - 1);
  assert_int_equal(rows, 45);
  free(sec);
  free(doc);
}

static void test_failure_codes_match_doc(void **state) {
  (void)state;
  char *doc = read_env_file("B2S_ACQUISITIONS_MD");
  const char *a = strstr(doc, "### 7.5 Failure");
  assert_non_null(a);
  const char *b = strstr(a, "\n### ");
  assert_non_null(b);
  char *sec = strndup(a, (size_t)(b - a));
  int f = 1;
  for (char *line = strtok(sec, "\n"); line; line = strtok(NULL, "\n")) {
    char code[64];
    if (sscanf(line, "| `%63[a-z_]` |", code) != 1)
      continue;
    if (f >= B2S_ACQ_FAIL_END_)
      fail_msg("section 7.5 lists %s beyond the code's list", code);
    assert_string_equal(b2s_acq_failure_name(f), code);
    assert_int_equal(b2s_acq_failure_by_name(code), f);
    f++;
  }
  assert_int_equal(f, B2S_ACQ_FAIL_END_);
  assert_int_equal(f - 1, 7);
  free(sec);
  free(doc);
}

/* The names of `enum: [...]` after the schema `name:` of the OpenAPI
 * file, in order, checked against get(1..end-1). */
static void check_yaml_enum(const char *yaml, const char *schema,
                            const char *(*get)(int), int first, int end) {
  char key[80];
  snprintf(key, sizeof key, "\n    %s:\n", schema);
  const char *p = strstr(yaml, key);
  if (p == NULL)
    fail_msg("the OpenAPI file has no schema %s", schema);
  p = strstr(p, "enum: [");
  assert_non_null(p);
  p += 7;
  const char *q = strchr(p, ']');
  assert_non_null(q);
  int v = first;
  while (p < q) {
    while (p < q && strchr(" ,\n", *p))
      p++;
    if (p >= q)
      break;
    size_t n = strcspn(p, " ,\n]");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)n, p);
    if (v >= end)
      fail_msg("%s lists %s beyond the code's list", schema, name);
    if (strcmp(get(v), name) != 0)
      fail_msg("%s: entry %d is %s, the code has %s", schema, v - first,
               name, get(v));
    v++;
    p += n;
  }
  assert_int_equal(v, end);
}

static void test_codes_match_openapi(void **state) {
  (void)state;
  char *yaml = read_env_file("B2S_ACQUISITIONS_OPENAPI");
  check_yaml_enum(yaml, "ErrorCode", b2s_acq_code_name, B2S_ACQ_E_BASE_ + 1,
                  B2S_ACQ_E_END_);
  check_yaml_enum(yaml, "FailureCode", b2s_acq_failure_name, 1,
                  B2S_ACQ_FAIL_END_);
  free(yaml);
}

static void test_code_lookups(void **state) {
  (void)state;
  assert_false(b2s_acq_code_valid(B2S_ACQ_E_BASE_));
  assert_false(b2s_acq_code_valid(B2S_ACQ_E_END_));
  assert_false(b2s_acq_code_valid(0));
  assert_null(b2s_acq_code_name(0));
  assert_null(b2s_acq_code_meaning(B2S_ACQ_E_END_));
  assert_int_equal(b2s_acq_code_status(B2S_E_ARG), 0);
  assert_int_equal(b2s_acq_code_by_name("nope"), 0);
  assert_int_equal(b2s_acq_code_by_name(NULL), 0);
  assert_int_equal(b2s_acq_code_by_name("files_exist"), B2S_ACQ_E_FILES_EXIST);
  /* below core's codes: a function of the room can return either */
  assert_true(B2S_ACQ_E_BAD_JSON < -1000);
  assert_null(b2s_acq_failure_name(B2S_ACQ_FAIL_NONE));
  assert_null(b2s_acq_failure_name(B2S_ACQ_FAIL_END_));
  assert_int_equal(b2s_acq_failure_by_name("bad_json"), 0);
  assert_int_equal(b2s_acq_failure_by_name(NULL), 0);
  assert_int_equal(b2s_acq_failure_by_name("frames_lost"),
                   B2S_ACQ_FAIL_FRAMES_LOST);
}

/* ---- the error body (9.3) -------------------------------------------------- */

static void test_error_body(void **state) {
  (void)state;
  b2s_acq_err e;
  b2s_acq_err_clear(&e);
  assert_int_equal(e.code, 0);
  assert_int_equal(e.offset, -1);
  assert_int_equal(b2s_acq_err_set(&e, B2S_ACQ_E_FILES_EXIST, "file_template",
                                   "/data/p/%s exists; overwrite is refuse",
                                   "a_000001.b2frame"),
                   B2S_ACQ_E_FILES_EXIST);
  char *j = b2s_acq_err_json(&e);
  assert_string_equal(j, "{\"error\":{\"code\":\"files_exist\",\"message\":"
                         "\"/data/p/a_000001.b2frame exists; overwrite is "
                         "refuse\",\"status\":409,\"field\":\"file_template\"}}");
  free(j);
  /* no field: none in the body; no text: the code's meaning */
  b2s_acq_err_set(&e, B2S_ACQ_E_DRAINING, NULL, NULL);
  j = b2s_acq_err_json(&e);
  assert_string_equal(j, "{\"error\":{\"code\":\"draining\",\"message\":"
                         "\"the daemon is stopping\",\"status\":503}}");
  free(j);
  /* a value that is no code, or none at all: 500 internal */
  e.code = B2S_E_ARG;
  e.message[0] = '\0';
  e.field[0] = '\0';
  j = b2s_acq_err_json(&e);
  assert_string_equal(j, "{\"error\":{\"code\":\"internal\",\"message\":"
                         "\"a fault of the daemon; the service stays up\","
                         "\"status\":500}}");
  free(j);
  j = b2s_acq_err_json(NULL);
  assert_non_null(strstr(j, "\"internal\""));
  free(j);
  /* quotes, backslashes, control characters and slashes in a message */
  b2s_acq_err_set(&e, B2S_ACQ_E_BAD_FIELD, "id", "a \"q\" \\ /x\n");
  j = b2s_acq_err_json(&e);
  assert_string_equal(j, "{\"error\":{\"code\":\"bad_field\",\"message\":"
                         "\"a \\\"q\\\" \\\\ /x\\n\",\"status\":400,"
                         "\"field\":\"id\"}}");
  free(j);
  /* NULL e: the code comes back, nothing is written */
  assert_int_equal(b2s_acq_err_set(NULL, B2S_ACQ_E_BAD_ID, "id", "x"),
                   B2S_ACQ_E_BAD_ID);
  b2s_acq_err_clear(NULL);
  /* cut inside a character: the body stays UTF-8 and valid JSON */
  char wide[1200] = "";
  for (int i = 0; i < 550; i++)
    strcat(wide, "\xc3\xa9");
  b2s_acq_err_set(&e, B2S_ACQ_E_BAD_FIELD, wide, "%s", wide);
  assert_int_equal(strlen(e.message), sizeof e.message - 2);   /* 510 */
  assert_int_equal(strlen(e.field), B2S_ACQ_FIELD_MAX - 2);    /* 62 */
  assert_true(b2s_utf8_valid((const uint8_t *)e.message, strlen(e.message)));
  assert_true(b2s_utf8_valid((const uint8_t *)e.field, strlen(e.field)));
  j = b2s_acq_err_json(&e);
  json_object *back = NULL;
  assert_int_equal(b2s_acq_json_parse(j, strlen(j), B2S_ACQ_JSON_DEPTH, &back,
                                       NULL), 0);
  json_object_put(back);
  free(j);
  /* a stray byte becomes '?', a cut last character goes */
  b2s_acq_err_set(&e, B2S_ACQ_E_BAD_FIELD, NULL, "a\xff" "b\x80" "c\xe2\x82");
  assert_string_equal(e.message, "a?b?c");
  assert_true(b2s_acq_utf8_fit("ab\xe2\x82\xac\xe2", 6) == 5);
  /* an unknown member's long non-ASCII name is cut between characters */
  {
    char body[256] = "{\"a";
    for (int i = 0; i < 40; i++)
      strcat(body, "\xc3\xa9");
    strcat(body, "\":1}");
    b2s_acq_request r;
    b2s_acq_request_init(&r);
    assert_int_equal(b2s_acq_request_parse(body, strlen(body), &r, &e),
                     B2S_ACQ_E_UNKNOWN_FIELD);
    assert_int_equal(strlen(e.field), 47);     /* "a" and 23 characters */
    assert_true(b2s_utf8_valid((const uint8_t *)e.message,
                               strlen(e.message)));
  }
  /* a message longer than the buffer is cut, not overrun */
  char big[2000];
  memset(big, 'm', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  b2s_acq_err_set(&e, B2S_ACQ_E_INTERNAL, NULL, "%s", big);
  assert_int_equal(strlen(e.message), sizeof e.message - 1);
}

/* ---- the strict JSON reader (9.1) ------------------------------------------ */

/* Parse text; expect a refusal with `code` at `offset` (-1: any). */
static void json_refused(const char *text, size_t len, int code,
                         long offset) {
  json_object *o = (json_object *)1;
  b2s_acq_err e;
  int rc = b2s_acq_json_parse(text, len, B2S_ACQ_JSON_DEPTH, &o, &e);
  if (rc != code)
    fail_msg("%.*s: %d, expected %d (%s)", (int)(len > 80 ? 80 : len), text,
             rc, code, e.message);
  assert_null(o);
  assert_int_equal(e.code, code);
  if (offset >= 0 && e.offset != offset)
    fail_msg("%.*s: offset %lld, expected %ld (%s)",
             (int)(len > 80 ? 80 : len), text, (long long)e.offset, offset,
             e.message);
}

#define REFUSED(lit, off) \
  json_refused(lit, sizeof lit - 1, B2S_ACQ_E_BAD_JSON, off)

static json_object *json_ok(const char *text, size_t len) {
  json_object *o = NULL;
  b2s_acq_err e;
  int rc = b2s_acq_json_parse(text, len, B2S_ACQ_JSON_DEPTH, &o, &e);
  if (rc != 0)
    fail_msg("%.*s refused: %s", (int)(len > 80 ? 80 : len), text, e.message);
  assert_non_null(o);
  assert_true(json_object_is_type(o, json_type_object));
  return o;
}

#define ACCEPTED(lit) json_object_put(json_ok(lit, sizeof lit - 1))

static void test_json_duplicates(void **state) {
  (void)state;
  REFUSED("{\"a\":1,\"a\":2}", 7);
  /* the same name spelt with an escape */
  REFUSED("{\"a\":1,\"\\u0061\":2}", 7);
  REFUSED("{\"x\":{\"b\":1, \"b\":1}}", 13);
  /* the same name in two objects is fine */
  ACCEPTED("{\"a\":{\"a\":1},\"b\":[{\"a\":1},{\"a\":2}]}");
  /* the empty name, once and twice (the name arena is still empty) */
  ACCEPTED("{\"\":1}");
  ACCEPTED("{\"\":{\"\":[]},\"a\":1}");
  REFUSED("{\"\":1,\"\":2}", 6);
  /* a name that only json-c would cut at U+0000 */
  REFUSED("{\"a\\u0000b\":1}", 3);
  /* many members (the set grows), the duplicate last */
  char big[8192];
  size_t n = (size_t)snprintf(big, sizeof big, "{");
  for (int i = 0; i < 300; i++)
    n += (size_t)snprintf(big + n, sizeof big - n, "\"k%d\":%d,", i, i);
  size_t dup_at = n;
  n += (size_t)snprintf(big + n, sizeof big - n, "\"k17\":0}");
  json_refused(big, n, B2S_ACQ_E_BAD_JSON, (long)dup_at);
  big[dup_at + 2] = 'x';             /* "kx7": new */
  json_object_put(json_ok(big, n));
}

/* {"a":[[...]]} with `arrays` arrays inside the object, into t (256
 * bytes); returns its length. */
static size_t nested_arrays(char *t, int arrays) {
  size_t n = (size_t)snprintf(t, 256, "{\"a\":");
  for (int i = 0; i < arrays; i++)
    t[n++] = '[';
  for (int i = 0; i < arrays; i++)
    t[n++] = ']';
  t[n++] = '}';
  return n;
}

static void test_json_depth(void **state) {
  (void)state;
  /* the object is level 1: 31 arrays inside reach 32 */
  char t[256];
  size_t n = nested_arrays(t, 31);
  json_object_put(json_ok(t, n));
  n = nested_arrays(t, 32);
  /* the 33rd level opens at byte 5 + 31 */
  json_refused(t, n, B2S_ACQ_E_BAD_JSON, 36);
  /* objects count as arrays do */
  char o[512];
  n = 0;
  for (int i = 0; i < 33; i++)
    n += (size_t)snprintf(o + n, sizeof o - n, "{\"a\":");
  n += (size_t)snprintf(o + n, sizeof o - n, "1");
  for (int i = 0; i < 33; i++)
    o[n++] = '}';
  json_refused(o, n, B2S_ACQ_E_BAD_JSON, 32 * 5);
  /* a deeper limit passed by the caller */
  json_object *x = NULL;
  assert_int_equal(b2s_acq_json_parse(o, n, 40, &x, NULL), 0);
  json_object_put(x);
  assert_int_equal(b2s_acq_json_parse(o, n, 2, &x, NULL), B2S_ACQ_E_BAD_JSON);
}

static void test_json_oversize(void **state) {
  (void)state;
  size_t n = B2S_ACQ_JSON_MAX + 1;
  char *t = malloc(n);
  assert_non_null(t);
  memset(t, ' ', n);
  t[0] = '{';
  t[n - 1] = '}';
  json_refused(t, n, B2S_ACQ_E_BODY_TOO_LARGE, -1);
  b2s_acq_err e;
  json_object *o;
  b2s_acq_json_parse(t, n, B2S_ACQ_JSON_DEPTH, &o, &e);
  assert_int_equal(b2s_acq_code_status(e.code), 413);
  assert_non_null(strstr(e.message, "16777217"));
  /* at the limit it is read */
  t[n - 2] = '}';
  json_object_put(json_ok(t, n - 1));
  free(t);
}

static void test_json_utf8(void **state) {
  (void)state;
  REFUSED("{\"a\":\"\xc0\xaf\"}", 6);        /* overlong '/' */
  REFUSED("{\"a\":\"x\xed\xa0\x80\"}", 7);   /* a surrogate in UTF-8 */
  REFUSED("{\"a\":\"\xe2\x82\"}", 6);        /* cut short */
  REFUSED("{\"a\":\"\xff\"}", 6);
  REFUSED("{\"a\":\"\xf4\x90\x80\x80\"}", 6); /* past U+10FFFF */
  REFUSED("{\"\x80\":1}", 2);                /* in a name */
  REFUSED("{\"a\":\"\xc3\"}", 6);
  ACCEPTED("{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}");
  /* escapes: lone surrogates, a pair, unknown escapes, control chars */
  REFUSED("{\"a\":\"\\udc00\"}", 6);
  REFUSED("{\"a\":\"\\ud800\"}", 6);
  REFUSED("{\"a\":\"\\ud800\\u0041\"}", 6);
  ACCEPTED("{\"a\":\"\\ud83d\\ude00\"}");
  REFUSED("{\"a\":\"\\x41\"}", 6);
  REFUSED("{\"a\":\"\\u12g4\"}", 10);
  REFUSED("{\"a\":\"a\tb\"}", 7);
  REFUSED("{\"a\":\"a\x01\"}", 7);
  REFUSED("{\"a\":\"abc}", 5);
  ACCEPTED("{\"a\":\"\\u0000 \\\" \\\\ \\/ \\b \\f \\n \\r \\t\"}");
}

static void test_json_trailing_and_shape(void **state) {
  (void)state;
  REFUSED("{} x", 3);
  REFUSED("{}{}", 2);
  REFUSED("{}\0", 2);
  REFUSED("{\"a\":1}]", 7);
  ACCEPTED(" \t\r\n{ } \n");
  REFUSED("", 0);
  REFUSED("   ", 3);
  REFUSED("[]", 0);
  REFUSED("\"x\"", 0);
  REFUSED("1", 0);
  REFUSED("null", 0);
  REFUSED("\xef\xbb\xbf{}", 0);             /* a byte-order mark */
  REFUSED("{\"a\" 1}", 5);
  REFUSED("{\"a\":1,}", 7);
  REFUSED("{,}", 1);
  REFUSED("{\"a\":[1,]}", 8);
  REFUSED("{\"a\":[1 2]}", 8);
  REFUSED("{a:1}", 1);
  REFUSED("{'a':1}", 1);
  REFUSED("{\"a\":tru}", 5);
  REFUSED("{\"a\":True}", 5);
  REFUSED("{\"a\":nul}", 5);
  REFUSED("{\"a\":1", 6);
  REFUSED("{\"a\":", 5);
  REFUSED("{\"a\":{\"b\":[", 11);
  REFUSED("{/*c*/}", 1);
  ACCEPTED("{\"a\":[true,false,null,{},[],\"\",0,-0,1.5e3]}");
}

static void test_json_numbers(void **state) {
  (void)state;
  /* integers exactly within -2^63 .. 2^64-1 */
  json_object *o = json_ok("{\"a\":18446744073709551615,\"b\":"
                           "-9223372036854775808,\"c\":9223372036854775807}",
                           sizeof "{\"a\":18446744073709551615,\"b\":"
                           "-9223372036854775808,\"c\":9223372036854775807}" - 1);
  bool neg;
  uint64_t mag;
  assert_true(b2s_acq_json_int(json_object_object_get(o, "a"), &neg, &mag));
  assert_false(neg);
  assert_true(mag == UINT64_MAX);
  assert_true(b2s_acq_json_int(json_object_object_get(o, "b"), &neg, &mag));
  assert_true(neg);
  assert_true(mag == (uint64_t)1 << 63);
  assert_true(b2s_acq_json_int(json_object_object_get(o, "c"), &neg, &mag));
  assert_false(neg);
  assert_true(mag == (uint64_t)INT64_MAX);
  json_object_put(o);
  /* what json-c would clamp without a word */
  REFUSED("{\"a\":18446744073709551616}", 5);
  REFUSED("{\"a\":99999999999999999999999}", 5);
  REFUSED("{\"a\":-9223372036854775809}", 5);
  REFUSED("{\"a\":[1,-18446744073709551615]}", 8);
  /* doubles that are not finite */
  REFUSED("{\"a\":1e400}", 5);
  REFUSED("{\"a\":-1.7976931348623159e308}", 5);
  REFUSED("{\"a\":NaN}", 5);
  REFUSED("{\"a\":Infinity}", 5);
  REFUSED("{\"a\":-Infinity}", 5);
  /* RFC 8259's grammar */
  REFUSED("{\"a\":01}", 6);
  REFUSED("{\"a\":-01}", 7);
  REFUSED("{\"a\":1.}", 5);
  REFUSED("{\"a\":.5}", 5);
  REFUSED("{\"a\":+1}", 5);
  REFUSED("{\"a\":-}", 5);
  REFUSED("{\"a\":1e}", 5);
  REFUSED("{\"a\":1e+}", 5);
  REFUSED("{\"a\":0x10}", 6);
  /* integers are read exactly, a fraction or exponent is a double */
  o = json_ok("{\"a\":1.0,\"b\":1,\"c\":1e2,\"d\":1.7976931348623157e308,"
              "\"e\":-0.0,\"f\":1e-400}",
              sizeof "{\"a\":1.0,\"b\":1,\"c\":1e2,\"d\":1.7976931348623157e308,"
              "\"e\":-0.0,\"f\":1e-400}" - 1);
  assert_false(b2s_acq_json_int(json_object_object_get(o, "a"), &neg, &mag));
  assert_true(json_object_is_type(json_object_object_get(o, "a"),
                                  json_type_double));
  assert_true(b2s_acq_json_int(json_object_object_get(o, "b"), &neg, &mag));
  assert_true(json_object_is_type(json_object_object_get(o, "c"),
                                  json_type_double));
  assert_true(json_object_get_double(json_object_object_get(o, "d")) ==
              1.7976931348623157e308);
  assert_true(signbit(json_object_get_double(json_object_object_get(o, "e"))));
  json_object_put(o);
  assert_false(b2s_acq_json_int(NULL, &neg, &mag));
}

static void test_json_double_text(void **state) {
  (void)state;
  static const struct {
    double v;
    const char *t;
  } cases[] = {
      {1.0, "1.0"},      {2.1, "2.1"},         {-0.0, "-0.0"},
      {0.0, "0.0"},      {1e300, "1e+300"},    {0.1, "0.1"},
      {100.0, "100.0"},  {1e21, "1e+21"},      {5e-324, "5e-324"}, {1e16, "1e+16"}, {1e-5, "1e-05"},
      {0.0001, "0.0001"}, {9999999999999998.0, "9999999999999998.0"},
      {1.5e-7, "1.5e-07"}, {123456789.0, "123456789.0"},
      {0.30000000000000004, "0.30000000000000004"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char t[40];
    int n = b2s_acq_json_double_text(cases[i].v, t, sizeof t);
    assert_int_equal(n, (int)strlen(cases[i].t));
    assert_string_equal(t, cases[i].t);
    /* and it reads back to the same bits */
    double back = strtod(t, NULL);
    assert_memory_equal(&back, &cases[i].v, sizeof back);
  }
  char t[40];
  assert_int_equal(b2s_acq_json_double_text(NAN, t, sizeof t), B2S_E_ARG);
  assert_int_equal(b2s_acq_json_double_text(INFINITY, t, sizeof t), B2S_E_ARG);
  assert_int_equal(b2s_acq_json_double_text(1.0, t, 16), B2S_E_ARG);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "d", b2s_acq_json_double(3.0));
  json_object_object_add(o, "s", json_object_new_string("a/b\nc"));
  char *line = b2s_acq_json_line(o);
  assert_string_equal(line, "{\"d\":3.0,\"s\":\"a/b\\nc\"}");
  free(line);
  json_object_put(o);
}

static void test_json_times(void **state) {
  (void)state;
  char t[B2S_ACQ_TIME_TEXT];
  assert_int_equal(b2s_acq_time_text(0, t, sizeof t), 27);
  assert_string_equal(t, "1970-01-01T00:00:00.000000Z");
  /* 2026-05-01T12:34:56.123456Z */
  int64_t us = INT64_C(1777638896) * 1000000 + 123456;
  assert_int_equal(b2s_acq_time_text(us, t, sizeof t), 27);
  assert_string_equal(t, "2026-05-01T12:34:56.123456Z");
  int64_t back = -1;
  assert_int_equal(b2s_acq_time_parse(t, &back), 0);
  assert_true(back == us);
  assert_int_equal(b2s_acq_time_text(-1, t, sizeof t), B2S_E_ARG);
  assert_int_equal(b2s_acq_time_text(0, t, 27), B2S_E_ARG);
  assert_null(b2s_acq_json_time(-1));
  json_object *o = b2s_acq_json_time(us);
  assert_string_equal(json_object_get_string(o), "2026-05-01T12:34:56.123456Z");
  json_object_put(o);
  static const char *bad[] = {
      "2026-02-31T00:00:00.000000Z", "2026-05-01T12:34:56.123456",
      "2026-05-01T12:34:56.12345Z",  "2026-05-01 12:34:56.123456Z",
      "2026-13-01T12:34:56.123456Z", "2026-05-01T24:00:00.000000Z",
      "2026-05-01T12:34:56.123456+", "1969-12-31T23:59:59.999999Z",
      "2026-05-01T12:34:56.1234567Z", "+026-05-01T12:34:56.123456Z",
      "2026-05-01T12:34:5 .123456Z", NULL};
  for (int i = 0; bad[i]; i++)
    if (b2s_acq_time_parse(bad[i], &back) != B2S_E_ARG)
      fail_msg("%s was taken for a time", bad[i]);
  assert_int_equal(b2s_acq_time_parse(NULL, &back), B2S_E_ARG);
}

/* ---- arm requests (3.1) ------------------------------------------------------ */

#define BASE "\"id\":\"scan-42\",\"input\":{\"stream\":\"det1\"},\"directory\":\"/data/p\""

static char *canon_of(const char *body) {
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  b2s_acq_err e;
  int rc = b2s_acq_request_parse(body, strlen(body), &r, &e);
  if (rc != 0)
    fail_msg("%s refused: %s (%s)", body, b2s_acq_code_name(e.code), e.message);
  char *c = b2s_acq_request_canonical(&r);
  assert_non_null(c);
  b2s_acq_request_fini(&r);
  return c;
}

/* The arm refused with `code` naming `field` ("" none). */
static void arm_refused(const char *body, int code, const char *field) {
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  b2s_acq_err e;
  int rc = b2s_acq_request_parse(body, strlen(body), &r, &e);
  if (rc != code)
    fail_msg("%.200s: %s, expected %s (%s)", body,
             rc ? b2s_acq_code_name(rc) : "accepted", b2s_acq_code_name(code),
             e.message);
  assert_int_equal(e.code, code);
  if (strcmp(e.field, field) != 0)
    fail_msg("%s: field \"%s\", expected \"%s\"", body, e.field, field);
  assert_true(e.message[0] != '\0');
  /* nothing held after a refusal */
  assert_null(r.series);
  assert_null(r.series_mp);
  b2s_acq_request_fini(&r);
}

static void test_arm_defaults_canonical(void **state) {
  (void)state;
  char *c = canon_of("{" BASE "}");
  assert_string_equal(c,
      "{\"id\":\"scan-42\",\"input\":{\"stream\":\"det1\"},\"directory\":"
      "\"/data/p\",\"create_directory\":false,\"file_template\":"
      "\"{id}_{channel}_{file:06}.b2frame\",\"frames\":0,\"frames_per_file\":0,"
      "\"first_frame\":null,\"series\":{},\"overwrite\":\"refuse\","
      "\"on_loss\":\"fail\"}");
  /* the defaults given explicitly, in another order, are the same arm */
  char *d = canon_of("{\"on_loss\":\"fail\",\"overwrite\":\"refuse\","
                     "\"series\":{},\"first_frame\":null,\"frames_per_file\":0,"
                     "\"frames\":0,\"file_template\":"
                     "\"{id}_{channel}_{file:06}.b2frame\","
                     "\"create_directory\":false," BASE "}");
  assert_string_equal(c, d);
  free(c);
  free(d);
  /* every member set */
  c = canon_of("{\"series\":{\"scan\":42,\"sample\":\"lyso-3\",\"t\":[1.50,"
               "{\"z\":null,\"y\":true}],\"e\":1e2},\"frames\":3600,"
               "\"frames_per_file\":1000,\"first_frame\":7,"
               "\"id\":\"scan-42\",\"input\":{\"template\":\"eiger\","
               "\"stream\":\"det1\"},\"directory\":\"/data/p1234/lyso-3/\","
               "\"create_directory\":true,\"file_template\":"
               "\"{stream}-{id}+{channel}.{file:04}.b2frame\","
               "\"overwrite\":\"replace\",\"on_loss\":\"count\"}");
  assert_string_equal(c,
      "{\"id\":\"scan-42\",\"input\":{\"stream\":\"det1\",\"template\":"
      "\"eiger\"},\"directory\":\"/data/p1234/lyso-3\",\"create_directory\":"
      "true,\"file_template\":\"{stream}-{id}+{channel}.{file:04}.b2frame\","
      "\"frames\":3600,\"frames_per_file\":1000,\"first_frame\":7,\"series\":"
      "{\"e\":100.0,\"sample\":\"lyso-3\",\"scan\":42,\"t\":[1.5,{\"y\":true,"
      "\"z\":null}]},\"overwrite\":\"replace\",\"on_loss\":\"count\"}");
  free(c);
  /* a source input */
  c = canon_of("{\"id\":\"s1\",\"input\":{\"source\":\"tcp://det:31001\"},"
               "\"directory\":\"/\",\"frames\":9223372036854775807,"
               "\"frames_per_file\":2147483647,\"series\":{\"big\":"
               "18446744073709551615,\"neg\":-9223372036854775808,"
               "\"s\":\"a/b\\u00e9\"}}");
  assert_string_equal(c,
      "{\"id\":\"s1\",\"input\":{\"source\":\"tcp://det:31001\"},\"directory\":"
      "\"/\",\"create_directory\":false,\"file_template\":"
      "\"{id}_{channel}_{file:06}.b2frame\",\"frames\":9223372036854775807,"
      "\"frames_per_file\":2147483647,\"first_frame\":null,\"series\":{\"big\":"
      "18446744073709551615,\"neg\":-9223372036854775808,\"s\":"
      "\"a/b\xc3\xa9\"},\"overwrite\":\"refuse\",\"on_loss\":\"fail\"}");
  free(c);
  /* the request object without series (lists, the armed event) */
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  assert_int_equal(b2s_acq_request_parse("{" BASE ",\"series\":{\"a\":1}}",
                                         sizeof "{" BASE ",\"series\":{\"a\":1}}" - 1,
                                         &r, NULL), 0);
  json_object *o = b2s_acq_request_json(&r, false);
  char *line = b2s_acq_json_line(o);
  assert_null(strstr(line, "series"));
  assert_non_null(strstr(line, "\"on_loss\":\"fail\"}"));
  free(line);
  json_object_put(o);
  b2s_acq_request_fini(&r);
}

static void test_arm_fields_parsed(void **state) {
  (void)state;
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  const char *body = "{" BASE ",\"frames\":3600,\"frames_per_file\":1000,"
                     "\"first_frame\":0,\"create_directory\":true,"
                     "\"overwrite\":\"replace\",\"on_loss\":\"count\"}";
  assert_int_equal(b2s_acq_request_parse(body, strlen(body), &r, NULL), 0);
  assert_string_equal(r.id, "scan-42");
  assert_int_equal(r.input, B2S_ACQ_INPUT_STREAM);
  assert_string_equal(r.input_name, "det1");
  assert_string_equal(r.template_name, "");
  assert_string_equal(r.directory, "/data/p");
  assert_true(r.create_directory);
  assert_string_equal(r.file_template, B2S_ACQ_DEFAULT_TEMPLATE);
  assert_true(r.tmpl.has_id && r.tmpl.has_channel && r.tmpl.has_file);
  assert_true(r.frames == 3600);
  assert_int_equal(r.frames_per_file, 1000);
  assert_true(r.has_first_frame);
  assert_true(r.first_frame == 0);
  assert_int_equal(r.overwrite, B2S_ACQ_REPLACE);
  assert_int_equal(r.on_loss, B2S_ACQ_LOSS_COUNT);
  assert_string_equal(r.series, "{}");
  assert_int_equal(r.series_mp_len, 1);
  assert_int_equal(r.series_mp[0], 0x80);
  /* first_frame only for `order: frame_number` streams */
  b2s_acq_err e;
  assert_int_equal(b2s_acq_request_check_order(&r, true, &e), 0);
  assert_int_equal(b2s_acq_request_check_order(&r, false, &e),
                   B2S_ACQ_E_BAD_FIELD);
  assert_string_equal(e.field, "first_frame");
  /* the copy is deep and owns its buffers */
  b2s_acq_request c;
  b2s_acq_request_init(&c);
  assert_int_equal(b2s_acq_request_copy(&c, &r), 0);
  assert_ptr_not_equal(c.series, r.series);
  assert_ptr_not_equal(c.series_mp, r.series_mp);
  assert_int_equal(b2s_acq_request_copy(&c, &r), 0);   /* over a request */
  assert_int_equal(b2s_acq_request_copy(&c, &c), 0);   /* onto itself */
  b2s_acq_request_fini(&r);
  char *canon = b2s_acq_request_canonical(&c);
  assert_non_null(strstr(canon, "\"first_frame\":0,"));
  free(canon);
  b2s_acq_request_fini(&c);
  b2s_acq_request_fini(&c);                            /* twice is fine */
  /* null first_frame is the default; a source has no order to check */
  body = "{\"id\":\"s\",\"input\":{\"source\":\"tcp://d:1\"},\"directory\":"
         "\"/d\",\"first_frame\":null}";
  assert_int_equal(b2s_acq_request_parse(body, strlen(body), &r, NULL), 0);
  assert_false(r.has_first_frame);
  assert_int_equal(r.input, B2S_ACQ_INPUT_SOURCE);
  assert_int_equal(b2s_acq_request_check_order(&r, false, NULL), 0);
  b2s_acq_request_fini(&r);
  body = "{\"id\":\"s\",\"input\":{\"source\":\"tcp://d:1\"},\"directory\":"
         "\"/d\",\"first_frame\":5}";
  assert_int_equal(b2s_acq_request_parse(body, strlen(body), &r, NULL), 0);
  assert_int_equal(b2s_acq_request_check_order(&r, true, &e),
                   B2S_ACQ_E_BAD_FIELD);
  b2s_acq_request_fini(&r);
}

static void test_arm_refusals(void **state) {
  (void)state;
  /* JSON first, with its offset */
  arm_refused("{" BASE ",\"id\":\"x\"}", B2S_ACQ_E_BAD_JSON, "");
  arm_refused("[]", B2S_ACQ_E_BAD_JSON, "");
  /* unknown members, before anything else, with a suggestion */
  arm_refused("{\"frame\":1}", B2S_ACQ_E_UNKNOWN_FIELD, "frame");
  arm_refused("{" BASE ",\"Frames\":1}", B2S_ACQ_E_UNKNOWN_FIELD, "Frames");
  arm_refused("{\"id\":\"a\",\"input\":{\"stream\":\"s\",\"strem\":1},"
              "\"directory\":\"/d\"}", B2S_ACQ_E_UNKNOWN_FIELD, "input.strem");
  b2s_acq_err e;
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  const char *body = "{" BASE ",\"frame\":3600}";
  b2s_acq_request_parse(body, strlen(body), &r, &e);
  assert_string_equal(e.message,
                      "the arm has no member \"frame\" (did you mean "
                      "\"frames\"?)");
  body = "{" BASE ",\"zzzzzzzz\":1}";
  b2s_acq_request_parse(body, strlen(body), &r, &e);
  assert_string_equal(e.message, "the arm has no member \"zzzzzzzz\"");
  /* id */
  arm_refused("{\"input\":{\"stream\":\"s\"},\"directory\":\"/d\"}",
              B2S_ACQ_E_BAD_FIELD, "id");
  arm_refused("{\"id\":42,\"input\":{\"stream\":\"s\"},\"directory\":\"/d\"}",
              B2S_ACQ_E_BAD_FIELD, "id");
  static const char *bad_ids[] = {
      "", ".hidden", "a/b", "a+b", "a b", "..", "\\u00e9",
      "a\\u0000b",
      "12345678901234567890123456789012345678901234567890123456789012345",
      NULL};
  for (int i = 0; bad_ids[i]; i++) {
    char b[512];
    snprintf(b, sizeof b,
             "{\"id\":\"%s\",\"input\":{\"stream\":\"s\"},\"directory\":\"/d\"}",
             bad_ids[i]);
    arm_refused(b, B2S_ACQ_E_BAD_ID, "id");
  }
  char *c = canon_of("{\"id\":\"1234567890123456789012345678901234567890123"
                     "456789012345678901234\",\"input\":{\"stream\":\"s\"},"
                     "\"directory\":\"/d\",\"file_template\":\"{id}.b2frame\"}");
  free(c);
  c = canon_of("{\"id\":\"-._x\",\"input\":{\"stream\":\"s\"},"
               "\"directory\":\"/d\"}");
  free(c);
  /* input */
  arm_refused("{\"id\":\"a\",\"directory\":\"/d\"}", B2S_ACQ_E_BAD_FIELD,
              "input");
  arm_refused("{\"id\":\"a\",\"input\":\"det1\",\"directory\":\"/d\"}",
              B2S_ACQ_E_BAD_FIELD, "input");
  arm_refused("{\"id\":\"a\",\"input\":{},\"directory\":\"/d\"}",
              B2S_ACQ_E_BAD_FIELD, "input");
  arm_refused("{\"id\":\"a\",\"input\":{\"stream\":\"s\",\"source\":\"x\"},"
              "\"directory\":\"/d\"}", B2S_ACQ_E_BAD_FIELD, "input");
  arm_refused("{\"id\":\"a\",\"input\":{\"source\":\"x\",\"template\":\"t\"},"
              "\"directory\":\"/d\"}", B2S_ACQ_E_BAD_FIELD, "input.template");
  arm_refused("{\"id\":\"a\",\"input\":{\"template\":\"t\"},"
              "\"directory\":\"/d\"}", B2S_ACQ_E_BAD_FIELD, "input");
  arm_refused("{\"id\":\"a\",\"input\":{\"stream\":\"a/b\"},"
              "\"directory\":\"/d\"}", B2S_ACQ_E_BAD_FIELD, "input.stream");
  arm_refused("{\"id\":\"a\",\"input\":{\"stream\":7},"
              "\"directory\":\"/d\"}", B2S_ACQ_E_BAD_FIELD, "input.stream");
  arm_refused("{\"id\":\"a\",\"input\":{\"stream\":\"s\",\"template\":\".t\"},"
              "\"directory\":\"/d\"}", B2S_ACQ_E_BAD_FIELD, "input.template");
  arm_refused("{\"id\":\"a\",\"input\":{\"source\":\"\"},"
              "\"directory\":\"/d\"}", B2S_ACQ_E_BAD_FIELD, "input.source");
  arm_refused("{\"id\":\"a\",\"input\":{\"source\":\"tcp://a\\n\"},"
              "\"directory\":\"/d\"}", B2S_ACQ_E_BAD_FIELD, "input.source");
  {
    char b[2200];
    int n = snprintf(b, sizeof b, "{\"id\":\"a\",\"input\":{\"source\":\"");
    memset(b + n, 'x', 1025);
    snprintf(b + n + 1025, sizeof b - (size_t)n - 1025,
             "\"},\"directory\":\"/d\"}");
    arm_refused(b, B2S_ACQ_E_BAD_FIELD, "input.source");
    b[n + 1024] = '"';               /* 1024 bytes: taken */
    memmove(b + n + 1025, b + n + 1026, strlen(b + n + 1026) + 1);
    free(canon_of(b));
  }
  /* directory: required, 1..4095 bytes, no NUL; a trailing '/' cut */
  arm_refused("{\"id\":\"a\",\"input\":{\"stream\":\"s\"}}",
              B2S_ACQ_E_BAD_FIELD, "directory");
  arm_refused("{\"id\":\"a\",\"input\":{\"stream\":\"s\"},\"directory\":1}",
              B2S_ACQ_E_BAD_FIELD, "directory");
  arm_refused("{\"id\":\"a\",\"input\":{\"stream\":\"s\"},\"directory\":\"\"}",
              B2S_ACQ_E_BAD_DIRECTORY, "directory");
  arm_refused("{\"id\":\"a\",\"input\":{\"stream\":\"s\"},\"directory\":"
              "\"/d\\u0000/e\"}", B2S_ACQ_E_BAD_DIRECTORY, "directory");
  {
    static char b[8300];
    int n = snprintf(b, sizeof b,
                     "{\"id\":\"a\",\"input\":{\"stream\":\"s\"},\"directory\":\"/");
    memset(b + n, 'd', 4095);
    snprintf(b + n + 4095, sizeof b - (size_t)n - 4095, "\"}");
    arm_refused(b, B2S_ACQ_E_BAD_DIRECTORY, "directory");  /* 4096 */
    memmove(b + n + 4094, b + n + 4095, 3);                 /* 4095 */
    free(canon_of(b));
  }
  /* create_directory */
  arm_refused("{" BASE ",\"create_directory\":\"true\"}", B2S_ACQ_E_BAD_FIELD,
              "create_directory");
  arm_refused("{" BASE ",\"create_directory\":1}", B2S_ACQ_E_BAD_FIELD,
              "create_directory");
  arm_refused("{" BASE ",\"create_directory\":null}", B2S_ACQ_E_BAD_FIELD,
              "create_directory");
  /* file_template: its type, its syntax, U+0000, the arm's rules */
  arm_refused("{" BASE ",\"file_template\":5}", B2S_ACQ_E_BAD_FIELD,
              "file_template");
  arm_refused("{" BASE ",\"file_template\":\"{id}.h5\"}", B2S_ACQ_E_BAD_TEMPLATE,
              "file_template");
  arm_refused("{" BASE ",\"file_template\":\"../{id}.b2frame\"}",
              B2S_ACQ_E_BAD_TEMPLATE, "file_template");
  arm_refused("{" BASE ",\"file_template\":\"{id}\\u0000.b2frame\"}",
              B2S_ACQ_E_BAD_TEMPLATE, "file_template");
  arm_refused("{" BASE ",\"file_template\":\"{id}.b2frame\","
              "\"frames_per_file\":10}", B2S_ACQ_E_BAD_TEMPLATE,
              "file_template");
  arm_refused("{\"id\":\"a\",\"input\":{\"source\":\"tcp://d:1\"},"
              "\"directory\":\"/d\",\"file_template\":\"{id}_{file}.b2frame\"}",
              B2S_ACQ_E_BAD_TEMPLATE, "file_template");
  /* frames: 0 .. 2^63-1, integers only */
  static const char *bad_frames[] = {"-1", "9223372036854775808",
                                     "18446744073709551615", "1.0", "1e3",
                                     "\"5\"", "null", "true", NULL};
  for (int i = 0; bad_frames[i]; i++) {
    char b[256];
    snprintf(b, sizeof b, "{" BASE ",\"frames\":%s}", bad_frames[i]);
    arm_refused(b, B2S_ACQ_E_BAD_FIELD, "frames");
    snprintf(b, sizeof b, "{" BASE ",\"first_frame\":%s}", bad_frames[i]);
    if (strcmp(bad_frames[i], "null") != 0)
      arm_refused(b, B2S_ACQ_E_BAD_FIELD, "first_frame");
  }
  /* frames_per_file: 0 .. 2^31-1 */
  arm_refused("{" BASE ",\"frames_per_file\":2147483648}", B2S_ACQ_E_BAD_FIELD,
              "frames_per_file");
  arm_refused("{" BASE ",\"frames_per_file\":-1}", B2S_ACQ_E_BAD_FIELD,
              "frames_per_file");
  arm_refused("{" BASE ",\"frames_per_file\":4294967297}", B2S_ACQ_E_BAD_FIELD,
              "frames_per_file");
  /* series: an object within the metadata's limits, not our key */
  arm_refused("{" BASE ",\"series\":[]}", B2S_ACQ_E_BAD_SERIES, "series");
  arm_refused("{" BASE ",\"series\":null}", B2S_ACQ_E_BAD_SERIES, "series");
  arm_refused("{" BASE ",\"series\":{\"b2stream_acquisition\":{}}}",
              B2S_ACQ_E_BAD_SERIES, "series");
  arm_refused("{" BASE ",\"series\":{\"\":1}}", B2S_ACQ_E_BAD_SERIES, "series");
  arm_refused("{" BASE ",\"series\":{\"12345678901234567890123456789012345678"
              "901234567890123456789012345\":1}}", B2S_ACQ_E_BAD_SERIES,
              "series");
  free(canon_of("{" BASE ",\"series\":{\"1234567890123456789012345678901234567"
                "890123456789012345678901234\":1}}"));
  {
    /* 64 KiB encoded: map 1 byte, key 2, str16 header 3 and 65,531
     * bytes is over by one */
    size_t cap = 70000;
    char *b = malloc(cap);
    int n = snprintf(b, cap, "{" BASE ",\"series\":{\"k\":\"");
    size_t slen = 65531;
    memset(b + n, 'v', slen);
    snprintf(b + n + slen, cap - (size_t)n - slen, "\"}}");
    arm_refused(b, B2S_ACQ_E_BAD_SERIES, "series");
    memmove(b + n + slen - 1, b + n + slen, 4); /* one byte less: 65,536 */
    b2s_acq_request_init(&r);
    int rc = b2s_acq_request_parse(b, strlen(b), &r, &e);
    if (rc)
      fail_msg("a series of 65,536 bytes encoded refused: %s", e.message);
    assert_int_equal(r.series_mp_len, 65536);
    b2s_acq_request_fini(&r);
    free(b);
  }
  /* overwrite and on_loss: exactly one of their two words */
  arm_refused("{" BASE ",\"overwrite\":\"Replace\"}", B2S_ACQ_E_BAD_FIELD,
              "overwrite");
  arm_refused("{" BASE ",\"overwrite\":true}", B2S_ACQ_E_BAD_FIELD, "overwrite");
  arm_refused("{" BASE ",\"overwrite\":\"append\"}", B2S_ACQ_E_BAD_FIELD,
              "overwrite");
  arm_refused("{" BASE ",\"on_loss\":\"ignore\"}", B2S_ACQ_E_BAD_FIELD,
              "on_loss");
  arm_refused("{" BASE ",\"on_loss\":null}", B2S_ACQ_E_BAD_FIELD, "on_loss");
  /* checked in the order of 3.1: the first member at fault answers */
  arm_refused("{\"id\":\".x\",\"input\":1,\"frames\":-1}", B2S_ACQ_E_BAD_ID,
              "id");
  arm_refused("{" BASE ",\"frames\":-1,\"overwrite\":\"x\"}",
              B2S_ACQ_E_BAD_FIELD, "frames");
  /* from_json of something that is not an object */
  json_object *s = json_object_new_string("x");
  assert_int_equal(b2s_acq_request_from_json(s, &r, &e), B2S_ACQ_E_BAD_JSON);
  json_object_put(s);
}

/* Check 7 of 6.1: the directory as written. */
static void test_arm_directory_check(void **state) {
  (void)state;
  static const struct {
    const char *dir;                 /* as JSON text */
    const char *says;                /* NULL: taken */
  } c[] = {
      {"/data/p", NULL},             {"/data/p/", NULL},
      {"/a/.b/c..d/...", NULL},      {"/d", NULL},
      {"/\\u00e9t\\u00e9", NULL},    {"/a b/c", NULL},
      {"data/p", "absolute"},        {"./data", "absolute"},
      {"~/data", "absolute"},        {"/", "root"},
      {"//", "empty component"},     {"/a//b", "empty component"},
      {"/a///", "empty component"},
      {"/a//", "empty component"},   {"/a/./b", "\".\" component"},
      {"/.", "\"." "\" component"},  {"/a/..", "\"..\" component"},
      {"/a/../b", "\"..\" component"}, {"/../etc", "\"..\" component"},
      {"/data/p/../../etc", "\"..\" component"},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char body[512];
    snprintf(body, sizeof body,
             "{\"id\":\"a\",\"input\":{\"stream\":\"s\"},\"directory\":\"%s\"}",
             c[i].dir);
    b2s_acq_request r;
    b2s_acq_request_init(&r);
    b2s_acq_err e;
    /* check 2 takes them all: check 7 comes after the input's checks */
    assert_int_equal(b2s_acq_request_parse(body, strlen(body), &r, &e), 0);
    /* the canonical form reads back as itself, a trailing '/' or not */
    char *canon = b2s_acq_request_canonical(&r);
    char *again = canon_of(canon);
    assert_string_equal(canon, again);
    free(canon);
    free(again);
    int rc = b2s_acq_request_check_directory(&r, &e);
    if (c[i].says == NULL) {
      if (rc != 0)
        fail_msg("%s refused: %s", c[i].dir, e.message);
    } else {
      if (rc != B2S_ACQ_E_BAD_DIRECTORY)
        fail_msg("%s taken", c[i].dir);
      assert_string_equal(e.field, "directory");
      if (!strstr(e.message, c[i].says))
        fail_msg("%s: \"%s\" does not say %s", c[i].dir, e.message, c[i].says);
      assert_int_equal(b2s_acq_code_status(e.code), 400);
    }
    b2s_acq_request_fini(&r);
  }
  /* bytes that are not UTF-8 can only come from a caller that did not
   * read JSON */
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  snprintf(r.directory, sizeof r.directory, "/a/\xff");
  assert_int_equal(b2s_acq_request_check_directory(&r, NULL),
                   B2S_ACQ_E_BAD_DIRECTORY);
}

/* The series map as the files get it (3.1: JSON to msgpack). */
static void test_arm_series_msgpack(void **state) {
  (void)state;
  b2s_acq_request r;
  b2s_acq_request_init(&r);
  const char *body =
      "{" BASE ",\"series\":{\"u\":18446744073709551615,\"n\":-1,\"f\":1.0,"
      "\"t\":true,\"z\":null,\"s\":\"\\u00e9\",\"a\":[1,{}],\"i\":300}}";
  b2s_acq_err e;
  int rc = b2s_acq_request_parse(body, strlen(body), &r, &e);
  if (rc)
    fail_msg("%s", e.message);
  static const uint8_t want[] = {
      0x88,                                             /* map of 8 */
      0xa1, 'u', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
      0xa1, 'n', 0xff,
      0xa1, 'f', 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0,
      0xa1, 't', 0xc3,
      0xa1, 'z', 0xc0,
      0xa1, 's', 0xa2, 0xc3, 0xa9,
      0xa1, 'a', 0x92, 0x01, 0x80,
      0xa1, 'i', 0xcd, 0x01, 0x2c,
  };
  assert_int_equal(r.series_mp_len, sizeof want);
  assert_memory_equal(r.series_mp, want, sizeof want);
  assert_string_equal(r.series,
                      "{\"a\":[1,{}],\"f\":1.0,\"i\":300,\"n\":-1,\"s\":"
                      "\"\xc3\xa9\",\"t\":true,\"u\":18446744073709551615,"
                      "\"z\":null}");
  b2s_acq_request_fini(&r);
}

/* A repeated arm (6.2): the same once defaults are applied. */
static void test_arm_compare(void **state) {
  (void)state;
  static const struct {
    const char *a, *b;
    const char *differs;             /* NULL: the same arm */
  } cases[] = {
      {"{" BASE "}", "{" BASE "}", NULL},
      {"{" BASE "}", "{\"directory\":\"/data/p/\",\"input\":{\"stream\":"
                     "\"det1\"},\"id\":\"scan-42\",\"frames\":0}", NULL},
      {"{" BASE ",\"series\":{\"a\":1,\"b\":{\"x\":1,\"y\":2}}}",
       "{" BASE ",\"series\":{\"b\":{\"y\":2,\"x\":1},\"a\":1}}", NULL},
      {"{" BASE ",\"series\":{\"a\":1.5}}", "{" BASE ",\"series\":{\"a\":15e-1}}",
       NULL},
      {"{" BASE ",\"series\":{\"a\":1}}", "{" BASE ",\"series\":{\"a\":1.0}}",
       "series"},
      {"{" BASE ",\"series\":{\"a\":[1,2]}}", "{" BASE ",\"series\":{\"a\":[2,1]}}",
       "series"},
      {"{" BASE ",\"frames\":5}", "{" BASE ",\"frames\":6}", "frames"},
      {"{" BASE ",\"frames\":5,\"on_loss\":\"count\"}",
       "{" BASE ",\"frames\":6,\"on_loss\":\"fail\"}", "frames"},
      {"{" BASE ",\"on_loss\":\"count\"}", "{" BASE "}", "on_loss"},
      {"{" BASE ",\"first_frame\":0}", "{" BASE "}", "first_frame"},
      {"{" BASE "}", "{\"id\":\"scan-43\",\"input\":{\"stream\":\"det1\"},"
                     "\"directory\":\"/data/p\"}", "id"},
      {"{" BASE "}", "{\"id\":\"scan-42\",\"input\":{\"stream\":\"det1\","
                     "\"template\":\"t\"},\"directory\":\"/data/p\"}", "input"},
      {"{" BASE "}", "{\"id\":\"scan-42\",\"input\":{\"stream\":\"det1\"},"
                     "\"directory\":\"/data/q\"}", "directory"},
      {"{" BASE "}", "{\"id\":\"scan-42\",\"input\":{\"stream\":\"det1\"},"
                     "\"directory\":\"/data/p//\"}", "directory"},
      {"{" BASE ",\"create_directory\":true}", "{" BASE "}", "create_directory"},
      {"{" BASE ",\"file_template\":\"{id}_{channel}_{file:06}.b2frame\"}",
       "{" BASE ",\"file_template\":\"{id}_{channel}_{file:6}.b2frame\"}", NULL},
      {"{" BASE ",\"frames_per_file\":1}", "{" BASE "}", "frames_per_file"},
      {"{" BASE ",\"overwrite\":\"replace\"}", "{" BASE "}", "overwrite"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    b2s_acq_request a, b;
    b2s_acq_request_init(&a);
    b2s_acq_request_init(&b);
    b2s_acq_err e;
    int ra = b2s_acq_request_parse(cases[i].a, strlen(cases[i].a), &a, &e);
    int rb = b2s_acq_request_parse(cases[i].b, strlen(cases[i].b), &b, &e);
    if (ra || rb) {
      /* {file:6} is no placeholder: the case is the refusal */
      assert_int_equal(rb, B2S_ACQ_E_BAD_TEMPLATE);
      b2s_acq_request_fini(&a);
      continue;
    }
    const char *m = NULL;
    int rc = b2s_acq_request_compare(&a, &b, &m);
    char *ca = b2s_acq_request_canonical(&a);
    char *cb = b2s_acq_request_canonical(&b);
    if (cases[i].differs == NULL) {
      if (rc != 0)
        fail_msg("case %zu: %s differs", i, m);
      assert_string_equal(ca, cb);
    } else {
      assert_int_equal(rc, 1);
      assert_string_equal(m, cases[i].differs);
      assert_string_not_equal(ca, cb);
      m = NULL;
      assert_int_equal(b2s_acq_request_compare(&b, &a, &m), 1);
      assert_string_equal(m, cases[i].differs);
    }
    assert_int_equal(b2s_acq_request_compare(&a, &b, NULL), rc);
    free(ca);
    free(cb);
    b2s_acq_request_fini(&a);
    b2s_acq_request_fini(&b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_codes_match_doc),
      cmocka_unit_test(test_failure_codes_match_doc),
      cmocka_unit_test(test_codes_match_openapi),
      cmocka_unit_test(test_code_lookups),
      cmocka_unit_test(test_error_body),
      cmocka_unit_test(test_json_duplicates),
      cmocka_unit_test(test_json_depth),
      cmocka_unit_test(test_json_oversize),
      cmocka_unit_test(test_json_utf8),
      cmocka_unit_test(test_json_trailing_and_shape),
      cmocka_unit_test(test_json_numbers),
      cmocka_unit_test(test_json_double_text),
      cmocka_unit_test(test_json_times),
      cmocka_unit_test(test_arm_defaults_canonical),
      cmocka_unit_test(test_arm_fields_parsed),
      cmocka_unit_test(test_arm_refusals),
      cmocka_unit_test(test_arm_directory_check),
      cmocka_unit_test(test_arm_series_msgpack),
      cmocka_unit_test(test_arm_compare),
  };
  return ts_run_tests(tests, NULL, NULL);
}

/* An acquisition's file names and rollover without the daemon
 * (acq/b2s_acq_names.h, docs/ACQUISITIONS.md 3.3 and 3.4): the template's
 * syntax and the arm's rules with their refusals, names numbered from 1
 * with each placeholder, no name that leaves the directory or hides in
 * it, the match of a directory's entries (the names we create and no
 * other), no two file numbers with one name, and which file and chunk
 * each frame goes to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_acq_names.h"
#include "b2s_acq_request.h"        /* B2S_ACQ_DEFAULT_TEMPLATE */
#include "ts.h"

static void parse_ok(const char *text, b2s_acq_template *t) {
  b2s_acq_err e;
  int rc = b2s_acq_template_parse(text, t, &e);
  if (rc != 0)
    fail_msg("%s refused: %s", text, e.message);
}

static void parse_refused(const char *text, const char *says) {
  b2s_acq_template t;
  b2s_acq_err e;
  int rc = b2s_acq_template_parse(text, &t, &e);
  if (rc != B2S_ACQ_E_BAD_TEMPLATE)
    fail_msg("%s: %d, expected bad_template", text ? text : "NULL", rc);
  assert_int_equal(e.code, B2S_ACQ_E_BAD_TEMPLATE);
  assert_string_equal(e.field, "file_template");
  if (says && !strstr(e.message, says))
    fail_msg("%s: \"%s\" does not say \"%s\"", text, e.message, says);
}

static void test_template_syntax(void **state) {
  (void)state;
  b2s_acq_template t;
  parse_ok("{id}_{channel}_{file:06}.b2frame", &t);
  assert_int_equal(t.nseg, 6);
  assert_int_equal(t.seg[0].kind, B2S_ACQ_SEG_ID);
  assert_int_equal(t.seg[1].kind, B2S_ACQ_SEG_LIT);
  assert_int_equal(t.seg[1].len, 1);
  assert_int_equal(t.seg[2].kind, B2S_ACQ_SEG_CHANNEL);
  assert_int_equal(t.seg[4].kind, B2S_ACQ_SEG_FILE);
  assert_int_equal(t.seg[4].width, 6);
  assert_int_equal(t.seg[5].kind, B2S_ACQ_SEG_LIT);
  assert_int_equal(t.seg[5].len, 8);
  assert_true(t.has_id && t.has_channel && t.has_file && !t.has_stream);
  parse_ok("x.b2frame", &t);                              /* 9 bytes */
  assert_int_equal(t.nseg, 1);
  assert_false(t.has_file);
  parse_ok("{stream}{file}.b2frame", &t);
  assert_true(t.has_stream);
  assert_int_equal(t.seg[1].width, 0);
  parse_ok("{file:01}{file:09}{file:010}{file:012}a+b-c_d.b2frame", &t);
  assert_int_equal(t.seg[0].width, 1);
  assert_int_equal(t.seg[1].width, 9);
  assert_int_equal(t.seg[2].width, 10);
  assert_int_equal(t.seg[3].width, 12);
  char longest[256];
  memset(longest, 'a', 247);
  strcpy(longest + 247, ".b2frame");
  parse_ok(longest, &t);                                  /* 255 bytes */
  longest[246] = 'a';
  char over[257];
  memset(over, 'a', 248);
  strcpy(over + 248, ".b2frame");
  parse_refused(over, "9 to 255 bytes");                  /* 256 */
  parse_refused(".b2frame", "9 to 255 bytes");
  parse_refused("", "9 to 255 bytes");
  parse_refused(NULL, "9 to 255 bytes");
  parse_refused("{id}.h5", NULL);
  parse_refused("{id}_{file}.b2frame.tmp", "end with .b2frame");
  parse_refused("{id}.records.b2frame", "not with .records.b2frame");
  parse_refused("{id}.B2FRAME", "end with .b2frame");
  /* placeholders */
  parse_refused("{ID}.b2frame", "{ID} is not a placeholder");
  parse_refused("{date}.b2frame", "{date} is not a placeholder");
  parse_refused("{}.b2frame", "{} is not a placeholder");
  parse_refused("{file:6}.b2frame", "{file:6} is not a placeholder");
  parse_refused("{file:00}.b2frame", "N from 1 to 12");
  parse_refused("{file:013}.b2frame", "N from 1 to 12");
  parse_refused("{file:001}.b2frame", "N from 1 to 12");
  parse_refused("{file:0123}.b2frame", "is not a placeholder");
  parse_refused("{file:0a}.b2frame", "is not a placeholder");
  parse_refused("{ id }.b2frame", "is not a placeholder");
  parse_refused("{id.b2frame", "without its '}'");
  parse_refused("{id{file}}.b2frame", "without its '}'");
  parse_refused("id}.b2frame", "'}' is not allowed");
  /* path escapes and characters a name may not hold */
  parse_refused("../{id}.b2frame", "'/' is not allowed");
  parse_refused("/data/{id}.b2frame", "'/' is not allowed");
  parse_refused("a/../../{id}.b2frame", "'/' is not allowed");
  parse_refused("a\\b.b2frame", "'\\' is not allowed");
  parse_refused("a b.b2frame", "0x20 is not allowed");
  parse_refused("a\nb.b2frame", "0x0a is not allowed");
  parse_refused("\xc3\xa9t\xc3\xa9.b2frame", "0xc3 is not allowed");
  parse_refused("a:b.b2frame", "':' is not allowed");
  parse_refused("a*.b2frame", "'*' is not allowed");
  parse_refused("$id.b2frame", "'$' is not allowed");
  parse_refused("%06d.b2frame", "'%' is not allowed");
}

static void check_refused(const b2s_acq_template *t, bool source,
                          uint64_t frames, uint32_t fpf,
                          const b2s_acq_namevals *v, const char *says) {
  b2s_acq_err e;
  int rc = b2s_acq_template_check(t, source, frames, fpf, v, &e);
  if (rc != B2S_ACQ_E_BAD_TEMPLATE)
    fail_msg("%s: %d, expected bad_template", t->text, rc);
  assert_string_equal(e.field, "file_template");
  if (!strstr(e.message, says))
    fail_msg("%s: \"%s\" does not say \"%s\"", t->text, e.message, says);
}

static void test_template_arm_rules(void **state) {
  (void)state;
  b2s_acq_template t;
  b2s_acq_namevals stream = {.id = "scan-42", .stream = "det1",
                             .channel = "data"};
  b2s_acq_namevals source = {.id = "scan-42"};   /* stream, channel unknown */
  parse_ok("{id}.b2frame", &t);
  assert_int_equal(b2s_acq_template_check(&t, false, 100, 0, &stream, NULL), 0);
  check_refused(&t, false, 100, 10, &stream, "needs {file}");
  check_refused(&t, true, 100, 0, &source, "needs {channel}");
  parse_ok("{id}_{channel}.b2frame", &t);
  assert_int_equal(b2s_acq_template_check(&t, true, 0, 0, &source, NULL), 0);
  /* names that would hide in the directory */
  parse_ok(".{id}_{file}.b2frame", &t);
  check_refused(&t, false, 0, 1, &stream, "starting with '.'");
  parse_ok("..b2frame", &t);
  check_refused(&t, false, 0, 0, &stream, "starting with '.'");
  /* the longest name, with the longest values it can have */
  char text[256];
  memset(text, 'a', 180);
  strcpy(text + 180, "{id}{file:06}.b2frame");    /* 180 + id + 6.. + 8 */
  parse_ok(text, &t);
  b2s_acq_namevals v = {.id = "x", .stream = "s", .channel = "data"};
  assert_int_equal(b2s_acq_template_check(&t, false, 0, 1, &v, NULL), 0);
  /* frames 0 and one per file: file numbers up to 2^63 - 1, 19 digits */
  char id61[62];
  memset(id61, 'i', 61);
  id61[61] = '\0';
  v.id = id61;                       /* 180 + 61 + 6 + 8 = 255 */
  assert_int_equal(b2s_acq_template_check(&t, false, 999999, 1, &v, NULL), 0);
  check_refused(&t, false, 1000000, 1, &v, "names of 256 bytes");
  check_refused(&t, false, 0, 1, &v, "names of 268 bytes");
  /* an unknown id counts 64 bytes */
  b2s_acq_namevals unknown = {.stream = "s", .channel = "c"};
  check_refused(&t, false, 10, 1, &unknown, "names of 258 bytes");
  memset(text, 'a', 183);
  strcpy(text + 183, "{channel}.b2frame");
  parse_ok(text, &t);
  assert_int_equal(b2s_acq_template_check(&t, true, 0, 0, &source, NULL), 0);
  text[183] = 'a';
  strcpy(text + 184, "{channel}.b2frame");
  parse_ok(text, &t);
  check_refused(&t, true, 0, 0, &source, "names of 256 bytes");
}

static void expand_is(const char *tmpl, const b2s_acq_namevals *v,
                      uint64_t file, const char *want) {
  b2s_acq_template t;
  parse_ok(tmpl, &t);
  char out[B2S_ACQ_FILE_NAME_MAX + 1];
  int n = b2s_acq_template_expand(&t, v, file, out, sizeof out);
  if (n < 0)
    fail_msg("%s, file %llu: %d", tmpl, (unsigned long long)file, n);
  assert_int_equal(n, (int)strlen(want));
  assert_string_equal(out, want);
  /* what we create, we recognise */
  assert_true(b2s_acq_template_match(&t, v, out));
}

static void test_template_expand(void **state) {
  (void)state;
  b2s_acq_namevals v = {.id = "scan-42", .stream = "det1", .channel = "data"};
  /* numbered from 1, as SIMPLON's filewriter and odin-data number theirs */
  expand_is(B2S_ACQ_DEFAULT_TEMPLATE, &v, 1, "scan-42_data_000001.b2frame");
  expand_is(B2S_ACQ_DEFAULT_TEMPLATE, &v, 2, "scan-42_data_000002.b2frame");
  expand_is(B2S_ACQ_DEFAULT_TEMPLATE, &v, 999999,
            "scan-42_data_999999.b2frame");
  /* more digits than the width are kept, never cut */
  expand_is(B2S_ACQ_DEFAULT_TEMPLATE, &v, 1234567,
            "scan-42_data_1234567.b2frame");
  expand_is("{file}.b2frame", &v, 42, "42.b2frame");
  expand_is("{file}.b2frame", &v, UINT64_C(9223372036854775807),
            "9223372036854775807.b2frame");
  expand_is("{file:012}.b2frame", &v, 7, "000000000007.b2frame");
  expand_is("{file:01}.b2frame", &v, 7, "7.b2frame");
  expand_is("{stream}.{id}.{channel}.b2frame", &v, 1,
            "det1.scan-42.data.b2frame");
  expand_is("{id}{id}+{file:03}-{file}.b2frame", &v, 12,
            "scan-42scan-42+012-12.b2frame");
  expand_is("lit.b2frame", &v, 5, "lit.b2frame");
  b2s_acq_template t;
  char out[300];
  parse_ok(B2S_ACQ_DEFAULT_TEMPLATE, &t);
  /* no file 0 */
  assert_int_equal(b2s_acq_template_expand(&t, &v, 0, out, sizeof out),
                   B2S_E_ARG);
  /* values that are missing or would make a path */
  b2s_acq_namevals bad = {.id = "scan-42", .stream = "det1"};
  assert_int_equal(b2s_acq_template_expand(&t, &bad, 1, out, sizeof out),
                   B2S_E_ARG);
  assert_int_equal(b2s_acq_template_expand(&t, NULL, 1, out, sizeof out),
                   B2S_E_ARG);
  static const char *unsafe[] = {"../x", "a/b", "/", "", "a b", "a\\b",
                                 "\xc3\xa9", NULL};
  for (int i = 0; unsafe[i]; i++) {
    bad.channel = unsafe[i];
    if (b2s_acq_template_expand(&t, &bad, 1, out, sizeof out) != B2S_E_ARG)
      fail_msg("channel \"%s\" expanded to %s", unsafe[i], out);
  }
  char long65[66];
  memset(long65, 'c', 65);
  long65[65] = '\0';
  bad.channel = long65;
  assert_int_equal(b2s_acq_template_expand(&t, &bad, 1, out, sizeof out),
                   B2S_E_ARG);
  /* a name that would start with '.' from its value */
  parse_ok("{channel}{file}.b2frame", &t);
  bad.channel = ".";
  assert_int_equal(b2s_acq_template_expand(&t, &bad, 1, out, sizeof out),
                   B2S_E_ARG);
  bad.channel = "..";
  assert_int_equal(b2s_acq_template_expand(&t, &bad, 1, out, sizeof out),
                   B2S_E_ARG);
  /* too small a buffer, and no name over 255 bytes */
  parse_ok(B2S_ACQ_DEFAULT_TEMPLATE, &t);
  assert_int_equal(b2s_acq_template_expand(&t, &v, 1, out, 27), -ENAMETOOLONG);
  assert_int_equal(b2s_acq_template_expand(&t, &v, 1, out, 28), 27);
  char text[256];
  memset(text, 'a', 182);
  strcpy(text + 182, "{id}{file}.b2frame");
  parse_ok(text, &t);
  char id64[65];
  memset(id64, 'i', 64);
  id64[64] = '\0';
  b2s_acq_namevals big = {.id = id64};
  assert_int_equal(b2s_acq_template_expand(&t, &big, 1, out, sizeof out), 255);
  assert_int_equal(b2s_acq_template_expand(&t, &big, 10, out, sizeof out),
                   -ENAMETOOLONG);
}

/* Rollover: every file number has its own name, and its name gives the
 * number back. */
static void test_rollover_names_unique(void **state) {
  (void)state;
  static const char *tmpls[] = {"{id}_{file:03}.b2frame", "{file}{file}.b2frame",
                                "{file}.b2frame", "{id}{file:01}.b2frame", NULL};
  b2s_acq_namevals v = {.id = "a1", .stream = "s", .channel = "data"};
  for (int k = 0; tmpls[k]; k++) {
    b2s_acq_template t;
    parse_ok(tmpls[k], &t);
    enum { N = 2500 };
    static char names[N][64];
    for (uint64_t f = 1; f <= N; f++) {
      int n = b2s_acq_template_expand(&t, &v, f, names[f - 1], 64);
      assert_true(n > 0);
      assert_true(b2s_acq_template_match(&t, &v, names[f - 1]));
    }
    /* sorted, no two alike */
    qsort(names, N, sizeof names[0],
          (int (*)(const void *, const void *))strcmp);
    for (int i = 1; i < N; i++)
      if (strcmp(names[i - 1], names[i]) == 0)
        fail_msg("%s gives %s twice", tmpls[k], names[i]);
  }
}

static void match_is(const char *tmpl, const b2s_acq_namevals *v,
                     const char *name, bool want) {
  b2s_acq_template t;
  parse_ok(tmpl, &t);
  if (b2s_acq_template_match(&t, v, name) != want)
    fail_msg("%s %s %s", tmpl, want ? "does not match" : "matches", name);
}

/* Check 9 of 6.1 and `overwrite: replace` (3.1) need to know which entries
 * of a directory are names the acquisition would create: those and their
 * records companions, and nothing else. */
static void test_template_match(void **state) {
  (void)state;
  b2s_acq_namevals v = {.id = "scan-42", .stream = "det1", .channel = "data"};
  const char *d = B2S_ACQ_DEFAULT_TEMPLATE;
  match_is(d, &v, "scan-42_data_000001.b2frame", true);
  match_is(d, &v, "scan-42_data_000001.records.b2frame", true);
  match_is(d, &v, "scan-42_data_123456789.b2frame", true);
  match_is(d, &v, "scan-42_data_000000.b2frame", false);   /* no file 0 */
  match_is(d, &v, "scan-42_data_00001.b2frame", false);    /* too narrow */
  match_is(d, &v, "scan-42_data_0000001.b2frame", false);  /* a zero too many */
  match_is(d, &v, "scan-42_data_000001.b2frame.tmp", false);
  match_is(d, &v, "scan-42_data_000001.records.records.b2frame", false);
  match_is(d, &v, "scan-43_data_000001.b2frame", false);
  match_is(d, &v, "scan-42_dat_000001.b2frame", false);
  match_is(d, &v, "scan-42_data_00000a.b2frame", false);
  match_is(d, &v, "scan-42_data_.b2frame", false);
  match_is(d, &v, ".b2s-scan-42_data_000002.b2frame", false);
  match_is(d, &v, "", false);
  match_is(d, &v, "other.b2frame", false);
  match_is("{file}.b2frame", &v, "1.b2frame", true);
  match_is("{file}.b2frame", &v, "10.b2frame", true);
  match_is("{file}.b2frame", &v, "01.b2frame", false);
  match_is("{file}.b2frame", &v, "0.b2frame", false);
  match_is("{file}.b2frame", &v, "99999999999999999999.b2frame", false);
  match_is("{file}.b2frame", &v, "9223372036854775807.b2frame", true);
  match_is("{file}.b2frame", &v, "9223372036854775808.b2frame", false);
  match_is("{file:012}.b2frame", &v, "18446744073709551615.b2frame", false);
  match_is("x.b2frame", &v, "x.b2frame", true);
  match_is("x.b2frame", &v, "x.records.b2frame", true);
  match_is("x.b2frame", &v, "y.b2frame", false);
  /* a source's stream and channel are not known at arm: any name part */
  b2s_acq_namevals src = {.id = "scan-42"};
  match_is("{id}_{channel}_{file:03}.b2frame", &src,
           "scan-42_threshold_1_001.b2frame", true);
  match_is("{id}_{channel}_{file:03}.b2frame", &src,
           "scan-42_a.b_001.records.b2frame", true);
  match_is("{id}_{channel}_{file:03}.b2frame", &src, "scan-42__001.b2frame",
           false);                   /* a channel is never empty */
  match_is("{id}_{channel}_{file:03}.b2frame", &src,
           "scan-42_a b_001.b2frame", false);
  match_is("{stream}{file}.b2frame", &src, "det12.b2frame", true);
  char name[300];
  memset(name, 'c', 65);
  snprintf(name + 65, sizeof name - 65, "_001.b2frame");
  char full[320];
  snprintf(full, sizeof full, "scan-42_%s", name);
  match_is("{id}_{channel}_{file:03}.b2frame", &src, full, false);  /* 65 */
  /* a name past 255 bytes is not ours */
  char longn[400];
  memset(longn, '1', 300);
  strcpy(longn + 300, ".b2frame");
  match_is("{file}.b2frame", &v, longn, false);
  /* a records companion whose data name would be past 255 bytes */
  memset(longn, '1', 250);
  strcpy(longn + 250, ".records.b2frame");
  match_is("{file}.b2frame", &v, longn, false);
  longn[247] = '\0';
  strcat(longn, ".records.b2frame");          /* data name 255 bytes */
  match_is("{file}.b2frame", &v, longn, false);   /* too many digits */
}

static void test_records_and_names(void **state) {
  (void)state;
  char out[300];
  assert_int_equal(b2s_acq_records_name("x.b2frame", out, sizeof out), 17);
  assert_string_equal(out, "x.records.b2frame");
  assert_int_equal(b2s_acq_records_name("x", out, sizeof out), 17);
  assert_string_equal(out, "x.records.b2frame");
  assert_int_equal(b2s_acq_records_name("x.b2frame", out, 17), -ENAMETOOLONG);
  /* ids and stream names */
  assert_true(b2s_acq_id_valid("scan-42", 7));
  assert_true(b2s_acq_id_valid("_", 1));
  assert_true(b2s_acq_id_valid("a.b", 3));
  assert_false(b2s_acq_id_valid(".a", 2));
  assert_false(b2s_acq_id_valid("", 0));
  assert_false(b2s_acq_id_valid(NULL, 3));
  assert_false(b2s_acq_id_valid("a+b", 3));
  assert_false(b2s_acq_id_valid("a\0b", 3));
  char s65[66];
  memset(s65, 'a', 65);
  assert_true(b2s_acq_id_valid(s65, 64));
  assert_false(b2s_acq_id_valid(s65, 65));
  /* channels made file-safe */
  static const struct {
    const char *in, *out;
  } ch[] = {
      {"threshold_1", "threshold_1"}, {"a b/c", "a_b_c"},
      {".hidden", "_hidden"},         {"..", "_."},
      {"", "_"},                      {"\xc3\xa9t\xc3\xa9", "_t_"},
      {"a+b", "a+b"},                 {"\xff", "_"},
  };
  for (size_t i = 0; i < sizeof ch / sizeof ch[0]; i++) {
    int n = b2s_acq_channel_fs_name(ch[i].in, out, sizeof out);
    assert_int_equal(n, (int)strlen(ch[i].out));
    assert_string_equal(out, ch[i].out);
  }
  assert_int_equal(b2s_acq_channel_fs_name(NULL, out, sizeof out), 1);
  assert_string_equal(out, "_");
  char longc[200];
  memset(longc, 'c', 199);
  longc[199] = '\0';
  assert_int_equal(b2s_acq_channel_fs_name(longc, out, sizeof out), 64);
  assert_int_equal(b2s_acq_channel_fs_name(longc, out, 10), 9);
  assert_int_equal(b2s_acq_channel_fs_name(longc, out, 1), -ENAMETOOLONG);
  /* what it gives is a safe name part */
  assert_int_equal(b2s_acq_channel_fs_name("a/../b", out, sizeof out), 6);
  b2s_acq_template t;
  parse_ok("{channel}_{file}.b2frame", &t);
  b2s_acq_namevals v = {.id = "i", .stream = "s", .channel = out};
  char name[300];
  assert_int_equal(b2s_acq_template_expand(&t, &v, 1, name, sizeof name), 16);
  assert_string_equal(name, "a_.._b_1.b2frame");
}

static void test_rollover_place(void **state) {
  (void)state;
  uint64_t file, chunk;
  /* frames_per_file 0: one file, the chunk index is the frame number */
  b2s_acq_place(0, 0, &file, &chunk);
  assert_true(file == 1 && chunk == 0);
  b2s_acq_place(0, UINT64_C(123456789012), &file, &chunk);
  assert_true(file == 1 && chunk == UINT64_C(123456789012));
  /* N per file: file f div N + 1, chunk f mod N */
  static const struct {
    uint32_t n;
    uint64_t f, file, chunk;
  } c[] = {
      {1000, 0, 1, 0},     {1000, 999, 1, 999}, {1000, 1000, 2, 0},
      {1000, 3599, 4, 599}, {1, 0, 1, 0},       {1, 5, 6, 0},
      {7, 48, 7, 6},       {2147483647u, 2147483647u, 2, 0},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    b2s_acq_place(c[i].n, c[i].f, &file, &chunk);
    assert_true(file == c[i].file);
    assert_true(chunk == c[i].chunk);
    /* and back: the file's first frame plus the chunk */
    assert_true(b2s_acq_file_first(c[i].n, file) + chunk == c[i].f);
  }
  assert_true(b2s_acq_file_first(1000, 1) == 0);
  assert_true(b2s_acq_file_first(1000, 4) == 3000);
  assert_true(b2s_acq_file_first(0, 1) == 0);
  /* the last file an acquisition reaches */
  assert_true(b2s_acq_file_max(3600, 1000) == 4);
  assert_true(b2s_acq_file_max(3000, 1000) == 3);
  assert_true(b2s_acq_file_max(3001, 1000) == 4);
  assert_true(b2s_acq_file_max(1, 1000) == 1);
  assert_true(b2s_acq_file_max(3600, 0) == 1);
  assert_true(b2s_acq_file_max(0, 0) == 1);
  assert_true(b2s_acq_file_max(0, 1) == UINT64_C(9223372036854775807));
  assert_true(b2s_acq_file_max(0, 1000) == UINT64_C(9223372036854776));
  /* a producer's frame number against first_frame */
  uint64_t f = 99;
  assert_int_equal(b2s_acq_frame_number(10, 9, &f), B2S_E_FRAME_LATE);
  assert_true(f == 99);
  assert_int_equal(b2s_acq_frame_number(10, 10, &f), 0);
  assert_true(f == 0);
  assert_int_equal(b2s_acq_frame_number(10, 1010, &f), 0);
  assert_true(f == 1000);
  assert_int_equal(b2s_acq_frame_number(0, UINT64_MAX, &f), 0);
  assert_true(f == UINT64_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_template_syntax),
      cmocka_unit_test(test_template_arm_rules),
      cmocka_unit_test(test_template_expand),
      cmocka_unit_test(test_rollover_names_unique),
      cmocka_unit_test(test_template_match),
      cmocka_unit_test(test_records_and_names),
      cmocka_unit_test(test_rollover_place),
  };
  return ts_run_tests(tests, NULL, NULL);
}

/* docs/PROTOCOL.md against the code, where that is cheap: the STATS
 * members daemon/ops/stats.c writes are in the document's STATS table (and
 * the table lists nothing stats.c does not write), the shared-memory
 * layout tables give the offsets and sizes of proto/b2s_shm.h, and the
 * constants and stream-name limit are those of the headers.  No daemon:
 * the STATS members are read from the source ($B2S_STATS_SOURCE); the
 * daemon suite checks a real STATS_REPLY too (test_daemon_proto.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_config.h"
#include "b2s_shm.h"
#include "protocol_doc.h"
#include "textfile.h"
#include "ts.h"

static char *read_file(const char *env) {
  const char *path = getenv(env);
  if (path == NULL)
    fail_msg("%s is not set (tests/meson.build sets it)", env);
  char *text = ts_read_text(path, NULL);
  if (text == NULL)
    fail_msg("cannot read %s", path);
  return text;
}

/* ---- STATS ------------------------------------------------------------------- */

/* Whether word occurs in text as a whole identifier. */
static bool has_word(const char *text, const char *word) {
  size_t n = strlen(word);
  for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
    bool left = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    bool right = !(isalnum((unsigned char)p[n]) || p[n] == '_');
    if (left && right)
      return true;
  }
  return false;
}

/* Every JSON member name stats.c writes (the C text `\"name\":`) is in the
 * table, and every member of the table is named in stats.c. */
static void test_stats_members_match_source(void **state) {
  (void)state;
  char *doc = pdoc_read();
  char *src = read_file("B2S_STATS_SOURCE");
  static pdoc_member members[256];
  int n = pdoc_stats_members(doc, members, 256);
  assert_true(n > 10);
  int found = 0;
  for (const char *p = strstr(src, "\\\""); p; p = strstr(p, "\\\"")) {
    p += 2;
    size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
    if (len == 0 || strncmp(p + len, "\\\":", 3) != 0)
      continue;
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)len, p);
    p += len + 3;
    if (strcmp(key, "daemon") == 0 || strcmp(key, "streams") == 0)
      continue;                  /* the two objects themselves */
    if (!pdoc_member_find(members, n, "daemon", key) &&
        !pdoc_member_find(members, n, "stream", key) &&
        !pdoc_member_find(members, n, "b2nd", key))
      fail_msg("stats.c writes \"%s\", which the STATS table of "
               "docs/PROTOCOL.md 4.5 does not list", key);
    found++;
  }
  assert_true(found > 10);
  for (int i = 0; i < n; i++)
    if (!has_word(src, members[i].key))
      fail_msg("docs/PROTOCOL.md 4.5 lists %s.%s, which stats.c does not "
               "write", members[i].object, members[i].key);
  free(src);
  free(doc);
}

/* ---- shared memory --------------------------------------------------------------- */

typedef struct cfield {
  const char *name;
  size_t offset, size;
} cfield;

#define FIELD(type, f) {#f, offsetof(type, f), sizeof(((type *)0)->f)}

static const cfield header_fields[] = {
  FIELD(b2s_shm_header, magic),
  FIELD(b2s_shm_header, version),
  FIELD(b2s_shm_header, header_size),
  FIELD(b2s_shm_header, nslots),
  FIELD(b2s_shm_header, desc_size),
  FIELD(b2s_shm_header, slot_size),
  FIELD(b2s_shm_header, slot_stride),
  FIELD(b2s_shm_header, desc_offset),
  FIELD(b2s_shm_header, data_offset),
  FIELD(b2s_shm_header, total_size),
  FIELD(b2s_shm_header, creator_pid),
  FIELD(b2s_shm_header, producer_pid),
  FIELD(b2s_shm_header, generation),
  FIELD(b2s_shm_header, closed),
  FIELD(b2s_shm_header, reserved1),
  FIELD(b2s_shm_header, free_seq),
  FIELD(b2s_shm_header, waiters),
  FIELD(b2s_shm_header, reserved2),
  FIELD(b2s_shm_header, submitted),
  FIELD(b2s_shm_header, taken),
  FIELD(b2s_shm_header, released),
  FIELD(b2s_shm_header, reclaimed),
  FIELD(b2s_shm_header, waits),
  FIELD(b2s_shm_header, timeouts),
  FIELD(b2s_shm_header, reserved3),
};

static const cfield desc_fields[] = {
  FIELD(b2s_shm_desc, state),
  FIELD(b2s_shm_desc, owner_pid),
  FIELD(b2s_shm_desc, length),
  FIELD(b2s_shm_desc, buffer_id),
  FIELD(b2s_shm_desc, uses),
  FIELD(b2s_shm_desc, reserved),
};

/* The layout table of `heading` lists exactly the fields of the struct,
 * at their offsets, with their sizes, and they cover all `total` bytes. */
static void check_layout(const char *doc, const char *heading,
                         const cfield *fields, size_t nfields, size_t total) {
  char *sec = pdoc_section(doc, heading);
  pdoc_field rows[64];
  int n = pdoc_layout_rows(sec, rows, 64);
  long next = 0;
  for (int i = 0; i < n; i++) {
    size_t k = 0;
    while (k < nfields && strcmp(fields[k].name, rows[i].field) != 0)
      k++;
    if (k == nfields)
      fail_msg("%s lists %s, which proto/b2s_shm.h does not have", heading,
               rows[i].field);
    if ((size_t)rows[i].offset != fields[k].offset ||
        (size_t)rows[i].size != fields[k].size)
      fail_msg("%s: %s at %ld, %ld bytes; proto/b2s_shm.h: at %zu, %zu bytes",
               heading, rows[i].field, rows[i].offset, rows[i].size,
               fields[k].offset, fields[k].size);
    if (rows[i].offset != next)
      fail_msg("%s: %s at %ld, the row before ends at %ld", heading,
               rows[i].field, rows[i].offset, next);
    next = rows[i].offset + rows[i].size;
  }
  assert_int_equal(n, (int)nfields);
  assert_int_equal(next, (long)total);
  free(sec);
}

static void test_shm_layout_matches_header(void **state) {
  (void)state;
  char *doc = pdoc_read();
  check_layout(doc, "### 10.2", header_fields,
               sizeof header_fields / sizeof header_fields[0],
               sizeof(b2s_shm_header));
  check_layout(doc, "### 10.3", desc_fields,
               sizeof desc_fields / sizeof desc_fields[0],
               sizeof(b2s_shm_desc));
  free(doc);
}

/* The value a table of section sec gives for `name`. */
static unsigned long long constant(const char *sec, const char *name) {
  char pat[80];
  snprintf(pat, sizeof pat, "| `%s` | ", name);
  const char *p = strstr(sec, pat);
  if (p == NULL)
    fail_msg("docs/PROTOCOL.md does not give %s where expected", name);
  return strtoull(p + strlen(pat), NULL, 0);
}

/* The value the state table (`| value | `NAME` |`) gives for a state. */
static int state_value(const char *sec, const char *name) {
  char pat[40];
  snprintf(pat, sizeof pat, " | `%s` |", name);
  const char *p = strstr(sec, pat);
  if (p == NULL)
    fail_msg("section 10.4 does not give the state %s", name);
  while (p > sec && p[-1] != '|')
    p--;
  return atoi(p);
}

/* The constants, the worked geometry of section 10.1 and the slot state
 * values of 10.4 are those of proto/b2s_shm.h. */
static void test_shm_constants(void **state) {
  (void)state;
  char *doc = pdoc_read();
  char *sec = pdoc_section(doc, "### 10.1");
  assert_true(constant(sec, "magic") == B2S_SHM_MAGIC);
  assert_true(constant(sec, "version") == B2S_SHM_VERSION);
  assert_true(constant(sec, "header_size") == sizeof(b2s_shm_header));
  assert_true(constant(sec, "desc_size") == sizeof(b2s_shm_desc));
  assert_true(constant(sec, "align") == B2S_SHM_ALIGN);
  assert_true(constant(sec, "max_slots") == B2S_SHM_MAX_SLOTS);
  assert_true(constant(sec, "max_slot_size") == B2S_SHM_MAX_SLOT_SIZE);
  b2s_shm_geometry g;
  assert_int_equal(b2s_shm_geometry_compute(16, 4 << 20, &g), 0);
  assert_true(constant(sec, "slot_stride") == g.slot_stride);
  assert_true(constant(sec, "desc_offset") == g.desc_offset);
  assert_true(constant(sec, "data_offset") == g.data_offset);
  assert_true(constant(sec, "total_size") == g.total_size);
  free(sec);
  sec = pdoc_section(doc, "### 10.4");
  assert_int_equal(state_value(sec, "FREE"), B2S_SLOT_FREE);
  assert_int_equal(state_value(sec, "FILLING"), B2S_SLOT_FILLING);
  assert_int_equal(state_value(sec, "SUBMITTED"), B2S_SLOT_SUBMITTED);
  assert_int_equal(state_value(sec, "TAKEN"), B2S_SLOT_TAKEN);
  free(sec);
  free(doc);
}

/* ---- stream names ------------------------------------------------------------------ */

static void test_stream_name_limit(void **state) {
  (void)state;
  char *doc = pdoc_read();
  char *sec = pdoc_section(doc, "### 7.1");
  char want[64];
  snprintf(want, sizeof want, "1 to %d bytes", B2S_STREAM_NAME_MAX);
  if (strstr(sec, want) == NULL)
    fail_msg("section 7.1 does not say \"%s\"", want);
  free(sec);
  free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_stats_members_match_source),
    cmocka_unit_test(test_shm_layout_matches_header),
    cmocka_unit_test(test_shm_constants),
    cmocka_unit_test(test_stream_name_limit),
  };
  return ts_run_tests(tests, NULL, NULL);
}

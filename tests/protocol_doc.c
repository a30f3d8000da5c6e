/* See protocol_doc.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol_doc.h"

char *pdoc_read(void) {
  const char *path = getenv("B2S_PROTOCOL_MD");
  if (path == NULL)
    fail_msg("B2S_PROTOCOL_MD is not set (tests/meson.build sets it)");
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    fail_msg("cannot open %s", path);
  size_t cap = 1 << 16, len = 0;
  char *text = malloc(cap);
  size_t n;
  while ((n = fread(text + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len - 1 == 0)
      text = realloc(text, cap *= 2);
    assert_non_null(text);
  }
  fclose(f);
  text[len] = '\0';
  return text;
}

/* The number of '#' opening a heading line, 0 for other lines. */
static int heading_level(const char *line) {
  int n = 0;
  while (line[n] == '#')
    n++;
  return n > 0 && line[n] == ' ' ? n : 0;
}

char *pdoc_section(const char *text, const char *heading) {
  size_t hl = strlen(heading);
  const char *start = NULL;
  for (const char *line = text; *line;) {
    if ((line == text || line[-1] == '\n') && strncmp(line, heading, hl) == 0) {
      start = line;
      break;
    }
    const char *nl = strchr(line, '\n');
    line = nl ? nl + 1 : line + strlen(line);
  }
  if (start == NULL)
    fail_msg("the document has no section \"%s\"", heading);
  int level = heading_level(start);
  const char *end = strchr(start, '\n');
  while (end != NULL) {
    int l = heading_level(end + 1);
    if (l > 0 && l <= level)
      break;
    end = strchr(end + 1, '\n');
  }
  size_t n = end ? (size_t)(end - start) : strlen(start);
  char *out = malloc(n + 1);
  assert_non_null(out);
  memcpy(out, start, n);
  out[n] = '\0';
  return out;
}

/* Copy the line at p into buf[cap] (cut to fit); returns the start of
 * the next line, or NULL after the last one. */
static const char *next_line(const char *p, char *buf, size_t cap) {
  if (*p == '\0')
    return NULL;
  size_t n = strcspn(p, "\n");
  snprintf(buf, cap, "%.*s", (int)n, p);
  return p[n] ? p + n + 1 : p + n;
}

bool pdoc_member_find(const pdoc_member *m, int n, const char *object,
                      const char *key) {
  for (int i = 0; i < n; i++)
    if (strcmp(m[i].object, object) == 0 && strcmp(m[i].key, key) == 0)
      return true;
  return false;
}

int pdoc_stats_members(const char *text, pdoc_member *out, int max) {
  int n = 0;
  char line[512];
  for (const char *p = text; (p = next_line(p, line, sizeof line));) {
    pdoc_member m;
    if (sscanf(line, "| %15[a-z0-9] | `%63[a-z0-9_]` |", m.object, m.key) != 2 ||
        (strcmp(m.object, "daemon") != 0 && strcmp(m.object, "stream") != 0 &&
         strcmp(m.object, "b2nd") != 0))
      continue;
    if (pdoc_member_find(out, n, m.object, m.key))
      fail_msg("STATS member %s.%s is listed twice", m.object, m.key);
    assert_true(n < max);
    out[n++] = m;
  }
  return n;
}

int pdoc_layout_rows(const char *section, pdoc_field *out, int max) {
  int n = 0;
  char line[512];
  for (const char *p = section; (p = next_line(p, line, sizeof line));) {
    pdoc_field f;
    char type[32];
    if (sscanf(line, "| %ld | %ld | %31[^|]| %63[a-z0-9_] |", &f.offset,
               &f.size, type, f.field) != 4)
      continue;
    assert_true(n < max);
    out[n++] = f;
  }
  return n;
}

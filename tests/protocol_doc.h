/* docs/PROTOCOL.md as tests read it ($B2S_PROTOCOL_MD, set by
 * tests/meson.build): the whole text, one section, and the rows of the
 * tables the tests hold the code to.  Rows are recognised by their shape,
 * so a table may grow and be reordered. */
#ifndef PROTOCOL_DOC_H
#define PROTOCOL_DOC_H

#include <stdbool.h>
#include <stddef.h>

/* The document as a NUL-terminated text (malloc'ed: the caller frees it);
 * fails the test when it cannot be read. */
char *pdoc_read(void);

/* The section whose heading line starts with `heading` (e.g. "### 10.2";
 * any Markdown document, not only PROTOCOL.md),
 * up to the next heading of the same or a higher level, as a malloc'ed
 * copy; fails the test when there is none. */
char *pdoc_section(const char *text, const char *heading);

/* One row of the STATS table (section 4.5): `| daemon | `key` | ...`. */
typedef struct pdoc_member {
  char object[16];               /* "daemon" or "stream" */
  char key[64];
} pdoc_member;

/* The rows of the STATS table, at most max; returns how many (fails the
 * test when one is listed twice). */
int pdoc_stats_members(const char *text, pdoc_member *out, int max);
/* Whether the table lists key for object. */
bool pdoc_member_find(const pdoc_member *m, int n, const char *object,
                      const char *key);

/* One row of a layout table: `| offset | size | type | field | ...`. */
typedef struct pdoc_field {
  long offset, size;
  char field[64];
} pdoc_field;

/* The layout rows of section text, at most max; returns how many. */
int pdoc_layout_rows(const char *section, pdoc_field *out, int max);

#endif

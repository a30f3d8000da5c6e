/* libFuzzer target for what b2stream export reads of a series map for
 * NXmx (tools/cli_nxmeta.c): the table's values and the RFC 3339 dates.
 *
 * The first byte chooses: 'd' the rest is a date, which when it parses
 * must format and parse back to the same instant; anything else the rest
 * is a series map (msgpack), read within its bytes, whose texts hold no
 * NUL and whose dates format and parse back the same. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli_nxmeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void date_round_trip(int64_t ns) {
  char s[40];
  int64_t back;
  cli_nx_format_date(ns, s);
  if (cli_nx_parse_date(s, strlen(s), &back) != 0 || back != ns)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  /* an exact-size copy, so reading past the input is caught */
  uint8_t *p = malloc(size - 1 ? size - 1 : 1);
  if (p == NULL)
    return 0;
  memcpy(p, data + 1, size - 1);
  if (data[0] == 'd') {
    int64_t ns;
    if (cli_nx_parse_date((const char *)p, size - 1, &ns) == 0)
      date_round_trip(ns);
  } else {
    cli_nxmeta m;
    cli_nxmeta_read(p, size - 1, &m);
    if (m.naxes < 0 || m.naxes > CLI_NX_MAX_AXES)
      abort();
    for (int f = 0; f < NXF_COUNT; f++) {
      if (m.text[f] && !m.has[f])
        abort();
      if (m.has[f] && cli_nx_table[f].kind == NXK_DATE)
        date_round_trip(m.i[f]);
    }
    cli_nxmeta_fini(&m);
  }
  free(p);
  return 0;
}

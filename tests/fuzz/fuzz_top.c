/* libFuzzer target for `b2stream top`'s reading of the daemon's STATS
 * JSON (tools/cli_top.c): whatever the bytes, no crash; a parsed sample
 * has at most CLI_TOP_MAX_STREAMS rows and renders into a bounded, terminated
 * screen. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli_top.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static cli_top_sample s, prev;
  static char out[8192];
  if (cli_top_parse((const char *)data, size, &s) < 0)
    return 0;
  if (s.nrows > CLI_TOP_MAX_STREAMS)
    abort();
  cli_top_rates(&s, &prev, 1.0);
  cli_top_sort_rows(&s, CLI_TOP_SORT_RATE);
  cli_top_render(&s, CLI_TOP_SORT_RATE, 50, out, sizeof out);
  if (strlen(out) >= sizeof out)
    abort();
  prev = s;
  return 0;
}

/* libFuzzer target for `b2stream top`'s reading of the daemon's STATS
 * JSON (tools/top_model.c): whatever the bytes, no crash; a parsed sample
 * has at most TOP_MAX_STREAMS rows and renders into a bounded, terminated
 * screen. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "top_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static top_sample s, prev;
  static char out[8192];
  if (top_parse((const char *)data, size, &s) < 0)
    return 0;
  if (s.nrows > TOP_MAX_STREAMS)
    abort();
  top_rates(&s, &prev, 1.0);
  top_sort_rows(&s, TOP_SORT_RATE);
  top_render(&s, TOP_SORT_RATE, 50, out, sizeof out);
  if (strlen(out) >= sizeof out)
    abort();
  prev = s;
  return 0;
}

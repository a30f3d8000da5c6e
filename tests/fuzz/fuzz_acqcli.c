/* What `b2stream acq` reads from the daemon (tools/cli_acq.h): error
 * bodies, acquisition objects, lists of acquisitions and files, end
 * events, and the event-stream reader fed in pieces whose sizes come from
 * the input.  None may crash, read out of bounds or leave the bounds of
 * its output. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_acq.h"

static FILE *sink;

static bool on_event(void *arg, const cli_sse_event *ev) {
  size_t *n = arg;
  (*n)++;
  if (strlen(ev->event) > 64 || strlen(ev->id) > 128 ||
      ev->data[ev->data_len] != '\0' || ev->data_len > CLI_SSE_DATA_MAX)
    abort();
  return *n < 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (sink == NULL)
    sink = fopen("/dev/null", "w");
  const char *p = (const char *)data;
  char line[256], code[65], next[65], fnext[160], state[16];
  int rc = cli_acq_err_text(409, p, size, line, sizeof line, code);
  if (strlen(line) >= sizeof line || (rc > 0 && strlen(code) != (size_t)rc))
    abort();
  cli_acq_summary(sink, p, size);
  cli_acq_list_text(sink, p, size, next);
  cli_acq_files_text(sink, p, size, fnext, sizeof fnext);
  cli_acq_end_of(p, size, "scan-42", state);
  cli_acq_state(p, size, state);

  cli_sse s;
  if (cli_sse_init(&s) != 0)
    return 0;
  size_t events = 0, off = 0, step = size ? (size_t)data[0] % 17 + 1 : 1;
  while (off < size) {
    size_t n = size - off < step ? size - off : step;
    if (cli_sse_feed(&s, p + off, n, on_event, &events) != 0)
      break;
    off += n;
  }
  cli_sse_fini(&s);
  return 0;
}

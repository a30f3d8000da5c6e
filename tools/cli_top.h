/* The table of `b2stream top` (cli_top.c), apart from the terminal: the
 * daemon's STATS JSON read into rows, rates from two samples, sorting,
 * and the text of the screen.  Pure functions (tests/test_top.c,
 * tests/fuzz/fuzz_top.c). */
#ifndef B2S_CLI_TOP_H
#define B2S_CLI_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLI_TOP_MAX_STREAMS 1024
#define CLI_TOP_NAME_MAX 64

typedef struct cli_top_row {
  char name[CLI_TOP_NAME_MAX + 1];
  uint64_t buffers_in, bytes_in, bytes_out, drops, errors;
  int64_t queue_depth, committed;
  bool failed;
  double mb_s, img_s;            /* since the previous sample; -1: none */
} cli_top_row;

typedef struct cli_top_sample {
  char version[32];
  int64_t sessions, memory_limit, inflight_bytes, shm_bytes;
  size_t nrows;
  cli_top_row rows[CLI_TOP_MAX_STREAMS];
} cli_top_sample;

typedef enum cli_top_sort {
  CLI_TOP_SORT_NAME = 0, CLI_TOP_SORT_RATE, CLI_TOP_SORT_QUEUE, CLI_TOP_SORT_DROPS
} cli_top_sort;

/* Read a STATS JSON text into s (streams beyond CLI_TOP_MAX_STREAMS are left
 * out).  0, or -1 when the text is not such a document. */
int cli_top_parse(const char *json, size_t len, cli_top_sample *s);
/* Rates of cur's rows from prev (NULL: none), dt seconds before. */
void cli_top_rates(cli_top_sample *cur, const cli_top_sample *prev, double dt);
void cli_top_sort_rows(cli_top_sample *s, cli_top_sort by);
/* The screen: a header line, the column titles, one line per row (at
 * most max_rows), the key help; into out[cap], NUL-terminated. */
void cli_top_render(const cli_top_sample *s, cli_top_sort by, size_t max_rows,
                char *out, size_t cap);

#endif

/* The table of `b2stream top` (top_model.c), apart from the terminal: the
 * daemon's STATS JSON read into rows, rates from two samples, sorting,
 * and the text of the screen.  Pure functions (tests/test_top.c,
 * tests/fuzz/fuzz_top.c). */
#ifndef B2S_TOP_MODEL_H
#define B2S_TOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOP_MAX_STREAMS 1024
#define TOP_NAME_MAX 64

typedef struct top_row {
  char name[TOP_NAME_MAX + 1];
  uint64_t buffers_in, bytes_in, bytes_out, drops, errors;
  int64_t queue_depth, committed;
  bool failed;
  double mb_s, img_s;            /* since the previous sample; -1: none */
} top_row;

typedef struct top_sample {
  char version[32];
  int64_t sessions, memory_limit, inflight_bytes, shm_bytes;
  size_t nrows;
  top_row rows[TOP_MAX_STREAMS];
} top_sample;

typedef enum top_sort {
  TOP_SORT_NAME = 0, TOP_SORT_RATE, TOP_SORT_QUEUE, TOP_SORT_DROPS
} top_sort;

/* Read a STATS JSON text into s (streams beyond TOP_MAX_STREAMS are left
 * out).  0, or -1 when the text is not such a document. */
int top_parse(const char *json, size_t len, top_sample *s);
/* Rates of cur's rows from prev (NULL: none), dt seconds before. */
void top_rates(top_sample *cur, const top_sample *prev, double dt);
void top_sort_rows(top_sample *s, top_sort by);
/* The screen: a header line, the column titles, one line per row (at
 * most max_rows), the key help; into out[cap], NUL-terminated. */
void top_render(const top_sample *s, top_sort by, size_t max_rows,
                char *out, size_t cap);

#endif

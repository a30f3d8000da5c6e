/* Test helper of the Python suite: builds (or extends) a distributed frame
 * on a store with the calls of ranks and committer (tests/support/
 * dframe_fill.h says what the chunks hold), so DistributedFrame is tested
 * on frames the C library wrote.
 *
 *   make_dframe STORE NAME NCHUNKS COMMIT [gap=I] [series=FILE] [close]
 *
 * Stores chunks 0..NCHUNKS-1 (chunk I as a gap instead, as the committer
 * makes it), commits up to COMMIT, merges the series map in FILE
 * (msgpack) and marks the frame closed.  Run again with larger numbers it
 * extends the same frame. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "dframe_fill.h"

static int series_merge(b2s_dframe *df, const char *path) {
  static uint8_t map[1 << 16];
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return B2S_E_ARG;
  size_t n = fread(map, 1, sizeof map, f);
  fclose(f);
  return b2s_dframe_series_merge(df, map, n);
}

static int fill(b2s_dframe *df, int argc, char **argv) {
  int64_t n = atoll(argv[3]), commit = atoll(argv[4]), gap = -1;
  const char *series = NULL;
  bool close = false;
  for (int a = 5; a < argc; a++) {
    if (!strncmp(argv[a], "gap=", 4))
      gap = atoll(argv[a] + 4);
    else if (!strncmp(argv[a], "series=", 7))
      series = argv[a] + 7;
    else
      close = !strcmp(argv[a], "close");
  }
  int rc = 0;
  for (int64_t k = 0; rc >= 0 && k < n; k++)
    rc = k == gap ? b2s_dframe_put_gap(df, k, 0, NULL) : dfill_put(df, k);
  if (rc >= 0)
    rc = dfill_commit_to(df, commit);
  if (rc >= 0 && series != NULL)
    rc = series_merge(df, series);
  if (rc >= 0 && close)
    rc = b2s_dframe_close_mark(df);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: make_dframe STORE NAME NCHUNKS COMMIT [gap=I] "
                    "[series=FILE] [close]\n");
    return 2;
  }
  b2s_store *s = NULL;
  b2s_dframe *df = NULL;
  b2s_dframe_params p;
  dfill_params(&p);
  int rc = b2s_store_open(argv[1], &(b2s_store_opts){0}, &s);
  if (rc >= 0)
    rc = b2s_dframe_create(s, argv[2], &p, &df);
  if (rc >= 0)
    rc = fill(df, argc, argv);
  b2s_dframe_free(df);
  b2s_store_free(s);
  if (rc < 0) {
    fprintf(stderr, "make_dframe: %s %s\n", b2s_strerror(rc),
            b2s_store_last_error());
    return 1;
  }
  return 0;
}

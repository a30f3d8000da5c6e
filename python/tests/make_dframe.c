/* Test helper of the Python suite: builds (or extends) a distributed frame
 * on a store with the calls of ranks and committer (tests/support/
 * dframe_fill.h says what the chunks hold), so DistributedFrame is tested
 * on frames the C library wrote.
 *
 *   make_dframe STORE NAME NCHUNKS COMMIT [gap=I] [series=FILE] [close]
 *               [written=ENDPOINT] [end]
 *
 * Stores chunks 0..NCHUNKS-1 (chunk I as a gap instead, as the committer
 * makes it), commits up to COMMIT, merges the series map in FILE
 * (msgpack) and marks the frame closed.  Run again with larger numbers it
 * extends the same frame.  With written=ENDPOINT it plays rank 0 of a
 * real b2stream-committer instead of committing: a WRITTEN message per
 * stored chunk to the committer's PULL endpoint, and END (one past the
 * last chunk) with `end`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "b2s_dmsg.h"
#include "b2s_errors.h"
#include "dframe_fill.h"

/* Rank 0's WRITTEN for chunks [0, n) (the records stored with them), then
 * END at n when `end`. */
static int tell_committer(b2s_dframe *df, const char *name, int64_t n,
                          const char *endpoint, bool end) {
  void *ctx = zmq_ctx_new();
  void *push = zmq_socket(ctx, ZMQ_PUSH);
  int rc = zmq_connect(push, endpoint) == 0 ? 0 : B2S_E_ARG;
  uint8_t msg[B2S_DMSG_REC_MAX + 256];
  for (int64_t k = 0; rc >= 0 && k < n + end; k++) {
    b2s_mpbuf rec = {0};
    b2s_dmsg m = {.type = k < n ? B2S_DMSG_WRITTEN : B2S_DMSG_END,
                  .name = name, .name_len = (uint16_t)strlen(name),
                  .index = k};
    if (k < n && (rc = b2s_dframe_stored_record(df, k, &rec)) >= 0) {
      m.rec = rec.data;
      m.rec_len = (uint32_t)rec.len;
    }
    int len = rc;
    if (rc >= 0)
      len = b2s_dmsg_encode(&m, msg, sizeof msg);
    if (len >= 0 && zmq_send(push, msg, (size_t)len, 0) != len)
      len = B2S_E_ARG;
    rc = len < 0 ? len : 0;
    b2s_mpbuf_fini(&rec);
  }
  zmq_close(push);                 /* linger: delivered before the end */
  zmq_ctx_term(ctx);
  return rc;
}

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
  const char *series = NULL, *written = NULL;
  bool closing = false, end = false;
  for (int a = 5; a < argc; a++) {
    if (!strncmp(argv[a], "gap=", 4))
      gap = atoll(argv[a] + 4);
    else if (!strncmp(argv[a], "series=", 7))
      series = argv[a] + 7;
    else if (!strncmp(argv[a], "written=", 8))
      written = argv[a] + 8;
    else if (!strcmp(argv[a], "end"))
      end = true;
    else
      closing = closing || !strcmp(argv[a], "close");
  }
  int rc = 0;
  for (int64_t k = 0; rc >= 0 && k < n; k++)
    rc = k == gap ? b2s_dframe_put_gap(df, k, 0, NULL) : dfill_put(df, k);
  if (rc >= 0 && written != NULL)
    rc = tell_committer(df, argv[2], n, written, end);
  else if (rc >= 0)
    rc = dfill_commit_to(df, commit);
  if (rc >= 0 && series != NULL)
    rc = series_merge(df, series);
  if (rc >= 0 && closing)
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

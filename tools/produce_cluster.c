/* b2stream produce --ranks: the input sent to the ranks of a distributed
 * stream through a cluster producer, buffer i as frame number N + i to
 * the rank that owns it; then every rank flushed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_produce.h"

static void cluster_err(const b2sc_cluster *c, const char *stream, int rc) {
  const char *why = b2sc_cluster_last_error(c);
  if (why[0])
    cli_err("%s: %s", stream, why);
  else
    cli_err("%s: %s", stream, b2sc_strerror(rc));
}

static int send_all(b2sc_cluster *c, int fd, const produce_opts *o,
                    uint8_t *buf) {
  for (uint64_t i = 0;; i++) {
    ssize_t n = produce_read_full(fd, buf, (size_t)o->chunk_bytes);
    if (n < 0) {
      cli_err("%s: %s", o->input, strerror((int)-n));
      return (int)n;
    }
    if (n == 0)
      return 0;
    b2sc_record rec;
    int rc = b2sc_cluster_send_rec(c, buf, (size_t)n,
                                   produce_record(o, i, &rec),
                                   PRODUCE_CREDIT_MS);
    if (rc < 0) {
      cluster_err(c, o->stream, rc);
      return rc;
    }
    if (n < o->chunk_bytes)
      return 0;
  }
}

/* Series metadata goes to one rank: every rank merges into the same
 * series of the distributed frame. */
static int set_meta(b2sc_cluster *c, const produce_opts *o) {
  if (!o->nmeta)
    return 0;
  b2s_mpbuf map = {0};
  int rc = produce_meta_map(o, &map);
  if (rc == 0)
    rc = b2sc_producer_set_meta(b2sc_cluster_producer(c, 0), map.data,
                                map.len);
  b2s_mpbuf_fini(&map);
  if (rc < 0)
    cli_err("%s: series metadata: %s", o->stream, b2sc_strerror(rc));
  return rc;
}

static void print_totals(b2sc_cluster *c, const produce_opts *o) {
  b2sc_producer_stats sum = {0}, st;
  for (int i = 0; i < o->nranks; i++) {
    if (b2sc_producer_stats_get(b2sc_cluster_producer(c, i), &st) < 0)
      continue;
    sum.sent += st.sent;
    sum.bytes += st.bytes;
    sum.durable += st.durable;
    sum.dropped += st.dropped;
    sum.rejected += st.rejected;
  }
  printf("%s: %llu buffers, %llu bytes sent to %d ranks; %llu durable, "
         "%llu dropped, %llu refused\n", o->stream,
         (unsigned long long)sum.sent, (unsigned long long)sum.bytes,
         o->nranks, (unsigned long long)sum.durable,
         (unsigned long long)sum.dropped, (unsigned long long)sum.rejected);
}

int produce_cluster(const produce_opts *o, int fd) {
  b2sc_options opts;
  char secret[B2SC_CURVE_KEY_LEN + 1];
  if (cli_client_options(B2SC_ROLE_PRODUCER, &opts, secret) < 0)
    return CLI_EXIT_FAIL;
  b2sc_cluster *c;
  int rc = b2sc_cluster_open(o->ranks, o->nranks, (int)o->frames_per_block,
                             o->stream, o->tmpl, &opts, &c);
  if (rc < 0) {
    cli_err("%s: cannot open the stream on every rank: %s", o->stream,
            b2sc_strerror(rc));
    return CLI_EXIT_FAIL;
  }
  uint8_t *buf = malloc((size_t)o->chunk_bytes);
  if (buf == NULL) {
    cli_err("out of memory");
    rc = B2S_E_NOMEM;
  }
  if (rc == 0)
    rc = set_meta(c, o);
  if (rc == 0)
    rc = send_all(c, fd, o, buf);
  free(buf);
  int flushed = rc < 0 ? rc : b2sc_cluster_flush(c, PRODUCE_FLUSH_MS);
  if (rc == 0 && flushed < 0 && flushed != B2S_E_DROPPED)
    cluster_err(c, o->stream, flushed);
  print_totals(c, o);
  int closed = b2sc_cluster_close(c);
  bool ok = cli_flush_stdout() && (flushed == 0 || flushed == B2S_E_DROPPED) &&
            (closed == 0 || closed == B2S_E_DROPPED);
  return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

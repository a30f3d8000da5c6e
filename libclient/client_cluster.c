/* Cluster producers: one session and producer per rank of a distributed
 * stream, each buffer sent to the rank that owns its frame number
 * (rank = (frame / frames_per_block) % ranks, as b2s_dframe_owner).
 *
 * Built on the public producer API only.  Per rank, the frame numbers of
 * the buffers sent and not yet acknowledged at the stream's ack level are
 * kept in send order (a ring): ACKs are cumulative by buffer id, so the
 * acknowledged ones are always a prefix; frames whose send failed for the
 * rank's sake (timeout, connection ended) are kept beside them.  After a
 * rank failed, the caller reads both (b2sc_cluster_unacked), reconnects
 * the rank and resends those frames: a frame acknowledged once is never
 * asked for again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2stream_client.h"

typedef struct cl_rank {
  char *endpoint;
  b2sc_session *s;
  b2sc_producer *p;
  /* frame numbers of buffers [acked_seen, sent) of the current handle */
  uint64_t *ring;
  size_t head, n, cap;
  uint64_t acked_seen;          /* stats.acked when the ring was trimmed */
  /* frame numbers whose send failed on this connection (never sent) */
  uint64_t *failed;
  size_t nfailed, capfailed;
} cl_rank;

struct b2sc_cluster {
  int nranks;
  int frames_per_block;
  char stream[B2SC_CLUSTER_NAME_MAX + 1];
  char tmpl[B2SC_CLUSTER_NAME_MAX + 1];
  bool has_tmpl;
  b2sc_options opts;
  char client_name[B2SC_CLUSTER_NAME_MAX + 1];
  char last_error[512];
  cl_rank ranks[];
};

static int fail(b2sc_cluster *c, int rank, int code) {
  const char *why = b2sc_strerror(code);
  const cl_rank *r = rank >= 0 ? &c->ranks[rank] : NULL;
  if (r && r->s && b2sc_last_error_code(r->s) == code &&
      b2sc_last_error(r->s)[0])
    why = b2sc_last_error(r->s);
  if (r)
    snprintf(c->last_error, sizeof c->last_error, "rank %d (%s): %s", rank,
             r->endpoint, why);
  else
    snprintf(c->last_error, sizeof c->last_error, "%s", why);
  return code;
}

/* ---- the ring of unacknowledged frame numbers ----------------------------- */

static int ring_push(cl_rank *r, uint64_t frame) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 64;
    uint64_t *nr = malloc(cap * sizeof *nr);
    if (!nr)
      return B2S_E_NOMEM;
    for (size_t i = 0; i < r->n; i++)
      nr[i] = r->ring[(r->head + i) % r->cap];
    free(r->ring);
    r->ring = nr;
    r->head = 0;
    r->cap = cap;
  }
  r->ring[(r->head + r->n) % r->cap] = frame;
  r->n++;
  return 0;
}

/* Drop the frames the daemon acknowledged since the last trim. */
static void ring_trim(cl_rank *r) {
  b2sc_producer_stats st;
  if (!r->p || b2sc_producer_stats_get(r->p, &st) < 0 ||
      st.acked <= r->acked_seen)
    return;
  uint64_t k = st.acked - r->acked_seen;
  if (k > r->n)
    k = r->n;
  r->head = r->cap ? (r->head + k) % r->cap : 0;
  r->n -= k;
  r->acked_seen = st.acked;
}

/* A send that failed because of the rank (timeout, connection ended):
 * the frame is still the caller's to deliver, so unacked lists it. */
static int note_failed(cl_rank *r, uint64_t frame) {
  if (r->nfailed == r->capfailed) {
    size_t cap = r->capfailed ? r->capfailed * 2 : 16;
    uint64_t *n = realloc(r->failed, cap * sizeof *n);
    if (!n)
      return B2S_E_NOMEM;
    r->failed = n;
    r->capfailed = cap;
  }
  r->failed[r->nfailed++] = frame;
  return 0;
}

/* ---- connections ---------------------------------------------------------- */

static void rank_disconnect(cl_rank *r) {
  b2sc_close(r->s);             /* frees the producer too */
  r->s = NULL;
  r->p = NULL;
  r->head = r->n = 0;
  r->acked_seen = 0;
  r->nfailed = 0;
}

static int rank_connect(b2sc_cluster *c, int i) {
  cl_rank *r = &c->ranks[i];
  int rc = b2sc_connect_opts(r->endpoint, &c->opts, &r->s);
  if (rc < 0)
    return fail(c, i, rc);
  rc = b2sc_producer_open(r->s, c->stream, c->has_tmpl ? c->tmpl : NULL,
                          &r->p);
  if (rc < 0) {
    fail(c, i, rc);
    rank_disconnect(r);
  }
  return rc;
}

static int check_args(const char *const *endpoints, int n,
                      int frames_per_block, const char *stream,
                      const char *tmpl) {
  if (!endpoints || n < 1 || n > B2SC_CLUSTER_MAX_RANKS ||
      frames_per_block < 1 || !stream || !stream[0] ||
      strlen(stream) > B2SC_CLUSTER_NAME_MAX ||
      (tmpl && strlen(tmpl) > B2SC_CLUSTER_NAME_MAX))
    return B2S_E_ARG;
  for (int i = 0; i < n; i++)
    if (!endpoints[i] || !endpoints[i][0])
      return B2S_E_ARG;
  return 0;
}

int b2sc_cluster_open(const char *const *endpoints, int n,
                      int frames_per_block, const char *stream,
                      const char *tmpl, const b2sc_options *opts,
                      b2sc_cluster **out) {
  if (!out)
    return B2S_E_ARG;
  *out = NULL;
  int rc = check_args(endpoints, n, frames_per_block, stream, tmpl);
  if (rc < 0)
    return rc;
  b2sc_cluster *c = calloc(1, sizeof *c + (size_t)n * sizeof(cl_rank));
  if (!c)
    return B2S_E_NOMEM;
  c->nranks = n;
  c->frames_per_block = frames_per_block;
  snprintf(c->stream, sizeof c->stream, "%s", stream);
  c->has_tmpl = tmpl != NULL;
  snprintf(c->tmpl, sizeof c->tmpl, "%s", tmpl ? tmpl : "");
  if (opts)
    c->opts = *opts;
  if (!c->opts.roles)
    c->opts.roles = B2SC_ROLE_PRODUCER;
  /* the options' strings are the caller's; keep what outlives the call */
  snprintf(c->client_name, sizeof c->client_name, "%s",
           c->opts.client_name ? c->opts.client_name : "");
  c->opts.client_name = c->client_name;
  for (int i = 0; i < n && rc == 0; i++) {
    c->ranks[i].endpoint = strdup(endpoints[i]);
    if (!c->ranks[i].endpoint)
      rc = B2S_E_NOMEM;
  }
  for (int i = 0; i < n && rc == 0; i++)
    rc = rank_connect(c, i);
  if (rc < 0) {
    b2sc_cluster_close(c);
    return rc;
  }
  *out = c;
  return 0;
}

int b2sc_cluster_close(b2sc_cluster *c) {
  if (!c)
    return 0;
  int first = 0;
  for (int i = 0; i < c->nranks; i++) {
    cl_rank *r = &c->ranks[i];
    if (r->p) {
      int rc = b2sc_producer_close(r->p);
      r->p = NULL;
      if (rc < 0 && first == 0)
        first = rc;
    }
    rank_disconnect(r);
    free(r->ring);
    free(r->failed);
    free(r->endpoint);
  }
  free(c);
  return first;
}

/* ---- sending -------------------------------------------------------------- */

int b2sc_cluster_owner(const b2sc_cluster *c, uint64_t frame) {
  if (!c)
    return B2S_E_ARG;
  return (int)((frame / (uint64_t)c->frames_per_block) % (uint64_t)c->nranks);
}

int b2sc_cluster_send_rec(b2sc_cluster *c, const void *buf, size_t len,
                          const b2sc_record *rec, int timeout_ms) {
  if (!c)
    return B2S_E_ARG;
  if (!rec || !(rec->present & B2SC_REC_FRAME))
    return fail(c, -1, B2S_E_NEED_FRAME);
  int i = b2sc_cluster_owner(c, rec->frame);
  cl_rank *r = &c->ranks[i];
  if (!r->p)
    return fail(c, i, B2S_E_CLOSED);
  int rc = b2sc_send_rec(r->p, buf, len, rec, timeout_ms);
  if ((rc == B2S_E_TIMEOUT || rc == B2S_E_CLOSED) &&
      note_failed(r, rec->frame) < 0)
    return fail(c, i, B2S_E_NOMEM);
  if (rc < 0)
    return fail(c, i, rc);
  ring_trim(r);
  rc = ring_push(r, rec->frame);
  return rc < 0 ? fail(c, i, rc) : 0;
}

int b2sc_cluster_send(b2sc_cluster *c, uint64_t frame, const void *buf,
                      size_t len, int timeout_ms) {
  b2sc_record rec = {.present = B2SC_REC_FRAME, .frame = frame};
  return b2sc_cluster_send_rec(c, buf, len, &rec, timeout_ms);
}

int b2sc_cluster_flush(b2sc_cluster *c, int timeout_ms) {
  if (!c)
    return B2S_E_ARG;
  int first = 0;
  for (int i = 0; i < c->nranks; i++) {
    cl_rank *r = &c->ranks[i];
    int rc = r->p ? b2sc_flush(r->p, timeout_ms) : B2S_E_CLOSED;
    if (r->p)
      ring_trim(r);
    if (rc < 0 && first == 0)
      first = fail(c, i, rc);
  }
  return first;
}

/* ---- ranks ---------------------------------------------------------------- */

int b2sc_cluster_ranks(const b2sc_cluster *c) {
  return c ? c->nranks : B2S_E_ARG;
}

b2sc_producer *b2sc_cluster_producer(b2sc_cluster *c, int rank) {
  if (!c || rank < 0 || rank >= c->nranks)
    return NULL;
  return c->ranks[rank].p;
}

int b2sc_cluster_unacked(b2sc_cluster *c, int rank, uint64_t *frames,
                         size_t cap) {
  if (!c || rank < 0 || rank >= c->nranks || (!frames && cap))
    return B2S_E_ARG;
  cl_rank *r = &c->ranks[rank];
  if (r->p) {
    b2sc_wait_credit(r->p, 0);  /* take in the ACKs already queued */
    ring_trim(r);
  }
  size_t n = r->n + r->nfailed;
  for (size_t i = 0; i < r->n && i < cap; i++)
    frames[i] = r->ring[(r->head + i) % r->cap];
  for (size_t i = 0; i < r->nfailed && r->n + i < cap; i++)
    frames[r->n + i] = r->failed[i];
  return n > INT32_MAX ? INT32_MAX : (int)n;
}

int b2sc_cluster_reconnect(b2sc_cluster *c, int rank) {
  if (!c || rank < 0 || rank >= c->nranks)
    return B2S_E_ARG;
  rank_disconnect(&c->ranks[rank]);
  return rank_connect(c, rank);
}

const char *b2sc_cluster_last_error(const b2sc_cluster *c) {
  return c ? c->last_error : "";
}

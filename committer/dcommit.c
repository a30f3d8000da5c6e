/* The committer's tracker (b2s_dcommit.h).
 *
 * Records of chunks [H, H + cap) live in a ring indexed by i & (cap - 1);
 * cap is a power of two grown on demand up to the window.  The missing
 * index H has one timer (started the first time H is seen missing while a
 * higher index is there) and at most one store probe: at once when the
 * previous probe or gap found a record (a run of WRITTEN messages lost
 * with an earlier committer is picked up without waiting), else after half
 * the gap timeout, so ordinary reordering costs no store reads. */
#include <stdlib.h>
#include <string.h>

#include "b2s_dcommit.h"
#include "b2s_errors.h"

#define RING_MIN 1024

typedef struct slot {
  uint8_t *rec;                /* NULL: not written yet */
  size_t len;
} slot;

struct b2s_dcommit {
  int64_t h;                   /* committed count */
  int64_t window, gap_timeout;
  int32_t ranks;
  slot *ring;
  int64_t cap;                 /* power of two */
  int64_t pending;             /* slots holding a record */
  int64_t high;                /* one past the highest written index */
  int64_t *end;                /* per rank: END index, -1 before END */
  int32_t nended;
  int64_t max_end;
  int64_t timer_index, timer_start;
  int64_t probe_index;         /* last index probed, -1 none */
  bool streak;                 /* the last probe or gap found a record */
};

static slot *at(const b2s_dcommit *dc, int64_t i) {
  return &dc->ring[i & (dc->cap - 1)];
}

int b2s_dcommit_new(int64_t h, const b2s_dcommit_opts *o, b2s_dcommit **out) {
  if (out == NULL || o == NULL || h < 0 || o->ranks < 1 ||
      o->window < 0 || o->gap_timeout_ms < 0)
    return B2S_E_ARG;
  *out = NULL;
  b2s_dcommit *dc = calloc(1, sizeof *dc);
  if (dc == NULL)
    return B2S_E_NOMEM;
  dc->window = o->window ? o->window : B2S_DCOMMIT_WINDOW_DEFAULT;
  dc->cap = RING_MIN;
  dc->ring = calloc((size_t)dc->cap, sizeof *dc->ring);
  dc->end = malloc((size_t)o->ranks * sizeof *dc->end);
  if (dc->ring == NULL || dc->end == NULL) {
    b2s_dcommit_free(dc);
    return B2S_E_NOMEM;
  }
  for (int32_t r = 0; r < o->ranks; r++)
    dc->end[r] = -1;
  dc->h = dc->high = h;
  dc->gap_timeout = o->gap_timeout_ms;
  dc->ranks = o->ranks;
  dc->timer_index = dc->probe_index = -1;
  *out = dc;
  return 0;
}

void b2s_dcommit_free(b2s_dcommit *dc) {
  if (dc == NULL)
    return;
  if (dc->ring != NULL)
    for (int64_t k = 0; k < dc->cap; k++)
      free(dc->ring[k].rec);
  free(dc->ring);
  free(dc->end);
  free(dc);
}

/* Make room for index i (i - h < window): double until it fits. */
static int grow(b2s_dcommit *dc, int64_t i) {
  int64_t cap = dc->cap;
  while (i - dc->h >= cap)
    cap *= 2;
  if (cap == dc->cap)
    return 0;
  slot *ring = calloc((size_t)cap, sizeof *ring);
  if (ring == NULL)
    return B2S_E_NOMEM;
  for (int64_t j = dc->h; j < dc->h + dc->cap; j++)
    ring[j & (cap - 1)] = *at(dc, j);
  free(dc->ring);
  dc->ring = ring;
  dc->cap = cap;
  return 0;
}

int b2s_dcommit_written(b2s_dcommit *dc, int64_t i, const uint8_t *rec,
                        size_t len) {
  if (dc == NULL || rec == NULL || len == 0 || i < 0)
    return B2S_E_ARG;
  if (i < dc->h)
    return 1;
  if (i - dc->h >= dc->window)
    return B2S_E_BUSY;
  int rc = grow(dc, i);
  if (rc < 0)
    return rc;
  slot *s = at(dc, i);
  if (s->rec != NULL)
    return 1;
  s->rec = malloc(len);
  if (s->rec == NULL)
    return B2S_E_NOMEM;
  memcpy(s->rec, rec, len);
  s->len = len;
  dc->pending++;
  if (i + 1 > dc->high)
    dc->high = i + 1;
  if (i == dc->probe_index)
    dc->streak = true;
  return 0;
}

int b2s_dcommit_end(b2s_dcommit *dc, int32_t rank, int64_t end) {
  if (dc == NULL || rank < 0 || rank >= dc->ranks || end < 0)
    return B2S_E_ARG;
  if (dc->end[rank] < 0)
    dc->nended++;
  if (end > dc->end[rank])
    dc->end[rank] = end;
  if (end > dc->max_end)
    dc->max_end = end;
  return 0;
}

int b2s_dcommit_wrote(b2s_dcommit *dc, int32_t rank, int64_t i) {
  if (dc == NULL || rank < 0 || rank >= dc->ranks || i < 0)
    return B2S_E_ARG;
  if (dc->end[rank] >= 0 && i >= dc->end[rank]) {
    dc->end[rank] = -1;          /* a new run: its END comes later */
    dc->nended--;
  }
  return 0;
}

/* Records ready at H, at most max. */
static int64_t ready(const b2s_dcommit *dc, int64_t max) {
  int64_t n = 0;
  while (n < max && dc->h + n < dc->high && at(dc, dc->h + n)->rec != NULL)
    n++;
  return n;
}

/* H is missing while a higher index is there: probe, gap or wait. */
static void missing(b2s_dcommit *dc, int64_t now, b2s_dcommit_decision *d) {
  if (dc->timer_index != dc->h) {
    dc->timer_index = dc->h;
    dc->timer_start = now;
  }
  int64_t waited = now - dc->timer_start;
  int64_t probe_at = dc->gap_timeout / 2;
  if (dc->probe_index != dc->h && (dc->streak || waited >= probe_at)) {
    dc->probe_index = dc->h;
    dc->streak = false;  /* set again when the probe finds a record */
    *d = (b2s_dcommit_decision){.kind = B2S_DCOMMIT_PROBE, .index = dc->h};
    return;
  }
  if (waited >= dc->gap_timeout) {
    *d = (b2s_dcommit_decision){.kind = B2S_DCOMMIT_GAP, .index = dc->h};
    dc->probe_index = dc->h;  /* the gap's outcome counts as a probe */
    return;
  }
  int64_t next = dc->probe_index != dc->h ? probe_at : dc->gap_timeout;
  *d = (b2s_dcommit_decision){.kind = B2S_DCOMMIT_NONE,
                              .wait_ms = next - waited};
}

void b2s_dcommit_next(b2s_dcommit *dc, int64_t now_ms, int64_t max_batch,
                      b2s_dcommit_decision *d) {
  *d = (b2s_dcommit_decision){.kind = B2S_DCOMMIT_NONE, .wait_ms = -1};
  int64_t n = ready(dc, max_batch > 0 ? max_batch : 1);
  if (n > 0) {
    *d = (b2s_dcommit_decision){.kind = B2S_DCOMMIT_COMMIT, .index = dc->h,
                                .n = n};
    return;
  }
  bool all_ended = dc->nended == dc->ranks;
  int64_t target = dc->max_end > dc->high ? dc->max_end : dc->high;
  if (all_ended && dc->h >= target && dc->probe_index != dc->h) {
    /* ENDs count only what each rank's writer stored since it started:
     * a chunk stored above them whose WRITTEN was lost would be left out
     * by the close.  One read before closing; a record found is
     * committed and the next index probed the same way. */
    dc->probe_index = dc->h;
    dc->streak = false;
    *d = (b2s_dcommit_decision){.kind = B2S_DCOMMIT_PROBE, .index = dc->h};
  } else if (all_ended && dc->h >= target) {
    d->kind = B2S_DCOMMIT_DONE;
    d->index = dc->h;
  } else if (all_ended) {
    /* every rank is done: what is missing below the end never comes */
    *d = (b2s_dcommit_decision){.kind = B2S_DCOMMIT_GAP, .index = dc->h};
    dc->probe_index = dc->h;
  } else if (dc->high > dc->h) {
    missing(dc, now_ms, d);
  }
}

int64_t b2s_dcommit_batch(const b2s_dcommit *dc, int64_t n,
                          const uint8_t **recs, size_t *lens) {
  int64_t k = 0;
  for (; k < n && dc->h + k < dc->high; k++) {
    const slot *s = at(dc, dc->h + k);
    if (s->rec == NULL)
      break;
    recs[k] = s->rec;
    lens[k] = s->len;
  }
  return k;
}

int b2s_dcommit_advance(b2s_dcommit *dc, int64_t n) {
  if (dc == NULL || n < 0 || ready(dc, n) != n)
    return B2S_E_ARG;
  for (int64_t k = 0; k < n; k++) {
    slot *s = at(dc, dc->h + k);
    free(s->rec);
    *s = (slot){0};
  }
  dc->pending -= n;
  dc->h += n;
  return 0;
}

int64_t b2s_dcommit_committed(const b2s_dcommit *dc) { return dc->h; }
int64_t b2s_dcommit_pending(const b2s_dcommit *dc) { return dc->pending; }

int64_t b2s_dcommit_high(const b2s_dcommit *dc) {
  return dc->max_end > dc->high ? dc->max_end : dc->high;
}

int32_t b2s_dcommit_ended(const b2s_dcommit *dc) { return dc->nended; }

/* ---- waiting for a frame's lease ---------------------------------------- */

void b2s_dcommit_lease_init(b2s_dcommit_lease *w, int64_t expire_ms) {
  *w = (b2s_dcommit_lease){.expire_ms = expire_ms > 0 ? expire_ms : 0,
                           .first = -1, .next = INT64_MIN};
}

int64_t b2s_dcommit_lease_wait(const b2s_dcommit_lease *w, int64_t now_ms) {
  return now_ms >= w->next ? 0 : w->next - now_ms;
}

void b2s_dcommit_lease_failed(b2s_dcommit_lease *w, int64_t now_ms) {
  w->next = now_ms + B2S_DCOMMIT_LEASE_SLOW_MS;
}

bool b2s_dcommit_lease_refused(b2s_dcommit_lease *w, int64_t now_ms) {
  if (w->first < 0)
    w->first = now_ms;
  bool was = w->alive;
  /* a dead holder's lease would have expired by now: it was renewed */
  if (w->expire_ms == 0 ||
      now_ms - w->first >= w->expire_ms + B2S_DCOMMIT_LEASE_MARGIN_MS)
    w->alive = true;
  w->next = now_ms + (w->alive ? B2S_DCOMMIT_LEASE_SLOW_MS
                               : B2S_DCOMMIT_LEASE_FAST_MS);
  return w->alive && !was;
}

void b2s_dcommit_lease_taken(b2s_dcommit_lease *w) {
  b2s_dcommit_lease_init(w, w->expire_ms);
}

bool b2s_dcommit_lease_alive(const b2s_dcommit_lease *w) { return w->alive; }

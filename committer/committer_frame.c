/* One frame of the committer: its handle, its tracker, and the store calls
 * the tracker's decisions need (committer.h).  Nothing here publishes:
 * the caller does, after a commit returned, so H is never announced
 * before the key-log batch that holds it was acknowledged. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "committer.h"

/* A record that may be committed at i: it decodes and names frame i. */
static int record_ok(int64_t i, const uint8_t *rec, size_t len) {
  b2s_record r;
  if (b2s_record_decode(rec, len, &r) < 0 || !r.has_frame ||
      r.frame != (uint64_t)i)
    return B2S_E_RECORD;
  return 0;
}

/* Report to the tracker the record stored at i; 0 when absent. */
static int take_stored(cm_frame *f, int64_t i, bool *found) {
  b2s_mpbuf m;
  b2s_mpbuf_init(&m);
  *found = false;
  int rc = b2s_dframe_stored_record(f->df, i, &m);
  if (rc == -ENOENT)
    rc = 0;
  else if (rc == 0 && (rc = record_ok(i, m.data, m.len)) == 0)
    rc = b2s_dcommit_written(f->dc, i, m.data, m.len);
  if (rc >= 0 && m.len > 0)
    *found = true;
  b2s_mpbuf_fini(&m);
  return rc < 0 ? rc : 0;
}

/* Records stored at H, H+1, ... while present (their WRITTEN messages may
 * have died with an earlier committer). */
static int rebuild(cm_frame *f, int64_t *found) {
  int64_t h = b2s_dcommit_committed(f->dc);
  *found = 0;
  for (;;) {
    bool got;
    int rc = take_stored(f, h + *found, &got);
    if (rc == B2S_E_BUSY || (rc == 0 && !got))
      return 0;                       /* the rest comes through probes */
    if (rc < 0)
      return rc;
    ++*found;
  }
}

int cm_frame_open(cm_frame *f, b2s_store *s, const cm_opts *o) {
  int rc = b2s_dframe_open(s, f->name, &f->df);
  if (rc < 0)
    return rc;
  int64_t h = b2s_dframe_committed(f->df);
  const b2s_dframe_params *p = b2s_dframe_params_get(f->df);
  b2s_dcommit_opts co = {.ranks = p->ranks, .window = o->window,
                         .gap_timeout_ms = o->gap_timeout_ms};
  rc = h < 0 ? (int)h : b2s_dcommit_new(h, &co, &f->dc);
  int64_t found = 0;
  if (rc == 0)
    rc = b2s_dframe_refresh(f->df, NULL, &f->closed);
  if (rc == 0 && !f->closed)    /* nothing is committed past a close */
    rc = rebuild(f, &found);
  if (rc < 0) {
    cm_frame_fini(f);
    return rc;
  }
  cm_log(CM_INFO, "frame %s: opened, %d ranks, committed %lld, %lld stored "
         "records found above it%s", f->name, p->ranks, (long long)h,
         (long long)found, f->closed ? ", closed" : "");
  return 0;
}

void cm_frame_fini(cm_frame *f) {
  b2s_dcommit_free(f->dc);
  b2s_dframe_free(f->df);
  f->dc = NULL;
  f->df = NULL;
}

int cm_frame_message(cm_frame *f, const b2s_dmsg *m) {
  if (m->type == B2S_DMSG_END)
    return b2s_dcommit_end(f->dc, m->rank, m->index);
  if (m->type != B2S_DMSG_WRITTEN)
    return B2S_E_PROTO;
  int rc = record_ok(m->index, m->rec, m->rec_len);
  if (rc == 0 && f->closed && m->index >= b2s_dcommit_committed(f->dc)) {
    /* a closed frame stays closed: the rank refuses such a buffer too
     * once it sees the close */
    if (f->late++ % 1000 == 0)
      cm_log(CM_WARN, "frame %s: closed at %lld chunks; chunk %lld from rank "
             "%d written after the close is not committed (%lld so far)",
             f->name, (long long)b2s_dcommit_committed(f->dc),
             (long long)m->index, (int)m->rank, (long long)f->late);
    return B2S_E_CLOSED;
  }
  if (rc == 0)
    rc = b2s_dcommit_wrote(f->dc, m->rank, m->index);
  if (rc == 0)
    rc = b2s_dcommit_written(f->dc, m->index, m->rec, m->rec_len);
  return rc < 0 ? rc : 0;
}

/* ---- decisions ------------------------------------------------------------- */

static int do_commit(cm_frame *f, int64_t n) {
  const uint8_t **recs = malloc((size_t)n * sizeof *recs);
  size_t *lens = malloc((size_t)n * sizeof *lens);
  int rc = recs && lens ? 0 : B2S_E_NOMEM;
  if (rc == 0 && b2s_dcommit_batch(f->dc, n, recs, lens) != n)
    rc = B2S_E_ARG;
  if (rc == 0)
    rc = b2s_dframe_commit(f->df, n, recs, lens);
  free(recs);
  free(lens);
  /* only now, with the batch acknowledged, does H move */
  return rc < 0 ? rc : b2s_dcommit_advance(f->dc, n);
}

static int do_probe(cm_frame *f, int64_t i) {
  bool found;
  int rc = take_stored(f, i, &found);
  if (rc == 0 && found)
    f->lost_found++;
  return rc;
}

static int do_gap(cm_frame *f, int64_t i) {
  b2s_mpbuf m;
  b2s_mpbuf_init(&m);
  int rc = b2s_dframe_put_gap(f->df, i, 0, &m);
  if (rc == 0) {
    f->gaps++;
    cm_log(CM_WARN, "frame %s: chunk %lld missing: gap written", f->name,
           (long long)i);
  } else if (rc == 1) {
    cm_log(CM_INFO, "frame %s: chunk %lld was stored after all: committed "
           "as stored", f->name, (long long)i);
  }
  if (rc >= 0)
    rc = b2s_dcommit_written(f->dc, i, m.data, m.len);
  b2s_mpbuf_fini(&m);
  return rc < 0 ? rc : 0;
}

static int do_close(cm_frame *f, bool *published) {
  if (f->closed)
    return 0;
  int rc = b2s_dframe_close_mark(f->df);
  if (rc == 0) {
    f->closed = *published = true;
    cm_log(CM_INFO, "frame %s: every rank ended; closed at %lld chunks "
           "(%lld gaps)", f->name, (long long)b2s_dcommit_committed(f->dc),
           (long long)f->gaps);
  }
  return rc;
}

/* One decision; 1 when there is nothing more to do now.  *what names it
 * for a failure's message. */
static int step_one(cm_frame *f, int64_t now, bool gaps, bool *published,
                    int64_t *wait_ms, char *what, size_t cap) {
  b2s_dcommit_decision d;
  b2s_dcommit_next(f->dc, now, CM_BATCH_MAX, &d);
  int64_t h = b2s_dcommit_committed(f->dc);
  if (d.kind == B2S_DCOMMIT_COMMIT)
    snprintf(what, cap, "committing chunks %lld..%lld", (long long)h,
             (long long)(h + d.n - 1));
  else if (d.kind == B2S_DCOMMIT_PROBE || d.kind == B2S_DCOMMIT_GAP)
    snprintf(what, cap, "%s chunk %lld", d.kind == B2S_DCOMMIT_PROBE
             ? "reading the stored record of" : "writing a gap at",
             (long long)d.index);
  else
    snprintf(what, cap, "closing at %lld", (long long)h);
  /* the store's words in a message are this step's only */
  b2s_store_clear_error();
  int rc;
  switch (d.kind) {
  case B2S_DCOMMIT_COMMIT:
    rc = do_commit(f, d.n);
    *published = *published || rc == 0;
    return rc;
  case B2S_DCOMMIT_PROBE:
    return do_probe(f, d.index);
  case B2S_DCOMMIT_GAP:
    return gaps ? do_gap(f, d.index) : 1;
  case B2S_DCOMMIT_DONE:
    rc = do_close(f, published);
    return rc < 0 ? rc : 1;
  default:
    *wait_ms = d.wait_ms;
    return 1;
  }
}

void cm_frame_step(cm_frame *f, int64_t now_ms, bool gaps, bool *published,
                   int64_t *wait_ms) {
  *published = false;
  *wait_ms = -1;
  /* a closed frame stays closed: nothing is probed or committed past it */
  if (f->df == NULL || f->closed)
    return;
  if (now_ms < f->retry_at) {
    *wait_ms = f->retry_at - now_ms;
    return;
  }
  for (int k = 0; k < CM_STEPS_MAX; k++) {
    char what[96];
    int rc = step_one(f, now_ms, gaps, published, wait_ms, what, sizeof what);
    if (rc == 1)
      return;
    if (rc < 0) {
      /* the store failed: state is unchanged, try again in a second */
      cm_log(CM_ERR, "frame %s: %s: %s%s%s; retrying in 1 s", f->name, what,
             b2s_strerror(rc), *b2s_store_last_error() ? ": " : "",
             b2s_store_last_error());
      f->retry_at = now_ms + 1000;
      *wait_ms = 1000;
      return;
    }
  }
  *wait_ms = 0;
}

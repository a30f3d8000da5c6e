/* The committer's decisions for one distributed frame, as pure logic: no
 * store, no sockets, no clock of its own (docs/DISTRIBUTED.md, "Commit
 * protocol").
 *
 * The tracker holds the records of chunks written but not yet committed,
 * at indices [H, H + window) where H is the committed count.  From what
 * ranks reported (WRITTEN, END) and the time the caller passes in, it
 * tells the caller what to do next:
 *   COMMIT  n records at H are all there: commit them (b2s_dcommit_batch
 *           gives them), then b2s_dcommit_advance(n);
 *   PROBE   H is missing while a higher index is there: look in the store
 *           once (its WRITTEN may have been lost with an earlier
 *           committer) and report a stored record with b2s_dcommit_written;
 *   GAP     H has been missing for gap_timeout_ms while a higher index is
 *           there, or every rank ended below it: make it a gap (put_gap)
 *           and report the record stored there (the gap's, or the rank's
 *           that won the race);
 *   DONE    every rank sent END, H reached max(END, highest written),
 *           and a probe at H found nothing (a chunk stored above every
 *           END, by a rank restarted since, whose WRITTEN was lost, is
 *           committed rather than left out by the close);
 *   NONE    nothing to do before `wait_ms` (-1: until a message comes).
 *
 * Ownership: records handed in are copied; pointers from b2s_dcommit_batch
 * stay valid until b2s_dcommit_advance or b2s_dcommit_free.  Memory is
 * bounded by the window: a ring of at most `window` slots, grown on
 * demand.  Threads: one thread at a time per tracker.
 *
 * b2s_dcommit_lease is the wait for a frame's lease that another
 * committer holds (below): when to try again, and when the holder has
 * shown it is alive. */
#ifndef B2S_DCOMMIT_H
#define B2S_DCOMMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define B2S_DCOMMIT_WINDOW_DEFAULT (INT64_C(1) << 20)

typedef struct b2s_dcommit b2s_dcommit;

typedef struct b2s_dcommit_opts {
  int32_t ranks;               /* N ranks that must each send END */
  int64_t window;              /* slots above H; 0 = the default */
  int64_t gap_timeout_ms;      /* how long H may be missing; >= 0 */
} b2s_dcommit_opts;

enum b2s_dcommit_kind {
  B2S_DCOMMIT_NONE = 0,
  B2S_DCOMMIT_COMMIT = 1,
  B2S_DCOMMIT_PROBE = 2,
  B2S_DCOMMIT_GAP = 3,
  B2S_DCOMMIT_DONE = 4,
};

typedef struct b2s_dcommit_decision {
  int kind;                    /* enum b2s_dcommit_kind */
  int64_t index;               /* COMMIT: H; PROBE, GAP: the index */
  int64_t n;                   /* COMMIT: records ready at H */
  int64_t wait_ms;             /* NONE: when to ask again (-1: no timer) */
} b2s_dcommit_decision;

/* A tracker starting at committed count h. */
int b2s_dcommit_new(int64_t h, const b2s_dcommit_opts *opts,
                    b2s_dcommit **out);
void b2s_dcommit_free(b2s_dcommit *dc);            /* accepts NULL */

/* Chunk i was stored with record rec[0..len).  0 when taken, 1 when
 * already known or below H (a repeat: ignored), B2S_E_BUSY when i is
 * `window` or more beyond H (refused: the caller logs it), B2S_E_ARG. */
int b2s_dcommit_written(b2s_dcommit *dc, int64_t i, const uint8_t *rec,
                        size_t len);

/* Rank r has stored nothing at or beyond index `end`.  B2S_E_ARG for a
 * rank outside 0..N-1. */
int b2s_dcommit_end(b2s_dcommit *dc, int32_t rank, int64_t end);

/* Rank r wrote index i (its WRITTEN): at or beyond the END it sent, that
 * END is stale (the rank writes again) and counts no more until the rank
 * sends END again, so the frame is not closed under the new run.
 * B2S_E_ARG for a rank outside 0..N-1. */
int b2s_dcommit_wrote(b2s_dcommit *dc, int32_t rank, int64_t i);

/* What to do at time now_ms (any monotonic clock; the same for every
 * call).  COMMIT batches hold at most max_batch records. */
void b2s_dcommit_next(b2s_dcommit *dc, int64_t now_ms, int64_t max_batch,
                      b2s_dcommit_decision *d);

/* The first n (<= what COMMIT said) records at H, for the key-log batch;
 * returns how many were filled. */
int64_t b2s_dcommit_batch(const b2s_dcommit *dc, int64_t n,
                          const uint8_t **recs, size_t *lens);

/* The batch of n records at H is durable: H += n, their slots freed. */
int b2s_dcommit_advance(b2s_dcommit *dc, int64_t n);

int64_t b2s_dcommit_committed(const b2s_dcommit *dc);
/* Records held above H (written, not yet committed). */
int64_t b2s_dcommit_pending(const b2s_dcommit *dc);
/* One past the highest index written or announced by an END (H when
 * none). */
int64_t b2s_dcommit_high(const b2s_dcommit *dc);
/* How many ranks sent END. */
int32_t b2s_dcommit_ended(const b2s_dcommit *dc);

/* ---- waiting for a frame's lease ----------------------------------------
 *
 * Another committer holds the frame's lease.  One that died keeps it
 * until it expires, at most `expire_ms` after its last renewal (RADOS: the
 * lease's duration; the directory store: 0, the kernel frees a dead
 * holder's lock at once).  So a lease still held expire_ms (plus
 * B2S_DCOMMIT_LEASE_MARGIN_MS for the store's clock) after the first
 * refusal has been renewed since: its holder is alive.  Until then the
 * lease is tried every B2S_DCOMMIT_LEASE_FAST_MS, to take over a dead
 * holder's soon after it expires, whether or not a message comes; after
 * that every B2S_DCOMMIT_LEASE_SLOW_MS (a standby, which takes over when
 * the live holder stops).  The caller tries, reports, and asks again. */

#define B2S_DCOMMIT_LEASE_FAST_MS 200
#define B2S_DCOMMIT_LEASE_SLOW_MS 1000
#define B2S_DCOMMIT_LEASE_MARGIN_MS 1000

typedef struct b2s_dcommit_lease {
  int64_t expire_ms;           /* how long a dead holder keeps it */
  int64_t first;               /* first refusal of this wait; -1: none */
  int64_t next;                /* the next try, not before; INT64_MIN: now */
  bool alive;                  /* the holder renewed since `first` */
} b2s_dcommit_lease;

void b2s_dcommit_lease_init(b2s_dcommit_lease *w, int64_t expire_ms);
/* ms from now_ms to the next try; 0: try now. */
int64_t b2s_dcommit_lease_wait(const b2s_dcommit_lease *w, int64_t now_ms);
/* The try at now_ms was refused.  True once, at the refusal that first
 * shows the holder alive (at the first refusal when expire_ms is 0). */
bool b2s_dcommit_lease_refused(b2s_dcommit_lease *w, int64_t now_ms);
/* The try at now_ms failed otherwise (the store): again after
 * B2S_DCOMMIT_LEASE_SLOW_MS, the wait unchanged. */
void b2s_dcommit_lease_failed(b2s_dcommit_lease *w, int64_t now_ms);
/* The lease was taken: a later refusal starts a new wait. */
void b2s_dcommit_lease_taken(b2s_dcommit_lease *w);
bool b2s_dcommit_lease_alive(const b2s_dcommit_lease *w);

#endif

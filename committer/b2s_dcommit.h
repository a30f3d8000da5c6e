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
 * demand.  Threads: one thread at a time per tracker. */
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

#endif

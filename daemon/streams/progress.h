/* A stream's progress counters (b2sd_stream in b2sd.h), and every atomic
 * operation on them: each store with the load it pairs with, side by side.
 *
 * Who writes what:
 *   - the stream's writer thread (stream.c): committed, written_seq,
 *     durable_seq (after each commit, the frame complete on disk first),
 *     failed (once per writer), commit_unseen_ns (the stamp of a commit);
 *   - the workers (workers.c), under the pool lock: taken_seq, as jobs
 *     leave the queue in sequence order.
 * The I/O thread stores them only while no writer runs: a stream failed
 * at open, or re-opened after a failure (b2sd_progress_reopen).
 * The I/O thread reads them after its wakeup (b2sd_wake) and turns them
 * into credits, ACKs, FLUSHED, CLOSED and NOTIFYs; STATS reads them as
 * statistics.  Nothing else touches these fields. */
#ifndef B2SD_PROGRESS_H
#define B2SD_PROGRESS_H

#include "streamobj.h"

/* ---- the writer thread ------------------------------------------------- */

/* The frame's chunk count at open, before the writer thread starts. */
static inline void b2sd_progress_init(b2sd_stream *st, int64_t committed) {
  /* relaxed: no other thread runs yet; thread creation publishes it */
  atomic_store_explicit(&st->committed, committed, memory_order_relaxed);
}

/* The committed count as the writer itself last published it. */
static inline int64_t b2sd_progress_own_committed(b2sd_stream *st) {
  /* relaxed: this thread alone stores it (b2sd_progress_publish) */
  return atomic_load_explicit(&st->committed, memory_order_relaxed);
}

/* Stamp a commit the I/O thread has not seen yet, unless an earlier one
 * still waits (taken by b2sd_progress_take_stamp). */
static inline void b2sd_progress_stamp(b2sd_stream *st, uint64_t now_ns) {
  /* relaxed: published by the release stores of b2sd_progress_publish,
   * which the I/O thread acquires before it takes the stamp */
  uint64_t none = 0;
  atomic_compare_exchange_strong_explicit(&st->commit_unseen_ns, &none, now_ns,
                                          memory_order_relaxed,
                                          memory_order_relaxed);
}

/* After a commit: chunks in the frame, seqs committed (or dropped) and
 * durable below. */
static inline void b2sd_progress_publish(b2sd_stream *st, int64_t committed,
                                         uint64_t written, uint64_t durable) {
  /* release: pair with the acquire loads of b2sd_progress_load and
   * b2sd_progress_committed (I/O thread); the frame is complete on disk
   * before any of them is seen */
  atomic_store_explicit(&st->committed, committed, memory_order_release);
  atomic_store_explicit(&st->written_seq, written, memory_order_release);
  atomic_store_explicit(&st->durable_seq, durable, memory_order_release);
}

/* The frame failed with rc (negative): the stream stops writing. */
static inline void b2sd_progress_fail(b2sd_stream *st, int rc) {
  /* release: pairs with the acquire load in b2sd_progress_failed and
   * b2sd_progress_load */
  atomic_store_explicit(&st->failed, rc, memory_order_release);
}

/* A failed stream re-opened by the I/O thread (no writer runs): committed
 * chunks in the frame, every seq below `seq` settled, writing again. */
static inline void b2sd_progress_reopen(b2sd_stream *st, int64_t committed,
                                        uint64_t seq) {
  b2sd_progress_publish(st, committed, seq, seq);
  /* release: pairs with the acquire load in b2sd_progress_failed and
   * b2sd_progress_load; the levels above are seen with it */
  atomic_store_explicit(&st->failed, 0, memory_order_release);
}

/* ---- the workers --------------------------------------------------------- */

/* Every seq below `upto` left the queue.  Under the pool lock, so seqs of
 * one stream are stored in order. */
static inline void b2sd_progress_taken(b2sd_stream *st, uint64_t upto) {
  /* release: pairs with the acquire load in b2sd_progress_load, which
   * returns credits */
  atomic_store_explicit(&st->taken_seq, upto, memory_order_release);
}

/* ---- the I/O thread -------------------------------------------------- */

typedef struct b2sd_progress {
  int failed;                    /* negative error, 0 while writing */
  uint64_t taken;                /* seqs below left the queue */
  uint64_t written;              /* ... are committed or dropped */
  uint64_t durable;              /* ... and on stable storage */
} b2sd_progress;

static inline void b2sd_progress_load(b2sd_stream *st, b2sd_progress *p) {
  /* acquire: pair with the release stores of b2sd_progress_fail,
   * b2sd_progress_taken and b2sd_progress_publish */
  p->failed = atomic_load_explicit(&st->failed, memory_order_acquire);
  p->taken = atomic_load_explicit(&st->taken_seq, memory_order_acquire);
  p->written = atomic_load_explicit(&st->written_seq, memory_order_acquire);
  p->durable = atomic_load_explicit(&st->durable_seq, memory_order_acquire);
}

static inline int b2sd_progress_failed(b2sd_stream *st) {
  /* acquire: pairs with the release store of b2sd_progress_fail */
  return atomic_load_explicit(&st->failed, memory_order_acquire);
}

static inline uint64_t b2sd_progress_durable(b2sd_stream *st) {
  /* acquire: pairs with the release store of b2sd_progress_publish */
  return atomic_load_explicit(&st->durable_seq, memory_order_acquire);
}

/* Chunks committed in the frame: all of them readable. */
static inline int64_t b2sd_progress_committed(b2sd_stream *st) {
  /* acquire: pairs with the release store of b2sd_progress_publish */
  return atomic_load_explicit(&st->committed, memory_order_acquire);
}

/* The stamp of the oldest commit not seen yet (0: none), cleared.  Call
 * after b2sd_progress_committed showed the count advance. */
static inline uint64_t b2sd_progress_take_stamp(b2sd_stream *st) {
  /* relaxed: written before the committed count this thread acquired;
   * pairs with the compare-exchange of b2sd_progress_stamp */
  return atomic_exchange_explicit(&st->commit_unseen_ns, 0,
                                  memory_order_relaxed);
}

/* ---- statistics (any thread) ------------------------------------------- */

static inline int64_t b2sd_progress_committed_stat(b2sd_stream *st) {
  /* relaxed: a statistic, nothing is read on its strength; pairs with
   * the release store of b2sd_progress_publish */
  return atomic_load_explicit(&st->committed, memory_order_relaxed);
}

static inline int b2sd_progress_failed_stat(b2sd_stream *st) {
  /* relaxed: a statistic, nothing is read on its strength; pairs with
   * the release store of b2sd_progress_fail */
  return atomic_load_explicit(&st->failed, memory_order_relaxed);
}

#endif

/* A stream's frame and writer thread (stream.c): open, start, re-open,
 * free, and what the I/O thread asks of it.  The object itself is in
 * streamobj.h. */
#ifndef B2SD_STREAM_H
#define B2SD_STREAM_H

#include "streamobj.h"

/* A stream whose frame cannot be opened is still returned, failed
 * (b2sd_progress_failed, fail_reason): one bad frame stops no other
 * stream.  Fails only when out of memory. */
int b2sd_stream_open(b2sd_server *srv, const b2s_stream_cfg *cfg,
                     b2sd_stream **out);
/* A failed stream, when there is room again: end its writer, bring the
 * frame back to its last commit, open it and start a new writer after
 * every seq given so far.  0, or why not (the stream stays failed).  I/O
 * thread; call only when no handle is open on it. */
int b2sd_stream_reopen(b2sd_stream *st);
/* Merge upd (a msgpack map, nil deletes) into the stream's series map and
 * hand the result to the writer at the next seq: it is in the frame from
 * the commit after the buffers given before.  0 or B2S_E_SERIES_* (nothing
 * changed).  I/O thread. */
int b2sd_stream_meta(b2sd_stream *st, const void *upd, size_t len);
/* order: frame_number: everything given so far is stored or passed as a
 * gap, at the next seq (FLUSH, the last CLOSE, the drain).  I/O thread. */
void b2sd_stream_drain_mark(b2sd_stream *st);
/* A distributed stream's last producer closed: the writer tells the
 * committer (END) at the next seq.  No-op for other streams.  I/O
 * thread. */
void b2sd_stream_end_mark(b2sd_stream *st);
/* acquisitions: only: whether a buffer may come in now (an acquisition
 * takes it: counted, and the acquisition stops taking at its `frames`),
 * else B2S_E_NOT_ARMED (counted as refused unarmed, and after the end of
 * the stream's acquisition).  0 for other streams.  I/O thread. */
int b2sd_stream_acq_admit(b2sd_stream *st);
/* Hand the writer a control chunk of an acquisition (begin: plan; end:
 * NULL) at the next seq.  I/O thread. */
int b2sd_stream_acq_mark(b2sd_stream *st, struct b2sd_acqplan *begin);
/* Start the writer thread (none for a stream failed at open). */
int b2sd_stream_start(b2sd_stream *st);
/* Stop the writer (after it wrote everything queued), close the frame
 * (compacting it), join, free.  Accepts NULL. */
void b2sd_stream_free(b2sd_stream *st);
/* Run on with cfg, the settings b2s_stream_cfg_reload made of the running
 * ones and the file's (restart-only keys kept).  I/O thread. */
void b2sd_stream_reconfigure(b2sd_stream *st, const b2s_stream_cfg *cfg);
/* The ingest path's settings: valid until the I/O thread returns to its
 * loop (the next reload may write the slot again).  I/O thread. */
static inline const b2sd_ingest_cfg *b2sd_stream_ingest(b2sd_stream *st) {
  /* acquire: pairs with the release store of b2sd_stream_reconfigure and
   * b2sd_stream_open */
  return atomic_load_explicit(&st->ingest, memory_order_acquire);
}
/* Snapshot of the settings. */
void b2sd_stream_cfg_get(b2sd_stream *st, b2s_stream_cfg *out);
/* Only its compression parameters and queue depth, from the ingest
 * snapshot (no lock, no copy of the whole settings): for the per-image path
 * of a source.  I/O thread. */
void b2sd_stream_cp_get(b2sd_stream *st, b2s_cparams *cp, int *queue_depth);
/* The server's stream of that name, or NULL.  I/O thread. */
b2sd_stream *b2sd_stream_find(b2sd_server *srv, const char *name);

#endif

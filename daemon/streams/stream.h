/* A stream (stream.c): its frame, its writer thread and the fields each
 * thread owns, as the comments on struct b2sd_stream say.  The server
 * owns its streams (b2sd_server.streams, a list of the I/O thread). */
#ifndef B2SD_STREAM_H
#define B2SD_STREAM_H

#include <pthread.h>
#include <stdatomic.h>

#include "b2s_blockorder.h"
#include "b2sd.h"
#include "hist.h"
#include "life.h"
#include "order.h"

/* A buffer of a distributed stream its writer could not store: the frame
 * number was taken in the store (B2S_E_OBJ_CONFLICT), or the frame is
 * closed (B2S_E_CLOSED). */
typedef struct b2sd_conflict {
  uint64_t seq, frame;
  int code;
} b2sd_conflict;

struct b2sd_stream {
  b2sd_stream *next;             /* server list, I/O thread */
  b2sd_server *srv;
  char name[B2S_STREAM_NAME_MAX + 1];
  char path[B2S_CONFIG_PATH_MAX];
  int64_t stage_bytes;           /* its writer's direct-I/O stages */

  /* Settings: written by the I/O thread on reload, under lock; the writer
   * copies what it needs under lock. */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  b2s_stream_cfg cfg;

  /* Writer input, under lock: chunks sorted by seq (the reorder buffer),
   * the seq a flush or drain wants committed and durable, stop. */
  b2sd_chunk *ready;
  uint64_t arrived;              /* chunks ever put here: every seq given
                                    has arrived once it is seq_next */
  uint64_t flush_upto;           /* make every seq below durable */
  bool stop;
  pthread_t thread;
  bool thread_started;
  b2s_pair *fw;                  /* data and records frames: writer thread
                                    only (after start), and under lock for
                                    series metadata (b2sd_stream_meta);
                                    NULL while failed with no writer */
  uint64_t seq_base;             /* the writer's first seq (I/O thread
                                    sets it before the start) */
  char fail_reason[256];         /* why open or re-open failed (I/O
                                    thread), "" when none */

  /* Progress, published by the writer and the workers and read by the I/O
   * thread: only through progress.h, where each store sits beside the
   * load it pairs with. */
  _Atomic uint64_t written_seq;  /* every seq below is committed or dropped */
  _Atomic uint64_t durable_seq;  /* ... and on stable storage */
  _Atomic int64_t committed;     /* chunks committed in the frame */
  _Atomic int failed;            /* negative error once the frame failed */
  /* Stored by the workers under the pool lock: every seq below was taken
   * out of the queue. */
  _Atomic uint64_t taken_seq;
  size_t nqueued;                /* jobs in the FIFO, under the pool lock */

  /* Commit -> NOTIFY latency (progress.h): the writer stamps the oldest
   * commit the I/O thread has not seen yet (0: none), which takes the
   * stamp when it sees the committed count advance and notes the time to
   * its NOTIFYs. */
  _Atomic uint64_t commit_unseen_ns;

  /* I/O thread only. */
  uint64_t seq_next;             /* next sequence number to give */
  uint8_t *series;               /* the series map as META left it (the
                                    writer gets a copy at a seq of its own) */
  size_t series_len;
  /* b2nd: how a buffer's items (C order of the chunkshape) become the
   * chunk's (block after block); fixed when the stream opens, as its
   * b2nd is, then read by the workers */
  b2s_blockorder blocks;
  /* order: frame_number, fixed when the stream opens (the writer reads
   * ordered and the window size; win is the I/O thread's, order.h) */
  bool ordered;
  b2sd_window win;
  bool ord_resume;               /* the frame had chunks: the writer's window
                                    starts after ord_last (set before the
                                    writer starts, then read only) */
  uint64_t ord_last;
  uint64_t seen_committed;       /* committed count at the last scan */
  b2sd_latency notify_lat;       /* commit -> NOTIFY sent */
  struct b2sd_handle *handles;   /* producers' handles on this stream */
  /* format: distributed (dwriter.h): the cluster settings at open, set
   * by the I/O thread before the writer starts, then read only; NULL for
   * other formats. */
  struct b2sd_dist *dist;
  /* distributed: when END is due because the last producer went away
   * without CLOSE (0: not due; I/O thread only) */
  uint64_t end_due_ns;
  /* distributed: a producer sent frames of other ranks since the last
   * END (I/O thread only) */
  bool misrouted;
  /* Under lock: buffers the distributed writer could not store, appended
   * before it publishes a written level past them; the I/O thread takes
   * them (b2sd_dist_conflicts) after loading the progress and before it
   * acknowledges, so their ERROR comes before any ACK that passes them. */
  b2sd_conflict *conflicts;
  size_t nconflicts, capconflicts;
  struct b2sd_follow *follows;
  /* Its life (life.h): open, failed, writing, retiring, ...; I/O thread
   * only, moved by b2sd_life_move alone. */
  b2sd_life life;
  size_t nreads;                 /* reads of it not yet freed (I/O thread) */
  uint64_t uid;                  /* never reused: the readers' frame cache
                                    key, as a freed stream's address may be */
  _Atomic bool writer_exited;    /* its writer closed the frame (release) */

  /* Statistics (relaxed atomics; only read for STATS). */
  _Atomic uint64_t st_buffers_in, st_bytes_in, st_bytes_out, st_drops;
  _Atomic uint64_t st_chunks, st_commits, st_commit_ns_total,
      st_commit_ns_max, st_slow_calls, st_errors;
  /* Detector images by how they became chunks (enum b2s_h5_path), and
   * those that could not (damaged). */
  _Atomic uint64_t st_h5_path[3], st_h5_failed;
  /* For metrics (metrics.h), relaxed too: drops by drop-oldest (the rest
   * of st_drops are drop-newest's), refused buffers, gaps written, the
   * time (CLOCK_REALTIME) of the last commit, and the latency histograms
   * of commits (writer) and commit -> NOTIFY (I/O thread). */
  _Atomic uint64_t st_drops_oldest, st_rejected, st_gaps, st_last_commit_ns;
  b2sd_hist st_commit_hist, st_notify_hist;
};

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
/* Start the writer thread (none for a stream failed at open). */
int b2sd_stream_start(b2sd_stream *st);
/* Stop the writer (after it wrote everything queued), close the frame
 * (compacting it), join, free.  Accepts NULL. */
void b2sd_stream_free(b2sd_stream *st);
/* Update the settings the stream takes from the configuration. */
void b2sd_stream_reconfigure(b2sd_stream *st, const b2s_stream_cfg *cfg);
/* Snapshot of the settings. */
void b2sd_stream_cfg_get(b2sd_stream *st, b2s_stream_cfg *out);
/* Only its compression parameters and queue depth: for the per-image path
 * of a source, which would otherwise copy the whole settings (KiBs) under
 * the writer's lock twice an image. */
void b2sd_stream_cp_get(b2sd_stream *st, b2s_cparams *cp, int *queue_depth);
/* The server's stream of that name, or NULL.  I/O thread. */
b2sd_stream *b2sd_stream_find(b2sd_server *srv, const char *name);

#endif

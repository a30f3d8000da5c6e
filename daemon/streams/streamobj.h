/* The stream object, struct b2sd_stream: each field with the thread that
 * owns it, as its comment says.  The server owns its streams
 * (b2sd_server.streams, a list of the I/O thread); stream.c makes and
 * frees them.  Apart from stream.c, so that the modules that only read or
 * write a stream's fields (the distributed writer, the workers, the
 * hand-over) need not know its functions. */
#ifndef B2SD_STREAMOBJ_H
#define B2SD_STREAMOBJ_H

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

/* The few settings the ingest path reads per buffer (b2sd_buffer_accept,
 * b2sd_gap_put, drop-oldest, a source's images), out of the stream's
 * b2s_stream_cfg (KiBs: paths and series metadata).  Immutable once
 * published. */
typedef struct b2sd_ingest_cfg {
  b2s_cparams cparams;           /* a chunk's own: applies at once */
  int32_t queue_depth;
  int32_t backpressure;          /* enum b2s_backpressure */
  bool fills;                    /* a buffer that never reaches the frame
                                    leaves a gap (gaps, or order:
                                    frame_number) */
} b2sd_ingest_cfg;

struct b2sd_stream {
  b2sd_stream *next;             /* server list, I/O thread */
  b2sd_server *srv;
  char name[B2S_STREAM_NAME_MAX + 1];
  char path[B2S_CONFIG_PATH_MAX];
  int64_t stage_bytes;           /* its writer's direct-I/O stages */

  /* Settings: written by the I/O thread on reload, under lock; the writer
   * copies what it needs under lock.  What the ingest path reads per
   * buffer is in `ingest` (b2sd_stream_ingest), not here. */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  b2s_stream_cfg cfg;
  /* The ingest path's snapshot of cfg: published by a pointer swap
   * between the two slots on reload (b2sd_stream_reconfigure says when a
   * slot is written again).  I/O thread only. */
  _Atomic(const b2sd_ingest_cfg *) ingest;
  b2sd_ingest_cfg ingest_slot[2];

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
  /* acquisitions: only (docs/ACQUISITIONS.md): no frame of its own; an
   * acquisition's plan gives its writer files (acqfile.h).  Fixed at
   * open.  The rest is the I/O thread's: the plan whose frames it takes
   * (NULL: none), whether it takes them now, how many it admitted and may
   * admit (0: no bound), and the buffers refused after its end. */
  bool acq_only;
  struct b2sd_acqplan *acq_plan;
  bool acq_taking;
  uint64_t acq_admitted, acq_limit, acq_refused_after;
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
  _Atomic uint64_t st_refused_unarmed;   /* B2S_E_NOT_ARMED (I/O thread) */
  b2sd_hist st_commit_hist, st_notify_hist;
};

#endif

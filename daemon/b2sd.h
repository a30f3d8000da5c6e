/* b2streamd internals shared by the daemon's modules: the thread map, the
 * lock order, and the objects every module sees (jobs, chunks, streams,
 * the server).
 *
 * Threads (named as ps/top show them).  Signals are blocked in all of
 * them (main.c blocks them before the first thread starts); all are joined
 * on shutdown.
 *   - "b2streamd", the main thread, is the I/O thread (server.c): it owns
 *     every ZeroMQ socket, the signalfd, the sessions, handles and follows
 *     (session.h), the stream list and each stream's I/O-thread fields;
 *     nothing else touches them.  It alone sends (outbox.c).
 *   - "b2s-work-N", the workers (workers.c): take jobs from one FIFO,
 *     compress them with their own b2s_ctx into buffers of the chunk pool
 *     (chunkpool.c), give the chunk to the stream's writer, release the
 *     job's ZeroMQ message or shared-memory slot (segment.c).
 *   - "b2s-w-<stream>", one writer per stream (stream.c): owns its
 *     b2s_fwriter, puts chunks back in sequence order, appends and commits
 *     them (groupcommit.c decides when), publishes progress (progress.h).
 *   - "b2s-d-<stream>", the writer of a distributed stream instead
 *     (dwriter.c): owns its object store handle, its b2s_dframe and one
 *     ZeroMQ PUSH socket to the committer (made, used and closed in this
 *     thread alone); stores each chunk as an object, reports it to the
 *     committer (WRITTEN), publishes progress like the writer.
 *   - "b2s-fwriter", the frame writer's helper (core/frame_helper.c), at
 *     most one per stream writer, started by the writer at its first job:
 *     writes full direct-I/O stages of that writer's frame, or (buffered
 *     contiguous frames, opts.drop_behind) hands old data to writeback and
 *     drops it from the page cache; it shares nothing with the daemon and
 *     is joined when the writer closes its frame.
 *   - "b2s-read-N", the reader threads (readers.c): read and decompress
 *     the committed chunks READ asks for and push follows deliver, each
 *     with its own frame handles, and hand the results back.
 *   - "b2sd-zap", the ZAP handler of CURVE (auth.c), when curve is
 *     configured: answers libzmq's authentication requests and logs
 *     failed handshakes; shares only the authorized key set.
 *   - "MHD-single", libmicrohttpd's thread, when http: is configured
 *     (http.c): answers /metrics, /status.json, / and thumbnails from
 *     snapshots the I/O thread takes when it asks (msnap.c) and from
 *     frame files it opens itself; touches no stream, session or lock of
 *     the daemon but its own (a leaf).
 *   - libzmq's own threads call back into the daemon in one place: freeing
 *     a read result that was sent without a copy (readers.c).
 * Workers and writers never touch the I/O thread's sockets: they publish
 * progress in atomics of the stream (progress.h) and wake the I/O thread
 * through an eventfd (b2sd_wake), which then sends ACK, FLUSHED, CLOSED
 * and NOTIFY messages.  The one other ZeroMQ socket is a distributed
 * writer's own PUSH socket (zmq_socket on the shared context is
 * thread-safe; the socket never leaves its thread).
 *
 * Lock order.  One nesting only: a stream's `lock` (struct b2sd_stream)
 * before the chunk pool's lock (its writer gives chunks back while it
 * holds its own lock).  Every other mutex is a leaf, never held while
 * another is taken: the job FIFO's (workers.c), the readers' queue lock
 * and their byte account (readers.c), the HTTP listener's snapshot lock
 * (http.c), the authorized keys' (auth.c), and
 * the frame writer's helper mutex (core, taken only inside b2s_fwriter
 * calls, which no daemon lock surrounds).  b2sd_wake takes no lock, so it may be called under any.
 *
 * Sequence numbers: every buffer a stream accepts gets the stream's next
 * sequence number (seq_next, I/O thread).  A buffer dropped by drop-oldest
 * keeps its number and reaches the writer as a tombstone, so the writer can
 * always advance strictly in order. */
#ifndef B2SD_H
#define B2SD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

#include "b2s_blockorder.h"
#include "b2s_config.h"
#include "b2s_frame.h"
#include "b2s_frame_writer.h"
#include "b2s_meta.h"
#include "b2s_h5lz4.h"
#include "log.h"
#include "metrics.h"
#include "order.h"
#include "b2s_shm.h"

#define B2SD_NAME "b2streamd"
#define B2SD_VERSION "0.1.0"

typedef struct b2sd_stream b2sd_stream;
typedef struct b2sd_server b2sd_server;

/* ---- wakeups of the I/O thread (outbox.c) ------------------------------ */

/* Wake the I/O thread (coalesced: at most one eventfd write until it runs). */
void b2sd_wake(b2sd_server *srv);

/* ---- jobs and chunks ------------------------------------------------------ */

/* A producer's record of one buffer (PROTOCOL.md 2.4, 4.2), carried from the
 * I/O thread through the job and the chunk to the writer, which stores it
 * with the chunk.  present 0: the buffer came without one.  Whoever holds
 * the job or chunk owns user (malloc'ed). */
typedef struct b2sd_rec {
  uint16_t present;              /* B2S_WIRE_REC_FRAME, _TS, _USER_MAP */
  uint16_t user_len;
  uint64_t frame;
  int64_t ts;
  uint8_t *user;
} b2sd_rec;

/* Free the user part and clear r (chunkpool.c). */
void b2sd_rec_clear(b2sd_rec *r);
/* The record a chunk is stored with: the producer's fields of in (out
 * borrows in's user part; checksum and flags 0) (chunkpool.c). */
void b2sd_rec_record(const b2sd_rec *in, b2s_record *out);

/* One accepted buffer on its way to a worker. */
typedef struct b2sd_job {
  struct b2sd_job *next, *prev;  /* in the global FIFO */
  b2sd_stream *st;
  uint64_t seq;
  b2s_cparams cparams;           /* the stream's settings at acceptance */
  uint32_t credit_batch;         /* block: wake the I/O thread every this
                                    many takes; 0: other policies */
  bool is_shm;
  zmq_msg_t msg;                 /* ZMQ payload, owned, never copied */
  struct b2sd_seg *seg;          /* shared-memory slot (is_shm): segment
                                    (segment.h) */
  uint32_t slot;
  const void *data;              /* the buffer bytes (msg data or slot) */
  size_t len;
  uint32_t session_id, handle_id;
  uint64_t buffer_id;
  b2sd_rec rec;                  /* moves to the chunk */
  bool fill_gaps;                /* gaps: fill: a failure leaves a gap */
  /* A detector image compressed at the source (sources, source_s2.c):
   * the worker converts its framing (b2s_h5lz4.h) instead of compressing
   * data[len]; h5_nbytes is the image's declared size. */
  bool h5;
  b2s_h5_params h5p;
  int64_t h5_nbytes;
  int32_t h5_chunk_nbytes;       /* the frame's chunk size (a gap's) */
} b2sd_job;

/* One compressed chunk (or a tombstone) on its way to the writer.  A
 * worker compresses straight into data[cap]; cap is 0 for a tombstone. */
typedef struct b2sd_chunk {
  struct b2sd_chunk *next;
  uint64_t seq;
  int32_t cbytes, nbytes;        /* cbytes 0: tombstone (dropped / failed) */
  uint64_t xxh64;                /* of data[cbytes], by the worker */
  int err;                       /* compression error, 0 when none */
  uint32_t gap;                  /* tombstone: 0 (skipped), or the record
                                    flags of the gap it leaves (gaps: fill) */
  b2sd_rec rec;                  /* the producer's record, owned */
  uint8_t *series;               /* not NULL: no chunk but the stream's new
                                    series map (META), owned; the writer
                                    sets it at this seq (a distributed
                                    stream: the update, which the writer
                                    merges into the shared series) */
  size_t series_len;
  bool end;                      /* no chunk: a distributed stream's last
                                    producer closed (the writer tells the
                                    committer, END) */
  bool drain;                    /* no chunk: order: frame_number passes
                                    every frame number given (order.h) */
  size_t cap;                    /* bytes of data[], counted in inflight_bytes */
  uint8_t data[];
} b2sd_chunk;


/* ---- worker pool (workers.c) --------------------------------------------- */

typedef struct b2sd_pool b2sd_pool;

/* Start nworkers workers.  The FIFO has no bound of its own: the I/O
 * thread queues at most a stream's queue_depth jobs per stream. */
int b2sd_pool_new(b2sd_server *srv, int nworkers, b2sd_pool **out);
/* Stop once the queue is empty, join the workers, free.  Accepts NULL. */
void b2sd_pool_free(b2sd_pool *pool);
/* Queue a job (ownership moves to the pool, *job is cleared).  Never
 * blocks: the caller has checked the bounds. */
void b2sd_pool_push(b2sd_pool *pool, b2sd_job **job);
/* Remove the oldest job of stream st not yet taken by a worker; NULL when
 * there is none.  The caller owns and frees the job (b2sd_job_free). */
b2sd_job *b2sd_pool_steal_oldest(b2sd_pool *pool, b2sd_stream *st);
/* Jobs queued and not yet taken, all streams. */
size_t b2sd_pool_queued(b2sd_pool *pool);
size_t b2sd_pool_stream_queued(b2sd_pool *pool, b2sd_stream *st);
void b2sd_job_free(b2sd_server *srv, b2sd_job *job);

/* ---- reader threads (readers.c) ------------------------------------------ */

typedef struct b2sd_readers b2sd_readers;

#define B2SD_READER_THREADS 2

int b2sd_readers_new(b2sd_server *srv, int nthreads, b2sd_readers **out);
/* Stop and join the threads, free what they still hold (before the
 * streams are freed).  Accepts NULL. */
void b2sd_readers_free(b2sd_readers *rd);
/* A stream was freed: every reader thread drops its frame handles before
 * its next read.  Accepts NULL.  I/O thread. */
void b2sd_readers_forget(b2sd_readers *rd);

/* ---- latency histograms (latency.c) ---------------------------------------- */

/* 10 us buckets up to 5 ms, then one for everything slower; one thread
 * notes and reads it. */
#define B2SD_LAT_BUCKET_NS 10000u
#define B2SD_LAT_BUCKETS 500

typedef struct b2sd_latency {
  uint32_t bucket[B2SD_LAT_BUCKETS + 1];
  uint64_t n, max_ns;
} b2sd_latency;

void b2sd_latency_note(b2sd_latency *l, uint64_t ns);
/* The upper edge of the bucket holding quantile q (0..1], in us; the
 * maximum when that is the last bucket; 0 when nothing was noted. */
double b2sd_latency_quantile_us(const b2sd_latency *l, double q);

/* ---- streams (stream.c) ---------------------------------------------------- */

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
  /* Closing for good (retire.h): its series ended; no new handle, freed
   * once written and read out (I/O thread only). */
  bool retiring;
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
/* ---- file system checks (fscheck.c) ---------------------------------------- */

/* Whether the file system of a frame takes more data: a probe file
 * beside it.  0, or -errno (ENOSPC, EFBIG, EDQUOT...). */
int b2sd_space_probe(const char *frame_path, bool sparse);
/* 0 when path is a regular file; -EISDIR, -EINVAL (a FIFO, socket or
 * device: reading it could block forever) or -errno. */
int b2sd_regular_file(const char *path);
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
/* Ask the writer to commit and fsync every seq below upto. */
void b2sd_stream_flush(b2sd_stream *st, uint64_t upto);
/* Hand a chunk (or tombstone) to the writer; takes ownership. */
void b2sd_stream_put(b2sd_stream *st, b2sd_chunk *c);
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
 * snapshot (no lock, no copy of the whole settings): for the per-image
 * path of a source.  I/O thread. */
void b2sd_stream_cp_get(b2sd_stream *st, b2s_cparams *cp, int *queue_depth);
/* The server's stream of that name, or NULL.  I/O thread. */
b2sd_stream *b2sd_stream_find(b2sd_server *srv, const char *name);

/* ---- CURVE authentication of tcp:// clients (auth.c) ----------------------- */

typedef struct b2sd_auth b2sd_auth;
/* With curve configured: load the daemon's secret key and the authorized
 * client keys, bind the ZAP handler in zctx.  *out is set even on failure
 * (b2sd_auth_free it).  B2S_E_CONFIG when libzmq lacks CURVE or a key file
 * is wrong, -errno when one cannot be read (the reason is logged). */
int b2sd_auth_new(void *zctx, const b2s_daemon_cfg *d, b2sd_auth **out);
/* Make ROUTER z, before it binds endpoint, a CURVE server of the daemon. */
int b2sd_auth_server_socket(b2sd_auth *a, void *z, const char *endpoint);
/* Read and parse both key files without starting anything (the reason
 * is logged): 0, B2S_E_CONFIG or -errno. */
int b2sd_auth_check(const b2s_daemon_cfg *d);
/* Start the handler thread, once every socket is set up. */
int b2sd_auth_start(b2sd_auth *a);
/* Reload: re-read the authorized keys (on failure, logged, the old set
 * stays).  a may be NULL (curve off). */
void b2sd_auth_reload(b2sd_auth *a, const b2s_daemon_cfg *loaded);
/* Stop the thread, close its sockets (before zmq_ctx_term).  Accepts NULL. */
void b2sd_auth_free(b2sd_auth *a);

/* ---- local access (access.c) ------------------------------------------ */

/* The id of group name (B2S_E_CONFIG, logged, when it does not exist). */
int b2sd_access_group(const char *name, gid_t *gid);
/* Resolve the configured group (B2S_E_CONFIG when it does not exist). */
int b2sd_access_init(b2sd_server *srv);
/* Mode and group of a bound ipc:// socket file. */
int b2sd_access_socket(b2sd_server *srv, const char *path);
/* Mode and group of a new segment, before its name is sent. */
int b2sd_access_segment(b2sd_server *srv, b2s_shm *shm);

/* ---- what start needs, checked beforehand (preflight.c) ------------------ */

/* Everything start checks, without changing anything: the group exists,
 * CURVE key files read and parse, ipc:// endpoint directories exist, the
 * run, data and frame directories exist or can be created.  Each problem
 * is logged; B2S_E_CONFIG when there is one. */
int b2sd_preflight(const b2s_config *cfg);

/* ---- the server ------------------------------------------------------------- */

struct b2sd_server {
  const char *config_path;
  b2s_config *cfg;               /* current configuration */
  b2s_daemon_cfg dcfg;           /* its daemon part */
  void *zctx;
  void *sockets[B2S_CONFIG_MAX_LISTEN];
  int nsockets;
  int64_t max_message;           /* largest max_buffer since the start: the
                                    sockets refuse messages beyond it */
  void *monitors[B2S_CONFIG_MAX_LISTEN]; /* their socket monitors (peers.h) */
  bool monitor_curve[B2S_CONFIG_MAX_LISTEN];
  uint64_t connections;          /* open peer connections (peers.c) */
  uint64_t accept_failed;        /* connections the system refused */
  uint64_t sessions_reclaimed;   /* sessions ended without BYE: peer gone,
                                    producer dead, silent past its timeout */
  uint64_t limit_refused;        /* HELLOs and OPENs refused (fdheadroom.h) */
  b2sd_auth *auth;               /* CURVE; NULL when not configured */
  int sigfd;                     /* signalfd of SIGTERM, SIGINT, SIGHUP */
  int wakefd;                    /* eventfd */
  atomic_int wake_pending;       /* set by b2sd_wake, cleared by the I/O loop */
  b2sd_pool *pool;
  struct b2sd_chunkpool *chunks; /* idle chunk buffers (chunkpool.h) */
  b2sd_readers *readers;         /* READ and pushed chunks */
  b2sd_stream *streams;
  size_t nstreams;
  _Atomic int64_t inflight_bytes; /* buffer bytes held by jobs, and chunk
                                    bytes not yet written */
  _Atomic int64_t shm_bytes;     /* size of the live segments */
  _Atomic int64_t stage_bytes;   /* direct-I/O stages of the stream writers */
  uint32_t next_seg_id;          /* I/O thread */
  bool share;                    /* group access configured */
  gid_t share_gid;
  struct b2sd_session *sessions;
  size_t nsessions;
  size_t streams_made;           /* from templates, at run time */
  uint32_t next_session_id;
  bool draining;
  bool reload;
  int nworkers;
  struct b2sd_sources *sources;  /* detectors pulled from (source_s2.h) */
  struct b2sd_http *http;        /* metrics and status page (http.h);
                                    NULL when not configured */
};

/* The I/O loop; returns when a SIGTERM/SIGINT drain has finished. */
int b2sd_server_run(b2sd_server *srv);
int b2sd_server_init(b2sd_server *srv, const char *config_path,
                     b2s_config *cfg);
void b2sd_server_fini(b2sd_server *srv);

/* Statistics as a JSON object for STATS_REPLY (stream NULL: all).  Returns
 * a malloc'ed NUL-terminated text, NULL when out of memory. */
char *b2sd_stats_json(b2sd_server *srv, b2sd_stream *only);

#endif

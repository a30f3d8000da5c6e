/* What every part of b2streamd shares: the thread map, the lock order,
 * the wakeup of the I/O thread, the objects a buffer travels in (jobs and
 * chunks) and the server.  Each sub-room's own objects are in its headers
 * (a stream: streamobj.h; sessions, handles, follows: session.h).
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
 *   - "b2s-sse", the event streams' resumer (http.c): resumes suspended
 *     GET /api/v1/events connections when an event is posted or their
 *     keepalive is due.
 *   - "b2s-live", the live view's sampler (live.c), with http: or
 *     live.publish: reads the newest eligible frame back from a frame
 *     file at a bounded rate, from a table of names and counts the I/O
 *     thread copies for it, and alone uses the live view's PUB socket.
 *   - libzmq's own threads call back into the daemon in one place: freeing
 *     a read result that was sent without a copy (readers.c).
 * Workers and writers never touch the I/O thread's sockets: they publish
 * progress in atomics of the stream (progress.h) and wake the I/O thread
 * through an eventfd (b2sd_wake), which then sends ACK, FLUSHED, CLOSED
 * and NOTIFY messages.  The other ZeroMQ sockets are a distributed
 * writer's own PUSH socket and the live view's PUB socket (zmq_socket on
 * the shared context is thread-safe; each is used by one thread only).
 *
 * Lock order.  One nesting only: a stream's `lock` (struct b2sd_stream)
 * before the chunk pool's lock (its writer gives chunks back while it
 * holds its own lock).  Every other mutex is a leaf, never held while
 * another is taken: the job FIFO's (workers.c), the readers' queue lock
 * and their byte account (readers.c), the HTTP listener's snapshot lock
 * (http.c), the authorized keys' (auth.c), the live view's (live.c),
 * the events ring's (events.c; the one nesting of http.c's event-stream
 * lock before it), and
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
#include <sys/types.h>

#include <zmq.h>

#include "b2s_config.h"
#include "b2s_meta.h"
#include "b2s_h5lz4.h"
#include "log.h"

#define B2SD_NAME "b2streamd"
#define B2SD_VERSION "0.1.0"

typedef struct b2sd_stream b2sd_stream;
typedef struct b2sd_server b2sd_server;

/* ---- wakeups of the I/O thread (wake.c) --------------------------------- */

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
  struct b2sd_acqplan *acq_begin; /* no chunk: an acquisition's files begin
                                    here (acqfile.h); the plan is borrowed */
  bool acq_end;                  /* no chunk: the acquisition's files end */
  size_t cap;                    /* bytes of data[], counted in inflight_bytes */
  uint8_t data[];
} b2sd_chunk;

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
  bool sent_on[B2S_CONFIG_MAX_LISTEN];   /* sent on since the loop last read
                                            it: the send may have taken the
                                            ZMQ_FD edge of input (ioloop.h) */
  bool monitor_curve[B2S_CONFIG_MAX_LISTEN];
  uint64_t connections;          /* open peer connections (peers.c) */
  uint64_t accept_failed;        /* connections the system refused */
  uint64_t sessions_reclaimed;   /* sessions ended without BYE: peer gone,
                                    producer dead, silent past its timeout */
  uint64_t limit_refused;        /* HELLOs and OPENs refused (fdheadroom.h) */
  struct b2sd_auth *auth;               /* CURVE; NULL when not configured */
  int sigfd;                     /* signalfd of SIGTERM, SIGINT, SIGHUP */
  int wakefd;                    /* eventfd */
  atomic_int wake_pending;       /* set by b2sd_wake, cleared by the I/O loop */
  struct b2sd_pool *pool;         /* workers (workers.h) */
  struct b2sd_chunkpool *chunks; /* idle chunk buffers (chunkpool.h) */
  struct b2sd_readers *readers;         /* READ and pushed chunks */
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
  struct b2sd_live *live;        /* live view (live.h); NULL without http:
                                    or live.publish */
  struct b2sd_events *events;    /* events of GET /api/v1/events
                                    (events.h); posted by this thread */
  struct b2sd_acqreg *acq;       /* acquisitions (registry.h); NULL when
                                    not configured */
};

#endif

/* Metrics for HTTP readers: a plain snapshot of the daemon's figures, and
 * the texts made from it (metrics.c): the Prometheus text exposition
 * format (/metrics) and the status page's JSON (/status.json).
 *
 * The snapshot is plain data: the I/O thread fills it (msnap.c) from the
 * atomics and its own fields, the HTTP thread renders it.  Nothing here
 * touches a stream, a lock or a socket, so metrics.c is a pure function
 * of its input (tests/test_metrics.c checks the exact text). */
#ifndef B2SD_METRICS_H
#define B2SD_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"

/* ---- the snapshot ---------------------------------------------------------- */

#define B2SD_MNAME_MAX 64
#define B2SD_MPATH_MAX 4096

typedef struct b2sd_mstream {
  char name[B2SD_MNAME_MAX];
  char path[B2SD_MPATH_MAX];     /* the data frame (thumbnails read it) */
  const char *format;            /* "contiguous", "sparse", "distributed" */
  int ndim;                      /* b2nd dimensions, 0: not b2nd */
  char dtype[16];
  int64_t chunkshape[8];
  uint64_t buffers_in, bytes_in, bytes_out, chunks, commits;
  uint64_t drops_newest, drops_oldest, rejected, gaps, errors, slow_calls;
  uint64_t queued;               /* jobs waiting for a worker */
  int64_t queue_limit;           /* queue_depth */
  uint64_t backlog;              /* accepted, not yet committed */
  int64_t committed;             /* chunks in the frame */
  uint64_t last_commit_ns;       /* CLOCK_REALTIME of the last commit, 0 */
  int failed;                    /* negative error, 0 while writing */
  char fail_reason[256];
  b2sd_mhist commit, notify;
} b2sd_mstream;

/* A detector source (source_s2.c), as its counters stood. */
#define B2SD_MSOURCES_MAX 8
typedef struct b2sd_msource {
  char endpoint[512];
  const char *kind;              /* "dectris-stream2" */
  uint64_t messages, images, refused, unknown_series, series,
      series_timed_out;
  bool series_open;
} b2sd_msource;

typedef struct b2sd_msnap {
  uint64_t taken_ns;             /* CLOCK_REALTIME of the snapshot */
  uint64_t start_ns;             /* CLOCK_REALTIME of the start */
  const char *version;
  int workers;
  uint64_t sessions, sessions_reclaimed, connections, accept_failed,
      limit_refused;
  long fd_open, fd_limit;
  uint64_t queued;
  int64_t inflight_bytes, shm_bytes, stage_bytes, memory_limit;
  uint64_t shm_segments, shm_slots;
  bool draining;
  /* filled by the reader (statvfs of data_dir), -1 when unknown */
  int64_t disk_free, disk_size;
  uint64_t http_requests;        /* filled by the reader */
  uint64_t live_frames, live_dropped; /* the live view (live.h) */
  size_t nstreams;
  b2sd_mstream *streams;         /* nstreams of them */
  size_t nsources;
  b2sd_msource sources[B2SD_MSOURCES_MAX];
} b2sd_msnap;

/* ---- texts ------------------------------------------------------------------ */

/* A growing text; oom set when an allocation failed (the text is then
 * incomplete: drop it). */
typedef struct b2sd_text {
  char *p;
  size_t len, cap;
  bool oom;
} b2sd_text;

void b2sd_text_printf(b2sd_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void b2sd_text_free(b2sd_text *t);

/* The Prometheus text exposition format (version 0.0.4) of s. */
void b2sd_metrics_prometheus(const b2sd_msnap *s, b2sd_text *out);
/* The status page's JSON of s. */
void b2sd_metrics_json(const b2sd_msnap *s, b2sd_text *out);

#endif

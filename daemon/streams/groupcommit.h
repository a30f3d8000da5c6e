/* Group commit (groupcommit.c): when a stream's writer commits and whether
 * the commit must be durable.  Plain data and decisions only; the writer
 * thread (stream.c) owns its b2sd_group and does the I/O.
 *
 * A group commits when it holds group_count chunks, when its first chunk
 * waited group_interval_ms, at once when only tombstones advanced the
 * sequence (nothing to write, but levels to publish), when a flush or the
 * drain wants every seq below flush_upto durable, and at stop. */
#ifndef B2SD_GROUPCOMMIT_H
#define B2SD_GROUPCOMMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "b2s_config.h"

/* Where the writer is in its sequence. */
typedef struct b2sd_group {
  uint64_t next_seq;             /* next seq to append */
  uint64_t written;              /* seqs below are committed (or dropped) */
  uint64_t durable;              /* ... and on stable storage */
  int pending;                   /* chunks appended since the last commit */
  uint64_t pending_since;        /* ns of the first of them */
} b2sd_group;

/* What to do now. */
typedef struct b2sd_commit {
  bool commit;                   /* commit what is pending (and publish) */
  bool durable;                  /* ... and make it durable */
} b2sd_commit;

/* A chunk was appended at now_ns. */
void b2sd_group_appended(b2sd_group *g, uint64_t now_ns);
/* Whether commits of this stream are durable by themselves (ack fsync). */
bool b2sd_group_fsync(const b2s_stream_durability *dur);
/* After an append: the group is full, commit it now (durable when
 * b2sd_group_fsync). */
bool b2sd_group_full(const b2sd_group *g, const b2s_stream_durability *dur);
/* When the pending chunks must be committed at the latest (meaningful
 * while some are pending). */
uint64_t b2sd_group_deadline(const b2sd_group *g,
                             const b2s_stream_durability *dur);
/* After the chunks at hand were appended: commit now?  flush_upto: every
 * seq below must become durable; stop: the writer is stopping. */
b2sd_commit b2sd_group_decide(const b2sd_group *g,
                              const b2s_stream_durability *dur,
                              uint64_t flush_upto, bool stop, uint64_t now_ns);
/* How long to wait for more chunks: false for no limit, else true with
 * *ns (0 when the deadline passed).  deadline and now_ns as taken before
 * the commit decided on. */
bool b2sd_group_wait(const b2sd_group *g, uint64_t deadline, uint64_t now_ns,
                     uint64_t *ns);

#endif

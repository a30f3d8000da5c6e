/* Sources the daemon pulls from itself: DECTRIS Stream V2 detectors
 * (source_s2.c, docs/SOURCES.md).  I/O thread only. */
#ifndef B2SD_SOURCE_S2_H
#define B2SD_SOURCE_S2_H

#include "b2sd.h"
#include "b2s_stream2.h"

/* Connect a PULL socket per configured source. */
int b2sd_sources_new(b2sd_server *srv);
/* Source i's PULL socket (i < b2sd_sources_count), for the loop's wait. */
void *b2sd_sources_socket(b2sd_server *srv, size_t i);
/* What reading a source's socket left: read empty (its next message
 * raises its ZMQ_FD), a batch read and more may wait, or held back (its
 * streams have no room, or the daemon drains) with its messages in
 * ZeroMQ, where the detector's PUSH holds back. */
typedef enum b2sd_source_left {
  B2SD_SOURCE_EMPTY,
  B2SD_SOURCE_MORE,
  B2SD_SOURCE_HELD
} b2sd_source_left;
/* Read source i's socket: a bounded batch (other sockets and the timers
 * get their turn), as far as its streams have room. */
b2sd_source_left b2sd_sources_recv(b2sd_server *srv, size_t i);
/* Before each wait: true when a source's streams have no room, and the
 * loop waits with a short timeout to look again (the workers make room
 * within it). */
bool b2sd_sources_arm(b2sd_server *srv);
/* Close series that have been silent past their timeout. */
void b2sd_sources_tick(b2sd_server *srv, uint64_t now_ns);
/* Close the open series (drain), before the streams stop. */
void b2sd_sources_close(b2sd_server *srv);
/* Close the sockets, free (before zmq_ctx_term).  No-op without sources. */
void b2sd_sources_free(b2sd_server *srv);
/* One source's counters, as the metrics show them; the texts are the
 * source's (valid while the configuration is). */
typedef struct b2sd_source_counts {
  const char *endpoint;
  const char *kind;              /* "dectris-stream2" */
  uint64_t messages, images, refused, unknown_series, series,
      series_timed_out;
  bool series_open;
} b2sd_source_counts;

/* How many sources there are, and the counters of source i of them. */
size_t b2sd_sources_count(b2sd_server *srv);
void b2sd_source_counts_get(b2sd_server *srv, size_t i,
                            b2sd_source_counts *out);
/* The sources' counters as a JSON array (malloc'ed), NULL when out of
 * memory. */
char *b2sd_sources_json(b2sd_server *srv);

#endif

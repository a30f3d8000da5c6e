/* What the cluster tests share (test_cluster.c, test_cluster_chaos.c):
 * deterministic frame contents, the store of a cluster, the committer
 * process, and a producer's resend to a restarted rank.  The cluster
 * itself (ranks as real daemons) is daemon_harness.h's.
 *
 * Nothing here asserts: callers in other threads than cmocka's get codes
 * back and decide. */
#ifndef B2S_TEST_CLUSTER_UTIL_H
#define B2S_TEST_CLUSTER_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "b2s_store.h"
#include "b2stream_client.h"
#include "daemon_harness.h"

/* Buffer of frame f, len bytes (a multiple of 4): deterministic,
 * compressible, different per frame. */
void cluster_frame_fill(uint8_t *b, size_t len, uint64_t f);

/* Open the cluster's store (a RADOS one with c->ceph_conf); 0 or the
 * store's code. */
int cluster_store_open(const cluster *c, b2s_store **out);

/* Start b2stream-committer ($B2S_COMMITTER) on the cluster's endpoints
 * for `frame` with gap timeout gap_ms, logging to DIR/committer.log;
 * its pid.  Stop with SIGTERM: its exit status (-1 on a signal death). */
pid_t cluster_committer_start(const cluster *c, const char *frame,
                              int gap_ms);
/* The same with frame NULL (no --frame: the committer learns frames from
 * the ranks' messages, as b2stream-committer@.service runs it) and
 * --lease-ms lease_ms when above 0. */
pid_t cluster_committer_start_opts(const cluster *c, const char *frame,
                                   int gap_ms, int lease_ms);
int cluster_committer_stop(pid_t pid, int sig);

/* Resend what `rank` did not acknowledge (frames of len bytes, filled by
 * cluster_frame_fill) through a new session, reconnecting until the rank
 * answers (up to 10 s); each send waits up to send_ms.  0, or the first
 * failure (a frame whose send failed stays unacknowledged). */
int cluster_resend(b2sc_cluster *cl, int rank, size_t len, int send_ms);

#endif

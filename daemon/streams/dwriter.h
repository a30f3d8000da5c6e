/* The writer of a distributed stream (format: distributed,
 * docs/DISTRIBUTED.md): instead of appending to a local frame, each chunk
 * this rank owns becomes an object in the cluster's store
 * (b2s_dframe_put_chunk), and the committer hears of it (WRITTEN over a
 * PUSH socket this thread owns).  Chunk i of the distributed frame is
 * frame number i; the committer keeps the index, so there is nothing to
 * commit here.
 *
 * Acknowledgements: `write` and `fsync` both wait for put_chunk, which
 * returns once the store acknowledged the object: RADOS acknowledges
 * durable writes only, and the local store is opened with full sync for
 * ack: fsync (with ack: write a FLUSH syncs the store's file system).
 * Receipt is acknowledged by the I/O thread as for every stream.
 *
 * The thread opens the store and the frame itself, so a slow or absent
 * store never holds up the I/O thread or another stream; when it cannot
 * (or a put fails) the stream fails like a local one and a later OPEN
 * starts a new writer.  At the last producer's CLOSE and at its stop it
 * sends END: one past the highest frame number this writer stored.  A
 * committer restarted meanwhile has forgotten it, so END goes again every
 * second while no new chunk comes, until the committer's COMMITTED (on
 * committer_pub, when configured) says the frame is closed. */
#ifndef B2SD_DWRITER_H
#define B2SD_DWRITER_H

#include "b2sd.h"
#include "rank.h"

typedef struct b2sd_dist {
  b2sd_rank rank;
  char storage[B2S_CONFIG_PATH_MAX];       /* rados://POOL or a directory */
  char ceph_conf[B2S_CONFIG_PATH_MAX];     /* "" = librados's search */
  char committer[B2S_CONFIG_ENDPOINT_MAX];
  char committer_pub[B2S_CONFIG_ENDPOINT_MAX];   /* "" = not given */
} b2sd_dist;

/* The cluster settings of a distributed stream, from the configuration
 * (malloc'ed; NULL when out of memory). */
b2sd_dist *b2sd_dist_new(const b2s_cluster_cfg *k);

/* The writer thread's body (pthread_create argument: the stream). */
void *b2sd_dwriter_main(void *stream);

#endif

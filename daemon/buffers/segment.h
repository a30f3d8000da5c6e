/* Shared-memory segments of producer handles (segment.c).
 *
 * A segment belongs to one producer handle and is referenced by the handle
 * and by every job holding one of its slots; the last reference destroys
 * it (unmap, unlink), so a slot stays mapped while a worker reads it even
 * after its producer is gone.  Any thread may drop a reference; the I/O
 * thread alone creates segments and takes slots. */
#ifndef B2SD_SEGMENT_H
#define B2SD_SEGMENT_H

#include "b2s_shm.h"
#include "b2sd.h"

struct b2sd_seg {
  b2sd_server *srv;
  b2s_shm *shm;
  uint32_t id;
  size_t bytes;
  _Atomic int refs;
};

typedef struct b2sd_seg b2sd_seg;

/* A new segment of at most `want` slots (fewer when memory_limit leaves
 * room for fewer, at most shm.slots) of slot_size bytes, its access set,
 * with one reference for the caller.  I/O thread. */
int b2sd_seg_new(b2sd_server *srv, uint32_t want, size_t slot_size,
                 b2sd_seg **out);
void b2sd_seg_ref(b2sd_seg *g);
void b2sd_seg_unref(b2sd_seg *g);
/* The handle is gone: reclaim the producer's unfinished slots, drop the
 * handle's reference. */
void b2sd_seg_end(b2sd_seg *g);
/* Take the SUBMITTED slot a notice names (its record must match the
 * notice: len, buffer id); *data is the slot's bytes.  I/O thread. */
int b2sd_seg_take(b2sd_seg *g, uint32_t slot, size_t len, uint64_t id,
                  const void **data);
/* Release a TAKEN slot (a worker has read it, or no job took it). */
void b2sd_seg_give_back(b2sd_seg *g, uint32_t slot);
/* True when the producer that attached g has died (g may be NULL). */
bool b2sd_seg_producer_dead(const b2sd_seg *g);
/* Remove segments a dead daemon left; logs how many. */
void b2sd_shm_cleanup(void);
/* Bytes left for ZeroMQ buffers in flight: the memory limit less the
 * shared-memory segments and the direct-I/O stages.  Any thread. */
int64_t b2sd_memory_headroom(b2sd_server *srv);

#endif

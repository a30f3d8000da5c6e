/* Shared-memory segments of producer handles (proto/b2s_shm.h): creating
 * them within memory_limit, their references, giving slots back, and the
 * memory room left for buffers in flight.
 *
 * Segments count against memory_limit together with the ZeroMQ buffers
 * in flight and the writers' direct-I/O stages.  A slot is taken by the
 * I/O thread with a CAS in the segment, so a forged or repeated notice
 * cannot hand one slot to two jobs; a worker compresses straight from it
 * and releases it. */
#define _GNU_SOURCE
#include "segment.h"
#include "access.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23    /* Linux 5.14 */
#endif

/* Segment names: "/b2s-d-<daemon pid>-<n>"; b2s_shm_cleanup_stale removes
 * those of daemons that no longer run. */
#define SEG_PREFIX "d"

int64_t b2sd_memory_headroom(b2sd_server *srv) {
  /* relaxed: an approximate bound, like inflight_bytes; pairs with the
   * fetch_add/fetch_sub below and in stream.c */
  return srv->dcfg.memory_limit -
         atomic_load_explicit(&srv->shm_bytes, memory_order_relaxed) -
         atomic_load_explicit(&srv->stage_bytes, memory_order_relaxed);
}

void b2sd_seg_ref(b2sd_seg *g) {
  /* relaxed: the caller already holds a reference; pairs with the acq_rel
   * fetch_sub in b2sd_seg_unref */
  atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
}

void b2sd_seg_unref(b2sd_seg *g) {
  /* acq_rel: the last owner sees every other owner's releases of slots
   * before it unmaps; pairs with itself and b2sd_seg_ref */
  if (atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) != 1)
    return;
  LOG_D("segment %s removed", b2s_shm_name(g->shm));
  b2s_shm_destroy(g->shm);
  /* relaxed: see b2sd_memory_headroom */
  atomic_fetch_sub_explicit(&g->srv->shm_bytes, (int64_t)g->bytes,
                            memory_order_relaxed);
  free(g);
}

void b2sd_seg_end(b2sd_seg *g) {
  /* No notice of the handle is handled any more, so slots the producer
   * still fills or submitted without a notice are free again. */
  int n = b2s_shm_reclaim(g->shm);
  int m = b2s_shm_reclaim_submitted(g->shm);
  if (n > 0 || m > 0)
    LOG_I("segment %s: %d filling and %d unannounced slots reclaimed",
          b2s_shm_name(g->shm), n > 0 ? n : 0, m > 0 ? m : 0);
  b2sd_seg_unref(g);
}

void b2sd_seg_give_back(b2sd_seg *g, uint32_t slot) {
  int rc = b2s_shm_release(g->shm, slot);
  if (rc < 0)
    LOG_E("segment %s: releasing slot %u: %s", b2s_shm_name(g->shm), slot,
          b2s_strerror(rc));
}

void b2sd_shm_cleanup(void) {
  int rc = b2s_shm_cleanup_stale(SEG_PREFIX);
  if (rc > 0)
    LOG_I("removed %d shared-memory segments left by a daemon that died", rc);
  else if (rc < 0 && rc != -ENOENT)
    LOG_W("cleaning stale shared-memory segments: %s", b2s_strerror(rc));
}

/* The largest segment of at most `want` slots that fits in `room` bytes. */
static int seg_geometry(uint32_t want, size_t slot_size, int64_t room,
                        b2s_shm_geometry *g) {
  int rc = b2s_shm_geometry_compute(1, slot_size, g);
  if (rc < 0)
    return rc;
  if ((int64_t)g->total_size > room)
    return -ENOSPC;
  int64_t fit = 1 + (room - (int64_t)g->total_size) / (int64_t)g->slot_stride;
  uint32_t n = want < fit ? want : (uint32_t)fit;
  /* descriptors may need one more page: step down until it fits */
  while ((rc = b2s_shm_geometry_compute(n, slot_size, g)) == 0 &&
         (int64_t)g->total_size > room && n > 1)
    n--;
  return rc;
}

/* Map every slot page into the daemon now.  Otherwise a worker takes a
 * page fault per 4 KiB the first time it reads each slot, on the hot path
 * and in its CPU time; here it is paid once per segment, by the I/O
 * thread.  The pages count in memory_limit already.  Best effort: an older
 * kernel without MADV_POPULATE_WRITE leaves them to the workers. */
static void seg_prefault(b2s_shm *shm) {
  uint32_t n = b2s_shm_nslots(shm);
  size_t size = b2s_shm_slot_size(shm);
  for (uint32_t i = 0; i < n; i++)
    if (madvise(b2s_shm_slot_ptr(shm, i), size, MADV_POPULATE_WRITE) < 0)
      return;
}

int b2sd_seg_new(b2sd_server *srv, uint32_t want, size_t slot_size,
                   b2sd_seg **out) {
  b2sd_seg *g = calloc(1, sizeof *g);
  if (!g)
    return B2S_E_NOMEM;
  uint32_t limit = (uint32_t)srv->dcfg.shm.slots;
  /* relaxed: an approximate bound, as in b2sd_buffer_accept; pairs with
   * the fetch_add there and the fetch_subs of b2sd_job_free and
   * b2sd_chunk_done */
  int64_t room = b2sd_memory_headroom(srv) -
                 atomic_load_explicit(&srv->inflight_bytes, memory_order_relaxed);
  b2s_shm_geometry geo;
  int rc = seg_geometry(want < limit ? want : limit, slot_size, room, &geo);
  char name[B2S_SHM_NAME_MAX + 1];
  g->id = ++srv->next_seg_id;
  if (rc == 0)
    rc = b2s_shm_name_make(name, sizeof name, SEG_PREFIX, getpid(), g->id);
  if (rc >= 0)
    rc = b2s_shm_create(name, geo.nslots, slot_size, geo.total_size, &g->shm);
  if (rc >= 0 && (rc = b2sd_access_segment(srv, g->shm)) < 0)
    b2s_shm_destroy(g->shm);
  else if (rc >= 0)
    seg_prefault(g->shm);
  if (rc < 0) {
    free(g);
    return rc;
  }
  g->srv = srv;
  g->bytes = geo.total_size;
  atomic_init(&g->refs, 1);
  /* relaxed: see b2sd_memory_headroom */
  atomic_fetch_add_explicit(&srv->shm_bytes, (int64_t)g->bytes,
                            memory_order_relaxed);
  *out = g;
  return 0;
}

/* Take the slot a notice names; its record must match the notice. */
int b2sd_seg_take(b2sd_seg *g, uint32_t slot, size_t len, uint64_t id,
                    const void **data) {
  uint64_t bid;
  int rc = b2s_shm_take_submitted(g->shm, slot, len, data, &bid);
  if (rc == 0 && bid != id) {
    b2sd_seg_give_back(g, slot);
    rc = B2S_E_PROTO;
  }
  return rc;
}

bool b2sd_seg_producer_dead(const b2sd_seg *g) {
  b2s_shm_stats st;
  if (!g || b2s_shm_stats_get(g->shm, &st) < 0 ||
      st.producer_pid == 0)
    return false;
  return b2s_shm_producer_alive(g->shm) == 0;
}

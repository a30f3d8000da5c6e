/* What becomes of a chunk after its writer: its record, its buffer back to
 * the pool (chunkpool.c) and the credits that frees. */
#define _GNU_SOURCE
#include "chunkpool.h"
#include "segment.h"
#include "b2s_wire.h"

#include <stdlib.h>

void b2sd_rec_clear(b2sd_rec *r) {
  free(r->user);
  *r = (b2sd_rec){0};
}

void b2sd_rec_record(const b2sd_rec *in, b2s_record *out) {
  *out = (b2s_record){0};
  out->has_frame = in->present & B2S_WIRE_REC_FRAME;
  out->frame = in->frame;
  out->has_ts = in->present & B2S_WIRE_REC_TS;
  out->ts = in->ts;
  if (in->user_len) {
    out->user_kind = in->present & B2S_WIRE_REC_USER_MAP
                         ? B2S_RECORD_USER_MAP : B2S_RECORD_USER_BIN;
    out->user = in->user;
    out->user_len = in->user_len;
  }
}

void b2sd_chunk_done(b2sd_server *srv, b2sd_chunk *c) {
  b2sd_rec_clear(&c->rec);
  free(c->series);
  c->series = NULL;
  if (c->cap == 0) {
    free(c);
    return;
  }
  int64_t room = b2sd_memory_headroom(srv), cap = (int64_t)c->cap;
  /* relaxed: the memory bound; pairs with the fetch_add in compress_job
   * (workers.c) */
  int64_t before = atomic_fetch_sub_explicit(&srv->inflight_bytes, cap,
                                             memory_order_relaxed);
  b2sd_chunkpool_put(srv->chunks, c);  /* c is gone: another thread may hold it */
  /* credits held back for memory may come back now */
  if (before >= room && before - cap < room)
    b2sd_wake(srv);
}

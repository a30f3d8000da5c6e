/* The chunk-buffer pool: idle chunk buffers, most recently returned first,
 * shared by the server's workers and writers.
 *
 * A fresh buffer of several MiB costs a page fault and a page clear per
 * 4 KiB on first touch, more than compressing into it, so buffers come back
 * here from the writers and, once warm, the hot path allocates nothing.  At
 * most `max` are kept (the workers' and writers' steady need: the server
 * makes it its workers plus two, a chunk being written and one ready), so
 * idle memory stays bounded whatever the number of streams; chunks in
 * flight count in inflight_bytes. */
#define _GNU_SOURCE
#include "chunkpool.h"
#include "wire.h"
#include "segment.h"

#include <stdlib.h>

struct b2sd_chunkpool {
  pthread_mutex_t lock;          /* guards head, n; a leaf lock */
  b2sd_chunk *head;
  int n, max;
};

int b2sd_chunkpool_new(int max, b2sd_chunkpool **out) {
  b2sd_chunkpool *cp = calloc(1, sizeof *cp);
  if (!cp)
    return B2S_E_NOMEM;
  pthread_mutex_init(&cp->lock, NULL);
  cp->max = max;
  *out = cp;
  return 0;
}

void b2sd_chunkpool_free(b2sd_chunkpool *cp) {
  if (!cp)
    return;
  b2sd_chunkpool_trim(cp);
  pthread_mutex_destroy(&cp->lock);
  free(cp);
}

b2sd_chunk *b2sd_chunkpool_get(b2sd_chunkpool *cp, size_t cap) {
  pthread_mutex_lock(&cp->lock);
  b2sd_chunk **pp = &cp->head;
  while (*pp && (*pp)->cap < cap)
    pp = &(*pp)->next;
  b2sd_chunk *c = *pp;
  if (c) {
    *pp = c->next;
    cp->n--;
  }
  pthread_mutex_unlock(&cp->lock);
  if (!c && (c = malloc(sizeof *c + cap)) != NULL)
    c->cap = cap;
  if (c) {                       /* chunk_done frees a record it holds */
    c->rec = (b2sd_rec){0};
    c->gap = 0;
    c->series = NULL;
    c->drain = false;
    c->end = false;
  }
  return c;
}

/* Keep c for reuse; when the pool is full the smallest buffer goes (c
 * itself when it is the smallest). */
static void chunkpool_put(b2sd_chunkpool *cp, b2sd_chunk *c) {
  b2sd_chunk *out = c;
  pthread_mutex_lock(&cp->lock);
  if (cp->n < cp->max) {
    out = NULL;
    cp->n++;
  } else if (cp->head) {
    b2sd_chunk **small = NULL;
    for (b2sd_chunk **pp = &cp->head; *pp; pp = &(*pp)->next)
      if (!small || (*pp)->cap < (*small)->cap)
        small = pp;
    if ((*small)->cap < c->cap) {
      out = *small;
      *small = out->next;
    }
  }
  if (out != c) {
    c->next = cp->head;
    cp->head = c;
  }
  pthread_mutex_unlock(&cp->lock);
  free(out);
}

void b2sd_chunkpool_trim(b2sd_chunkpool *cp) {
  pthread_mutex_lock(&cp->lock);
  b2sd_chunk *c = cp->head;
  cp->head = NULL;
  cp->n = 0;
  pthread_mutex_unlock(&cp->lock);
  while (c) {
    b2sd_chunk *nx = c->next;
    free(c);
    c = nx;
  }
}

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
  int64_t room = b2sd_memory_room(srv), cap = (int64_t)c->cap;
  /* relaxed: the memory bound; pairs with the fetch_add in compress_job
   * (workers.c) */
  int64_t before = atomic_fetch_sub_explicit(&srv->inflight_bytes, cap,
                                             memory_order_relaxed);
  chunkpool_put(srv->chunks, c);  /* c is gone: another thread may hold it */
  /* credits held back for memory may come back now */
  if (before >= room && before - cap < room)
    b2sd_wake(srv);
}

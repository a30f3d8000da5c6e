/* The chunk-buffer pool: idle chunk buffers, most recently returned first,
 * shared by the server's workers and writers.
 *
 * A fresh buffer of several MiB costs a page fault and a page clear per
 * 4 KiB on first touch, more than compressing into it, so buffers come back
 * here from the writers and, once warm, the hot path allocates nothing.
 * The chunks in flight swing with the writers: a writer that falls behind
 * (a commit, a slow disk, two cores shared by workers and writers) holds
 * back up to memory_limit of them, and a pool of a few buffers then frees
 * most of them when the writer catches up, to fault them in again on the
 * next swing.  So the pool keeps idle buffers up to a byte budget (a
 * quarter of memory_limit, set by the server), held beside memory_limit
 * as the chunks read for consumers are: counted in it, idle buffers would
 * compete with the buffers they are there to serve, and either block
 * credits or be freed again under exactly the load they are for. */
#define _GNU_SOURCE
#include "chunkpool.h"
#include "wire.h"
#include "segment.h"

#include <stdlib.h>

struct b2sd_chunkpool {
  pthread_mutex_t lock;          /* guards head, n, idle; a leaf lock */
  b2sd_chunk *head;
  int n;
  int64_t max_bytes;
  /* the bytes of the idle buffers: written under lock, read without it
   * by b2sd_chunkpool_idle_bytes */
  _Atomic int64_t idle;
};

int b2sd_chunkpool_new(int64_t max_bytes, b2sd_chunkpool **out) {
  b2sd_chunkpool *cp = calloc(1, sizeof *cp);
  if (!cp)
    return B2S_E_NOMEM;
  pthread_mutex_init(&cp->lock, NULL);
  cp->max_bytes = max_bytes;
  atomic_init(&cp->idle, 0);
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

void b2sd_chunkpool_set_max(b2sd_chunkpool *cp, int64_t max_bytes) {
  pthread_mutex_lock(&cp->lock);
  cp->max_bytes = max_bytes;
  bool over = b2sd_chunkpool_idle_bytes(cp) > max_bytes;
  pthread_mutex_unlock(&cp->lock);
  if (over)
    b2sd_chunkpool_trim(cp);
}

int64_t b2sd_chunkpool_idle_bytes(b2sd_chunkpool *cp) {
  /* relaxed: a figure for statistics and the budget (read under the lock
   * there); pairs with the stores in idle_add */
  return cp ? atomic_load_explicit(&cp->idle, memory_order_relaxed) : 0;
}

/* Under cp->lock. */
static void idle_add(b2sd_chunkpool *cp, int64_t bytes) {
  /* relaxed: the lock orders the writers; pairs with the load in
   * b2sd_chunkpool_idle_bytes */
  atomic_store_explicit(&cp->idle,
                        atomic_load_explicit(&cp->idle, memory_order_relaxed) +
                            bytes,
                        memory_order_relaxed);
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
    idle_add(cp, -(int64_t)c->cap);
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

/* Under cp->lock: unlink the smallest idle buffer when it is smaller than
 * cap; NULL when none is. */
static b2sd_chunk *unlink_smaller(b2sd_chunkpool *cp, size_t cap) {
  b2sd_chunk **small = NULL;
  for (b2sd_chunk **pp = &cp->head; *pp; pp = &(*pp)->next)
    if (!small || (*pp)->cap < (*small)->cap)
      small = pp;
  if (!small || (*small)->cap >= cap)
    return NULL;
  b2sd_chunk *s = *small;
  *small = s->next;
  cp->n--;
  idle_add(cp, -(int64_t)s->cap);
  return s;
}

/* Keep c for reuse within the byte budget, making room by letting smaller
 * idle buffers go; c itself goes when it cannot fit. */
static void chunkpool_put(b2sd_chunkpool *cp, b2sd_chunk *c) {
  b2sd_chunk *out = NULL, *s;
  int64_t cap = (int64_t)c->cap;
  pthread_mutex_lock(&cp->lock);
  while (b2sd_chunkpool_idle_bytes(cp) + cap > cp->max_bytes &&
         (s = unlink_smaller(cp, c->cap)) != NULL) {
    s->next = out;
    out = s;
  }
  if (b2sd_chunkpool_idle_bytes(cp) + cap <= cp->max_bytes) {
    c->next = cp->head;
    cp->head = c;
    cp->n++;
    idle_add(cp, cap);
  } else {
    c->next = out;
    out = c;
  }
  pthread_mutex_unlock(&cp->lock);
  while (out) {
    s = out->next;
    free(out);
    out = s;
  }
}

void b2sd_chunkpool_trim(b2sd_chunkpool *cp) {
  pthread_mutex_lock(&cp->lock);
  b2sd_chunk *c = cp->head;
  cp->head = NULL;
  cp->n = 0;
  idle_add(cp, -b2sd_chunkpool_idle_bytes(cp));
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

b2sd_chunk *b2sd_chunk_take_ready(b2sd_stream *st, uint64_t next_seq) {
  b2sd_chunk *batch = NULL, **tail = &batch;
  while (st->ready && st->ready->seq < next_seq) {   /* of a failed writer */
    b2sd_chunk *c = st->ready;
    st->ready = c->next;
    b2sd_chunk_done(st->srv, c);
  }
  while (st->ready && st->ready->seq == next_seq) {
    b2sd_chunk *c = st->ready;
    st->ready = c->next;
    c->next = NULL;
    *tail = c;
    tail = &c->next;
    next_seq++;
  }
  return batch;
}

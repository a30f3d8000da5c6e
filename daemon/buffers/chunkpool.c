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

#include "b2s_assert.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The lazy list may hold this many times the budget: with the budget a
 * quarter of memory_limit, the pool's buffers then span memory_limit, the
 * most the chunks in flight can take. */
#define LAZY_TIMES 3

struct b2sd_chunkpool {
  pthread_mutex_t lock;          /* guards all but idle's reads; a leaf lock */
  b2sd_chunk *head;
  int n;
  int64_t max_bytes;
  /* buffers past the budget, their pages handed back lazily (MADV_FREE):
   * up to LAZY_TIMES the budget, not counted in idle */
  b2sd_chunk *lazy;
  int64_t lazy_bytes;
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
  bool over = b2sd_chunkpool_idle_bytes(cp) > max_bytes ||
              cp->lazy_bytes > LAZY_TIMES * max_bytes;
  pthread_mutex_unlock(&cp->lock);
  if (over)
    b2sd_chunkpool_trim(cp);
}

int64_t b2sd_chunkpool_idle_bytes(b2sd_chunkpool *cp) {
  /* relaxed: a figure for statistics and the budget (read under the lock
   * there); pairs with the stores in idle_add */
  return cp ? atomic_load_explicit(&cp->idle, memory_order_relaxed) : 0;
}

int64_t b2sd_chunkpool_lazy_bytes(b2sd_chunkpool *cp) {
  pthread_mutex_lock(&cp->lock);
  int64_t n = cp->lazy_bytes;
  pthread_mutex_unlock(&cp->lock);
  return n;
}

/* Under cp->lock. */
static void idle_add(b2sd_chunkpool *cp, int64_t bytes) {
  /* relaxed: the lock orders the writers; pairs with the load in
   * b2sd_chunkpool_idle_bytes */
  int64_t now = atomic_load_explicit(&cp->idle, memory_order_relaxed) + bytes;
  /* every buffer counted in is counted out once */
  B2S_ASSERT(now >= 0);
  atomic_store_explicit(&cp->idle, now, memory_order_relaxed);
}

/* Unlink the first buffer of the list at *pp that holds cap bytes; NULL
 * when none does. */
static b2sd_chunk *unlink_fit(b2sd_chunk **pp, size_t cap) {
  while (*pp && (*pp)->cap < cap)
    pp = &(*pp)->next;
  b2sd_chunk *c = *pp;
  if (c)
    *pp = c->next;
  return c;
}

b2sd_chunk *b2sd_chunkpool_get(b2sd_chunkpool *cp, size_t cap) {
  pthread_mutex_lock(&cp->lock);
  b2sd_chunk *c = unlink_fit(&cp->head, cap);
  if (c) {
    cp->n--;
    idle_add(cp, -(int64_t)c->cap);
  } else if ((c = unlink_fit(&cp->lazy, cap)) != NULL) {
    cp->lazy_bytes -= (int64_t)c->cap;
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
    c->acq_begin = NULL;
    c->acq_end = false;
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

/* Under cp->lock: whether c fits on the lazy list. */
static bool lazy_room(const b2sd_chunkpool *cp, const b2sd_chunk *c) {
  return cp->lazy_bytes + (int64_t)c->cap <= LAZY_TIMES * cp->max_bytes;
}

/* A buffer past the budget: its pages go back to the kernel lazily, taken
 * only when memory runs short, and the buffer waits on the lazy list.  A
 * worker reusing it before then writes to pages still there: no fault and
 * no page clear, which a freed and new buffer costs per 4 KiB.  Freed when
 * the lazy list is full, or the kernel cannot do it.  The madvise runs
 * outside the lock; the room is checked again after it. */
static void go_lazy(b2sd_chunkpool *cp, b2sd_chunk *c) {
  pthread_mutex_lock(&cp->lock);
  bool keep = lazy_room(cp, c);
  pthread_mutex_unlock(&cp->lock);
#ifdef MADV_FREE
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)c->data + page - 1) & ~(page - 1);
  uintptr_t hi = ((uintptr_t)c->data + c->cap) & ~(page - 1);
  keep = keep && (hi <= lo || madvise((void *)lo, hi - lo, MADV_FREE) == 0);
#else
  keep = false;
#endif
  if (keep) {
    pthread_mutex_lock(&cp->lock);
    if ((keep = lazy_room(cp, c))) {
      c->next = cp->lazy;
      cp->lazy = c;
      cp->lazy_bytes += (int64_t)c->cap;
    }
    pthread_mutex_unlock(&cp->lock);
  }
  if (!keep)
    free(c);
}

/* Keep c for reuse within the byte budget, making room by letting smaller
 * idle buffers go; c itself goes when it cannot fit. */
void b2sd_chunkpool_put(b2sd_chunkpool *cp, b2sd_chunk *c) {
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
    go_lazy(cp, out);
    out = s;
  }
}

/* Under cp->lock: take the whole idle list. */
static b2sd_chunk *detach_idle(b2sd_chunkpool *cp) {
  b2sd_chunk *c = cp->head;
  cp->head = NULL;
  cp->n = 0;
  idle_add(cp, -b2sd_chunkpool_idle_bytes(cp));
  return c;
}

void b2sd_chunkpool_release(b2sd_chunkpool *cp) {
  pthread_mutex_lock(&cp->lock);
  b2sd_chunk *c = detach_idle(cp);
  pthread_mutex_unlock(&cp->lock);
  for (b2sd_chunk *nx; c; c = nx) {
    nx = c->next;
    go_lazy(cp, c);
  }
}

void b2sd_chunkpool_trim(b2sd_chunkpool *cp) {
  pthread_mutex_lock(&cp->lock);
  b2sd_chunk *lists[2] = {detach_idle(cp), cp->lazy};
  cp->lazy = NULL;
  cp->lazy_bytes = 0;
  pthread_mutex_unlock(&cp->lock);
  for (int i = 0; i < 2; i++)
    for (b2sd_chunk *c = lists[i], *nx; c; c = nx) {
      nx = c->next;
      free(c);
    }
}

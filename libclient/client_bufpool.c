/* Reusable message buffers for the copying sends (b2sc_send and
 * b2sc_send_rec).
 *
 * A copy into a fresh zmq_msg_init_size message costs more than the copy:
 * glibc serves a buffer of a few MiB with a new mapping, each of its pages
 * faults in on first touch and is unmapped when ZeroMQ lets the message go.
 * Here the copy lands in a buffer of the producer's pool, the message
 * borrows it (zmq_msg_init_data), and ZeroMQ's free callback, which runs on
 * its I/O thread once the bytes are on the socket, puts it back; the next
 * send copies into the same warm pages.
 *
 * Ownership: the producer holds one reference to its pool and every buffer
 * out in a message holds one more, so a pool outlives a producer closed
 * while ZeroMQ still holds its messages; once the producer let go, buffers
 * coming back are freed.  The lock guards the idle list only. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

/* Buffers come back as soon as ZeroMQ has written them, so few are out at
 * once; idle ones are kept up to this count and these bytes (at least two,
 * whatever their size, so that a steady stream of large buffers reuses). */
#define SC_BUFPOOL_IDLE_MAX 32
#define SC_BUFPOOL_IDLE_BYTES ((size_t)64 << 20)

typedef struct sc_buf {
  sc_bufpool *pool;
  struct sc_buf *next;               /* idle list */
  size_t cap;
  /* the data follows, at SC_BUF_HEAD */
} sc_buf;

/* Data starts on a cache line. */
#define SC_BUF_HEAD ((sizeof(sc_buf) + 63) & ~(size_t)63)

struct sc_bufpool {
  pthread_mutex_t lock;              /* guards idle, nidle, idle_bytes, open */
  sc_buf *idle;                      /* most recently returned first */
  unsigned nidle;
  size_t idle_bytes;
  bool open;                         /* the producer still holds it */
  atomic_uint refs;
};

int sc_bufpool_new(sc_bufpool **out) {
  sc_bufpool *bp = calloc(1, sizeof *bp);
  if (bp == NULL)
    return B2S_E_NOMEM;
  pthread_mutex_init(&bp->lock, NULL);
  bp->open = true;
  atomic_init(&bp->refs, 1);
  *out = bp;
  return 0;
}

static void free_list(sc_buf *b) {
  while (b) {
    sc_buf *next = b->next;
    free(b);
    b = next;
  }
}

static void pool_unref(sc_bufpool *bp) {
  /* acq_rel: the last one out sees every other holder's updates before it
   * frees; pairs with itself and the fetch_add in sc_bufpool_msg */
  if (atomic_fetch_sub_explicit(&bp->refs, 1, memory_order_acq_rel) != 1)
    return;
  free_list(bp->idle);
  pthread_mutex_destroy(&bp->lock);
  free(bp);
}

void sc_bufpool_release(sc_bufpool *bp) {
  if (bp == NULL)
    return;
  pthread_mutex_lock(&bp->lock);
  sc_buf *idle = bp->idle;
  bp->idle = NULL;
  bp->nidle = 0;
  bp->idle_bytes = 0;
  bp->open = false;
  pthread_mutex_unlock(&bp->lock);
  free_list(idle);
  pool_unref(bp);
}

/* ZeroMQ's free callback (its I/O thread, or the sender's when the message
 * was not sent): back to the idle list, or freed. */
static void buf_done(void *data, void *hint) {
  (void)data;
  sc_buf *b = hint;
  sc_bufpool *bp = b->pool;
  pthread_mutex_lock(&bp->lock);
  bool keep = bp->open && bp->nidle < SC_BUFPOOL_IDLE_MAX &&
              (bp->nidle < 2 || bp->idle_bytes + b->cap <= SC_BUFPOOL_IDLE_BYTES);
  if (keep) {
    b->next = bp->idle;
    bp->idle = b;
    bp->nidle++;
    bp->idle_bytes += b->cap;
  }
  pthread_mutex_unlock(&bp->lock);
  if (!keep)
    free(b);
  pool_unref(bp);
}

/* The newest idle buffer of at least len bytes, else a new one. */
static sc_buf *buf_get(sc_bufpool *bp, size_t len) {
  pthread_mutex_lock(&bp->lock);
  sc_buf **pp = &bp->idle;
  while (*pp && (*pp)->cap < len)
    pp = &(*pp)->next;
  sc_buf *b = *pp;
  if (b) {
    *pp = b->next;
    bp->nidle--;
    bp->idle_bytes -= b->cap;
  }
  pthread_mutex_unlock(&bp->lock);
  if (b == NULL) {
    void *mem;
    if (posix_memalign(&mem, 64, SC_BUF_HEAD + len) != 0)
      return NULL;
    b = mem;
    b->cap = len;
  }
  b->pool = bp;
  b->next = NULL;
  return b;
}

int sc_bufpool_msg(sc_bufpool *bp, const void *src, size_t len,
                   zmq_msg_t *msg) {
  sc_buf *b = buf_get(bp, len);
  if (b == NULL)
    return B2S_E_NOMEM;
  uint8_t *data = (uint8_t *)b + SC_BUF_HEAD;
  memcpy(data, src, len);
  /* relaxed: the caller's reference keeps the pool alive meanwhile; pairs
   * with the acq_rel fetch_sub in pool_unref */
  atomic_fetch_add_explicit(&bp->refs, 1, memory_order_relaxed);
  if (zmq_msg_init_data(msg, data, len, buf_done, b) < 0) {
    buf_done(data, b);
    return B2S_E_NOMEM;
  }
  return 0;
}

/* The writer's input (handoff.h): the reorder buffer and the flush level,
 * under the stream's lock. */
#include "handoff.h"

#include "chunkpool.h"

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

void b2sd_stream_put(b2sd_stream *st, b2sd_chunk *c) {
  pthread_mutex_lock(&st->lock);
  b2sd_chunk **pp = &st->ready;
  while (*pp && (*pp)->seq < c->seq)
    pp = &(*pp)->next;
  c->next = *pp;
  *pp = c;
  st->arrived++;
  pthread_cond_signal(&st->cond);
  pthread_mutex_unlock(&st->lock);
}

void b2sd_stream_flush(b2sd_stream *st, uint64_t upto) {
  pthread_mutex_lock(&st->lock);
  if (upto > st->flush_upto)
    st->flush_upto = upto;
  pthread_cond_signal(&st->cond);
  pthread_mutex_unlock(&st->lock);
}

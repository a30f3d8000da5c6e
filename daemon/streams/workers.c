/* Worker pool: a fixed set of threads taking jobs from one FIFO and
 * compressing them.
 *
 * The FIFO is shared by all streams, so a stream's jobs leave it in
 * sequence order; it is bounded by the I/O thread, which queues at most a
 * stream's queue_depth jobs per stream.  taken_seq (progress.h) records
 * how far each stream got (the I/O thread returns `block` credits from
 * it).  Each worker owns one
 * b2s_ctx for its lifetime and compresses straight into a chunk buffer of
 * the server's pool (chunkpool.c) that it hands to the writer.
 *
 * A buffer of a b2nd stream holds the chunk's items in C order
 * (PROTOCOL.md 3.5); where the stream's blocks are not runs of that order
 * the worker compresses it with b2s_compress_blocks, which gathers one
 * band of blocks at a time into the context (at most one chunk, kept for
 * the worker's lifetime like its scratch) as it compresses them.  Every way a buffer comes
 * in (ZeroMQ, shared memory, any client) passes here, so the reorder is
 * done once for all, and a shared-memory slot stays the producer's plain
 * C-ordered image, read once as before. */
#define _GNU_SOURCE
#include "chunkpool.h"
#include "progress.h"
#include "segment.h"
#include "handoff.h"
#include "streamobj.h"
#include "workers.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct b2sd_pool {
  b2sd_server *srv;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  b2sd_job *head, *tail;
  size_t queued;
  bool stop;
  int nthreads;
  pthread_t *threads;
};

void b2sd_job_free(b2sd_server *srv, b2sd_job *job) {
  if (!job)
    return;
  b2sd_rec_clear(&job->rec);
  if (job->is_shm) {
    b2sd_seg_give_back(job->seg, job->slot);
    b2sd_seg_unref(job->seg);
  } else {
    zmq_msg_close(&job->msg);
    /* relaxed: a counter for the memory bound; pairs with the fetch_add
     * in the I/O thread's accept path */
    atomic_fetch_sub_explicit(&srv->inflight_bytes, (int64_t)job->len,
                              memory_order_relaxed);
  }
  free(job);
}

/* Whether taking j should wake the I/O thread.  Under `block` it returns
 * credits as jobs are taken; waking it for every take costs a wakeup of
 * the I/O thread and an ACK per buffer, so credits go back in batches of a
 * quarter of the queue (the producer keeps three quarters in flight), and
 * at once when the stream's queue ran dry, as no later take would. */
static bool take_wakes(const b2sd_job *j) {
  if (j->st->nqueued == 0)
    return true;
  return j->credit_batch && (j->seq + 1) % j->credit_batch == 0;
}

static b2sd_job *pool_take(b2sd_pool *p, bool *wake) {
  pthread_mutex_lock(&p->lock);
  while (!p->head && !p->stop)
    pthread_cond_wait(&p->cond, &p->lock);
  b2sd_job *j = p->head;
  if (j) {
    p->head = j->next;
    if (p->head)
      p->head->prev = NULL;
    else
      p->tail = NULL;
    p->queued--;
    j->st->nqueued--;
    b2sd_progress_taken(j->st, j->seq + 1);  /* seqs leave in order */
    *wake = take_wakes(j);
  }
  pthread_mutex_unlock(&p->lock);
  return j;
}

/* A detector image: its framing rewritten into a chunk (b2s_h5lz4.h). */
static int convert_job(b2s_ctx *ctx, b2sd_job *j, b2sd_chunk *c, size_t need) {
  b2s_h5_result res;
  int rc = b2s_h5_to_chunk(ctx, &j->h5p, j->data, j->len, j->h5_nbytes,
                           c->data, need, &res);
  if (rc > 0) {
    /* relaxed: statistics counters */
    atomic_fetch_add_explicit(&j->st->st_h5_path[res.path], 1,
                              memory_order_relaxed);
    b2s_chunk_info ci;
    if (b2s_chunk_info_get(c->data, (size_t)rc, &ci) < 0)
      return B2S_E_DECODE;
    c->nbytes = ci.nbytes;
  } else {
    atomic_fetch_add_explicit(&j->st->st_h5_failed, 1, memory_order_relaxed);
  }
  return rc;
}

/* Whether j's items are gathered into block order as they are compressed. */
static bool gathers(const b2sd_job *j) {
  const b2s_blockorder *o = &j->st->blocks;
  return !j->h5 && o->gather && (int64_t)j->len == o->nbytes;
}

/* Compress job j into a new chunk; a tombstone carrying the error when
 * that fails.  Never NULL. */
static b2sd_chunk *compress_job(b2sd_pool *p, b2s_ctx *ctx, b2sd_job *j) {
  size_t need = j->len + B2S_MAX_OVERHEAD;
  if (j->h5) {
    int64_t bound = b2s_h5_chunk_bound(&j->h5p, j->data, j->len);
    need = bound > 0 ? (size_t)bound : 0;
  }
  b2sd_chunk *c = ctx && need ? b2sd_chunkpool_get(p->srv->chunks, need) : NULL;
  int rc = c ? 0 : need ? B2S_E_NOMEM : B2S_E_DECODE;
  if (c) {
    /* relaxed: the memory bound; pairs with the fetch_sub in
     * b2sd_chunk_done.  Counted before the job's bytes leave, so the
     * total never dips below what is held. */
    atomic_fetch_add_explicit(&p->srv->inflight_bytes, (int64_t)c->cap,
                              memory_order_relaxed);
    if (j->h5)
      rc = need ? convert_job(ctx, j, c, need) : B2S_E_DECODE;
    else if (gathers(j))
      rc = b2s_compress_blocks(ctx, &j->cparams, &j->st->blocks, j->data,
                               (int32_t)j->len, c->data, (int32_t)need);
    else
      rc = b2s_compress(ctx, &j->cparams, j->data, (int32_t)j->len, c->data,
                        (int32_t)need);
    if (rc > 0) {
      /* the record's checksum, here while the chunk is in this core's
       * cache and the workers run in parallel; the writer is one thread
       * for the stream and would read it back cold */
      c->xxh64 = b2s_chunk_xxh64(c->data, (size_t)rc);
      c->cbytes = rc;
      if (!j->h5)
        c->nbytes = (int32_t)j->len;
      c->err = 0;
      return c;
    }
    b2sd_chunk_done(p->srv, c);
  }
  c = calloc(1, sizeof *c);
  if (!c)
    abort();             /* cannot even report: nothing sane left */
  c->err = rc < 0 ? rc : B2S_E_COMPRESS;
  LOG_E("stream %s: compressing buffer %llu failed: %s", j->st->name,
        (unsigned long long)j->seq, b2s_strerror(c->err));
  return c;
}

/* Compression is throughput work: as SCHED_BATCH a worker woken up (a job
 * queued, memory freed) does not preempt the thread that woke it.  That
 * thread is a stream's writer or the I/O loop, each serial for all the
 * workers behind it; with as many workers as cores, half of the writer's
 * context switches were preemptions right after a wakeup it made.  Only a hint: an error changes
 * nothing. */
static void worker_batch(void) {
  struct sched_param sp = {0};
  sched_setscheduler(0, SCHED_BATCH, &sp);   /* 0: this thread (Linux) */
}

static void *worker_main(void *arg) {
  b2sd_pool *p = arg;
  worker_batch();
  b2s_ctx *ctx = b2s_ctx_new();
  b2sd_job *j;
  bool wake = false;
  while ((j = pool_take(p, &wake))) {
    if (wake)
      b2sd_wake(p->srv);       /* credits come back */
    b2sd_stream *st = j->st;
    b2sd_chunk *c = compress_job(p, ctx, j);
    c->seq = j->seq;
    c->rec = j->rec;           /* the record goes with the chunk */
    j->rec = (b2sd_rec){0};
    if (c->cbytes == 0 && j->fill_gaps) {   /* its place stays, empty */
      c->gap = B2S_RECORD_GAP | B2S_RECORD_REJECTED;
      c->nbytes = j->h5 ? j->h5_chunk_nbytes : (int32_t)j->len;
    }
    b2sd_job_free(p->srv, j);  /* the slot or message goes back first */
    b2sd_stream_put(st, c);
  }
  b2s_ctx_free(ctx);
  return NULL;
}

int b2sd_pool_new(b2sd_server *srv, int nworkers, b2sd_pool **out) {
  b2sd_pool *p = calloc(1, sizeof *p);
  if (!p)
    return B2S_E_NOMEM;
  p->srv = srv;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  p->threads = calloc((size_t)nworkers, sizeof *p->threads);
  if (!p->threads) {
    free(p);
    return B2S_E_NOMEM;
  }
  for (int i = 0; i < nworkers; i++) {
    int rc = pthread_create(&p->threads[i], NULL, worker_main, p);
    if (rc) {
      b2sd_pool_free(p);
      return -rc;
    }
    char name[24];                 /* pthread names hold 15 bytes */
    snprintf(name, sizeof name, "b2s-work-%d", i & 0xffff);
    name[15] = '\0';
    pthread_setname_np(p->threads[i], name);
    p->nthreads++;
  }
  *out = p;
  return 0;
}

void b2sd_pool_free(b2sd_pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  p->stop = true;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  for (int i = 0; i < p->nthreads; i++)
    pthread_join(p->threads[i], NULL);
  free(p->threads);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->cond);
  free(p);
}

void b2sd_pool_push(b2sd_pool *p, b2sd_job **job) {
  b2sd_job *j = *job;
  *job = NULL;
  j->next = NULL;
  pthread_mutex_lock(&p->lock);
  j->prev = p->tail;
  if (p->tail)
    p->tail->next = j;
  else
    p->head = j;
  p->tail = j;
  p->queued++;
  j->st->nqueued++;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
}

b2sd_job *b2sd_pool_steal_oldest(b2sd_pool *p, b2sd_stream *st) {
  pthread_mutex_lock(&p->lock);
  b2sd_job *j = p->head;
  while (j && j->st != st)
    j = j->next;
  if (j) {
    if (j->prev)
      j->prev->next = j->next;
    else
      p->head = j->next;
    if (j->next)
      j->next->prev = j->prev;
    else
      p->tail = j->prev;
    p->queued--;
    st->nqueued--;
  }
  pthread_mutex_unlock(&p->lock);
  return j;
}

size_t b2sd_pool_queued(b2sd_pool *p) {
  pthread_mutex_lock(&p->lock);
  size_t n = p->queued;
  pthread_mutex_unlock(&p->lock);
  return n;
}

size_t b2sd_pool_stream_queued(b2sd_pool *p, b2sd_stream *st) {
  pthread_mutex_lock(&p->lock);
  size_t n = st->nqueued;
  pthread_mutex_unlock(&p->lock);
  return n;
}

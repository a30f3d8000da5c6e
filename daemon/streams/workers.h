/* The worker pool (workers.c): the "b2s-work-N" threads and their job
 * FIFO.  The server owns the pool (b2sd_server.pool); the I/O thread
 * pushes jobs, the workers hand chunks to the streams' writers. */
#ifndef B2SD_WORKERS_H
#define B2SD_WORKERS_H

#include "b2sd.h"

typedef struct b2sd_pool b2sd_pool;

/* Start nworkers workers.  The FIFO has no bound of its own: the I/O
 * thread queues at most a stream's queue_depth jobs per stream. */
int b2sd_pool_new(b2sd_server *srv, int nworkers, b2sd_pool **out);
/* Stop once the queue is empty, join the workers, free.  Accepts NULL. */
void b2sd_pool_free(b2sd_pool *pool);
/* Queue a job (ownership moves to the pool, *job is cleared).  Never
 * blocks: the caller has checked the bounds. */
void b2sd_pool_push(b2sd_pool *pool, b2sd_job **job);
/* Remove the oldest job of stream st not yet taken by a worker; NULL when
 * there is none.  The caller owns and frees the job (b2sd_job_free). */
b2sd_job *b2sd_pool_steal_oldest(b2sd_pool *pool, b2sd_stream *st);
/* Jobs queued and not yet taken, all streams. */
size_t b2sd_pool_queued(b2sd_pool *pool);
size_t b2sd_pool_stream_queued(b2sd_pool *pool, b2sd_stream *st);
void b2sd_job_free(b2sd_server *srv, b2sd_job *job);

#endif

/* Closing a stream for good inside the running daemon (retire.h). */
#include "retire.h"

#include <stdlib.h>

#include "log.h"
#include "outbox.h"
#include "progress.h"
#include "session.h"
#include "readers.h"
#include "handoff.h"
#include "stream.h"
#include "follow.h"
#include "ingest.h"

void b2sd_stream_retire(b2sd_stream *st) {
  if (b2sd_life_retiring(st->life) || st->dist)
    return;
  b2sd_life_move(&st->life, B2SD_LIFE_RETIRING, st->name);
  /* a producer on a detector's stream is unusual; it ends here, so the
   * stream takes nothing after the series' last image */
  while (st->handles)
    b2sd_handle_close_ref(st->srv, st->handles, 0, B2S_E_CLOSED,
                          B2S_WIRE_OPEN, 0);
}

/* Whether every seq given came back from the workers (b2sd_stream_put):
 * a failed frame stores nothing more, so its written level stays behind,
 * but the workers may still hold chunks of it. */
static bool all_arrived(b2sd_stream *st) {
  pthread_mutex_lock(&st->lock);
  bool all = st->arrived == st->seq_next;
  pthread_mutex_unlock(&st->lock);
  return all;
}

/* Step 2: the writer stops once it holds every seq given (written, or
 * for a failed frame arrived, and given back); true once it exited (the
 * frame is closed, or left as it was at a failure). */
static bool writer_done(b2sd_stream *st) {
  if (st->life == B2SD_LIFE_CLOSED)
    return true;
  b2sd_progress p;
  b2sd_progress_load(st, &p);
  bool held = p.failed ? all_arrived(st) : p.written >= st->seq_next;
  if (!st->thread_started) {     /* no writer: only the workers' chunks */
    bool done = !p.failed || held;
    if (done)
      b2sd_life_move(&st->life, B2SD_LIFE_CLOSED, st->name);
    return done;
  }
  if (!held)
    return false;                /* workers or the writer still hold some */
  pthread_mutex_lock(&st->lock);
  if (!st->stop) {
    st->stop = true;
    pthread_cond_signal(&st->cond);
  }
  pthread_mutex_unlock(&st->lock);
  if (st->life == B2SD_LIFE_RETIRING)
    b2sd_life_move(&st->life, B2SD_LIFE_STOPPING, st->name);
  /* acquire: pairs with the writer's release store after the close */
  if (!atomic_load_explicit(&st->writer_exited, memory_order_acquire))
    return false;
  b2sd_life_move(&st->life, B2SD_LIFE_CLOSED, st->name);
  return true;
}

/* Step 3: follows that have every chunk end; those of dead sessions go
 * quietly. */
static void follows_end(b2sd_server *srv, b2sd_stream *st) {
  uint64_t committed = (uint64_t)b2sd_progress_committed(st);
  for (b2sd_follow *f = st->follows, *nx; f; f = nx) {
    nx = f->next_st;
    if (f->sess->dead) {
      b2sd_follow_remove(f);
      continue;
    }
    if (f->next < committed)
      continue;                  /* the follow scan still delivers */
    b2sd_send_error(srv, f->sess, &(b2sd_errreply){
        .code = B2S_E_CLOSED, .flags = B2S_WIRE_ERROR_CLOSED_REF,
        .ref_type = B2S_WIRE_FOLLOW, .ref_id = f->id, .ref_index = f->next,
        .text = "the stream was closed: its series ended"});
    b2sd_follow_remove(f);
  }
}

/* Step 4: out of the list, freed, no longer counted. */
static void stream_drop(b2sd_server *srv, b2sd_stream *st) {
  for (b2sd_stream **pp = &srv->streams; *pp; pp = &(*pp)->next)
    if (*pp == st) {
      *pp = st->next;
      break;
    }
  srv->nstreams--;
  if (srv->streams_made > 0)
    srv->streams_made--;
  LOG_I("stream %s: closed for good (%lld chunks in %s)", st->name,
        (long long)b2sd_progress_committed(st), st->path);
  b2sd_stream_free(st);          /* the writer exited: the join is at once */
  b2sd_readers_forget(srv->readers);
}

void b2sd_retire_turn(b2sd_server *srv) {
  if (srv->draining)
    return;
  for (b2sd_stream *st = srv->streams, *nx; st; st = nx) {
    nx = st->next;
    if (!b2sd_life_retiring(st->life) || !writer_done(st))
      continue;
    follows_end(srv, st);
    if (!st->follows && st->nreads == 0)
      stream_drop(srv, st);
  }
}

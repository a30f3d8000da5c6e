/* Reader threads: the chunks READ asks for and push follows deliver.
 *
 * Reading a chunk (pread) and decompressing it can take milliseconds for
 * large chunks, so the I/O thread never does it: it would stall every
 * producer's ACKs.  Instead the I/O thread issues a b2sd_read (stream,
 * committed chunk index, compressed or not) to a small pool of reader
 * threads through one FIFO; a reader fills in the result and puts it on
 * the done list, then wakes the I/O thread (b2sd_wake), which alone sends
 * on ZeroMQ.
 *
 * Frames: each reader thread keeps its own b2s_frame handle per stream
 * (a handle is single-threaded) and reopens it when it asks for a chunk
 * the handle does not know yet.  Only committed chunks are ever asked
 * for (the I/O thread checked the index against the committed count it
 * loaded with acquire), so the reopened frame holds them.  Streams are
 * never freed while the readers run (b2sd_readers_free comes first).
 *
 * Bounds: at most B2SD_READS_MAX reads in flight in the daemon,
 * B2SD_READS_SESSION per session and B2SD_READS_FOLLOW per push follow; a
 * read counts from its issue until its result was sent or discarded.
 * READs beyond the bounds wait in their session (at most B2SD_READS_WAIT,
 * then B2S_E_BUSY); push follows simply issue more when a read came back.
 *
 * Endings: a read names its session and follow by id, not by pointer.
 * When its result comes back and the session or follow no longer exists,
 * the result is discarded; nothing ever points at a freed session. */
#define _GNU_SOURCE
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct b2sd_readers {
  b2sd_server *srv;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  b2sd_read *todo, *todo_tail;   /* under lock */
  b2sd_read *done;               /* under lock, newest first */
  bool stop;                     /* under lock */
  int inflight;                  /* I/O thread only: issued, not released */
  int parked;                    /* I/O thread only: READs waiting or held
                                  * in sessions */
  int nthreads;
  pthread_t *threads;
};

/* One reader thread's frame handles. */
typedef struct rframe {
  b2sd_stream *st;
  b2s_frame *fr;
} rframe;

typedef struct rstate {
  rframe *frames;
  size_t nframes;
} rstate;

/* FIFO lists of reads: a head and a tail pointer. */
static void list_append(b2sd_read **head, b2sd_read **tail, b2sd_read *r) {
  r->next = NULL;
  if (*tail)
    (*tail)->next = r;
  else
    *head = r;
  *tail = r;
}

static b2sd_read *list_pop(b2sd_read **head, b2sd_read **tail) {
  b2sd_read *r = *head;
  if (r) {
    *head = r->next;
    if (!*head)
      *tail = NULL;
    r->next = NULL;
  }
  return r;
}

/* ---- reader threads ---------------------------------------------------------- */

/* This thread's handle of st, knowing at least `want` chunks. */
static int frame_for(rstate *t, b2sd_stream *st, int64_t want,
                     b2s_frame **out) {
  rframe *rf = NULL;
  for (size_t i = 0; i < t->nframes && !rf; i++)
    if (t->frames[i].st == st)
      rf = &t->frames[i];
  if (!rf) {
    rframe *n = realloc(t->frames, (t->nframes + 1) * sizeof *n);
    if (!n)
      return B2S_E_NOMEM;
    t->frames = n;
    rf = &t->frames[t->nframes++];
    *rf = (rframe){.st = st};
  }
  if (!rf->fr || b2s_frame_nchunks(rf->fr) < want) {
    b2s_frame_free(rf->fr);
    rf->fr = NULL;
    b2s_frame_error err = {0};
    int rc = b2s_frame_open(st->path, &rf->fr, &err);
    if (rc < 0)
      return rc;
  }
  *out = rf->fr;
  return 0;
}

/* Fill in r's result: the chunk as stored, or decompressed. */
static void read_chunk(rstate *t, b2sd_read *r) {
  b2s_frame *fr;
  int64_t i = (int64_t)r->index;
  int rc = frame_for(t, r->st, i + 1, &fr);
  if (rc == 0 && i >= b2s_frame_nchunks(fr))
    rc = B2S_E_NCHUNK;
  if (rc == 0)
    rc = b2s_frame_chunk_sizes(fr, i, &r->cbytes, &r->nbytes);
  size_t cap = (size_t)(r->decompress ? r->nbytes : r->cbytes);
  if (rc == 0 && !(r->buf = malloc(cap ? cap : 1)))
    rc = B2S_E_NOMEM;
  if (rc == 0)
    rc = r->decompress ? b2s_frame_chunk_decompress(fr, i, NULL, r->buf, cap)
                       : b2s_frame_chunk_read(fr, i, r->buf, cap);
  if (rc < 0) {
    free(r->buf);
    r->buf = NULL;
  }
  r->rc = rc;
}

static void *reader_main(void *arg) {
  b2sd_readers *rd = arg;
  rstate t = {0};
  pthread_mutex_lock(&rd->lock);
  for (;;) {
    while (!rd->todo && !rd->stop)
      pthread_cond_wait(&rd->cond, &rd->lock);
    b2sd_read *r = list_pop(&rd->todo, &rd->todo_tail);
    if (!r)
      break;                     /* stop, and nothing left to read */
    pthread_mutex_unlock(&rd->lock);
    read_chunk(&t, r);
    pthread_mutex_lock(&rd->lock);
    r->next = rd->done;
    rd->done = r;
    b2sd_wake(rd->srv);
  }
  pthread_mutex_unlock(&rd->lock);
  for (size_t i = 0; i < t.nframes; i++)
    b2s_frame_free(t.frames[i].fr);
  free(t.frames);
  return NULL;
}

int b2sd_readers_new(b2sd_server *srv, int nthreads, b2sd_readers **out) {
  b2sd_readers *rd = calloc(1, sizeof *rd);
  if (!rd)
    return B2S_E_NOMEM;
  rd->srv = srv;
  pthread_mutex_init(&rd->lock, NULL);
  pthread_cond_init(&rd->cond, NULL);
  rd->threads = calloc((size_t)nthreads, sizeof *rd->threads);
  if (!rd->threads) {
    b2sd_readers_free(rd);
    return B2S_E_NOMEM;
  }
  for (int i = 0; i < nthreads; i++) {
    int rc = pthread_create(&rd->threads[i], NULL, reader_main, rd);
    if (rc) {
      b2sd_readers_free(rd);
      return -rc;
    }
    char name[16];
    snprintf(name, sizeof name, "b2s-read-%d", i % 100);
    pthread_setname_np(rd->threads[i], name);
    rd->nthreads++;
  }
  *out = rd;
  return 0;
}

static void read_free(b2sd_read *r) {
  free(r->buf);
  free(r);
}

void b2sd_readers_free(b2sd_readers *rd) {
  if (!rd)
    return;
  pthread_mutex_lock(&rd->lock);
  rd->stop = true;
  pthread_cond_broadcast(&rd->cond);
  pthread_mutex_unlock(&rd->lock);
  for (int i = 0; i < rd->nthreads; i++)
    pthread_join(rd->threads[i], NULL);
  while (rd->done) {             /* results nobody will collect */
    b2sd_read *r = rd->done;
    rd->done = r->next;
    read_free(r);
  }
  free(rd->threads);
  pthread_mutex_destroy(&rd->lock);
  pthread_cond_destroy(&rd->cond);
  free(rd);
}

/* ---- the I/O thread's side --------------------------------------------------- */

bool b2sd_reads_room(b2sd_server *srv, const b2sd_session *s) {
  return srv->readers && srv->readers->inflight < B2SD_READS_MAX &&
         s->nreads < B2SD_READS_SESSION;
}

void b2sd_reads_issue(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  b2sd_readers *rd = srv->readers;
  rd->inflight++;
  s->nreads++;
  pthread_mutex_lock(&rd->lock);
  list_append(&rd->todo, &rd->todo_tail, r);
  pthread_cond_signal(&rd->cond);
  pthread_mutex_unlock(&rd->lock);
}

void b2sd_read_release(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  if (srv->readers)
    srv->readers->inflight--;
  if (s)
    s->nreads--;
  read_free(r);
}

static void free_payload(void *data, void *hint) {
  (void)hint;
  free(data);
}

int b2sd_reads_request(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  if (s->nwait >= B2SD_READS_WAIT || !srv->readers)
    return B2S_E_BUSY;
  list_append(&s->rd_wait, &s->rd_wait_tail, r);
  s->nwait++;
  srv->readers->parked++;
  return 0;
}

int b2sd_send_chunk(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_CHUNK);
  m.tag = r->tag;
  m.flags = (r->push ? B2S_WIRE_CHUNK_PUSHED : 0) |
            (r->decompress ? B2S_WIRE_CHUNK_DECOMPRESSED : 0);
  m.chunk.index = r->index;
  m.chunk.follow_id = r->follow_id;
  m.chunk.nbytes = (uint32_t)r->nbytes;
  m.chunk.cbytes = (uint32_t)r->cbytes;
  int rc = b2sd_send_head(srv, s, &m, true);
  if (rc < 0)
    return rc;
  void *sock = srv->sockets[s->sock];
  zmq_msg_t pm;
  size_t len = (size_t)r->rc;
  if (zmq_msg_init_data(&pm, r->buf, len, free_payload, NULL) == 0) {
    r->buf = NULL;               /* ZeroMQ frees it once sent */
    if (zmq_msg_send(&pm, sock, 0) < 0)
      zmq_msg_close(&pm);
  } else {
    zmq_send(sock, r->buf, len, 0);
  }
  return 0;
}

static b2sd_session *session_by_id(b2sd_server *srv, uint32_t id) {
  for (b2sd_session *s = srv->sessions; s; s = s->next)
    if (s->id == id)
      return s;
  return NULL;
}

/* Answer a READ; false when the peer's queue is full (r stays ours). */
static bool read_reply(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  if (r->rc < 0) {
    b2sd_send_error(srv, s, r->tag, r->rc, 0, B2S_WIRE_READ, r->follow_id,
                    r->index, NULL);
    return true;
  }
  return b2sd_send_chunk(srv, s, r) != -EAGAIN;
}

/* Send the held READ replies of s in order; false when held again. */
static bool out_flush(b2sd_server *srv, b2sd_session *s) {
  b2sd_read *r;
  while ((r = list_pop(&s->rd_out, &s->rd_out_tail))) {
    if (!read_reply(srv, s, r)) {
      r->next = s->rd_out;       /* back at the head */
      s->rd_out = r;
      if (!s->rd_out_tail)
        s->rd_out_tail = r;
      return false;
    }
    srv->readers->parked--;
    b2sd_read_release(srv, s, r);
  }
  return true;
}

/* Issue waiting READs, one per session per round, while the bounds let. */
static void issue_waiting(b2sd_server *srv) {
  b2sd_readers *rd = srv->readers;
  bool progress = true;
  while (progress && rd->inflight < B2SD_READS_MAX) {
    progress = false;
    for (b2sd_session *s = srv->sessions; s; s = s->next) {
      if (!s->rd_wait || !b2sd_reads_room(srv, s))
        continue;
      b2sd_read *r = list_pop(&s->rd_wait, &s->rd_wait_tail);
      s->nwait--;
      rd->parked--;
      b2sd_reads_issue(srv, s, r);
      progress = true;
    }
  }
}

/* The reads that came back, in completion order. */
static b2sd_read *take_done(b2sd_readers *rd) {
  pthread_mutex_lock(&rd->lock);
  b2sd_read *r = rd->done;
  rd->done = NULL;
  pthread_mutex_unlock(&rd->lock);
  b2sd_read *rev = NULL;
  while (r) {
    b2sd_read *nx = r->next;
    r->next = rev;
    rev = r;
    r = nx;
  }
  return rev;
}

bool b2sd_reads_turn(b2sd_server *srv) {
  b2sd_readers *rd = srv->readers;
  if (!rd)
    return false;
  b2sd_read *done = take_done(rd);
  if (!done && rd->parked == 0)
    return false;
  while (done) {
    b2sd_read *r = done;
    done = r->next;
    r->next = NULL;
    b2sd_session *s = session_by_id(srv, r->session_id);
    b2sd_follow *f = s && r->push ? b2sd_follow_find(s, r->follow_id) : NULL;
    if (!s || (r->push && !f)) {
      b2sd_read_release(srv, s, r);     /* its asker is gone */
    } else if (r->push) {
      b2sd_follow_pushed(f, r);
    } else {
      list_append(&s->rd_out, &s->rd_out_tail, r);
      rd->parked++;
    }
  }
  bool held = false;
  for (b2sd_session *s = srv->sessions; s; s = s->next)
    if (s->rd_out && !out_flush(srv, s))
      held = true;
  issue_waiting(srv);
  return held;
}

void b2sd_reads_session_end(b2sd_server *srv, b2sd_session *s) {
  b2sd_read *r;
  while ((r = list_pop(&s->rd_wait, &s->rd_wait_tail))) {
    s->nwait--;
    if (srv->readers)
      srv->readers->parked--;
    free(r);                     /* never issued: not in flight */
  }
  while ((r = list_pop(&s->rd_out, &s->rd_out_tail))) {
    if (srv->readers)
      srv->readers->parked--;
    b2sd_read_release(srv, s, r);
  }
}

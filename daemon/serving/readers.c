/* Reads of committed chunks: the reader threads that read them for READ
 * and push follows, and the I/O thread's side that issues, admits (the
 * bounds and the decision: readbudget.c) and answers them.
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
 * Records (protocol version 2) come the same way from the stream's
 * records frame, reopened when it does not know the record asked for;
 * a records-only read (for a NOTIFY) needs no admission: its few KiB are
 * bounded by the read counts.
 *
 * A read goes to the readers twice.  First a reader only looks up the
 * chunk's sizes; back on the I/O thread the read is *admitted* once there
 * is room for its result bytes (below), which are allocated then; then a
 * reader fills them.  So no reader thread ever waits for memory, and the
 * I/O thread decides who gets it.
 *
 * Counts: at most B2SD_READS_SESSION reads issued per session and
 * B2SD_READS_FOLLOW per push follow, from issuing one until its result was
 * sent or discarded; at most B2SD_READS_MAX admitted in the daemon until
 * then.  READs beyond the session's count wait in their session (at most
 * B2SD_READS_WAIT, then B2S_E_BUSY); push follows simply issue more when
 * a read came back.
 *
 * Bytes: counts alone would let the daemon hold B2SD_READS_MAX chunks of
 * up to 2 GiB each, and ZeroMQ keeps a sent payload (never copied) until
 * the bytes went out, so a consumer that does not read would pile up in
 * the daemon every result sent to it.  So a result's bytes are counted
 * from its admission until the buffer is freed, by us or by ZeroMQ: at
 * most memory_limit / B2SD_READS_MEMORY_DIV in the daemon (on top of the
 * ingest buffers memory_limit bounds), and a B2SD_READS_SESSION_DIV-th of
 * that per session, so a consumer that stops reading holds only its share
 * and the others go on.  A read that does not fit waits (its READ takes
 * longer, it never fails for this).  One is always admitted when nothing
 * is held (in the daemon, in the session), so a chunk larger than the
 * budget still goes.  Within a session reads are admitted in issue order:
 * a push follow sends its results in index order, so a later chunk must
 * not take the bytes an earlier one waits for.  In the daemon the first
 * session whose read does not fit goes first once it does, so large reads
 * are not starved by small ones.  Every held byte is freed without any
 * further read (the results are sent, or the session or follow ends), so
 * waiting never deadlocks.  The counts live in objects of their own
 * (rbytes, and a b2sd_racct per session) because ZeroMQ may free a payload
 * after its session, or the readers, are gone (the sockets close last).
 *
 * Endings: a read names its session and follow by id, not by pointer.
 * When it comes back and the session or follow no longer exists, it is
 * discarded; nothing ever points at a freed session. */
#define _GNU_SOURCE
#include "outbox.h"
#include "recdeliver.h"
#include "readers.h"
#include "stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The daemon's result bytes: taken by the I/O thread (admission, budget),
 * given back by whoever frees a result (I/O thread, ZeroMQ's threads). */
typedef struct rbytes {
  pthread_mutex_t lock;
  int64_t held;                  /* bytes of the live result buffers */
  int64_t budget;
  int nbufs;                     /* live result buffers */
  b2sd_server *srv;              /* to wake when wake is set; NULL once the
                                  * readers are freed (the last buffer then
                                  * frees this) */
  bool wake;                     /* a read waits for bytes */
} rbytes;

/* One session's result bytes (under rbytes.lock); freed by the last of
 * the session and its buffers. */
typedef struct b2sd_racct {
  int64_t held;
  _Atomic int refs;
} b2sd_racct;

/* A result buffer: this header, then the payload (b2sd_read.buf). */
typedef struct rbuf {
  rbytes *acct;
  b2sd_racct *sacct;
  int64_t bytes;
  int64_t pad;                   /* the payload 16-byte aligned, as malloc's */
} rbuf;

struct b2sd_readers {
  b2sd_server *srv;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  b2sd_read *todo, *todo_tail;   /* under lock */
  b2sd_read *done;               /* under lock, newest first */
  bool stop;                     /* under lock */
  uint64_t forget;               /* under lock: bumped when a stream was
                                  * freed; each thread then drops its
                                  * frame handles */
  rbytes *bytes;
  /* I/O thread only */
  int64_t limit;                 /* memory_limit the budget was made of */
  int admitted;                  /* admitted, not released */
  int parked;                    /* READs waiting or held in sessions */
  int sized;                     /* reads awaiting admission in sessions */
  uint32_t first_sid;            /* session whose read did not fit: first
                                  * at the next admission */
  int nthreads;
  pthread_t *threads;
};

/* One reader thread's frame handles. */
typedef struct rframe {
  uint64_t uid;                  /* the stream's (b2sd_stream.uid) */
  b2s_frame *fr;
  b2sd_recsrc recs;
} rframe;

typedef struct rstate {
  rframe *frames;
  size_t nframes;
  uint64_t forget;               /* rd->forget when last dropped */
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

/* ---- result bytes ------------------------------------------------------------- */

static int64_t result_bytes(const b2sd_read *r) {
  return b2sd_read_result_bytes(r->decompress, r->nbytes, r->cbytes);
}

static void racct_unref(b2sd_racct *sa) {
  /* acq_rel: the last owner sees every other owner's updates before the
   * free; pairs with itself and the fetch_add in admit_bytes */
  if (sa && atomic_fetch_sub_explicit(&sa->refs, 1, memory_order_acq_rel) == 1)
    free(sa);
}

static void rbytes_destroy(rbytes *a) {
  pthread_mutex_destroy(&a->lock);
  free(a);
}

/* Free a payload of admit_bytes (NULL is fine); any thread. */
static void result_free(uint8_t *p) {
  if (!p)
    return;
  rbuf *h = (rbuf *)p - 1;
  rbytes *a = h->acct;
  b2sd_racct *sa = h->sacct;
  int64_t bytes = h->bytes;
  free(h);
  pthread_mutex_lock(&a->lock);
  a->held -= bytes;
  sa->held -= bytes;
  bool last = --a->nbufs == 0 && !a->srv;
  if (a->wake && a->srv) {     /* the I/O thread admits the next one */
    a->wake = false;
    b2sd_wake(a->srv);
  }
  pthread_mutex_unlock(&a->lock);
  racct_unref(sa);
  if (last)
    rbytes_destroy(a);
}

/* Reserve r's result bytes for session s and allocate them.  Returns 1
 * when r is admitted, 0 when the session (it has bytes already) or, with
 * *daemon_full, the daemon has no room for it now (wait), or a negative
 * error for r's reply. */
static int admit_bytes(rbytes *a, b2sd_session *s, b2sd_read *r,
                       bool *daemon_full) {
  if (!s->rd_acct) {
    s->rd_acct = calloc(1, sizeof *s->rd_acct);
    if (!s->rd_acct)
      return B2S_E_NOMEM;
    /* not shared yet: racct_unref and admit_bytes pair later */
    atomic_init(&s->rd_acct->refs, 1);
  }
  b2sd_racct *sa = s->rd_acct;
  int64_t bytes = result_bytes(r);
  pthread_mutex_lock(&a->lock);
  b2sd_admit d = b2sd_read_admit_bytes(a->budget, a->held, sa->held, bytes);
  if (d == B2SD_ADMIT) {
    a->held += bytes;
    sa->held += bytes;
    a->nbufs++;
  } else {
    a->wake = true;
  }
  pthread_mutex_unlock(&a->lock);
  *daemon_full = d == B2SD_ADMIT_WAIT_DAEMON;
  if (d != B2SD_ADMIT)
    return 0;
  /* relaxed: s holds a reference; pairs with the fetch_sub in racct_unref */
  atomic_fetch_add_explicit(&sa->refs, 1, memory_order_relaxed);
  rbuf *h = malloc(sizeof *h + (size_t)(bytes ? bytes : 1));
  if (h) {
    *h = (rbuf){.acct = a, .sacct = sa, .bytes = bytes};
    r->buf = (uint8_t *)(h + 1);
    return 1;
  }
  pthread_mutex_lock(&a->lock);   /* give the bytes back */
  a->held -= bytes;
  sa->held -= bytes;
  a->nbufs--;
  pthread_mutex_unlock(&a->lock);
  racct_unref(sa);
  return B2S_E_NOMEM;
}

/* ---- reader threads ---------------------------------------------------------- */

/* This thread's handles of st (NULL: out of memory). */
static rframe *rframe_of(rstate *t, b2sd_stream *st) {
  for (size_t i = 0; i < t->nframes; i++)
    if (t->frames[i].uid == st->uid)
      return &t->frames[i];
  rframe *n = realloc(t->frames, (t->nframes + 1) * sizeof *n);
  if (!n)
    return NULL;
  t->frames = n;
  rframe *rf = &t->frames[t->nframes++];
  *rf = (rframe){.uid = st->uid};
  return rf;
}

/* This thread's handle of st, knowing at least `want` chunks. */
static int frame_for(rstate *t, b2sd_stream *st, int64_t want,
                     b2s_frame **out) {
  rframe *rf = rframe_of(t, st);
  if (!rf)
    return B2S_E_NOMEM;
  if (!rf->fr || b2s_frame_nchunks(rf->fr) < want) {
    b2s_frame_free(rf->fr);
    rf->fr = NULL;
    /* b2s_frame_open reads again when a commit raced it (frame.c) */
    b2s_frame_error err = {0};
    int rc = b2s_frame_open(st->path, &rf->fr, &err);
    if (rc < 0)
      return rc;
  }
  *out = rf->fr;               /* read_chunk checks the chunk count */
  return 0;
}

/* The record frames r asks for (r->nrecs of them, or one with its chunk)
 * into r->rec. */
static int read_recs(rstate *t, b2sd_read *r) {
  rframe *rf = rframe_of(t, r->st);
  if (!rf)
    return B2S_E_NOMEM;
  return b2sd_recs_encode(&rf->recs, r->st->path, r->index,
                          r->nrecs ? r->nrecs : 1, &r->rec, &r->rec_len);
}

/* Not admitted yet: r's sizes (rc 0) or why it cannot be read.  Admitted:
 * its result into r->buf, the chunk as stored or decompressed, and its
 * record when asked.  A records-only read: the records alone. */
static void read_chunk(rstate *t, b2sd_read *r) {
  if (r->nrecs) {
    r->rc = read_recs(t, r);
    return;
  }
  b2s_frame *fr = NULL;
  int64_t i = (int64_t)r->index;
  int rc = frame_for(t, r->st, i + 1, &fr);
  if (rc == 0 && i >= b2s_frame_nchunks(fr))
    rc = B2S_E_NCHUNK;
  if (rc == 0 && !r->admitted)
    rc = b2s_frame_chunk_sizes(fr, i, &r->cbytes, &r->nbytes);
  if (rc == 0 && r->admitted) {
    size_t cap = (size_t)result_bytes(r);
    rc = r->decompress ? b2s_frame_chunk_decompress(fr, i, NULL, r->buf, cap)
                       : b2s_frame_chunk_read(fr, i, r->buf, cap);
    int rrc = rc >= 0 && r->record ? read_recs(t, r) : 0;
    if (rrc < 0)
      rc = rrc;
  }
  if (rc < 0 && r->buf) {
    result_free(r->buf);
    r->buf = NULL;
  }
  r->rc = rc;
}

/* Close this thread's frame handles (they open again when asked). */
static void frames_drop(rstate *t) {
  for (size_t i = 0; i < t->nframes; i++) {
    b2s_frame_free(t->frames[i].fr);
    b2sd_recsrc_close(&t->frames[i].recs);
  }
  t->nframes = 0;
}

static void *reader_main(void *arg) {
  b2sd_readers *rd = arg;
  rstate t = {0};
  pthread_mutex_lock(&rd->lock);
  for (;;) {
    while (!rd->todo && !rd->stop && t.forget == rd->forget)
      pthread_cond_wait(&rd->cond, &rd->lock);
    if (t.forget != rd->forget) {
      /* a stream was freed: its handles must not hold its files open;
       * streams end rarely, so dropping them all costs little */
      t.forget = rd->forget;
      pthread_mutex_unlock(&rd->lock);
      frames_drop(&t);
      pthread_mutex_lock(&rd->lock);
      continue;
    }
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
  frames_drop(&t);
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
  rd->bytes = calloc(1, sizeof *rd->bytes);
  if (rd->bytes) {
    pthread_mutex_init(&rd->bytes->lock, NULL);
    rd->bytes->srv = srv;
    rd->limit = srv->dcfg.memory_limit;
    rd->bytes->budget = b2sd_read_budget(rd->limit);
  }
  rd->threads = calloc((size_t)nthreads, sizeof *rd->threads);
  if (!rd->threads || !rd->bytes) {
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

void b2sd_readers_forget(b2sd_readers *rd) {
  if (!rd)
    return;
  pthread_mutex_lock(&rd->lock);
  rd->forget++;
  pthread_cond_broadcast(&rd->cond);
  pthread_mutex_unlock(&rd->lock);
}

static void read_free(b2sd_read *r) {
  r->st->nreads--;               /* it may be freed now (retire.h) */
  result_free(r->buf);
  free(r->rec);
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
  rbytes *a = rd->bytes;
  if (a) {                       /* buffers still out (with sessions,
                                  * follows or ZeroMQ) free it last */
    pthread_mutex_lock(&a->lock);
    a->srv = NULL;               /* the wakefd closes after us */
    bool last = a->nbufs == 0;
    pthread_mutex_unlock(&a->lock);
    if (last)
      rbytes_destroy(a);
  }
  free(rd->threads);
  pthread_mutex_destroy(&rd->lock);
  pthread_cond_destroy(&rd->cond);
  free(rd);
}

/* ---- the I/O thread's side --------------------------------------------------- */

bool b2sd_reads_headroom(b2sd_server *srv, const b2sd_session *s) {
  return srv->readers && b2sd_read_session_headroom(s->nreads);
}

static void todo_push(b2sd_readers *rd, b2sd_read *r) {
  pthread_mutex_lock(&rd->lock);
  list_append(&rd->todo, &rd->todo_tail, r);
  pthread_cond_signal(&rd->cond);
  pthread_mutex_unlock(&rd->lock);
}

void b2sd_reads_issue(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  s->nreads++;
  if (!r->nrecs)               /* records-only reads skip admission, so
                                * they take no place in its order */
    r->seq = s->rd_seq++;
  todo_push(srv->readers, r);
}

void b2sd_read_release(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  b2sd_readers *rd = srv->readers;
  bool room = false;
  if (rd && r->admitted) {
    rd->admitted--;
    room = rd->sized > 0;
  }
  if (s) {
    s->nreads--;
    room |= s->rd_wait != NULL;
  }
  read_free(r);
  if (room)                      /* admit or issue the next on our turn */
    b2sd_wake(srv);
}

/* ZeroMQ is done with a payload (sent, or its peer is gone). */
static void free_payload(void *data, void *hint) {
  (void)hint;
  result_free(data);
}

int b2sd_reads_request(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  if (!srv->readers)
    return B2S_E_BUSY;
  if (s->nwait >= B2SD_READS_WAIT) {
    if (!s->rd_refusing)         /* once per run of refusals */
      LOG_W("session %u: %d READs waiting already; refusing more (busy)",
            s->id, s->nwait);
    s->rd_refusing = true;
    return B2S_E_BUSY;
  }
  s->rd_refusing = false;
  list_append(&s->rd_wait, &s->rd_wait_tail, r);
  s->nwait++;
  srv->readers->parked++;
  return 0;
}

int b2sd_send_chunk(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  b2s_wire_msg m;
  b2sd_chunk_build(&m, &(b2sd_chunk_desc){
      .tag = r->tag, .follow_id = r->follow_id, .index = r->index,
      .nbytes = (uint32_t)r->nbytes, .cbytes = (uint32_t)r->cbytes,
      .push = r->push, .decompressed = r->decompress,
      .record = r->record});
  return b2sd_send_moved_tail(srv, s, &m, &r->buf, (size_t)r->rc,
                              free_payload, r->record ? r->rec : NULL,
                              r->rec_len);
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
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = r->tag, .code = r->rc, .ref_type = B2S_WIRE_READ,
        .ref_id = r->follow_id, .ref_index = r->index});
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

/* A pushed read came back: file it in its follow's ready list by index;
 * the follow's next scan sends what continues its sequence (follow.c). */
static void follow_pushed(b2sd_follow *f, b2sd_read *r) {
  b2sd_read **pp = &f->ready;
  while (*pp && (*pp)->index < r->index)
    pp = &(*pp)->next;
  r->next = *pp;
  *pp = r;
}

/* A finished read (result or error) goes to its follow or its reply. */
static void read_finished(b2sd_server *srv, b2sd_session *s, b2sd_read *r) {
  b2sd_follow *f = r->push ? b2sd_follow_find(s, r->follow_id) : NULL;
  if (r->push && !f) {
    b2sd_read_release(srv, s, r);       /* its follow is gone */
  } else if (r->push) {
    follow_pushed(f, r);
  } else {
    list_append(&s->rd_out, &s->rd_out_tail, r);
    srv->readers->parked++;
  }
}

/* A sized read waits in its session, sorted by seq, for admission. */
static void sized_put(b2sd_readers *rd, b2sd_session *s, b2sd_read *r) {
  b2sd_read **pp = &s->rd_sized;
  while (*pp && (*pp)->seq < r->seq)
    pp = &(*pp)->next;
  r->next = *pp;
  *pp = r;
  rd->sized++;
}

/* Admit the next read of s if it is its turn and there is room.  Returns
 * false when nothing was admitted; *daemon_full when the daemon's bytes
 * or count were what lacked. */
static bool admit_one(b2sd_server *srv, b2sd_session *s, bool *daemon_full) {
  b2sd_readers *rd = srv->readers;
  b2sd_read *r = s->rd_sized;
  *daemon_full = false;
  if (!r || r->seq != s->rd_adm_seq)
    return false;
  int rc = r->rc;
  if (rc == 0 && r->push && !b2sd_follow_find(s, r->follow_id))
    rc = B2S_E_CLOSED;           /* nobody to push to: no bytes for it */
  if (rc == 0 && !b2sd_read_count_headroom(rd->admitted)) {
    *daemon_full = true;
    return false;
  }
  if (rc == 0) {
    rc = admit_bytes(rd->bytes, s, r, daemon_full);
    if (rc == 0)
      return false;
  }
  s->rd_sized = r->next;
  s->rd_adm_seq++;
  rd->sized--;
  if (rc < 0) {                  /* the chunk cannot be read: say why */
    r->rc = rc;
    read_finished(srv, s, r);
    return true;
  }
  r->admitted = true;
  rd->admitted++;
  todo_push(rd, r);
  return true;
}

/* Admit sized reads, one per session per round, the session that waited
 * for the daemon's room first; stop when the daemon is full. */
static void admit_sized(b2sd_server *srv) {
  b2sd_readers *rd = srv->readers;
  b2sd_session *first = rd->first_sid ? session_by_id(srv, rd->first_sid)
                                      : NULL;
  rd->first_sid = 0;
  bool progress = true, full = false;
  while (progress && rd->sized > 0 && !full) {
    progress = false;
    if (first) {
      progress |= admit_one(srv, first, &full);
      if (full)
        rd->first_sid = first->id;
    }
    for (b2sd_session *s = srv->sessions; s && !full; s = s->next) {
      if (s == first || !s->rd_sized)
        continue;
      progress |= admit_one(srv, s, &full);
      if (full)
        rd->first_sid = s->id;
    }
  }
}

/* Issue waiting READs, one per session per round, while the counts let. */
static void issue_waiting(b2sd_server *srv) {
  b2sd_readers *rd = srv->readers;
  bool progress = true;
  while (progress) {
    progress = false;
    for (b2sd_session *s = srv->sessions; s; s = s->next) {
      if (!s->rd_wait || !b2sd_reads_headroom(srv, s))
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

/* A reload may change memory_limit, and with it the read budget. */
static void budget_update(b2sd_server *srv, b2sd_readers *rd) {
  if (srv->dcfg.memory_limit == rd->limit)
    return;
  rd->limit = srv->dcfg.memory_limit;
  pthread_mutex_lock(&rd->bytes->lock);
  rd->bytes->budget = b2sd_read_budget(rd->limit);
  pthread_mutex_unlock(&rd->bytes->lock);
}

bool b2sd_reads_turn(b2sd_server *srv) {
  b2sd_readers *rd = srv->readers;
  if (!rd)
    return false;
  budget_update(srv, rd);
  b2sd_read *done = take_done(rd);
  if (!done && rd->parked == 0 && rd->sized == 0)
    return false;
  while (done) {
    b2sd_read *r = done;
    done = r->next;
    r->next = NULL;
    b2sd_session *s = session_by_id(srv, r->session_id);
    if (!s)
      b2sd_read_release(srv, NULL, r);  /* its asker is gone */
    else if (r->admitted || r->nrecs)   /* records only: never sized */
      read_finished(srv, s, r);
    else
      sized_put(rd, s, r);
  }
  bool held = false;
  for (b2sd_session *s = srv->sessions; s; s = s->next)
    if (s->rd_out && !out_flush(srv, s))
      held = true;
  admit_sized(srv);
  issue_waiting(srv);
  return held;
}

void b2sd_reads_session_end(b2sd_server *srv, b2sd_session *s) {
  b2sd_readers *rd = srv->readers;
  b2sd_read *r;
  while ((r = list_pop(&s->rd_wait, &s->rd_wait_tail))) {
    s->nwait--;
    if (rd)
      rd->parked--;
    r->st->nreads--;
    free(r);                     /* never issued */
  }
  while ((r = list_pop(&s->rd_out, &s->rd_out_tail))) {
    if (rd)
      rd->parked--;
    b2sd_read_release(srv, s, r);
  }
  while ((r = s->rd_sized)) {    /* sized, never admitted */
    s->rd_sized = r->next;
    if (rd)
      rd->sized--;
    b2sd_read_release(srv, s, r);
  }
  racct_unref(s->rd_acct);       /* its buffers may outlive it */
  s->rd_acct = NULL;
}

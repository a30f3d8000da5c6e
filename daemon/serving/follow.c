/* Consumers: FOLLOW / UNFOLLOW, NOTIFY and pushed CHUNKs, READ.
 *
 * The writer only publishes the committed count; the I/O thread turns it
 * into NOTIFY ranges here, so any number of followers costs the writer
 * nothing.  A follow's `next` advances only when its message was queued,
 * so every chunk is announced exactly once and in order; a peer whose queue
 * is full gets a merged range on a later turn.
 *
 * Chunk bytes (READ, push follows) are read by the reader threads
 * (readers.c).  A push follow issues reads for the committed chunks from
 * `req` on, a few at a time; results may come back in any order, wait in
 * the follow's `ready` list sorted by index, and are sent strictly from
 * `next` on, so pushed chunks stay in order, exactly once.
 *
 * Records (protocol version 2, FOLLOW records): a push follow asks the
 * readers for each chunk's record along with it.  A NOTIFY follow with
 * records asks the readers for the records of its next run of committed
 * chunks (at most B2S_WIRE_NOTIFY_RECS_MAX, one run at a time) and sends
 * the NOTIFY once they came back, so its NOTIFYs stay in order too. */
#define _GNU_SOURCE
#include "clock.h"
#include "outbox.h"
#include "progress.h"
#include "recdeliver.h"
#include "hist.h"
#include "stream.h"
#include "readers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void b2sd_follow_remove(b2sd_follow *f) {
  b2sd_session *s = f->sess;
  while (f->ready) {             /* results not sent: discarded */
    b2sd_read *r = f->ready;
    f->ready = r->next;
    b2sd_read_release(f->st->srv, s, r);
  }
  for (b2sd_follow **pp = &s->follows; *pp; pp = &(*pp)->next_s)
    if (*pp == f) {
      *pp = f->next_s;
      break;
    }
  for (b2sd_follow **pp = &f->st->follows; *pp; pp = &(*pp)->next_st)
    if (*pp == f) {
      *pp = f->next_st;
      break;
    }
  s->nfollows--;
  free(f);
}

static int stream_lookup(b2sd_server *srv, b2s_wire_str n, b2sd_stream **out) {
  char name[B2S_STREAM_NAME_MAX + 1];
  if (n.len == 0 || n.len > B2S_STREAM_NAME_MAX)
    return B2S_E_STREAM_NAME;
  memcpy(name, n.ptr, n.len);
  name[n.len] = '\0';
  int rc = b2s_stream_name_check(name);
  if (rc < 0)
    return rc;
  *out = b2sd_stream_find(srv, name);
  return *out ? 0 : B2S_E_NOSTREAM;
}

void b2sd_follow_msg(b2sd_server *srv, b2sd_session *s,
                     const b2s_wire_msg *m) {
  b2sd_stream *st = NULL;
  int rc = 0;
  const char *why = NULL;
  uint16_t fl = m->flags;
  if (fl & B2S_WIRE_FOLLOW_BY_PATH) {
    rc = B2S_E_AUTH;
    why = "following by path is not offered; follow the stream by name";
  } else if ((fl & B2S_WIRE_FOLLOW_FROM_END) && m->follow.start != 0)
    rc = B2S_E_PROTO;
  else if ((fl & B2S_WIRE_FOLLOW_PUSH_COMPRESSED) &&
           (fl & B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED))
    rc = B2S_E_PROTO;
  else if ((fl & B2S_WIRE_FOLLOW_RECORDS) && !b2sd_session_v2(s))
    rc = B2S_E_PROTO;            /* a version-2 flag in a version-1 session */
  else if (s->nfollows >= B2SD_MAX_FOLLOWS) {
    rc = B2S_E_BUSY;
    why = "this session has " B2SD_STR(B2SD_MAX_FOLLOWS) " follows, the limit";
  }
  if (rc == 0)
    rc = stream_lookup(srv, m->follow.target, &st);
  if (rc == 0 && st->dist) {
    rc = B2S_E_ARG;
    why = "a distributed stream is read from its store or followed at its "
          "committer, not at a rank";
    st = NULL;
  }
  int64_t committed = st ? b2sd_progress_committed(st) : 0;
  uint64_t start = (fl & B2S_WIRE_FOLLOW_FROM_END) ? (uint64_t)committed
                                                   : m->follow.start;
  if (rc == 0 && start > (uint64_t)committed)
    rc = B2S_E_NCHUNK;
  b2sd_follow *f = rc == 0 ? calloc(1, sizeof *f) : NULL;
  if (rc == 0 && !f)
    rc = B2S_E_NOMEM;
  if (rc < 0) {
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = rc, .ref_type = m->type,
        .ref_index = m->follow.start, .text = why});
    return;
  }
  f->sess = s;
  f->st = st;
  f->id = s->next_follow++;
  f->next = f->req = start;
  f->push = fl & (B2S_WIRE_FOLLOW_PUSH_COMPRESSED |
                  B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED);
  f->records = fl & B2S_WIRE_FOLLOW_RECORDS;
  f->next_s = s->follows;
  s->follows = f;
  f->next_st = st->follows;
  st->follows = f;
  s->nfollows++;
  b2s_wire_msg r;
  b2s_wire_init(&r, B2S_WIRE_FOLLOWING);
  r.tag = m->tag;
  r.following.start = start;
  r.following.committed = (uint64_t)committed;
  r.following.follow_id = f->id;
  b2sd_send(srv, s, &r, NULL, 0);
}

void b2sd_unfollow_msg(b2sd_server *srv, b2sd_session *s,
                       const b2s_wire_msg *m) {
  b2sd_follow *f = b2sd_follow_find(s, m->unfollow.follow_id);
  if (!f) {
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = B2S_E_CLOSED, .ref_type = m->type,
        .ref_id = m->unfollow.follow_id});
    return;
  }
  b2s_wire_msg r;
  b2s_wire_init(&r, B2S_WIRE_UNFOLLOWED);
  r.tag = m->tag;
  r.unfollowed.next = f->next;
  r.unfollowed.follow_id = f->id;
  b2sd_follow_remove(f);
  b2sd_send(srv, s, &r, NULL, 0);
}

/* A read of chunk index of st for session s (follow_id 0: by name). */
static b2sd_read *read_new(b2sd_stream *st, uint64_t index, bool decompress,
                           const b2sd_session *s, uint32_t follow_id) {
  b2sd_read *r = calloc(1, sizeof *r);
  if (r) {
    r->st = st;
    st->nreads++;                /* keeps st while r lives (retire.h) */
    r->index = index;
    r->decompress = decompress;
    r->session_id = s->id;
    r->follow_id = follow_id;
  }
  return r;
}

void b2sd_read_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m) {
  b2sd_stream *st = NULL;
  int rc = 0;
  if (m->read.follow_id) {
    b2sd_follow *f = b2sd_follow_find(s, m->read.follow_id);
    if (f)
      st = f->st;
    else
      rc = B2S_E_CLOSED;
  } else {
    rc = stream_lookup(srv, m->read.stream, &st);
  }
  if (rc == 0 && (m->flags & B2S_WIRE_READ_RECORD) && !b2sd_session_v2(s))
    rc = B2S_E_PROTO;            /* a version-2 flag in a version-1 session */
  if (rc == 0 && m->read.chunk >= (uint64_t)b2sd_progress_committed(st))
    rc = B2S_E_NCHUNK;
  b2sd_read *r = rc == 0 ? read_new(st, m->read.chunk,
                                     m->flags & B2S_WIRE_READ_DECOMPRESS, s,
                                     m->read.follow_id)
                          : NULL;
  if (rc == 0 && !r)
    rc = B2S_E_NOMEM;
  if (rc == 0) {
    r->tag = m->tag;
    r->record = m->flags & B2S_WIRE_READ_RECORD;
    rc = b2sd_reads_request(srv, s, r);
    if (rc < 0) {
      st->nreads--;
      free(r);
    }
  }
  if (rc < 0)
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = rc, .ref_type = m->type,
        .ref_id = m->read.follow_id, .ref_index = m->read.chunk,
        .text = rc == B2S_E_BUSY ? B2SD_STR(B2SD_READS_WAIT)
                " READs already wait in this session, the limit"
                                 : NULL});
}

enum { PUSH_OK, PUSH_HELD, PUSH_ENDED };

/* Send the ready results of f that continue its sequence. */
static int push_flush(b2sd_server *srv, b2sd_follow *f) {
  b2sd_read *r;
  while ((r = f->ready) && r->index == f->next) {
    if (r->rc < 0) {
      b2sd_send_error(srv, f->sess, &(b2sd_errreply){
          .code = r->rc, .flags = B2S_WIRE_ERROR_CLOSED_REF,
          .ref_type = B2S_WIRE_FOLLOW, .ref_id = f->id, .ref_index = f->next});
      b2sd_follow_remove(f);
      return PUSH_ENDED;
    }
    int rc = b2sd_send_chunk(srv, f->sess, r);   /* r->index == f->next */
    if (rc == -EAGAIN)
      return PUSH_HELD;
    if (rc < 0)                  /* peer gone: the sweep ends the session */
      return PUSH_OK;
    f->ready = r->next;
    f->nreads--;
    b2sd_read_release(srv, f->sess, r);
    f->next++;
  }
  return PUSH_OK;
}

/* Push follow: send what is ready in order, then ask the readers for more
 * committed chunks within the bounds.  False when held back. */
static bool push_scan(b2sd_server *srv, b2sd_follow *f, uint64_t committed) {
  int rc = push_flush(srv, f);
  if (rc == PUSH_ENDED)
    return true;
  while (f->req < committed && b2sd_read_follow_headroom(f->nreads) &&
         b2sd_reads_headroom(srv, f->sess)) {
    b2sd_read *r = read_new(f->st, f->req,
                            f->push & B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED,
                            f->sess, f->id);
    if (!r)
      return false;              /* try again on a later turn */
    r->push = true;
    r->record = f->records;
    f->req++;
    f->nreads++;
    b2sd_reads_issue(srv, f->sess, r);
  }
  return rc == PUSH_OK;
}

/* NOTIFY follow with records: send the run whose records came back, then
 * ask for the next one.  False when held back; *sent when a NOTIFY went. */
static bool records_scan(b2sd_server *srv, b2sd_follow *f, uint64_t committed,
                         bool *sent) {
  b2sd_read *r = f->ready;     /* at most one: runs are asked one by one */
  if (r && r->rc < 0) {
    b2sd_send_error(srv, f->sess, &(b2sd_errreply){
        .code = r->rc, .flags = B2S_WIRE_ERROR_CLOSED_REF,
        .ref_type = B2S_WIRE_FOLLOW, .ref_id = f->id, .ref_index = f->next});
    b2sd_follow_remove(f);
    return true;
  }
  if (r) {
    b2s_wire_msg m;
    b2sd_notify_build(&m, f->id, r->index, committed, true);
    m.notify.count = r->nrecs;   /* the run read, not more */
    int rc = b2sd_send(srv, f->sess, &m, r->rec, r->rec_len);
    if (rc == -EAGAIN)
      return false;
    if (rc < 0)                  /* peer gone: the sweep ends the session */
      return true;
    f->ready = NULL;
    f->nreads--;
    f->next += r->nrecs;
    b2sd_read_release(srv, f->sess, r);
    *sent = true;
  }
  if (f->nreads == 0 && f->next < committed && b2sd_reads_headroom(srv, f->sess)) {
    b2s_wire_msg m;              /* the run a NOTIFY may announce */
    uint32_t n = b2sd_notify_build(&m, f->id, f->next, committed, true);
    b2sd_read *q = read_new(f->st, f->next, false, f->sess, f->id);
    if (!q)
      return false;              /* try again on a later turn */
    q->push = true;              /* filed with the follow when back */
    q->nrecs = n;
    f->nreads++;
    b2sd_reads_issue(srv, f->sess, q);
  }
  return true;
}

bool b2sd_follow_scan(b2sd_server *srv, b2sd_stream *st) {
  uint64_t committed = (uint64_t)b2sd_progress_committed(st);
  bool held = false, notified = false;
  uint64_t stamp = 0;
  if (committed > st->seen_committed) {
    st->seen_committed = committed;
    stamp = b2sd_progress_take_stamp(st);
  }
  for (b2sd_follow *f = st->follows, *nx; f; f = nx) {
    nx = f->next_st;
    if (f->sess->dead)
      continue;
    if (f->push) {
      held |= !push_scan(srv, f, committed);
      continue;
    }
    if (f->records) {
      held |= !records_scan(srv, f, committed, &notified);
      continue;
    }
    if (f->next >= committed)
      continue;
    b2s_wire_msg r;
    uint32_t count = b2sd_notify_build(&r, f->id, f->next, committed, false);
    int rc = b2sd_send(srv, f->sess, &r, NULL, 0);
    if (rc == 0) {
      f->next += count;
      notified = true;
    } else if (rc == -EAGAIN) {
      held = true;
    }
  }
  if (stamp && notified) {
    uint64_t dt = b2sd_now_ns() - stamp;
    b2sd_latency_note(&st->notify_lat, dt);
    b2sd_hist_note(&st->st_notify_hist, dt);
  }
  return held;
}

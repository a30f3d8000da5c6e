/* Consumers: FOLLOW, NOTIFY and pushed CHUNK delivery, READ, UNFOLLOW.
 *
 * Exactly once, in order (PROTOCOL.md 4.4): every NOTIFY must start where
 * the previous one ended and every pushed CHUNK must carry the next index;
 * anything else ends the follow with B2S_E_PROTO rather than hand out a
 * gap or a duplicate.  Announced indexes are a range [pos, announced), so
 * announcements cost no memory; pushed chunks wait in a list (the daemon
 * paces pushes by how fast this socket is read, so the list stays short).
 * A follow with records (version 2) keeps each NOTIFY's records frame
 * until its chunks are taken, and each pushed chunk's record with it; a
 * record missing or malformed ends the follow like a gap would. */
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

#define PUSH_FLAGS (B2SC_FOLLOW_PUSH_COMPRESSED | B2SC_FOLLOW_PUSH_DECOMPRESSED)

static b2sc_consumer *find(b2sc_session *s, uint32_t follow_id) {
  for (b2sc_consumer *c = s->consumers; c; c = c->next)
    if (c->follow_id == follow_id && follow_id != 0)
      return c;
  return NULL;
}

static void protocol_break(b2sc_consumer *c, const char *what) {
  b2sc_session *s = c->s;
  s->last_code = B2S_E_PROTO;
  strncpy(s->last_error, what, sizeof s->last_error - 1);
  s->last_error[sizeof s->last_error - 1] = '\0';
  c->closed = B2S_E_PROTO;
}

static bool wants_records(const b2sc_consumer *c) {
  return (c->flags & B2SC_FOLLOW_RECORDS) != 0;
}

/* Keep a NOTIFY's records: false when they do not match the follow. */
static bool keep_records(b2sc_consumer *c, sc_msg *x) {
  const b2s_wire_msg *m = &x->m;
  bool has = (m->flags & B2S_WIRE_NOTIFY_RECORDS) != 0;
  if (has != wants_records(c))
    return false;
  if (!has)
    return true;
  if (!sc_recs_valid(zmq_msg_data(&x->payload), zmq_msg_size(&x->payload),
                     m->notify.count))
    return false;
  sc_recs *r = malloc(sizeof *r);
  if (r == NULL) {
    c->closed = B2S_E_NOMEM;
    return true;
  }
  *r = (sc_recs){.first = m->notify.first, .count = m->notify.count};
  zmq_msg_init(&r->msg);
  zmq_msg_move(&r->msg, &x->payload);
  if (c->recs_tail)
    c->recs_tail->next = r;
  else
    c->recs_head = r;
  c->recs_tail = r;
  return true;
}

static void on_notify(b2sc_consumer *c, sc_msg *x) {
  const b2s_wire_msg *m = &x->m;
  if (c->flags & PUSH_FLAGS) {
    protocol_break(c, "NOTIFY on a follow with pushed chunks");
  } else if (m->notify.first != c->announced) {
    protocol_break(c, "NOTIFY does not continue the previous one");
  } else if (!keep_records(c, x)) {
    protocol_break(c, "NOTIFY records missing, unasked or malformed");
  } else {
    c->announced = m->notify.first + m->notify.count;
    c->committed = m->notify.committed;
  }
}

static void on_pushed(b2sc_consumer *c, sc_msg *x) {
  const b2s_wire_msg *m = &x->m;
  bool dec = (m->flags & B2S_WIRE_CHUNK_DECOMPRESSED) != 0;
  bool want_dec = (c->flags & B2SC_FOLLOW_PUSH_DECOMPRESSED) != 0;
  if (!(c->flags & PUSH_FLAGS) || dec != want_dec) {
    protocol_break(c, "pushed CHUNK not matching the follow's mode");
    return;
  }
  if (m->chunk.index != c->push_next) {
    protocol_break(c, "pushed CHUNK out of order");
    return;
  }
  sc_rec_slot check;
  if (x->has_record != wants_records(c) ||
      (x->has_record && sc_rec_keep(&check, zmq_msg_data(&x->record),
                                    zmq_msg_size(&x->record)) < 0)) {
    protocol_break(c, "pushed CHUNK record missing, unasked or malformed");
    return;
  }
  sc_pushed *e = malloc(sizeof *e);
  if (e == NULL) {
    c->closed = B2S_E_NOMEM;
    return;
  }
  *e = (sc_pushed){.index = m->chunk.index, .nbytes = m->chunk.nbytes,
                   .cbytes = m->chunk.cbytes};
  zmq_msg_init(&e->payload);
  zmq_msg_move(&e->payload, &x->payload);
  zmq_msg_init(&e->record);
  if ((e->has_record = x->has_record))
    zmq_msg_move(&e->record, &x->record);
  c->push_next++;
  if (c->committed < c->push_next)
    c->committed = c->push_next;
  e->committed = c->committed;
  if (c->tail)
    c->tail->next = e;
  else
    c->head = e;
  c->tail = e;
}

static void consumer_dispatch(b2sc_session *s, sc_msg *x) {
  const b2s_wire_msg *m = &x->m;
  b2sc_consumer *c;
  switch (m->type) {
  case B2S_WIRE_NOTIFY:
    if ((c = find(s, m->notify.follow_id)) != NULL && !c->closed)
      on_notify(c, x);
    break;
  case B2S_WIRE_CHUNK:
    if ((m->flags & B2S_WIRE_CHUNK_PUSHED) &&
        (c = find(s, m->chunk.follow_id)) != NULL && !c->closed)
      on_pushed(c, x);
    break;
  case B2S_WIRE_UNFOLLOWED:
    if ((c = find(s, m->unfollowed.follow_id)) != NULL)
      c->closed = B2S_E_CLOSED;
    break;
  default:
    break;
  }
}

static void consumer_error(b2sc_session *s, const b2s_wire_msg *m) {
  /* ref_id is a follow id only for these types: a producer handle may
   * carry the same number (a failed stream's ERROR names a handle with
   * OPEN, a follow with FOLLOW) */
  int t = m->error.ref_type;
  bool ours = t == B2S_WIRE_FOLLOW || t == B2S_WIRE_READ ||
              t == B2S_WIRE_UNFOLLOW;
  b2sc_consumer *c = ours ? find(s, m->error.ref_id) : NULL;
  if (c != NULL && (m->flags & B2S_WIRE_ERROR_CLOSED_REF))
    c->closed = m->error.code;
}

static void consumers_free(b2sc_session *s) {
  while (s->consumers)
    sc_consumer_free(s->consumers);
}

static const sc_role consumer_role = {
  .error = consumer_error,
  .dispatch = consumer_dispatch,
  .free_all = consumers_free,
};

/* Forget everything received for the current follow. */
static void purge(b2sc_consumer *c) {
  while (c->head) {
    sc_pushed *e = c->head;
    c->head = e->next;
    zmq_msg_close(&e->payload);
    zmq_msg_close(&e->record);
    free(e);
  }
  c->tail = NULL;
  while (c->recs_head) {
    sc_recs *r = c->recs_head;
    c->recs_head = r->next;
    zmq_msg_close(&r->msg);
    free(r);
  }
  c->recs_tail = NULL;
  c->cur_rec.len = c->cached_rec.len = 0;
  if (c->has_current)
    zmq_msg_close(&c->current);
  c->has_current = false;
  if (c->has_cached)
    zmq_msg_close(&c->cached);
  c->has_cached = false;
}

/* FOLLOW stream from start: sets the follow id and positions. */
static int do_follow(b2sc_consumer *c, uint64_t start, unsigned flags) {
  b2sc_session *s = c->s;
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.flags = (uint16_t)flags;
  m.follow.start = start;
  m.follow.target = b2s_wire_cstr(c->stream);
  int rc = sc_request(s, &m, B2S_WIRE_FOLLOWING, sc_deadline(s->timeout_ms));
  if (rc < 0)
    return rc;
  const b2s_wire_msg *f = &s->reply.m;
  c->follow_id = f->following.follow_id;
  c->pos = c->announced = c->push_next = f->following.start;
  c->committed = f->following.committed;
  c->closed = 0;
  sc_msg_close(&s->reply);
  return 0;
}

int b2sc_follow(b2sc_session *s, const char *stream, uint64_t from_index,
                unsigned flags, b2sc_consumer **out) {
  if (out == NULL || stream == NULL || !stream[0] ||
      strlen(stream) > B2S_WIRE_NAME_MAX)
    return B2S_E_ARG;
  *out = NULL;
  if ((flags & ~(PUSH_FLAGS | B2SC_FOLLOW_FROM_END | B2SC_FOLLOW_RECORDS)) ||
      (flags & PUSH_FLAGS) == PUSH_FLAGS ||
      ((flags & B2SC_FOLLOW_FROM_END) && from_index != 0))
    return B2S_E_ARG;
  int rc = sc_session_usable(s);
  if (rc < 0)
    return rc;
  if ((flags & B2SC_FOLLOW_RECORDS) && s->version < 2)
    return B2S_E_PROTO_VERSION;
  b2sc_consumer *c = calloc(1, sizeof *c);
  if (c == NULL)
    return B2S_E_NOMEM;
  c->s = s;
  /* from_end only applies to the start */
  c->flags = flags & (PUSH_FLAGS | B2SC_FOLLOW_RECORDS);
  strcpy(c->stream, stream);
  if ((rc = do_follow(c, from_index, flags)) < 0) {
    free(c);
    return rc;
  }
  c->next = s->consumers;
  s->consumers = c;
  sc_session_role(s, SC_ROLE_CONSUMER, &consumer_role);
  *out = c;
  return 0;
}

/* The record of announced chunk c->pos into cur_rec (checked on
 * arrival, so it is there: each NOTIFY's records cover its chunks). */
static void take_notified_record(b2sc_consumer *c) {
  sc_recs *r = c->recs_head;
  if (r == NULL || r->first + r->taken != c->pos) {
    protocol_break(c, "no record for a notified chunk");
    return;
  }
  const uint8_t *p = zmq_msg_data(&r->msg);
  size_t len = zmq_msg_size(&r->msg);
  b2s_wire_rec w;
  int n = b2s_wire_rec_decode(p + r->off, len - r->off, &w);
  sc_rec_keep(&c->cur_rec, p + r->off, (size_t)n);
  r->off += (size_t)n;
  if (++r->taken == r->count) {
    if ((c->recs_head = r->next) == NULL)
      c->recs_tail = NULL;
    zmq_msg_close(&r->msg);
    free(r);
  }
}

/* The next chunk already received, if any. */
static bool take(b2sc_consumer *c, b2sc_chunk_info *info) {
  if (!(c->flags & PUSH_FLAGS)) {
    if (c->pos >= c->announced)
      return false;
    if (wants_records(c))
      take_notified_record(c);
    *info = (b2sc_chunk_info){.index = c->pos, .committed = c->committed};
    c->pos++;
    return true;
  }
  sc_pushed *e = c->head;
  if (e == NULL)
    return false;
  if ((c->head = e->next) == NULL)
    c->tail = NULL;
  zmq_msg_init(&c->current);
  zmq_msg_move(&c->current, &e->payload);
  c->has_current = true;
  if (e->has_record)
    sc_rec_keep(&c->cur_rec, zmq_msg_data(&e->record),
                zmq_msg_size(&e->record));
  zmq_msg_close(&e->record);
  *info = (b2sc_chunk_info){.index = e->index, .committed = e->committed,
                            .nbytes = e->nbytes, .cbytes = e->cbytes,
                            .data = zmq_msg_data(&c->current),
                            .len = zmq_msg_size(&c->current)};
  c->pos = e->index + 1;
  free(e);
  return true;
}

int b2sc_next(b2sc_consumer *c, int timeout_ms, b2sc_chunk_info *info) {
  if (c == NULL || info == NULL)
    return B2S_E_ARG;
  if (c->has_current)
    zmq_msg_close(&c->current);
  c->has_current = false;
  c->cur_rec.len = 0;
  int64_t deadline = sc_deadline(timeout_ms);
  for (;;) {
    if (take(c, info))
      return 0;
    if (c->closed)
      return c->closed;
    int rc = sc_pump(c->s, deadline);
    if (rc < 0)
      return rc;
    if (rc == 0)
      return B2S_E_TIMEOUT;
  }
}

int b2sc_next_rec(b2sc_consumer *c, int timeout_ms, b2sc_chunk_info *info,
                  b2sc_record *rec) {
  int rc = b2sc_next(c, timeout_ms, info);
  if (rc < 0 || rec == NULL)
    return rc;
  if (wants_records(c) && c->cur_rec.len == 0)
    return c->closed ? c->closed : B2S_E_PROTO;   /* taken, then broken */
  sc_rec_give(&c->cur_rec, rec);   /* none asked: present 0 */
  return 0;
}

static int serve_cached(b2sc_consumer *c, void *buf, size_t cap) {
  size_t n = zmq_msg_size(&c->cached);
  if (n <= cap) {
    if (n > 0)
      memcpy(buf, zmq_msg_data(&c->cached), n);
    zmq_msg_close(&c->cached);
    c->has_cached = false;
  }
  return (int)n;   /* a chunk is below 2^31 bytes (PROTOCOL.md 7) */
}

int b2sc_read(b2sc_consumer *c, uint64_t index, bool decompressed, void *buf,
              size_t cap) {
  return b2sc_read_rec(c, index, decompressed, buf, cap, NULL);
}

/* The cached chunk, with its record for rec. */
static int serve_cached_rec(b2sc_consumer *c, void *buf, size_t cap,
                            b2sc_record *rec) {
  if (rec != NULL)
    sc_rec_give(&c->cached_rec, rec);
  return serve_cached(c, buf, cap);
}

int b2sc_read_rec(b2sc_consumer *c, uint64_t index, bool decompressed,
                  void *buf, size_t cap, b2sc_record *rec) {
  if (c == NULL || (buf == NULL && cap > 0))
    return B2S_E_ARG;
  if (rec != NULL && c->s->version < 2)
    return B2S_E_PROTO_VERSION;
  if (c->has_cached && c->cached_index == index &&
      c->cached_dec == decompressed && (rec == NULL || c->cached_rec.len))
    return serve_cached_rec(c, buf, cap, rec);
  b2sc_session *s = c->s;
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_READ);
  m.flags = decompressed ? B2S_WIRE_READ_DECOMPRESS : 0;
  if (rec != NULL)
    m.flags |= B2S_WIRE_READ_RECORD;
  m.read.chunk = index;
  /* A live follow names the stream; after it ended the name does. */
  if (!c->closed)
    m.read.follow_id = c->follow_id;
  else
    m.read.stream = b2s_wire_cstr(c->stream);
  int rc = sc_request(s, &m, B2S_WIRE_CHUNK, sc_deadline(s->timeout_ms));
  if (rc < 0)
    return rc;
  const b2s_wire_msg *r = &s->reply.m;
  bool dec = (r->flags & B2S_WIRE_CHUNK_DECOMPRESSED) != 0;
  bool has_rec = s->reply.has_record;
  if (r->chunk.index != index || dec != decompressed ||
      (r->flags & B2S_WIRE_CHUNK_PUSHED) || has_rec != (rec != NULL) ||
      (has_rec && sc_rec_keep(&c->cached_rec, zmq_msg_data(&s->reply.record),
                              zmq_msg_size(&s->reply.record)) < 0)) {
    sc_msg_close(&s->reply);
    return B2S_E_PROTO;
  }
  if (!has_rec)
    c->cached_rec.len = 0;
  if (c->has_cached)
    zmq_msg_close(&c->cached);
  zmq_msg_init(&c->cached);
  zmq_msg_move(&c->cached, &s->reply.payload);
  sc_msg_close(&s->reply);
  c->has_cached = true;
  c->cached_index = index;
  c->cached_dec = decompressed;
  return serve_cached_rec(c, buf, cap, rec);
}

static int do_unfollow(b2sc_consumer *c) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_UNFOLLOW);
  m.unfollow.follow_id = c->follow_id;
  int rc = sc_request(c->s, &m, B2S_WIRE_UNFOLLOWED,
                      sc_deadline(c->s->timeout_ms));
  if (rc == 0)
    sc_msg_close(&c->s->reply);
  c->closed = B2S_E_CLOSED;
  return rc;
}

int b2sc_seek(b2sc_consumer *c, uint64_t index) {
  if (c == NULL)
    return B2S_E_ARG;
  int rc = sc_session_usable(c->s);
  if (rc < 0)
    return rc;
  if (!c->closed && (rc = do_unfollow(c)) < 0 && rc != B2S_E_CLOSED)
    return rc;
  purge(c);
  if ((rc = do_follow(c, index, c->flags)) < 0)
    c->closed = rc;
  return rc;
}

uint64_t b2sc_position(const b2sc_consumer *c) {
  return c != NULL ? c->pos : 0;
}

void sc_consumer_free(b2sc_consumer *c) {
  if (c == NULL)
    return;
  for (b2sc_consumer **pp = &c->s->consumers; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  purge(c);
  free(c);
}

int b2sc_unfollow(b2sc_consumer *c) {
  if (c == NULL)
    return 0;
  int rc = 0;
  if (!c->closed && sc_session_usable(c->s) == 0)
    rc = do_unfollow(c);
  sc_consumer_free(c);
  return rc;
}

/* Producers: OPEN, DATA with credits, ACK and DROPPED bookkeeping, FLUSH,
 * CLOSE.
 *
 * Credits (PROTOCOL.md 5.1): available = OPENED.credits + sum of
 * ACK.credits - buffers sent; nothing is sent while it is 0, because a
 * buffer sent without credit makes the daemon close the handle.  Shared-
 * memory slots reserve their credit at acquire (client_shm.c), so the
 * count here is what may still be sent. */
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

/* At most this many queued messages are handled before a send, so a busy
 * daemon cannot keep a sender from sending. */
#define SC_DRAIN_MAX 64

static b2sc_producer *find(b2sc_session *s, uint32_t handle) {
  for (b2sc_producer *p = s->producers; p; p = p->next)
    if (p->handle == handle)
      return p;
  return NULL;
}

/* Buffers below upto reached level; that implies every lower level. */
static void settle(b2sc_producer *p, int level, uint64_t upto) {
  for (int l = 1; l <= level && l <= 3; l++)
    if (p->upto[l] < upto)
      p->upto[l] = upto;
}

static void note_status(b2sc_producer *p, int code) {
  if (p->status == 0)
    p->status = code;
}

static void producer_dispatch(b2sc_session *s, sc_msg *x) {
  const b2s_wire_msg *m = &x->m;
  b2sc_producer *p;
  switch (m->type) {
  case B2S_WIRE_ACK:
    if ((p = find(s, m->ack.handle)) == NULL)
      return;
    settle(p, m->ack.level, m->ack.upto);
    p->credits += m->ack.credits;
    if (p->dropped < m->ack.dropped)
      p->dropped = m->ack.dropped;
    break;
  case B2S_WIRE_DROPPED:
    if ((p = find(s, m->dropped.handle)) == NULL)
      return;
    p->dropped++;
    note_status(p, B2S_E_DROPPED);
    break;
  case B2S_WIRE_FLUSHED:
    if ((p = find(s, m->flushed.handle)) != NULL)
      settle(p, B2S_WIRE_LEVEL_DURABLE, m->flushed.upto);
    break;
  case B2S_WIRE_CLOSED:
    if ((p = find(s, m->closed.handle)) == NULL)
      return;
    settle(p, p->ack_level, m->closed.upto);
    if (p->dropped < m->closed.dropped)
      p->dropped = m->closed.dropped;
    p->closed = B2S_E_CLOSED;
    break;
  default:
    break;
  }
}

static bool producer_error_stale(b2sc_session *s, const b2s_wire_msg *m) {
  int t = m->error.ref_type;
  if ((t != B2S_WIRE_DATA && t != B2S_WIRE_SHM_SUBMIT) ||
      m->error.code != B2S_E_CLOSED || m->flags != 0 || !m->error.ref_id)
    return false;
  b2sc_producer *p = find(s, m->error.ref_id);
  return p != NULL && p->closed != 0;
}

static void producer_error(b2sc_session *s, const b2s_wire_msg *m) {
  /* ref_id is a handle id only for these types (a follow may carry the
   * same number); OPEN names a handle ended later, e.g. by a failed
   * stream */
  int t = m->error.ref_type;
  bool ours = t == B2S_WIRE_OPEN || t == B2S_WIRE_DATA ||
              t == B2S_WIRE_FLUSH || t == B2S_WIRE_CLOSE ||
              t == B2S_WIRE_SHM_ATTACH || t == B2S_WIRE_SHM_SUBMIT;
  b2sc_producer *p = ours && m->error.ref_id ? find(s, m->error.ref_id) : NULL;
  if (p == NULL)
    return;
  if (t == B2S_WIRE_DATA || t == B2S_WIRE_SHM_SUBMIT) {
    /* a buffer refused: it counts as settled, its credit comes with the
     * next ACK (PROTOCOL.md 5.1) */
    p->rejected++;
    note_status(p, m->error.code);
  }
  if (m->flags & B2S_WIRE_ERROR_CLOSED_REF)
    p->closed = m->error.code;
}

static void producers_free(b2sc_session *s) {
  while (s->producers)
    sc_producer_free(s->producers);
}

static const sc_role producer_role = {
  .error_stale = producer_error_stale,
  .error = producer_error,
  .dispatch = producer_dispatch,
  .free_all = producers_free,
};

/* Initial metadata as OPEN's payload (version 2), checked here so that
 * the caller learns of a malformed map as B2S_E_ARG. */
static int meta_payload(const b2sc_session *s, const void *meta,
                        size_t meta_len, zmq_msg_t *payload) {
  int rc = sc_session_usable(s);
  if (rc < 0)
    return rc;
  if (s->version < 2)
    return B2S_E_PROTO_VERSION;
  return sc_meta_msg(meta, meta_len, payload);
}

int b2sc_producer_open(b2sc_session *s, const char *stream, const char *tmpl,
                       b2sc_producer **out) {
  return b2sc_producer_open_meta(s, stream, tmpl, NULL, 0, out);
}

int b2sc_producer_open_meta(b2sc_session *s, const char *stream,
                            const char *tmpl, const void *meta,
                            size_t meta_len, b2sc_producer **out) {
  if (out == NULL || stream == NULL || !stream[0])
    return B2S_E_ARG;
  *out = NULL;
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_OPEN);
  m.open.stream = b2s_wire_cstr(stream);
  m.open.tmpl = b2s_wire_cstr(tmpl);
  if (m.open.stream.len > B2S_WIRE_NAME_MAX || m.open.tmpl.len > B2S_WIRE_NAME_MAX)
    return B2S_E_ARG;
  zmq_msg_t payload;
  int rc;
  if (meta != NULL) {
    if ((rc = meta_payload(s, meta, meta_len, &payload)) < 0)
      return rc;
    m.flags = B2S_WIRE_OPEN_META;
  }
  rc = sc_request_payload(s, &m, meta ? &payload : NULL, B2S_WIRE_OPENED,
                          sc_deadline(s ? s->timeout_ms : 0));
  if (meta != NULL)
    zmq_msg_close(&payload);   /* empty once sent */
  if (rc < 0)
    return rc;
  b2sc_producer *p = calloc(1, sizeof *p);
  if (p != NULL) {
    const b2s_wire_msg *o = &s->reply.m;
    p->s = s;
    p->handle = o->opened.handle;
    p->credits = o->opened.credits;
    p->max_buffer = o->opened.max_buffer;
    p->ack_level = o->opened.ack_level;
    p->policy = o->opened.policy;
    p->next = s->producers;
    s->producers = p;
    sc_session_role(s, SC_ROLE_PRODUCER, &producer_role);
  }
  sc_msg_close(&s->reply);
  if (p == NULL)
    return B2S_E_NOMEM;   /* the daemon's handle ends with the session */
  *out = p;
  return 0;
}

/* 0 when p may send now, else why not. */
static int usable(const b2sc_producer *p) {
  if (p == NULL)
    return B2S_E_ARG;
  int rc = sc_session_usable(p->s);
  if (rc < 0)
    return rc;
  /* the daemon's reason when it gave one (-EFBIG, -ENOSPC, -EIO...): a
   * producer told only "closed" cannot tell a full disk from a stop */
  return p->closed;
}

int sc_producer_wait_credit(b2sc_producer *p, int64_t deadline) {
  for (int k = 0; k < SC_DRAIN_MAX; k++)
    if (sc_pump(p->s, 0) <= 0)
      break;
  while (p->credits <= 0) {
    int rc = usable(p);
    if (rc < 0)
      return rc;
    rc = sc_pump(p->s, deadline);
    if (rc < 0)
      return rc;
    if (rc == 0)
      return B2S_E_TIMEOUT;
  }
  return usable(p);
}

/* DATA with the buffer, and the record frame when rec is not NULL. */
static int send_data(b2sc_producer *p, zmq_msg_t *payload, size_t len,
                     const b2s_wire_rec *rec) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_DATA);
  m.data.buffer_id = p->next_id;
  m.data.handle = p->handle;
  zmq_msg_t recmsg;
  int rc;
  if (rec != NULL) {
    if ((rc = sc_rec_msg(rec, &recmsg)) < 0)
      return rc;
    m.flags = B2S_WIRE_DATA_RECORD;
  }
  rc = sc_send_rec(p->s, &m, payload, rec ? &recmsg : NULL);
  if (rec != NULL)
    zmq_msg_close(&recmsg);   /* empty once sent */
  if (rc < 0)
    return rc;
  p->next_id++;
  p->credits--;
  p->bytes += len;
  return 0;
}

static int check_len(const b2sc_producer *p, const void *buf, size_t len) {
  if (buf == NULL || len == 0)
    return B2S_E_ARG;
  return len > p->max_buffer ? B2S_E_OVERSIZE : 0;
}

int b2sc_send(b2sc_producer *p, const void *buf, size_t len, int timeout_ms) {
  return b2sc_send_rec(p, buf, len, NULL, timeout_ms);
}

/* The wire record of the caller's rec, when there is one: 0 with *out
 * NULL for none. */
int sc_producer_rec(const b2sc_producer *p, const b2sc_record *rec,
                    b2s_wire_rec *wrec, const b2s_wire_rec **out) {
  *out = NULL;
  if (rec == NULL)
    return 0;
  if (p->s->version < 2)
    return B2S_E_PROTO_VERSION;
  int rc = sc_rec_producer(rec, wrec);
  if (rc == 0)
    *out = wrec;
  return rc;
}

int b2sc_send_rec(b2sc_producer *p, const void *buf, size_t len,
                  const b2sc_record *rec, int timeout_ms) {
  int rc = usable(p);
  if (rc < 0 || (rc = check_len(p, buf, len)) < 0)
    return rc;
  b2s_wire_rec wrec;
  const b2s_wire_rec *r;
  if ((rc = sc_producer_rec(p, rec, &wrec, &r)) < 0)
    return rc;
  if ((rc = sc_producer_wait_credit(p, sc_deadline(timeout_ms))) < 0)
    return rc;
  zmq_msg_t msg;
  if (p->bufs == NULL && (rc = sc_bufpool_new(&p->bufs)) < 0)
    return rc;
  if ((rc = sc_bufpool_msg(p->bufs, buf, len, &msg)) < 0)
    return rc;
  if ((rc = send_data(p, &msg, len, r)) < 0)
    zmq_msg_close(&msg);
  return rc;
}

/* The caller's free function, and whether to call it: a message that
 * could not be sent is closed by us in the calling thread, and then the
 * buffer stays the caller's. */
typedef struct zc_owner {
  b2sc_free_fn *fn;
  void *hint;
  bool give_back;
} zc_owner;

static void zc_free(void *data, void *hint) {
  zc_owner *o = hint;
  if (!o->give_back)
    o->fn(data, o->hint);
  free(o);
}

int b2sc_send_zc(b2sc_producer *p, void *buf, size_t len,
                 b2sc_free_fn *free_fn, void *hint) {
  return b2sc_send_zc_rec(p, buf, len, NULL, free_fn, hint);
}

int b2sc_send_zc_rec(b2sc_producer *p, void *buf, size_t len,
                     const b2sc_record *rec, b2sc_free_fn *free_fn,
                     void *hint) {
  int rc = usable(p);
  if (rc < 0 || (rc = check_len(p, buf, len)) < 0)
    return rc;
  b2s_wire_rec wrec;
  const b2s_wire_rec *r;
  if ((rc = sc_producer_rec(p, rec, &wrec, &r)) < 0)
    return rc;
  if ((rc = sc_producer_wait_credit(p, 0)) < 0)
    return rc == B2S_E_TIMEOUT ? B2S_E_BUSY : rc;
  zc_owner *o = NULL;
  if (free_fn != NULL) {
    if ((o = malloc(sizeof *o)) == NULL)
      return B2S_E_NOMEM;
    *o = (zc_owner){.fn = free_fn, .hint = hint, .give_back = false};
  }
  zmq_msg_t msg;
  if (zmq_msg_init_data(&msg, buf, len, o ? zc_free : NULL, o) < 0) {
    free(o);
    return B2S_E_NOMEM;
  }
  if ((rc = send_data(p, &msg, len, r)) < 0) {
    if (o)
      o->give_back = true;
    zmq_msg_close(&msg);
  }
  return rc;
}

int b2sc_wait_credit(b2sc_producer *p, int timeout_ms) {
  int rc = usable(p);
  if (rc < 0 || (rc = sc_producer_wait_credit(p, sc_deadline(timeout_ms))) < 0)
    return rc;
  return p->credits > INT32_MAX ? INT32_MAX : (int)p->credits;
}

int b2sc_flush(b2sc_producer *p, int timeout_ms) {
  int rc = usable(p);
  if (rc < 0)
    return rc;
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_FLUSH);
  m.flush.handle = p->handle;
  rc = sc_request(p->s, &m, B2S_WIRE_FLUSHED, sc_deadline(timeout_ms));
  if (rc < 0)
    return rc;
  sc_msg_close(&p->s->reply);
  rc = p->status;
  p->status = 0;
  return rc;
}

int b2sc_producer_stats_get(const b2sc_producer *p, b2sc_producer_stats *st) {
  if (p == NULL || st == NULL)
    return B2S_E_ARG;
  int lvl = p->ack_level >= 1 && p->ack_level <= 3 ? p->ack_level : 3;
  *st = (b2sc_producer_stats){
      .sent = p->next_id,
      .bytes = p->bytes,
      .received = p->upto[B2S_WIRE_LEVEL_RECEIVED],
      .written = p->upto[B2S_WIRE_LEVEL_WRITTEN],
      .durable = p->upto[B2S_WIRE_LEVEL_DURABLE],
      .acked = p->upto[lvl],
      .dropped = p->dropped,
      .rejected = p->rejected,
      .credits = p->credits > 0 ? (uint32_t)p->credits : 0,
      .max_buffer = p->max_buffer,
      .ack_level = p->ack_level,
      .policy = p->policy,
  };
  return 0;
}

void sc_producer_free(b2sc_producer *p) {
  if (p == NULL)
    return;
  for (b2sc_producer **pp = &p->s->producers; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  b2s_shm_detach(p->seg);
  sc_bufpool_release(p->bufs);
  free(p);
}

int b2sc_producer_close(b2sc_producer *p) {
  if (p == NULL)
    return 0;
  int rc = usable(p);
  if (rc == 0) {
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_CLOSE);
    m.close.handle = p->handle;
    rc = sc_request(p->s, &m, B2S_WIRE_CLOSED, sc_deadline(p->s->timeout_ms));
    if (rc == 0) {
      sc_msg_close(&p->s->reply);
      rc = p->status;
    }
  } else if (p->closed && p->closed != B2S_E_CLOSED) {
    rc = p->closed;   /* why the daemon ended it */
  }
  sc_producer_free(p);
  return rc;
}

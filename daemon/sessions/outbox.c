/* The outbox: sending messages to sessions over their ROUTER sockets.
 * Nothing here calls back into the rest of the daemon, so every module of
 * the I/O thread may send through it (the wakeup other threads use is
 * b2sd_wake, wake.c).
 *
 * Messages the daemon can regenerate (cumulative ACKs, NOTIFY ranges,
 * pushed chunks) are simply retried on a later turn when a peer's queue is
 * full (ROUTER_MANDATORY gives EAGAIN); nothing is buffered without bound. */
#define _GNU_SOURCE
#include "outbox.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int b2sd_send_head(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   bool more) {
  if (s->dead)
    return -EHOSTUNREACH;
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode_v(m, s->version ? s->version : 1, hdr, sizeof hdr);
  if (n < 0) {
    LOG_E("encoding %s failed: %s", b2s_wire_type_name(m->type),
          b2s_strerror(n));
    return n;
  }
  void *sock = srv->sockets[s->sock];
  srv->sent_on[s->sock] = true;  /* the loop reads the socket again */
  if (zmq_send(sock, s->rid, s->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    int e = errno;
    if (e == EHOSTUNREACH)
      s->dead = true;
    return -e;
  }
  /* the rest of a multipart message is queued once its first part is */
  zmq_send(sock, hdr, (size_t)n, more ? ZMQ_SNDMORE : 0);
  return 0;
}

int b2sd_send(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
              const void *payload, size_t plen) {
  int rc = b2sd_send_head(srv, s, m, payload != NULL);
  if (rc == 0 && payload)
    zmq_send(srv->sockets[s->sock], payload, plen, 0);
  return rc;
}

int b2sd_send_moved_tail(b2sd_server *srv, b2sd_session *s,
                         const b2s_wire_msg *m, uint8_t **buf, size_t len,
                         void (*free_fn)(void *, void *), const void *tail,
                         size_t tail_len) {
  int rc = b2sd_send_head(srv, s, m, true);
  if (rc < 0)
    return rc;
  void *sock = srv->sockets[s->sock];
  int more = tail ? ZMQ_SNDMORE : 0;
  zmq_msg_t pm;
  if (zmq_msg_init_data(&pm, *buf, len, free_fn, NULL) == 0) {
    *buf = NULL;                 /* ZeroMQ frees it once sent */
    if (zmq_msg_send(&pm, sock, more) < 0)
      zmq_msg_close(&pm);
  } else {
    zmq_send(sock, *buf, len, more);   /* copied; *buf stays the caller's */
  }
  if (tail)
    zmq_send(sock, tail, tail_len, 0);
  return 0;
}

void b2sd_send_error(b2sd_server *srv, b2sd_session *s,
                     const b2sd_errreply *r) {
  b2s_wire_msg e;
  b2s_wire_init(&e, B2S_WIRE_ERROR);
  e.tag = r->tag;
  e.flags = r->flags;
  e.error.code = r->code;
  /* only a request type of the session's version can be referred to */
  int since = b2s_wire_type_since(r->ref_type);
  bool request = !(r->ref_type & B2S_WIRE_FROM_DAEMON) && since > 0 &&
                 since <= s->version;
  e.error.ref_type = request ? r->ref_type : 0;
  e.error.ref_id = r->ref_id;
  e.error.ref_index = r->ref_index;
  const char *t = r->text ? r->text : b2s_strerror(r->code);
  e.error.message.ptr = t;
  e.error.message.len =
      (uint16_t)b2s_wire_utf8_cut(t, strlen(t), B2S_WIRE_TEXT_MAX);
  b2sd_send(srv, s, &e, NULL, 0);
}

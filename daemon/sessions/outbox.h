/* The I/O thread's outbox: every message the daemon sends to a session
 * goes through here (outbox.c).  I/O thread only: the functions use the
 * session's ROUTER socket. */
#ifndef B2SD_OUTBOX_H
#define B2SD_OUTBOX_H

#include "session.h"

/* Messages go out in the session's protocol version (session.h).
 * Send one message (header + optional payload) to a session.  Returns 0,
 * -EAGAIN when the peer's queue is full, -EHOSTUNREACH when it is gone
 * (the session is then marked dead). */
int b2sd_send(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
              const void *payload, size_t plen);
/* The routing id and header of a message, with `more` when a payload
 * frame follows (the caller must then send it).  Returns as b2sd_send. */
int b2sd_send_head(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   bool more);
/* A message whose payload buf[len] moves to ZeroMQ without a copy:
 * ZeroMQ calls free_fn(buf, NULL) once it is done with it (any thread).
 * *buf is cleared when it moved; when it could not, the bytes are copied
 * and *buf stays the caller's.  Returns as b2sd_send (on an error before
 * the payload, *buf stays the caller's too).  Then tail[tail_len] (copied)
 * as a last frame when tail is not NULL: a CHUNK with its record. */
int b2sd_send_moved_tail(b2sd_server *srv, b2sd_session *s,
                         const b2s_wire_msg *m, uint8_t **buf, size_t len,
                         void (*free_fn)(void *, void *), const void *tail,
                         size_t tail_len);
/* An ERROR's fields (docs/PROTOCOL.md, ERROR); a field left out is 0, a
 * NULL text is the code's own message. */
typedef struct b2sd_errreply {
  uint32_t tag;                  /* the tag of the message answered */
  int code;
  uint16_t flags;                /* B2S_WIRE_ERROR_CLOSED_REF, _SESSION */
  uint8_t ref_type;              /* type of the message it is about */
  uint32_t ref_id;               /* handle or follow it names */
  uint64_t ref_index;            /* buffer id or chunk index */
  const char *text;
} b2sd_errreply;

/* Send e as an ERROR to s. */
void b2sd_send_error(b2sd_server *srv, b2sd_session *s,
                     const b2sd_errreply *e);

#endif

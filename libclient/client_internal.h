/* Internals of the client library shared by client_*.c.
 *
 * One message pump per session (client_session.c): every message read from
 * the socket goes through sc_dispatch, which routes it to the producer
 * (by handle) or consumer (by follow id) it is about, or, when its tag is
 * the one a request is waiting for, parks it in the session's reply slot.
 * Waiting functions loop on sc_pump until their condition holds, so
 * asynchronous messages (ACK, DROPPED, NOTIFY, pushed CHUNK) are never lost
 * while a request is outstanding.
 *
 * Ownership: the session owns its producers and consumers (two lists) and
 * the reply slot's ZeroMQ messages. */
#ifndef B2SC_CLIENT_INTERNAL_H
#define B2SC_CLIENT_INTERNAL_H

#include <zmq.h>

#include "b2stream_client.h"
#include "b2s_shm.h"
#include "b2s_wire.h"

/* A ZeroMQ message received and decoded: the header frame, the decoded
 * header (its strings borrow from hdr), the payload and the record frame
 * (version 2) when there are. */
typedef struct sc_msg {
  zmq_msg_t hdr, payload, record;
  bool has_payload, has_record;
  b2s_wire_msg m;
} sc_msg;

void sc_msg_close(sc_msg *x);

/* A producer's reusable message buffers (client_bufpool.c). */
typedef struct sc_bufpool sc_bufpool;
int sc_bufpool_new(sc_bufpool **out);
/* The producer lets go; the pool goes once ZeroMQ returned its buffers.
 * Accepts NULL. */
void sc_bufpool_release(sc_bufpool *bp);
/* msg: a message holding a copy of src[0..len) in a pooled buffer, which
 * returns to the pool when ZeroMQ closes the message. */
int sc_bufpool_msg(sc_bufpool *bp, const void *src, size_t len,
                   zmq_msg_t *msg);

/* A chunk pushed by the daemon and not yet returned by b2sc_next. */
typedef struct sc_pushed {
  struct sc_pushed *next;
  uint64_t index, committed;
  uint32_t nbytes, cbytes;
  zmq_msg_t payload;
  zmq_msg_t record;                  /* when the follow asked for records */
  bool has_record;
} sc_pushed;

/* The records frame of a NOTIFY (follow with records): count records of
 * chunks first.., checked on arrival; taken walks them. */
typedef struct sc_recs {
  struct sc_recs *next;
  uint64_t first;
  uint32_t count, taken;
  size_t off;                        /* byte offset of record `taken` */
  zmq_msg_t msg;
} sc_recs;

/* A record handed to the caller: its bytes, so that b2sc_record.user can
 * point into them until the next call on the consumer. */
typedef struct sc_rec_slot {
  uint8_t bytes[B2S_WIRE_REC_MAX];
  size_t len;                        /* 0: none */
} sc_rec_slot;

struct b2sc_producer {
  b2sc_session *s;
  b2sc_producer *next;               /* session list */
  uint32_t handle;
  int closed;                        /* 0, or why the daemon ended it */
  int64_t credits;                   /* available, reservations deducted */
  uint32_t max_buffer;
  uint8_t ack_level, policy;
  uint64_t next_id;                  /* buffers sent = next buffer id */
  uint64_t bytes;
  uint64_t upto[4];                  /* ACK upto per level 1..3 */
  uint64_t dropped, rejected;
  int status;                        /* first drop/rejection since flush */
  /* shared memory */
  b2s_shm *seg;
  uint32_t segment;
  sc_bufpool *bufs;                  /* b2sc_send's copies; made on first use */
};

struct b2sc_consumer {
  b2sc_session *s;
  b2sc_consumer *next;               /* session list */
  char stream[B2S_WIRE_NAME_MAX + 1];
  unsigned flags;
  uint32_t follow_id;
  int closed;                        /* 0, or why the daemon ended it */
  uint64_t pos;                      /* next index b2sc_next returns */
  uint64_t announced;                /* NOTIFY: indexes < this announced */
  uint64_t committed;                /* latest committed count heard */
  sc_pushed *head, *tail;            /* pushed chunks, in index order */
  sc_recs *recs_head, *recs_tail;    /* NOTIFY records not yet taken */
  sc_rec_slot cur_rec;               /* record of the chunk b2sc_next gave */
  uint64_t push_next;                /* index the next pushed CHUNK has */
  zmq_msg_t current;                 /* payload b2sc_next handed out */
  bool has_current;
  /* b2sc_read's kept chunk */
  zmq_msg_t cached;
  bool has_cached, cached_dec;
  uint64_t cached_index;
  sc_rec_slot cached_rec;            /* its record, when the READ asked */
};

/* What the session asks of a role (producer, consumer).  The session is
 * the role-free connection layer: it routes asynchronous messages and
 * ERRORs through the table each role registers when it makes its first
 * object (sc_session_role), so it never calls into a role's file. */
typedef struct sc_role {
  /* true when m is the daemon's answer to something sent before it
   * learnt the role's object had ended: the session then keeps its last
   * error as it is.  May be NULL. */
  bool (*error_stale)(b2sc_session *s, const b2s_wire_msg *m);
  /* An ERROR that may name one of the role's objects (ref_type says). */
  void (*error)(b2sc_session *s, const b2s_wire_msg *m);
  /* A message of the role's kinds (sc_session.c's route table). */
  void (*dispatch)(b2sc_session *s, sc_msg *x);
  /* Free every object of the role without talking to the daemon. */
  void (*free_all)(b2sc_session *s);
} sc_role;

enum { SC_ROLE_PRODUCER, SC_ROLE_CONSUMER, SC_ROLES };

struct b2sc_session {
  void *zctx, *sock;
  void *mon;                         /* CURVE: handshake events until WELCOME */
  int timeout_ms;                    /* request timeout */
  int dead;                          /* 0, or why the session ended */
  int version;                       /* protocol version: 2 until WELCOME
                                        says otherwise */
  uint32_t next_tag;
  int64_t last_send_ms;              /* for PING */
  /* WELCOME */
  char server[B2S_WIRE_NAME_MAX + 1];
  uint32_t session_id, max_buffer, daemon_timeout_ms;
  bool shm;
  /* last ERROR */
  char last_error[B2S_WIRE_TEXT_MAX + 1];
  int last_code;
  uint64_t last_ref_index;
  /* the request being waited for */
  uint32_t wait_tag;
  bool have_reply;
  sc_msg reply;
  b2sc_producer *producers;
  b2sc_consumer *consumers;
  const sc_role *role[SC_ROLES];     /* registered by the roles' files */
};

/* Monotonic milliseconds. */
int64_t sc_now_ms(void);

/* Deadline for timeout_ms from now: -1 for none. */
int64_t sc_deadline(int timeout_ms);

/* Encode m (tag as set) and send it, with payload msg when not NULL (the
 * payload is consumed on success).  0, B2S_E_CLOSED, B2S_E_TIMEOUT. */
int sc_send(b2sc_session *s, const b2s_wire_msg *m, zmq_msg_t *payload);

/* sc_send with a record frame after the payload (version 2), consumed on
 * success too; record may be NULL. */
int sc_send_rec(b2sc_session *s, const b2s_wire_msg *m, zmq_msg_t *payload,
                zmq_msg_t *record);

/* Read and dispatch messages until one arrived (1), the deadline passed
 * (0; deadline -1 = wait forever, 0 = only what is queued) or the session
 * failed (negative).  Sends PING when idle too long. */
int sc_pump(b2sc_session *s, int64_t deadline);

/* Send m as a request with a new tag and wait (request timeout) for the
 * direct reply, left in s->reply (caller calls sc_msg_close).  Returns 0,
 * the ERROR's code when the daemon answered with an ERROR, B2S_E_TIMEOUT,
 * B2S_E_CLOSED, or B2S_E_PROTO when the reply has an unexpected type. */
int sc_request(b2sc_session *s, b2s_wire_msg *m, int want_type,
               int64_t deadline);

/* sc_request with a payload frame (consumed when sent). */
int sc_request_payload(b2sc_session *s, b2s_wire_msg *m, zmq_msg_t *payload,
                       int want_type, int64_t deadline);

/* Copy wire string w into a NUL-terminated buffer of cap bytes. */
void sc_strcpy(char *dst, size_t cap, b2s_wire_str w);


/* Register role `which` on s (idempotent). */
void sc_session_role(b2sc_session *s, int which, const sc_role *role);

/* Handle queued messages, then wait until p has a credit: 0,
 * B2S_E_TIMEOUT, B2S_E_CLOSED (client_producer.c). */
int sc_producer_wait_credit(b2sc_producer *p, int64_t deadline);

/* The caller's record for sending on p: 0 and *out NULL without one, *out
 * = wrec with one; B2S_E_PROTO_VERSION on a version-1 session, B2S_E_ARG
 * for a record that breaks a rule (client_producer.c). */
int sc_producer_rec(const b2sc_producer *p, const b2sc_record *rec,
                    b2s_wire_rec *wrec, const b2s_wire_rec **out);

/* Unlink and free without talking to the daemon. */
void sc_producer_free(b2sc_producer *p);
void sc_consumer_free(b2sc_consumer *c);

/* Common checks on entry: 0, or the code why the object is unusable. */
int sc_session_usable(const b2sc_session *s);

/* ---- records and metadata payloads (client_record.c) ---- */

/* The caller's record as a producer may send it: B2S_E_ARG when it breaks
 * a rule (daemon-only fields, user part above B2S_WIRE_USER_MAX, a user map
 * that is not one msgpack map). */
int sc_rec_producer(const b2sc_record *in, b2s_wire_rec *out);

/* Encode rec into a new ZeroMQ message. */
int sc_rec_msg(const b2s_wire_rec *rec, zmq_msg_t *msg);

/* Check a record frame received (exactly one record) and keep a copy in
 * slot: 0 or B2S_E_PROTO. */
int sc_rec_keep(sc_rec_slot *slot, const void *frame, size_t len);

/* The record in slot for the caller (B2S_E_NOTFOUND when there is none). */
int sc_rec_give(const sc_rec_slot *slot, b2sc_record *out);

/* Whether a NOTIFY's records frame holds exactly count valid records. */
bool sc_recs_valid(const void *frame, size_t len, uint32_t count);

/* A copy of series metadata (one msgpack map of string keys, at most
 * B2S_WIRE_META_MAX bytes) in a new message: 0, B2S_E_ARG, B2S_E_NOMEM. */
int sc_meta_msg(const void *meta, size_t meta_len, zmq_msg_t *msg);

#endif

/* Sessions, handles and follows: the I/O thread's view of its clients
 * (PROTOCOL.md sections 4 and 5).  Only the I/O thread touches these. */
#ifndef B2SD_SESSION_H
#define B2SD_SESSION_H

#include "b2sd.h"
#include "wire.h"

#define B2SD_MAX_HANDLES 1024     /* per session */
#define B2SD_MAX_FOLLOWS 1024     /* per session */
#define B2SD_MAX_FLUSHES 64       /* pending FLUSHes per handle */

enum { ENTRY_QUEUED = 0, ENTRY_DROPPED = 1, ENTRY_REJECTED = 2 };

/* One buffer a handle sent and that is not yet settled at the stream's
 * ack_level.  Entries are contiguous in buffer id. */
typedef struct b2sd_entry {
  uint64_t seq;                /* ENTRY_QUEUED only */
  uint8_t state;
} b2sd_entry;

typedef struct b2sd_flush {
  uint32_t tag;
  uint64_t upto;               /* buffer ids below */
  uint64_t seq;                /* stream seqs below must be durable */
} b2sd_flush;

typedef struct b2sd_handle {
  struct b2sd_handle *next_s;  /* in the session */
  struct b2sd_handle *next_st; /* in the stream */
  struct b2sd_session *sess;
  b2sd_stream *st;
  uint32_t id;
  uint8_t ack_level, policy;   /* wire values, as in OPENED */
  uint64_t next_id;            /* next buffer id expected */
  uint64_t first_id;           /* buffer id of q[qhead] */
  b2sd_entry *q;               /* ring of unsettled entries */
  size_t qhead, qlen, qcap;
  size_t ncredited;            /* front entries whose credit came back */
  uint32_t avail;              /* credits the client may still use */
  uint32_t owed;               /* credits to return in the next ACK */
  uint64_t acked[4];           /* upto last sent per level */
  uint64_t dropped;            /* DROPPED sent */
  b2sd_flush flushes[B2SD_MAX_FLUSHES];
  int nflush;
  bool closing;
  uint32_t close_tag;
} b2sd_handle;

typedef struct b2sd_follow {
  struct b2sd_follow *next_s;
  struct b2sd_follow *next_st;
  struct b2sd_session *sess;
  b2sd_stream *st;
  uint32_t id;
  uint64_t next;               /* next chunk index to announce */
  uint16_t push;               /* 0 or a push flag of FOLLOW */
} b2sd_follow;

typedef struct b2sd_session {
  struct b2sd_session *next;
  int sock;                    /* index into srv->sockets */
  uint8_t rid[256];
  size_t rid_len;
  uint32_t id;
  char name[B2S_WIRE_NAME_MAX + 1];
  uint32_t pid;
  uint32_t timeout_ms;
  uint64_t last_ns;
  uint32_t next_handle, next_follow;
  int nhandles, nfollows;
  b2sd_handle *handles;
  b2sd_follow *follows;
  bool dead;                   /* peer unreachable: drop at the next sweep */
} b2sd_session;

/* Send one message (header + optional payload) to a session.  Returns 0,
 * -EAGAIN when the peer's queue is full, -EHOSTUNREACH when it is gone
 * (the session is then marked dead). */
int b2sd_send(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
              const void *payload, size_t plen);
/* ERROR about a message (ref_type/ref_id/ref_index, tag) with `code`. */
void b2sd_send_error(b2sd_server *srv, b2sd_session *s, uint32_t tag,
                     int code, uint16_t flags, uint8_t ref_type,
                     uint32_t ref_id, uint64_t ref_index, const char *text);

/* follow.c */
void b2sd_follow_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m);
void b2sd_unfollow_msg(b2sd_server *srv, b2sd_session *s,
                       const b2s_wire_msg *m);
void b2sd_read_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m);
/* Announce committed chunks to the stream's follows.  Returns true when
 * something is held back (peer queue full, push budget used). */
bool b2sd_follow_scan(b2sd_server *srv, b2sd_stream *st);
void b2sd_follow_remove(b2sd_follow *f);

#endif

/* Sessions, handles and follows: the I/O thread's view of its clients
 * (PROTOCOL.md sections 4 and 5).  The modules that serve them have their
 * own headers: ingest.h (handles.c, shm_ingest.c), follow.h and readers.h
 * (reads, b2sd_read).
 *
 * Ownership: the I/O thread owns every session, handle and follow and
 * frees them (server.c ends sessions; handles.c and follow.c free their
 * objects).  A session owns its handles and follows through its lists;
 * a stream lists the same handles and follows but does not own them.  A
 * b2sd_read belongs to whoever holds it in a list or queue (a session, a
 * follow, the readers), exactly one at a time. */
#ifndef B2SD_SESSION_H
#define B2SD_SESSION_H

#include "b2sd.h"
#include "ledger.h"
#include "readbudget.h"
#include "b2s_wire.h"

#include <string.h>

#define B2SD_MAX_HANDLES 1024     /* per session */
#define B2SD_MAX_FOLLOWS 1024     /* per session */
#define B2SD_MAX_FLUSHES 64       /* pending FLUSHes per handle */
/* A limit as text, for the ERROR messages that name it. */
#define B2SD_STR_(x) #x
#define B2SD_STR(x) B2SD_STR_(x)

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
  b2sd_ledger lg;              /* buffers, credits, ACKs due (ledger.h) */
  uint64_t dropped;            /* DROPPED sent */
  b2sd_flush flushes[B2SD_MAX_FLUSHES];
  int nflush;
  bool closing;
  uint32_t close_tag;
  uint64_t close_upto;         /* buffers sent before the CLOSE (CLOSED.upto) */
  struct b2sd_seg *seg;        /* shared-memory segment, or NULL */
  int64_t chunk_bytes;         /* b2nd or distributed stream: the size of
                                  every buffer */
} b2sd_handle;

typedef struct b2sd_follow {
  struct b2sd_follow *next_s;
  struct b2sd_follow *next_st;
  struct b2sd_session *sess;
  b2sd_stream *st;
  uint32_t id;
  uint64_t next;               /* next chunk index to announce */
  uint16_t push;               /* 0 or a push flag of FOLLOW */
  bool records;                /* FOLLOW records (v2): deliver records */
  /* push follows (readers.c): chunks below req were handed to the
   * readers; ready holds their results sorted by index until sent */
  uint64_t req;
  int nreads;                  /* reads issued and not yet sent or freed */
  struct b2sd_read *ready;
} b2sd_follow;

typedef struct b2sd_session {
  struct b2sd_session *next;
  int sock;                    /* index into srv->sockets */
  int fd;                      /* descriptor of its connection (peers.h) */
  uint8_t rid[256];
  size_t rid_len;
  uint32_t id;
  uint8_t version;             /* protocol version of the session (WELCOME's):
                                  every message both ways is in it; 0
                                  before HELLO, taken as version 1 */
  char name[B2S_WIRE_NAME_MAX + 1];
  uint32_t pid;
  uint32_t timeout_ms;
  uint64_t last_ns;
  uint32_t next_handle, next_follow;
  int nhandles, nfollows;
  b2sd_handle *handles;
  b2sd_follow *follows;
  bool dead;                   /* peer unreachable: drop at the next sweep */
  bool shm;                    /* shared memory offered (ipc:// peer) */
  /* READ and pushed chunks (readers.c) */
  int nreads;                  /* reads issued and not yet sent or freed */
  struct b2sd_read *rd_wait, *rd_wait_tail; /* READs not yet issued */
  int nwait;
  bool rd_refusing;            /* READs refused since the last accepted */
  struct b2sd_read *rd_out, *rd_out_tail;   /* READ replies held back */
  struct b2sd_read *rd_sized;  /* sized, awaiting bytes, sorted by seq */
  uint64_t rd_seq, rd_adm_seq; /* next seq to issue, to admit */
  struct b2sd_racct *rd_acct;  /* result bytes the session holds */
} b2sd_session;

/* A wire string as a C string (B2S_E_STREAM_NAME when it does not fit). */
static inline int b2sd_cstr_copy(char *dst, size_t cap, b2s_wire_str s) {
  if (s.len >= cap)
    return B2S_E_STREAM_NAME;
  if (s.len)                   /* an empty string may have no pointer */
    memcpy(dst, s.ptr, s.len);
  dst[s.len] = '\0';
  return 0;
}

/* The session's handle or follow of that id, or NULL. */
static inline b2sd_handle *b2sd_handle_find(b2sd_session *s, uint32_t id) {
  for (b2sd_handle *h = s->handles; h; h = h->next_s)
    if (h->id == id)
      return h;
  return NULL;
}

static inline b2sd_follow *b2sd_follow_find(b2sd_session *s, uint32_t id) {
  for (b2sd_follow *f = s->follows; f; f = f->next_s)
    if (f->id == id)
      return f;
  return NULL;
}

/* Whether the session speaks protocol version 2 (records, metadata). */
static inline bool b2sd_session_v2(const b2sd_session *s) {
  return s->version >= 2;
}

#endif

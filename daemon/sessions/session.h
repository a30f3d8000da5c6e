/* Sessions, handles, follows and reads: the I/O thread's view of its
 * clients (PROTOCOL.md sections 4 and 5), and the entry points of the
 * modules that serve them (handles.c, shm_ingest.c, follow.c,
 * readers.c).
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

/* handles.c: producer handles */
/* Free a handle (its segment, if any, is reclaimed). */
void b2sd_handle_free(b2sd_handle *h);
/* Credits, ACKs, FLUSHED, CLOSED for the progress published by workers and
 * writer.  Returns false when the handle was closed and freed. */
bool b2sd_handle_progress(b2sd_server *srv, b2sd_handle *h, uint64_t taken,
                          uint64_t written, uint64_t durable, bool memory_ok);
/* ERROR with closed_ref about the handle, then free it. */
void b2sd_handle_close_ref(b2sd_server *srv, b2sd_handle *h, uint32_t tag,
                           int code, uint8_t type, uint64_t index);
/* payload: OPEN's metadata frame (version 2), or NULL. */
void b2sd_open_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   zmq_msg_t *payload);
/* META (version 2): merge into the stream's series map, META_OK. */
void b2sd_meta_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   zmq_msg_t *payload);
/* payload and rec: the buffer and record frames that came, or NULL. */
void b2sd_data_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   zmq_msg_t *payload, zmq_msg_t *rec);
void b2sd_flush_close_msg(b2sd_server *srv, b2sd_session *s,
                          const b2s_wire_msg *m);

/* Where an accepted buffer's bytes are: a DATA payload (moved into the job)
 * or a TAKEN slot of a segment. */
typedef struct b2sd_bufsrc {
  zmq_msg_t *msg;
  struct b2sd_seg *seg;
  uint32_t slot;
  const void *data;
  size_t len;
  b2sd_rec rec;                /* the producer's record; moves to the job */
} b2sd_bufsrc;

/* The record of a buffer message: with the message's record flag, frame
 * must be one valid producer record (copied into *out); without it, no
 * frame may come.  0 or B2S_E_PROTO / B2S_E_NOMEM (a per-buffer error). */
int b2sd_rec_take(bool flagged, zmq_msg_t *frame,
                  b2sd_rec *out);

b2sd_handle *b2sd_buffer_admit(b2sd_server *srv, b2sd_session *s,
                               const b2s_wire_msg *m, uint32_t handle,
                               uint64_t id);
/* why: the ERROR's text, NULL for the code's own. */
void b2sd_buffer_reject(b2sd_server *srv, b2sd_handle *h,
                        const b2s_wire_msg *m, uint64_t id, int code,
                        const char *why);
/* gaps: fill: a buffer of len bytes that does not reach the frame
 * (flags: B2S_RECORD_DROPPED or _REJECTED) leaves a placeholder chunk with
 * its record (taken from *rec) at the stream's next seq.  Otherwise, or
 * for len 0, nothing; *rec is cleared either way. */
void b2sd_gap_put(b2sd_handle *h, uint32_t flags, size_t len, b2sd_rec *rec);
/* 0, or why the buffer's frame number is refused: order: frame_number
 * (no frame number: B2S_E_ARG; late, duplicate: order.h); a distributed
 * stream (rank.h: B2S_E_NEED_FRAME, B2S_E_WRONG_RANK naming the owner and
 * its endpoint, in ed).  ed's text is "" when the code says enough. */
int b2sd_frame_check(b2sd_server *srv, b2sd_handle *h, const b2sd_rec *rec,
                     b2s_errdetail *ed);
/* A distributed stream's buffers its writer could not store (the frame
 * number was taken in the store): each producer gets a per-buffer ERROR
 * B2S_E_OBJ_CONFLICT and no acknowledgement above received for it.  Call
 * after b2sd_progress_load, before the handles' progress. */
void b2sd_dist_conflicts(b2sd_server *srv, b2sd_stream *st);
/* A distributed stream whose last producer went away without CLOSE gets
 * its END this long after (unless a producer opens it meanwhile): the
 * committer can then close the frame. */
#define B2SD_GONE_END_MS 10000
void b2sd_dist_gone_tick(b2sd_stream *st);
/* END for a distributed stream's last CLOSE, unless a producer sent
 * frames of other ranks since the last END (then the flag is cleared and
 * the next one ends). */
void b2sd_misrouted_end(b2sd_stream *st);
/* Whether a buffer refused with code keeps its place (b2sd_gap_put): one
 * refused for what it is, not for how it was sent. */
bool b2sd_leaves_gap(int code);
/* A b2nd stream takes only buffers of exactly one chunk (chunkshape x
 * typesize); any other size is rejected here per buffer with
 * B2S_E_CHUNK_SIZE.  Returns false when the buffer was rejected. */
bool b2sd_buffer_size_ok(b2sd_server *srv, b2sd_handle *h,
                         const b2s_wire_msg *m, uint64_t id, size_t len);
/* Queue the buffer for a worker, or drop it per the stream's policy. */
void b2sd_buffer_accept(b2sd_server *srv, b2sd_handle *h,
                        const b2s_wire_msg *m, uint64_t id, b2sd_bufsrc *b);

/* shm_ingest.c: SHM_ATTACH and SHM_SUBMIT of producer handles */
void b2sd_shm_attach_msg(b2sd_server *srv, b2sd_session *s,
                         const b2s_wire_msg *m);
void b2sd_shm_submit_msg(b2sd_server *srv, b2sd_session *s,
                         const b2s_wire_msg *m, zmq_msg_t *rec);

/* readers.c: chunks are read (and decompressed) by reader threads, never
 * by the I/O thread.  A read is issued only for a committed chunk and
 * within the bounds of readbudget.h; its result comes back through a queue and a
 * b2sd_wake, and the I/O thread sends it.  A read whose session or follow
 * ended meanwhile is discarded when it comes back. */

typedef struct b2sd_read {
  struct b2sd_read *next;      /* in exactly one queue or list at a time */
  /* the request, fixed before it is issued */
  b2sd_stream *st;
  uint64_t index;
  bool decompress, push;
  bool record;                 /* the CHUNK carries the chunk's record */
  uint32_t nrecs;              /* > 0: no chunk bytes, the records of chunks
                                * index .. index + nrecs - 1 for a NOTIFY */
  uint32_t tag, session_id, follow_id;
  /* set by the I/O thread before it hands the read to a reader */
  uint64_t seq;                /* issue order within the session */
  bool admitted;               /* false: look up the sizes; true: the bytes
                                * are reserved and buf allocated, fill it */
  /* the result, written by a reader thread before it hands the read back */
  int rc;                      /* payload length, or a negative error */
  int32_t nbytes, cbytes;
  uint8_t *buf;                /* payload (readers.c allocates and frees it) */
  uint8_t *rec;                /* record frame(s), malloc'd by the reader */
  size_t rec_len;
} b2sd_read;

/* Collect the reads that came back (send READ replies, file pushed chunks
 * with their follows), retry held replies, issue waiting READs.  Returns
 * true when something waits for a peer's queue (retry soon). */
bool b2sd_reads_turn(b2sd_server *srv);
/* Queue a validated READ of session s (B2S_E_BUSY when too many wait). */
int b2sd_reads_request(b2sd_server *srv, b2sd_session *s, b2sd_read *r);
/* Whether the bounds let session s issue one more read. */
bool b2sd_reads_headroom(b2sd_server *srv, const b2sd_session *s);
/* Hand r to the reader threads (ownership moves; b2sd_reads_headroom said
 * yes). */
void b2sd_reads_issue(b2sd_server *srv, b2sd_session *s, b2sd_read *r);
/* A read is finished with: free it and give its place back (s: its
 * session, or NULL when that is gone). */
void b2sd_read_release(b2sd_server *srv, b2sd_session *s, b2sd_read *r);
/* The session ends: its waiting READs and held replies go. */
void b2sd_reads_session_end(b2sd_server *srv, b2sd_session *s);
/* The CHUNK answering r (a READ reply, or pushed when r->push) with r's
 * payload, which moves to ZeroMQ on success (no copy), and its record
 * when r->record. */
int b2sd_send_chunk(b2sd_server *srv, b2sd_session *s,
                    b2sd_read *r);

/* follow.c */
void b2sd_follow_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m);
void b2sd_unfollow_msg(b2sd_server *srv, b2sd_session *s,
                       const b2s_wire_msg *m);
void b2sd_read_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m);
/* Announce committed chunks to the stream's follows.  Returns true when
 * something is held back (peer queue full, push budget used). */
bool b2sd_follow_scan(b2sd_server *srv, b2sd_stream *st);
void b2sd_follow_remove(b2sd_follow *f);
/* Whether the session speaks protocol version 2 (records, metadata). */
static inline bool b2sd_session_v2(const b2sd_session *s) {
  return s->version >= 2;
}

#endif

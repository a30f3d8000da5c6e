/* b2stream client library: producers and consumers of b2streamd streams.
 *
 * A *session* is one ZeroMQ connection to the daemon (b2sc_connect).  On a
 * session a program opens *producers* (one per stream it writes; buffers go
 * over the socket or through shared-memory slots) and *consumers* (one per
 * stream it follows).  docs/PROTOCOL.md is the wire protocol underneath;
 * this library speaks it so callers never see a message.
 *
 *   b2sc_session *s;  b2sc_producer *p;
 *   b2sc_connect(NULL, "camera", &s);           NULL: b2sc_default_endpoint
 *   b2sc_producer_open(s, "detector1", NULL, &p);
 *   b2sc_send(p, image, image_len, 1000);       waits up to 1 s for credit
 *   b2sc_flush(p, 10000);                        everything durable
 *   b2sc_producer_close(p);  b2sc_close(s);
 *
 * Errors.  Every function returning int returns 0 (or a count) on success
 * and a negative code on failure: a b2stream code (B2S_E_*, b2s_errors.h,
 * the table of docs/PROTOCOL.md section 6.3) or a negated errno.  Codes the
 * daemon sends in an ERROR are returned unchanged, and its message text is
 * kept for b2sc_last_error().  Codes of the library itself: B2S_E_TIMEOUT
 * (a wait ran out), B2S_E_DROPPED (b2sc_flush: a buffer was dropped by the
 * stream's backpressure policy), B2S_E_CLOSED (the daemon ended the handle,
 * follow or session), B2S_E_PROTO (the daemon sent something the protocol
 * does not allow), B2S_E_ARG, B2S_E_NOMEM.  b2sc_strerror() gives the text.
 *
 * Threads.  A session and every producer and consumer opened on it belong
 * to one thread at a time: calls on them must not overlap.  Use one session
 * per thread to produce or consume from several threads.  The only call
 * made from another thread is a b2sc_send_zc free function (see there).
 *
 * Ownership.  b2sc_close() ends the session and frees every producer and
 * consumer still open on it, so close those first to see their results.
 * The close functions accept NULL and always free, even when they report
 * an error.  Pointers returned by accessors stay valid until the next call
 * on the same object.
 *
 * Timeouts.  timeout_ms < 0 waits without limit, 0 does not wait.  Calls
 * without a timeout argument (open, close, follow, read, stats, ...) wait
 * for the daemon's answer up to the session's request timeout
 * (b2sc_set_timeout, default B2SC_DEFAULT_TIMEOUT_MS).  While the library
 * waits it sends PING when the daemon asked for liveness (WELCOME
 * timeout_ms); a program idle outside the library calls b2sc_ping().
 *
 * Protocol versions.  b2sc_connect asks for protocol version 2 and falls
 * back to version 1 with a daemon that speaks only that; every call of
 * version 1 behaves the same in both.  Records (b2sc_send_rec, ...,
 * b2sc_next_rec) and series metadata (b2sc_producer_set_meta, ...) need
 * version 2 (b2sc_protocol_version). */
#ifndef B2STREAM_CLIENT_H
#define B2STREAM_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define B2SC_VERSION "0.1.0"
#define B2SC_DEFAULT_TIMEOUT_MS 5000
/* Environment variable naming the daemon's endpoint. */
#define B2SC_ENDPOINT_ENV "B2STREAM_ENDPOINT"
#define B2SC_SOCKET_NAME "b2streamd.sock"

typedef struct b2sc_session b2sc_session;
typedef struct b2sc_producer b2sc_producer;
typedef struct b2sc_consumer b2sc_consumer;

/* ---- errors ---------------------------------------------------------- */

/* Message for any return value of this library; never NULL. */
const char *b2sc_strerror(int code);

/* The message of the last ERROR the daemon sent on this session ("" when
 * none), e.g. "no stream 'x'".  b2sc_last_error_code() gives its code. */
const char *b2sc_last_error(const b2sc_session *s);
int b2sc_last_error_code(const b2sc_session *s);

/* ---- session ------------------------------------------------------------ */

/* The endpoint b2streamd listens on by default, as its shipped
 * configuration places it (listen: ipc://b2streamd.sock inside run_dir):
 * $B2STREAM_ENDPOINT when set, else ipc://$RUNTIME_DIRECTORY/b2streamd.sock
 * when that is set (the daemon's run_dir under systemd), else
 * ipc://run/b2streamd.sock (run/ in the current directory: a daemon started
 * with a configuration file in this directory).  Returns the length, or
 * B2S_E_DEST_SMALL. */
int b2sc_default_endpoint(char *buf, size_t cap);

/* Roles announced in HELLO (for the daemon's logs and statistics). */
enum {
  B2SC_ROLE_PRODUCER = 0x1,
  B2SC_ROLE_CONSUMER = 0x2,
};

/* CurveZMQ keys are 40 characters of Z85 text (32 bytes). */
#define B2SC_CURVE_KEY_LEN 40

typedef struct b2sc_options {
  const char *client_name;  /* shown in the daemon's logs; NULL = "" */
  unsigned roles;           /* B2SC_ROLE_*; 0 for a statistics-only client */
  int timeout_ms;           /* request timeout, also for the handshake;
                               0 = B2SC_DEFAULT_TIMEOUT_MS */
  /* CurveZMQ, for a tcp:// endpoint of a daemon configured with curve:
   * (docs/PROTOCOL.md 1.1): the connection is encrypted and the daemon
   * admits this client only if its public key is authorized.  Z85 keys;
   * NULL server key: no CURVE.  With a server key the secret key is
   * required; a NULL public key is derived from the secret key. */
  const char *curve_server_key;  /* the daemon's public key */
  const char *curve_secret_key;  /* this client's secret key */
  const char *curve_public_key;  /* this client's public key, or NULL */
} b2sc_options;

/* Read a Z85 key from the file at path: the first line that is neither
 * blank nor a '#' comment (the format b2streamd reads).  key receives it
 * NUL-terminated.  -errno when the file cannot be read, B2S_E_ARG when it
 * holds no valid key. */
int b2sc_curve_key_read(const char *path, char key[B2SC_CURVE_KEY_LEN + 1]);

/* Connect to endpoint ("ipc://PATH" or "tcp://HOST:PORT"; NULL for the
 * default endpoint) and say HELLO.  Returns 0 once the daemon answered
 * WELCOME; -ENOENT when an ipc:// socket file does not exist, -EACCES
 * when this user may not open it (or reach its directory); B2S_E_TIMEOUT
 * when nothing answered within the timeout; B2S_E_PROTO_VERSION or
 * B2S_E_AUTH when the daemon refused (no session is made, so only the code
 * tells).  With CURVE keys, B2S_E_AUTH also when the CurveZMQ handshake
 * failed: this client's key is not authorized, the server key is wrong,
 * or the endpoint does not speak CURVE; B2S_E_ARG for a malformed key;
 * -EOPNOTSUPP when libzmq was built without CURVE.  opts may be NULL (both
 * roles, default timeout, no CURVE). */
int b2sc_connect_opts(const char *endpoint, const b2sc_options *opts,
                      b2sc_session **out);

/* b2sc_connect_opts with both roles and the default timeout. */
int b2sc_connect(const char *endpoint, const char *client_name,
                 b2sc_session **out);

/* Say BYE and close the socket (waiting at most 1 s to deliver BYE); frees
 * every producer and consumer still open.  Accepts NULL. */
void b2sc_close(b2sc_session *s);

/* Request timeout for calls without a timeout argument (ms, > 0). */
int b2sc_set_timeout(b2sc_session *s, int timeout_ms);

/* What the daemon said in WELCOME. */
typedef struct b2sc_session_info {
  const char *server;       /* e.g. "b2streamd 0.1.0" */
  uint32_t session_id;
  uint32_t max_buffer;      /* largest buffer any stream accepts */
  uint32_t timeout_ms;      /* the daemon ends a session silent this long;
                               0 = never */
  bool shm;                 /* shared-memory ingest offered */
} b2sc_session_info;

int b2sc_session_info_get(const b2sc_session *s, b2sc_session_info *info);

/* The protocol version of the session: 2, or 1 with a daemon that speaks
 * only version 1 (b2sc_connect tries 2 and falls back).  Records and series
 * metadata need 2: without it their functions return B2S_E_PROTO_VERSION.
 * B2S_E_ARG for NULL. */
int b2sc_protocol_version(const b2sc_session *s);

/* PING and wait for PONG.  Returns the round trip in microseconds (capped
 * at INT32_MAX), B2S_E_TIMEOUT, or B2S_E_CLOSED. */
int b2sc_ping(b2sc_session *s, int timeout_ms);

/* Statistics as one JSON object (docs/PROTOCOL.md 3.24): the whole daemon
 * when stream is NULL or "", else that stream (B2S_E_NOSTREAM).  *json is
 * malloc'ed and NUL-terminated, *len its length without the NUL (len may be
 * NULL); the caller frees it. */
int b2sc_stats(b2sc_session *s, const char *stream, char **json,
               size_t *len);

/* ---- producer ------------------------------------------------------------ */

/* Open stream for writing.  tmpl names a daemon template to create the
 * stream from when it does not exist (NULL: the stream must exist,
 * B2S_E_NOSTREAM).  Other failures: B2S_E_STREAM_NAME, B2S_E_NOTEMPLATE,
 * B2S_E_CONFIG, B2S_E_BUSY, frame codes when the frame is damaged. */
int b2sc_producer_open(b2sc_session *s, const char *stream, const char *tmpl,
                       b2sc_producer **out);

/* Send one buffer (it becomes one chunk).  On a b2nd stream a buffer is
 * one chunk's items in C order of its chunkshape (an image as it lies in
 * memory), whatever the stream's blockshape: the daemon stores them block
 * after block (docs/PROTOCOL.md 3.5); a buffer of another size is refused
 * (B2S_E_CHUNK_SIZE, reported by b2sc_flush).  The bytes are copied before
 * the call returns.  Waits up to timeout_ms for credit when the daemon withholds
 * it (policy block): B2S_E_TIMEOUT, nothing sent.  B2S_E_OVERSIZE when len
 * exceeds the stream's max_buffer, B2S_E_ARG when len is 0, B2S_E_CLOSED
 * when the daemon closed the handle, or the code it closed it for when it
 * gave one (-EFBIG file too large, -ENOSPC, -EIO: the stream failed to
 * write; b2sc_last_error says more).  Later calls on the handle return the
 * same code.  Drops and
 * per-buffer rejections arrive later: b2sc_flush reports them, the counters
 * count them. */
int b2sc_send(b2sc_producer *p, const void *buf, size_t len, int timeout_ms);

/* Called with (buf, hint) once the library no longer needs buf. */
typedef void b2sc_free_fn(void *buf, void *hint);

/* Send buf without copying it.  On success buf belongs to the library until
 * free_fn(buf, hint) is called, from a ZeroMQ I/O thread, after the bytes
 * went out (free_fn may be NULL for a buffer that outlives the session).
 * Does not wait for credit: B2S_E_BUSY when none is available (wait with
 * b2sc_wait_credit).  On failure buf stays the caller's and free_fn is not
 * called.  Otherwise as b2sc_send. */
int b2sc_send_zc(b2sc_producer *p, void *buf, size_t len,
                 b2sc_free_fn *free_fn, void *hint);

/* Wait until at least one credit is available (0) or timeout_ms passes
 * (B2S_E_TIMEOUT).  Returns the credits available when positive. */
int b2sc_wait_credit(b2sc_producer *p, int timeout_ms);

/* Make everything sent so far durable (committed and fsynced, whatever the
 * stream's ack level) and wait for the daemon to confirm.  Returns 0 when
 * every buffer sent since the previous flush is in the frame;
 * B2S_E_DROPPED when at least one of them was dropped by the stream's
 * backpressure policy; the daemon's code (e.g. B2S_E_OVERSIZE) when one was
 * rejected; B2S_E_TIMEOUT.  The counters give the totals. */
int b2sc_flush(b2sc_producer *p, int timeout_ms);

typedef struct b2sc_producer_stats {
  uint64_t sent;            /* buffers sent (socket and shared memory) */
  uint64_t bytes;           /* their bytes */
  uint64_t received;        /* buffers settled at level received */
  uint64_t written;         /* ... committed and visible to readers */
  uint64_t durable;         /* ... fsynced */
  uint64_t acked;           /* ... at the stream's ack level */
  uint64_t dropped;         /* buffers dropped (DROPPED messages) */
  uint64_t rejected;        /* buffers the daemon refused (ERROR) */
  uint32_t credits;         /* buffers that may be sent now */
  uint32_t max_buffer;      /* the stream's largest buffer */
  uint8_t ack_level;        /* 1 received, 2 written, 3 durable */
  uint8_t policy;           /* 1 block, 2 drop-newest, 3 drop-oldest */
} b2sc_producer_stats;

/* "Settled" counts follow the protocol: a dropped or rejected buffer
 * counts as settled at every level, so acked - dropped - rejected is what
 * reached the stream's ack level (when no drop is still in flight). */
int b2sc_producer_stats_get(const b2sc_producer *p, b2sc_producer_stats *st);

/* CLOSE the handle and wait (request timeout) until every buffer reached
 * the stream's ack level.  Returns as b2sc_flush for the buffers sent since
 * the last flush.  Always frees p.  Accepts NULL. */
int b2sc_producer_close(b2sc_producer *p);

/* ---- records and series metadata (protocol version 2) ------------------- */

/* A record: what a producer says about one buffer (frame number,
 * timestamp, a user part of at most B2SC_USER_MAX bytes) and what the
 * daemon adds to the stored chunk (checksum, flags).  A field counts only
 * when its bit is in present; fields not present must be 0 when sent.
 * The user part is opaque bytes, or with B2SC_REC_USER_MAP one msgpack map
 * (stored as that map, read back as a dict by python).  docs/PROTOCOL.md
 * section 2.4 has the wire format. */
#define B2SC_USER_MAX 4096
enum {                                   /* present */
  B2SC_REC_FRAME = 0x1,                  /* frame given */
  B2SC_REC_TS = 0x2,                     /* ts_ns given */
  B2SC_REC_XXH64 = 0x4,                  /* xxh64 given (daemon only) */
  B2SC_REC_USER_MAP = 0x8,               /* user is one msgpack map */
};
enum {                                   /* flags (daemon only) */
  B2SC_REC_GAP = 0x1,                    /* placeholder chunk, no data */
  B2SC_REC_DROPPED = 0x2,                /* the buffer was dropped */
  B2SC_REC_REJECTED = 0x4,               /* the buffer was rejected */
};

typedef struct b2sc_record {
  unsigned present;                      /* B2SC_REC_FRAME | ... */
  unsigned flags;                        /* B2SC_REC_GAP | ...; 0 to send */
  uint64_t frame;                        /* producer's frame number */
  int64_t ts_ns;                         /* ns since 1970 */
  uint64_t xxh64;                        /* XXH64 of the chunk as stored */
  const void *user;                      /* user_len bytes, or NULL */
  size_t user_len;                       /* 0 = no user part */
} b2sc_record;

/* b2sc_send with a record (NULL: exactly b2sc_send).  B2S_E_ARG when rec
 * breaks a rule above (daemon fields set, user part too long, a user map
 * that is not one well-formed msgpack map); B2S_E_PROTO_VERSION on a
 * version-1 session.  The daemon may refuse the buffer later for its frame
 * number (streams ordered by frame number): B2S_E_FRAME_LATE,
 * B2S_E_FRAME_DUP, reported like any rejection (b2sc_flush). */
int b2sc_send_rec(b2sc_producer *p, const void *buf, size_t len,
                  const b2sc_record *rec, int timeout_ms);

/* b2sc_send_zc with a record (NULL: exactly b2sc_send_zc): the buffer goes
 * out without a copy, the record (small) is copied.  rec as for
 * b2sc_send_rec; on any failure buf stays the caller's. */
int b2sc_send_zc_rec(b2sc_producer *p, void *buf, size_t len,
                     const b2sc_record *rec, b2sc_free_fn *free_fn,
                     void *hint);

/* b2sc_producer_open with initial series metadata: meta is one msgpack map of
 * string keys (meta_len bytes, at most 256 KiB), merged into the stream's
 * metadata after it is opened (over its template's defaults); a nil value
 * deletes a key.  NULL meta: exactly b2sc_producer_open.  B2S_E_ARG for a
 * map that is not well formed; the daemon's limit codes for one it
 * refuses (no handle is made then). */
int b2sc_producer_open_meta(b2sc_session *s, const char *stream,
                            const char *tmpl, const void *meta,
                            size_t meta_len, b2sc_producer **out);

/* Merge a msgpack map of string keys into the stream's series metadata
 * (a nil value deletes the key) and wait (request timeout) until the
 * daemon applied it; it is in the frame from the next commit on (b2sc_flush
 * to make it durable).  Errors as b2sc_producer_open_meta; nothing
 * changes on error. */
int b2sc_producer_set_meta(b2sc_producer *p, const void *meta,
                           size_t meta_len);

/* Set one key to a string value, or delete it when value is NULL: a map
 * of one entry for b2sc_producer_set_meta. */
int b2sc_producer_set_meta_str(b2sc_producer *p, const char *key,
                               const char *value);

/* ---- shared-memory producer ------------------------------------------------ */

/* Ask the daemon for a segment of nslots slots of slot_size bytes and map
 * it.  -EOPNOTSUPP when the daemon offers no shared memory, B2S_E_BUSY when
 * the producer has a segment already; the daemon may grant fewer slots (at
 * most its shm.slots, fewer when its memory limit is near). */
int b2sc_shm_attach(b2sc_producer *p, uint32_t nslots, size_t slot_size);

/* Wait up to timeout_ms for a credit and a free slot, and reserve both.
 * *slot gets its index, *ptr its first byte, *cap its size (ptr and cap
 * may be NULL).  Fill the slot, then b2sc_shm_submit (or b2sc_shm_cancel).
 * B2S_E_TIMEOUT, B2S_E_ARG without a segment, B2S_E_CLOSED. */
int b2sc_shm_acquire(b2sc_producer *p, int timeout_ms, uint32_t *slot,
                     void **ptr, size_t *cap);

/* Hand the filled slot (len bytes, 1..cap; on a b2nd stream one chunk's
 * items in C order, as for b2sc_send) to the daemon, which compresses
 * straight from it and frees the slot itself.  B2S_E_OVERSIZE (the slot
 * stays reserved), B2S_E_SHM_STATE when the slot was not acquired. */
int b2sc_shm_submit(b2sc_producer *p, uint32_t slot, size_t len);

/* b2sc_shm_submit with a record (NULL: exactly b2sc_shm_submit); rec as for
 * b2sc_send_rec (B2S_E_ARG leaves the slot reserved). */
int b2sc_shm_submit_rec(b2sc_producer *p, uint32_t slot, size_t len,
                        const b2sc_record *rec);

/* Give back an acquired slot and its credit without sending it. */
int b2sc_shm_cancel(b2sc_producer *p, uint32_t slot);

/* ---- consumer ------------------------------------------------------------- */

/* What a follow delivers (one of). */
enum {
  B2SC_FOLLOW_NOTIFY = 0x0,        /* indexes only; read the frame locally
                                      or with b2sc_read */
  B2SC_FOLLOW_PUSH_COMPRESSED = 0x4,   /* each chunk as stored */
  B2SC_FOLLOW_PUSH_DECOMPRESSED = 0x8, /* each chunk decompressed */
  B2SC_FOLLOW_FROM_END = 0x2,      /* or'ed in: start after the last
                                      committed chunk (from_index 0) */
  B2SC_FOLLOW_RECORDS = 0x10,      /* or'ed in: deliver each chunk's record
                                      (b2sc_next_rec); protocol version 2,
                                      else B2S_E_PROTO_VERSION */
};

/* Follow stream from chunk from_index (0 = the beginning).  Every chunk
 * committed from there on is delivered by b2sc_next exactly once, in
 * order.  B2S_E_NOSTREAM, B2S_E_STREAM_NAME, B2S_E_NCHUNK when from_index
 * is beyond the committed chunks, B2S_E_ARG for bad flags. */
int b2sc_follow(b2sc_session *s, const char *stream, uint64_t from_index,
                unsigned flags, b2sc_consumer **out);

typedef struct b2sc_chunk_info {
  uint64_t index;           /* chunk index in the stream's frame */
  uint64_t committed;       /* chunks committed when it was announced */
  uint32_t nbytes;          /* decompressed size; 0 = unknown (notify) */
  uint32_t cbytes;          /* stored size; 0 = unknown (notify) */
  const void *data;         /* pushed modes: the chunk (as stored or
                               decompressed, per the follow's flags), valid
                               until the next call on the consumer; NULL in
                               notify mode */
  size_t len;               /* bytes at data */
} b2sc_chunk_info;

/* The next committed chunk.  Blocks on the socket (no polling) up to
 * timeout_ms: B2S_E_TIMEOUT when no chunk was committed meanwhile.  Once
 * every chunk delivered before the daemon ended the follow was returned:
 * the daemon's code (B2S_E_CLOSED when the stream was removed, -EIO, ...;
 * b2sc_last_error says why), B2S_E_CLOSED when the session ended, or
 * B2S_E_PROTO when the daemon skipped or repeated an index. */
int b2sc_next(b2sc_consumer *c, int timeout_ms, b2sc_chunk_info *info);

/* b2sc_next that also gives the chunk's record in *rec (may be NULL) for a
 * follow with B2SC_FOLLOW_RECORDS; rec->user stays valid until the next
 * call on the consumer.  Without that flag *rec gets present 0.  A record
 * the daemon sends malformed, or a missing one, ends the follow with
 * B2S_E_PROTO. */
int b2sc_next_rec(b2sc_consumer *c, int timeout_ms, b2sc_chunk_info *info,
                  b2sc_record *rec);

/* Read chunk index of the followed stream through the daemon, as stored or
 * decompressed (a b2nd chunk's items as the frame holds them: block after
 * block, docs/PROTOCOL.md 3.20), into buf.  Returns the chunk's length; when that is more
 * than cap nothing is copied and the chunk is kept, so calling again with a
 * large enough buffer (same index and mode) does not ask the daemon again;
 * buf may be NULL with cap 0 to learn the length.  B2S_E_NCHUNK when the
 * chunk is not committed yet. */
int b2sc_read(b2sc_consumer *c, uint64_t index, bool decompressed, void *buf,
              size_t cap);

/* b2sc_read that also gives the chunk's record in *rec (rec NULL: exactly
 * b2sc_read).  Protocol version 2, else B2S_E_PROTO_VERSION.  rec->user
 * stays valid until the next call on the consumer. */
int b2sc_read_rec(b2sc_consumer *c, uint64_t index, bool decompressed,
                  void *buf, size_t cap, b2sc_record *rec);

/* Deliver from chunk index on (earlier or later than now): re-follows with
 * the same flags; chunks announced but not yet returned are forgotten. */
int b2sc_seek(b2sc_consumer *c, uint64_t index);

/* Index of the chunk the next b2sc_next returns. */
uint64_t b2sc_position(const b2sc_consumer *c);

/* End the follow and free c.  Accepts NULL. */
int b2sc_unfollow(b2sc_consumer *c);

/* ---- cluster producer (distributed streams) ------------------------------ */

/* A distributed stream (format: distributed, docs/DISTRIBUTED.md) is
 * written by N daemons, its ranks; frame number f belongs to rank
 * (f / frames_per_block) % N, and a rank refuses a buffer of another rank's
 * frame with the per-buffer ERROR B2S_E_WRONG_RANK (its message names the
 * owner) and one without a frame number with B2S_E_NEED_FRAME.  A cluster
 * producer holds one session and producer per rank and sends each buffer
 * to its owner:
 *
 *   const char *eps[] = {"tcp://n0:5555", "tcp://n1:5555", "tcp://n2:5555"};
 *   b2sc_cluster *c;
 *   b2sc_cluster_open(eps, 3, 1, "detector", NULL, NULL, &c);
 *   for (uint64_t f = 0; f < n; f++)
 *     b2sc_cluster_send(c, f, image[f], len, 1000);
 *   b2sc_cluster_flush(c, 10000);
 *   b2sc_cluster_close(c);
 *
 * endpoints and frames_per_block must be those of the daemons' cluster:
 * section (ranks, frames_per_block), in rank order.  Errors are those of
 * the producer calls underneath, and b2sc_cluster_last_error() names the
 * rank.  Threads and ownership as for a session: one thread at a time;
 * b2sc_cluster_close frees everything.
 *
 * A rank that fails (its daemon restarted: B2S_E_CLOSED, B2S_E_TIMEOUT)
 * does not lose what it acknowledged.  Resend the rest:
 *   n = b2sc_cluster_unacked(c, rank, frames, cap);   which frames
 *   b2sc_cluster_reconnect(c, rank);                  new session
 *   ... b2sc_cluster_send each of frames[0..n) again.
 * A frame stored twice is harmless: a rank stores the same bytes again. */
#define B2SC_CLUSTER_MAX_RANKS 1024
#define B2SC_CLUSTER_NAME_MAX 255

typedef struct b2sc_cluster b2sc_cluster;

/* Connect to every rank (endpoints[0..n-1], 1 <= n <= 1024) and open
 * stream on each (tmpl as for b2sc_producer_open).  opts applies to every
 * session (NULL: producer role, default timeout); its strings need not
 * outlive the call except the CURVE keys, which must live as long as the
 * cluster (reconnects use them).  B2S_E_ARG for n, frames_per_block < 1,
 * a NULL or empty endpoint or stream; else the first failure of a rank
 * (nothing is left open then). */
int b2sc_cluster_open(const char *const *endpoints, int n,
                      int frames_per_block, const char *stream,
                      const char *tmpl, const b2sc_options *opts,
                      b2sc_cluster **out);

/* Send one buffer to the rank owning rec->frame (b2sc_send_rec on that
 * rank's producer, same errors).  B2S_E_NEED_FRAME, nothing sent, when
 * rec is NULL or has no B2SC_REC_FRAME. */
int b2sc_cluster_send_rec(b2sc_cluster *c, const void *buf, size_t len,
                          const b2sc_record *rec, int timeout_ms);

/* b2sc_cluster_send_rec with a record of only the frame number. */
int b2sc_cluster_send(b2sc_cluster *c, uint64_t frame, const void *buf,
                      size_t len, int timeout_ms);

/* The rank that owns frame. */
int b2sc_cluster_owner(const b2sc_cluster *c, uint64_t frame);

/* b2sc_flush on every rank (each with timeout_ms); the first failure. */
int b2sc_cluster_flush(b2sc_cluster *c, int timeout_ms);

/* Close every producer and session (b2sc_producer_close, b2sc_close) and
 * free c; the first failure.  Accepts NULL. */
int b2sc_cluster_close(b2sc_cluster *c);

/* Number of ranks. */
int b2sc_cluster_ranks(const b2sc_cluster *c);

/* Rank's producer (stats, series metadata), NULL when the rank is not
 * connected; valid until that rank reconnects or c is closed. */
b2sc_producer *b2sc_cluster_producer(b2sc_cluster *c, int rank);

/* Frame numbers given to rank and not acknowledged: those sent and not
 * yet acknowledged at the stream's ack level (nor dropped or rejected),
 * in send order, then those whose send failed with B2S_E_TIMEOUT or
 * B2S_E_CLOSED since the rank's last (re)connect.  The first
 * min(count, cap) go into frames.  Returns the count. */
int b2sc_cluster_unacked(b2sc_cluster *c, int rank, uint64_t *frames,
                         size_t cap);

/* Close rank's session (its unacknowledged frames are forgotten: read
 * them first) and connect and open the stream again. */
int b2sc_cluster_reconnect(b2sc_cluster *c, int rank);

/* "rank R (ENDPOINT): why" for the last failure; "" when none. */
const char *b2sc_cluster_last_error(const b2sc_cluster *c);

#ifdef __cplusplus
}
#endif

#endif

/* The b2stream wire protocol: codec of the header frame (frame 1) of every
 * ZeroMQ message exchanged between clients and b2streamd.
 *
 * docs/PROTOCOL.md is the specification; this file and wire.c follow it
 * field for field.  A header is a 16-byte prefix (magic "B2SW", protocol
 * version, type, flags, tag, reserved) followed by the type's fixed fields
 * (little endian, widest first) and then its strings, each a u16 length and
 * that many UTF-8 bytes without NUL.  Payloads (frame 2: data buffers, chunk
 * bytes, statistics JSON) never pass through this codec.
 *
 * Every header has exactly one valid encoding: decode accepts only what
 * encode produces, so decode-then-encode gives back the input bytes.
 *
 * Ownership: the codec allocates nothing.  Strings in a decoded message
 * borrow from the decoded buffer (they are not NUL-terminated) and stay
 * valid only as long as that buffer; strings given to encode are only read.
 * No function keeps a pointer after it returns.  All functions are
 * reentrant. */
#ifndef B2S_WIRE_H
#define B2S_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define B2S_WIRE_VERSION 1           /* protocol version this codec speaks */
#define B2S_WIRE_MAGIC "B2SW"        /* first 4 bytes of every header */
#define B2S_WIRE_PREFIX_LEN 16       /* common prefix, frozen for all versions */

#define B2S_WIRE_NAME_MAX 255        /* stream, template, client, server, shm */
#define B2S_WIRE_PATH_MAX 1024       /* FOLLOW target with B2S_WIRE_FOLLOW_BY_PATH */
#define B2S_WIRE_TEXT_MAX 1024       /* ERROR message */
/* Longest possible header (an ERROR with a full message); a buffer of this
 * size always holds any encoded header. */
#define B2S_WIRE_HEADER_MAX (B2S_WIRE_PREFIX_LEN + 17 + 2 + B2S_WIRE_TEXT_MAX)

/* Bit 7 of the type is set on every message the daemon sends. */
#define B2S_WIRE_FROM_DAEMON 0x80

typedef enum b2s_wire_type {
  /* client -> daemon */
  B2S_WIRE_HELLO = 0x01,
  B2S_WIRE_OPEN = 0x02,
  B2S_WIRE_DATA = 0x03,              /* + payload: the buffer */
  B2S_WIRE_FLUSH = 0x04,
  B2S_WIRE_CLOSE = 0x05,
  B2S_WIRE_SHM_ATTACH = 0x06,
  B2S_WIRE_SHM_SUBMIT = 0x07,
  B2S_WIRE_FOLLOW = 0x08,
  B2S_WIRE_READ = 0x09,
  B2S_WIRE_UNFOLLOW = 0x0A,
  B2S_WIRE_STATS = 0x0B,
  B2S_WIRE_PING = 0x0C,
  B2S_WIRE_BYE = 0x0D,
  /* daemon -> client */
  B2S_WIRE_WELCOME = 0x81,
  B2S_WIRE_OPENED = 0x82,
  B2S_WIRE_ACK = 0x83,
  B2S_WIRE_DROPPED = 0x84,
  B2S_WIRE_FLUSHED = 0x85,
  B2S_WIRE_CLOSED = 0x86,
  B2S_WIRE_SHM_ATTACHED = 0x87,
  B2S_WIRE_FOLLOWING = 0x88,
  B2S_WIRE_NOTIFY = 0x89,
  B2S_WIRE_CHUNK = 0x8A,             /* + payload: chunk bytes */
  B2S_WIRE_UNFOLLOWED = 0x8B,
  B2S_WIRE_STATS_REPLY = 0x8C,       /* + payload: JSON text */
  B2S_WIRE_PONG = 0x8D,
  B2S_WIRE_ERROR = 0x8E,
} b2s_wire_type;

/* Flag bits, per type; every bit not listed for a type must be zero. */
enum {
  B2S_WIRE_HELLO_PRODUCER = 0x0001,
  B2S_WIRE_HELLO_CONSUMER = 0x0002,
  B2S_WIRE_WELCOME_SHM = 0x0001,           /* shared-memory ingest offered */
  B2S_WIRE_FOLLOW_BY_PATH = 0x0001,        /* target is a frame path */
  B2S_WIRE_FOLLOW_FROM_END = 0x0002,       /* start after the last committed */
  B2S_WIRE_FOLLOW_PUSH_COMPRESSED = 0x0004,   /* CHUNK per chunk, as stored */
  B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED = 0x0008, /* CHUNK per chunk, decoded */
  B2S_WIRE_READ_DECOMPRESS = 0x0001,
  B2S_WIRE_CHUNK_DECOMPRESSED = 0x0001,    /* payload is the decoded data */
  B2S_WIRE_CHUNK_PUSHED = 0x0002,          /* sent for a follow, not a READ */
  B2S_WIRE_ERROR_CLOSED_REF = 0x0001,      /* handle/follow ref_id is gone */
  B2S_WIRE_ERROR_CLOSED_SESSION = 0x0002,  /* session gone: HELLO again */
};

/* Durability levels, in increasing order (ACK level, OPENED ack_level). */
enum {
  B2S_WIRE_LEVEL_RECEIVED = 1,   /* accepted into the stream's queue */
  B2S_WIRE_LEVEL_WRITTEN = 2,    /* appended, committed, visible to readers */
  B2S_WIRE_LEVEL_DURABLE = 3,    /* fsynced */
};

/* Backpressure policies (OPENED policy); the drop ones double as DROPPED
 * reasons. */
enum {
  B2S_WIRE_POLICY_BLOCK = 1,
  B2S_WIRE_POLICY_DROP_NEWEST = 2,
  B2S_WIRE_POLICY_DROP_OLDEST = 3,
};

/* A string on the wire: len bytes at ptr, no terminating NUL. */
typedef struct b2s_wire_str {
  const char *ptr;                   /* may be NULL when len is 0 */
  uint16_t len;
} b2s_wire_str;

/* One header, decoded.  Only the member named after `type` is meaningful.
 * Ids, counters and sizes are the wire fields of docs/PROTOCOL.md. */
typedef struct b2s_wire_msg {
  uint8_t version;                   /* set by decode; encode writes its own */
  uint8_t type;                      /* b2s_wire_type */
  uint16_t flags;
  uint32_t tag;                      /* request tag, echoed in replies */
  union {
    struct { uint32_t pid, ping_ms; b2s_wire_str name; } hello;
    struct { b2s_wire_str stream, tmpl; } open;
    struct { uint64_t buffer_id; uint32_t handle; } data;
    struct { uint32_t handle; } flush;
    struct { uint32_t handle; } close;
    struct { uint32_t handle, slot_count, slot_size; } shm_attach;
    struct {
      uint64_t buffer_id;
      uint32_t handle, segment, slot, length;
    } shm_submit;
    struct { uint64_t start; b2s_wire_str target; } follow;
    struct { uint64_t chunk; uint32_t follow_id; b2s_wire_str stream; } read;
    struct { uint32_t follow_id; } unfollow;
    struct { b2s_wire_str stream; } stats;
    struct { uint64_t nonce; } ping;
    struct {
      uint32_t max_buffer, timeout_ms, session_id;
      uint8_t version_min, version_max;
      b2s_wire_str server;
    } welcome;
    struct {
      uint32_t handle, credits, max_buffer;
      uint8_t ack_level, policy;
    } opened;
    struct {
      uint64_t upto, dropped;
      uint32_t handle, credits;
      uint8_t level;
    } ack;
    struct { uint64_t buffer_id; uint32_t handle; uint8_t reason; } dropped;
    struct { uint64_t upto; uint32_t handle; } flushed;
    struct { uint64_t upto, dropped; uint32_t handle; } closed;
    struct {
      uint32_t handle, segment, slot_count, slot_size;
      b2s_wire_str shm_name;
    } shm_attached;
    struct { uint64_t start, committed; uint32_t follow_id; } following;
    struct {
      uint64_t first, committed;
      uint32_t follow_id, count;
    } notify;
    struct {
      uint64_t index;
      uint32_t follow_id, nbytes, cbytes;
    } chunk;
    struct { uint64_t next; uint32_t follow_id; } unfollowed;
    struct { uint64_t nonce, time_ns; } pong;
    struct {
      uint64_t ref_index;
      int32_t code;
      uint32_t ref_id;
      uint8_t ref_type;
      b2s_wire_str message;
    } error;
  };
} b2s_wire_msg;

/* Zero *m and set its type. */
void b2s_wire_init(b2s_wire_msg *m, int type);

/* A wire string viewing the C string s (NULL gives the empty string). */
b2s_wire_str b2s_wire_cstr(const char *s);

/* Encode m into buf.  Returns the header length (at most
 * B2S_WIRE_HEADER_MAX), B2S_E_ARG when m breaks a rule of the protocol
 * (unknown type, flag bit, enum value, string length or encoding, ...) or
 * B2S_E_DEST_SMALL when cap is too small.  buf is written only on success. */
int b2s_wire_encode(const b2s_wire_msg *m, uint8_t *buf, size_t cap);

/* Decode and validate one header of exactly len bytes.  Returns 0,
 * B2S_E_PROTO_VERSION when the prefix names another protocol version, or
 * B2S_E_PROTO for anything else wrong.  On failure m->type, m->version,
 * m->flags and m->tag hold the prefix's values when the prefix could be read
 * (len >= 16 and the magic right), otherwise m->type is 0; this lets the
 * daemon address its ERROR reply. */
int b2s_wire_decode(const uint8_t *buf, size_t len, b2s_wire_msg *m);

/* "HELLO", "ACK", ...; "UNKNOWN" for any other value.  Never NULL. */
const char *b2s_wire_type_name(int type);

/* Whether messages of this type carry a second frame (the payload); every
 * other type, and an unknown one, is exactly one frame. */
bool b2s_wire_has_payload(int type);

/* Check the length of the payload frame that came with m (0 when there was
 * none) against the protocol and the receiver's limit max.  Returns 0,
 * B2S_E_OVERSIZE when payload_len > max, or B2S_E_PROTO when the type takes
 * no payload and payload_len > 0, when a DATA or STATS_REPLY payload is
 * empty, or when a CHUNK payload is not exactly its nbytes (decompressed)
 * or cbytes. */
int b2s_wire_check_payload(const b2s_wire_msg *m, size_t payload_len,
                           size_t max);

/* Length of the longest prefix of the UTF-8 text s[0..len) that is at most
 * max bytes and does not split a character: for fitting a message into
 * B2S_WIRE_TEXT_MAX. */
size_t b2s_wire_utf8_cut(const char *s, size_t len, size_t max);

#endif

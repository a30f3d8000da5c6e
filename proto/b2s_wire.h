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
 * reentrant.
 *
 * Versions: b2s_wire_decode accepts version 1 only (what a version-1 peer
 * understands); b2s_wire_decode_v accepts 1..max.  Version 2 keeps every
 * version-1 layout and adds flag bits, the META / META_OK types and extra
 * frames (a record, series metadata).  The record frame and msgpack checks
 * are in wire_rec.c (below). */
#ifndef B2S_WIRE_H
#define B2S_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_wire_types.h"

#define B2S_WIRE_VERSION 1           /* base version: b2s_wire_init, decode */
#define B2S_WIRE_VERSION_MAX 2       /* highest version this codec speaks */
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

/* The types themselves: b2s_wire_types.h (one list). */
typedef enum b2s_wire_type {
#define B2S_WIRE_ENUM_(name, value, since) B2S_WIRE_##name = value,
  B2S_WIRE_TYPES(B2S_WIRE_ENUM_)
#undef B2S_WIRE_ENUM_
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
  /* version 2 only */
  B2S_WIRE_OPEN_META = 0x0001,             /* payload: initial metadata */
  B2S_WIRE_DATA_RECORD = 0x0001,           /* frame 3: the record */
  B2S_WIRE_SHM_SUBMIT_RECORD = 0x0001,     /* frame 2: the record */
  B2S_WIRE_FOLLOW_RECORDS = 0x0010,        /* NOTIFY/CHUNK carry records */
  B2S_WIRE_READ_RECORD = 0x0002,           /* the CHUNK reply carries it */
  B2S_WIRE_NOTIFY_RECORDS = 0x0001,        /* payload: count records */
  B2S_WIRE_CHUNK_RECORD = 0x0004,          /* frame 3: the record */
};

/* Version-2 limits (docs/PROTOCOL.md section 7). */
#define B2S_WIRE_USER_MAX 4096       /* user part of a record */
#define B2S_WIRE_REC_FIXED 30        /* record frame without its user part */
#define B2S_WIRE_REC_MAX (B2S_WIRE_REC_FIXED + B2S_WIRE_USER_MAX)
#define B2S_WIRE_META_MAX (256 * 1024)   /* META and OPEN metadata payload */
#define B2S_WIRE_NOTIFY_RECS_MAX 256 /* count of a NOTIFY with records */

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
  uint8_t version;                   /* set by decode; encode takes its own */
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
    struct { uint32_t handle; } meta;
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
    struct { uint64_t upto; uint32_t handle; } meta_ok;
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

/* Encode m into buf in protocol version 1 (m->version is ignored).
 * Returns the header length (at most B2S_WIRE_HEADER_MAX), B2S_E_ARG when
 * m breaks a rule of the protocol (unknown type, flag bit, enum value,
 * string length or encoding, ...) or B2S_E_DEST_SMALL when cap is too
 * small.  buf is written only on success. */
int b2s_wire_encode(const b2s_wire_msg *m, uint8_t *buf, size_t cap);

/* b2s_wire_encode in the given version (1..B2S_WIRE_VERSION_MAX; a session
 * speaks the one WELCOME named).  Version-2 types and flags are B2S_E_ARG
 * in version 1. */
int b2s_wire_encode_v(const b2s_wire_msg *m, int version, uint8_t *buf,
                      size_t cap);

/* Decode and validate one header of exactly len bytes.  Returns 0,
 * B2S_E_PROTO_VERSION when the prefix names another protocol version, or
 * B2S_E_PROTO for anything else wrong.  On failure m->type, m->version,
 * m->flags and m->tag hold the prefix's values when the prefix could be read
 * (len >= 16 and the magic right), otherwise m->type is 0; this lets the
 * daemon address its ERROR reply. */
int b2s_wire_decode(const uint8_t *buf, size_t len, b2s_wire_msg *m);

/* b2s_wire_decode for the versions 1..max_version (at most
 * B2S_WIRE_VERSION_MAX); m->version tells which one the header is in.
 * A session checks it against the version it negotiated. */
int b2s_wire_decode_v(const uint8_t *buf, size_t len, int max_version,
                      b2s_wire_msg *m);

/* "HELLO", "ACK", ...; "UNKNOWN" for any other value.  Never NULL. */
const char *b2s_wire_type_name(int type);
/* The first protocol version that has type; 0 for no type. */
int b2s_wire_type_since(int type);

/* Whether messages of this type always carry a second frame (the payload):
 * DATA, CHUNK, STATS_REPLY, META.  Version 2 adds frames that depend on
 * flags: use the three functions below for a decoded header. */
bool b2s_wire_has_payload(int type);

/* Frame 2 is a payload: the types above, OPEN with OPEN_META (metadata) and
 * NOTIFY with NOTIFY_RECORDS (the records of its chunks). */
bool b2s_wire_msg_has_payload(const b2s_wire_msg *m);

/* The last frame is one record (wire_rec.c): DATA (frame 3), SHM_SUBMIT
 * (frame 2), CHUNK (frame 3) with their RECORD flag. */
bool b2s_wire_msg_has_record(const b2s_wire_msg *m);

/* Frames of the whole message, the header included: 1 to 3. */
int b2s_wire_msg_frames(const b2s_wire_msg *m);

/* Check the length of the payload frame that came with m (0 when there was
 * none) against the protocol and the receiver's limit max.  Returns 0,
 * B2S_E_OVERSIZE when payload_len > max, or B2S_E_PROTO when the message
 * takes no payload (b2s_wire_msg_has_payload) and payload_len > 0, when a
 * DATA or STATS_REPLY payload is empty, when a CHUNK payload is not exactly
 * its nbytes (decompressed) or cbytes, when a META or OPEN metadata payload
 * is empty or above B2S_WIRE_META_MAX, or when a NOTIFY records payload
 * cannot hold count records (its records are checked by
 * b2s_wire_rec_decode). */
int b2s_wire_check_payload(const b2s_wire_msg *m, size_t payload_len,
                           size_t max);

/* Length of the longest prefix of the UTF-8 text s[0..len) that is at most
 * max bytes and does not split a character: for fitting a message into
 * B2S_WIRE_TEXT_MAX. */
size_t b2s_wire_utf8_cut(const char *s, size_t len, size_t max);

/* ---- version 2: records and metadata (wire_rec.c) ----------------------- */

/* Record frame, little endian (docs/PROTOCOL.md 2.4): u64 frame, i64
 * ts_ns, u64 xxh64, u16 present, u16 flags, u16 user_len, user bytes. */
enum {                                /* present bits */
  B2S_WIRE_REC_FRAME = 0x0001,        /* frame number given */
  B2S_WIRE_REC_TS = 0x0002,           /* timestamp given */
  B2S_WIRE_REC_XXH64 = 0x0004,        /* checksum given (daemon only) */
  B2S_WIRE_REC_USER_MAP = 0x0008,     /* user part is one msgpack map */
};
enum {                                /* flags (daemon only) */
  B2S_WIRE_REC_GAP = 0x0001,          /* placeholder chunk, no data */
  B2S_WIRE_REC_DROPPED = 0x0002,      /* the buffer was dropped */
  B2S_WIRE_REC_REJECTED = 0x0004,     /* the buffer was rejected */
};

/* One record.  Fields whose present bit is clear are 0.  user (user_len
 * bytes, 0 = no user part) borrows from the decoded frame. */
typedef struct b2s_wire_rec {
  uint64_t frame;
  int64_t ts_ns;                      /* ns since 1970 */
  uint64_t xxh64;                     /* of the chunk as stored */
  uint16_t present, flags, user_len;
  const uint8_t *user;
} b2s_wire_rec;

/* Encoded length of r: B2S_WIRE_REC_FIXED + user_len. */
size_t b2s_wire_rec_len(const b2s_wire_rec *r);

/* Encode r into buf.  Returns its length, B2S_E_ARG when r breaks a rule
 * (undefined bits, a value without its present bit, user_len above
 * B2S_WIRE_USER_MAX, USER_MAP without a well-formed map), B2S_E_DEST_SMALL
 * when cap is too small. */
int b2s_wire_rec_encode(const b2s_wire_rec *r, uint8_t *buf, size_t cap);

/* Decode the record at the start of buf[0..len) (a NOTIFY payload holds
 * several in a row).  Returns its length (B2S_WIRE_REC_FIXED..
 * B2S_WIRE_REC_MAX) or B2S_E_PROTO; the rules are those of encode.  A
 * record frame must be exactly one record: check the length returned. */
int b2s_wire_rec_decode(const uint8_t *buf, size_t len, b2s_wire_rec *r);

/* A record a producer sends carries no checksum and no flags: 0 or
 * B2S_E_PROTO. */
int b2s_wire_rec_check_producer(const b2s_wire_rec *r);

/* Whether buf[0..len) is exactly one well-formed msgpack map (at most 32
 * containers nested inside it, strings valid UTF-8); with str_keys every
 * key of the outer map must be a string (META and OPEN metadata).  0 or
 * B2S_E_PROTO. */
int b2s_wire_mp_map_check(const uint8_t *buf, size_t len, bool str_keys);

#endif

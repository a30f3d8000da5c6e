/* Header codec of the b2stream wire protocol (docs/PROTOCOL.md).
 *
 * Each message type is described once, in the table below, as the list of
 * its fields in wire order with their bounds and where they live in
 * b2s_wire_msg.  Encode and decode both walk that list, so they cannot
 * disagree about a layout; the few rules that tie two fields together live
 * in check_rules(), which both also call.  Everything decode accepts is
 * therefore something encode would write, byte for byte. */
#include "b2s_wire.h"

#include <stddef.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_msgpack.h"

enum field_kind { K_U8, K_U16, K_U32, K_I32, K_U64, K_STR };

/* Integers: value >= lo and, when hi != 0, value <= hi.
 * Strings: length in [lo, hi]. */
typedef struct wire_field {
  uint8_t kind;
  uint8_t lo;
  uint16_t hi;
  uint16_t off;                      /* offset of the member in b2s_wire_msg */
} wire_field;

/* P_META: msgpack series metadata, 1..B2S_WIRE_META_MAX bytes. */
enum payload_kind { P_NONE, P_BUFFER, P_CHUNK, P_META };

#define MAX_FIELDS 6
typedef struct wire_type {
  uint8_t type;
  uint8_t payload;
  uint16_t flags;                    /* defined flag bits */
  wire_field f[MAX_FIELDS];          /* wire order; unused entries are zero */
} wire_type;

#define M(member) ((uint16_t)offsetof(b2s_wire_msg, member))
#define U8(member, lo, hi) {K_U8, lo, hi, M(member)}
#define U32(member, lo) {K_U32, lo, 0, M(member)}
#define I32(member) {K_I32, 0, 0, M(member)}
#define U64(member) {K_U64, 0, 0, M(member)}
#define STR(member, lo, hi) {K_STR, lo, hi, M(member)}
#define NAME B2S_WIRE_NAME_MAX

/* Fixed fields widest first (so they sit aligned after the prefix), then
 * strings.  The order here is the byte order on the wire. */
static const wire_type types[] = {
  {B2S_WIRE_HELLO, P_NONE,
   B2S_WIRE_HELLO_PRODUCER | B2S_WIRE_HELLO_CONSUMER,
   {U32(hello.pid, 0), U32(hello.ping_ms, 0), STR(hello.name, 0, NAME)}},
  {B2S_WIRE_OPEN, P_NONE, 0,
   {STR(open.stream, 1, NAME), STR(open.tmpl, 0, NAME)}},
  {B2S_WIRE_DATA, P_BUFFER, 0,
   {U64(data.buffer_id), U32(data.handle, 1)}},
  {B2S_WIRE_FLUSH, P_NONE, 0, {U32(flush.handle, 1)}},
  {B2S_WIRE_CLOSE, P_NONE, 0, {U32(close.handle, 1)}},
  {B2S_WIRE_SHM_ATTACH, P_NONE, 0,
   {U32(shm_attach.handle, 1), U32(shm_attach.slot_count, 1),
    U32(shm_attach.slot_size, 1)}},
  {B2S_WIRE_SHM_SUBMIT, P_NONE, 0,
   {U64(shm_submit.buffer_id), U32(shm_submit.handle, 1),
    U32(shm_submit.segment, 1), U32(shm_submit.slot, 0),
    U32(shm_submit.length, 1)}},
  {B2S_WIRE_FOLLOW, P_NONE,
   B2S_WIRE_FOLLOW_BY_PATH | B2S_WIRE_FOLLOW_FROM_END |
       B2S_WIRE_FOLLOW_PUSH_COMPRESSED | B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED,
   {U64(follow.start), STR(follow.target, 1, B2S_WIRE_PATH_MAX)}},
  {B2S_WIRE_READ, P_NONE, B2S_WIRE_READ_DECOMPRESS,
   {U64(read.chunk), U32(read.follow_id, 0), STR(read.stream, 0, NAME)}},
  {B2S_WIRE_UNFOLLOW, P_NONE, 0, {U32(unfollow.follow_id, 1)}},
  {B2S_WIRE_STATS, P_NONE, 0, {STR(stats.stream, 0, NAME)}},
  {B2S_WIRE_PING, P_NONE, 0, {U64(ping.nonce)}},
  {B2S_WIRE_BYE, P_NONE, 0, {{0}}},
  {B2S_WIRE_META, P_META, 0, {U32(meta.handle, 1)}},
  {B2S_WIRE_WELCOME, P_NONE, B2S_WIRE_WELCOME_SHM,
   {U32(welcome.max_buffer, 1), U32(welcome.timeout_ms, 0),
    U32(welcome.session_id, 0), U8(welcome.version_min, 1, 0),
    U8(welcome.version_max, 1, 0), STR(welcome.server, 0, NAME)}},
  {B2S_WIRE_OPENED, P_NONE, 0,
   {U32(opened.handle, 1), U32(opened.credits, 0), U32(opened.max_buffer, 1),
    U8(opened.ack_level, B2S_WIRE_LEVEL_RECEIVED, B2S_WIRE_LEVEL_DURABLE),
    U8(opened.policy, B2S_WIRE_POLICY_BLOCK, B2S_WIRE_POLICY_DROP_OLDEST)}},
  {B2S_WIRE_ACK, P_NONE, 0,
   {U64(ack.upto), U64(ack.dropped), U32(ack.handle, 1), U32(ack.credits, 0),
    U8(ack.level, B2S_WIRE_LEVEL_RECEIVED, B2S_WIRE_LEVEL_DURABLE)}},
  {B2S_WIRE_DROPPED, P_NONE, 0,
   {U64(dropped.buffer_id), U32(dropped.handle, 1),
    U8(dropped.reason, B2S_WIRE_POLICY_DROP_NEWEST,
       B2S_WIRE_POLICY_DROP_OLDEST)}},
  {B2S_WIRE_FLUSHED, P_NONE, 0,
   {U64(flushed.upto), U32(flushed.handle, 1)}},
  {B2S_WIRE_CLOSED, P_NONE, 0,
   {U64(closed.upto), U64(closed.dropped), U32(closed.handle, 1)}},
  {B2S_WIRE_SHM_ATTACHED, P_NONE, 0,
   {U32(shm_attached.handle, 1), U32(shm_attached.segment, 1),
    U32(shm_attached.slot_count, 1), U32(shm_attached.slot_size, 1),
    STR(shm_attached.shm_name, 1, NAME)}},
  {B2S_WIRE_FOLLOWING, P_NONE, 0,
   {U64(following.start), U64(following.committed),
    U32(following.follow_id, 1)}},
  {B2S_WIRE_NOTIFY, P_NONE, 0,
   {U64(notify.first), U64(notify.committed), U32(notify.follow_id, 1),
    U32(notify.count, 1)}},
  {B2S_WIRE_CHUNK, P_CHUNK,
   B2S_WIRE_CHUNK_DECOMPRESSED | B2S_WIRE_CHUNK_PUSHED,
   {U64(chunk.index), U32(chunk.follow_id, 0), U32(chunk.nbytes, 0),
    U32(chunk.cbytes, 0)}},
  {B2S_WIRE_UNFOLLOWED, P_NONE, 0,
   {U64(unfollowed.next), U32(unfollowed.follow_id, 1)}},
  {B2S_WIRE_STATS_REPLY, P_BUFFER, 0, {{0}}},
  {B2S_WIRE_PONG, P_NONE, 0, {U64(pong.nonce), U64(pong.time_ns)}},
  {B2S_WIRE_ERROR, P_NONE,
   B2S_WIRE_ERROR_CLOSED_REF | B2S_WIRE_ERROR_CLOSED_SESSION,
   {U64(error.ref_index), I32(error.code), U32(error.ref_id, 0),
    U8(error.ref_type, 0, 0), STR(error.message, 0, B2S_WIRE_TEXT_MAX)}},
  {B2S_WIRE_META_OK, P_NONE, 0,
   {U64(meta_ok.upto), U32(meta_ok.handle, 1)}},
};

/* Name and first version of every type (b2s_wire_types.h). */
static const struct type_info {
  const char *name;
  uint8_t since;
} type_infos[256] = {
#define B2S_WIRE_INFO_(name, value, since) [value] = {#name, since},
  B2S_WIRE_TYPES(B2S_WIRE_INFO_)
#undef B2S_WIRE_INFO_
};

/* Flag bits version 2 defines on types of version 1. */
static const struct wire_v2 {
  uint8_t type;
  uint16_t flags;
} v2_flags[] = {
  {B2S_WIRE_OPEN, B2S_WIRE_OPEN_META},
  {B2S_WIRE_DATA, B2S_WIRE_DATA_RECORD},
  {B2S_WIRE_SHM_SUBMIT, B2S_WIRE_SHM_SUBMIT_RECORD},
  {B2S_WIRE_FOLLOW, B2S_WIRE_FOLLOW_RECORDS},
  {B2S_WIRE_READ, B2S_WIRE_READ_RECORD},
  {B2S_WIRE_NOTIFY, B2S_WIRE_NOTIFY_RECORDS},
  {B2S_WIRE_CHUNK, B2S_WIRE_CHUNK_RECORD},
};

static const struct wire_v2 *v2_of(int type) {
  for (size_t i = 0; i < sizeof v2_flags / sizeof v2_flags[0]; i++)
    if (v2_flags[i].type == type)
      return &v2_flags[i];
  return NULL;
}

static const wire_type *lookup(int type) {
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (types[i].type == type)
      return &types[i];
  return NULL;
}

static size_t field_size(const wire_field *f) {
  switch (f->kind) {
  case K_U8: return 1;
  case K_U16: return 2;
  case K_U32: case K_I32: return 4;
  case K_U64: return 8;
  default: return 2;                 /* K_STR: its length; bytes come after */
  }
}

static bool field_used(const wire_field *f) {
  return f->off != 0;                /* offset 0 is `version`, never a field */
}

/* ---- little-endian access ---------------------------------------------- */

static uint64_t load_le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;)
    v = v << 8 | p[i];
  return v;
}

static void store_le(uint8_t *p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++, v >>= 8)
    p[i] = (uint8_t)v;
}

/* Integer members have the width of their wire field. */
static uint64_t member_get(const b2s_wire_msg *m, const wire_field *f) {
  const char *p = (const char *)m + f->off;
  uint8_t u8; uint16_t u16; uint32_t u32; int32_t i32; uint64_t u64;
  switch (f->kind) {
  case K_U8: memcpy(&u8, p, 1); return u8;
  case K_U16: memcpy(&u16, p, 2); return u16;
  case K_U32: memcpy(&u32, p, 4); return u32;
  case K_I32: memcpy(&i32, p, 4); return (uint32_t)i32;
  default: memcpy(&u64, p, 8); return u64;
  }
}

static void member_set(b2s_wire_msg *m, const wire_field *f, uint64_t v) {
  char *p = (char *)m + f->off;
  uint8_t u8 = (uint8_t)v;
  uint16_t u16 = (uint16_t)v;
  uint32_t u32 = (uint32_t)v;
  /* two's complement reinterpretation, defined for exact-width types */
  int32_t i32 = (int32_t)(u32 > INT32_MAX ? -(int64_t)(UINT32_MAX - u32) - 1
                                          : (int64_t)u32);
  switch (f->kind) {
  case K_U8: memcpy(p, &u8, 1); break;
  case K_U16: memcpy(p, &u16, 2); break;
  case K_U32: memcpy(p, &u32, 4); break;
  case K_I32: memcpy(p, &i32, 4); break;
  default: memcpy(p, &v, 8); break;
  }
}

static const b2s_wire_str *member_str(const b2s_wire_msg *m,
                                      const wire_field *f) {
  return (const b2s_wire_str *)(const void *)((const char *)m + f->off);
}

/* ---- validation shared by encode and decode ----------------------------- */

/* Well-formed UTF-8 (RFC 3629: shortest form, no surrogates, at most
 * U+10FFFF) without NUL, which C readers would take for the end. */
static bool utf8_valid(const uint8_t *s, size_t len) {
  return memchr(s, 0, len) == NULL && b2s_utf8_valid(s, len);
}

static bool field_ok(const b2s_wire_msg *m, const wire_field *f) {
  if (f->kind == K_STR) {
    const b2s_wire_str *s = member_str(m, f);
    return s->len >= f->lo && s->len <= f->hi &&
           (s->len == 0 || (s->ptr != NULL &&
                            utf8_valid((const uint8_t *)s->ptr, s->len)));
  }
  if (f->kind == K_I32)
    return true;                     /* ERROR code: see check_rules */
  uint64_t v = member_get(m, f);
  return v >= f->lo && (f->hi == 0 || v <= f->hi);
}

static int type_since(const wire_type *t) {
  return type_infos[t->type].since;
}

/* Flag bits defined for t in this version. */
static uint16_t type_flags(const wire_type *t, int version) {
  const struct wire_v2 *v = v2_of(t->type);
  return (uint16_t)(t->flags | (v != NULL && version >= 2 ? v->flags : 0));
}

/* A client -> daemon type that exists in this version. */
static bool is_request_type(int type, int version) {
  const wire_type *t = lookup(type);
  return t != NULL && !(type & B2S_WIRE_FROM_DAEMON) &&
         type_since(t) <= version;
}

/* Rules that involve more than one field. */
static bool check_rules(const b2s_wire_msg *m) {
  switch (m->type) {
  case B2S_WIRE_WELCOME:
    /* the range holds the version this WELCOME is in (1 in version 1) */
    return m->welcome.version_min <= m->version &&
           m->welcome.version_max >= m->version;
  case B2S_WIRE_FOLLOW: {
    uint16_t push = B2S_WIRE_FOLLOW_PUSH_COMPRESSED |
                    B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED;
    if ((m->flags & push) == push)
      return false;
    if ((m->flags & B2S_WIRE_FOLLOW_FROM_END) && m->follow.start != 0)
      return false;
    return (m->flags & B2S_WIRE_FOLLOW_BY_PATH) ||
           m->follow.target.len <= B2S_WIRE_NAME_MAX;
  }
  case B2S_WIRE_READ:              /* by follow id or by name, not both */
    return (m->read.follow_id != 0) != (m->read.stream.len != 0);
  case B2S_WIRE_FOLLOWING:
    return m->following.start <= m->following.committed;
  case B2S_WIRE_NOTIFY:
    if ((m->flags & B2S_WIRE_NOTIFY_RECORDS) &&
        m->notify.count > B2S_WIRE_NOTIFY_RECS_MAX)
      return false;
    return m->notify.first <= m->notify.committed &&
           m->notify.count <= m->notify.committed - m->notify.first;
  case B2S_WIRE_CHUNK:
    return !(m->flags & B2S_WIRE_CHUNK_PUSHED) || m->chunk.follow_id != 0;
  case B2S_WIRE_ERROR:
    return m->error.code < 0 &&
           (m->error.ref_type == 0 ||
            is_request_type(m->error.ref_type, m->version));
  default:
    return true;
  }
}

/* m->version is already 1..B2S_WIRE_VERSION_MAX. */
static bool msg_ok(const wire_type *t, const b2s_wire_msg *m) {
  if (m->version < type_since(t) || (m->flags & ~type_flags(t, m->version)))
    return false;
  for (int i = 0; i < MAX_FIELDS && field_used(&t->f[i]); i++)
    if (!field_ok(m, &t->f[i]))
      return false;
  return check_rules(m);
}

/* ---- encode ------------------------------------------------------------- */

static size_t encoded_len(const wire_type *t, const b2s_wire_msg *m) {
  size_t n = B2S_WIRE_PREFIX_LEN;
  for (int i = 0; i < MAX_FIELDS && field_used(&t->f[i]); i++) {
    n += field_size(&t->f[i]);
    if (t->f[i].kind == K_STR)
      n += member_str(m, &t->f[i])->len;
  }
  return n;
}

int b2s_wire_encode(const b2s_wire_msg *m, uint8_t *buf, size_t cap) {
  return b2s_wire_encode_v(m, B2S_WIRE_VERSION, buf, cap);
}

int b2s_wire_encode_v(const b2s_wire_msg *m, int version, uint8_t *buf,
                      size_t cap) {
  const wire_type *t = m != NULL ? lookup(m->type) : NULL;
  if (t == NULL || version < 1 || version > B2S_WIRE_VERSION_MAX)
    return B2S_E_ARG;
  b2s_wire_msg v = *m;               /* the rules read the version */
  v.version = (uint8_t)version;
  m = &v;
  if (!msg_ok(t, m))
    return B2S_E_ARG;
  size_t len = encoded_len(t, m);
  if (buf == NULL || len > cap)
    return B2S_E_DEST_SMALL;

  memcpy(buf, B2S_WIRE_MAGIC, 4);
  buf[4] = m->version;
  buf[5] = m->type;
  store_le(buf + 6, m->flags, 2);
  store_le(buf + 8, m->tag, 4);
  store_le(buf + 12, 0, 4);
  size_t pos = B2S_WIRE_PREFIX_LEN;
  for (int i = 0; i < MAX_FIELDS && field_used(&t->f[i]); i++) {
    const wire_field *f = &t->f[i];
    if (f->kind == K_STR) {
      const b2s_wire_str *s = member_str(m, f);
      store_le(buf + pos, s->len, 2);
      if (s->len > 0)
        memcpy(buf + pos + 2, s->ptr, s->len);
      pos += 2 + (size_t)s->len;
    } else {
      store_le(buf + pos, member_get(m, f), field_size(f));
      pos += field_size(f);
    }
  }
  return (int)pos;
}

/* ---- decode ------------------------------------------------------------- */

/* Read the fields of t from buf[16..len) into m; false if they do not fill
 * the buffer exactly. */
static bool decode_fields(const wire_type *t, const uint8_t *buf, size_t len,
                          b2s_wire_msg *m) {
  size_t pos = B2S_WIRE_PREFIX_LEN;
  for (int i = 0; i < MAX_FIELDS && field_used(&t->f[i]); i++) {
    const wire_field *f = &t->f[i];
    size_t n = field_size(f);
    if (len - pos < n)
      return false;
    if (f->kind != K_STR) {
      member_set(m, f, load_le(buf + pos, n));
      pos += n;
      continue;
    }
    size_t slen = (size_t)load_le(buf + pos, 2);
    pos += 2;
    if (len - pos < slen)
      return false;
    b2s_wire_str *s = (b2s_wire_str *)(void *)((char *)m + f->off);
    s->ptr = slen > 0 ? (const char *)buf + pos : NULL;
    s->len = (uint16_t)slen;
    pos += slen;
  }
  return pos == len;
}

int b2s_wire_decode(const uint8_t *buf, size_t len, b2s_wire_msg *m) {
  return b2s_wire_decode_v(buf, len, B2S_WIRE_VERSION, m);
}

int b2s_wire_decode_v(const uint8_t *buf, size_t len, int max_version,
                      b2s_wire_msg *m) {
  if (m == NULL || max_version < 1 || max_version > B2S_WIRE_VERSION_MAX)
    return B2S_E_ARG;
  memset(m, 0, sizeof *m);
  if (buf == NULL || len < B2S_WIRE_PREFIX_LEN ||
      memcmp(buf, B2S_WIRE_MAGIC, 4) != 0)
    return B2S_E_PROTO;
  m->version = buf[4];
  m->type = buf[5];
  m->flags = (uint16_t)load_le(buf + 6, 2);
  m->tag = (uint32_t)load_le(buf + 8, 4);
  /* The version comes first: a later version may change everything after
   * the prefix, and the peer must learn which version it should speak. */
  if (m->version < 1 || m->version > max_version)
    return B2S_E_PROTO_VERSION;
  const wire_type *t = lookup(m->type);
  if (t == NULL || load_le(buf + 12, 4) != 0 ||
      !decode_fields(t, buf, len, m) || !msg_ok(t, m))
    return B2S_E_PROTO;
  return 0;
}

/* ---- helpers ------------------------------------------------------------ */

void b2s_wire_init(b2s_wire_msg *m, int type) {
  memset(m, 0, sizeof *m);
  m->version = B2S_WIRE_VERSION;
  m->type = (uint8_t)type;
}

b2s_wire_str b2s_wire_cstr(const char *s) {
  b2s_wire_str w = {s, 0};
  if (s != NULL) {
    size_t n = strlen(s);
    /* too long for any field either way; encode rejects it */
    w.len = n > UINT16_MAX ? UINT16_MAX : (uint16_t)n;
  }
  return w;
}

int b2s_wire_type_since(int type) {
  const wire_type *t = lookup(type);
  return t != NULL ? type_since(t) : 0;
}

const char *b2s_wire_type_name(int type) {
  const wire_type *t = lookup(type);
  return t != NULL ? type_infos[t->type].name : "UNKNOWN";
}

bool b2s_wire_has_payload(int type) {
  const wire_type *t = lookup(type);
  return t != NULL && t->payload != P_NONE;
}

/* What frame 2 of m is: the type's payload, or one a version-2 flag adds
 * (P_BUFFER stands for the NOTIFY records too: checked apart). */
static int payload_of(const wire_type *t, const b2s_wire_msg *m) {
  if (m->type == B2S_WIRE_OPEN && (m->flags & B2S_WIRE_OPEN_META))
    return P_META;
  if (m->type == B2S_WIRE_NOTIFY && (m->flags & B2S_WIRE_NOTIFY_RECORDS))
    return P_BUFFER;
  return t->payload;
}

bool b2s_wire_msg_has_payload(const b2s_wire_msg *m) {
  const wire_type *t = m != NULL ? lookup(m->type) : NULL;
  return t != NULL && payload_of(t, m) != P_NONE;
}

bool b2s_wire_msg_has_record(const b2s_wire_msg *m) {
  if (m == NULL)
    return false;
  switch (m->type) {
  case B2S_WIRE_DATA: return (m->flags & B2S_WIRE_DATA_RECORD) != 0;
  case B2S_WIRE_SHM_SUBMIT:
    return (m->flags & B2S_WIRE_SHM_SUBMIT_RECORD) != 0;
  case B2S_WIRE_CHUNK: return (m->flags & B2S_WIRE_CHUNK_RECORD) != 0;
  default: return false;
  }
}

int b2s_wire_msg_frames(const b2s_wire_msg *m) {
  return 1 + b2s_wire_msg_has_payload(m) + b2s_wire_msg_has_record(m);
}

/* A NOTIFY's records: count of them, each FIXED..MAX bytes. */
static int check_notify_records(const b2s_wire_msg *m, size_t len) {
  uint64_t n = m->notify.count;
  return len >= n * B2S_WIRE_REC_FIXED && len <= n * B2S_WIRE_REC_MAX
             ? 0 : B2S_E_PROTO;
}

int b2s_wire_check_payload(const b2s_wire_msg *m, size_t payload_len,
                           size_t max) {
  const wire_type *t = m != NULL ? lookup(m->type) : NULL;
  if (t == NULL)
    return B2S_E_PROTO;
  int kind = payload_of(t, m);
  if (kind == P_NONE)
    return payload_len == 0 ? 0 : B2S_E_PROTO;
  if (payload_len > max)
    return B2S_E_OVERSIZE;
  if (kind == P_META)
    return payload_len > 0 && payload_len <= B2S_WIRE_META_MAX
               ? 0 : B2S_E_PROTO;
  if (m->type == B2S_WIRE_NOTIFY)
    return check_notify_records(m, payload_len);
  if (kind == P_BUFFER)
    return payload_len > 0 ? 0 : B2S_E_PROTO;
  size_t want = (m->flags & B2S_WIRE_CHUNK_DECOMPRESSED) ? m->chunk.nbytes
                                                         : m->chunk.cbytes;
  return payload_len == want ? 0 : B2S_E_PROTO;
}

size_t b2s_wire_utf8_cut(const char *s, size_t len, size_t max) {
  if (len <= max)
    return len;
  size_t n = max;
  /* back up over continuation bytes to the start of the cut character */
  while (n > 0 && ((uint8_t)s[n] & 0xC0) == 0x80)
    n--;
  return n;
}

/* The codec of b2s_dmsg.h: one ZeroMQ frame per message, little endian,
 * fixed header "B2DM" u8 version u8 type u16 name_len name, then the
 * type's fields.  Decode accepts exactly what encode produces. */
#include <errno.h>
#include <string.h>

#include "b2s_dmsg.h"
#include "b2s_errors.h"
#include "b2s_dname.h"

#define DMSG_MAGIC "B2DM"
#define DMSG_VERSION 1
#define DMSG_FIXED 8                  /* magic, version, type, name_len */

_Static_assert(B2S_DMSG_NAME_MAX == B2S_DFRAME_NAME_MAX,
               "a message names a frame");

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v) {
  put16(p, (uint16_t)v);
  put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v) {
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *p) {
  return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static uint32_t get32(const uint8_t *p) {
  return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p) {
  return get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* Bytes of the type's fields after the name; -1 for an unknown type. */
static long body_len(int type, uint32_t rec_len) {
  switch (type) {
  case B2S_DMSG_WRITTEN:
    return 16 + (long)rec_len;
  case B2S_DMSG_END:
    return 12;
  case B2S_DMSG_COMMITTED:
    return 9;
  default:
    return -1;
  }
}

static bool index_ok(int64_t i) {
  return i >= 0 && i < B2S_DFRAME_INDEX_LIMIT;
}

static bool rank_ok(int64_t r) { return r >= 0 && r < B2S_DFRAME_RANKS_MAX; }

/* The checks decode makes, on a message about to be encoded. */
static bool msg_ok(const b2s_dmsg *m) {
  if (body_len(m->type, 0) < 0 || !b2s_dname_valid(m->name, m->name_len) ||
      !index_ok(m->index))
    return false;
  if (m->type == B2S_DMSG_COMMITTED)
    return true;
  if (!rank_ok(m->rank))
    return false;
  if (m->type != B2S_DMSG_WRITTEN)
    return true;
  return m->rec != NULL && m->rec_len > 0 && m->rec_len <= B2S_DMSG_REC_MAX;
}

int b2s_dmsg_encode(const b2s_dmsg *m, uint8_t *buf, size_t cap) {
  if (m == NULL || (buf == NULL && cap > 0) || !msg_ok(m))
    return B2S_E_ARG;
  size_t n = DMSG_FIXED + m->name_len +
             (size_t)body_len(m->type, m->type == B2S_DMSG_WRITTEN ? m->rec_len : 0);
  if (n > cap)
    return -ENOBUFS;
  memcpy(buf, DMSG_MAGIC, 4);
  buf[4] = DMSG_VERSION;
  buf[5] = (uint8_t)m->type;
  put16(buf + 6, m->name_len);
  uint8_t *p = buf + DMSG_FIXED;
  memcpy(p, m->name, m->name_len);
  p += m->name_len;
  put64(p, (uint64_t)m->index);
  p += 8;
  if (m->type == B2S_DMSG_COMMITTED) {
    *p = m->closed ? 1 : 0;
    return (int)n;
  }
  put32(p, (uint32_t)m->rank);
  if (m->type == B2S_DMSG_WRITTEN) {
    put32(p + 4, m->rec_len);
    memcpy(p + 8, m->rec, m->rec_len);
  }
  return (int)n;
}

/* Fields after the name; the length was checked by the caller. */
static int decode_body(const uint8_t *p, b2s_dmsg *m) {
  uint64_t idx = get64(p);
  if (idx >= (uint64_t)B2S_DFRAME_INDEX_LIMIT)
    return B2S_E_PROTO;
  m->index = (int64_t)idx;
  if (m->type == B2S_DMSG_COMMITTED) {
    if (p[8] > 1)
      return B2S_E_PROTO;
    m->closed = p[8] == 1;
    return 0;
  }
  uint32_t rank = get32(p + 8);
  if (!rank_ok(rank))
    return B2S_E_PROTO;
  m->rank = (int32_t)rank;
  if (m->type == B2S_DMSG_WRITTEN)
    m->rec = p + 16;
  return 0;
}

int b2s_dmsg_decode(const void *buf, size_t len, b2s_dmsg *m) {
  if (m == NULL || (buf == NULL && len > 0))
    return B2S_E_ARG;
  memset(m, 0, sizeof *m);
  const uint8_t *b = buf;
  if (len < DMSG_FIXED || memcmp(b, DMSG_MAGIC, 4) != 0)
    return B2S_E_PROTO;
  if (b[4] != DMSG_VERSION)
    return B2S_E_PROTO_VERSION;
  m->type = b[5];
  m->name_len = get16(b + 6);
  if (body_len(m->type, 0) < 0 || len - DMSG_FIXED < m->name_len)
    return B2S_E_PROTO;
  m->name = (const char *)b + DMSG_FIXED;
  if (!b2s_dname_valid(m->name, m->name_len))
    return B2S_E_PROTO;
  size_t left = len - DMSG_FIXED - m->name_len;
  const uint8_t *p = b + DMSG_FIXED + m->name_len;
  if (m->type == B2S_DMSG_WRITTEN) {
    if (left < 16)
      return B2S_E_PROTO;
    m->rec_len = get32(p + 12);
    if (m->rec_len == 0 || m->rec_len > B2S_DMSG_REC_MAX)
      return B2S_E_PROTO;
  }
  if (left != (size_t)body_len(m->type, m->rec_len))
    return B2S_E_PROTO;
  return decode_body(p, m);
}

/* Version-2 extra frames of the wire protocol (docs/PROTOCOL.md section
 * 2.4): the record frame and the structural check of msgpack maps (record
 * user parts, series metadata).
 *
 * The checks here keep the daemon from storing bytes that a msgpack reader
 * (python-blosc2, c-blosc2 vlmeta readers) would choke on; limits on keys
 * and sizes of the series metadata belong to its owner in core.  Like the
 * header codec, record decode accepts only what encode writes, so every
 * record has exactly one valid encoding. */
#include <string.h>

#include "b2s_errors.h"
#include "b2s_msgpack.h"
#include "b2s_wire.h"

#define REC_PRESENT_ALL (B2S_WIRE_REC_FRAME | B2S_WIRE_REC_TS | \
                         B2S_WIRE_REC_XXH64 | B2S_WIRE_REC_USER_MAP)
#define REC_FLAGS_ALL (B2S_WIRE_REC_GAP | B2S_WIRE_REC_DROPPED | \
                       B2S_WIRE_REC_REJECTED)
#define MP_DEPTH_MAX 32

/* ---- msgpack structure --------------------------------------------------- */

static uint64_t load_be(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}


typedef struct mp_cur {
  const uint8_t *b;
  size_t len, pos;
} mp_cur;

/* Take n bytes; false when fewer are left. */
static bool take(mp_cur *c, size_t n, const uint8_t **p) {
  if (c->len - c->pos < n)
    return false;
  if (p != NULL)
    *p = c->b + c->pos;
  c->pos += n;
  return true;
}

/* Read an n-byte big-endian length. */
static bool take_len(mp_cur *c, size_t n, uint64_t *v) {
  const uint8_t *p;
  if (!take(c, n, &p))
    return false;
  *v = load_be(p, n);
  return true;
}

static bool skip(mp_cur *c, int depth);

/* n elements (a map has 2 per entry); each takes at least a byte, which
 * bounds the loop by the bytes left. */
static bool skip_items(mp_cur *c, uint64_t n, int depth) {
  if (n > c->len - c->pos)
    return false;
  for (uint64_t i = 0; i < n; i++)
    if (!skip(c, depth + 1))
      return false;
  return true;
}

static bool skip_str(mp_cur *c, uint64_t n) {
  const uint8_t *p;
  return n <= c->len - c->pos && take(c, (size_t)n, &p) && b2s_utf8_valid(p, n);
}

/* Width of the length field of str8..32, bin8..32, ext8..32, array16/32,
 * map16/32, by marker; 0 for other markers. */
static size_t len_width(uint8_t m) {
  switch (m) {
  case 0xc4: case 0xc7: case 0xd9: return 1;
  case 0xc5: case 0xc8: case 0xda: case 0xdc: case 0xde: return 2;
  case 0xc6: case 0xc9: case 0xdb: case 0xdd: case 0xdf: return 4;
  default: return 0;
  }
}

/* Bytes after the marker of a fixed-size value (nil, bool, numbers,
 * fixext); -1 when m is not one. */
static int fixed_size(uint8_t m) {
  if (m <= 0x7f || m >= 0xe0 || m == 0xc0 || m == 0xc2 || m == 0xc3)
    return 0;
  switch (m) {
  case 0xcc: case 0xd0: return 1;
  case 0xcd: case 0xd1: return 2;
  case 0xca: case 0xce: case 0xd2: return 4;
  case 0xcb: case 0xcf: case 0xd3: return 8;
  case 0xd4: return 2;               /* fixext: type byte + 1..16 */
  case 0xd5: return 3;
  case 0xd6: return 5;
  case 0xd7: return 9;
  case 0xd8: return 17;
  default: return -1;
  }
}

static bool is_container(uint8_t m) {
  return (m >= 0x80 && m <= 0x9f) || (m >= 0xdc && m <= 0xdf);
}

/* depth: containers around the value (the outer map's entries are at 1);
 * a container at depth MP_DEPTH_MAX is the deepest allowed, scalars go one
 * deeper (the rule of b2s_mp_skip with B2S_MP_MAX_DEPTH). */
static bool skip(mp_cur *c, int depth) {
  const uint8_t *p;
  if (!take(c, 1, &p))
    return false;
  uint8_t m = *p;
  if (is_container(m) && depth > MP_DEPTH_MAX)
    return false;
  int fixed = fixed_size(m);
  if (fixed >= 0)
    return take(c, (size_t)fixed, NULL);
  if (m >= 0x80 && m <= 0x8f)
    return skip_items(c, 2u * (m & 0x0f), depth);
  if (m >= 0x90 && m <= 0x9f)
    return skip_items(c, m & 0x0f, depth);
  if (m >= 0xa0 && m <= 0xbf)
    return skip_str(c, m & 0x1f);
  uint64_t n;
  size_t w = len_width(m);
  if (w == 0 || !take_len(c, w, &n))
    return false;                    /* 0xc1, never used */
  if (m >= 0xd9 && m <= 0xdb)
    return skip_str(c, n);
  if (m == 0xdc || m == 0xdd)
    return skip_items(c, n, depth);
  if (m == 0xde || m == 0xdf)
    return skip_items(c, 2 * n, depth);
  if (m >= 0xc7 && m <= 0xc9)
    n += 1;                          /* ext: the type byte */
  return n <= c->len - c->pos && take(c, (size_t)n, NULL);
}

static bool is_str_marker(uint8_t m) {
  return (m >= 0xa0 && m <= 0xbf) || (m >= 0xd9 && m <= 0xdb);
}

/* The map header: its entry count, or false when buf is no map. */
static bool map_count(mp_cur *c, uint64_t *n) {
  const uint8_t *p;
  if (!take(c, 1, &p))
    return false;
  if (*p >= 0x80 && *p <= 0x8f) {
    *n = *p & 0x0f;
    return true;
  }
  if (*p == 0xde || *p == 0xdf)
    return take_len(c, *p == 0xde ? 2 : 4, n);
  return false;
}

int b2s_wire_mp_map_check(const uint8_t *buf, size_t len, bool str_keys) {
  mp_cur c = {buf, len, 0};
  uint64_t n;
  if (buf == NULL || !map_count(&c, &n) || n > len)
    return B2S_E_PROTO;
  for (uint64_t i = 0; i < n; i++) {
    if (str_keys && (c.pos >= len || !is_str_marker(buf[c.pos])))
      return B2S_E_PROTO;
    if (!skip(&c, 1) || !skip(&c, 1))
      return B2S_E_PROTO;
  }
  return c.pos == len ? 0 : B2S_E_PROTO;
}

/* ---- record frame ------------------------------------------------------- */

static void store_le(uint8_t *p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++, v >>= 8)
    p[i] = (uint8_t)v;
}

static uint64_t load_le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;)
    v = v << 8 | p[i];
  return v;
}

/* The rules shared by encode and decode. */
static bool rec_ok(const b2s_wire_rec *r) {
  if ((r->present & ~REC_PRESENT_ALL) || (r->flags & ~REC_FLAGS_ALL) ||
      r->user_len > B2S_WIRE_USER_MAX)
    return false;
  if ((!(r->present & B2S_WIRE_REC_FRAME) && r->frame != 0) ||
      (!(r->present & B2S_WIRE_REC_TS) && r->ts_ns != 0) ||
      (!(r->present & B2S_WIRE_REC_XXH64) && r->xxh64 != 0))
    return false;
  if (r->user_len > 0 && r->user == NULL)
    return false;
  if (!(r->present & B2S_WIRE_REC_USER_MAP))
    return true;
  return r->user_len > 0 &&
         b2s_wire_mp_map_check(r->user, r->user_len, false) == 0;
}

size_t b2s_wire_rec_len(const b2s_wire_rec *r) {
  return B2S_WIRE_REC_FIXED + (size_t)r->user_len;
}

int b2s_wire_rec_encode(const b2s_wire_rec *r, uint8_t *buf, size_t cap) {
  if (r == NULL || !rec_ok(r))
    return B2S_E_ARG;
  size_t len = b2s_wire_rec_len(r);
  if (buf == NULL || cap < len)
    return B2S_E_DEST_SMALL;
  store_le(buf, r->frame, 8);
  store_le(buf + 8, (uint64_t)r->ts_ns, 8);
  store_le(buf + 16, r->xxh64, 8);
  store_le(buf + 24, r->present, 2);
  store_le(buf + 26, r->flags, 2);
  store_le(buf + 28, r->user_len, 2);
  if (r->user_len > 0)
    memcpy(buf + B2S_WIRE_REC_FIXED, r->user, r->user_len);
  return (int)len;
}

int b2s_wire_rec_decode(const uint8_t *buf, size_t len, b2s_wire_rec *r) {
  if (r == NULL)
    return B2S_E_ARG;
  memset(r, 0, sizeof *r);
  if (buf == NULL || len < B2S_WIRE_REC_FIXED)
    return B2S_E_PROTO;
  r->frame = load_le(buf, 8);
  uint64_t ts = load_le(buf + 8, 8);
  /* two's complement reinterpretation, defined for exact-width types */
  r->ts_ns = ts > INT64_MAX ? -(int64_t)(UINT64_MAX - ts) - 1 : (int64_t)ts;
  r->xxh64 = load_le(buf + 16, 8);
  r->present = (uint16_t)load_le(buf + 24, 2);
  r->flags = (uint16_t)load_le(buf + 26, 2);
  r->user_len = (uint16_t)load_le(buf + 28, 2);
  if (r->user_len > len - B2S_WIRE_REC_FIXED)
    return B2S_E_PROTO;
  r->user = r->user_len > 0 ? buf + B2S_WIRE_REC_FIXED : NULL;
  if (!rec_ok(r))
    return B2S_E_PROTO;
  return (int)b2s_wire_rec_len(r);
}

int b2s_wire_rec_check_producer(const b2s_wire_rec *r) {
  return r != NULL && !(r->present & B2S_WIRE_REC_XXH64) && r->flags == 0
             ? 0 : B2S_E_PROTO;
}

/* Fixed-width msgpack readers and writers (see b2s_msgpack.h). */
#include "b2s_msgpack.h"

#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"

void b2s_mpreader_init(b2s_mpreader *r, const void *buf, size_t len) {
  r->buf = buf;
  r->len = buf != NULL ? len : 0;
  r->pos = 0;
}

size_t b2s_mpreader_left(const b2s_mpreader *r) {
  return r->pos <= r->len ? r->len - r->pos : 0;
}

uint16_t b2s_mp_load_be16(const uint8_t *p) {
  return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

uint32_t b2s_mp_load_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

uint64_t b2s_mp_load_be64(const uint8_t *p) {
  return (uint64_t)b2s_mp_load_be32(p) << 32 | b2s_mp_load_be32(p + 4);
}

void b2s_mp_store_be16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

void b2s_mp_store_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

void b2s_mp_store_be64(uint8_t *p, uint64_t v) {
  b2s_mp_store_be32(p, (uint32_t)(v >> 32));
  b2s_mp_store_be32(p + 4, (uint32_t)v);
}

/* ---- readers ---------------------------------------------------------- */

/* Check that `need` bytes (marker included) are available at the cursor and
 * that the marker is `marker`; returns a pointer to the payload. */
static int expect(const b2s_mpreader *r, uint8_t marker, size_t need,
                  const uint8_t **payload) {
  if (b2s_mpreader_left(r) < 1)
    return B2S_E_TRUNCATED;
  if (r->buf[r->pos] != marker)
    return B2S_E_MSGPACK;
  if (b2s_mpreader_left(r) < need)
    return B2S_E_TRUNCATED;
  *payload = r->buf + r->pos + 1;
  return 0;
}

/* Like expect() for the "fix" families, whose marker carries a small value
 * in its low bits: marker & ~mask must equal base. */
static int expect_fix(const b2s_mpreader *r, uint8_t base, uint8_t mask,
                      uint8_t *low) {
  if (b2s_mpreader_left(r) < 1)
    return B2S_E_TRUNCATED;
  uint8_t m = r->buf[r->pos];
  if ((m & (uint8_t)~mask) != base)
    return B2S_E_MSGPACK;
  *low = m & mask;
  return 0;
}

int b2s_mp_read_fixarray(b2s_mpreader *r, uint8_t *n) {
  int rc = expect_fix(r, B2S_MP_FIXARRAY, 0x0f, n);
  if (rc == 0)
    r->pos += 1;
  return rc;
}

int b2s_mp_read_fixint(b2s_mpreader *r, uint8_t *v) {
  int rc = expect_fix(r, 0x00, 0x7f, v);
  if (rc == 0)
    r->pos += 1;
  return rc;
}

int b2s_mp_read_fixstr(b2s_mpreader *r, const uint8_t **s, uint8_t *n) {
  uint8_t len;
  int rc = expect_fix(r, B2S_MP_FIXSTR, 0x1f, &len);
  if (rc < 0)
    return rc;
  if (b2s_mpreader_left(r) < 1 + (size_t)len)
    return B2S_E_TRUNCATED;
  *s = r->buf + r->pos + 1;
  *n = len;
  r->pos += 1 + (size_t)len;
  return 0;
}

int b2s_mp_read_str8(b2s_mpreader *r, const uint8_t **s, uint8_t *n) {
  const uint8_t *p;
  int rc = expect(r, B2S_MP_STR8, 2, &p);
  if (rc < 0)
    return rc;
  uint8_t len = p[0];
  if (b2s_mpreader_left(r) - 2 < len)
    return B2S_E_TRUNCATED;
  *s = p + 1;
  *n = len;
  r->pos += 2 + (size_t)len;
  return 0;
}

/* str32 and bin32 share the layout: marker, uint32 BE length, bytes. */
static int read_len32(b2s_mpreader *r, uint8_t marker, const uint8_t **s,
                      uint32_t *n) {
  const uint8_t *p;
  int rc = expect(r, marker, 5, &p);
  if (rc < 0)
    return rc;
  uint32_t len = b2s_mp_load_be32(p);
  if (b2s_mpreader_left(r) - 5 < len)
    return B2S_E_TRUNCATED;
  *s = p + 4;
  *n = len;
  r->pos += 5 + (size_t)len;
  return 0;
}

int b2s_mp_read_str32(b2s_mpreader *r, const uint8_t **s, uint32_t *n) {
  return read_len32(r, B2S_MP_STR32, s, n);
}

int b2s_mp_read_bin32(b2s_mpreader *r, const uint8_t **s, uint32_t *n) {
  return read_len32(r, B2S_MP_BIN32, s, n);
}

/* Integers: marker then `width` big-endian bytes. */
static int read_be(b2s_mpreader *r, uint8_t marker, size_t width,
                   uint64_t *v) {
  const uint8_t *p;
  int rc = expect(r, marker, 1 + width, &p);
  if (rc < 0)
    return rc;
  switch (width) {
  case 2: *v = b2s_mp_load_be16(p); break;
  case 4: *v = b2s_mp_load_be32(p); break;
  default: *v = b2s_mp_load_be64(p); break;
  }
  r->pos += 1 + width;
  return 0;
}

int b2s_mp_read_int16(b2s_mpreader *r, int16_t *v) {
  uint64_t u;
  int rc = read_be(r, B2S_MP_INT16, 2, &u);
  if (rc == 0)
    *v = (int16_t)(uint16_t)u;   /* two's complement, as written */
  return rc;
}

int b2s_mp_read_int32(b2s_mpreader *r, int32_t *v) {
  uint64_t u;
  int rc = read_be(r, B2S_MP_INT32, 4, &u);
  if (rc == 0)
    *v = (int32_t)(uint32_t)u;
  return rc;
}

int b2s_mp_read_int64(b2s_mpreader *r, int64_t *v) {
  uint64_t u;
  int rc = read_be(r, B2S_MP_INT64, 8, &u);
  if (rc == 0)
    *v = (int64_t)u;
  return rc;
}

int b2s_mp_read_uint16(b2s_mpreader *r, uint16_t *v) {
  uint64_t u;
  int rc = read_be(r, B2S_MP_UINT16, 2, &u);
  if (rc == 0)
    *v = (uint16_t)u;
  return rc;
}

int b2s_mp_read_uint32(b2s_mpreader *r, uint32_t *v) {
  uint64_t u;
  int rc = read_be(r, B2S_MP_UINT32, 4, &u);
  if (rc == 0)
    *v = (uint32_t)u;
  return rc;
}

int b2s_mp_read_uint64(b2s_mpreader *r, uint64_t *v) {
  return read_be(r, B2S_MP_UINT64, 8, v);
}

int b2s_mp_read_map16(b2s_mpreader *r, uint16_t *n) {
  uint64_t u;
  int rc = read_be(r, B2S_MP_MAP16, 2, &u);
  if (rc == 0)
    *n = (uint16_t)u;
  return rc;
}

int b2s_mp_read_array16(b2s_mpreader *r, uint16_t *n) {
  uint64_t u;
  int rc = read_be(r, B2S_MP_ARRAY16, 2, &u);
  if (rc == 0)
    *n = (uint16_t)u;
  return rc;
}

int b2s_mp_read_fixext16(b2s_mpreader *r, int8_t *type, const uint8_t **data) {
  const uint8_t *p;
  int rc = expect(r, B2S_MP_FIXEXT16, 18, &p);
  if (rc < 0)
    return rc;
  *type = (int8_t)p[0];
  *data = p + 1;
  r->pos += 18;
  return 0;
}

int b2s_mp_read_bool(b2s_mpreader *r, bool *v) {
  if (b2s_mpreader_left(r) < 1)
    return B2S_E_TRUNCATED;
  uint8_t m = r->buf[r->pos];
  if (m != B2S_MP_FALSE && m != B2S_MP_TRUE)
    return B2S_E_MSGPACK;
  *v = m == B2S_MP_TRUE;
  r->pos += 1;
  return 0;
}

int b2s_mp_read_raw(b2s_mpreader *r, size_t n, const uint8_t **p) {
  if (b2s_mpreader_left(r) < n)
    return B2S_E_TRUNCATED;
  *p = r->buf + r->pos;
  r->pos += n;
  return 0;
}

/* ---- writers ---------------------------------------------------------- */

void b2s_mpbuf_init(b2s_mpbuf *b) {
  b->data = NULL;
  b->len = b->cap = 0;
}

void b2s_mpbuf_fini(b2s_mpbuf *b) {
  if (b == NULL)
    return;
  free(b->data);
  b2s_mpbuf_init(b);
}

int b2s_mpbuf_reserve(b2s_mpbuf *b, size_t extra) {
  if (extra > SIZE_MAX - b->len)
    return B2S_E_NOMEM;
  size_t need = b->len + extra;
  if (need <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 128;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  uint8_t *p = realloc(b->data, cap);
  if (p == NULL)
    return B2S_E_NOMEM;
  b->data = p;
  b->cap = cap;
  return 0;
}

int b2s_mp_write_raw(b2s_mpbuf *b, const void *p, size_t n) {
  int rc = b2s_mpbuf_reserve(b, n);
  if (rc < 0)
    return rc;
  if (n > 0)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

static int put_byte(b2s_mpbuf *b, uint8_t v) {
  return b2s_mp_write_raw(b, &v, 1);
}

/* Marker plus a big-endian integer of `width` bytes. */
static int put_be(b2s_mpbuf *b, uint8_t marker, size_t width, uint64_t v) {
  uint8_t tmp[9];
  tmp[0] = marker;
  switch (width) {
  case 2: b2s_mp_store_be16(tmp + 1, (uint16_t)v); break;
  case 4: b2s_mp_store_be32(tmp + 1, (uint32_t)v); break;
  default: b2s_mp_store_be64(tmp + 1, v); break;
  }
  return b2s_mp_write_raw(b, tmp, 1 + width);
}

int b2s_mp_write_fixarray(b2s_mpbuf *b, uint8_t n) {
  if (n > 15)
    return B2S_E_ARG;
  return put_byte(b, (uint8_t)(B2S_MP_FIXARRAY | n));
}

int b2s_mp_write_fixint(b2s_mpbuf *b, uint8_t v) {
  if (v > B2S_MP_FIXINT_MAX)
    return B2S_E_ARG;
  return put_byte(b, v);
}

int b2s_mp_write_fixstr(b2s_mpbuf *b, const void *s, size_t n) {
  if (n > 31)
    return B2S_E_ARG;
  int rc = b2s_mpbuf_reserve(b, 1 + n);
  if (rc < 0)
    return rc;
  put_byte(b, (uint8_t)(B2S_MP_FIXSTR | n));
  return b2s_mp_write_raw(b, s, n);
}

int b2s_mp_write_str8(b2s_mpbuf *b, const void *s, size_t n) {
  if (n > UINT8_MAX)
    return B2S_E_ARG;
  uint8_t tmp[2] = {B2S_MP_STR8, (uint8_t)n};
  int rc = b2s_mpbuf_reserve(b, 2 + n);
  if (rc < 0)
    return rc;
  b2s_mp_write_raw(b, tmp, 2);
  return b2s_mp_write_raw(b, s, n);
}

static int put_len32(b2s_mpbuf *b, uint8_t marker, const void *s, size_t n) {
  if (n > UINT32_MAX)
    return B2S_E_ARG;
  int rc = b2s_mpbuf_reserve(b, 5 + n);
  if (rc < 0)
    return rc;
  put_be(b, marker, 4, n);
  return b2s_mp_write_raw(b, s, n);
}

int b2s_mp_write_str32(b2s_mpbuf *b, const void *s, size_t n) {
  return put_len32(b, B2S_MP_STR32, s, n);
}

int b2s_mp_write_bin32(b2s_mpbuf *b, const void *s, size_t n) {
  return put_len32(b, B2S_MP_BIN32, s, n);
}

int b2s_mp_write_int16(b2s_mpbuf *b, int16_t v) {
  return put_be(b, B2S_MP_INT16, 2, (uint16_t)v);
}

int b2s_mp_write_int32(b2s_mpbuf *b, int32_t v) {
  return put_be(b, B2S_MP_INT32, 4, (uint32_t)v);
}

int b2s_mp_write_int64(b2s_mpbuf *b, int64_t v) {
  return put_be(b, B2S_MP_INT64, 8, (uint64_t)v);
}

int b2s_mp_write_uint16(b2s_mpbuf *b, uint16_t v) {
  return put_be(b, B2S_MP_UINT16, 2, v);
}

int b2s_mp_write_uint32(b2s_mpbuf *b, uint32_t v) {
  return put_be(b, B2S_MP_UINT32, 4, v);
}

int b2s_mp_write_uint64(b2s_mpbuf *b, uint64_t v) {
  return put_be(b, B2S_MP_UINT64, 8, v);
}

int b2s_mp_write_map16(b2s_mpbuf *b, uint16_t n) {
  return put_be(b, B2S_MP_MAP16, 2, n);
}

int b2s_mp_write_array16(b2s_mpbuf *b, uint16_t n) {
  return put_be(b, B2S_MP_ARRAY16, 2, n);
}

int b2s_mp_write_fixext16(b2s_mpbuf *b, int8_t type, const uint8_t data[16]) {
  uint8_t tmp[18];
  tmp[0] = B2S_MP_FIXEXT16;
  tmp[1] = (uint8_t)type;
  memcpy(tmp + 2, data, 16);
  return b2s_mp_write_raw(b, tmp, sizeof tmp);
}

int b2s_mp_write_bool(b2s_mpbuf *b, bool v) {
  return put_byte(b, v ? B2S_MP_TRUE : B2S_MP_FALSE);
}

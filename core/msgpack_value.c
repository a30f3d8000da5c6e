/* msgpack values in any encoding on read, the shortest one on write (see
 * b2s_msgpack.h: series metadata and chunk records). */
#include <string.h>

#include "b2s_errors.h"
#include "b2s_msgpack.h"

/* ---- reading ------------------------------------------------------------ */

static uint64_t load_be(const uint8_t *p, size_t width) {
  uint64_t v = 0;
  for (size_t k = 0; k < width; k++)
    v = v << 8 | p[k];
  return v;
}

/* A signed value of `width` bytes at p, sign-extended. */
static int64_t load_signed(const uint8_t *p, size_t width) {
  uint64_t u = load_be(p, width);
  unsigned shift = (unsigned)(64 - 8 * width);
  /* shift the sign bit to bit 63 and back (arithmetic on int64_t) */
  return shift == 0 ? (int64_t)u : (int64_t)(u << shift) >> shift;
}

static void set_int(b2s_mpval *v, int64_t i) {
  if (i >= 0) {
    v->type = B2S_MPT_UINT;
    v->u = (uint64_t)i;
  } else {
    v->type = B2S_MPT_INT;
    v->i = i;
  }
}

static double load_float(const uint8_t *p, size_t width) {
  if (width == 4) {
    uint32_t u = (uint32_t)load_be(p, 4);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  uint64_t u = load_be(p, 8);
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* Fixed-size payloads: number of bytes after the marker (0 = not one). */
static size_t fixed_width(uint8_t m) {
  switch (m) {
  case 0xcc: case 0xd0: return 1;
  case 0xcd: case 0xd1: return 2;
  case 0xca: case 0xce: case 0xd2: return 4;
  case 0xcb: case 0xcf: case 0xd3: return 8;
  default: return 0;
  }
}

static void decode_fixed(uint8_t m, const uint8_t *p, size_t w, b2s_mpval *v) {
  if (m == 0xca || m == 0xcb) {
    v->type = B2S_MPT_FLOAT;
    v->f = load_float(p, w);
  } else if (m >= 0xcc && m <= 0xcf) {
    v->type = B2S_MPT_UINT;
    v->u = load_be(p, w);
  } else {
    set_int(v, load_signed(p, w));
  }
}

/* Length-prefixed values: str8/16/32, bin8/16/32, ext8/16/32 and the
 * array16/32, map16/32 headers.  Returns the width of the length field. */
static size_t length_width(uint8_t m, int *type) {
  static const struct { uint8_t m; int type; size_t w; } t[] = {
      {0xd9, B2S_MPT_STR, 1},   {0xda, B2S_MPT_STR, 2},
      {0xdb, B2S_MPT_STR, 4},   {0xc4, B2S_MPT_BIN, 1},
      {0xc5, B2S_MPT_BIN, 2},   {0xc6, B2S_MPT_BIN, 4},
      {0xc7, B2S_MPT_EXT, 1},   {0xc8, B2S_MPT_EXT, 2},
      {0xc9, B2S_MPT_EXT, 4},   {0xdc, B2S_MPT_ARRAY, 2},
      {0xdd, B2S_MPT_ARRAY, 4}, {0xde, B2S_MPT_MAP, 2},
      {0xdf, B2S_MPT_MAP, 4},
  };
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++)
    if (t[k].m == m) {
      *type = t[k].type;
      return t[k].w;
    }
  return 0;
}

/* fixext1..16: payload size, or 0. */
static size_t fixext_size(uint8_t m) {
  return m >= 0xd4 && m <= 0xd8 ? (size_t)1 << (m - 0xd4) : 0;
}

/* The one-byte forms; false when m is not one. */
static bool decode_tiny(uint8_t m, b2s_mpval *v) {
  if (m <= 0x7f || m >= 0xe0) {
    set_int(v, (int8_t)m);
  } else if (m <= 0x8f || (m >= 0x90 && m <= 0x9f)) {
    v->type = m <= 0x8f ? B2S_MPT_MAP : B2S_MPT_ARRAY;
    v->n = m & 0x0f;
  } else if (m == 0xc0) {
    v->type = B2S_MPT_NIL;
  } else if (m == 0xc2 || m == 0xc3) {
    v->type = B2S_MPT_BOOL;
    v->b = m == 0xc3;
  } else {
    return false;
  }
  return true;
}

/* Payload of n bytes after a header of h bytes (marker included). */
static int take_payload(b2s_mpreader *r, size_t h, uint64_t n, b2s_mpval *v) {
  size_t left = b2s_mpreader_left(r);
  if (n > left || h > left - n)
    return B2S_E_TRUNCATED;
  v->p = r->buf + r->pos + h;
  v->n = (uint32_t)n;
  r->pos += h + (size_t)n;
  return 0;
}

static int read_prefixed(b2s_mpreader *r, size_t lw, int type, b2s_mpval *v) {
  const uint8_t *p = r->buf + r->pos + 1;
  size_t ext = type == B2S_MPT_EXT ? 1 : 0;
  if (b2s_mpreader_left(r) < 1 + lw + ext)
    return B2S_E_TRUNCATED;
  uint64_t n = load_be(p, lw);
  v->type = type;
  if (type == B2S_MPT_ARRAY || type == B2S_MPT_MAP) {
    v->n = (uint32_t)n;
    r->pos += 1 + lw;
    return 0;
  }
  if (ext)
    v->ext_type = (int8_t)p[lw];
  return take_payload(r, 1 + lw + ext, n, v);
}

int b2s_mp_read_any(b2s_mpreader *r, b2s_mpval *v) {
  if (b2s_mpreader_left(r) < 1)
    return B2S_E_TRUNCATED;
  memset(v, 0, sizeof *v);
  uint8_t m = r->buf[r->pos];
  if (decode_tiny(m, v)) {
    r->pos++;
    return 0;
  }
  if (m >= 0xa0 && m <= 0xbf) {
    v->type = B2S_MPT_STR;
    return take_payload(r, 1, m & 0x1f, v);
  }
  size_t w = fixed_width(m);
  if (w > 0) {
    if (b2s_mpreader_left(r) < 1 + w)
      return B2S_E_TRUNCATED;
    decode_fixed(m, r->buf + r->pos + 1, w, v);
    r->pos += 1 + w;
    return 0;
  }
  size_t fe = fixext_size(m);
  if (fe > 0) {
    if (b2s_mpreader_left(r) < 2)
      return B2S_E_TRUNCATED;
    v->type = B2S_MPT_EXT;
    v->ext_type = (int8_t)r->buf[r->pos + 1];
    return take_payload(r, 2, fe, v);
  }
  int type;
  size_t lw = length_width(m, &type);
  if (lw == 0)
    return B2S_E_MSGPACK;          /* 0xc1: never used */
  return read_prefixed(r, lw, type, v);
}

int b2s_mp_skip(b2s_mpreader *r, int max_depth) {
  size_t start = r->pos;
  b2s_mpval v;
  int rc = b2s_mp_read_any(r, &v);
  if (rc < 0)
    return rc;
  if (v.type != B2S_MPT_ARRAY && v.type != B2S_MPT_MAP)
    return 0;
  uint64_t items = v.type == B2S_MPT_MAP ? 2 * (uint64_t)v.n : v.n;
  /* every element takes at least one byte: a count beyond the bytes left
   * is a lie, caught before looping over it */
  if (items > b2s_mpreader_left(r))
    rc = B2S_E_TRUNCATED;
  else if (max_depth < 0)
    rc = B2S_E_MSGPACK;   /* a container deeper than allowed, even empty */
  for (uint64_t k = 0; rc == 0 && k < items; k++)
    rc = b2s_mp_skip(r, max_depth - 1);
  if (rc < 0)
    r->pos = start;
  return rc;
}

/* ---- writing ------------------------------------------------------------ */

static int put(b2s_mpbuf *b, const uint8_t *p, size_t n) {
  return b2s_mp_write_raw(b, p, n);
}

static int put_marker_be(b2s_mpbuf *b, uint8_t m, size_t width, uint64_t v) {
  uint8_t t[9];
  t[0] = m;
  for (size_t k = 0; k < width; k++)
    t[1 + k] = (uint8_t)(v >> (8 * (width - 1 - k)));
  return put(b, t, 1 + width);
}

int b2s_mp_put_nil(b2s_mpbuf *b) {
  uint8_t m = 0xc0;
  return put(b, &m, 1);
}

int b2s_mp_put_uint(b2s_mpbuf *b, uint64_t v) {
  if (v <= 0x7f) {
    uint8_t m = (uint8_t)v;
    return put(b, &m, 1);
  }
  if (v <= UINT8_MAX)
    return put_marker_be(b, 0xcc, 1, v);
  if (v <= UINT16_MAX)
    return put_marker_be(b, 0xcd, 2, v);
  if (v <= UINT32_MAX)
    return put_marker_be(b, 0xce, 4, v);
  return put_marker_be(b, 0xcf, 8, v);
}

int b2s_mp_put_int(b2s_mpbuf *b, int64_t v) {
  if (v >= 0)
    return b2s_mp_put_uint(b, (uint64_t)v);
  if (v >= -32) {
    uint8_t m = (uint8_t)(int8_t)v;
    return put(b, &m, 1);
  }
  if (v >= INT8_MIN)
    return put_marker_be(b, 0xd0, 1, (uint64_t)v & 0xff);
  if (v >= INT16_MIN)
    return put_marker_be(b, 0xd1, 2, (uint64_t)v & 0xffff);
  if (v >= INT32_MIN)
    return put_marker_be(b, 0xd2, 4, (uint64_t)v & 0xffffffffu);
  return put_marker_be(b, 0xd3, 8, (uint64_t)v);
}

int b2s_mp_put_float64(b2s_mpbuf *b, double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  return put_marker_be(b, 0xcb, 8, u);
}

/* Header of a str/bin/array/map of n: the fix form when there is one
 * (fix_max > 0), else the smallest of the 8-, 16- and 32-bit forms
 * (m8 = 0: no 8-bit form). */
static int put_len(b2s_mpbuf *b, uint64_t n, uint8_t fix, uint64_t fix_max,
                   uint8_t m8, uint8_t m16, uint8_t m32) {
  if (n > UINT32_MAX)
    return B2S_E_ARG;
  if (fix_max > 0 && n <= fix_max) {
    uint8_t m = (uint8_t)(fix | n);
    return put(b, &m, 1);
  }
  if (m8 != 0 && n <= UINT8_MAX)
    return put_marker_be(b, m8, 1, n);
  if (n <= UINT16_MAX)
    return put_marker_be(b, m16, 2, n);
  return put_marker_be(b, m32, 4, n);
}

int b2s_mp_put_str(b2s_mpbuf *b, const void *s, size_t n) {
  int rc = put_len(b, n, 0xa0, 31, 0xd9, 0xda, 0xdb);
  return rc < 0 || n == 0 ? rc : put(b, s, n);
}

int b2s_mp_put_bin(b2s_mpbuf *b, const void *s, size_t n) {
  /* bin has no fix form (fix_max 0) */
  int rc = put_len(b, n, 0, 0, 0xc4, 0xc5, 0xc6);
  return rc < 0 || n == 0 ? rc : put(b, s, n);
}

int b2s_mp_put_array(b2s_mpbuf *b, uint32_t n) {
  return put_len(b, n, 0x90, 15, 0, 0xdc, 0xdd);
}

int b2s_mp_put_map(b2s_mpbuf *b, uint32_t n) {
  return put_len(b, n, 0x80, 15, 0, 0xde, 0xdf);
}

/* ---- UTF-8 -------------------------------------------------------------- */

/* Length of the sequence starting with lead byte c and the range its
 * second byte must fall in; 0 for a byte that cannot start one. */
static int utf8_lead(uint8_t c, uint8_t *lo, uint8_t *hi) {
  *lo = 0x80;
  *hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf)
    return 2;
  if (c >= 0xe0 && c <= 0xef) {
    if (c == 0xe0)
      *lo = 0xa0;                  /* no overlong forms */
    if (c == 0xed)
      *hi = 0x9f;                  /* no surrogates */
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (c == 0xf0)
      *lo = 0x90;
    if (c == 0xf4)
      *hi = 0x8f;                  /* nothing above U+10FFFF */
    return 4;
  }
  return 0;
}

size_t b2s_utf8_seq(const uint8_t *s, size_t n) {
  if (s[0] < 0x80)
    return 1;
  uint8_t lo, hi;
  int len = utf8_lead(s[0], &lo, &hi);
  if (len == 0 || n < (size_t)len || s[1] < lo || s[1] > hi)
    return 0;
  for (int k = 2; k < len; k++)
    if ((s[k] & 0xc0) != 0x80)
      return 0;
  return (size_t)len;
}

bool b2s_utf8_valid(const uint8_t *s, size_t n) {
  for (size_t i = 0, k; i < n; i += k)
    if ((k = b2s_utf8_seq(s + i, n - i)) == 0)
      return false;
  return true;
}

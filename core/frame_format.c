/* Frame header, metalayer section, trailer and b2nd metalayer: parsing and
 * serialisation (see b2s_frame_format.h; layout in BLOSC2_FORMAT.md 4.1-4.7, 6).
 *
 * Error codes name the structure that is broken (B2S_E_FRAME for the fixed
 * header, B2S_E_META, B2S_E_TRAILER, B2S_E_VLMETA, B2S_E_B2ND); the reason
 * string says what was wrong and the offset where. */
#include "b2s_frame_format.h"

#include <stdlib.h>
#include <string.h>

#include "b2s_chunk.h"
#include "b2s_errors.h"

int b2s_frame_error_set(b2s_frame_error *err, int code, int64_t offset,
                        const char *reason) {
  if (err != NULL) {
    err->code = code;
    err->offset = offset;
    err->reason = reason;
  }
  return code;
}

void b2s_frame_error_clear(b2s_frame_error *err) {
  if (err == NULL)
    return;
  err->code = 0;
  err->offset = -1;
  err->nchunk = -1;
  err->in_chunk_file = false;
  err->reason = NULL;
}

/* A msgpack reader failure inside a structure: report it under the
 * structure's code at the reader's position. */
static int mp_fail(b2s_frame_error *err, int code, size_t at, int64_t base,
                   const char *what) {
  return b2s_frame_error_set(err, code, base + (int64_t)at, what);
}

/* ---- metalayer lists ---------------------------------------------------- */

void b2s_frame_metas_init(b2s_frame_metas *m) {
  m->items = NULL;
  m->n = m->cap = 0;
}

void b2s_frame_metas_fini(b2s_frame_metas *m) {
  if (m == NULL)
    return;
  for (int32_t i = 0; i < m->n; i++)
    free(m->items[i].content);
  free(m->items);
  b2s_frame_metas_init(m);
}

int b2s_frame_metas_find(const b2s_frame_metas *m, const char *name) {
  if (m == NULL || name == NULL)
    return B2S_E_ARG;
  for (int32_t i = 0; i < m->n; i++)
    if (strcmp(m->items[i].name, name) == 0)
      return (int)i;
  return B2S_E_NOTFOUND;
}

/* Append an entry without the duplicate check (parsers accept duplicates
 * as c-blosc2 does; lookups return the first). */
static int metas_push(b2s_frame_metas *m, const uint8_t *name, size_t nlen,
                      const uint8_t *content, int32_t len, int64_t offset) {
  if (m->n == m->cap) {
    int32_t cap = m->cap ? m->cap * 2 : 4;
    b2s_frame_meta *p = realloc(m->items, (size_t)cap * sizeof *p);
    if (p == NULL)
      return B2S_E_NOMEM;
    m->items = p;
    m->cap = cap;
  }
  b2s_frame_meta *e = &m->items[m->n];
  memset(e, 0, sizeof *e);
  memcpy(e->name, name, nlen);
  e->name[nlen] = '\0';
  if (len > 0) {
    e->content = malloc((size_t)len);
    if (e->content == NULL)
      return B2S_E_NOMEM;
    memcpy(e->content, content, (size_t)len);
  }
  e->len = len;
  e->offset = offset;
  return (int)m->n++;
}

int b2s_frame_metas_add(b2s_frame_metas *m, const char *name,
                        const void *content, int32_t len) {
  if (m == NULL || name == NULL || len < 0 || (len > 0 && content == NULL))
    return B2S_E_ARG;
  size_t nlen = strlen(name);
  if (nlen > B2S_FRAME_NAME_MAX || b2s_frame_metas_find(m, name) >= 0)
    return B2S_E_ARG;
  return metas_push(m, (const uint8_t *)name, nlen, content, len, -1);
}

/* ---- fixed header -------------------------------------------------------- */

/* Read the 14 msgpack values of the fixed header.  Only markers and lengths
 * are checked here; the values are checked by check_header(). */
static int read_header_values(b2s_mpreader *r, b2s_frame_header *h,
                              b2s_frame_error *err) {
  uint8_t n;
  const uint8_t *s;
  uint64_t frame_len;
  int8_t type;
  size_t at;
  /* Each step remembers where its value starts: that is the offset to
   * report when the marker or the value is wrong. */
#define STEP_(call, ok, what)                                                  \
  do {                                                                         \
    at = r->pos;                                                               \
    if ((call) < 0 || !(ok))                                                   \
      return mp_fail(err, B2S_E_FRAME, at, 0, what);                           \
  } while (0)
  STEP_(b2s_mp_read_fixarray(r, &n), n == 14,
        "not a frame: no 14-element array");
  STEP_(b2s_mp_read_fixstr(r, &s, &n), n == 8 && !memcmp(s, "b2frame", 8),
        "not a frame: bad magic");
  STEP_(b2s_mp_read_int32(r, &h->header_len), true, "bad header_len marker");
  STEP_(b2s_mp_read_uint64(r, &frame_len), frame_len <= (uint64_t)INT64_MAX,
        "bad frame_len");
  h->frame_len = (int64_t)frame_len;
  STEP_(b2s_mp_read_fixstr(r, &s, &n), n == 4, "bad flags string");
  h->general_flags = s[0];
  h->frame_type = s[1];
  h->codec_flags = s[2];
  h->other_flags = s[3];
  STEP_(b2s_mp_read_int64(r, &h->nbytes), true, "bad nbytes marker");
  STEP_(b2s_mp_read_int64(r, &h->cbytes), true, "bad cbytes marker");
  STEP_(b2s_mp_read_int32(r, &h->typesize), true, "bad typesize marker");
  STEP_(b2s_mp_read_int32(r, &h->blocksize), true, "bad blocksize marker");
  STEP_(b2s_mp_read_int32(r, &h->chunksize), true, "bad chunksize marker");
  STEP_(b2s_mp_read_int16(r, &h->nthreads_c), true, "bad thread count marker");
  STEP_(b2s_mp_read_int16(r, &h->nthreads_d), true, "bad thread count marker");
  STEP_(b2s_mp_read_bool(r, &h->has_vlmeta), true,
        "bad has-vlmetalayers marker");
  STEP_(b2s_mp_read_fixext16(r, &type, &s), true,
        "bad filter pipeline marker");
#undef STEP_
  h->nfilters = (uint8_t)type;
  memcpy(h->filters, s, 6);
  h->udcodec = s[6];
  h->compcode_meta = s[7];
  memcpy(h->filters_meta, s + 8, 6);
  h->other_flags2 = s[14];
  h->reserved = s[15];
  return 0;
}

static int check_header(const b2s_frame_header *h, b2s_frame_error *err) {
  const int code = B2S_E_FRAME;
  if (h->header_len < B2S_FRAME_HEADER_FIXED)
    return b2s_frame_error_set(err, code, B2S_FRAME_OFF_HEADER_LEN,
                               "header_len smaller than 87");
  if (h->header_len > h->frame_len)
    return b2s_frame_error_set(err, code, B2S_FRAME_OFF_HEADER_LEN,
                               "header_len exceeds frame_len");
  if ((h->general_flags & B2S_FRAME_GF_VERSION_MASK) > B2S_FRAME_VERSION_MAX)
    return b2s_frame_error_set(err, B2S_E_FRAME_VERSION,
                               B2S_FRAME_OFF_GENERAL_FLAGS,
                               "frame format version above 3");
  if (h->nbytes < 0)
    return b2s_frame_error_set(err, code, B2S_FRAME_OFF_NBYTES,
                               "negative nbytes");
  if (h->cbytes < 0)
    return b2s_frame_error_set(err, code, B2S_FRAME_OFF_CBYTES,
                               "negative cbytes");
  if (h->typesize <= 0)
    return b2s_frame_error_set(err, code, B2S_FRAME_OFF_TYPESIZE,
                               "typesize not positive");
  if (h->nfilters > B2S_FRAME_NFILTERS)
    return b2s_frame_error_set(err, code, B2S_FRAME_OFF_NFILTERS,
                               "more than 6 filters");
  if (h->nbytes > 0 && h->chunksize < 0)
    return b2s_frame_error_set(err, code, B2S_FRAME_OFF_CHUNKSIZE,
                               "negative chunksize in a frame with data");
  return 0;
}

int b2s_frame_header_parse(const uint8_t *buf, size_t len,
                           b2s_frame_header *h, b2s_frame_error *err) {
  if (buf == NULL || h == NULL)
    return b2s_frame_error_set(err, B2S_E_ARG, -1, "no buffer");
  if (len < B2S_FRAME_HEADER_FIXED)
    return b2s_frame_error_set(err, B2S_E_TRUNCATED, (int64_t)len,
                               "shorter than the 87-byte frame header");
  memset(h, 0, sizeof *h);
  b2s_mpreader r;
  b2s_mpreader_init(&r, buf, B2S_FRAME_HEADER_FIXED);
  int rc = read_header_values(&r, h, err);
  if (rc < 0)
    return rc;
  return check_header(h, err);
}

void b2s_frame_header_encode(const b2s_frame_header *h,
                             uint8_t out[B2S_FRAME_HEADER_FIXED]) {
  uint8_t *p = out;
  *p++ = B2S_MP_FIXARRAY | 14;
  *p++ = B2S_MP_FIXSTR | 8;
  memcpy(p, B2S_FRAME_MAGIC, 8);   /* includes the NUL */
  p += 8;
  *p++ = B2S_MP_INT32;
  b2s_mp_store_be32(p, (uint32_t)h->header_len);
  p += 4;
  *p++ = B2S_MP_UINT64;
  b2s_mp_store_be64(p, (uint64_t)h->frame_len);
  p += 8;
  *p++ = B2S_MP_FIXSTR | 4;
  *p++ = h->general_flags;
  *p++ = h->frame_type;
  *p++ = h->codec_flags;
  *p++ = h->other_flags;
  *p++ = B2S_MP_INT64;
  b2s_mp_store_be64(p, (uint64_t)h->nbytes);
  p += 8;
  *p++ = B2S_MP_INT64;
  b2s_mp_store_be64(p, (uint64_t)h->cbytes);
  p += 8;
  const int32_t i32[3] = {h->typesize, h->blocksize, h->chunksize};
  for (int i = 0; i < 3; i++) {
    *p++ = B2S_MP_INT32;
    b2s_mp_store_be32(p, (uint32_t)i32[i]);
    p += 4;
  }
  *p++ = B2S_MP_INT16;
  b2s_mp_store_be16(p, (uint16_t)h->nthreads_c);
  p += 2;
  *p++ = B2S_MP_INT16;
  b2s_mp_store_be16(p, (uint16_t)h->nthreads_d);
  p += 2;
  *p++ = h->has_vlmeta ? B2S_MP_TRUE : B2S_MP_FALSE;
  *p++ = B2S_MP_FIXEXT16;
  *p++ = h->nfilters;
  memcpy(p, h->filters, 6);
  p += 6;
  *p++ = h->udcodec;
  *p++ = h->compcode_meta;
  memcpy(p, h->filters_meta, 6);
  p += 6;
  *p++ = h->other_flags2;
  *p++ = h->reserved;
}

/* ---- metalayer sections (header and trailer share the shape) -------------
 *
 *   [93] cd HHHH  de NNNN { fixstr name, d2 offset }*N  dc NNNN { c6 ... }*N
 *
 * Offsets are relative to `origin` (frame start for metalayers, trailer
 * start for vlmetalayers).  The section is read from r, whose buffer starts
 * at origin; contents must lie in [end of the dc header, limit). */

typedef struct section_rules {
  int code;                        /* B2S_E_META or B2S_E_VLMETA */
  int max_entries;
  int64_t base;                    /* frame offset of the buffer start */
} section_rules;

typedef struct map_entry {
  const uint8_t *name;
  uint8_t nlen;
  int32_t offset;
  size_t at;                       /* position of the entry, for errors */
} map_entry;

static int read_map(b2s_mpreader *r, const section_rules *sr, map_entry **out,
                    uint16_t *count, b2s_frame_error *err) {
  uint16_t n, m;
  size_t at = r->pos;
  if (b2s_mp_read_map16(r, &n) < 0)
    return mp_fail(err, sr->code, at, sr->base, "bad map16 marker");
  /* each entry takes at least 6 bytes (empty fixstr + int32) */
  if (n > sr->max_entries || (size_t)n * 6 > b2s_mpreader_left(r))
    return mp_fail(err, sr->code, at, sr->base, "too many entries");
  map_entry *e = n ? calloc(n, sizeof *e) : NULL;
  if (n && e == NULL)
    return B2S_E_NOMEM;
  const char *why = NULL;
  for (uint16_t i = 0; i < n && why == NULL; i++) {
    at = e[i].at = r->pos;
    if (b2s_mp_read_fixstr(r, &e[i].name, &e[i].nlen) < 0)
      why = "bad name (not a fixstr of at most 31 bytes)";
    else if (memchr(e[i].name, 0, e[i].nlen) != NULL)
      why = "NUL byte in a name";
    else if ((at = r->pos, b2s_mp_read_int32(r, &e[i].offset) < 0))
      why = "bad offset marker";
  }
  if (why == NULL) {
    at = r->pos;
    if (b2s_mp_read_array16(r, &m) < 0)
      why = "bad array16 marker";
    else if (m != n)
      why = "content count differs from name count";
  }
  if (why != NULL) {
    free(e);
    return mp_fail(err, sr->code, at, sr->base, why);
  }
  *out = e;
  *count = n;
  return 0;
}

/* Locate every content through its offset and copy it into list.  The
 * contents (with their 5-byte bin32 prefix) may not add up to more than the
 * content area: entries sharing one large content would otherwise multiply
 * the memory a small section can claim. */
static int read_contents(const uint8_t *buf, size_t start, size_t limit,
                         const section_rules *sr, const map_entry *e,
                         uint16_t n, b2s_frame_metas *list,
                         b2s_frame_error *err) {
  size_t total = 0;
  for (uint16_t i = 0; i < n; i++) {
    int64_t where = sr->base + (int64_t)e[i].at;
    if (e[i].offset < 0 || (size_t)e[i].offset < start ||
        (size_t)e[i].offset >= limit)
      return b2s_frame_error_set(err, sr->code, where,
                                 "content offset outside the section");
    b2s_mpreader c;
    b2s_mpreader_init(&c, buf, limit);
    c.pos = (size_t)e[i].offset;
    const uint8_t *content;
    uint32_t len;
    int rc = b2s_mp_read_bin32(&c, &content, &len);
    if (rc == B2S_E_MSGPACK)
      return mp_fail(err, sr->code, c.pos, sr->base,
                     "offset does not point at a bin32 marker");
    if (rc < 0 || len > INT32_MAX)
      return mp_fail(err, sr->code, c.pos, sr->base,
                     "content runs past the end of the section");
    total += 5 + (size_t)len;
    if (total > limit - start)
      return mp_fail(err, sr->code, c.pos, sr->base,
                     "contents overlap: larger in total than the section");
    rc = metas_push(list, e[i].name, e[i].nlen, content, (int32_t)len,
                    sr->base + e[i].offset);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* Parse "cd HHHH de ... dc NNNN" + contents; r is on the cd marker. */
static int read_section(b2s_mpreader *r, size_t limit, const section_rules *sr,
                        b2s_frame_metas *list, b2s_frame_error *err) {
  uint16_t size, n = 0;
  map_entry *e = NULL;
  int rc = b2s_mp_read_uint16(r, &size);   /* informative only */
  if (rc < 0)
    return mp_fail(err, sr->code, r->pos, sr->base, "bad section size marker");
  rc = read_map(r, sr, &e, &n, err);
  if (rc < 0)
    return rc;
  rc = read_contents(r->buf, r->pos, limit, sr, e, n, list, err);
  free(e);
  return rc;
}

int b2s_frame_metas_parse(const uint8_t *hdr, size_t header_len,
                          b2s_frame_metas *m, b2s_frame_error *err) {
  if (hdr == NULL || m == NULL || m->n != 0)
    return b2s_frame_error_set(err, B2S_E_ARG, -1, "bad arguments");
  if (header_len < B2S_FRAME_HEADER_FIXED || header_len > INT32_MAX)
    return b2s_frame_error_set(err, B2S_E_META, B2S_FRAME_OFF_HEADER_LEN,
                               "header_len out of range");
  const section_rules sr = {B2S_E_META, B2S_FRAME_MAX_METALAYERS, 0};
  b2s_mpreader r;
  b2s_mpreader_init(&r, hdr, header_len);
  r.pos = B2S_FRAME_HEADER_FIXED;
  uint8_t n;
  int rc = b2s_mp_read_fixarray(&r, &n);
  if (rc < 0 || n != 3)
    return mp_fail(err, B2S_E_META, B2S_FRAME_HEADER_FIXED, 0,
                   "metalayer section is not a 3-element array");
  rc = read_section(&r, header_len, &sr, m, err);
  if (rc < 0)
    b2s_frame_metas_fini(m);
  return rc;
}

/* Bytes of "de NNNN" + the map entries + "dc NNNN" + the contents. */
static int64_t section_body_size(const b2s_frame_metas *m, int64_t *map_part) {
  int64_t map = 3, contents = 0;
  for (int32_t i = 0; i < (m ? m->n : 0); i++) {
    map += 1 + (int64_t)strlen(m->items[i].name) + 5;
    contents += 5 + (int64_t)m->items[i].len;
  }
  if (map_part != NULL)
    *map_part = map;
  return map + 3 + contents;
}

int64_t b2s_frame_header_size(const b2s_frame_metas *m) {
  if (m != NULL && m->n > B2S_FRAME_MAX_METALAYERS)
    return B2S_E_ARG;
  int64_t size = B2S_FRAME_HEADER_FIXED + 1 + 3 + section_body_size(m, NULL);
  return size > INT32_MAX ? B2S_E_ARG : size;
}

/* Write the section starting with the cd marker.  `origin` is the position
 * in out that offsets are relative to; `size_from` is where the uint16 size
 * is counted from (header: the 93 byte; trailer: the cd byte). */
static int write_section(const b2s_frame_metas *m, b2s_mpbuf *out,
                         size_t origin, size_t size_from) {
  int64_t map_part;
  int64_t body = section_body_size(m, &map_part);
  int32_t n = m ? m->n : 0;
  int rc = b2s_mpbuf_reserve(out, 3 + (size_t)body);
  if (rc < 0)
    return rc;
  /* The dc marker sits after cd HHHH and the map; the size counts up to it.
   * It is a uint16 in the format; readers ignore it, so it wraps like
   * c-blosc2's own cast for sections beyond 64 KiB. */
  size_t dc_at = out->len + 3 + (size_t)map_part;
  b2s_mp_write_uint16(out, (uint16_t)(dc_at - size_from));
  b2s_mp_write_map16(out, (uint16_t)n);
  int64_t content_at = (int64_t)(dc_at + 3 - origin);
  for (int32_t i = 0; i < n; i++) {
    const b2s_frame_meta *e = &m->items[i];
    b2s_mp_write_fixstr(out, e->name, strlen(e->name));
    b2s_mp_write_int32(out, (int32_t)content_at);
    content_at += 5 + e->len;
  }
  b2s_mp_write_array16(out, (uint16_t)n);
  for (int32_t i = 0; i < n; i++)
    b2s_mp_write_bin32(out, m->items[i].content, (size_t)m->items[i].len);
  return 0;
}

static bool names_ok(const b2s_frame_metas *m) {
  for (int32_t i = 0; m != NULL && i < m->n; i++)
    if (strlen(m->items[i].name) > B2S_FRAME_NAME_MAX || m->items[i].len < 0)
      return false;
  return true;
}

int b2s_frame_header_write(const b2s_frame_header *h,
                           const b2s_frame_metas *m, b2s_mpbuf *out) {
  if (h == NULL || out == NULL || !names_ok(m))
    return B2S_E_ARG;
  int64_t size = b2s_frame_header_size(m);
  if (size < 0)
    return (int)size;
  int rc = b2s_mpbuf_reserve(out, (size_t)size);
  if (rc < 0)
    return rc;
  size_t origin = out->len;
  b2s_frame_header fixed = *h;
  fixed.header_len = (int32_t)size;
  b2s_frame_header_encode(&fixed, out->data + out->len);
  out->len += B2S_FRAME_HEADER_FIXED;
  size_t size_from = out->len;
  b2s_mp_write_fixarray(out, 3);
  rc = write_section(m, out, origin, size_from);
  return rc < 0 ? rc : (int)size;
}

/* ---- trailer -------------------------------------------------------------- */

int b2s_frame_tail_parse(const uint8_t tail[B2S_FRAME_TAIL_LEN],
                         int64_t frame_len, int64_t header_len,
                         uint32_t *trailer_len, b2s_frame_error *err) {
  const int64_t at = frame_len - B2S_FRAME_TAIL_LEN;
  if (tail[0] != B2S_MP_UINT32)
    return b2s_frame_error_set(err, B2S_E_TRAILER, at,
                               "no trailer_len marker at frame_len - 23");
  uint32_t len = b2s_mp_load_be32(tail + 1);
  if (len < B2S_FRAME_TRAILER_MIN || (int64_t)len > frame_len - header_len)
    return b2s_frame_error_set(err, B2S_E_TRAILER, at + 1,
                               "trailer_len out of range");
  if (tail[5] != B2S_MP_FIXEXT16)
    return b2s_frame_error_set(err, B2S_E_TRAILER, at + 5,
                               "no fingerprint marker at frame_len - 18");
  *trailer_len = len;
  return 0;
}

/* The 23 closing bytes of a trailer must repeat its own length. */
static int check_trailer_tail(const uint8_t *tr, size_t len, int64_t base,
                              b2s_frame_error *err) {
  const uint8_t *t = tr + len - B2S_FRAME_TAIL_LEN;
  int64_t at = base + (int64_t)len - B2S_FRAME_TAIL_LEN;
  if (t[0] != B2S_MP_UINT32 || b2s_mp_load_be32(t + 1) != len)
    return b2s_frame_error_set(err, B2S_E_TRAILER, at,
                               "trailer_len field disagrees with the trailer");
  if (t[5] != B2S_MP_FIXEXT16)
    return b2s_frame_error_set(err, B2S_E_TRAILER, at + 5,
                               "no fingerprint marker");
  return 0;
}

int b2s_frame_trailer_parse(const uint8_t *tr, size_t trailer_len,
                            int64_t trailer_offset, b2s_frame_metas *vl,
                            b2s_frame_error *err) {
  if (tr == NULL || vl == NULL || vl->n != 0)
    return b2s_frame_error_set(err, B2S_E_ARG, -1, "bad arguments");
  if (trailer_len < B2S_FRAME_TRAILER_MIN || trailer_len > UINT32_MAX)
    return b2s_frame_error_set(err, B2S_E_TRAILER, trailer_offset,
                               "trailer_len out of range");
  int rc = check_trailer_tail(tr, trailer_len, trailer_offset, err);
  if (rc < 0)
    return rc;
  /* Everything but the 23 closing bytes holds the vlmetalayer section. */
  size_t limit = trailer_len - B2S_FRAME_TAIL_LEN;
  b2s_mpreader r;
  b2s_mpreader_init(&r, tr, limit);
  uint8_t n, version;
  if (b2s_mp_read_fixarray(&r, &n) < 0 || n != 4)
    return mp_fail(err, B2S_E_TRAILER, 0, trailer_offset,
                   "trailer is not a 4-element array");
  if (b2s_mp_read_fixint(&r, &version) < 0)   /* value not checked */
    return mp_fail(err, B2S_E_TRAILER, 1, trailer_offset,
                   "bad trailer version marker");
  if (b2s_mp_read_fixarray(&r, &n) < 0 || n != 3)
    return mp_fail(err, B2S_E_TRAILER, 2, trailer_offset,
                   "vlmetalayer section is not a 3-element array");
  const section_rules sr = {B2S_E_VLMETA, B2S_FRAME_MAX_VLMETALAYERS,
                            trailer_offset};
  rc = read_section(&r, limit, &sr, vl, err);
  if (rc < 0)
    b2s_frame_metas_fini(vl);
  return rc;
}

int64_t b2s_frame_trailer_size(const b2s_frame_metas *vl) {
  if (vl != NULL && vl->n > B2S_FRAME_MAX_VLMETALAYERS)
    return B2S_E_ARG;
  int64_t size = 3 + 3 + section_body_size(vl, NULL) + B2S_FRAME_TAIL_LEN;
  return size > INT32_MAX ? B2S_E_ARG : size;
}

int b2s_frame_trailer_write(const b2s_frame_metas *vl, b2s_mpbuf *out) {
  if (out == NULL || !names_ok(vl))
    return B2S_E_ARG;
  int64_t size = b2s_frame_trailer_size(vl);
  if (size < 0)
    return (int)size;
  int rc = b2s_mpbuf_reserve(out, (size_t)size);
  if (rc < 0)
    return rc;
  size_t origin = out->len;
  b2s_mp_write_fixarray(out, 4);
  b2s_mp_write_fixint(out, 1);
  b2s_mp_write_fixarray(out, 3);
  rc = write_section(vl, out, origin, out->len);
  if (rc < 0)
    return rc;
  static const uint8_t no_fingerprint[16];
  b2s_mp_write_uint32(out, (uint32_t)size);
  b2s_mp_write_fixext16(out, 0, no_fingerprint);
  return (int)size;
}

/* ---- index entries -------------------------------------------------------- */

int b2s_frame_entry_kind(int64_t entry) {
  if (entry >= 0)
    return 0;
  switch (entry) {
  case B2S_FRAME_ENTRY_ZERO: return B2S_SPECIAL_ZERO;
  case B2S_FRAME_ENTRY_NAN: return B2S_SPECIAL_NAN;
  case B2S_FRAME_ENTRY_UNINIT: return B2S_SPECIAL_UNINIT;
  default: return B2S_E_INDEX;
  }
}

/* The index chunk holds 8 bytes per chunk and a chunk holds at most
 * INT32_MAX - 32 bytes. */
#define MAX_NCHUNKS ((INT64_C(2147483647) - 32) / 8)

int b2s_frame_header_nchunks(const b2s_frame_header *h, int64_t index_nbytes,
                             int64_t *nchunks) {
  int64_t n;
  if (h->nbytes == 0) {
    *nchunks = 0;
    return 0;
  }
  if (h->chunksize > 0) {
    n = h->nbytes / h->chunksize + (h->nbytes % h->chunksize != 0);
  } else if (h->chunksize == 0) {
    if (index_nbytes < 0 || index_nbytes % 8 != 0)
      return B2S_E_INDEX;
    n = index_nbytes / 8;
  } else {
    return B2S_E_FRAME;
  }
  if (n > MAX_NCHUNKS)
    return B2S_E_FRAME;
  *nchunks = n;
  return 0;
}

/* ---- b2nd metalayer ------------------------------------------------------- */

static int b2nd_fail(b2s_frame_error *err, const b2s_mpreader *r,
                     int64_t base, const char *why) {
  return b2s_frame_error_set(err, B2S_E_B2ND, base + (int64_t)r->pos, why);
}

/* "0x90 + ndim" array marker (not checked: c-blosc2 writes 0xa0 for 16
 * dimensions) followed by ndim integers of one width. */
static int b2nd_dims(b2s_mpreader *r, int ndim, bool wide, int64_t *out64,
                     int32_t *out32, int64_t base, b2s_frame_error *err) {
  const uint8_t *skip;
  if (b2s_mp_read_raw(r, 1, &skip) < 0)
    return b2nd_fail(err, r, base, "truncated");
  for (int i = 0; i < ndim; i++) {
    int rc = wide ? b2s_mp_read_int64(r, &out64[i])
                  : b2s_mp_read_int32(r, &out32[i]);
    if (rc < 0)
      return b2nd_fail(err, r, base, rc == B2S_E_MSGPACK
                                         ? "bad integer marker"
                                         : "truncated");
  }
  return 0;
}

static int b2nd_check(const b2s_b2nd *nd, int64_t base, b2s_frame_error *err) {
  for (int i = 0; i < nd->ndim; i++) {
    if (nd->shape[i] < 0 || nd->chunkshape[i] < 0 || nd->blockshape[i] < 0)
      return b2s_frame_error_set(err, B2S_E_B2ND, base, "negative dimension");
    if (nd->blockshape[i] == 0 && nd->chunkshape[i] != 0)
      return b2s_frame_error_set(err, B2S_E_B2ND, base,
                                 "zero blockshape with a non-zero chunkshape");
  }
  return 0;
}

static int b2nd_dtype(b2s_mpreader *r, b2s_b2nd *nd, int64_t base,
                      b2s_frame_error *err) {
  const uint8_t *s;
  uint32_t n;
  if (b2s_mpreader_left(r) == 0)
    return 0;   /* c-blosc2 accepts a missing dtype */
  if (b2s_mp_read_fixint(r, &nd->dtype_format) < 0)
    return b2nd_fail(err, r, base, "bad dtype format marker");
  int rc = b2s_mp_read_str32(r, &s, &n);
  if (rc < 0)
    return b2nd_fail(err, r, base, rc == B2S_E_MSGPACK
                                       ? "dtype is not a str32"
                                       : "dtype runs past the content");
  if (n > INT32_MAX)
    return b2nd_fail(err, r, base, "dtype too long");
  nd->has_dtype = true;
  nd->dtype = (const char *)s;
  nd->dtype_len = n;
  return 0;
}

int b2s_b2nd_parse(const uint8_t *content, size_t len, int64_t base,
                   b2s_b2nd *nd, b2s_frame_error *err) {
  if (nd == NULL || (content == NULL && len > 0))
    return b2s_frame_error_set(err, B2S_E_ARG, -1, "bad arguments");
  memset(nd, 0, sizeof *nd);
  b2s_mpreader r;
  b2s_mpreader_init(&r, content, len);
  uint8_t n, ndim;
  if (b2s_mp_read_fixarray(&r, &n) < 0)
    return b2nd_fail(err, &r, base, "not a msgpack array");
  if (b2s_mp_read_fixint(&r, &nd->version) < 0)
    return b2nd_fail(err, &r, base, "bad version marker");
  size_t at = r.pos;
  if (b2s_mp_read_fixint(&r, &ndim) < 0 || ndim > B2S_B2ND_MAX_DIM)
    return b2s_frame_error_set(err, B2S_E_B2ND, base + (int64_t)at,
                               "ndim not in 0..16");
  nd->ndim = (int8_t)ndim;
  int rc = b2nd_dims(&r, ndim, true, nd->shape, NULL, base, err);
  if (rc == 0)
    rc = b2nd_dims(&r, ndim, false, NULL, nd->chunkshape, base, err);
  if (rc == 0)
    rc = b2nd_dims(&r, ndim, false, NULL, nd->blockshape, base, err);
  if (rc == 0)
    rc = b2nd_dtype(&r, nd, base, err);
  if (rc == 0)
    rc = b2nd_check(nd, base, err);
  return rc;
}

int b2s_b2nd_write(const b2s_b2nd *nd, b2s_mpbuf *out) {
  if (nd == NULL || out == NULL || nd->ndim < 0 ||
      nd->ndim > B2S_B2ND_MAX_DIM || nd->version > B2S_MP_FIXINT_MAX ||
      nd->dtype_format > B2S_MP_FIXINT_MAX ||
      (nd->has_dtype && nd->dtype == NULL && nd->dtype_len > 0))
    return B2S_E_ARG;
  int ndim = nd->ndim;
  int rc = b2s_mpbuf_reserve(out, 3 + 3 * (size_t)(1 + 9 * ndim) + 6 +
                                      (nd->has_dtype ? nd->dtype_len : 0));
  if (rc < 0)
    return rc;
  b2s_mp_write_fixarray(out, nd->has_dtype ? 7 : 5);
  b2s_mp_write_fixint(out, nd->version);
  b2s_mp_write_fixint(out, (uint8_t)ndim);
  /* Array markers as c-blosc2 writes them, even 0xa0 for 16 dimensions. */
  const uint8_t arr = (uint8_t)(B2S_MP_FIXARRAY + ndim);
  b2s_mp_write_raw(out, &arr, 1);
  for (int i = 0; i < ndim; i++)
    b2s_mp_write_int64(out, nd->shape[i]);
  b2s_mp_write_raw(out, &arr, 1);
  for (int i = 0; i < ndim; i++)
    b2s_mp_write_int32(out, nd->chunkshape[i]);
  b2s_mp_write_raw(out, &arr, 1);
  for (int i = 0; i < ndim; i++)
    b2s_mp_write_int32(out, nd->blockshape[i]);
  if (!nd->has_dtype)
    return 0;
  b2s_mp_write_fixint(out, nd->dtype_format);
  return b2s_mp_write_str32(out, nd->dtype, nd->dtype_len);
}

int b2s_frame_header_cparams(const b2s_frame_header *h, b2s_cparams *cp) {
  *cp = B2S_CPARAMS_DEFAULTS;
  cp->codec = h->codec_flags & 0x0f;
  if (cp->codec == 6)   /* user-defined codec: its code is in udcodec */
    cp->codec = h->udcodec;
  cp->clevel = h->codec_flags >> 4;
  cp->blocksize = h->blocksize;
  int split = (h->other_flags & 0x07) + 1;
  cp->splitmode = split <= B2S_SPLIT_FORWARD_COMPAT ? split
                                                    : B2S_SPLIT_FORWARD_COMPAT;
  memcpy(cp->filters, h->filters, B2S_MAX_FILTERS);
  memcpy(cp->filters_meta, h->filters_meta, B2S_MAX_FILTERS);
  cp->use_dict = h->other_flags2 & 1;
  bool ok = h->typesize >= 1 && h->typesize <= B2S_MAX_TYPESIZE;
  cp->typesize = ok ? h->typesize : 1;
  return ok ? 0 : B2S_E_TYPESIZE;
}

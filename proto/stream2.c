/* DECTRIS Stream V2 decoder; see b2s_stream2.h.
 *
 * libcbor's streaming decoder (cbor_stream_decode) reads one data item head
 * at a time and hands byte strings over as pointers into the buffer, so the
 * multi-megabyte image payloads are never copied; cbor_load() would build a
 * tree and copy every string.  The structure (which field holds what) is
 * checked here, on top of that pull-style tokenizer. */
#include <stddef.h>
#include <string.h>

#include <cbor.h>

#include "b2s_stream2.h"
#include "b2s_msgpack.h"

#define MAX_ARRAY_BYTES (INT64_C(2147483647) - 32)  /* one Blosc2 chunk */
#define TAG_DATETIME 0
#define TAG_MULTIDIM 40
#define TAG_TYPED_FIRST 64
#define TAG_TYPED_LAST 87
#define TAG_DECTRIS 56500
#define TAG_SELF_DESCRIBED 55799   /* RFC 8949 3.4.6: d9 d9 f7, no meaning */

const char *b2s_s2_strerror(int code) {
  switch (code) {
#define B2S_S2_CASE(name, val, msg) case name: return msg;
    B2S_S2_ERRORS(B2S_S2_CASE)
#undef B2S_S2_CASE
  default: return code == 0 ? "ok" : "unknown Stream V2 error";
  }
}

enum tk {
  TK_UINT, TK_NEG, TK_BYTES, TK_TEXT, TK_ARRAY, TK_MAP, TK_TAG, TK_FLOAT,
  TK_BOOL, TK_NULL, TK_UNDEF, TK_INDEF, TK_BREAK
};

typedef struct tok {
  int k;
  uint64_t u;                      /* int value, count, tag */
  double f;
  const uint8_t *p;                /* string bytes */
  size_t len;
} tok;

typedef struct rd {
  const uint8_t *b;
  size_t n, pos;
} rd;

static void on_u8(void *c, uint8_t v) { *(tok *)c = (tok){.k = TK_UINT, .u = v}; }
static void on_u16(void *c, uint16_t v) { *(tok *)c = (tok){.k = TK_UINT, .u = v}; }
static void on_u32(void *c, uint32_t v) { *(tok *)c = (tok){.k = TK_UINT, .u = v}; }
static void on_u64(void *c, uint64_t v) { *(tok *)c = (tok){.k = TK_UINT, .u = v}; }
static void on_n8(void *c, uint8_t v) { *(tok *)c = (tok){.k = TK_NEG, .u = v}; }
static void on_n16(void *c, uint16_t v) { *(tok *)c = (tok){.k = TK_NEG, .u = v}; }
static void on_n32(void *c, uint32_t v) { *(tok *)c = (tok){.k = TK_NEG, .u = v}; }
static void on_n64(void *c, uint64_t v) { *(tok *)c = (tok){.k = TK_NEG, .u = v}; }
static void on_bytes(void *c, cbor_data p, size_t n) {
  *(tok *)c = (tok){.k = TK_BYTES, .p = p, .len = n};
}
static void on_text(void *c, cbor_data p, size_t n) {
  *(tok *)c = (tok){.k = TK_TEXT, .p = p, .len = n};
}
static void on_indef(void *c) { *(tok *)c = (tok){.k = TK_INDEF}; }
static void on_array(void *c, size_t n) { *(tok *)c = (tok){.k = TK_ARRAY, .u = n}; }
static void on_map(void *c, size_t n) { *(tok *)c = (tok){.k = TK_MAP, .u = n}; }
static void on_tag(void *c, uint64_t v) { *(tok *)c = (tok){.k = TK_TAG, .u = v}; }
static void on_f4(void *c, float v) { *(tok *)c = (tok){.k = TK_FLOAT, .f = v}; }
static void on_f8(void *c, double v) { *(tok *)c = (tok){.k = TK_FLOAT, .f = v}; }
static void on_null(void *c) { *(tok *)c = (tok){.k = TK_NULL}; }
static void on_undef(void *c) { *(tok *)c = (tok){.k = TK_UNDEF}; }
static void on_bool(void *c, bool v) { *(tok *)c = (tok){.k = TK_BOOL, .u = v}; }
static void on_break(void *c) { *(tok *)c = (tok){.k = TK_BREAK}; }

static const struct cbor_callbacks cbs = {
  .uint8 = on_u8, .uint16 = on_u16, .uint32 = on_u32, .uint64 = on_u64,
  .negint8 = on_n8, .negint16 = on_n16, .negint32 = on_n32, .negint64 = on_n64,
  .byte_string_start = on_indef, .byte_string = on_bytes,
  .string = on_text, .string_start = on_indef,
  .indef_array_start = on_indef, .array_start = on_array,
  .indef_map_start = on_indef, .map_start = on_map, .tag = on_tag,
  .float2 = on_f4, .float4 = on_f4, .float8 = on_f8,
  .undefined = on_undef, .null = on_null, .boolean = on_bool,
  .indef_break = on_break,
};

/* One item head.  Tag 55799 (self-described CBOR) says only "this is
 * CBOR": DECTRIS detectors put it before every message, and it may stand
 * before any item, so it is passed over wherever it is (each one takes 3
 * bytes: the loop ends with the buffer). */
static int next(rd *r, tok *t) {
  do {
    if (r->pos >= r->n)
      return B2S_S2_E_CBOR;
    t->k = -1;
    struct cbor_decoder_result res =
        cbor_stream_decode(r->b + r->pos, r->n - r->pos, &cbs, t);
    if (res.status != CBOR_DECODER_FINISHED || res.read == 0 ||
        res.read > r->n - r->pos || t->k < 0)
      return B2S_S2_E_CBOR;
    r->pos += res.read;
  } while (t->k == TK_TAG && t->u == TAG_SELF_DESCRIBED);
  /* A count can never exceed the bytes left: each item takes one at least. */
  if ((t->k == TK_ARRAY || t->k == TK_MAP) && t->u > r->n - r->pos)
    return B2S_S2_E_CBOR;
  return 0;
}

/* Skip one complete item (indefinite lengths allowed, depth bounded). */
static int skip(rd *r, int depth) {
  tok t;
  int rc = next(r, &t);
  if (rc < 0)
    return rc;
  if (depth > B2S_S2_MAX_DEPTH)
    return B2S_S2_E_LIMIT;
  uint64_t items = 0;
  switch (t.k) {
  case TK_ARRAY: items = t.u; break;
  case TK_MAP: items = 2 * t.u; break;
  case TK_TAG: items = 1; break;
  case TK_BREAK: return B2S_S2_E_CBOR;
  case TK_INDEF:
    for (;;) {
      size_t at = r->pos;
      if ((rc = next(r, &t)) < 0)
        return rc;
      if (t.k == TK_BREAK)
        return 0;
      r->pos = at;
      if ((rc = skip(r, depth + 1)) < 0)
        return rc;
    }
  default: return 0;
  }
  for (uint64_t i = 0; i < items; i++)
    if ((rc = skip(r, depth + 1)) < 0)
      return rc;
  return 0;
}

static int expect(rd *r, tok *t, int kind) {
  int rc = next(r, t);
  return rc < 0 ? rc : t->k == kind ? 0 : B2S_S2_E_FIELD;
}

static int read_uint(rd *r, uint64_t *v) {
  tok t;
  int rc = expect(r, &t, TK_UINT);
  if (rc == 0)
    *v = t.u;
  return rc;
}

static int read_text(rd *r, b2s_s2_str *s, size_t max) {
  tok t;
  int rc = expect(r, &t, TK_TEXT);
  if (rc < 0)
    return rc;
  if (t.len > max)
    return B2S_S2_E_SIZE;
  *s = (b2s_s2_str){(const char *)t.p, t.len};
  return 0;
}

/* DateTime: tag 0 + text; the bare text is accepted too. */
static int read_datetime(rd *r, b2s_s2_str *s) {
  size_t at = r->pos;
  tok t;
  int rc = next(r, &t);
  if (rc < 0)
    return rc;
  if (t.k == TK_TAG && t.u != TAG_DATETIME)
    return B2S_S2_E_TAG;
  if (t.k != TK_TAG)
    r->pos = at;
  return read_text(r, s, B2S_S2_MAX_ID);
}

static int read_rational(rd *r, b2s_s2_rational *q) {
  tok t;
  int rc = expect(r, &t, TK_ARRAY);
  if (rc < 0)
    return rc;
  if (t.u != 2)
    return B2S_S2_E_FIELD;
  if ((rc = read_uint(r, &q->num)) < 0 || (rc = read_uint(r, &q->den)) < 0)
    return rc;
  return q->den == 0 ? B2S_S2_E_FIELD : 0;
}

/* RFC 8746 section 2.1: tag 0b010_f_s_e_ll. */
static int typed_tag(uint64_t tag, b2s_s2_array *a) {
  if (tag < TAG_TYPED_FIRST || tag > TAG_TYPED_LAST)
    return B2S_S2_E_TAG;
  unsigned t = (unsigned)(tag - TAG_TYPED_FIRST);
  unsigned f = t >> 4 & 1, s = t >> 3 & 1, e = t >> 2 & 1, ll = t & 3;
  unsigned size = f ? 2u << ll : 1u << ll;
  char kind = f ? 'f' : s ? 'i' : 'u';
  if ((f && size > 8) || (!f && s && size == 1 && e))   /* f128; tag 76 */
    return B2S_S2_E_TAG;
  a->tag = tag;
  a->elem_size = size;
  a->dtype[0] = size == 1 ? '|' : e ? '<' : '>';
  a->dtype[1] = kind;
  a->dtype[2] = (char)('0' + size);
  a->dtype[3] = 0;
  return 0;
}

static uint64_t rd_be64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}

/* Tag 56500: ["bslz4" | "lz4", modifier, bytes]. */
static int read_compressed(rd *r, b2s_s2_array *a) {
  tok t;
  b2s_s2_str alg;
  uint64_t mod;
  int rc = expect(r, &t, TK_ARRAY);
  if (rc < 0)
    return rc;
  if (t.u != 3)
    return B2S_S2_E_COMP;
  if ((rc = read_text(r, &alg, 16)) < 0 || (rc = read_uint(r, &mod)) < 0 ||
      (rc = expect(r, &t, TK_BYTES)) < 0)
    return rc;
  if (alg.len == 5 && !memcmp(alg.p, "bslz4", 5)) {
    if (mod < 1 || mod > 255)
      return B2S_S2_E_COMP;
    a->comp = B2S_S2_BSLZ4;
    a->comp_elem = (uint32_t)mod;
  } else if (alg.len == 3 && !memcmp(alg.p, "lz4", 3)) {
    a->comp = B2S_S2_LZ4;
  } else {
    return B2S_S2_E_COMP;
  }
  if (t.len < 12)
    return B2S_S2_E_COMP;
  a->data = (b2s_s2_span){t.p, t.len};
  uint64_t n = rd_be64(t.p);
  if (n > (uint64_t)MAX_ARRAY_BYTES)
    return B2S_S2_E_SIZE;
  a->nbytes = (int64_t)n;
  return 0;
}

/* Typed array: tag + (bytes | tag 56500). Sets nbytes from the payload. */
static int read_typed(rd *r, b2s_s2_array *a) {
  tok t;
  int rc = expect(r, &t, TK_TAG);
  if (rc < 0 || (rc = typed_tag(t.u, a)) < 0)
    return rc;
  if ((rc = next(r, &t)) < 0)
    return rc;
  if (t.k == TK_TAG) {
    if (t.u != TAG_DECTRIS)
      return B2S_S2_E_TAG;
    return read_compressed(r, a);
  }
  if (t.k != TK_BYTES)
    return B2S_S2_E_FIELD;
  if (t.len > (uint64_t)MAX_ARRAY_BYTES)
    return B2S_S2_E_SIZE;
  a->comp = B2S_S2_RAW;
  a->data = (b2s_s2_span){t.p, t.len};
  a->nbytes = (int64_t)t.len;
  return 0;
}

static int read_array(rd *r, b2s_s2_array *a) {
  memset(a, 0, sizeof *a);
  size_t at = r->pos;
  tok t;
  int rc = next(r, &t);
  if (rc < 0)
    return rc;
  if (t.k != TK_TAG)
    return B2S_S2_E_FIELD;
  if (t.u != TAG_MULTIDIM) {         /* a one-dimensional typed array */
    r->pos = at;
    if ((rc = read_typed(r, a)) < 0)
      return rc;
    if (a->nbytes % a->elem_size)
      return B2S_S2_E_SIZE;
    a->ndim = 1;
    a->dim[0] = (uint64_t)a->nbytes / a->elem_size;
    return 0;
  }
  if ((rc = expect(r, &t, TK_ARRAY)) < 0)
    return rc;
  if (t.u != 2)
    return B2S_S2_E_FIELD;
  if ((rc = expect(r, &t, TK_ARRAY)) < 0)
    return rc;
  if (t.u < 1 || t.u > B2S_S2_MAX_DIMS)
    return B2S_S2_E_LIMIT;
  a->ndim = (uint32_t)t.u;
  for (uint32_t i = 0; i < a->ndim; i++) {
    if ((rc = read_uint(r, &a->dim[i])) < 0)
      return rc;
    if (a->dim[i] < 1 || a->dim[i] > (uint64_t)MAX_ARRAY_BYTES)
      return B2S_S2_E_SIZE;
  }
  if ((rc = read_typed(r, a)) < 0)
    return rc;
  uint64_t want = a->elem_size;
  for (uint32_t i = 0; i < a->ndim; i++) {
    want *= a->dim[i];               /* both factors < 2^31: no overflow */
    if (want > (uint64_t)MAX_ARRAY_BYTES)
      return B2S_S2_E_SIZE;
  }
  return (uint64_t)a->nbytes == want ? 0 : B2S_S2_E_SIZE;
}

static rd span_reader(b2s_s2_span s) { return (rd){s.p, s.len, 0}; }

/* The whole span must be exactly one item that was fully read. */
static int ended(const rd *r, int rc) {
  return rc < 0 ? rc : r->pos == r->n ? 0 : B2S_S2_E_CBOR;
}

int b2s_s2_array_parse(b2s_s2_span s, b2s_s2_array *a) {
  rd r = span_reader(s);
  return ended(&r, read_array(&r, a));
}

int b2s_s2_array_map(b2s_s2_span s, b2s_s2_named *out, uint32_t max,
                     uint32_t *n) {
  rd r = span_reader(s);
  tok t;
  int rc = expect(&r, &t, TK_MAP);
  if (rc < 0)
    return rc;
  if (t.u > max)
    return B2S_S2_E_LIMIT;
  *n = 0;
  for (uint64_t i = 0; i < t.u; i++) {
    b2s_s2_named *e = &out[i];
    if ((rc = read_text(&r, &e->name, B2S_S2_MAX_NAME)) < 0 ||
        (rc = read_array(&r, &e->a)) < 0)
      return rc;
    for (uint64_t j = 0; j < i; j++)
      if (out[j].name.len == e->name.len &&
          !memcmp(out[j].name.p, e->name.p, e->name.len))
        return B2S_S2_E_DUP;
    *n = (uint32_t)i + 1;
  }
  return ended(&r, 0);
}

const b2s_s2_field *b2s_s2_field_get(const b2s_s2_msg *m, const char *key) {
  size_t kl = strlen(key);
  for (uint32_t i = 0; i < m->nfields; i++)
    if (m->fields[i].key.len == kl && !memcmp(m->fields[i].key.p, key, kl))
      return &m->fields[i];
  return NULL;
}

bool b2s_s2_rational_ns(b2s_s2_rational r, int64_t *ns) {
  if (r.den == 0)
    return false;
  unsigned __int128 v = (unsigned __int128)r.num * 1000000000u / r.den;
  if (v > (unsigned __int128)INT64_MAX)
    return false;
  *ns = (int64_t)v;
  return true;
}

/* Top level: a definite map of text keys; every value's span recorded. */
static int read_fields(rd *r, b2s_s2_msg *m) {
  tok t;
  int rc = expect(r, &t, TK_MAP);
  if (rc < 0)
    return rc == B2S_S2_E_FIELD ? B2S_S2_E_TYPE : rc;
  if (t.u > B2S_S2_MAX_FIELDS)
    return B2S_S2_E_LIMIT;
  for (uint64_t i = 0; i < t.u; i++) {
    b2s_s2_field *f = &m->fields[i];
    if ((rc = read_text(r, &f->key, B2S_S2_MAX_ID)) < 0)
      return rc;
    size_t at = r->pos;
    if ((rc = skip(r, 0)) < 0)
      return rc;
    f->value = (b2s_s2_span){r->b + at, r->pos - at};
    for (uint64_t j = 0; j < i; j++)
      if (m->fields[j].key.len == f->key.len &&
          !memcmp(m->fields[j].key.p, f->key.p, f->key.len))
        return B2S_S2_E_DUP;
    m->nfields = (uint32_t)i + 1;
  }
  return r->pos == r->n ? 0 : B2S_S2_E_CBOR;
}

static bool key_is(const b2s_s2_field *f, const char *k) {
  return f->key.len == strlen(k) && !memcmp(f->key.p, k, f->key.len);
}

/* Field parsers, each on the field's own span. */
static int f_uint(const b2s_s2_field *f, uint64_t *v, bool *has) {
  rd r = span_reader(f->value);
  int rc = ended(&r, read_uint(&r, v));
  if (rc == 0 && has)
    *has = true;
  return rc;
}
static int f_text(const b2s_s2_field *f, b2s_s2_str *s) {
  rd r = span_reader(f->value);
  return ended(&r, read_text(&r, s, B2S_S2_MAX_ID));
}
static int f_date(const b2s_s2_field *f, b2s_s2_str *s) {
  rd r = span_reader(f->value);
  return ended(&r, read_datetime(&r, s));
}
static int f_rational(const b2s_s2_field *f, b2s_s2_rational *q) {
  rd r = span_reader(f->value);
  return ended(&r, read_rational(&r, q));
}

static int f_channels(const b2s_s2_field *f, b2s_s2_msg *m) {
  rd r = span_reader(f->value);
  tok t;
  int rc = expect(&r, &t, TK_ARRAY);
  if (rc < 0)
    return rc;
  if (t.u < 1 || t.u > B2S_S2_MAX_CHANNELS)
    return B2S_S2_E_LIMIT;
  for (uint64_t i = 0; i < t.u; i++)
    if ((rc = read_text(&r, &m->channels[i], B2S_S2_MAX_NAME)) < 0)
      return rc;
  m->nchannels = (uint32_t)t.u;
  return ended(&r, 0);
}

/* Only the fields the daemon stores images by must have the spec's type
 * (else the message is refused, naming the field).  The others are kept
 * as metadata whatever well-formed CBOR they hold: a date that is not a
 * DateTime leaves its view empty, and the start's arrays (flatfield,
 * pixel_mask, countrate_correction_lookup_table) and threshold_energy are
 * not looked into here: a detector that sends them in another shape must
 * not lose the series (the source makes companion streams of those that
 * parse, b2s_s2_array_map). */
static int start_field(const b2s_s2_field *f, b2s_s2_msg *m) {
  if (key_is(f, "channels")) return f_channels(f, m);
  if (key_is(f, "image_dtype")) return f_text(f, &m->image_dtype);
  if (key_is(f, "image_size_x")) return f_uint(f, &m->image_size_x, NULL);
  if (key_is(f, "image_size_y")) return f_uint(f, &m->image_size_y, NULL);
  if (key_is(f, "number_of_images")) return f_uint(f, &m->number_of_images, NULL);
  if (key_is(f, "arm_date") && f_date(f, &m->arm_date) < 0)
    m->arm_date = (b2s_s2_str){NULL, 0};
  if (key_is(f, "user_data"))
    m->user_data = f->value;
  return 0;
}

static int image_field(const b2s_s2_field *f, b2s_s2_msg *m) {
  if (key_is(f, "image_id")) return f_uint(f, &m->image_id, &m->has_image_id);
  if (key_is(f, "start_time")) return f_rational(f, &m->start_time);
  if (key_is(f, "stop_time")) return f_rational(f, &m->stop_time);
  if (key_is(f, "real_time")) return f_rational(f, &m->real_time);
  if (key_is(f, "data"))
    return b2s_s2_array_map(f->value, m->data, B2S_S2_MAX_CHANNELS, &m->ndata);
  if (key_is(f, "series_date") && f_date(f, &m->series_date) < 0)
    m->series_date = (b2s_s2_str){NULL, 0};
  if (key_is(f, "user_data"))
    m->user_data = f->value;
  return 0;
}

int b2s_s2_text(b2s_s2_span v, b2s_s2_str *s) {
  rd r = span_reader(v);
  return ended(&r, read_text(&r, s, SIZE_MAX));
}

static int msg_type(b2s_s2_msg *m) {
  const b2s_s2_field *f = b2s_s2_field_get(m, "type");
  b2s_s2_str s;
  if (!f || f_text(f, &s) < 0)
    return B2S_S2_E_TYPE;
  if (s.len == 5 && !memcmp(s.p, "start", 5)) return B2S_S2_START;
  if (s.len == 5 && !memcmp(s.p, "image", 5)) return B2S_S2_IMAGE;
  if (s.len == 3 && !memcmp(s.p, "end", 3)) return B2S_S2_END;
  return B2S_S2_E_TYPE;
}

static int check_required(b2s_s2_msg *m) {
  if (!m->has_series_id)
    m->err_field = "series_id";
  else if (m->type == B2S_S2_START && m->nchannels == 0)
    m->err_field = "channels";
  else if (m->type == B2S_S2_IMAGE && !m->has_image_id)
    m->err_field = "image_id";
  else if (m->type == B2S_S2_IMAGE && m->ndata == 0)
    m->err_field = "data";
  return m->err_field ? B2S_S2_E_MISSING : 0;
}

int b2s_s2_decode(const void *buf, size_t len, b2s_s2_msg *m) {
  memset(m, 0, offsetof(b2s_s2_msg, fields));
  m->nfields = 0;
  m->err_field = NULL;
  if (!buf)
    return B2S_S2_E_CBOR;
  rd r = {buf, len, 0};
  int rc = read_fields(&r, m);
  if (rc < 0)
    return rc;
  if ((rc = msg_type(m)) < 0)
    return rc;
  m->type = rc;
  m->has_times = b2s_s2_field_get(m, "start_time") != NULL;
  for (uint32_t i = 0; i < m->nfields; i++) {
    const b2s_s2_field *f = &m->fields[i];
    rc = 0;
    if (key_is(f, "series_id"))
      rc = f_uint(f, &m->series_id, &m->has_series_id);
    else if (key_is(f, "series_unique_id")) {
      if (f_text(f, &m->series_unique_id) < 0)    /* a name part only */
        m->series_unique_id = (b2s_s2_str){NULL, 0};
    } else if (m->type == B2S_S2_START)
      rc = start_field(f, m);
    else if (m->type == B2S_S2_IMAGE)
      rc = image_field(f, m);
    if (rc < 0) {
      m->err_field = "?";
      static const char *const known[] = {
        "series_id", "channels", "image_dtype", "image_size_x",
        "image_size_y", "number_of_images", "image_id", "start_time",
        "stop_time", "real_time", "data"};
      for (size_t k = 0; k < sizeof known / sizeof *known; k++)
        if (key_is(f, known[k]))
          m->err_field = known[k];
      return rc;
    }
  }
  return check_required(m);
}

/* ---- CBOR -> msgpack, for metadata and records ---------------------- */

static int mp(int rc) { return rc < 0 ? B2S_S2_E_LIMIT : 0; }

static int transcode(rd *r, b2s_mpbuf *out, int depth) {
  tok t;
  int rc = next(r, &t);
  if (rc < 0)
    return rc;
  if (depth > B2S_S2_MAX_DEPTH)
    return B2S_S2_E_LIMIT;
  switch (t.k) {
  case TK_UINT: return mp(b2s_mp_put_uint(out, t.u));
  case TK_NEG:
    if (t.u > (uint64_t)INT64_MAX)
      return B2S_S2_E_SIZE;
    return mp(b2s_mp_put_int(out, -1 - (int64_t)t.u));
  case TK_BYTES: return mp(b2s_mp_put_bin(out, t.p, t.len));
  case TK_TEXT: return mp(b2s_mp_put_str(out, t.p, t.len));
  case TK_FLOAT: return mp(b2s_mp_put_float64(out, t.f));
  case TK_BOOL: return mp(b2s_mp_write_bool(out, t.u != 0));
  case TK_NULL:
  case TK_UNDEF: return mp(b2s_mp_put_nil(out));
  case TK_TAG: return transcode(r, out, depth + 1);   /* the content */
  case TK_ARRAY:
  case TK_MAP: {
    if (t.u > UINT32_MAX)
      return B2S_S2_E_LIMIT;
    rc = t.k == TK_ARRAY ? b2s_mp_put_array(out, (uint32_t)t.u)
                         : b2s_mp_put_map(out, (uint32_t)t.u);
    if (rc < 0)
      return B2S_S2_E_LIMIT;
    uint64_t n = t.k == TK_ARRAY ? t.u : 2 * t.u;
    for (uint64_t i = 0; i < n; i++)
      if ((rc = transcode(r, out, depth + 1)) < 0)
        return rc;
    return 0;
  }
  default:
    return B2S_S2_E_CBOR;   /* indefinite lengths: msgpack needs counts */
  }
}

int b2s_s2_to_msgpack(b2s_s2_span s, b2s_mpbuf *out, size_t max) {
  rd r = span_reader(s);
  size_t start = out->len;
  int rc = ended(&r, transcode(&r, out, 0));
  if (rc == 0 && out->len - start > max)
    rc = B2S_S2_E_LIMIT;
  if (rc < 0)
    out->len = start;
  return rc;
}

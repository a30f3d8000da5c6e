/* The strict JSON scan in front of json-c (b2s_acq_json.h). */
#define _GNU_SOURCE
#include "b2s_acq_json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b2s_msgpack.h"

/* Member names of one object, for the duplicate check: an open-addressing
 * set of spans of the scan's decoded-name arena. */
typedef struct nameset {
  size_t *slots;                     /* arena offset + 1; 0: empty */
  uint32_t *lens;
  size_t cap, used;
} nameset;

typedef struct scan {
  const unsigned char *p;
  size_t n, i;
  int depth, max_depth;
  const char *why;
  size_t at;
  char *arena;                       /* decoded member names */
  size_t alen, acap;
  bool oom;
} scan;

static bool fail(scan *s, size_t at, const char *why) {
  if (!s->why) {
    s->why = why;
    s->at = at;
  }
  return false;
}

static void ws(scan *s) {
  while (s->i < s->n && (s->p[s->i] == ' ' || s->p[s->i] == '\t' ||
                         s->p[s->i] == '\n' || s->p[s->i] == '\r'))
    s->i++;
}

static bool arena_put(scan *s, const void *b, size_t k) {
  if (s->alen + k > s->acap) {
    size_t c = s->acap ? s->acap * 2 : 256;
    while (c < s->alen + k)
      c *= 2;
    char *a = realloc(s->arena, c);
    if (!a) {
      s->oom = true;
      return fail(s, s->i, "out of memory");
    }
    s->arena = a;
    s->acap = c;
  }
  memcpy(s->arena + s->alen, b, k);
  s->alen += k;
  return true;
}

static bool put_utf8(scan *s, uint32_t cp) {
  unsigned char b[4];
  size_t k;
  if (cp < 0x80) {
    b[0] = (unsigned char)cp;
    k = 1;
  } else if (cp < 0x800) {
    b[0] = (unsigned char)(0xc0 | cp >> 6);
    b[1] = (unsigned char)(0x80 | (cp & 0x3f));
    k = 2;
  } else if (cp < 0x10000) {
    b[0] = (unsigned char)(0xe0 | cp >> 12);
    b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    b[2] = (unsigned char)(0x80 | (cp & 0x3f));
    k = 3;
  } else {
    b[0] = (unsigned char)(0xf0 | cp >> 18);
    b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    b[3] = (unsigned char)(0x80 | (cp & 0x3f));
    k = 4;
  }
  return arena_put(s, b, k);
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static bool hex4(scan *s, uint32_t *v) {
  if (s->n - s->i < 4)
    return fail(s, s->i, "a \\u escape needs four hex digits");
  *v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexval(s->p[s->i + (size_t)k]);
    if (h < 0)
      return fail(s, s->i + (size_t)k, "a \\u escape needs four hex digits");
    *v = *v << 4 | (uint32_t)h;
  }
  s->i += 4;
  return true;
}

/* A string at s->i (the quote); decode: its bytes go to the arena. */
static bool string(scan *s, bool decode, bool is_name) {
  size_t start = s->i++;
  for (;;) {
    if (s->i >= s->n)
      return fail(s, start, "a string does not end");
    unsigned char c = s->p[s->i];
    if (c == '"') {
      s->i++;
      return true;
    }
    if (c < 0x20)
      return fail(s, s->i, "a control character inside a string");
    if (c == '\\') {
      size_t esc = s->i++;
      if (s->i >= s->n)
        return fail(s, esc, "a string does not end");
      unsigned char e = s->p[s->i++];
      const char *simple = "\"\\/bfnrt";
      const char *real = "\"\\/\b\f\n\r\t";
      const char *f = e ? strchr(simple, e) : NULL;
      uint32_t cp;
      if (f) {
        cp = (uint32_t)(unsigned char)real[f - simple];
      } else if (e == 'u') {
        if (!hex4(s, &cp))
          return false;
        if (cp >= 0xdc00 && cp <= 0xdfff)
          return fail(s, esc, "a lone low surrogate");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          uint32_t lo;
          if (s->n - s->i < 2 || s->p[s->i] != '\\' || s->p[s->i + 1] != 'u')
            return fail(s, esc, "a high surrogate without its low half");
          s->i += 2;
          if (!hex4(s, &lo))
            return false;
          if (lo < 0xdc00 || lo > 0xdfff)
            return fail(s, esc, "a high surrogate without its low half");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        if (cp == 0 && is_name)
          return fail(s, esc, "a member name holds U+0000");
      } else {
        return fail(s, esc, "an unknown escape");
      }
      if (decode && !put_utf8(s, cp))
        return false;
      continue;
    }
    size_t k = c < 0x80 ? 1 : b2s_utf8_seq(s->p + s->i, s->n - s->i);
    if (k == 0)
      return fail(s, s->i, "invalid UTF-8");
    if (decode && !arena_put(s, s->p + s->i, k))
      return false;
    s->i += k;
  }
}

static bool digits(scan *s) {
  size_t st = s->i;
  while (s->i < s->n && s->p[s->i] >= '0' && s->p[s->i] <= '9')
    s->i++;
  return s->i > st;
}

static bool number(scan *s) {
  size_t st = s->i;
  bool neg = s->p[s->i] == '-';
  if (neg)
    s->i++;
  size_t int_start = s->i;
  if (s->i < s->n && s->p[s->i] == '0')
    s->i++;
  else if (!digits(s))
    return fail(s, st, "a number without digits");
  size_t int_len = s->i - int_start;
  bool real = false;
  if (s->i < s->n && s->p[s->i] == '.') {
    s->i++;
    real = true;
    if (!digits(s))
      return fail(s, st, "a fraction without digits");
  }
  if (s->i < s->n && (s->p[s->i] == 'e' || s->p[s->i] == 'E')) {
    s->i++;
    real = true;
    if (s->i < s->n && (s->p[s->i] == '+' || s->p[s->i] == '-'))
      s->i++;
    if (!digits(s))
      return fail(s, st, "an exponent without digits");
  }
  if (!real) {
    /* exact: json-c clamps what does not fit 64 bits */
    const char *lim = neg ? "9223372036854775808" : "18446744073709551615";
    size_t ll = strlen(lim);
    if (int_len > ll ||
        (int_len == ll && memcmp(s->p + int_start, lim, ll) > 0))
      return fail(s, st, "an integer outside -2^63 .. 2^64-1");
    return true;
  }
  size_t len = s->i - st;
  char *tmp = malloc(len + 1);
  if (!tmp) {
    s->oom = true;
    return fail(s, st, "out of memory");
  }
  memcpy(tmp, s->p + st, len);
  tmp[len] = '\0';
  double d = strtod(tmp, NULL);
  free(tmp);
  if (!isfinite(d))
    return fail(s, st, "a number too large for a double");
  return true;
}

static bool literal(scan *s, const char *w) {
  size_t k = strlen(w);
  if (s->n - s->i < k || memcmp(s->p + s->i, w, k) != 0)
    return fail(s, s->i, "an unexpected character");
  s->i += k;
  return true;
}

/* The decoded name at off: the arena is still NULL when every name so far
 * was "" (nothing to offset, nothing for memcmp to read). */
static const char *arena_at(const scan *s, size_t off) {
  return s->arena ? s->arena + off : "";
}

static uint64_t name_hash(const char *p, size_t n) {
  uint64_t h = 1469598103934665603u;       /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * 1099511628211u;
  return h;
}

/* Add the name at arena[off..off+len); false when it is there already. */
static bool nameset_add(scan *s, nameset *ns, size_t off, size_t len) {
  if ((ns->used + 1) * 2 > ns->cap) {
    size_t cap = ns->cap ? ns->cap * 2 : 16;
    size_t *slots = calloc(cap, sizeof *slots);
    uint32_t *lens = calloc(cap, sizeof *lens);
    if (!slots || !lens) {
      free(slots);
      free(lens);
      s->oom = true;
      return fail(s, s->i, "out of memory");
    }
    for (size_t k = 0; k < ns->cap; k++) {
      if (!ns->slots[k])
        continue;
      size_t o = ns->slots[k] - 1;
      size_t j = name_hash(arena_at(s, o), ns->lens[k]) & (cap - 1);
      while (slots[j])
        j = (j + 1) & (cap - 1);
      slots[j] = ns->slots[k];
      lens[j] = ns->lens[k];
    }
    free(ns->slots);
    free(ns->lens);
    ns->slots = slots;
    ns->lens = lens;
    ns->cap = cap;
  }
  size_t j = name_hash(arena_at(s, off), len) & (ns->cap - 1);
  while (ns->slots[j]) {
    size_t o = ns->slots[j] - 1;
    if (ns->lens[j] == len &&
        memcmp(arena_at(s, o), arena_at(s, off), len) == 0)
      return false;
    j = (j + 1) & (ns->cap - 1);
  }
  ns->slots[j] = off + 1;
  ns->lens[j] = (uint32_t)len;
  ns->used++;
  return true;
}

static bool value(scan *s);

static bool object(scan *s) {
  size_t st = s->i++;
  if (++s->depth > s->max_depth)
    return fail(s, st, "nested deeper than the limit");
  ws(s);
  if (s->i < s->n && s->p[s->i] == '}') {
    s->i++;
    s->depth--;
    return true;
  }
  nameset ns = {0};
  size_t mark = s->alen;
  bool ok = false;
  for (;;) {
    ws(s);
    if (s->i >= s->n || s->p[s->i] != '"') {
      fail(s, s->i, "a member name was expected");
      break;
    }
    size_t at = s->i, off = s->alen;
    if (!string(s, true, true))
      break;
    if (!nameset_add(s, &ns, off, s->alen - off)) {
      fail(s, at, "a member name given twice in one object");
      break;
    }
    ws(s);
    if (s->i >= s->n || s->p[s->i] != ':') {
      fail(s, s->i, "':' was expected");
      break;
    }
    s->i++;
    ws(s);
    if (!value(s))
      break;
    ws(s);
    if (s->i < s->n && s->p[s->i] == ',') {
      s->i++;
      continue;
    }
    if (s->i < s->n && s->p[s->i] == '}') {
      s->i++;
      ok = true;
    } else {
      fail(s, s->i, "',' or '}' was expected");
    }
    break;
  }
  free(ns.slots);
  free(ns.lens);
  s->alen = mark;
  s->depth--;
  return ok;
}

static bool array(scan *s) {
  size_t st = s->i++;
  if (++s->depth > s->max_depth)
    return fail(s, st, "nested deeper than the limit");
  ws(s);
  if (s->i < s->n && s->p[s->i] == ']') {
    s->i++;
    s->depth--;
    return true;
  }
  for (;;) {
    ws(s);
    if (!value(s))
      return false;
    ws(s);
    if (s->i < s->n && s->p[s->i] == ',') {
      s->i++;
      continue;
    }
    if (s->i < s->n && s->p[s->i] == ']') {
      s->i++;
      s->depth--;
      return true;
    }
    return fail(s, s->i, "',' or ']' was expected");
  }
}

static bool value(scan *s) {
  if (s->i >= s->n)
    return fail(s, s->i, "the text ends where a value was expected");
  unsigned char c = s->p[s->i];
  switch (c) {
  case '{':
    return object(s);
  case '[':
    return array(s);
  case '"':
    return string(s, false, false);
  case 't':
    return literal(s, "true");
  case 'f':
    return literal(s, "false");
  case 'n':
    return literal(s, "null");
  default:
    if (c == '-' || (c >= '0' && c <= '9'))
      return number(s);
    return fail(s, s->i, "an unexpected character");
  }
}

int b2s_acq_json_parse(const char *text, size_t len, int max_depth,
                       json_object **out, b2s_acq_err *e) {
  *out = NULL;
  if (len > B2S_ACQ_JSON_MAX)
    return b2s_acq_err_set(e, B2S_ACQ_E_BODY_TOO_LARGE, NULL,
                           "the body is %zu bytes; the limit is %u", len,
                           B2S_ACQ_JSON_MAX);
  scan s = {.p = (const unsigned char *)text, .n = len,
            .max_depth = max_depth};
  bool ok = false;
  ws(&s);
  if (s.i >= s.n || s.p[s.i] != '{')
    fail(&s, s.i, "the body is not a JSON object");
  else if (object(&s)) {
    ws(&s);
    ok = s.i == s.n || fail(&s, s.i, "bytes after the JSON object");
  }
  free(s.arena);
  if (s.oom)
    return -ENOMEM;
  if (!ok) {
    b2s_acq_err_set(e, B2S_ACQ_E_BAD_JSON, NULL, "bad JSON at byte %zu: %s",
                    s.at, s.why);
    if (e)
      e->offset = (int64_t)s.at;
    return B2S_ACQ_E_BAD_JSON;
  }
  /* json-c builds the tree; its own depth limit is set past ours */
  json_tokener *tok = json_tokener_new_ex(max_depth + 2);
  if (!tok)
    return -ENOMEM;
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  json_object *o = len ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
  enum json_tokener_error je = json_tokener_get_error(tok);
  json_tokener_free(tok);
  if (!o || je != json_tokener_success ||
      !json_object_is_type(o, json_type_object)) {
    json_object_put(o);
    b2s_acq_err_set(e, B2S_ACQ_E_BAD_JSON, NULL, "bad JSON: %s",
                    json_tokener_error_desc(je));
    return B2S_ACQ_E_BAD_JSON;
  }
  *out = o;
  return 0;
}

bool b2s_acq_json_int(const json_object *o, bool *neg, uint64_t *mag) {
  if (!json_object_is_type(o, json_type_int))
    return false;
  int64_t i = json_object_get_int64(o);
  if (i == INT64_MAX) {
    *neg = false;
    *mag = json_object_get_uint64(o);
  } else if (i < 0) {
    *neg = true;
    *mag = (uint64_t)(-(i + 1)) + 1;
  } else {
    *neg = false;
    *mag = (uint64_t)i;
  }
  return true;
}

int b2s_acq_json_double_text(double v, char *out, size_t cap) {
  if (!isfinite(v) || cap < 32)
    return B2S_E_ARG;
  /* the fewest significant digits that read back to the same bits */
  char e[40];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(e, sizeof e, "%.*e", prec - 1, v);
    double back = strtod(e, NULL);
    if (back == v && signbit(back) == signbit(v))
      break;
  }
  /* laid out as Python's repr: fixed from 1e-4 up to 1e16, else an
   * exponent; ".0" when it would read as an integer */
  int exp = atoi(strchr(e, 'e') + 1);
  if (exp < -4 || exp >= 16) {
    snprintf(out, cap, "%s", e);
  } else {
    int decimals = prec - 1 - exp;
    snprintf(out, cap, "%.*f", decimals > 0 ? decimals : 0, v);
    if (!strchr(out, '.'))
      strcat(out, ".0");
  }
  return (int)strlen(out);
}

static int double_writer(json_object *o, struct printbuf *pb, int level,
                         int flags) {
  (void)level;
  (void)flags;
  char t[40];
  if (b2s_acq_json_double_text(json_object_get_double(o), t, sizeof t) < 0)
    snprintf(t, sizeof t, "null");
  return printbuf_memappend(pb, t, (int)strlen(t));
}

json_object *b2s_acq_json_double(double v) {
  json_object *o = json_object_new_double(v);
  if (o)
    json_object_set_serializer(o, double_writer, NULL, NULL);
  return o;
}

int b2s_acq_time_text(int64_t us, char *out, size_t cap) {
  if (us < 0)
    return B2S_E_ARG;
  time_t t = (time_t)(us / 1000000);
  struct tm tm;
  if (!gmtime_r(&t, &tm))
    return B2S_E_ARG;
  int n = snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                   tm.tm_min, tm.tm_sec, (int)(us % 1000000));
  return n > 0 && (size_t)n < cap ? n : B2S_E_ARG;
}

json_object *b2s_acq_json_time(int64_t us) {
  char t[B2S_ACQ_TIME_TEXT];
  if (b2s_acq_time_text(us, t, sizeof t) < 0)
    return NULL;                     /* json-c's null */
  return json_object_new_string(t);
}

int b2s_acq_time_parse(const char *s, int64_t *us) {
  int y, mo, d, h, mi, se, frac, n = 0;
  if (!s || strlen(s) != 27 ||
      sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ%n", &y, &mo, &d, &h, &mi, &se,
             &frac, &n) != 7 || n != 27)
    return B2S_E_ARG;
  for (int i = 0; i < 26; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || i == 4 || i == 7 || i == 10 ||
          i == 13 || i == 16 || i == 19))
      return B2S_E_ARG;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59 ||
      y < 1970)
    return B2S_E_ARG;
  struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                  .tm_hour = h, .tm_min = mi, .tm_sec = se};
  time_t t = timegm(&tm);
  if (t < 0)
    return B2S_E_ARG;
  struct tm back;
  if (!gmtime_r(&t, &back) || back.tm_mday != d || back.tm_mon != mo - 1)
    return B2S_E_ARG;                /* 31 February */
  *us = (int64_t)t * 1000000 + frac;
  return 0;
}

char *b2s_acq_json_line(json_object *o) {
  const char *s = json_object_to_json_string_ext(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  return s ? strdup(s) : NULL;
}

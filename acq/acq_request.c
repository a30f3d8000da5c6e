/* Arm requests: parse, check, defaults, canonical form, comparison
 * (b2s_acq_request.h). */
#include "b2s_acq_request.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_acq_json.h"
#include "b2s_meta.h"
#include "b2s_msgpack.h"

#define FRAMES_MAX ((uint64_t)INT64_MAX)
#define FPF_MAX ((uint64_t)INT32_MAX)

/* The members of 3.1, in their order: the order of checks, of the
 * canonical form and of the comparison. */
static const char *const members[] = {
    "id", "input", "directory", "create_directory", "file_template",
    "frames", "frames_per_file", "first_frame", "series", "overwrite",
    "on_loss", NULL};

void b2s_acq_request_init(b2s_acq_request *r) {
  memset(r, 0, sizeof *r);
}

void b2s_acq_request_fini(b2s_acq_request *r) {
  if (!r)
    return;
  free(r->series);
  free(r->series_mp);
  r->series = NULL;
  r->series_mp = NULL;
  r->series_mp_len = 0;
}

int b2s_acq_request_copy(b2s_acq_request *dst, const b2s_acq_request *src) {
  if (dst == src)
    return 0;
  char *s = src->series ? strdup(src->series) : NULL;
  uint8_t *mp = src->series_mp_len ? malloc(src->series_mp_len) : NULL;
  if ((src->series && !s) || (src->series_mp_len && !mp)) {
    free(s);
    free(mp);
    return -ENOMEM;
  }
  if (mp)
    memcpy(mp, src->series_mp, src->series_mp_len);
  b2s_acq_request_fini(dst);
  *dst = *src;
  dst->series = s;
  dst->series_mp = mp;
  return 0;
}

/* ---- members -------------------------------------------------------------- */

static unsigned edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 32 || m > 32)
    return 99;
  unsigned d[33][33];
  for (size_t i = 0; i <= n; i++)
    d[i][0] = (unsigned)i;
  for (size_t j = 0; j <= m; j++)
    d[0][j] = (unsigned)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      unsigned c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      unsigned x = d[i - 1][j] + 1, y = d[i][j - 1] + 1;
      d[i][j] = c < x ? (c < y ? c : y) : (x < y ? x : y);
    }
  return d[n][m];
}

static int unknown(const char *name, const char *const *known,
                   const char *where, b2s_acq_err *e) {
  const char *best = NULL;
  unsigned bd = 3;
  for (int i = 0; known[i]; i++) {
    unsigned d = edit_distance(name, known[i]);
    if (d < bd) {
      bd = d;
      best = known[i];
    }
  }
  char field[B2S_ACQ_FIELD_MAX];
  /* at most 48 bytes of the name, cut between characters */
  size_t n = strlen(name);
  snprintf(field, sizeof field, "%s%.*s", where,
           (int)b2s_acq_utf8_fit(name, n < 48 ? n : 48), name);
  if (best)
    return b2s_acq_err_set(e, B2S_ACQ_E_UNKNOWN_FIELD, field,
                           "the arm has no member \"%s\" (did you mean "
                           "\"%s\"?)", field, best);
  return b2s_acq_err_set(e, B2S_ACQ_E_UNKNOWN_FIELD, field,
                         "the arm has no member \"%s\"", field);
}

static int check_unknown(json_object *o, const char *const *known,
                         const char *where, b2s_acq_err *e) {
  json_object_object_foreach(o, key, val) {
    (void)val;
    bool ok = false;
    for (int i = 0; known[i] && !ok; i++)
      ok = strcmp(known[i], key) == 0;
    if (!ok)
      return unknown(key, known, where, e);
  }
  return 0;
}

static int bad_field(b2s_acq_err *e, const char *field, const char *why) {
  return b2s_acq_err_set(e, B2S_ACQ_E_BAD_FIELD, field, "%s %s", field, why);
}

/* A string member of 1..max bytes without control characters. */
static int get_string(json_object *o, const char *field, size_t max,
                      char *out, b2s_acq_err *e) {
  if (!json_object_is_type(o, json_type_string))
    return bad_field(e, field, "must be a string");
  size_t n = (size_t)json_object_get_string_len(o);
  const char *s = json_object_get_string(o);
  if (n < 1 || n > max) {
    char why[64];
    snprintf(why, sizeof why, "must be 1 to %zu bytes", max);
    return bad_field(e, field, why);
  }
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return bad_field(e, field, "holds a control character");
  memcpy(out, s, n + 1);
  return 0;
}

static int get_uint(json_object *o, const char *field, uint64_t max,
                    uint64_t *out, b2s_acq_err *e) {
  bool neg;
  uint64_t mag;
  if (!b2s_acq_json_int(o, &neg, &mag))
    return bad_field(e, field, "must be an integer");
  if (neg || mag > max) {
    char why[64];
    snprintf(why, sizeof why, "must be 0 to %" PRIu64, max);
    return bad_field(e, field, why);
  }
  *out = mag;
  return 0;
}

static int get_enum(json_object *o, const char *field, const char *a,
                    const char *b, int *out, b2s_acq_err *e) {
  const char *s = json_object_is_type(o, json_type_string)
                      ? json_object_get_string(o) : NULL;
  if (s && strcmp(s, a) == 0)
    *out = 0;
  else if (s && strcmp(s, b) == 0)
    *out = 1;
  else {
    char why[96];
    snprintf(why, sizeof why, "must be \"%s\" or \"%s\"", a, b);
    return bad_field(e, field, why);
  }
  return 0;
}

static int parse_input(json_object *in, b2s_acq_request *r, b2s_acq_err *e) {
  static const char *const known[] = {"stream", "template", "source", NULL};
  if (!json_object_is_type(in, json_type_object))
    return bad_field(e, "input", "must be an object");
  int rc = check_unknown(in, known, "input.", e);
  if (rc)
    return rc;
  json_object *st = NULL, *tp = NULL, *src = NULL;
  json_object_object_get_ex(in, "stream", &st);
  json_object_object_get_ex(in, "template", &tp);
  json_object_object_get_ex(in, "source", &src);
  if (!st == !src)
    return bad_field(e, "input", "must have exactly one of stream and source");
  if (src) {
    if (tp)
      return bad_field(e, "input.template", "is for a stream input only");
    r->input = B2S_ACQ_INPUT_SOURCE;
    return get_string(src, "input.source", B2S_ACQ_ENDPOINT_MAX,
                      r->input_name, e);
  }
  r->input = B2S_ACQ_INPUT_STREAM;
  if (!json_object_is_type(st, json_type_string) ||
      !b2s_acq_id_valid(json_object_get_string(st),
                        (size_t)json_object_get_string_len(st)))
    return bad_field(e, "input.stream", "must be a stream name (1 to 64 "
                     "bytes of A-Z a-z 0-9 . _ -, not starting with '.')");
  snprintf(r->input_name, sizeof r->input_name, "%s",
           json_object_get_string(st));
  if (tp) {
    if (!json_object_is_type(tp, json_type_string) ||
        !b2s_acq_id_valid(json_object_get_string(tp),
                          (size_t)json_object_get_string_len(tp)))
      return bad_field(e, "input.template", "must be a template name");
    snprintf(r->template_name, sizeof r->template_name, "%s",
             json_object_get_string(tp));
  }
  return 0;
}

static int parse_directory(json_object *o, b2s_acq_request *r,
                           b2s_acq_err *e) {
  if (!json_object_is_type(o, json_type_string))
    return bad_field(e, "directory", "must be a string");
  size_t n = (size_t)json_object_get_string_len(o);
  if (n < 1 || n > B2S_ACQ_DIR_MAX)
    return b2s_acq_err_set(e, B2S_ACQ_E_BAD_DIRECTORY, "directory",
                           "directory must be 1 to 4095 bytes");
  const char *s = json_object_get_string(o);
  if (memchr(s, '\0', n))
    return b2s_acq_err_set(e, B2S_ACQ_E_BAD_DIRECTORY, "directory",
                           "directory holds U+0000");
  memcpy(r->directory, s, n + 1);
  /* compared as written, less a trailing '/'; one that leaves another
   * stays whole ("/a//", which check 7 refuses), so the canonical form
   * reads back as itself */
  if (n > 1 && r->directory[n - 1] == '/' && r->directory[n - 2] != '/')
    r->directory[n - 1] = '\0';
  return 0;
}

/* ---- series: JSON to msgpack (3.1) ------------------------------------------ */

static int to_msgpack(json_object *v, b2s_mpbuf *b) {
  bool neg;
  uint64_t mag;
  int rc = 0;
  switch (json_object_get_type(v)) {
  case json_type_null:
    return b2s_mp_put_nil(b);
  case json_type_boolean:
    return b2s_mp_write_bool(b, json_object_get_boolean(v));
  case json_type_int:
    b2s_acq_json_int(v, &neg, &mag);
    if (neg)
      return b2s_mp_put_int(b, mag == (uint64_t)1 << 63
                                   ? INT64_MIN : -(int64_t)mag);
    return b2s_mp_put_uint(b, mag);
  case json_type_double:
    return b2s_mp_put_float64(b, json_object_get_double(v));
  case json_type_string:
    return b2s_mp_put_str(b, json_object_get_string(v),
                          (size_t)json_object_get_string_len(v));
  case json_type_array: {
    size_t n = json_object_array_length(v);
    rc = b2s_mp_put_array(b, (uint32_t)n);
    for (size_t i = 0; rc >= 0 && i < n; i++)
      rc = to_msgpack(json_object_array_get_idx(v, i), b);
    return rc;
  }
  case json_type_object: {
    rc = b2s_mp_put_map(b, (uint32_t)json_object_object_length(v));
    json_object_object_foreach(v, key, val) {
      if (rc >= 0)
        rc = b2s_mp_put_str(b, key, strlen(key));
      if (rc >= 0)
        rc = to_msgpack(val, b);
    }
    return rc;
  }
  }
  return B2S_E_ARG;
}

static int cmp_key(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* v with every object's members sorted by name and doubles in their
 * shortest form: the canonical value (a new reference). */
static json_object *canonical(json_object *v) {
  switch (json_object_get_type(v)) {
  case json_type_null:
    return NULL;
  case json_type_double:
    return b2s_acq_json_double(json_object_get_double(v));
  case json_type_array: {
    json_object *a = json_object_new_array();
    for (size_t i = 0; a && i < json_object_array_length(v); i++)
      json_object_array_add(a, canonical(json_object_array_get_idx(v, i)));
    return a;
  }
  case json_type_object: {
    size_t n = (size_t)json_object_object_length(v), k = 0;
    const char **keys = malloc((n ? n : 1) * sizeof *keys);
    json_object *o = json_object_new_object();
    if (!keys || !o) {
      free(keys);
      json_object_put(o);
      return NULL;
    }
    json_object_object_foreach(v, key, val) {
      (void)val;
      keys[k++] = key;
    }
    qsort(keys, n, sizeof *keys, cmp_key);
    for (size_t i = 0; i < n; i++)
      json_object_object_add(o, keys[i],
                             canonical(json_object_object_get(v, keys[i])));
    free(keys);
    return o;
  }
  default:
    return json_object_get(v);
  }
}

static int parse_series(json_object *s, b2s_acq_request *r, b2s_acq_err *e) {
  if (!json_object_is_type(s, json_type_object))
    return b2s_acq_err_set(e, B2S_ACQ_E_BAD_SERIES, "series",
                           "series must be an object");
  if (json_object_object_get_ex(s, B2S_ACQ_SERIES_KEY, NULL))
    return b2s_acq_err_set(e, B2S_ACQ_E_BAD_SERIES, "series",
                           "series may not set %s: the daemon writes it",
                           B2S_ACQ_SERIES_KEY);
  b2s_mpbuf b;
  b2s_mpbuf_init(&b);
  int rc = to_msgpack(s, &b);
  if (rc < 0) {
    b2s_mpbuf_fini(&b);
    return rc == B2S_E_NOMEM ? -ENOMEM : rc;
  }
  if (b.len > B2S_ACQ_SERIES_MAX) {
    size_t n = b.len;
    b2s_mpbuf_fini(&b);
    return b2s_acq_err_set(e, B2S_ACQ_E_BAD_SERIES, "series",
                           "series is %zu bytes encoded; the limit is 65536",
                           n);
  }
  rc = b2s_series_check(b.data, b.len, true);
  if (rc < 0) {
    b2s_mpbuf_fini(&b);
    return b2s_acq_err_set(e, B2S_ACQ_E_BAD_SERIES, "series", "series: %s",
                           b2s_strerror(rc));
  }
  json_object *c = canonical(s);
  char *text = c ? b2s_acq_json_line(c) : NULL;
  json_object_put(c);
  if (!text) {
    b2s_mpbuf_fini(&b);
    return -ENOMEM;
  }
  free(r->series);
  free(r->series_mp);
  r->series = text;
  r->series_mp = b.data;          /* the buffer becomes the request's */
  r->series_mp_len = b.len;
  return 0;
}

/* ---- the request ---------------------------------------------------------- */

int b2s_acq_request_from_json(json_object *o, b2s_acq_request *r,
                              b2s_acq_err *e) {
  b2s_acq_request_fini(r);
  b2s_acq_request_init(r);
  if (!json_object_is_type(o, json_type_object))
    return b2s_acq_err_set(e, B2S_ACQ_E_BAD_JSON, NULL,
                           "the body is not a JSON object");
  int rc = check_unknown(o, members, "", e);
  json_object *v;
  if (rc)
    return rc;
  if (!json_object_object_get_ex(o, "id", &v))
    return bad_field(e, "id", "is required");
  if (!json_object_is_type(v, json_type_string))
    return bad_field(e, "id", "must be a string");
  if (!b2s_acq_id_valid(json_object_get_string(v),
                        (size_t)json_object_get_string_len(v)))
    return b2s_acq_err_set(e, B2S_ACQ_E_BAD_ID, "id",
                           "id must be 1 to 64 bytes of A-Z a-z 0-9 . _ -, "
                           "not starting with '.'");
  snprintf(r->id, sizeof r->id, "%s", json_object_get_string(v));
  if (!json_object_object_get_ex(o, "input", &v))
    return bad_field(e, "input", "is required");
  if ((rc = parse_input(v, r, e)))
    return rc;
  if (!json_object_object_get_ex(o, "directory", &v))
    return bad_field(e, "directory", "is required");
  if ((rc = parse_directory(v, r, e)))
    return rc;
  if (json_object_object_get_ex(o, "create_directory", &v)) {
    if (!json_object_is_type(v, json_type_boolean))
      return bad_field(e, "create_directory", "must be true or false");
    r->create_directory = json_object_get_boolean(v);
  }
  const char *tmpl = B2S_ACQ_DEFAULT_TEMPLATE;
  if (json_object_object_get_ex(o, "file_template", &v)) {
    if (!json_object_is_type(v, json_type_string))
      return bad_field(e, "file_template", "must be a string");
    tmpl = json_object_get_string(v);
    if (strlen(tmpl) != (size_t)json_object_get_string_len(v))
      return b2s_acq_err_set(e, B2S_ACQ_E_BAD_TEMPLATE, "file_template",
                             "file_template holds U+0000");
  }
  if ((rc = b2s_acq_template_parse(tmpl, &r->tmpl, e)))
    return rc;
  snprintf(r->file_template, sizeof r->file_template, "%s", tmpl);
  if (json_object_object_get_ex(o, "frames", &v) &&
      (rc = get_uint(v, "frames", FRAMES_MAX, &r->frames, e)))
    return rc;
  uint64_t fpf = 0;
  if (json_object_object_get_ex(o, "frames_per_file", &v) &&
      (rc = get_uint(v, "frames_per_file", FPF_MAX, &fpf, e)))
    return rc;
  r->frames_per_file = (uint32_t)fpf;
  if (json_object_object_get_ex(o, "first_frame", &v) && v) {
    if ((rc = get_uint(v, "first_frame", FRAMES_MAX, &r->first_frame, e)))
      return rc;
    r->has_first_frame = true;
  }
  bool source = r->input == B2S_ACQ_INPUT_SOURCE;
  b2s_acq_namevals nv = {.id = r->id,
                         .stream = source ? NULL : r->input_name,
                         .channel = source ? NULL : "data"};
  if ((rc = b2s_acq_template_check(&r->tmpl, source, r->frames,
                                   r->frames_per_file, &nv, e)))
    return rc;
  json_object *empty = NULL;
  if (json_object_object_get_ex(o, "series", &v))
    rc = parse_series(v, r, e);      /* null included: not an object */
  else
    rc = (empty = json_object_new_object()) ? parse_series(empty, r, e)
                                            : -ENOMEM;
  json_object_put(empty);
  if (rc)
    return rc;
  if (json_object_object_get_ex(o, "overwrite", &v) &&
      (rc = get_enum(v, "overwrite", "refuse", "replace", &r->overwrite, e)))
    return rc;
  if (json_object_object_get_ex(o, "on_loss", &v) &&
      (rc = get_enum(v, "on_loss", "fail", "count", &r->on_loss, e)))
    return rc;
  return 0;
}

int b2s_acq_request_parse(const char *body, size_t len, b2s_acq_request *out,
                          b2s_acq_err *e) {
  json_object *o;
  int rc = b2s_acq_json_parse(body, len, B2S_ACQ_JSON_DEPTH, &o, e);
  if (rc)
    return rc;
  rc = b2s_acq_request_from_json(o, out, e);
  json_object_put(o);
  if (rc)
    b2s_acq_request_fini(out);
  return rc;
}

int b2s_acq_request_check_order(const b2s_acq_request *r,
                                bool frame_number_order, b2s_acq_err *e) {
  if (r->has_first_frame &&
      (r->input != B2S_ACQ_INPUT_STREAM || !frame_number_order))
    return bad_field(e, "first_frame",
                     "is for a stream with order: frame_number only");
  return 0;
}

static int bad_dir(b2s_acq_err *e, const char *why) {
  return b2s_acq_err_set(e, B2S_ACQ_E_BAD_DIRECTORY, "directory",
                         "directory %s", why);
}

int b2s_acq_request_check_directory(const b2s_acq_request *r,
                                    b2s_acq_err *e) {
  const char *d = r->directory;
  size_t n = strlen(d);
  if (d[0] != '/')
    return bad_dir(e, "must be an absolute path");
  if (n == 1)
    return bad_dir(e, "must not be the root directory");
  if (!b2s_utf8_valid((const uint8_t *)d, n))
    return bad_dir(e, "is not valid UTF-8");
  for (const char *c = d + 1;; ) {
    size_t k = strcspn(c, "/");
    if (k == 0)
      return bad_dir(e, "has an empty component (\"//\")");
    if ((k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
      return b2s_acq_err_set(e, B2S_ACQ_E_BAD_DIRECTORY, "directory",
                             "directory has a \"%.*s\" component", (int)k,
                             c);
    if (c[k] == '\0')
      return 0;
    c += k + 1;
  }
}

/* ---- rendering and comparison ------------------------------------------------ */

static json_object *uint_json(uint64_t v) {
  return v > (uint64_t)INT64_MAX ? json_object_new_uint64(v)
                                 : json_object_new_int64((int64_t)v);
}

json_object *b2s_acq_request_json(const b2s_acq_request *r, bool with_series) {
  json_object *o = json_object_new_object(), *in = json_object_new_object();
  if (!o || !in) {
    json_object_put(o);
    json_object_put(in);
    return NULL;
  }
  json_object_object_add(o, "id", json_object_new_string(r->id));
  if (r->input == B2S_ACQ_INPUT_SOURCE) {
    json_object_object_add(in, "source", json_object_new_string(r->input_name));
  } else {
    json_object_object_add(in, "stream", json_object_new_string(r->input_name));
    if (r->template_name[0])
      json_object_object_add(in, "template",
                             json_object_new_string(r->template_name));
  }
  json_object_object_add(o, "input", in);
  json_object_object_add(o, "directory", json_object_new_string(r->directory));
  json_object_object_add(o, "create_directory",
                         json_object_new_boolean(r->create_directory));
  json_object_object_add(o, "file_template",
                         json_object_new_string(r->file_template));
  json_object_object_add(o, "frames", uint_json(r->frames));
  json_object_object_add(o, "frames_per_file",
                         json_object_new_int64(r->frames_per_file));
  json_object_object_add(o, "first_frame",
                         r->has_first_frame ? uint_json(r->first_frame) : NULL);
  if (with_series) {
    json_object *s = NULL;
    b2s_acq_err e;
    if (b2s_acq_json_parse(r->series ? r->series : "{}",
                           r->series ? strlen(r->series) : 2,
                           B2S_ACQ_JSON_DEPTH, &s, &e) == 0) {
      json_object *c = canonical(s);
      json_object_put(s);
      s = c;
    }
    json_object_object_add(o, "series", s ? s : json_object_new_object());
  }
  json_object_object_add(o, "overwrite",
                         json_object_new_string(r->overwrite ? "replace"
                                                             : "refuse"));
  json_object_object_add(o, "on_loss",
                         json_object_new_string(r->on_loss ? "count" : "fail"));
  return o;
}

char *b2s_acq_request_canonical(const b2s_acq_request *r) {
  json_object *o = b2s_acq_request_json(r, true);
  char *s = o ? b2s_acq_json_line(o) : NULL;
  json_object_put(o);
  return s;
}

int b2s_acq_request_compare(const b2s_acq_request *a,
                            const b2s_acq_request *b, const char **member) {
  json_object *x = b2s_acq_request_json(a, true);
  json_object *y = b2s_acq_request_json(b, true);
  int rc = 0;
  for (int i = 0; members[i] && x && y; i++) {
    json_object *u = json_object_object_get(x, members[i]);
    json_object *v = json_object_object_get(y, members[i]);
    const char *su = json_object_to_json_string_ext(u, JSON_C_TO_STRING_PLAIN);
    char *cu = su ? strdup(su) : NULL;
    const char *sv = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    bool differ = !cu || !sv || strcmp(cu, sv) != 0;
    free(cu);
    if (differ) {
      if (member)
        *member = members[i];
      rc = 1;
      break;
    }
  }
  if (!x || !y) {
    if (member)
      *member = "id";
    rc = 1;
  }
  json_object_put(x);
  json_object_put(y);
  return rc;
}

/* The `series:` key of a stream or template: a YAML mapping of series
 * metadata defaults, encoded here into the msgpack map the frame stores
 * (METADATA.md).  Plain scalars are typed as YAML 1.2 reads them (decimal
 * integers, floats, booleans); quoted or other scalars are strings. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_meta.h"
#include "config_internal.h"

static bool is_digits(const char **p) {
  const char *s = *p;
  while (isdigit((unsigned char)**p))
    (*p)++;
  return *p > s;
}

/* [-+]?(.D+|D+(.D*)?)([eE][-+]?D+)?, the YAML 1.2 core float, or .inf/.nan */
static bool float_text(const char *s, double *out) {
  const char *p = s + (*s == '-' || *s == '+');
  const char *inf[] = {".inf", ".Inf", ".INF"}, *nan[] = {".nan", ".NaN",
                                                          ".NAN"};
  for (int i = 0; i < 3; i++) {
    if (strcmp(p, inf[i]) == 0) {
      *out = *s == '-' ? -INFINITY : INFINITY;
      return true;
    }
    if (strcmp(s, nan[i]) == 0) {
      *out = NAN;
      return true;
    }
  }
  bool whole = is_digits(&p);
  if (*p == '.') {
    p++;
    if (!is_digits(&p) && !whole)
      return false;
  } else if (!whole) {
    return false;
  }
  if (*p == 'e' || *p == 'E') {
    p += 1 + (p[1] == '-' || p[1] == '+');
    if (!is_digits(&p))
      return false;
  }
  if (*p)
    return false;
  *out = strtod(s, NULL);
  return true;
}

static bool int_like(const char *s) {
  const char *p = s + (*s == '-' || *s == '+');
  return is_digits(&p) && *p == '\0';
}

/* 1 or 0 for a YAML 1.2 boolean, else -1. */
static int bool_text(const char *s) {
  static const char *const t[] = {"true", "True", "TRUE"},
                           *const f[] = {"false", "False", "FALSE"};
  for (int i = 0; i < 3; i++)
    if (strcmp(s, t[i]) == 0 || strcmp(s, f[i]) == 0)
      return strcmp(s, t[i]) == 0;
  return -1;
}

static int put_scalar(cfg_ctx *c, const cfg_node *v, const char *kp,
                      b2s_mpbuf *b) {
  if (v->kind != CN_SCALAR)
    return b2s_cfg_fail(c, v, kp, "expected a scalar, got %s",
                    b2s_cfg_node_kind_name(v));
  if (b2s_cfg_node_is_null(v))
    return b2s_cfg_fail(c, v, kp, "null is not a series value (leave the key "
                    "out)");
  if (v->quoted)
    return b2s_mp_put_str(b, v->str, v->len);
  int64_t i;
  double x;
  if (int_like(v->str)) {
    if (b2s_cfg_parse_int(v->str, &i) < 0)
      return b2s_cfg_fail(c, v, kp, "%s is out of the 64-bit integer range",
                      v->str);
    return b2s_mp_put_int(b, i);
  }
  if (float_text(v->str, &x))
    return b2s_mp_put_float64(b, x);
  int truth = bool_text(v->str);
  return truth >= 0 ? b2s_mp_write_bool(b, truth == 1)
                    : b2s_mp_put_str(b, v->str, v->len);
}

static int put_value(cfg_ctx *c, const cfg_node *v, const char *kp,
                     b2s_mpbuf *b) {
  if (v->kind != CN_SEQ)
    return put_scalar(c, v, kp, b);
  int rc = b2s_mp_put_array(b, (uint32_t)v->n);
  size_t i = 0;
  for (const cfg_node *it = v->child; rc == 0 && it; it = it->next, i++) {
    char ikp[CFG_KEYPATH_MAX + 96];
    snprintf(ikp, sizeof ikp, "%s[%zu]", kp, i);
    rc = put_scalar(c, it, ikp, b);
  }
  return rc;
}

static int put_key(cfg_ctx *c, const cfg_node *k, const char *kp,
                   b2s_mpbuf *b) {
  if (k->kind != CN_SCALAR || k->len == 0 || k->len > B2S_SERIES_KEY_MAX ||
      !b2s_utf8_valid((const uint8_t *)k->str, k->len)) {
    char q[96];
    b2s_cfg_quote(q, sizeof q, k->kind == CN_SCALAR ? k->str : "", k->len);
    return b2s_cfg_fail(c, k, kp, "series key %s is not 1..%d bytes of UTF-8", q,
                    B2S_SERIES_KEY_MAX);
  }
  return b2s_mp_put_str(b, k->str, k->len);
}

static int dup_check(cfg_ctx *c, const cfg_node *map, const cfg_node *k,
                     const char *kp) {
  for (const cfg_node *p = map->child; p != k; p = p->next->next)
    if (p->len == k->len && memcmp(p->str, k->str, k->len) == 0)
      return b2s_cfg_fail(c, k, kp, "duplicate key '%s' (first at line %d)",
                      k->str, p->line);
  return 0;
}

static int encode(cfg_ctx *c, const cfg_node *map, const char *kp,
                  b2s_mpbuf *b) {
  int rc = b2s_mp_put_map(b, (uint32_t)(map->n / 2));
  for (const cfg_node *k = map->child; rc == 0 && k && k->next;
       k = k->next->next) {
    char vkp[CFG_KEYPATH_MAX + B2S_SERIES_KEY_MAX + 1];
    int kl = k->len > B2S_SERIES_KEY_MAX ? B2S_SERIES_KEY_MAX : (int)k->len;
    snprintf(vkp, sizeof vkp, "%s.%.*s", kp, kl, k->str);
    rc = put_key(c, k, kp, b);
    if (rc == 0)
      rc = dup_check(c, map, k, kp);
    if (rc == 0)
      rc = put_value(c, k->next, vkp, b);
  }
  if (rc == B2S_E_NOMEM)
    return b2s_cfg_nomem(c);
  return rc;
}

int b2s_cfg_series_set(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                   void *obj, const char *kp) {
  uint16_t len = 0;
  if (!b2s_cfg_node_is_null(v) && v->kind != CN_MAP)
    return b2s_cfg_fail(c, v, kp, "expected a mapping of keys to values, got %s",
                    b2s_cfg_node_kind_name(v));
  b2s_mpbuf b = {0};
  int rc = 0;
  if (v->kind == CN_MAP && v->n > 0) {
    rc = encode(c, v, kp, &b);
    if (rc == 0 && b.len > d->size)
      rc = b2s_cfg_fail(c, v, kp, "encodes to %zu bytes, more than %u", b.len,
                    (unsigned)d->size);
    int n = rc == 0 ? b2s_series_check(b.data, b.len, false) : 0;
    if (n < 0)
      rc = b2s_cfg_fail(c, v, kp, "%s", b2s_strerror(n));
    len = (uint16_t)b.len;
  }
  if (rc == 0) {
    if (len)
      memcpy((char *)obj + d->off, b.data, len);
    memcpy((char *)obj + d->aux, &len, sizeof len);
  }
  b2s_mpbuf_fini(&b);
  return rc;
}

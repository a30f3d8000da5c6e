/* Scalar syntax (integers; sizes are core's b2s_size_parse), error
 * formatting and small helpers. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config_internal.h"

int b2s_cfg_vfail(cfg_ctx *c, const cfg_node *at, const char *keypath,
              const char *fmt, va_list ap) {
  if (!c || !c->err || c->errlen == 0)
    return B2S_E_CONFIG;
  size_t n = 0, cap = c->errlen;
  int k = 0;
  if (c->file && at && at->line > 0)
    k = snprintf(c->err, cap, "%s:%d:%d: ", c->file, at->line, at->col);
  else if (c->file)
    k = snprintf(c->err, cap, "%s: ", c->file);
  n = k < 0 ? 0 : (size_t)k;
  if (n < cap && keypath && keypath[0]) {
    k = snprintf(c->err + n, cap - n, "%s: ", keypath);
    n += k < 0 ? 0 : (size_t)k;
  }
  if (n < cap)
    vsnprintf(c->err + n, cap - n, fmt, ap);
  return B2S_E_CONFIG;
}

int b2s_cfg_fail(cfg_ctx *c, const cfg_node *at, const char *keypath,
             const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = b2s_cfg_vfail(c, at, keypath, fmt, ap);
  va_end(ap);
  return rc;
}

int b2s_cfg_nomem(cfg_ctx *c) {
  b2s_cfg_fail(c, NULL, "", "out of memory");
  return B2S_E_NOMEM;
}

static int loc_vfail(cfg_ctx *c, const cfg_loc *loc, int di, int item,
                     const char *fmt, va_list ap) {
  /* Point at the key where it was set: in the stream, else in its
   * template, else at the stream itself. */
  const cfg_node *at = loc->at[di];
  const cfg_loc *from = NULL;
  if (!at && loc->base && loc->base->at[di]) {
    from = loc->base;
    at = from->at[di];
  }
  char keypath[CFG_KEYPATH_MAX * 2];
  int n = snprintf(keypath, sizeof keypath, "%s%s%s", loc->path,
                   loc->path[0] ? "." : "", b2s_cfg_schema[di].path);
  if (item >= 0 && n > 0 && (size_t)n < sizeof keypath) {
    snprintf(keypath + n, sizeof keypath - (size_t)n, "[%d]", item);
    const cfg_node *it = at && at->kind == CN_SEQ ? at->child : NULL;
    for (int i = 0; it && i < item; i++)
      it = it->next;
    if (it)
      at = it;
  }
  for (int p = di; !at && p >= 0;) {
    /* unset: point at the enclosing group (b2nd: {}), else the entry */
    p = b2s_cfg_desc_parent(p);
    if (p >= 0)
      at = loc->at[p] ? loc->at[p] : loc->base ? loc->base->at[p] : NULL;
  }
  if (!at)
    at = loc->self;
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (from)
    return b2s_cfg_fail(c, at, keypath, "%s (set in %s)", msg, from->path);
  return b2s_cfg_fail(c, at, keypath, "%s", msg);
}

int b2s_cfg_loc_fail(cfg_ctx *c, const cfg_loc *loc, int di, const char *fmt,
                 ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = loc_vfail(c, loc, di, -1, fmt, ap);
  va_end(ap);
  return rc;
}

int b2s_cfg_loc_item_fail(cfg_ctx *c, const cfg_loc *loc, int di, int item,
                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = loc_vfail(c, loc, di, item, fmt, ap);
  va_end(ap);
  return rc;
}

int b2s_cfg_parse_int(const char *s, int64_t *out) {
  const char *p = s;
  bool neg = *p == '-';
  if (*p == '-' || *p == '+')
    p++;
  if (!isdigit((unsigned char)*p))
    return -1;
  uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; isdigit((unsigned char)*p); p++) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (limit - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  if (*p)
    return -1;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

void b2s_cfg_quote(char *buf, size_t n, const char *s, size_t len) {
  size_t o = 0;
  if (n < 8) {
    if (n)
      buf[0] = '\0';
    return;
  }
  buf[o++] = '\'';
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (o + 8 >= n) {
      memcpy(buf + o, "...", 3);
      o += 3;
      break;
    }
    if (ch >= 0x20 && ch < 0x7f && ch != '\\')
      buf[o++] = (char)ch;
    else
      o += (size_t)snprintf(buf + o, n - o, "\\x%02x", ch);
  }
  buf[o++] = '\'';
  buf[o] = '\0';
}

static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  size_t row[65];
  if (la > 64 || lb > 64)
    return SIZE_MAX;
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

const char *b2s_cfg_suggest(const char *word, const char *const *cand, size_t n) {
  size_t len = strlen(word), best = SIZE_MAX;
  const char *pick = NULL;
  for (size_t i = 0; i < n; i++) {
    size_t d = edit_distance(word, cand[i]);
    if (d < best) {
      best = d;
      pick = cand[i];
    }
  }
  size_t allowed = len <= 4 ? 1 : len <= 8 ? 2 : 3;
  return best <= allowed && best < len ? pick : NULL;
}

int64_t b2s_cfg_field_get(const void *p, size_t size) {
  switch (size) {
  case 1: { int8_t v; memcpy(&v, p, 1); return v; }
  case 2: { int16_t v; memcpy(&v, p, 2); return v; }
  case 4: { int32_t v; memcpy(&v, p, 4); return v; }
  default: { int64_t v; memcpy(&v, p, 8); return v; }
  }
}

void b2s_cfg_field_set(void *p, size_t size, int64_t v) {
  switch (size) {
  case 1: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
  case 2: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
  case 4: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
  default: memcpy(p, &v, 8); break;
  }
}

size_t b2s_cfg_list_count(const cfg_desc *d, const void *obj) {
  const char *p = (const char *)obj + d->aux;
  if (d->flags & CF_COUNT16) {
    uint16_t n;
    memcpy(&n, p, sizeof n);
    return n;
  }
  return *(const uint8_t *)p;
}

void b2s_cfg_list_count_set(const cfg_desc *d, void *obj, size_t n) {
  char *p = (char *)obj + d->aux;
  if (d->flags & CF_COUNT16) {
    uint16_t v = (uint16_t)n;
    memcpy(p, &v, sizeof v);
  } else {
    *(uint8_t *)p = (uint8_t)n;
  }
}

/* Walk a YAML mapping against the schema and store each value into its
 * field: type checks, bounds, unknown and duplicate keys, defaults. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

static void child_path(char *out, const char *parent, const char *key) {
  snprintf(out, CFG_KEYPATH_MAX, "%s%s%s", parent, parent[0] ? "." : "", key);
}

static int expected(cfg_ctx *c, const cfg_node *v, const char *kp,
                    const char *what) {
  if (v->kind != CN_SCALAR || b2s_cfg_node_is_null(v))
    return b2s_cfg_fail(c, v, kp, "expected %s, got %s", what,
                    b2s_cfg_node_kind_name(v));
  char q[96];
  b2s_cfg_quote(q, sizeof q, v->str, v->len);
  return b2s_cfg_fail(c, v, kp, "expected %s, got %s", what, q);
}

static bool is_value(const cfg_node *v) {
  return v->kind == CN_SCALAR && !b2s_cfg_node_is_null(v);
}

static int get_int(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                   const char *kp, int64_t *out) {
  if (!is_value(v) || b2s_cfg_parse_int(v->str, out) < 0)
    return expected(c, v, kp, "an integer");
  if (*out < d->min || *out > d->max)
    return b2s_cfg_fail(c, v, kp, "%s is out of range %lld..%lld", v->str,
                    (long long)d->min, (long long)d->max);
  return 0;
}

/* A finite number in min..max, stored as a double. */
static int set_float(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                     const char *kp, void *field) {
  char *end = NULL;
  double x = is_value(v) ? strtod(v->str, &end) : 0;
  if (!is_value(v) || end == v->str || *end != '\0' || !isfinite(x))
    return expected(c, v, kp, "a number");
  if (x < (double)d->min || x > (double)d->max)
    return b2s_cfg_fail(c, v, kp, "%s is out of range %lld..%lld", v->str,
                        (long long)d->min, (long long)d->max);
  memcpy(field, &x, sizeof x);
  return 0;
}

static int get_size(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                    const char *kp, int64_t *out) {
  if (!is_value(v))
    return expected(c, v, kp, "a size");
  if (b2s_size_parse(v->str, out) < 0) {
    char q[96];
    b2s_cfg_quote(q, sizeof q, v->str, v->len);
    return b2s_cfg_fail(c, v, kp, "%s is not a size (" B2S_SIZE_SYNTAX ")", q);
  }
  if (*out < d->min || *out > d->max) {
    char lo[32], hi[32];
    b2s_size_format(d->min, lo, sizeof lo);
    b2s_size_format(d->max, hi, sizeof hi);
    return b2s_cfg_fail(c, v, kp, "%s is out of range %s..%s", v->str, lo, hi);
  }
  return 0;
}

static int get_enum(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                    const char *kp, int64_t *out) {
  const char *names[16];
  size_t n = 0;
  char list[160] = "";
  for (const cfg_enum *e = d->enums; e->name && n < 16; e++) {
    if (is_value(v) && strcmp(v->str, e->name) == 0) {
      *out = e->value;
      return 0;
    }
    names[n++] = e->name;
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", e->name);
  }
  if (!is_value(v))
    return b2s_cfg_fail(c, v, kp, "expected one of %s, got %s", list,
                    b2s_cfg_node_kind_name(v));
  char q[96];
  b2s_cfg_quote(q, sizeof q, v->str, v->len);
  const char *hint = b2s_cfg_suggest(v->str, names, n);
  if (hint)
    return b2s_cfg_fail(c, v, kp, "%s is not one of %s (did you mean '%s'?)", q,
                    list, hint);
  return b2s_cfg_fail(c, v, kp, "%s is not one of %s", q, list);
}

static int put_string(cfg_ctx *c, const cfg_node *v, const char *kp,
                      char *dst, size_t cap, const char *s) {
  size_t len = strlen(s);
  if (len >= cap)
    return b2s_cfg_fail(c, v, kp, "longer than %zu bytes", cap - 1);
  memcpy(dst, s, len + 1);
  return 0;
}

static int set_path(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                    const char *kp, void *field) {
  if (!v->str[0])
    return put_string(c, v, kp, field, d->size, "");
  char full[B2S_CONFIG_PATH_MAX];
  if (b2s_cfg_path_join(c->base_dir, v->str, full, sizeof full) < 0)
    return b2s_cfg_fail(c, v, kp, "path longer than %d bytes",
                    B2S_CONFIG_PATH_MAX - 1);
  return put_string(c, v, kp, field, d->size, full);
}

static int set_dtype(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                     const char *kp, void *field) {
  for (const char *p = v->str; *p; p++)
    if (*p < 0x20 || *p > 0x7e)
      return b2s_cfg_fail(c, v, kp, "a dtype is printable ASCII");
  return put_string(c, v, kp, field, d->size, v->str);
}

static int set_template(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                        const char *kp, void *field) {
  if (b2s_stream_name_check(v->str) < 0) {
    char q[96];
    b2s_cfg_quote(q, sizeof q, v->str, v->len);
    return b2s_cfg_fail(c, v, kp, "%s is not a valid template name", q);
  }
  return put_string(c, v, kp, field, d->size, v->str);
}

/* Portable POSIX names, as useradd accepts them: [A-Za-z_][A-Za-z0-9_.-]*,
 * optionally ending in '$'.  Whether the group exists is the daemon's to
 * check: the file may be validated on another machine. */
static int set_unix_group(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                          const char *kp, void *field) {
  const char *s = v->str;
  bool ok = v->len < B2S_CONFIG_GROUP_MAX;
  for (size_t i = 0; ok && i < v->len; i++) {
    char ch = s[i];
    bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                 ch == '_';
    bool rest = (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
                (ch == '$' && i + 1 == v->len);
    ok = alpha || (i > 0 && rest);
  }
  if (!ok) {
    char q[96];
    b2s_cfg_quote(q, sizeof q, v->str, v->len);
    return b2s_cfg_fail(c, v, kp, "%s is not a group name", q);
  }
  return put_string(c, v, kp, field, d->size, v->str);
}

static int endpoint_ok(cfg_ctx *c, const cfg_node *v, const char *kp) {
  const char *why = b2s_cfg_endpoint_check(v->str);
  if (!why)
    return 0;
  char q[96];
  b2s_cfg_quote(q, sizeof q, v->str, v->len);
  return b2s_cfg_fail(c, v, kp, "%s: %s", q, why);
}

static int set_endpoint(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                        const char *kp, void *field) {
  int rc = v->str[0] ? endpoint_ok(c, v, kp) : 0;
  return rc < 0 ? rc : put_string(c, v, kp, field, d->size, v->str);
}

static int set_hostport(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                        const char *kp, void *field) {
  const char *why = b2s_cfg_hostport_check(v->str);
  if (why) {
    char q[96];
    b2s_cfg_quote(q, sizeof q, v->str, v->len);
    return b2s_cfg_fail(c, v, kp, "%s: %s", q, why);
  }
  return put_string(c, v, kp, field, d->size, v->str);
}

/* rados://POOL (a pool name as Ceph allows it, here kept to a safe set),
 * file:///ABS, or a directory relative to the file's. */
static int set_storage(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                       const char *kp, void *field) {
  const char *s = v->str;
  char q[96];
  b2s_cfg_quote(q, sizeof q, s, v->len);
  if (strncmp(s, "rados://", 8) == 0) {
    size_t n = strlen(s + 8);
    if (n == 0 || n > 128 || strspn(s + 8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "abcdefghijklmnopqrstuvwxyz0123456789"
                                    "._-") != n)
      return b2s_cfg_fail(c, v, kp, "%s: a pool name is 1..128 characters of "
                      "A-Z a-z 0-9 . _ -", q);
    return put_string(c, v, kp, field, d->size, s);
  }
  if (strstr(s, "://") && strncmp(s, "file://", 7) != 0)
    return b2s_cfg_fail(c, v, kp, "%s is neither rados://POOL, file:///DIR nor "
                    "a directory", q);
  if (strncmp(s, "file://", 7) == 0) {
    s += 7;
    if (s[0] != '/')
      return b2s_cfg_fail(c, v, kp, "%s: a file:// URL holds an absolute path", q);
  }
  if (!s[0])
    return b2s_cfg_fail(c, v, kp, "must not be empty");
  char full[B2S_CONFIG_PATH_MAX];
  if (b2s_cfg_path_join(c->base_dir, s, full, sizeof full) < 0)
    return b2s_cfg_fail(c, v, kp, "path longer than %d bytes",
                    B2S_CONFIG_PATH_MAX - 1);
  return put_string(c, v, kp, field, d->size, full);
}

static int set_string(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                      const char *kp, void *field) {
  if (v->kind != CN_SCALAR || b2s_cfg_node_is_null(v))
    return expected(c, v, kp, "a string");
  switch (d->type) {
  case CT_PATH: return set_path(c, d, v, kp, field);
  case CT_DTYPE: return set_dtype(c, d, v, kp, field);
  case CT_TEMPLATE: return set_template(c, d, v, kp, field);
  case CT_UNIX_GROUP: return set_unix_group(c, d, v, kp, field);
  case CT_ENDPOINT: return set_endpoint(c, d, v, kp, field);
  case CT_HOSTPORT: return set_hostport(c, d, v, kp, field);
  case CT_STORAGE: return set_storage(c, d, v, kp, field);
  default: return put_string(c, v, kp, field, d->size, v->str);
  }
}

static int set_item(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                    const char *kp, void *field) {
  int64_t x = 0;
  int rc;
  switch (d->type) {
  case CT_ENDPOINTS: {
    if (v->kind != CN_SCALAR || b2s_cfg_node_is_null(v))
      return expected(c, v, kp, "an endpoint string");
    int erc = endpoint_ok(c, v, kp);
    return erc < 0 ? erc : put_string(c, v, kp, field, d->size, v->str);
  }
  case CT_PATHS:
    if (v->kind != CN_SCALAR || b2s_cfg_node_is_null(v) || !v->str[0])
      return expected(c, v, kp, "a path");
    return set_path(c, d, v, kp, field);
  case CT_ENUM_LIST:
    rc = get_enum(c, d, v, kp, &x);
    break;
  default:
    rc = get_int(c, d, v, kp, &x);
    break;
  }
  if (rc == 0)
    b2s_cfg_field_set(field, d->size, x);
  return rc;
}

static int set_list(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                    const char *kp, void *obj) {
  if (v->kind != CN_SEQ)
    return expected(c, v, kp, "a list");
  if (v->n > d->max_items)
    return b2s_cfg_fail(c, v, kp, "at most %d items, got %zu", d->max_items,
                    v->n);
  if (v->n < d->min_items)
    return b2s_cfg_fail(c, v, kp, "at least %d item%s needed", d->min_items,
                    d->min_items == 1 ? "" : "s");
  size_t i = 0;
  for (const cfg_node *it = v->child; it; it = it->next, i++) {
    char ikp[CFG_KEYPATH_MAX + 8];
    snprintf(ikp, sizeof ikp, "%s[%zu]", kp, i);
    int rc = set_item(c, d, it, ikp, (char *)obj + d->off + i * d->size);
    if (rc < 0)
      return rc;
  }
  b2s_cfg_list_count_set(d, obj, v->n);
  return 0;
}

static int set_value(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                     void *obj, const char *kp) {
  void *field = (char *)obj + d->off;
  int64_t x = 0;
  int rc;
  switch (d->type) {
  case CT_INT: rc = get_int(c, d, v, kp, &x); break;
  case CT_SIZE: rc = get_size(c, d, v, kp, &x); break;
  case CT_ENUM: rc = get_enum(c, d, v, kp, &x); break;
  case CT_ENDPOINTS:
  case CT_PATHS:
  case CT_ENUM_LIST:
  case CT_INT_LIST:
    return set_list(c, d, v, kp, obj);
  case CT_SERIES:
    return b2s_cfg_series_set(c, d, v, obj, kp);
  case CT_FLOAT:
    return set_float(c, d, v, kp, field);
  default:
    return set_string(c, d, v, kp, field);
  }
  if (rc == 0)
    b2s_cfg_field_set(field, d->size, x);
  return rc;
}

int b2s_cfg_apply_defaults(cfg_ctx *c, int scope, void *obj, bool template) {
  for (size_t i = 0; i < b2s_cfg_nschema; i++) {
    const cfg_desc *d = &b2s_cfg_schema[i];
    if (d->scope != scope || !d->def ||
        (template && (d->flags & CF_STREAM_ONLY)))
      continue;
    const char *text = d->def;
    /* "" is an empty string for string keys, not a missing value */
    bool quoted = d->type == CT_PATH || d->type == CT_STREAM_PATH ||
                  d->type == CT_DTYPE || d->type == CT_TEMPLATE ||
                  d->type == CT_UNIX_GROUP || d->type == CT_ENDPOINT ||
                  d->type == CT_HOSTPORT || d->type == CT_STRING ||
                  d->type == CT_STORAGE;
    char envval[B2S_CONFIG_PATH_MAX];
    const char *e = d->env ? getenv(d->env) : NULL;
    if (e && e[0]) {
      /* systemd lists several directories with ':'; ours is the first */
      size_t n = strcspn(e, ":");
      if (n >= sizeof envval)
        return b2s_cfg_fail(c, NULL, d->path, "$%s is too long", d->env);
      memcpy(envval, e, n);
      envval[n] = '\0';
      text = envval;
      quoted = true;
    }
    cfg_node *v = b2s_cfg_tree_from_text(&c->tree, text, quoted);
    if (!v)
      return b2s_cfg_nomem(c);
    int rc = set_value(c, d, v, obj, d->path);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int unknown_key(cfg_ctx *c, int scope, const char *prefix,
                       const cfg_node *k, const char *kp) {
  const char *names[CFG_MAX_DESC];
  size_t n = 0;
  for (size_t i = 0; i < b2s_cfg_nschema; i++)
    if (b2s_cfg_desc_under(&b2s_cfg_schema[i], scope, prefix))
      names[n++] = b2s_cfg_desc_key(&b2s_cfg_schema[i]);
  char q[96];
  b2s_cfg_quote(q, sizeof q, k->str, k->len);
  const char *hint = b2s_cfg_suggest(k->str, names, n);
  if (hint)
    return b2s_cfg_fail(c, k, kp, "unknown key %s (did you mean '%s'?)", q, hint);
  return b2s_cfg_fail(c, k, kp, "unknown key %s", q);
}

static int apply_group(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                       void *obj, bool template, cfg_loc *loc,
                       const char *kp) {
  bool *present = (d->flags & CF_OPTIONAL) ? (bool *)((char *)obj + d->aux)
                                            : NULL;
  if (b2s_cfg_node_is_null(v)) {
    /* "b2nd: null" switches off what a template switched on */
    if (present)
      *present = false;
    return 0;
  }
  if (v->kind != CN_MAP)
    return expected(c, v, kp, "a mapping");
  if (present)
    *present = true;
  return b2s_cfg_apply_map(c, d->scope, d->path, v, obj, template, loc, kp);
}

int b2s_cfg_apply_map(cfg_ctx *c, int scope, const char *prefix,
                  const cfg_node *map, void *obj, bool template,
                  cfg_loc *loc, const char *keypath) {
  const cfg_node *first[CFG_MAX_DESC] = {0};
  for (const cfg_node *k = map->child; k && k->next; k = k->next->next) {
    const cfg_node *v = k->next;
    int di = b2s_cfg_schema_find(scope, prefix, k->str, k->len);
    if (di < 0)
      return unknown_key(c, scope, prefix, k, keypath);
    const cfg_desc *d = &b2s_cfg_schema[di];
    char kp[CFG_KEYPATH_MAX];
    child_path(kp, keypath, b2s_cfg_desc_key(d));
    if (first[di])
      return b2s_cfg_fail(c, k, keypath, "duplicate key '%s' (first at line %d)",
                      b2s_cfg_desc_key(d), first[di]->line);
    first[di] = k;
    if (template && (d->flags & CF_STREAM_ONLY))
      return b2s_cfg_fail(c, k, keypath, "'%s' is not allowed in a template",
                      b2s_cfg_desc_key(d));
    if (loc)
      loc->at[di] = v;
    int rc;
    switch (d->type) {
    case CT_GROUP:
      rc = apply_group(c, d, v, obj, template, loc, kp);
      break;
    case CT_TEMPLATES:
    case CT_STREAMS:
      if (v->kind != CN_MAP && !b2s_cfg_node_is_null(v))
        return expected(c, v, kp, "a mapping of names to stream settings");
      if (d->type == CT_TEMPLATES)
        c->templates_node = v;
      else
        c->streams_node = v;
      rc = 0;
      break;
    case CT_SOURCES:
      if (v->kind != CN_SEQ && !b2s_cfg_node_is_null(v))
        return expected(c, v, kp, "a list of source settings");
      c->sources_node = v->kind == CN_SEQ ? v : NULL;
      rc = 0;
      break;
    case CT_CLUSTER:
      /* null: no cluster, as when the key is absent */
      if (v->kind != CN_MAP && !b2s_cfg_node_is_null(v))
        return expected(c, v, kp, "a mapping of cluster settings");
      c->cluster_node = v->kind == CN_MAP ? v : NULL;
      rc = 0;
      break;
    default:
      rc = set_value(c, d, v, obj, kp);
      break;
    }
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* Reloads, walked from the schema: which keys differ between the running
 * settings and the file just loaded, and what a running stream or the
 * daemon goes on with, as each row's reload class says (schema.c). */
#include <stdio.h>
#include <string.h>

#include "config_internal.h"

/* ---- a value as text, for "kept at ..." ---------------------------------- */

static void item_text(const cfg_desc *d, const char *field, char *buf,
                      size_t n) {
  int64_t v = b2s_cfg_field_get(field, d->size);
  const cfg_enum *e;
  switch (d->type) {
  case CT_SIZE:
    b2s_size_format(v, buf, n);
    break;
  case CT_ENUM:
  case CT_ENUM_LIST:
    e = b2s_cfg_enum_by_value(d->enums, (int)v);
    if (e)
      snprintf(buf, n, "%s", e->name);
    else
      snprintf(buf, n, "%lld", (long long)v);
    break;
  case CT_ENDPOINTS:
  case CT_PATHS:
    snprintf(buf, n, "%.*s", (int)d->size, field);
    break;
  default:
    snprintf(buf, n, "%lld", (long long)v);
    break;
  }
}

static void list_text(const cfg_desc *d, const void *obj, char *buf,
                      size_t n) {
  size_t count = b2s_cfg_list_count(d, obj), len = 0;
  const char *first = (const char *)obj + d->off;
  len += (size_t)snprintf(buf, n, "[");
  for (size_t i = 0; i < count && len < n; i++) {
    char item[B2S_CONFIG_ENDPOINT_MAX];
    item_text(d, first + i * d->size, item, sizeof item);
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", item);
  }
  if (len < n)
    snprintf(buf + len, n - len, "]");
}

static void value_text(const cfg_desc *d, const void *obj, char *buf,
                       size_t n) {
  const char *field = (const char *)obj + d->off;
  buf[0] = '\0';
  switch (d->type) {
  case CT_INT:
  case CT_SIZE:
  case CT_ENUM:
    item_text(d, field, buf, n);
    break;
  case CT_ENDPOINTS:
  case CT_PATHS:
  case CT_ENUM_LIST:
  case CT_INT_LIST:
    list_text(d, obj, buf, n);
    break;
  case CT_FLOAT: {
    double x;
    memcpy(&x, field, sizeof x);
    snprintf(buf, n, "%.17g", x);
    break;
  }
  case CT_SERIES: {
    uint16_t len;
    memcpy(&len, (const char *)obj + d->aux, sizeof len);
    snprintf(buf, n, "a map of %u bytes", (unsigned)len);
    break;
  }
  case CT_GROUP:
    if (d->flags & CF_OPTIONAL)
      snprintf(buf, n, "%s",
               *(const bool *)((const char *)obj + d->aux) ? "on" : "null");
    break;
  case CT_TEMPLATES:
  case CT_STREAMS:
  case CT_CLUSTER:
  case CT_SOURCES:
    break;
  default:                         /* strings */
    snprintf(buf, n, "\"%.*s\"", (int)(n > 3 ? n - 3 : 0), field);
    break;
  }
}

/* ---- the walk ------------------------------------------------------------ */

/* Copy the value of row d from src to dst: the field, a list's count, an
 * optional group's presence, a series' length. */
static void field_copy(const cfg_desc *d, void *dst, const void *src) {
  char *o = (char *)dst;
  const char *i = (const char *)src;
  switch (d->type) {
  case CT_GROUP:
    if (d->flags & CF_OPTIONAL)
      memcpy(o + d->aux, i + d->aux, sizeof(bool));
    return;
  case CT_TEMPLATES:
  case CT_STREAMS:
  case CT_CLUSTER:
  case CT_SOURCES:
    return;
  case CT_ENDPOINTS:
  case CT_PATHS:
  case CT_ENUM_LIST:
  case CT_INT_LIST:
    memcpy(o + d->off, i + d->off, (size_t)d->size * d->max_items);
    b2s_cfg_list_count_set(d, dst, b2s_cfg_list_count(d, src));
    return;
  case CT_SERIES:
    memcpy(o + d->off, i + d->off, d->size);
    memcpy(o + d->aux, i + d->aux, sizeof(uint16_t));
    return;
  default:
    memcpy(o + d->off, i + d->off, d->size);
    return;
  }
}

typedef struct walk {
  int scope;
  const void *running, *loaded;
  void *keep_into;            /* stream: restart keys from running */
  void *take_into;            /* daemon: at-once keys from loaded */
  b2s_reload_fn fn;
  void *arg;
  int changed;
} walk;

/* A b2nd stream's typesize and blocksize are part of its b2nd description
 * (the dtype's item size, the blockshape's bytes: stream_check.c), which
 * is kept whole: they stay with it. */
static bool b2nd_bound(const walk *w, const cfg_desc *d) {
  return w->scope == CFG_STREAM &&
         ((const b2s_stream_cfg *)w->running)->b2nd.enabled &&
         (strcmp(d->path, "typesize") == 0 || strcmp(d->path, "blocksize") == 0);
}

static int row_class(const walk *w, const cfg_desc *d) {
  return b2nd_bound(w, d) ? B2S_RELOAD_RESTART : d->reload;
}

static void tell(walk *w, const cfg_desc *d) {
  w->changed++;
  if (!w->fn)
    return;
  b2s_reload_change ch = {.key = d->path, .how = row_class(w, d),
                          .applies = d->applies};
  if (b2nd_bound(w, d))
    ch.applies = "a b2nd stream's goes with its b2nd description";
  value_text(d, w->running, ch.kept, sizeof ch.kept);
  w->fn(w->arg, &ch);
}

static bool present(const cfg_desc *d, const void *obj) {
  return *(const bool *)((const char *)obj + d->aux);
}

/* One row: told of when it differs, unless quiet (a key of an optional
 * group that is off, or switched on or off: the group is told of). */
static void walk_row(walk *w, const cfg_desc *d, bool quiet) {
  bool same = (d->flags & CF_OPTIONAL)
                  ? present(d, w->running) == present(d, w->loaded)
                  : b2s_cfg_field_equal(d, w->running, w->loaded);
  int how = row_class(w, d);
  if (w->keep_into && how == B2S_RELOAD_RESTART)
    field_copy(d, w->keep_into, w->running);
  if (same)
    return;
  if (w->take_into && how == B2S_RELOAD_AT_ONCE)
    field_copy(d, w->take_into, w->loaded);
  if (!quiet)
    tell(w, d);
}

static bool under(const cfg_desc *d, const cfg_desc *group) {
  size_t n = strlen(group->path);
  return strncmp(d->path, group->path, n) == 0 && d->path[n] == '.';
}

static int walk_scope(walk *w) {
  const cfg_desc *hush = NULL;   /* an optional group off, or switched */
  for (size_t i = 0; i < b2s_cfg_nschema; i++) {
    const cfg_desc *d = &b2s_cfg_schema[i];
    if (d->scope != w->scope)
      continue;
    if (hush && !under(d, hush))
      hush = NULL;
    walk_row(w, d, hush != NULL);
    if ((d->flags & CF_OPTIONAL) &&
        (!present(d, w->running) || !present(d, w->loaded)))
      hush = d;
  }
  return w->changed;
}

/* ---- the scopes -------------------------------------------------------- */

static bool row_restart(const char *path) {
  int i = b2s_cfg_schema_index(CFG_STREAM, path);
  return i >= 0 && b2s_cfg_schema[i].reload == B2S_RELOAD_RESTART;
}

int b2s_stream_cfg_reload(const b2s_stream_cfg *running,
                          const b2s_stream_cfg *loaded, b2s_stream_cfg *out,
                          b2s_reload_fn fn, void *arg) {
  b2s_stream_cfg next = *loaded;
  walk w = {.scope = CFG_STREAM, .running = running, .loaded = loaded,
            .keep_into = &next, .fn = fn, .arg = arg};
  int n = walk_scope(&w);
  /* fields no row has, derived from rows kept: they go with them */
  if (row_restart("path"))
    memcpy(next.full_path, running->full_path, sizeof next.full_path);
  if (row_restart("b2nd"))
    next.b2nd = running->b2nd;
  memcpy(next.name, running->name, sizeof next.name);
  *out = next;
  return n;
}

int b2s_daemon_cfg_reload(b2s_daemon_cfg *running,
                          const b2s_daemon_cfg *loaded, b2s_reload_fn fn,
                          void *arg) {
  b2s_daemon_cfg before = *running;   /* told values are the old ones */
  walk w = {.scope = CFG_DAEMON, .running = &before, .loaded = loaded,
            .take_into = running, .fn = fn, .arg = arg};
  return walk_scope(&w);
}

int b2s_cluster_cfg_reload(const b2s_cluster_cfg *running,
                           const b2s_cluster_cfg *loaded, b2s_reload_fn fn,
                           void *arg) {
  walk w = {.scope = CFG_CLUSTER, .running = running, .loaded = loaded,
            .fn = fn, .arg = arg};
  if (running->enabled != loaded->enabled) {
    const cfg_desc *d =
        &b2s_cfg_schema[b2s_cfg_schema_index(CFG_DAEMON, "cluster")];
    w.changed++;
    if (fn) {
      b2s_reload_change ch = {.key = d->path, .how = d->reload,
                              .applies = d->applies};
      snprintf(ch.kept, sizeof ch.kept, "%s", running->enabled ? "on" : "null");
      fn(arg, &ch);
    }
    return 1;
  }
  return running->enabled ? walk_scope(&w) : 0;
}

int b2s_source_cfg_reload(const b2s_source_cfg *running,
                          const b2s_source_cfg *loaded, b2s_reload_fn fn,
                          void *arg) {
  walk w = {.scope = CFG_SOURCE, .running = running, .loaded = loaded,
            .fn = fn, .arg = arg};
  return walk_scope(&w);
}

int b2s_config_key_reload(const char *scope, const char *path,
                          const char **applies) {
  static const char *const names[] = {
      [CFG_DAEMON] = "daemon", [CFG_STREAM] = "stream",
      [CFG_CLUSTER] = "cluster", [CFG_SOURCE] = "source"};
  for (int s = 0; s < (int)(sizeof names / sizeof names[0]); s++) {
    if (strcmp(scope, names[s]) != 0)
      continue;
    int i = b2s_cfg_schema_index(s, path);
    if (i < 0)
      break;
    if (applies)
      *applies = b2s_cfg_schema[i].applies;
    return b2s_cfg_schema[i].reload;
  }
  return B2S_E_ARG;
}

/* Templates and streams of the file: names, inheritance (a stream starts
 * from its template and its own keys override, key by key), clashes between
 * stream paths; finding one by name.  (Streams created from a template at
 * run time: config.c.) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define SI(path) b2s_cfg_schema_index(CFG_STREAM, path)

static int name_check(cfg_ctx *c, const cfg_node *k, const char *kp) {
  if (b2s_stream_name_check(k->str) == 0 && strlen(k->str) == k->len)
    return 0;
  char q[96];
  b2s_cfg_quote(q, sizeof q, k->str, k->len);
  return b2s_cfg_fail(c, k, kp, "invalid name %s (1..%d characters of "
                  "A-Z a-z 0-9 . _ -, not starting with '.')", q,
                  B2S_STREAM_NAME_MAX);
}

static const cfg_node *map_get(const cfg_node *map, const char *key) {
  if (map->kind != CN_MAP)
    return NULL;
  for (const cfg_node *k = map->child; k && k->next; k = k->next->next)
    if (strcmp(k->str, key) == 0)
      return k->next;
  return NULL;
}

static int entry_start(cfg_ctx *c, const cfg_node *k, const cfg_node *v,
                       const char *section, cfg_loc *loc) {
  int rc = name_check(c, k, section);
  if (rc < 0)
    return rc;
  memset(loc, 0, sizeof *loc);
  loc->self = v;
  snprintf(loc->path, sizeof loc->path, "%s.%s", section, k->str);
  if (v->kind != CN_MAP && !b2s_cfg_node_is_null(v))
    return b2s_cfg_fail(c, v, loc->path, "expected a mapping of settings, got %s",
                    b2s_cfg_node_kind_name(v));
  return 0;
}

static int apply_entry(cfg_ctx *c, const cfg_node *v, b2s_stream_cfg *s,
                       bool template, cfg_loc *loc) {
  if (v->kind != CN_MAP)
    return 0;
  return b2s_cfg_apply_map(c, CFG_STREAM, "", v, s, template, loc, loc->path);
}

static int load_templates(cfg_ctx *c, cfg_loc *locs) {
  b2s_config *cfg = c->cfg;
  const cfg_node *tn = c->templates_node;
  cfg->templates[0] = cfg->stream_defaults;
  snprintf(cfg->templates[0].name, sizeof cfg->templates[0].name, "default");
  cfg->ntemplates = 1;
  bool user_default = false;
  for (const cfg_node *k = tn ? tn->child : NULL; k && k->next;
       k = k->next->next) {
    cfg_loc loc;
    int rc = entry_start(c, k, k->next, "templates", &loc);
    if (rc < 0)
      return rc;
    size_t idx = cfg->ntemplates;
    for (size_t i = 0; i < cfg->ntemplates; i++)
      if (strcmp(cfg->templates[i].name, k->str) == 0)
        idx = i;
    if (idx < cfg->ntemplates && (idx > 0 || user_default))
      return b2s_cfg_fail(c, k, "templates", "duplicate key '%s' (first at "
                      "line %d)", k->str, locs[idx].self->line);
    user_default |= idx == 0;
    b2s_stream_cfg *t = &cfg->templates[idx];
    *t = cfg->stream_defaults;
    snprintf(t->name, sizeof t->name, "%s", k->str);
    t->template_name[0] = '\0';
    rc = apply_entry(c, k->next, t, true, &loc);
    if (rc < 0)
      return rc;
    /* Check now, with this template's lines, what a stream would hit. */
    b2s_stream_cfg *probe = malloc(sizeof *probe);
    if (!probe)
      return b2s_cfg_nomem(c);
    *probe = *t;
    rc = b2s_cfg_stream_finish(c, &cfg->daemon, probe, &loc);
    free(probe);
    if (rc < 0)
      return rc;
    locs[idx] = loc;
    if (idx == cfg->ntemplates)
      cfg->ntemplates++;
  }
  return 0;
}

static int pick_template(cfg_ctx *c, const cfg_node *v, const char *path,
                         size_t *idx) {
  const b2s_config *cfg = c->cfg;
  const cfg_node *tv = map_get(v, "template");
  const char *name = tv && tv->kind == CN_SCALAR ? tv->str : "default";
  const char *names[B2S_CONFIG_MAX_STREAMS + 1];
  for (size_t i = 0; i < cfg->ntemplates; i++) {
    if (strcmp(cfg->templates[i].name, name) == 0) {
      *idx = i;
      return 0;
    }
    names[i] = cfg->templates[i].name;
  }
  char kp[CFG_KEYPATH_MAX + 16], q[96];
  snprintf(kp, sizeof kp, "%s.template", path);
  if (!tv || tv->kind != CN_SCALAR)
    return b2s_cfg_fail(c, tv ? tv : v, kp, "expected a template name, got %s",
                    tv ? b2s_cfg_node_kind_name(tv) : "nothing");
  b2s_cfg_quote(q, sizeof q, tv->str, tv->len);
  const char *hint = b2s_cfg_suggest(name, names, cfg->ntemplates);
  if (hint)
    return b2s_cfg_fail(c, tv, kp, "unknown template %s (did you mean '%s'?)", q,
                    hint);
  return b2s_cfg_fail(c, tv, kp, "unknown template %s", q);
}

static int load_stream(cfg_ctx *c, const cfg_node *k, const cfg_loc *tlocs) {
  b2s_config *cfg = c->cfg;
  cfg_loc loc;
  int rc = entry_start(c, k, k->next, "streams", &loc);
  if (rc < 0)
    return rc;
  for (size_t i = 0; i < cfg->nstreams; i++)
    if (strcmp(cfg->streams[i].name, k->str) == 0)
      return b2s_cfg_fail(c, k, "streams", "duplicate key '%s'", k->str);
  size_t ti = 0;   /* set by pick_template on success */
  rc = pick_template(c, k->next, loc.path, &ti);
  if (rc < 0)
    return rc;
  b2s_stream_cfg *s = &cfg->streams[cfg->nstreams];
  *s = cfg->templates[ti];
  snprintf(s->name, sizeof s->name, "%s", k->str);
  snprintf(s->template_name, sizeof s->template_name, "%s",
           cfg->templates[ti].name);
  loc.base = &tlocs[ti];
  rc = apply_entry(c, k->next, s, false, &loc);
  if (rc < 0)
    return rc;
  /* A template's filter parameters belong to the template's filters. */
  if (loc.at[SI("filters")] && !loc.at[SI("filters_meta")])
    s->nfilters_meta = 0;
  rc = b2s_cfg_stream_finish(c, &cfg->daemon, s, &loc);
  if (rc < 0)
    return rc;
  for (size_t i = 0; i < cfg->nstreams; i++) {
    const char *o = cfg->streams[i].full_path;
    size_t ol = strlen(o), sl = strlen(s->full_path);
    size_t m = ol < sl ? ol : sl;
    if (strncmp(o, s->full_path, m) == 0 &&
        (ol == sl || (ol < sl ? s->full_path[m] : o[m]) == '/'))
      return b2s_cfg_loc_fail(c, &loc, SI("path"), "'%s' clashes with the path "
                          "of stream '%s'", s->path, cfg->streams[i].name);
  }
  cfg->nstreams++;
  return 0;
}

int b2s_cfg_streams_load(cfg_ctx *c) {
  b2s_config *cfg = c->cfg;
  const cfg_node *tn = c->templates_node, *sn = c->streams_node;
  size_t nt = tn && tn->kind == CN_MAP ? tn->n / 2 : 0;
  size_t ns = sn && sn->kind == CN_MAP ? sn->n / 2 : 0;
  if (nt > B2S_CONFIG_MAX_STREAMS || ns > B2S_CONFIG_MAX_STREAMS)
    return b2s_cfg_fail(c, nt > B2S_CONFIG_MAX_STREAMS ? tn : sn, "",
                    "more than %d %s", B2S_CONFIG_MAX_STREAMS,
                    nt > B2S_CONFIG_MAX_STREAMS ? "templates" : "streams");
  cfg->templates = calloc(nt + 1, sizeof *cfg->templates);
  cfg->streams = calloc(ns ? ns : 1, sizeof *cfg->streams);
  cfg_loc *tlocs = calloc(nt + 1, sizeof *tlocs);
  int rc = 0;
  if (!cfg->templates || !cfg->streams || !tlocs)
    rc = b2s_cfg_nomem(c);
  if (rc == 0)
    rc = load_templates(c, tlocs);
  for (const cfg_node *k = sn ? sn->child : NULL; rc == 0 && k && k->next;
       k = k->next->next)
    rc = load_stream(c, k, tlocs);
  free(tlocs);
  return rc;
}

/* ---- lookups ------------------------------------------------------------- */

static const b2s_stream_cfg *find(const b2s_stream_cfg *v, size_t n,
                                  const char *name) {
  for (size_t i = 0; name && i < n; i++)
    if (strcmp(v[i].name, name) == 0)
      return &v[i];
  return NULL;
}

const b2s_stream_cfg *b2s_config_stream_find(const b2s_config *cfg,
                                             const char *name) {
  return find(cfg->streams, cfg->nstreams, name);
}

const b2s_stream_cfg *b2s_config_template_find(const b2s_config *cfg,
                                               const char *name) {
  return find(cfg->templates, cfg->ntemplates, name);
}

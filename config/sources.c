/* The sources: section: detectors the daemon pulls images from itself
 * (docs/SOURCES.md).  A list of mappings; each mapping's keys go through
 * the schema (scope CFG_SOURCE, fields of b2s_source_cfg); what spans keys
 * is checked here: required keys, the template ("default" unless given),
 * the name pattern, the beamline facts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define KI(path) b2s_cfg_schema_index(CFG_SOURCE, path)

/* Placeholders a name pattern may use. */
static const char *const placeholders[] = {
  "{detector}", "{series_id}", "{series_unique_id}", "{channel}"};

/* Every {...} is known, {channel} and a series field appear, and the
 * literal text is made of characters stream names allow. */
static const char *pattern_problem(const char *p) {
  bool channel = false, series = false;
  while (*p) {
    if (*p == '{') {
      size_t i, n = sizeof placeholders / sizeof *placeholders;
      for (i = 0; i < n; i++)
        if (!strncmp(p, placeholders[i], strlen(placeholders[i])))
          break;
      if (i == n)
        return "unknown placeholder (known: {detector}, {series_id}, "
               "{series_unique_id}, {channel})";
      channel |= i == 3;
      series |= i == 1 || i == 2;
      p += strlen(placeholders[i]);
      continue;
    }
    char one[2] = {*p, 0};
    if (b2s_stream_name_check(one) < 0 && *p != '.' && *p != '-')
      return "characters outside the placeholders must be allowed in "
             "stream names";
    p++;
  }
  if (!channel || !series)
    return "must contain {channel} and {series_id} or {series_unique_id}, so "
           "every series and channel gets a stream of its own";
  return NULL;
}

/* NXsource/probe's values (NeXus base class NXsource, a closed list). */
static const char *const probes[] = {
  "neutron", "photon", "x-ray", "muon", "electron", "ultraviolet",
  "visible light", "positron", "proton"};

/* The beamline facts: text without control characters (they are written
 * into NeXus files as they are), a probe NXsource knows. */
static int check_beamline(cfg_ctx *c, const b2s_source_beamline *b,
                          const cfg_loc *loc) {
  const struct { const char *key, *v; } text[] = {
    {"beamline.source_name", b->source_name},
    {"beamline.source_type", b->source_type},
    {"beamline.source_probe", b->source_probe},
    {"beamline.instrument_name", b->instrument_name},
    {"beamline.sample_name", b->sample_name}};
  for (size_t i = 0; i < sizeof text / sizeof *text; i++)
    for (const unsigned char *p = (const unsigned char *)text[i].v; *p; p++)
      if (*p < 0x20 || *p == 0x7f)
        return b2s_cfg_loc_fail(c, loc, KI(text[i].key),
                                "control characters are not allowed");
  if (!b->source_probe[0])
    return 0;
  for (size_t i = 0; i < sizeof probes / sizeof *probes; i++)
    if (!strcmp(b->source_probe, probes[i]))
      return 0;
  return b2s_cfg_loc_fail(c, loc, KI("beamline.source_probe"),
                          "'%s' is not one of neutron, photon, x-ray, muon, "
                          "electron, ultraviolet, visible light, positron, "
                          "proton (NXsource/probe)", b->source_probe);
}

static int finish_source(cfg_ctx *c, const b2s_source_cfg *s,
                         const cfg_loc *loc) {
  if (!loc->at[KI("kind")])
    return b2s_cfg_loc_fail(c, loc, KI("kind"), "required in a source");
  if (!s->endpoint[0])
    return b2s_cfg_loc_fail(c, loc, KI("endpoint"), "required in a source");
  if (!b2s_config_template_find(c->cfg, s->template_name))
    return b2s_cfg_loc_fail(c, loc, KI("template"), "no template named '%s'",
                        s->template_name);
  const char *why = pattern_problem(s->name);
  if (why)
    return b2s_cfg_loc_fail(c, loc, KI("name"), "%s", why);
  return check_beamline(c, &s->beamline, loc);
}

int b2s_cfg_sources_load(cfg_ctx *c) {
  if (!c->sources_node)
    return 0;
  b2s_config *cfg = c->cfg;
  if (c->sources_node->n > B2S_CONFIG_MAX_SOURCES)
    return b2s_cfg_fail(c, c->sources_node, "sources", "at most %d sources",
                    B2S_CONFIG_MAX_SOURCES);
  cfg_loc *loc = calloc(1, sizeof *loc);
  if (!loc)
    return b2s_cfg_nomem(c);
  int rc = 0;
  for (const cfg_node *v = c->sources_node->child; v && rc == 0; v = v->next) {
    size_t i = cfg->nsources;
    b2s_source_cfg *s = &cfg->sources[i];
    memset(loc, 0, sizeof *loc);
    loc->self = v;
    snprintf(loc->path, sizeof loc->path, "sources[%zu]", i);
    if (v->kind != CN_MAP) {
      rc = b2s_cfg_fail(c, v, loc->path, "a mapping of source settings expected");
      break;
    }
    rc = b2s_cfg_apply_defaults(c, CFG_SOURCE, s, false);
    if (rc == 0)
      rc = b2s_cfg_apply_map(c, CFG_SOURCE, "", v, s, false, loc, loc->path);
    if (rc == 0)
      rc = finish_source(c, s, loc);
    for (size_t j = 0; rc == 0 && j < i; j++)
      if (!strcmp(cfg->sources[j].endpoint, s->endpoint))
        rc = b2s_cfg_loc_fail(c, loc, KI("endpoint"), "also the endpoint of "
                          "sources[%zu]", j);
    if (rc == 0)
      cfg->nsources++;
  }
  free(loc);
  return rc;
}

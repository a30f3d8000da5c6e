/* The effective configuration as YAML, walked from the schema, in a form
 * that loads back to an equal configuration: every value explicit, groups
 * a template switched on but a stream switched off written as null. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "b2s_msgpack.h"

typedef struct dumper {
  FILE *f;
  const b2s_config *cfg;
  bool help;
} dumper;

static int utf8_next(const unsigned char *p, const unsigned char *end,
                     uint32_t *cp) {
  int n = p[0] < 0x80 ? 1 : p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 :
          p[0] >= 0xc0 ? 2 : 1;
  if (end - p < n)
    n = 1;
  uint32_t v = n == 1 ? p[0] : (uint32_t)(p[0] & (0x7f >> n));
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80) {   /* not UTF-8: the byte on its own */
      *cp = p[0];
      return 1;
    }
    v = v << 6 | (p[i] & 0x3f);
  }
  *cp = v;
  return n;
}

/* Characters libyaml accepts raw inside a double-quoted scalar without
 * reading them as line breaks or a byte-order mark. */
static bool raw_ok(uint32_t cp) {
  if (cp >= 0x20 && cp < 0x7f)
    return cp != '"' && cp != '\\';
  return (cp >= 0xa0 && cp <= 0xd7ff && cp != 0x2028 && cp != 0x2029) ||
         (cp >= 0xe000 && cp <= 0xfffd && cp != 0xfeff) ||
         (cp >= 0x10000 && cp <= 0x10ffff);
}

static void put_quoted_n(FILE *f, const void *s, size_t len) {
  fputc('"', f);
  const unsigned char *p = s, *end = p + len;
  while (p < end) {
    uint32_t cp;
    int n = utf8_next(p, end, &cp);
    if (raw_ok(cp))
      fwrite(p, 1, (size_t)n, f);
    else if (cp == '"' || cp == '\\')
      fprintf(f, "\\%c", (char)cp);
    else if (cp <= 0xff)
      fprintf(f, "\\x%02x", (unsigned)cp);
    else if (cp <= 0xffff)
      fprintf(f, "\\u%04x", (unsigned)cp);
    else
      fprintf(f, "\\U%08x", (unsigned)cp);
    p += n;
  }
  fputc('"', f);
}

static void put_quoted(FILE *f, const char *s) { put_quoted_n(f, s, strlen(s)); }

static void put_name(FILE *f, const char *name) {
  if (name[0] == '-')
    put_quoted(f, name);
  else
    fputs(name, f);
}

/* A float that loads back as the same float: never in integer form. */
static void put_float(FILE *f, double x) {
  if (isnan(x)) {
    fputs(".nan", f);
    return;
  }
  if (isinf(x)) {
    fputs(x < 0 ? "-.inf" : ".inf", f);
    return;
  }
  char buf[40];
  for (int prec = 15; prec <= 17; prec++) {   /* shortest exact form */
    snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (strtod(buf, NULL) == x)
      break;
  }
  fputs(buf, f);
  if (!strpbrk(buf, ".e"))
    fputs(".0", f);
}

static void put_scalar(FILE *f, const cfg_desc *d, const char *field) {
  int64_t v = d->type == CT_FLOAT ? 0 : b2s_cfg_field_get(field, d->size);
  char buf[32];
  switch (d->type) {
  case CT_INT:
  case CT_INT_LIST:
    fprintf(f, "%lld", (long long)v);
    break;
  case CT_SIZE:
    b2s_size_format(v, buf, sizeof buf);
    fputs(buf, f);
    break;
  case CT_ENUM:
  case CT_ENUM_LIST: {
    const cfg_enum *e = b2s_cfg_enum_by_value(d->enums, (int)v);
    if (e)
      fputs(e->name, f);
    else
      fprintf(f, "%lld", (long long)v);
    break;
  }
  case CT_TEMPLATE:
    put_name(f, field);
    break;
  case CT_FLOAT: {
    double x;
    memcpy(&x, field, sizeof x);
    put_float(f, x);
    break;
  }
  default:
    put_quoted(f, field);
    break;
  }
}

/* One series value as the loader reads it back (config/series.c). */
static int put_series_value(FILE *f, b2s_mpreader *r, int depth) {
  b2s_mpval v;
  int rc = b2s_mp_read_any(r, &v);
  if (rc < 0)
    return rc;
  switch (v.type) {
  case B2S_MPT_BOOL: fputs(v.b ? "true" : "false", f); break;
  case B2S_MPT_UINT: fprintf(f, "%llu", (unsigned long long)v.u); break;
  case B2S_MPT_INT: fprintf(f, "%lld", (long long)v.i); break;
  case B2S_MPT_FLOAT: put_float(f, v.f); break;
  case B2S_MPT_STR: put_quoted_n(f, v.p, v.n); break;
  case B2S_MPT_ARRAY:
    if (depth > 0)
      return B2S_E_MSGPACK;
    fputc('[', f);
    for (uint32_t i = 0; rc == 0 && i < v.n; i++) {
      fputs(i ? ", " : "", f);
      rc = put_series_value(f, r, depth + 1);
    }
    fputc(']', f);
    break;
  default:
    return B2S_E_MSGPACK;   /* the loader stores no other type */
  }
  return rc;
}

static void dump_series(dumper *w, const cfg_desc *d, const void *obj,
                        int indent) {
  uint16_t len;
  memcpy(&len, (const char *)obj + d->aux, sizeof len);
  b2s_mpreader r;
  b2s_mpreader_init(&r, (const char *)obj + d->off, len);
  b2s_mpval m = {.n = 0};
  if (len == 0 || b2s_mp_read_any(&r, &m) < 0 || m.n == 0) {
    fprintf(w->f, "%*s%s: {}\n", indent, "", b2s_cfg_desc_key(d));
    return;
  }
  fprintf(w->f, "%*s%s:\n", indent, "", b2s_cfg_desc_key(d));
  for (uint32_t i = 0; i < m.n; i++) {
    b2s_mpval k;
    if (b2s_mp_read_any(&r, &k) < 0 || k.type != B2S_MPT_STR)
      return;
    fprintf(w->f, "%*s", indent + 2, "");
    put_quoted_n(w->f, k.p, k.n);
    fputs(": ", w->f);
    put_series_value(w->f, &r, 0);
    fputc('\n', w->f);
  }
}

static void put_help(dumper *w, const cfg_desc *d, int indent) {
  if (!w->help || !d->help)
    return;
  fprintf(w->f, "%*s# %s", indent, "", d->help);
  char lo[32], hi[32];
  if (d->type == CT_INT || d->type == CT_FLOAT ||
      (d->type == CT_INT_LIST && d->max < INT32_MAX))
    fprintf(w->f, " (%lld..%lld%s%s)", (long long)d->min, (long long)d->max,
            d->unit ? " " : "", d->unit ? d->unit : "");
  if (d->type == CT_SIZE) {
    b2s_size_format(d->min, lo, sizeof lo);
    b2s_size_format(d->max, hi, sizeof hi);
    fprintf(w->f, " (%s..%s)", lo, hi);
  }
  fputc('\n', w->f);
}

static void dump_entries(dumper *w, const b2s_stream_cfg *v, size_t n,
                         const char *key, int indent, bool template);

static void dump_level(dumper *w, int scope, const char *prefix,
                       const void *obj, int indent, bool template) {
  for (size_t i = 0; i < b2s_cfg_nschema; i++) {
    const cfg_desc *d = &b2s_cfg_schema[i];
    if (!b2s_cfg_desc_under(d, scope, prefix) ||
        (template && (d->flags & CF_STREAM_ONLY)))
      continue;
    const char *field = (const char *)obj + d->off;
    const char *key = b2s_cfg_desc_key(d);
    put_help(w, d, indent);
    if (d->type == CT_SERIES) {
      dump_series(w, d, obj, indent);
    } else if (d->type == CT_TEMPLATES || d->type == CT_STREAMS) {
      bool t = d->type == CT_TEMPLATES;
      dump_entries(w, t ? w->cfg->templates : w->cfg->streams,
                   t ? w->cfg->ntemplates : w->cfg->nstreams, key, indent, t);
    } else if (d->type == CT_SOURCES) {
      size_t n = w->cfg->nsources;
      fprintf(w->f, "%*s%s:%s\n", indent, "", key, n ? "" : " []");
      bool help = w->help;
      for (size_t k = 0; k < n; k++) {
        fprintf(w->f, "%*s-\n", indent + 2, "");
        dump_level(w, CFG_SOURCE, "", &w->cfg->sources[k], indent + 4, false);
        w->help = false;   /* the first entry explains the keys */
      }
      w->help = help;
    } else if (d->type == CT_CLUSTER) {
      if (!w->cfg->cluster.enabled) {
        fprintf(w->f, "%*s%s: null\n", indent, "", key);
        continue;
      }
      fprintf(w->f, "%*s%s:\n", indent, "", key);
      dump_level(w, CFG_CLUSTER, "", &w->cfg->cluster, indent + 2, false);
    } else if (d->type == CT_GROUP) {
      if ((d->flags & CF_OPTIONAL) && !*(const bool *)((const char *)obj + d->aux)) {
        fprintf(w->f, "%*s%s: null\n", indent, "", key);
        continue;
      }
      fprintf(w->f, "%*s%s:\n", indent, "", key);
      dump_level(w, scope, d->path, obj, indent + 2, template);
    } else if (d->type == CT_ENDPOINTS || d->type == CT_PATHS ||
               d->type == CT_ENUM_LIST ||
               d->type == CT_INT_LIST) {
      size_t n = b2s_cfg_list_count(d, obj);
      fprintf(w->f, "%*s%s: [", indent, "", key);
      for (size_t k = 0; k < n; k++) {
        if (k)
          fputs(", ", w->f);
        put_scalar(w->f, d, field + k * d->size);
      }
      fputs("]\n", w->f);
    } else {
      fprintf(w->f, "%*s%s: ", indent, "", key);
      put_scalar(w->f, d, field);
      fputc('\n', w->f);
    }
  }
}

static void dump_entries(dumper *w, const b2s_stream_cfg *v, size_t n,
                         const char *key, int indent, bool template) {
  fprintf(w->f, "%*s%s:%s\n", indent, "", key, n ? "" : " {}");
  bool help = w->help;
  for (size_t i = 0; i < n; i++) {
    fprintf(w->f, "%*s", indent + 2, "");
    put_name(w->f, v[i].name);
    fputs(":\n", w->f);
    dump_level(w, CFG_STREAM, "", &v[i], indent + 4, template);
    w->help = false;   /* the first entry explains the keys */
  }
  w->help = help;
}

int b2s_config_dump(const b2s_config *cfg, FILE *out, unsigned flags) {
  if (!cfg || !out)
    return B2S_E_ARG;
  dumper w = {.f = out, .cfg = cfg, .help = (flags & B2S_DUMP_HELP) != 0};
  fputs("# b2streamd effective configuration\n", out);
  dump_level(&w, CFG_DAEMON, "", &cfg->daemon, 0, false);
  return ferror(out) ? -EIO : 0;
}

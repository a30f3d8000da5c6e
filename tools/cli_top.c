/* See cli_top.h. */
#include "cli_top.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

static int64_t num(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static void row_of(const char *name, json_object *o, cli_top_row *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  r->buffers_in = (uint64_t)num(o, "buffers_in");
  r->bytes_in = (uint64_t)num(o, "bytes_in");
  r->bytes_out = (uint64_t)num(o, "bytes_out");
  r->drops = (uint64_t)num(o, "drops");
  r->errors = (uint64_t)num(o, "errors");
  r->queue_depth = num(o, "queue_depth");
  r->committed = num(o, "committed");
  r->failed = num(o, "failed") != 0;
  r->mb_s = r->img_s = -1;
}

int cli_top_parse(const char *json, size_t len, cli_top_sample *s) {
  memset(s, 0, sizeof *s);
  json_tokener *tok = json_tokener_new();
  if (!tok)
    return -1;
  json_object *doc = json_tokener_parse_ex(tok, json, (int)len);
  json_tokener_free(tok);
  json_object *d, *streams, *v;
  int rc = -1;
  if (!doc || !json_object_is_type(doc, json_type_object) ||
      !json_object_object_get_ex(doc, "daemon", &d) ||
      !json_object_object_get_ex(doc, "streams", &streams) ||
      !json_object_is_type(d, json_type_object) ||
      !json_object_is_type(streams, json_type_object))
    goto out;
  if (json_object_object_get_ex(d, "version", &v))
    snprintf(s->version, sizeof s->version, "%s", json_object_get_string(v));
  s->sessions = num(d, "sessions");
  s->memory_limit = num(d, "memory_limit");
  s->inflight_bytes = num(d, "inflight_bytes");
  s->shm_bytes = num(d, "shm_bytes");
  json_object_object_foreach(streams, name, o) {
    if (s->nrows < CLI_TOP_MAX_STREAMS && json_object_is_type(o, json_type_object))
      row_of(name, o, &s->rows[s->nrows++]);
  }
  rc = 0;
out:
  json_object_put(doc);
  return rc;
}

void cli_top_rates(cli_top_sample *cur, const cli_top_sample *prev, double dt) {
  for (size_t i = 0; i < cur->nrows; i++) {
    cli_top_row *r = &cur->rows[i];
    r->mb_s = r->img_s = -1;
    for (size_t k = 0; prev && dt > 0 && k < prev->nrows; k++) {
      const cli_top_row *p = &prev->rows[k];
      if (strcmp(p->name, r->name) != 0 || r->bytes_in < p->bytes_in ||
          r->buffers_in < p->buffers_in)
        continue;
      r->mb_s = (double)(r->bytes_in - p->bytes_in) / dt / 1e6;
      r->img_s = (double)(r->buffers_in - p->buffers_in) / dt;
    }
  }
}

static cli_top_sort sort_by;

static int cmp(const void *a, const void *b) {
  const cli_top_row *x = a, *y = b;
  int c = 0;
  if (sort_by == CLI_TOP_SORT_RATE)
    c = (y->mb_s > x->mb_s) - (y->mb_s < x->mb_s);
  else if (sort_by == CLI_TOP_SORT_QUEUE)
    c = (y->queue_depth > x->queue_depth) - (y->queue_depth < x->queue_depth);
  else if (sort_by == CLI_TOP_SORT_DROPS)
    c = (y->drops > x->drops) - (y->drops < x->drops);
  return c ? c : strcmp(x->name, y->name);
}

void cli_top_sort_rows(cli_top_sample *s, cli_top_sort by) {
  sort_by = by;                  /* qsort has no context argument */
  qsort(s->rows, s->nrows, sizeof s->rows[0], cmp);
}

static const char *const sort_names[] = {"name", "rate", "queue", "drops"};

static void put(char *out, size_t cap, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *out, size_t cap, size_t *at, const char *fmt, ...) {
  if (*at + 1 >= cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out + *at, cap - *at, fmt, ap);
  va_end(ap);
  if (n > 0)
    *at += (size_t)n < cap - *at ? (size_t)n : cap - *at - 1;
}

static void rate(char *b, size_t n, double v, const char *fmt) {
  if (v < 0)
    snprintf(b, n, "-");
  else
    snprintf(b, n, fmt, v);
}

void cli_top_render(const cli_top_sample *s, cli_top_sort by, size_t max_rows, char *out,
                size_t cap) {
  size_t at = 0;
  out[0] = '\0';
  put(out, cap, &at, "b2streamd %s  sessions %lld  memory %.1f of %.0f MB  "
      "streams %zu  sorted by %s\n", s->version, (long long)s->sessions,
      ((double)s->inflight_bytes + (double)s->shm_bytes) / 1e6,
      (double)s->memory_limit / 1e6, s->nrows, sort_names[by]);
  put(out, cap, &at, "%-20s %-7s %9s %9s %6s %7s %9s %7s %10s\n", "STREAM",
      "STATE", "MB/s", "IMG/s", "RATIO", "QUEUED", "DROPS", "ERRORS",
      "COMMITTED");
  for (size_t i = 0; i < s->nrows && i < max_rows; i++) {
    const cli_top_row *r = &s->rows[i];
    char mb[16], im[16], ratio[16];
    rate(mb, sizeof mb, r->mb_s, "%.2f");
    rate(im, sizeof im, r->img_s, "%.1f");
    rate(ratio, sizeof ratio,
         r->bytes_out ? (double)r->bytes_in / (double)r->bytes_out : -1,
         "%.2f");
    put(out, cap, &at, "%-20.20s %-7s %9s %9s %6s %7lld %9llu %7llu %10lld\n",
        r->name, r->failed ? "FAILED" : "ok", mb, im, ratio,
        (long long)r->queue_depth, (unsigned long long)r->drops,
        (unsigned long long)r->errors, (long long)r->committed);
  }
  put(out, cap, &at, "keys: n name  r rate  u queue  d drops  q quit\n");
}

/* Routing of HTTP requests (httproute.h).  Outside /api/v1 the listener
 * is read-only: GET and HEAD only, a fixed set of paths, stream names of a
 * safe set of characters (they only select a stream of the snapshot or
 * the live view).  Under /api/v1, the control API's routes and their
 * methods, the live view and the events. */
#include "httproute.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

static bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/* "NAME.png" into out->stream; false when it is not one. */
static bool thumb_name(const char *p, size_t n, b2sd_route *out) {
  if (n <= 4 || memcmp(p + n - 4, ".png", 4) != 0)
    return false;
  n -= 4;
  if (n > B2SD_ROUTE_NAME_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!name_char(p[i]))
      return false;
  memcpy(out->stream, p, n);
  out->stream[n] = '\0';
  return true;
}

/* An acquisition id (ACQUISITIONS.md 3.1): 1..64 of the safe set, not
 * starting with '.'. */
static bool id_ok(const char *p, size_t n) {
  if (n == 0 || n > B2SD_ROUTE_NAME_MAX || p[0] == '.')
    return false;
  for (size_t i = 0; i < n; i++)
    if (!name_char(p[i]))
      return false;
  return true;
}

static bool is(const char *p, size_t n, const char *lit) {
  return strlen(lit) == n && memcmp(p, lit, n) == 0;
}

/* p[0..n) after "/api/v1/acquisitions/": ID or ID/ACTION. */
static b2sd_api api_acq(const char *p, size_t n, b2sd_route *out) {
  const char *slash = memchr(p, '/', n);
  size_t idn = slash ? (size_t)(slash - p) : n;
  if (!id_ok(p, idn))
    return B2SD_API_NONE;
  memcpy(out->id, p, idn);
  out->id[idn] = '\0';
  if (!slash)
    return B2SD_API_GET;
  const char *a = slash + 1;
  size_t an = n - idn - 1;
  if (is(a, an, "files"))
    return B2SD_API_FILES;
  if (is(a, an, "stop"))
    return B2SD_API_STOP;
  if (is(a, an, "abort"))
    return B2SD_API_ABORT;
  if (is(a, an, "wait"))
    return B2SD_API_WAIT;
  return B2SD_API_NONE;
}

/* The methods each route takes (9.1: HEAD with GET, except the wait). */
static const char *api_allow(b2sd_api a) {
  switch (a) {
  case B2SD_API_ARM:
  case B2SD_API_LIST: return "GET, HEAD, POST";
  case B2SD_API_STOP:
  case B2SD_API_ABORT: return "POST";
  case B2SD_API_WAIT: return "GET";
  default: return "GET, HEAD";
  }
}

static bool api_method_ok(b2sd_api a, const char *m) {
  bool get = strcmp(m, "GET") == 0, head = strcmp(m, "HEAD") == 0;
  bool post = strcmp(m, "POST") == 0;
  switch (a) {
  case B2SD_API_ARM: return post;
  case B2SD_API_STOP:
  case B2SD_API_ABORT: return post;
  case B2SD_API_WAIT: return get;
  default: return get || head;
  }
}

static void api_route(const char *method, const char *url, size_t n,
                      b2sd_route *out) {
  const char *pre = "/api/v1/acquisitions";
  size_t pl = strlen(pre);
  b2sd_api a = B2SD_API_NONE;
  if (is(url, n, "/api/v1"))
    a = B2SD_API_ROOT;
  else if (is(url, n, pre))
    a = strcmp(method, "POST") == 0 ? B2SD_API_ARM : B2SD_API_LIST;
  else if (n > pl + 1 && memcmp(url, pre, pl) == 0 && url[pl] == '/')
    a = api_acq(url + pl + 1, n - pl - 1, out);
  if (a == B2SD_API_NONE) {
    out->id[0] = '\0';
    return;
  }
  out->api = a;
  out->kind = B2SD_ROUTE_API;
  if (!api_method_ok(a, method)) {
    out->kind = B2SD_ROUTE_API_METHOD;
    out->allow = api_allow(a);
  }
}

/* "NAME" alone into out->stream; false when it is not one. */
static bool stream_name(const char *p, size_t n, b2sd_route *out) {
  if (n == 0 || n > B2SD_ROUTE_NAME_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!name_char(p[i]))
      return false;
  memcpy(out->stream, p, n);
  out->stream[n] = '\0';
  return true;
}

/* "/api/v1/streams/NAME/latest" */
static bool live_path(const char *url, size_t n, b2sd_route *out) {
  const char *pre = "/api/v1/streams/", *post = "/latest";
  size_t pl = strlen(pre), ql = strlen(post);
  return n > pl + ql && memcmp(url, pre, pl) == 0 &&
         memcmp(url + n - ql, post, ql) == 0 &&
         stream_name(url + pl, n - pl - ql, out);
}

/* The live view and the events (not acquisition routes: they answer
 * without acquisitions: too); false for another path. */
static bool view_route(const char *method, const char *url, size_t n,
                       b2sd_route *out) {
  b2sd_route_kind k;
  if (live_path(url, n, out))
    k = B2SD_ROUTE_LIVE;
  else if (n == 14 && memcmp(url, "/api/v1/events", 14) == 0)
    k = B2SD_ROUTE_EVENTS;
  else
    return false;
  out->json = true;
  out->kind = k;
  if (strcmp(method, "GET") != 0 &&
      (k == B2SD_ROUTE_EVENTS || strcmp(method, "HEAD") != 0)) {
    out->kind = B2SD_ROUTE_METHOD;   /* events: no HEAD, as the wait */
    out->allow = k == B2SD_ROUTE_EVENTS ? "GET" : "GET, HEAD";
    out->stream[0] = '\0';
  }
  return true;
}

void b2sd_http_route(const char *method, const char *url, b2sd_route *out) {
  memset(out, 0, sizeof *out);
  out->kind = B2SD_ROUTE_NOT_FOUND;
  if (!method || !url)
    return;
  size_t n = strcspn(url, "?#");
  if (n >= 7 && memcmp(url, "/api/v1", 7) == 0) {
    if (!view_route(method, url, n, out))
      api_route(method, url, n, out);
    out->json = true;
    return;
  }
  const char *thumb = "/thumb/";
  size_t tl = strlen(thumb);
  b2sd_route_kind k = B2SD_ROUTE_NOT_FOUND;
  if (n == 1 && url[0] == '/')
    k = B2SD_ROUTE_PAGE;
  else if (n == 8 && memcmp(url, "/metrics", 8) == 0)
    k = B2SD_ROUTE_METRICS;
  else if (n == 12 && memcmp(url, "/status.json", 12) == 0)
    k = B2SD_ROUTE_STATUS;
  else if (n > tl && memcmp(url, thumb, tl) == 0 &&
           thumb_name(url + tl, n - tl, out))
    k = B2SD_ROUTE_THUMB;
  if (k != B2SD_ROUTE_NOT_FOUND && strcmp(method, "GET") != 0 &&
      strcmp(method, "HEAD") != 0)
    k = B2SD_ROUTE_METHOD;
  if (k != B2SD_ROUTE_THUMB)
    out->stream[0] = '\0';
  out->kind = k;
}

/* ---- query parameters ------------------------------------------------------ */

/* A decimal integer of at most 19 digits in lo..hi. */
static bool uint_param(const char *v, uint64_t lo, uint64_t hi, uint64_t *out) {
  size_t n = strlen(v);
  if (n == 0 || n > 19 || strspn(v, "0123456789") != n)
    return false;
  uint64_t x = strtoull(v, NULL, 10);
  if (x < lo || x > hi)
    return false;
  *out = x;
  return true;
}

/* Seconds, 0..60, with a fraction of at most 6 digits. */
static bool seconds_param(const char *v, double *out) {
  size_t n = strlen(v), ip = strspn(v, "0123456789");
  if (n == 0 || ip == 0 || ip > 2 ||
      (ip < n && (v[ip] != '.' || n - ip - 1 < 1 || n - ip - 1 > 6 ||
                  strspn(v + ip + 1, "0123456789") != n - ip - 1)))
    return false;
  double x = strtod(v, NULL);
  if (x < 0 || x > 60)
    return false;
  *out = x;
  return true;
}

/* Whether key names a parameter of the route, and its value is good. */
static bool one_param(b2sd_api api, const char *k, const char *v,
                      b2sd_api_params *p) {
  uint64_t x;
  size_t vn = strlen(v);
  if (api == B2SD_API_LIST && strcmp(k, "state") == 0)
    return vn > 0 && vn < sizeof p->state &&
           snprintf(p->state, sizeof p->state, "%s", v) > 0;
  if (api == B2SD_API_LIST && strcmp(k, "limit") == 0 &&
      uint_param(v, 1, 256, &x))
    return (p->limit = (int)x) > 0;
  if (api == B2SD_API_LIST && strcmp(k, "after") == 0)
    return id_ok(v, vn) && snprintf(p->after, sizeof p->after, "%s", v) > 0;
  if (api == B2SD_API_FILES && strcmp(k, "limit") == 0 &&
      uint_param(v, 1, 1000, &x))
    return (p->limit = (int)x) > 0;
  if (api == B2SD_API_FILES && strcmp(k, "after") == 0)
    return uint_param(v, 0, UINT64_MAX / 2, &p->after_file);
  if (api == B2SD_API_FILES && strcmp(k, "channel") == 0)
    return strcmp(v, "data") == 0;
  if (api == B2SD_API_WAIT && strcmp(k, "committed") == 0 &&
      uint_param(v, 0, INT64_MAX, &p->committed)) {
    p->has_committed = true;
    return true;
  }
  if (api == B2SD_API_WAIT && strcmp(k, "state") == 0)
    return vn > 0 && vn < 16 &&
           snprintf(p->state, sizeof p->state, "%s", v) > 0;
  if (api == B2SD_API_WAIT && strcmp(k, "timeout") == 0)
    return seconds_param(v, &p->timeout_s);
  if (api == B2SD_API_WAIT && strcmp(k, "allow_loss") == 0 &&
      (strcmp(v, "true") == 0 || strcmp(v, "false") == 0)) {
    p->allow_loss = v[0] == 't';
    return true;
  }
  return false;
}

int b2sd_api_params_parse(b2sd_api api, const char *const *keys,
                          const char *const *vals, size_t n,
                          b2sd_api_params *p, char *field, size_t cap) {
  memset(p, 0, sizeof *p);
  p->limit = api == B2SD_API_FILES ? 1000 : 256;
  p->timeout_s = 10;
  p->allow_loss = -1;
  if (cap)
    field[0] = '\0';
  if (n > B2SD_API_MAX_PARAMS)
    return -1;
  for (size_t i = 0; i < n; i++) {
    const char *k = keys[i] ? keys[i] : "", *v = vals[i] ? vals[i] : "";
    bool twice = false;
    for (size_t j = 0; j < i; j++)
      twice |= keys[j] && strcmp(keys[j], k) == 0;
    if (twice || !one_param(api, k, v, p)) {
      snprintf(field, cap, "%.*s", 64, k);
      return -1;
    }
  }
  /* the wait: exactly one of committed and state */
  if (api == B2SD_API_WAIT && p->has_committed == (p->state[0] != '\0')) {
    snprintf(field, cap, "%s", p->has_committed ? "state" : "committed");
    return -1;
  }
  return 0;
}

/* ---- the live view's parameters ---------------------------------------------- */

void b2sd_live_query_init(b2sd_live_query *q) {
  memset(q, 0, sizeof *q);
  q->max_side = B2SD_LIVE_SIDE_DEFAULT;
}

/* The parameter at fault into bad (cut), fault set; -1. */
static int fault(char *bad, bool *flag, const char *key) {
  size_t n = 0;
  while (n < B2SD_ROUTE_NAME_MAX && key[n])
    n++;
  memcpy(bad, key, n);
  bad[n] = '\0';
  *flag = true;
  return -1;
}

static int bad(b2sd_live_query *q, const char *key) {
  return fault(q->bad, &q->fault, key);
}

/* A decimal of 1 to 4 digits within the live view's sides. */
static bool side(const char *v, int *out) {
  size_t n = v ? strlen(v) : 0;
  if (n == 0 || n > 4 || strspn(v, "0123456789") != n)
    return false;
  int x = 0;
  for (size_t i = 0; i < n; i++)
    x = x * 10 + (v[i] - '0');
  if (x < B2SD_LIVE_SIDE_MIN || x > B2SD_LIVE_SIDE_MAX)
    return false;
  *out = x;
  return true;
}

int b2sd_live_query_add(b2sd_live_query *q, const char *key,
                        const char *value) {
  unsigned bit = 0;
  if (key && strcmp(key, "format") == 0)
    bit = 1;
  else if (key && strcmp(key, "max_side") == 0)
    bit = 2;
  if (!bit || (q->seen & bit))
    return bad(q, key ? key : "");
  q->seen |= bit;
  if (bit == 1) {
    if (value && strcmp(value, "png") == 0)
      q->format = B2SD_LIVE_PNG;
    else if (value && strcmp(value, "raw") == 0)
      q->format = B2SD_LIVE_RAW;
    else
      return bad(q, key);
    return 0;
  }
  return side(value, &q->max_side) ? 0 : bad(q, key);
}

int b2sd_live_accept(const char *accept) {
  if (accept && strstr(accept, "application/octet-stream") &&
      !strstr(accept, "image/png"))
    return B2SD_LIVE_RAW;
  return B2SD_LIVE_PNG;
}

/* ---- the event stream's parameters ------------------------------------------- */

void b2sd_events_query_init(b2sd_events_query *q) { memset(q, 0, sizeof *q); }

/* An acquisition id (docs/ACQUISITIONS.md 3.1): 1-64 bytes of
 * A-Z a-z 0-9 . _ -, not starting with '.'. */
static bool acq_id(const char *v) {
  size_t n = v ? strlen(v) : 0;
  if (n == 0 || n > 64 || v[0] == '.')
    return false;
  for (size_t i = 0; i < n; i++)
    if (!name_char(v[i]))
      return false;
  return true;
}

int b2sd_events_query_add(b2sd_events_query *q, const char *key,
                          const char *value) {
  uint64_t e, s;
  if (key && strcmp(key, "acquisition") == 0 && !(q->seen & 1) &&
      acq_id(value)) {
    q->seen |= 1;
    memcpy(q->acquisition, value, strlen(value) + 1);
    return 0;
  }
  if (key && strcmp(key, "last_event_id") == 0 && !(q->seen & 2) &&
      b2sd_events_id_parse(value, &e, &s) == 0) {
    q->seen |= 2;
    memcpy(q->last_event_id, value, strlen(value) + 1);
    return 0;
  }
  return fault(q->bad, &q->fault, key ? key : "");
}

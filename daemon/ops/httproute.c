/* Routing of HTTP requests (httproute.h).  The listener is read-only:
 * GET and HEAD only, a fixed set of paths, stream names of a safe set of
 * characters (they only select a stream of the snapshot or the live
 * view). */
#include "httproute.h"

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

void b2sd_http_route(const char *method, const char *url, b2sd_route *out) {
  memset(out, 0, sizeof *out);
  out->kind = B2SD_ROUTE_NOT_FOUND;
  if (!method || !url)
    return;
  size_t n = strcspn(url, "?#");
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
  else if (live_path(url, n, out))
    k = B2SD_ROUTE_LIVE;
  else if (n == 14 && memcmp(url, "/api/v1/events", 14) == 0)
    k = B2SD_ROUTE_EVENTS;
  out->api = n >= 5 && memcmp(url, "/api/", 5) == 0;
  if (k != B2SD_ROUTE_NOT_FOUND && strcmp(method, "GET") != 0 &&
      strcmp(method, "HEAD") != 0)
    k = B2SD_ROUTE_METHOD;
  if (k != B2SD_ROUTE_THUMB && k != B2SD_ROUTE_LIVE)
    out->stream[0] = '\0';
  out->kind = k;
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

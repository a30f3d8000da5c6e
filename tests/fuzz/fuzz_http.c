/* libFuzzer target for what the daemon's HTTP listener decides from a
 * client's bytes (daemon/ops/httproute.h, thumb.h): the route of a method and
 * a path, and the scaling of an image whose dtype and shape come from the
 * input, and the live view's query parameters and Accept header.
 * Whatever the bytes: no crash, no read outside the input; a route names
 * a stream only for /thumb/ and the live view, with a name of the safe
 * set that occurs in the path; a scaled image fits B2SD_THUMB_MAX a side;
 * parameters that pass are within their ranges, and a fault names a
 * parameter given; an event id that parses reads back as itself (the
 * path is also an id and a Last-Event-ID).
 *
 * The control API's routes (/api/v1): an id only for the routes of one
 * acquisition, of the id's safe set, found in the path; the path's query
 * string cut at '&' and '=' into parameters, checked for the route: a
 * refusal names a parameter given (or none), an accepted set has its
 * values in their ranges.
 *
 * Input: method, NUL, path (its query string, as key=value&..., goes to
 * the parameters; the method is also an Accept header), NUL, then 3
 * dtype bytes, height and width
 * (one byte each, 1..256) and the pixels. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "events.h"
#include "httproute.h"
#include "thumb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_api(const char *path, const b2sd_route *r);

static void check_route(const char *method, const char *path) {
  b2sd_route r;
  b2sd_http_route(method, path, &r);
  if (r.kind == B2SD_ROUTE_API || r.kind == B2SD_ROUTE_API_METHOD) {
    check_api(path, &r);
    return;
  }
  size_t n = strlen(r.stream);
  if (n > B2SD_ROUTE_NAME_MAX)
    abort();
  bool named = r.kind == B2SD_ROUTE_THUMB || r.kind == B2SD_ROUTE_LIVE;
  if (named != (n > 0))
    abort();
  const char *pre = r.kind == B2SD_ROUTE_LIVE ? "/api/v1/streams/" : "/thumb/";
  if (r.json != (strncmp(path, "/api/v1", 7) == 0))
    abort();
  if (n && (strncmp(path, pre, strlen(pre)) != 0 || !strstr(path, r.stream) ||
            strspn(r.stream, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                             "TUVWXYZ0123456789_-.") != n))
    abort();
}

/* The query string of path, split as MHD splits it (without the
 * unescaping), into the live view's parameters. */
static void check_query(const char *path) {
  const char *q = strchr(path, '?');
  if (!q)
    return;
  char buf[4096];
  size_t n = strnlen(q + 1, sizeof buf - 1);
  memcpy(buf, q + 1, n);
  buf[n] = '\0';
  b2sd_live_query lq;
  b2sd_live_query_init(&lq);
  char *save = NULL;
  for (char *kv = strtok_r(buf, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
    char *eq = strchr(kv, '=');
    if (eq)
      *eq = '\0';
    if (b2sd_live_query_add(&lq, kv, eq ? eq + 1 : NULL) < 0) {
      if (!lq.fault || strlen(lq.bad) > B2SD_ROUTE_NAME_MAX ||
          strncmp(lq.bad, kv, strlen(lq.bad)) != 0)
        abort();
      return;
    }
  }
  if (lq.fault || lq.format < B2SD_LIVE_ACCEPT || lq.format > B2SD_LIVE_RAW ||
      lq.max_side < B2SD_LIVE_SIDE_MIN || lq.max_side > B2SD_LIVE_SIDE_MAX)
    abort();
}

static void check_id(const char *s) {
  uint64_t e, q;
  if (b2sd_events_id_parse(s, &e, &q) < 0)
    return;
  char back[B2SD_EVENT_ID_MAX];
  b2sd_events_id_text(e, q, back);
  if (strcasecmp(back, s) != 0)
    abort();
}

/* The same query string as the event stream's parameters. */
static void check_events_query(const char *path) {
  const char *q = strchr(path, '?');
  if (!q)
    return;
  char buf[4096];
  size_t n = strnlen(q + 1, sizeof buf - 1);
  memcpy(buf, q + 1, n);
  buf[n] = '\0';
  b2sd_events_query eq;
  b2sd_events_query_init(&eq);
  char *save = NULL;
  for (char *kv = strtok_r(buf, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
    char *v = strchr(kv, '=');
    if (v)
      *v++ = '\0';
    if (b2sd_events_query_add(&eq, kv, v) < 0)
      return;
  }
  uint64_t e, s;
  if (eq.last_event_id[0] && b2sd_events_id_parse(eq.last_event_id, &e, &s) < 0)
    abort();
  if (strlen(eq.acquisition) > 64 || eq.acquisition[0] == '.')
    abort();
}

/* The query string of path as parameters, checked for route api. */
static void check_params(b2sd_api api, const char *path) {
  const char *q = strchr(path, '?');
  if (!q)
    return;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", q + 1);
  const char *keys[16], *vals[16];
  size_t n = 0;
  for (char *sp = NULL, *t = strtok_r(buf, "&", &sp); t && n < 16;
       t = strtok_r(NULL, "&", &sp)) {
    char *eq = strchr(t, '=');
    if (eq)
      *eq = '\0';
    keys[n] = t;
    vals[n++] = eq ? eq + 1 : "";
  }
  b2sd_api_params p;
  char field[80];
  if (b2sd_api_params_parse(api, keys, vals, n, &p, field, sizeof field) < 0) {
    /* none (too many), the wait's pair, or a parameter given */
    bool named = field[0] == '\0' || strcmp(field, "state") == 0 ||
                 strcmp(field, "committed") == 0;
    for (size_t i = 0; i < n && !named; i++)
      named = strncmp(keys[i], field, 64) == 0;
    if (!named)
      abort();
    return;
  }
  if (p.limit < 1 || p.limit > 1000 || p.timeout_s < 0 || p.timeout_s > 60 ||
      p.allow_loss < -1 || p.allow_loss > 1 ||
      strlen(p.after) > B2SD_ROUTE_NAME_MAX)
    abort();
  if (api == B2SD_API_WAIT && p.has_committed == (p.state[0] != '\0'))
    abort();
}

static void check_api(const char *path, const b2sd_route *r) {
  size_t n = strlen(r->id);
  bool one = r->api == B2SD_API_GET || r->api == B2SD_API_FILES ||
             r->api == B2SD_API_STOP || r->api == B2SD_API_ABORT ||
             r->api == B2SD_API_WAIT;
  if (n > B2SD_ROUTE_NAME_MAX || one != (n > 0) ||
      (n && (!strstr(path, r->id) || r->id[0] == '.' ||
             strspn(r->id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                           "TUVWXYZ0123456789_-.") != n)))
    abort();
  if (strncmp(path, "/api/v1", 7) != 0 ||
      (r->kind == B2SD_ROUTE_API_METHOD && !r->allow))
    abort();
  check_params(r->api, path);
}

static void check_scale(const uint8_t *d, size_t size) {
  if (size < 5)
    return;
  char dtype[4] = {(char)d[0], (char)d[1], (char)d[2], 0};
  int64_t h = d[3] + 1, w = d[4] + 1;
  d += 5;
  size -= 5;
  /* the caller (thumb.c) always has h * w pixels of 8 bytes at most */
  if ((size_t)(h * w * 8) > size)
    return;
  static uint8_t out[B2SD_THUMB_MAX * B2SD_THUMB_MAX];
  int oh = 0, ow = 0;
  if (b2sd_thumb_scale(d, dtype, h, w, out, &oh, &ow) == 0 &&
      (oh < 1 || ow < 1 || oh > B2SD_THUMB_MAX || ow > B2SD_THUMB_MAX))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul1 = memchr(data, 0, size);
  if (!nul1)
    return 0;
  const uint8_t *nul2 = memchr(nul1 + 1, 0, size - (size_t)(nul1 + 1 - data));
  if (!nul2)
    return 0;
  check_route((const char *)data, (const char *)nul1 + 1);
  check_query((const char *)nul1 + 1);
  check_events_query((const char *)nul1 + 1);
  check_id((const char *)nul1 + 1);
  int f = b2sd_live_accept((const char *)data);
  if (f != B2SD_LIVE_PNG && f != B2SD_LIVE_RAW)
    abort();
  check_scale(nul2 + 1, size - (size_t)(nul2 + 1 - data));
  return 0;
}

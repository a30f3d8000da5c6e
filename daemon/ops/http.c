/* The HTTP listener (http.h) on libmicrohttpd: bounded connections, a
 * per-connection timeout and memory limit, GET and HEAD only. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include <microhttpd.h>

#include "b2s_acq_errors.h"
#include "b2s_acq_json.h"
#include "clock.h"
#include "fdheadroom.h"
#include "httproute.h"
#include "live.h"
#include "msnap.h"
#include "thumb.h"

/* Bounds of what clients may hold: connections at a time, seconds a
 * connection may idle (a slow client is cut), bytes each may use for its
 * request headers (larger ones get 431). */
#define HTTP_MAX_CONNECTIONS 32
#define HTTP_TIMEOUT_S 10
#define HTTP_CONN_MEMORY (32 * 1024)
/* A snapshot this recent is served as is; a newer one is waited for this
 * long at most. */
#define SNAP_FRESH_NS 200000000u
#define SNAP_WAIT_NS 300000000u
#define SNAP_FIRST_WAIT_NS 2000000000u   /* none at all yet */

/* A published snapshot, referenced by the requests that render it. */
typedef struct snapref {
  b2sd_msnap *s;
  uint64_t mono_ns;              /* when taken (monotonic) */
  int refs;                      /* under the listener's lock */
} snapref;

struct b2sd_http {
  b2sd_server *srv;              /* for b2sd_wake only, and on the I/O
                                    thread's side */
  b2sd_live *live;               /* the live view (live.h), started first */
  struct MHD_Daemon *mhd;
  pthread_mutex_t lock;          /* a leaf: guards cur and refs */
  pthread_cond_t cond;
  snapref *cur;
  _Atomic int want;              /* a request asks for a new snapshot */
  _Atomic uint64_t requests;
  uint64_t start_ns;
  char data_dir[B2S_CONFIG_PATH_MAX];
};

extern const char b2sd_http_page[];   /* http_page.c */

/* ---- snapshots --------------------------------------------------------------- */

static void unref(b2sd_http *h, snapref *r) {
  if (!r)
    return;
  pthread_mutex_lock(&h->lock);
  bool last = --r->refs == 0;
  pthread_mutex_unlock(&h->lock);
  if (last) {
    b2sd_msnap_free(r->s);
    free(r);
  }
}

void b2sd_http_turn(b2sd_http *h) {
  /* acquire: pairs with the release store of a request */
  if (!h || !atomic_exchange_explicit(&h->want, 0, memory_order_acquire))
    return;
  snapref *r = calloc(1, sizeof *r);
  b2sd_msnap *s = r ? b2sd_msnap_take(h->srv, h->start_ns) : NULL;
  if (!s) {
    free(r);
    return;
  }
  r->s = s;
  r->mono_ns = b2sd_now_ns();
  r->refs = 1;
  pthread_mutex_lock(&h->lock);
  snapref *old = h->cur;
  h->cur = r;
  pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->lock);
  unref(h, old);
}

/* The newest snapshot, referenced; a fresh one when the I/O thread
 * answers in time.  NULL when there is none yet. */
static snapref *snapshot(b2sd_http *h) {
  pthread_mutex_lock(&h->lock);
  uint64_t now = b2sd_now_ns();
  if (!h->cur || now - h->cur->mono_ns > SNAP_FRESH_NS) {
    snapref *old = h->cur;
    /* release: pairs with the exchange in b2sd_http_turn */
    atomic_store_explicit(&h->want, 1, memory_order_release);
    b2sd_wake(h->srv);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    uint64_t t = (uint64_t)dl.tv_nsec +
                 (old ? SNAP_WAIT_NS : SNAP_FIRST_WAIT_NS);
    dl.tv_sec += (time_t)(t / 1000000000u);
    dl.tv_nsec = (long)(t % 1000000000u);
    while (h->cur == old &&
           pthread_cond_timedwait(&h->cond, &h->lock, &dl) == 0) {
    }
  }
  snapref *r = h->cur;
  if (r)
    r->refs++;
  pthread_mutex_unlock(&h->lock);
  return r;
}

/* What the reader adds: disk space and descriptors (system calls that
 * may be slow are made here, not on the I/O thread). */
static void reader_figures(b2sd_http *h, b2sd_msnap *s) {
  struct statvfs v;
  if (statvfs(h->data_dir, &v) == 0) {
    s->disk_free = (int64_t)v.f_bavail * (int64_t)v.f_frsize;
    s->disk_size = (int64_t)v.f_blocks * (int64_t)v.f_frsize;
  }
  s->fd_open = b2sd_fd_open();
  s->fd_limit = b2sd_fd_limit();
  /* relaxed: a statistic */
  s->http_requests = atomic_load_explicit(&h->requests, memory_order_relaxed);
}

/* ---- answers ----------------------------------------------------------------- */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status,
                              const char *type, void *body, size_t len,
                              enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Content-Security-Policy",
                          "default-src 'none'; script-src 'unsafe-inline'; "
                          "style-src 'unsafe-inline'; img-src 'self'; "
                          "connect-src 'self'");
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
    MHD_add_response_header(r, "Allow", "GET, HEAD");
  enum MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status,
                                   const char *text) {
  return answer(c, status, "text/plain; charset=utf-8", (void *)text,
                strlen(text), MHD_RESPMEM_PERSISTENT);
}

/* /metrics and /status.json: rendered from a snapshot. */
static enum MHD_Result answer_figures(b2sd_http *h, struct MHD_Connection *c,
                                      bool prometheus) {
  snapref *r = snapshot(h);
  if (!r)
    return answer_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no figures yet\n");
  b2sd_msnap s = *r->s;          /* the reader's fields go in a copy */
  reader_figures(h, &s);
  b2sd_text t = {0};
  if (prometheus)
    b2sd_metrics_prometheus(&s, &t);
  else
    b2sd_metrics_json(&s, &t);
  unref(h, r);
  if (t.oom) {
    b2sd_text_free(&t);
    return answer_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
  }
  return answer(c, MHD_HTTP_OK,
                prometheus ? "text/plain; version=0.0.4; charset=utf-8"
                           : "application/json",
                t.p, t.len, MHD_RESPMEM_MUST_FREE);
}

/* /thumb/NAME.png: the latest committed image of a 2-D stream. */
static enum MHD_Result answer_thumb(b2sd_http *h, struct MHD_Connection *c,
                                    const char *name) {
  snapref *r = snapshot(h);
  const b2sd_mstream *st = NULL;
  for (size_t i = 0; r && i < r->s->nstreams; i++)
    if (strcmp(r->s->streams[i].name, name) == 0)
      st = &r->s->streams[i];
  b2sd_thumb_req q = {0};
  if (st) {
    snprintf(q.path, sizeof q.path, "%s", st->path);
    q.ndim = st->ndim;
    memcpy(q.chunkshape, st->chunkshape, sizeof q.chunkshape);
    snprintf(q.dtype, sizeof q.dtype, "%s", st->dtype);
    q.committed = st->committed;
  }
  unref(h, r);
  if (!st)
    return answer_text(c, MHD_HTTP_NOT_FOUND, "no such stream\n");
  void *png = NULL;
  size_t len = 0;
  b2s_errdetail ed;
  if (b2sd_thumb_png(&q, &png, &len, &ed) < 0) {
    size_t n = strlen(ed.text);
    char *body = malloc(n + 2);
    if (!body)
      return answer_text(c, MHD_HTTP_NOT_FOUND, "no thumbnail\n");
    memcpy(body, ed.text, n);
    memcpy(body + n, "\n", 2);
    return answer(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", body,
                  n + 1, MHD_RESPMEM_MUST_FREE);
  }
  return answer(c, MHD_HTTP_OK, "image/png", png, len, MHD_RESPMEM_MUST_FREE);
}

/* ---- the API's answers (docs/ACQUISITIONS.md 9.3) --------------------------------- */

static enum MHD_Result api_error(struct MHD_Connection *c, int code,
                                 const char *field, const char *message) {
  b2s_acq_err e;
  b2s_acq_err_set(&e, code, field, message ? "%s" : NULL, message);
  char *body = b2s_acq_err_json(&e);
  if (!body)
    return answer_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
  return answer(c, (unsigned)b2s_acq_code_status(code), "application/json",
                body, strlen(body), MHD_RESPMEM_MUST_FREE);
}

typedef struct live_body {
  b2sd_http *h;
  b2sd_live_frame *f;
} live_body;

static ssize_t live_read(void *cls, uint64_t pos, char *buf, size_t max) {
  live_body *b = cls;
  size_t n = b->f->im.nbytes;
  if (pos >= n)
    return MHD_CONTENT_READER_END_OF_STREAM;
  size_t k = n - (size_t)pos < max ? n - (size_t)pos : max;
  memcpy(buf, (const uint8_t *)b->f->im.bytes + pos, k);
  return (ssize_t)k;
}

static void live_free(void *cls) {
  live_body *b = cls;
  b2sd_live_frame_unref(b->h->live, b->f);
  free(b);
}

static enum MHD_Result param(void *cls, enum MHD_ValueKind kind,
                             const char *key, const char *value) {
  (void)kind;
  b2sd_live_query *q = cls;
  /* stop at the first fault: q->bad names it */
  return b2sd_live_query_add(q, key, value) == 0 ? MHD_YES : MHD_NO;
}

static void live_headers(b2sd_http *h, struct MHD_Response *r,
                         const b2sd_live_frame *f, const char *etag) {
  char shape[200] = "", v[64];
  size_t used = 0;
  for (int i = 0; i < f->im.ndim; i++)
    used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%lld",
                             i ? "," : "", (long long)f->im.shape[i]);
  MHD_add_response_header(r, "X-B2stream-Dtype", f->im.dtype);
  MHD_add_response_header(r, "X-B2stream-Shape", shape);
  snprintf(v, sizeof v, "%lld", (long long)f->frame);
  MHD_add_response_header(r, "X-B2stream-Frame", v);
  MHD_add_response_header(r, "X-B2stream-Stream", f->stream);
  MHD_add_response_header(r, "X-B2stream-Channel", "data");
  if (b2s_acq_time_text((int64_t)(f->written_ns / 1000), v, sizeof v) >= 0)
    MHD_add_response_header(r, "X-B2stream-Written-At", v);
  MHD_add_response_header(r, "ETag", etag);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  (void)h;
}

/* The frame as PNG or raw bytes; f's reference passes to the answer. */
static enum MHD_Result live_send(b2sd_http *h, struct MHD_Connection *c,
                                 b2sd_live_frame *f, const b2sd_live_query *q,
                                 const char *etag) {
  int format = q->format ? q->format
                         : b2sd_live_accept(MHD_lookup_connection_value(
                               c, MHD_HEADER_KIND, "Accept"));
  struct MHD_Response *r = NULL;
  void *png = NULL;
  size_t len = 0;
  if (format == B2SD_LIVE_RAW) {
    live_body *b = malloc(sizeof *b);
    if (b) {
      *b = (live_body){h, f};
      r = MHD_create_response_from_callback(f->im.nbytes, 64 * 1024,
                                            live_read, b, live_free);
      if (!r)
        free(b);
    }
  } else if (b2sd_image_png(&f->im, q->max_side, &png, &len) == 0) {
    r = MHD_create_response_from_buffer(len, png, MHD_RESPMEM_MUST_FREE);
    if (!r)
      free(png);
  }
  if (r)
    live_headers(h, r, f, etag);
  if (format != B2SD_LIVE_RAW || !r)
    b2sd_live_frame_unref(h->live, f);   /* a raw answer frees it */
  if (!r)
    return api_error(c, B2S_ACQ_E_INTERNAL, NULL, "out of memory");
  MHD_add_response_header(r, "Content-Type", format == B2SD_LIVE_RAW
                                                 ? "application/octet-stream"
                                                 : "image/png");
  enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return rc;
}

/* GET /api/v1/streams/NAME/latest (docs/ACQUISITIONS.md 11.1). */
static enum MHD_Result answer_live(b2sd_http *h, struct MHD_Connection *c,
                                   const char *name) {
  b2sd_live_query q;
  b2sd_live_query_init(&q);
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, param, &q);
  if (q.fault)
    return api_error(c, B2S_ACQ_E_BAD_PARAMETER, q.bad,
                     "parameters: format=png|raw, max_side=16..4096");
  b2sd_live_frame *f = NULL;
  int rc = b2sd_live_latest(h->live, name, &f);
  if (rc < 0)
    return api_error(c, rc, NULL, NULL);
  char etag[64];
  snprintf(etag, sizeof etag, "\"%lld-%016llx\"", (long long)f->frame,
           (unsigned long long)b2sd_live_epoch(h->live));
  const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                "If-None-Match");
  if (inm && strcmp(inm, etag) == 0) {
    b2sd_live_frame_unref(h->live, f);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r)
      return MHD_NO;
    MHD_add_response_header(r, "ETag", etag);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_NOT_MODIFIED, r);
    MHD_destroy_response(r);
    return ok;
  }
  return live_send(h, c, f, &q, etag);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_len, void **con_cls) {
  (void)version;
  (void)upload;
  (void)upload_len;
  (void)con_cls;
  b2sd_http *h = cls;
  /* relaxed: a statistic */
  atomic_fetch_add_explicit(&h->requests, 1, memory_order_relaxed);
  b2sd_route rt;
  b2sd_http_route(method, url, &rt);
  switch (rt.kind) {
  case B2SD_ROUTE_PAGE:
    return answer(c, MHD_HTTP_OK, "text/html; charset=utf-8",
                  (void *)b2sd_http_page, strlen(b2sd_http_page),
                  MHD_RESPMEM_PERSISTENT);
  case B2SD_ROUTE_METRICS:
    return answer_figures(h, c, true);
  case B2SD_ROUTE_STATUS:
    return answer_figures(h, c, false);
  case B2SD_ROUTE_THUMB:
    return answer_thumb(h, c, rt.stream);
  case B2SD_ROUTE_LIVE:
    return answer_live(h, c, rt.stream);
  case B2SD_ROUTE_METHOD:
    if (rt.api)
      return api_error(c, B2S_ACQ_E_METHOD_NOT_ALLOWED, NULL,
                       "GET or HEAD only");
    return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD only\n");
  default:
    if (rt.api)
      return api_error(c, B2S_ACQ_E_NOT_FOUND, NULL, NULL);
    return answer_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
  }
}

/* ---- start and stop ------------------------------------------------------------ */

static int parse_addr(const char *hp, struct sockaddr_storage *ss) {
  char host[64];
  const char *colon = hp[0] == '[' ? strstr(hp, "]:") : strrchr(hp, ':');
  if (!colon)
    return -EINVAL;
  size_t n = (size_t)(colon - hp) - (hp[0] == '[');
  if (n >= sizeof host)
    return -EINVAL;
  memcpy(host, hp + (hp[0] == '['), n);
  host[n] = '\0';
  int port = atoi(colon + (hp[0] == '[' ? 2 : 1));
  memset(ss, 0, sizeof *ss);
  if (hp[0] == '[') {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    return inet_pton(AF_INET6, host, &a->sin6_addr) == 1 ? 0 : -EINVAL;
  }
  struct sockaddr_in *a = (struct sockaddr_in *)ss;
  a->sin_family = AF_INET;
  a->sin_port = htons((uint16_t)port);
  return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -EINVAL;
}

int b2sd_http_start(b2sd_server *srv, b2sd_http **out) {
  *out = NULL;
  const b2s_daemon_cfg *d = &srv->dcfg;
  if (!d->http.enabled)
    return 0;
  struct sockaddr_storage ss;
  if (parse_addr(d->http.listen, &ss) < 0) {
    LOG_E("http: cannot use listen address %s", d->http.listen);
    return -EINVAL;
  }
  b2sd_http *h = calloc(1, sizeof *h);
  if (!h)
    return -ENOMEM;
  h->srv = srv;
  h->live = srv->live;
  h->start_ns = b2sd_wall_ns();
  snprintf(h->data_dir, sizeof h->data_dir, "%s", d->data_dir);
  pthread_mutex_init(&h->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->cond, &ca);
  pthread_condattr_destroy(&ca);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
                   (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  /* no MHD_OPTION_LISTENING_ADDRESS_REUSE: on Linux it means SO_REUSEPORT,
   * and a second daemon would share the port silently */
  h->mhd = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, h,
      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNECTIONS,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
      MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)16,
      MHD_OPTION_END);
  if (!h->mhd) {
    int rc = errno ? -errno : -EADDRINUSE;
    LOG_E("http: cannot listen on %s: %s", d->http.listen, strerror(-rc));
    b2sd_http_stop(h);
    return rc;
  }
  LOG_I("http: metrics and status page on http://%s/", d->http.listen);
  if (!b2s_config_hostport_loopback(d->http.listen))
    LOG_W("http: %s is not a loopback address: anyone who reaches it sees "
          "every stream's figures and images, without authentication",
          d->http.listen);
  *out = h;
  return 0;
}

void b2sd_http_stop(b2sd_http *h) {
  if (!h)
    return;
  if (h->mhd)
    MHD_stop_daemon(h->mhd);     /* joins its thread: no request runs */
  if (h->cur) {
    b2sd_msnap_free(h->cur->s);
    free(h->cur);
  }
  pthread_cond_destroy(&h->cond);
  pthread_mutex_destroy(&h->lock);
  free(h);
}

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

#include "clock.h"
#include "fdheadroom.h"
#include "httpapi.h"
#include "httproute.h"
#include "msnap.h"
#include "thumb.h"

/* Bounds of what clients may hold: connections at a time, seconds a
 * connection may idle (a slow client is cut), bytes each may use for its
 * request headers (larger ones get 431). */
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
  struct MHD_Daemon *mhd;
  pthread_mutex_t lock;          /* a leaf: guards cur and refs */
  pthread_cond_t cond;
  snapref *cur;
  _Atomic int want;              /* a request asks for a new snapshot */
  _Atomic uint64_t requests;
  b2sd_httpapi *api;             /* the control API (httpapi.h) */
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
  if (!h)
    return;
  b2sd_httpapi_turn(h->api);
  /* acquire: pairs with the release store of a request */
  if (!atomic_exchange_explicit(&h->want, 0, memory_order_acquire))
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_len, void **con_cls) {
  (void)version;
  b2sd_http *h = cls;
  b2sd_route rt;
  b2sd_http_route(method, url, &rt);
  if (rt.kind == B2SD_ROUTE_API || rt.kind == B2SD_ROUTE_API_METHOD)
    return b2sd_httpapi_request(h->api, c, &rt, method, upload, upload_len,
                                con_cls);
  if (*upload_len) {             /* a body on a read-only path: ignored */
    *upload_len = 0;
    return MHD_YES;
  }
  /* relaxed: a statistic */
  atomic_fetch_add_explicit(&h->requests, 1, memory_order_relaxed);
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
  case B2SD_ROUTE_METHOD:
    return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD only\n");
  default:
    return answer_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
  }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
  (void)cls;
  (void)c;
  (void)why;
  b2sd_httpapi_completed(*con_cls);
  *con_cls = NULL;
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
  h->start_ns = b2sd_wall_ns();
  snprintf(h->data_dir, sizeof h->data_dir, "%s", d->data_dir);
  pthread_mutex_init(&h->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->cond, &ca);
  pthread_condattr_destroy(&ca);
  h->api = b2sd_httpapi_new(srv);
  if (!h->api) {
    b2sd_http_stop(h);
    return -ENOMEM;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
                   MHD_ALLOW_SUSPEND_RESUME |
                   (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  /* no MHD_OPTION_LISTENING_ADDRESS_REUSE: on Linux it means SO_REUSEPORT,
   * and a second daemon would share the port silently */
  h->mhd = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, h,
      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)d->http.max_connections,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)NULL,
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
  b2sd_httpapi_close(h->api);    /* suspended requests answered first */
  if (h->mhd)
    MHD_stop_daemon(h->mhd);     /* joins its thread: no request runs */
  b2sd_httpapi_free(h->api);
  if (h->cur) {
    b2sd_msnap_free(h->cur->s);
    free(h->cur);
  }
  pthread_cond_destroy(&h->cond);
  pthread_mutex_destroy(&h->lock);
  free(h);
}

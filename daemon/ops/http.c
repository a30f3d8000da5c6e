/* The HTTP listener (http.h) on libmicrohttpd: bounded connections, a
 * per-connection timeout and memory limit, GET and HEAD only. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include <microhttpd.h>

#include "b2s_acq_errors.h"
#include "b2s_acq_json.h"
#include "clock.h"
#include "events.h"
#include "fdheadroom.h"
#include "httpapi.h"
#include "httproute.h"
#include "live.h"
#include "msnap.h"
#include "thumb.h"

/* Bounds of what clients may hold: connections at a time, seconds a
 * connection may idle (a slow client is cut), bytes each may use for its
 * request headers (larger ones get 431). */
#define HTTP_TIMEOUT_S 10
#define HTTP_CONN_MEMORY (32 * 1024)
/* The comment a quiet event stream gets, and how often suspended ones
 * are looked at. */
#define SSE_KEEPALIVE_NS 5000000000u
#define SSE_TICK_MS 1000
#define SSE_BUF (16 * 1024)
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
  b2sd_events *events;           /* the events ring (events.h), the same */
  struct MHD_Daemon *mhd;
  /* event streams: `sse_lock` (a leaf, taken before the ring's lock)
   * guards the list and each stream's `suspended`; the resumer thread
   * resumes those that have something to send */
  pthread_mutex_t sse_lock;
  struct sse *sse;
  int nsse, max_sse;             /* open; http.max_event_streams */
  bool sse_stop;
  pthread_t resumer;
  bool resumer_started;
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
  if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
    MHD_add_response_header(r, "Retry-After", "1");
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

/* ---- GET /api/v1/events (docs/ACQUISITIONS.md 10) --------------------------------- */

typedef struct sse {
  b2sd_http *h;
  struct MHD_Connection *c;
  struct sse *next;
  bool suspended;                /* under sse_lock */
  b2sd_events_cursor cur;
  uint64_t last_ns;              /* when it last sent something */
  size_t off, len;               /* what of buf is still to go */
  char buf[SSE_BUF];
} sse;

/* Whether a suspended stream should run again.  Under sse_lock. */
static bool sse_due(const sse *x, uint64_t now) {
  return x->h->sse_stop || now - x->last_ns >= SSE_KEEPALIVE_NS ||
         b2sd_events_newest(x->h->events) >= x->cur.next;
}

/* Fill x->buf with what is to go next; false: nothing now. */
static bool sse_fill(sse *x) {
  x->off = 0;
  x->len = b2sd_events_read(x->h->events, &x->cur, x->buf, sizeof x->buf);
  if (!x->len && b2sd_now_ns() - x->last_ns >= SSE_KEEPALIVE_NS)
    x->len = (size_t)snprintf(x->buf, sizeof x->buf, ": keepalive\n\n");
  return x->len > 0;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  sse *x = cls;
  b2sd_http *h = x->h;
  if (x->off == x->len && !sse_fill(x)) {
    pthread_mutex_lock(&h->sse_lock);
    bool stop = h->sse_stop;
    /* nothing to send: suspended until the resumer sees a post or the
     * keepalive is due (checked under the lock it resumes under) */
    if (!stop && !sse_due(x, b2sd_now_ns())) {
      x->suspended = true;
      MHD_suspend_connection(x->c);
    }
    pthread_mutex_unlock(&h->sse_lock);
    return stop ? MHD_CONTENT_READER_END_OF_STREAM : 0;
  }
  size_t k = x->len - x->off < max ? x->len - x->off : max;
  memcpy(buf, x->buf + x->off, k);
  x->off += k;
  x->last_ns = b2sd_now_ns();
  return (ssize_t)k;
}

static void sse_free(void *cls) {
  sse *x = cls;
  b2sd_http *h = x->h;
  pthread_mutex_lock(&h->sse_lock);
  for (sse **p = &h->sse; *p; p = &(*p)->next)
    if (*p == x) {
      *p = x->next;
      break;
    }
  h->nsse--;
  pthread_mutex_unlock(&h->sse_lock);
  free(x);
}

/* The resumer ("b2s-sse"): wakes at each post and every second, and
 * resumes the suspended streams that have something to send. */
static void *resumer(void *arg) {
  b2sd_http *h = arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  uint64_t gen = 0;
  for (;;) {
    b2sd_events_wait(h->events, &gen, SSE_TICK_MS);
    pthread_mutex_lock(&h->sse_lock);
    bool stop = h->sse_stop;
    uint64_t now = b2sd_now_ns();
    for (sse *x = h->sse; x; x = x->next)
      if (x->suspended && sse_due(x, now)) {
        x->suspended = false;
        MHD_resume_connection(x->c);
      }
    pthread_mutex_unlock(&h->sse_lock);
    if (stop)
      return NULL;
  }
}

static enum MHD_Result events_param(void *cls, enum MHD_ValueKind kind,
                                    const char *key, const char *value) {
  (void)kind;
  return b2sd_events_query_add(cls, key, value) == 0 ? MHD_YES : MHD_NO;
}

/* Take a stream's place; NULL when http.max_event_streams are open. */
static sse *sse_new(b2sd_http *h, struct MHD_Connection *c) {
  pthread_mutex_lock(&h->sse_lock);
  sse *x = h->nsse < h->max_sse ? calloc(1, sizeof *x) : NULL;
  if (x) {
    x->h = h;
    x->c = c;
    x->next = h->sse;
    h->sse = x;
    h->nsse++;
  }
  pthread_mutex_unlock(&h->sse_lock);
  return x;
}

static enum MHD_Result answer_events(b2sd_http *h, struct MHD_Connection *c) {
  b2sd_events_query q;
  b2sd_events_query_init(&q);
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, events_param, &q);
  if (q.fault)
    return api_error(c, B2S_ACQ_E_BAD_PARAMETER, q.bad,
                     "parameters: acquisition=ID, last_event_id=EPOCH-SEQ");
  /* the header wins over the parameter (docs/ACQUISITIONS.md 10) */
  const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 "Last-Event-ID");
  uint64_t e, seq;
  if (last && b2sd_events_id_parse(last, &e, &seq) < 0)
    return api_error(c, B2S_ACQ_E_BAD_PARAMETER, "Last-Event-ID",
                     "an event id is EPOCH-SEQ: 16 hex digits, '-', a decimal");
  if (!last && q.last_event_id[0])
    last = q.last_event_id;
  sse *x = sse_new(h, c);
  if (!x)
    return api_error(c, B2S_ACQ_E_TOO_MANY_EVENT_STREAMS, NULL, NULL);
  b2sd_events_cursor_init(h->events, &x->cur, last, q.acquisition);
  x->len = (size_t)snprintf(x->buf, sizeof x->buf, "retry: 2000\n\n");
  x->last_ns = b2sd_now_ns();
  struct MHD_Response *r = MHD_create_response_from_callback(
      MHD_SIZE_UNKNOWN, 4096, sse_read, x, sse_free);
  if (!r) {
    sse_free(x);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "text/event-stream");
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return rc;
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
  case B2SD_ROUTE_LIVE:
    return answer_live(h, c, rt.stream);
  case B2SD_ROUTE_EVENTS:
    return answer_events(h, c);
  case B2SD_ROUTE_METHOD:
    if (rt.json)
      return api_error(c, B2S_ACQ_E_METHOD_NOT_ALLOWED, NULL,
                       rt.allow && strcmp(rt.allow, "GET") == 0
                           ? "GET only" : "GET or HEAD only");
    return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD only\n");
  default:
    if (rt.json)
      return api_error(c, B2S_ACQ_E_NOT_FOUND, NULL, NULL);
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
  h->live = srv->live;
  h->events = srv->events;
  h->max_sse = d->http.max_event_streams;
  pthread_mutex_init(&h->sse_lock, NULL);
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
  if (pthread_create(&h->resumer, NULL, resumer, h) == 0) {
    h->resumer_started = true;
    pthread_setname_np(h->resumer, "b2s-sse");
  } else {
    LOG_E("http: cannot start the event streams' thread");
    b2sd_http_stop(h);
    return -EAGAIN;
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
  if (h->resumer_started) {
    /* every suspended stream resumed and ended before MHD stops (it must
     * not stop with connections suspended) */
    pthread_mutex_lock(&h->sse_lock);
    h->sse_stop = true;
    pthread_mutex_unlock(&h->sse_lock);
    pthread_join(h->resumer, NULL);
  }
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
  pthread_mutex_destroy(&h->sse_lock);
  free(h);
}

/* The live view (live.h): the I/O thread's table of streams, the sampler
 * thread, the PUB socket, the HTTP route's access to the samples. */
#define _GNU_SOURCE
#include "live.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <json-c/json.h>
#include <zmq.h>

#include "auth.h"
#include "b2s_acq_errors.h"
#include "b2s_acq_json.h"
#include "clock.h"
#include "endpoint.h"
#include "progress.h"
#include "streamobj.h"

/* An HTTP request keeps a stream sampled this long after it (without a
 * PUB socket nothing is decoded while nobody looks). */
#define LIVE_INTEREST_NS 10000000000u
/* A request waits this long at most for a first sample. */
#define LIVE_WAIT_NS 1000000000u
/* Samples held at a time (the HTTP route's and those in flight), bytes;
 * at least two frames of live.max_bytes. */
#define LIVE_HELD_MIN ((size_t)256 << 20)

/* One stream as the I/O thread saw it. */
typedef struct live_target {
  char name[B2S_STREAM_NAME_MAX + 1];
  char path[B2S_CONFIG_PATH_MAX];
  bool image;                    /* b2nd of 2 or more dimensions, a file */
  int64_t committed;             /* chunks readable in the frame */
  uint64_t written_ns;           /* CLOCK_REALTIME of the last commit */
} live_target;

typedef struct live_table {
  size_t n;
  live_target t[];
} live_table;

/* A stream's sampling state (the sampler's, read by HTTP requests). */
typedef struct live_slot {
  live_target t;
  b2sd_live_frame *sample;       /* held for HTTP, or NULL */
  int64_t last_f;                /* last frame decoded (or tried), -1 */
  int64_t pub_f;                 /* last frame sent on the PUB socket, -1 */
  uint64_t next_ns;              /* no decode before (max_rate_hz) */
  uint64_t http_until_ns;        /* an HTTP request wants it until */
  int why;                       /* the last frame tried: 0, or
                                    B2S_ACQ_E_NOT_AN_IMAGE,
                                    B2S_ACQ_E_FRAME_TOO_LARGE */
} live_slot;

struct b2sd_live {
  b2sd_server *srv;              /* b2sd_wake; the streams on the I/O thread */
  int64_t every_n;
  uint64_t period_ns;            /* 1 / max_rate_hz */
  size_t max_bytes, held_max;
  void *pub;                     /* the sampler's alone once it runs */
  char endpoint[B2S_CONFIG_ENDPOINT_MAX];
  pthread_t thread;
  bool started;
  pthread_mutex_t lock;          /* a leaf: everything below to `gen` */
  pthread_cond_t wake;           /* the sampler waits: a table, a request */
  pthread_cond_t news;           /* requests wait: slots or samples */
  live_table *pending;           /* published, not yet merged */
  live_slot *slots;
  size_t nslots;
  uint64_t tgen;                 /* tables merged */
  size_t held;                   /* bytes of live frames */
  bool stop;
  _Atomic int want;              /* a request asks for a table now */
  _Atomic uint64_t http_until_ns; /* any request: publish tables until */
  uint64_t next_pub_ns, last_hash; /* the I/O thread's */
  uint64_t epoch;
  _Atomic uint64_t frames, dropped;
};

/* ---- the I/O thread's table ---------------------------------------------------- */

static bool image_stream(const b2sd_stream *st) {
  const b2s_stream_cfg *c = &st->cfg;
  return c->b2nd.enabled && c->b2nd.ndim >= 2 &&
         c->format != B2S_FORMAT_DISTRIBUTED;
}

/* What the table would say, hashed (FNV-1a): an unchanged one is not
 * built again. */
static uint64_t table_hash(b2sd_server *srv) {
  uint64_t h = 1469598103934665603u;
  for (b2sd_stream *st = srv->streams; st; st = st->next) {
    uint64_t v[2] = {(uint64_t)b2sd_progress_committed_stat(st),
                     image_stream(st)};
    for (size_t i = 0; i < sizeof v; i++)
      h = (h ^ ((const uint8_t *)v)[i]) * 1099511628211u;
    for (const char *p = st->name; *p; p++)
      h = (h ^ (uint8_t)*p) * 1099511628211u;
  }
  return h;
}

static live_table *table_take(b2sd_server *srv) {
  size_t n = 0;
  for (b2sd_stream *st = srv->streams; st; st = st->next)
    n++;
  live_table *t = calloc(1, sizeof *t + n * sizeof t->t[0]);
  if (!t)
    return NULL;
  for (b2sd_stream *st = srv->streams; st && t->n < n; st = st->next) {
    live_target *x = &t->t[t->n++];
    snprintf(x->name, sizeof x->name, "%s", st->name);
    snprintf(x->path, sizeof x->path, "%s", st->path);
    x->image = image_stream(st);
    x->committed = b2sd_progress_committed_stat(st);
    /* relaxed: a statistic (pairs with the writer's relaxed store) */
    x->written_ns =
        atomic_load_explicit(&st->st_last_commit_ns, memory_order_relaxed);
  }
  return t;
}

void b2sd_live_turn(b2sd_live *lv) {
  if (!lv)
    return;
  /* acquire: pairs with the release store of a request */
  bool want = atomic_exchange_explicit(&lv->want, 0, memory_order_acquire);
  uint64_t now = b2sd_now_ns();
  if (!want) {
    /* relaxed: a deadline, nothing else is read on its strength */
    uint64_t until =
        atomic_load_explicit(&lv->http_until_ns, memory_order_relaxed);
    if (now < lv->next_pub_ns || (!lv->pub && now >= until))
      return;
  }
  lv->next_pub_ns = now + lv->period_ns;
  uint64_t h = table_hash(lv->srv);
  if (!want && h == lv->last_hash)
    return;
  live_table *t = table_take(lv->srv);
  if (!t)
    return;
  lv->last_hash = h;
  pthread_mutex_lock(&lv->lock);
  live_table *old = lv->pending;   /* not merged yet: this one replaces it */
  lv->pending = t;
  pthread_cond_signal(&lv->wake);
  pthread_mutex_unlock(&lv->lock);
  free(old);
}

/* ---- samples ----------------------------------------------------------------------- */

/* Under the lock. */
static void frame_unref_locked(b2sd_live *lv, b2sd_live_frame *f) {
  if (!f || --f->refs > 0)
    return;
  lv->held -= f->im.nbytes;
  b2sd_image_fini(&f->im);
  free(f);
}

void b2sd_live_frame_unref(b2sd_live *lv, b2sd_live_frame *f) {
  pthread_mutex_lock(&lv->lock);
  frame_unref_locked(lv, f);
  pthread_mutex_unlock(&lv->lock);
}

static live_slot *slot_find(live_slot *s, size_t n, const char *name,
                            size_t hint) {
  if (hint < n && strcmp(s[hint].t.name, name) == 0)
    return &s[hint];
  for (size_t i = 0; i < n; i++)
    if (strcmp(s[i].t.name, name) == 0)
      return &s[i];
  return NULL;
}

/* The published table into the slots, each stream keeping its state.
 * Under the lock. */
static void merge(b2sd_live *lv) {
  live_table *t = lv->pending;
  lv->pending = NULL;
  live_slot *ns = calloc(t->n ? t->n : 1, sizeof *ns);
  if (!ns) {
    free(t);
    return;
  }
  for (size_t i = 0; i < t->n; i++) {
    live_slot *o = slot_find(lv->slots, lv->nslots, t->t[i].name, i);
    if (o) {
      ns[i] = *o;
      o->sample = NULL;          /* moved */
    } else {
      ns[i].last_f = ns[i].pub_f = -1;
    }
    ns[i].t = t->t[i];
  }
  for (size_t i = 0; i < lv->nslots; i++)
    frame_unref_locked(lv, lv->slots[i].sample);
  free(lv->slots);
  lv->slots = ns;
  lv->nslots = t->n;
  lv->tgen++;
  free(t);
  pthread_cond_broadcast(&lv->news);
}

/* The newest frame of s that may be shown: a multiple of every_n among
 * the committed ones; -1 when none. */
static int64_t eligible(const b2sd_live *lv, const live_slot *s) {
  if (s->t.committed <= 0)
    return -1;
  return (s->t.committed - 1) / lv->every_n * lv->every_n;
}

static bool wanted(const b2sd_live *lv, const live_slot *s, uint64_t now) {
  return lv->pub || now < s->http_until_ns;
}

/* The next slot to decode now, or NULL with *wait_ns until one may be
 * due.  Under the lock. */
static live_slot *next_due(b2sd_live *lv, uint64_t now, uint64_t *wait_ns) {
  *wait_ns = 1000000000u;
  for (size_t i = 0; i < lv->nslots; i++) {
    live_slot *s = &lv->slots[i];
    if (s->sample && now >= s->http_until_ns) {
      frame_unref_locked(lv, s->sample);   /* nobody looks any more */
      s->sample = NULL;
    }
    if (!s->t.image || !wanted(lv, s, now) || eligible(lv, s) <= s->last_f)
      continue;
    size_t est = s->sample ? s->sample->im.nbytes : lv->max_bytes;
    if (now >= s->next_ns && lv->held + est <= lv->held_max)
      return s;
    uint64_t w = s->next_ns > now ? s->next_ns - now : lv->period_ns;
    *wait_ns = w < *wait_ns ? w : *wait_ns;
  }
  return NULL;
}

/* ---- the PUB socket ---------------------------------------------------------------- */

/* odin-data's dtype name of a NumPy descr ("<u2" -> "uint16"). */
static void odin_dtype(const char *descr, char *out, size_t n) {
  const char *kind = descr[1] == 'u' ? "uint" : descr[1] == 'i' ? "int"
                                                                : "float";
  snprintf(out, n, "%s%d", kind, 8 * (descr[2] - '0'));
}

/* The header of section 11.2, as JSON text (caller frees); NULL: no
 * memory. */
static char *pub_header(const b2sd_live_frame *f, const char *path) {
  const b2sd_image *im = &f->im;
  char dt[16], at[40];
  odin_dtype(im->dtype, dt, sizeof dt);
  json_object *o = json_object_new_object(), *shape = json_object_new_array(),
              *b = json_object_new_object(), *ishape = json_object_new_array();
  for (int i = 0; i < im->ndim; i++) {
    char d[24];
    snprintf(d, sizeof d, "%lld", (long long)im->shape[i]);
    json_object_array_add(shape, json_object_new_string(d));
    json_object_array_add(ishape, json_object_new_int64(im->shape[i]));
  }
  const char *base = strrchr(path, '/');
  b2s_acq_time_text((int64_t)(f->written_ns / 1000), at, sizeof at);
  json_object_object_add(o, "frame_num", json_object_new_int64(f->frame));
  json_object_object_add(o, "acquisition_id", json_object_new_string(""));
  json_object_object_add(o, "dtype", json_object_new_string(dt));
  json_object_object_add(o, "dsize",
                         json_object_new_int64((int64_t)im->nbytes));
  json_object_object_add(o, "dataset", json_object_new_string(f->stream));
  json_object_object_add(o, "compression", json_object_new_string("none"));
  json_object_object_add(o, "shape", shape);
  json_object_object_add(b, "descr", json_object_new_string(im->dtype));
  json_object_object_add(b, "shape", ishape);
  json_object_object_add(b, "stream", json_object_new_string(f->stream));
  json_object_object_add(b, "channel", json_object_new_string("data"));
  json_object_object_add(b, "file",
                         json_object_new_string(base ? base + 1 : path));
  json_object_object_add(b, "chunk", json_object_new_int64(f->frame));
  json_object_object_add(b, "written_at", json_object_new_string(at));
  json_object_object_add(o, "b2stream", b);
  char *text = b2s_acq_json_line(o);
  json_object_put(o);
  return text;
}

static int send_parts(void *z, const char *hdr, const b2sd_live_frame *f) {
  if (zmq_send(z, hdr, strlen(hdr), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
    return -errno;
  /* the first part went: the second fits (a queue counts whole messages) */
  return zmq_send(z, f->im.bytes, f->im.nbytes, ZMQ_DONTWAIT) < 0 ? -errno : 0;
}

/* Send f to the subscribers, never waiting.  libzmq's PUB drops
 * silently for a full subscriber and then skips it, uncounted, until it
 * catches up; with ZMQ_XPUB_NODROP it refuses a message that does not
 * fit every subscriber's queue instead, which is how each drop is seen
 * and counted.  So a full subscriber holds a frame back from all of them
 * (they go on at the pace of the slowest, never slowing anything). */
static void pub_send(b2sd_live *lv, const b2sd_live_frame *f,
                     const char *path) {
  char *hdr = pub_header(f, path);
  if (!hdr)
    return;
  int rc = send_parts(lv->pub, hdr, f);
  if (rc == -EAGAIN)
    /* relaxed: a statistic */
    atomic_fetch_add_explicit(&lv->dropped, 1, memory_order_relaxed);
  else if (rc < 0)
    LOG_D("live: cannot publish %s frame %lld: %s", f->stream,
          (long long)f->frame, zmq_strerror(-rc));
  free(hdr);
}

/* ---- the sampler ------------------------------------------------------------------- */

/* Decode s's newest eligible frame (the lock released meanwhile), keep
 * it for HTTP when wanted, send it on PUB.  Under the lock. */
static void sample(b2sd_live *lv, live_slot *s, uint64_t now) {
  int64_t f = eligible(lv, s);
  size_t idx = (size_t)(s - lv->slots);
  live_target t = s->t;
  s->next_ns = now + lv->period_ns;
  s->last_f = f;
  pthread_mutex_unlock(&lv->lock);
  b2sd_live_frame *fr = calloc(1, sizeof *fr);
  b2s_errdetail ed;
  int rc = fr ? b2sd_image_read(t.path, f, lv->max_bytes, &fr->im, &ed)
              : B2S_E_NOMEM;
  pthread_mutex_lock(&lv->lock);
  s = slot_find(lv->slots, lv->nslots, t.name, idx);   /* may have moved */
  if (rc < 0 || !s) {
    if (s)
      s->why = rc == B2S_E_ARG        ? B2S_ACQ_E_NOT_AN_IMAGE
               : rc == B2S_E_OVERSIZE ? B2S_ACQ_E_FRAME_TOO_LARGE
                                      : 0;
    pthread_cond_broadcast(&lv->news);   /* a request may wait for why */
    if (rc < 0 && rc != B2S_E_ARG && rc != B2S_E_OVERSIZE)
      LOG_D("live: %s frame %lld: %s", t.name, (long long)f, ed.text);
    if (rc == 0)
      b2sd_image_fini(&fr->im);
    free(fr);
    return;
  }
  /* relaxed: a statistic */
  atomic_fetch_add_explicit(&lv->frames, 1, memory_order_relaxed);
  fr->frame = f;
  fr->written_ns = t.written_ns;
  snprintf(fr->stream, sizeof fr->stream, "%s", t.name);
  fr->refs = 1;                  /* the sampler's, until sent */
  lv->held += fr->im.nbytes;
  s->why = 0;
  if (now < s->http_until_ns) {
    frame_unref_locked(lv, s->sample);
    s->sample = fr;
    fr->refs++;
    pthread_cond_broadcast(&lv->news);
  }
  bool send = lv->pub && f > s->pub_f;
  if (send)
    s->pub_f = f;
  pthread_mutex_unlock(&lv->lock);
  if (send)
    pub_send(lv, fr, t.path);
  pthread_mutex_lock(&lv->lock);
  frame_unref_locked(lv, fr);
}

static void *sampler(void *arg) {
  b2sd_live *lv = arg;
  pthread_mutex_lock(&lv->lock);
  while (!lv->stop) {
    if (lv->pending)
      merge(lv);
    uint64_t now = b2sd_now_ns(), wait_ns;
    live_slot *s = next_due(lv, now, &wait_ns);
    if (s) {
      sample(lv, s, now);
      continue;
    }
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    uint64_t ns = (uint64_t)dl.tv_nsec + wait_ns;
    dl.tv_sec += (time_t)(ns / 1000000000u);
    dl.tv_nsec = (long)(ns % 1000000000u);
    if (!lv->pending && !lv->stop)
      pthread_cond_timedwait(&lv->wake, &lv->lock, &dl);
  }
  pthread_mutex_unlock(&lv->lock);
  return NULL;
}

/* ---- the HTTP route ---------------------------------------------------------------- */

static bool deadline_passed(pthread_cond_t *c, pthread_mutex_t *m,
                            uint64_t until_ns) {
  uint64_t now = b2sd_now_ns();
  if (now >= until_ns)
    return true;
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  uint64_t ns = (uint64_t)dl.tv_nsec + (until_ns - now);
  dl.tv_sec += (time_t)(ns / 1000000000u);
  dl.tv_nsec = (long)(ns % 1000000000u);
  return pthread_cond_timedwait(c, m, &dl) == ETIMEDOUT;
}

/* What the slot answers now: 0 (a sample in *out), an error, or 1: not
 * yet known.  Under the lock. */
static int slot_answer(b2sd_live *lv, live_slot *s, bool fresh,
                       b2sd_live_frame **out) {
  if (!s->t.image || s->why == B2S_ACQ_E_NOT_AN_IMAGE)
    return B2S_ACQ_E_NOT_AN_IMAGE;
  if (s->sample) {
    s->sample->refs++;
    *out = s->sample;
    return 0;
  }
  if (s->why == B2S_ACQ_E_FRAME_TOO_LARGE)
    return B2S_ACQ_E_FRAME_TOO_LARGE;
  if (fresh && s->t.committed <= 0)
    return B2S_ACQ_E_NO_FRAME;
  if (s->last_f >= 0)
    s->last_f = -1;              /* decoded for PUB only: again, to hold */
  pthread_cond_signal(&lv->wake);
  return 1;
}

int b2sd_live_latest(b2sd_live *lv, const char *name, b2sd_live_frame **out) {
  *out = NULL;
  uint64_t now = b2sd_now_ns(), until = now + LIVE_WAIT_NS;
  /* relaxed: a deadline the I/O thread reads */
  atomic_store_explicit(&lv->http_until_ns, now + LIVE_INTEREST_NS,
                        memory_order_relaxed);
  pthread_mutex_lock(&lv->lock);
  bool asked = false;
  uint64_t gen0 = 0;
  int rc;
  for (;;) {
    live_slot *s = slot_find(lv->slots, lv->nslots, name, 0);
    bool fresh = asked && lv->tgen > gen0;
    if (s) {
      s->http_until_ns = b2sd_now_ns() + LIVE_INTEREST_NS;
      if ((rc = slot_answer(lv, s, fresh, out)) <= 0)
        break;
    } else if (fresh) {
      rc = B2S_ACQ_E_NO_SUCH_STREAM;
      break;
    }
    if (!asked) {
      asked = true;
      gen0 = lv->tgen;
      /* release: pairs with the exchange in b2sd_live_turn */
      atomic_store_explicit(&lv->want, 1, memory_order_release);
      b2sd_wake(lv->srv);
    }
    if (deadline_passed(&lv->news, &lv->lock, until)) {
      rc = s ? B2S_ACQ_E_NO_FRAME : B2S_ACQ_E_NO_SUCH_STREAM;
      break;
    }
  }
  pthread_mutex_unlock(&lv->lock);
  return rc;
}

uint64_t b2sd_live_epoch(const b2sd_live *lv) { return lv->epoch; }

void b2sd_live_counts(const b2sd_live *lv, uint64_t *frames,
                      uint64_t *dropped) {
  /* relaxed: statistics */
  *frames = lv ? atomic_load_explicit(&lv->frames, memory_order_relaxed) : 0;
  *dropped = lv ? atomic_load_explicit(&lv->dropped, memory_order_relaxed) : 0;
}

/* ---- start and stop ---------------------------------------------------------------- */

static int pub_open(b2sd_live *lv, b2sd_server *srv, const char *ep,
                    int hwm) {
  int rc = b2sd_endpoint_claim(ep);
  if (rc < 0)
    return rc;
  lv->pub = zmq_socket(srv->zctx, ZMQ_PUB);
  int one = 1, zero = 0;
  if (!lv->pub ||
      zmq_setsockopt(lv->pub, ZMQ_SNDHWM, &hwm, sizeof hwm) < 0 ||
      zmq_setsockopt(lv->pub, ZMQ_LINGER, &zero, sizeof zero) < 0 ||
      zmq_setsockopt(lv->pub, ZMQ_XPUB_NODROP, &one, sizeof one) < 0)
    return -errno;
  if (srv->auth && strncmp(ep, "tcp://", 6) == 0 &&
      (rc = b2sd_auth_server_socket(srv->auth, lv->pub, ep)) < 0) {
    LOG_E("live: cannot make %s a CURVE server: %s", ep, zmq_strerror(-rc));
    return rc;
  }
  if (!srv->auth && strncmp(ep, "tcp://", 6) == 0)
    LOG_W("live: publish %s: plain tcp:// without CURVE: anyone who reaches "
          "the port sees every image stream", ep);
  if (zmq_bind(lv->pub, ep) < 0) {
    rc = -errno;
    LOG_E("live: cannot bind %s: %s", ep, zmq_strerror(errno));
    return rc;
  }
  b2sd_endpoint_bound(ep);
  snprintf(lv->endpoint, sizeof lv->endpoint, "%s", ep);
  LOG_I("live: publishing on %s", ep);
  return 0;
}

static void *sampler_main(void *arg) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  return sampler(arg);
}

int b2sd_live_start(b2sd_server *srv, b2sd_live **out) {
  *out = NULL;
  const b2s_daemon_cfg *d = &srv->dcfg;
  if (!d->http.enabled && !d->live.publish[0])
    return 0;
  b2sd_live *lv = calloc(1, sizeof *lv);
  if (!lv)
    return -ENOMEM;
  lv->srv = srv;
  lv->every_n = d->live.every_n;
  lv->period_ns = 1000000000u / (uint64_t)d->live.max_rate_hz;
  lv->max_bytes = (size_t)d->live.max_bytes;
  lv->held_max = 2 * lv->max_bytes > LIVE_HELD_MIN ? 2 * lv->max_bytes
                                                   : LIVE_HELD_MIN;
  if (getrandom(&lv->epoch, sizeof lv->epoch, 0) != sizeof lv->epoch)
    lv->epoch = b2sd_wall_ns();
  pthread_mutex_init(&lv->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&lv->wake, &ca);
  pthread_cond_init(&lv->news, &ca);
  pthread_condattr_destroy(&ca);
  int rc = d->live.publish[0]
               ? pub_open(lv, srv, d->live.publish, d->live.send_hwm)
               : 0;
  /* the thread creation orders the socket's setup before its use there */
  if (rc == 0 && (rc = -pthread_create(&lv->thread, NULL, sampler_main, lv)) == 0) {
    lv->started = true;
    pthread_setname_np(lv->thread, "b2s-live");
  }
  if (rc < 0) {
    b2sd_live_stop(lv);
    return rc;
  }
  *out = lv;
  return 0;
}

void b2sd_live_stop(b2sd_live *lv) {
  if (!lv)
    return;
  if (lv->started) {
    pthread_mutex_lock(&lv->lock);
    lv->stop = true;
    pthread_cond_signal(&lv->wake);
    pthread_mutex_unlock(&lv->lock);
    pthread_join(lv->thread, NULL);
  }
  if (lv->pub)
    zmq_close(lv->pub);
  if (lv->endpoint[0])
    b2sd_endpoint_release(lv->endpoint);
  for (size_t i = 0; i < lv->nslots; i++)
    frame_unref_locked(lv, lv->slots[i].sample);
  free(lv->slots);
  free(lv->pending);
  pthread_cond_destroy(&lv->wake);
  pthread_cond_destroy(&lv->news);
  pthread_mutex_destroy(&lv->lock);
  free(lv);
}

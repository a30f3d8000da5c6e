/* The committer's process: sockets, clock, signals and the main loop
 * (committer.h).  A PULL socket takes WRITTEN and END from the ranks; a
 * PUB socket announces COMMITTED after every commit and every second
 * (late joiners learn H without waiting for the next commit). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "committer.h"
#include "b2s_dname.h"

#define HEARTBEAT_MS 1000
#define FRAMES_MAX 1024             /* frames one committer keeps open */
#define DRAIN_MAX 10000             /* messages per loop round */

typedef struct committer {
  const cm_opts *o;
  b2s_store *s;
  void *zctx, *pull, *pub;
  cm_frame *frames;
  int nframes;
  int64_t bad;                      /* messages refused */
  int64_t last_beat;
} committer;

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- frames ---------------------------------------------------------------- */

static cm_frame *frame_find(committer *c, const char *name, size_t len) {
  for (int k = 0; k < c->nframes; k++)
    if (strlen(c->frames[k].name) == len &&
        memcmp(c->frames[k].name, name, len) == 0)
      return &c->frames[k];
  return NULL;
}

/* How long a holder killed keeps a lease in this store: a RADOS lease
 * runs out (all committers of a store use the same --lease-ms); the
 * kernel drops a dead holder's flock on the directory store at once. */
static int64_t lease_expire_ms(const committer *c) {
  return strcmp(b2s_store_kind(c->s), "local") == 0 ? 0 : c->o->lease_ms;
}

static cm_frame *frame_add(committer *c, const char *name, size_t len) {
  if (c->nframes == FRAMES_MAX)
    return NULL;
  cm_frame *f = &c->frames[c->nframes++];
  memset(f, 0, sizeof *f);
  memcpy(f->name, name, len);
  f->name[len] = '\0';
  cm_lease_init(f, lease_expire_ms(c));
  return f;
}

/* Open a frame not open yet; quiet while it has no NAME.meta.
 * B2S_E_BUSY while another committer holds its lease (tried again when
 * its wait says so, not at every message). */
static int frame_try_open(committer *c, cm_frame *f) {
  if (f->df != NULL)
    return 0;
  int rc = cm_lease_try(f, c->s, c->o, now_ms());
  if (rc < 0)
    return rc;
  rc = cm_frame_open(f, c->s, c->o);
  if (rc < 0 && rc != -ENOENT)
    cm_log(CM_ERR, "frame %s: cannot open: %s%s%s", f->name,
           b2s_strerror(rc), *b2s_store_last_error() ? ": " : "",
           b2s_store_last_error());
  return rc;
}

static void publish(committer *c, const cm_frame *f) {
  if (f->df == NULL)
    return;
  uint8_t buf[8 + B2S_DMSG_NAME_MAX + 16];
  b2s_dmsg m = {.type = B2S_DMSG_COMMITTED, .name = f->name,
                .name_len = (uint16_t)strlen(f->name),
                .index = b2s_dcommit_committed(f->dc), .closed = f->closed};
  int n = b2s_dmsg_encode(&m, buf, sizeof buf);
  /* a PUB socket never blocks: a slow subscriber loses messages, and
   * the next heartbeat tells it H again */
  if (n > 0)
    zmq_send(c->pub, buf, (size_t)n, ZMQ_DONTWAIT);
}

/* ---- messages ------------------------------------------------------------ */

static void refuse(committer *c, size_t len, int rc, const char *name) {
  c->bad++;
  /* every one of the first 100, then one in 1000 */
  if (c->bad <= 100 || c->bad % 1000 == 0)
    cm_log(CM_WARN, "message of %zu bytes%s%s refused: %s (%lld refused "
           "so far)", len, name ? " for frame " : "", name ? name : "",
           b2s_strerror(rc), (long long)c->bad);
}

static void handle(committer *c, const uint8_t *buf, size_t len) {
  b2s_dmsg m;
  int rc = b2s_dmsg_decode(buf, len, &m);
  if (rc == 0 && m.type == B2S_DMSG_COMMITTED)
    rc = B2S_E_PROTO;                /* followers' message, not ours */
  if (rc < 0) {
    refuse(c, len, rc, NULL);
    return;
  }
  char name[B2S_DMSG_NAME_MAX + 1];
  memcpy(name, m.name, m.name_len);
  name[m.name_len] = '\0';
  cm_frame *f = frame_find(c, m.name, m.name_len);
  if (f == NULL) {
    /* first sight: kept only once its NAME.meta opens */
    if ((f = frame_add(c, m.name, m.name_len)) == NULL) {
      refuse(c, len, B2S_E_LIMIT, name);
      return;
    }
    /* kept and retried when leased elsewhere; else the slot goes, and
     * the lease this committer may have taken with it */
    if ((rc = frame_try_open(c, f)) < 0 && rc != B2S_E_BUSY) {
      cm_lease_drop(f);
      c->nframes--;
    }
  } else {
    rc = frame_try_open(c, f);
  }
  /* leased elsewhere (logged): nothing is lost with the message, the
   * store has its chunk and its rank repeats END until the close */
  if (rc == B2S_E_BUSY)
    return;
  if (rc == 0 && (rc = cm_frame_message(f, &m)) == B2S_E_BUSY) {
    cm_log(CM_WARN, "frame %s: chunk %lld is more than the window ahead of "
           "committed %lld: refused", name, (long long)m.index,
           (long long)b2s_dcommit_committed(f->dc));
    return;
  }
  if (rc < 0 && rc != B2S_E_CLOSED)   /* a close refusal is logged */
    refuse(c, len, rc, name);
}

/* Take what the PULL socket holds, without waiting. */
static void drain(committer *c) {
  for (int k = 0; k < DRAIN_MAX; k++) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, c->pull, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      return;
    }
    /* one frame per message: the rest of a multi-part message is refused
     * part by part */
    handle(c, zmq_msg_data(&msg), zmq_msg_size(&msg));
    zmq_msg_close(&msg);
  }
}

/* ---- the loop -------------------------------------------------------------- */

/* Decisions of every frame; the shortest wait among them. */
static int64_t step_all(committer *c, bool gaps) {
  int64_t wait = -1, now = now_ms();
  for (int k = 0; k < c->nframes; k++) {
    bool published;
    int64_t w;
    cm_frame_step(&c->frames[k], now, gaps, &published, &w);
    if (published)
      publish(c, &c->frames[k]);
    if (w >= 0 && (wait < 0 || w < wait))
      wait = w;
  }
  return wait;
}

static void heartbeat(committer *c) {
  int64_t now = now_ms();
  if (now - c->last_beat < HEARTBEAT_MS)
    return;
  c->last_beat = now;
  for (int k = 0; k < c->nframes; k++) {
    cm_frame *f = &c->frames[k];
    if (cm_lease_renew(f) < 0)
      cm_frame_fini(f);           /* another committer has it now */
    frame_try_open(c, f);         /* NAME.meta may be there by now */
    publish(c, f);
  }
}

/* Frames whose lease another committer holds: tried again on this
 * committer's clock, whether or not a message names them; opened (and H
 * published) once the lease is taken.  The shortest wait among them (-1:
 * none waits). */
static int64_t leases_step(committer *c) {
  int64_t wait = -1;
  for (int k = 0; k < c->nframes; k++) {
    cm_frame *f = &c->frames[k];
    if (f->df != NULL || f->lease != NULL)
      continue;                   /* open, or waiting for its NAME.meta */
    if (frame_try_open(c, f) == 0)
      publish(c, f);
    int64_t w = b2s_dcommit_lease_wait(&f->lease_wait, now_ms());
    if (f->lease == NULL && (wait < 0 || w < wait))
      wait = w;
  }
  return wait;
}

static int poll_timeout(const committer *c, int64_t wait) {
  int64_t beat = HEARTBEAT_MS - (now_ms() - c->last_beat);
  if (beat < 0)
    beat = 0;
  return (int)(wait >= 0 && wait < beat ? wait : beat);
}

static int64_t shorter(int64_t a, int64_t b) {
  return a < 0 || (b >= 0 && b < a) ? b : a;
}

static void run_loop(committer *c) {
  while (!g_stop) {
    int64_t wait = shorter(leases_step(c), step_all(c, true));
    heartbeat(c);
    zmq_pollitem_t it = {.socket = c->pull, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, poll_timeout(c, wait)) > 0)
      drain(c);
  }
  /* stopping: what is already here is committed, no gap is made */
  drain(c);
  while (step_all(c, false) == 0)
    continue;
  for (int k = 0; k < c->nframes; k++) {
    publish(c, &c->frames[k]);
    if (c->frames[k].df != NULL)
      cm_log(CM_INFO, "frame %s: stopping at committed %lld (%lld gaps, "
             "%lld lost records found)", c->frames[k].name,
             (long long)b2s_dcommit_committed(c->frames[k].dc),
             (long long)c->frames[k].gaps,
             (long long)c->frames[k].lost_found);
  }
}

/* ---- setup ---------------------------------------------------------------- */

static int bind_socket(committer *c, void **sock, int type, const char *ep) {
  *sock = zmq_socket(c->zctx, type);
  int linger = 0;
  if (*sock == NULL ||
      zmq_setsockopt(*sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
      zmq_bind(*sock, ep) != 0) {
    cm_log(CM_ERR, "cannot bind %s: %s", ep, zmq_strerror(zmq_errno()));
    return -1;
  }
  return 0;
}

/* A --frame name's lease, before anything is bound: waited for while its
 * holder may be one that died (its lease runs out), refused once the
 * holder shows it is alive. */
static int named_lease(committer *c, cm_frame *f) {
  for (;;) {
    int rc = cm_lease_try(f, c->s, c->o, now_ms());
    if (rc == 0)
      return 0;
    if (rc != B2S_E_BUSY || b2s_dcommit_lease_alive(&f->lease_wait) ||
        g_stop) {
      cm_log(CM_ERR, "not started: frame %s %s", f->name,
             rc != B2S_E_BUSY ? "has no lease"
             : g_stop ? "still leased elsewhere at the stop"
                      : "has another committer");
      return -1;
    }
    int64_t w = b2s_dcommit_lease_wait(&f->lease_wait, now_ms());
    struct timespec ts = {w / 1000, (long)(w % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
}

static int setup(committer *c, const cm_opts *o) {
  c->o = o;
  b2s_store_opts so = {.ceph_conf = o->ceph_conf, .sync = o->sync};
  int rc = b2s_store_open(o->store_url, &so, &c->s);
  if (rc < 0) {
    cm_log(CM_ERR, "cannot open store %s: %s%s%s", o->store_url,
           b2s_strerror(rc), *b2s_store_last_error() ? ": " : "",
           b2s_store_last_error());
    return -1;
  }
  c->frames = calloc(FRAMES_MAX, sizeof *c->frames);
  c->zctx = zmq_ctx_new();
  if (c->frames == NULL || c->zctx == NULL)
    return -1;
  /* the named frames' leases before the endpoints: a second committer
   * takes nothing over (a killed one's lease may need to expire) */
  for (int k = 0; k < o->nframes; k++) {
    size_t len = strlen(o->frames[k]);
    if (!b2s_dname_valid(o->frames[k], len) || frame_find(c, o->frames[k], len))
      continue;
    if (named_lease(c, frame_add(c, o->frames[k], len)) < 0)
      return -1;
  }
  if (bind_socket(c, &c->pull, ZMQ_PULL, o->pull) < 0 ||
      bind_socket(c, &c->pub, ZMQ_PUB, o->pub) < 0)
    return -1;
  for (int k = 0; k < c->nframes; k++)
    frame_try_open(c, &c->frames[k]);
  return 0;
}

static void teardown(committer *c) {
  for (int k = 0; k < c->nframes; k++) {
    cm_frame_fini(&c->frames[k]);
    cm_lease_drop(&c->frames[k]);
  }
  free(c->frames);
  if (c->pull)
    zmq_close(c->pull);
  if (c->pub)
    zmq_close(c->pub);
  if (c->zctx)
    zmq_ctx_term(c->zctx);
  b2s_store_free(c->s);
}

static void signals(void) {
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  /* no SA_RESTART: a signal interrupts the poll */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

int cm_run(const cm_opts *o) {
  committer c = {0};
  signals();
  int rc = setup(&c, o);
  if (rc == 0) {
    cm_log(CM_INFO, "started: store %s (%s), pull %s, pub %s, gap timeout "
           "%lld ms", o->store_url, b2s_store_kind(c.s), o->pull, o->pub,
           (long long)o->gap_timeout_ms);
    run_loop(&c);
    cm_log(CM_INFO, "stopped (%lld messages refused)", (long long)c.bad);
  }
  teardown(&c);
  return rc == 0 ? 0 : 1;
}

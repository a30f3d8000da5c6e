/* The I/O thread: the daemon's main loop, its ROUTER sockets and sessions
 * (PROTOCOL.md).
 *
 * One loop waits on the ROUTER sockets, their monitors, the sources, the
 * signalfd and the wakeup eventfd (ioloop.h: one epoll_wait a turn, and
 * only the sockets that fired are read).  Each turn it reads a bounded
 * batch of messages per such socket (a busy one cannot hold back the
 * others or the timers: what is left is read next turn, after a wait
 * that only looks) and dispatches
 * them to the modules that handle them (handles.c, shm_ingest.c,
 * follow.c), then scans the streams: progress the workers and writers
 * published (taken, written, durable, committed) becomes ACK, FLUSHED,
 * CLOSED and NOTIFY messages.  Replies go out through outbox.c. */
#define _GNU_SOURCE
#include "source_s2.h"
#include "chunkpool.h"
#include "clock.h"
#include "endpoint.h"
#include "drain.h"
#include "fdheadroom.h"
#include "http.h"
#include "events.h"
#include "live.h"
#include "notify.h"
#include "outbox.h"
#include "peers.h"
#include "progress.h"
#include "retire.h"
#include "segment.h"
#include "access.h"
#include "auth.h"
#include "readers.h"
#include "stats.h"
#include "registry.h"
#include "handoff.h"
#include "stream.h"
#include "workers.h"
#include "follow.h"
#include "ingest.h"
#include "ioloop.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#define RECV_BATCH 256
#define STOP_LINGER_MS 500

/* An ERROR to a peer that has no session (sent on the raw routing id), in
 * the protocol version of the message it answers (1 or 2). */
static void error_raw(b2sd_server *srv, int sock, const void *rid,
                      size_t rid_len, uint8_t version,
                      const b2sd_errreply *e) {
  b2sd_session tmp = {.sock = sock, .rid_len = rid_len};
  tmp.version = version >= 1 && version <= B2S_WIRE_VERSION_MAX
                    ? version : B2S_WIRE_VERSION;
  memcpy(tmp.rid, rid, rid_len);
  b2sd_send_error(srv, &tmp, e);
}

/* ---- sessions ------------------------------------------------------------- */

static b2sd_session *session_find(b2sd_server *srv, int sock, const void *rid,
                                  size_t len) {
  for (b2sd_session *s = srv->sessions; s; s = s->next)
    if (s->sock == sock && s->rid_len == len && memcmp(s->rid, rid, len) == 0)
      return s;
  return NULL;
}

static void session_end(b2sd_server *srv, b2sd_session *s) {
  while (s->handles)
    b2sd_handle_free(s->handles);
  while (s->follows)
    b2sd_follow_remove(s->follows);
  b2sd_reads_session_end(srv, s);
  for (b2sd_session **pp = &srv->sessions; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  srv->nsessions--;
  LOG_D("session %u ended", s->id);
  free(s);
}

/* ---- messages ----------------------------------------------------------- */

/* A message as received: routing id, header, then up to two more frames
 * (a payload and, in version 2, a record after it). */
typedef struct inmsg {
  int sock;
  zmq_msg_t rid, hdr, payload, extra;
  bool has_payload, has_extra;
  int nframes;                   /* the routing id included */
} inmsg;

static void on_hello(b2sd_server *srv, inmsg *in, b2sd_session *s,
                     const b2s_wire_msg *m) {
  if (s)
    session_end(srv, s);
  b2sd_peers_turn(srv);          /* no older event may name this session */
  b2s_errdetail why;
  if (b2sd_headroom_session(srv, &why) < 0) {
    error_raw(srv, in->sock, zmq_msg_data(&in->rid), zmq_msg_size(&in->rid),
              m->version,
              &(b2sd_errreply){.tag = m->tag, .code = B2S_E_LIMIT,
                  .flags = B2S_WIRE_ERROR_CLOSED_SESSION, .ref_type = m->type,
                  .text = why.text});
    return;
  }
  s = calloc(1, sizeof *s);
  if (!s) {
    error_raw(srv, in->sock, zmq_msg_data(&in->rid), zmq_msg_size(&in->rid),
              m->version,
              &(b2sd_errreply){.tag = m->tag, .code = B2S_E_NOMEM,
                  .flags = B2S_WIRE_ERROR_CLOSED_SESSION,
                  .ref_type = m->type});
    return;
  }
  s->sock = in->sock;
  s->fd = b2sd_peer_fd(&in->hdr);
  s->rid_len = zmq_msg_size(&in->rid);
  memcpy(s->rid, zmq_msg_data(&in->rid), s->rid_len);
  s->id = ++srv->next_session_id;
  s->version = m->version;       /* dispatch capped it at what we speak */
  memcpy(s->name, m->hello.name.ptr ? m->hello.name.ptr : "", m->hello.name.len);
  s->pid = m->hello.pid;
  if (m->hello.ping_ms) {
    uint64_t t = (uint64_t)m->hello.ping_ms * 3;
    s->timeout_ms = (uint32_t)(t < 3000 ? 3000 : t > 3600000 ? 3600000 : t);
  }
  s->last_ns = b2sd_now_ns();
  s->next_handle = s->next_follow = 1;
  s->next = srv->sessions;
  srv->sessions = s;
  srv->nsessions++;
  b2s_wire_msg w;
  b2s_wire_init(&w, B2S_WIRE_WELCOME);
  w.tag = m->tag;
  int64_t mb = srv->dcfg.max_buffer;
  w.welcome.max_buffer = (uint32_t)(mb > UINT32_MAX ? UINT32_MAX : mb);
  w.welcome.timeout_ms = s->timeout_ms;
  w.welcome.session_id = s->id;
  /* a version-1 session keeps the version-1 WELCOME byte for byte */
  w.welcome.version_min = B2S_WIRE_VERSION;
  w.welcome.version_max = s->version > B2S_WIRE_VERSION ? B2S_WIRE_VERSION_MAX
                                                        : B2S_WIRE_VERSION;
  w.welcome.server = b2s_wire_cstr(B2SD_NAME " " B2SD_VERSION);
  /* shared memory only where the peer is on this machine */
  s->shm = strncmp(srv->dcfg.listen[s->sock], "ipc://", 6) == 0;
  if (s->shm)
    w.flags |= B2S_WIRE_WELCOME_SHM;
  b2sd_send(srv, s, &w, NULL, 0);
  LOG_I("session %u: hello from '%s' pid %u, protocol version %u", s->id,
        s->name, s->pid, s->version);
}

static void on_stats(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m) {
  char name[B2S_STREAM_NAME_MAX + 1] = "";
  b2sd_stream *st = NULL;
  if (m->stats.stream.len) {
    if (b2sd_cstr_copy(name, sizeof name, m->stats.stream) < 0 ||
        !(st = b2sd_stream_find(srv, name))) {
      b2sd_send_error(srv, s, &(b2sd_errreply){
          .tag = m->tag, .code = B2S_E_NOSTREAM, .ref_type = m->type});
      return;
    }
  }
  char *json = b2sd_stats_json(srv, st);
  if (!json) {
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = B2S_E_NOMEM, .ref_type = m->type});
    return;
  }
  b2s_wire_msg r;
  b2s_wire_init(&r, B2S_WIRE_STATS_REPLY);
  r.tag = m->tag;
  b2sd_send(srv, s, &r, json, strlen(json));
  free(json);
}

static void on_ping(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  b2s_wire_msg r;
  b2s_wire_init(&r, B2S_WIRE_PONG);
  r.tag = m->tag;
  r.pong.nonce = m->ping.nonce;
  r.pong.time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  b2sd_send(srv, s, &r, NULL, 0);
}

/* Decode a header in any version this daemon speaks.  A HELLO of a later
 * version (same layout in every version) is read as our highest: the
 * session then speaks it (PROTOCOL.md 8.1). */
static int decode_header(inmsg *in, b2s_wire_msg *m) {
  const uint8_t *buf = zmq_msg_data(&in->hdr);
  size_t len = zmq_msg_size(&in->hdr);
  int rc = b2s_wire_decode_v(buf, len, B2S_WIRE_VERSION_MAX, m);
  if (rc == B2S_E_PROTO_VERSION && m->type == B2S_WIRE_HELLO &&
      m->version > B2S_WIRE_VERSION_MAX) {
    uint8_t copy[B2S_WIRE_HEADER_MAX];
    memcpy(copy, buf, len);
    copy[4] = B2S_WIRE_VERSION_MAX;     /* the prefix's version byte */
    rc = b2s_wire_decode_v(copy, len, B2S_WIRE_VERSION_MAX, m);
    /* the name must not point into the copy, which goes now */
    if (rc == 0 && m->hello.name.len)
      m->hello.name.ptr = (const char *)buf + ((const uint8_t *)
                          m->hello.name.ptr - copy);
  }
  return rc;
}

/* Whether the frames after the header are the ones m announces.  DATA and
 * a SHM_SUBMIT with a record check theirs per buffer (a missing buffer or
 * record rejects that buffer only). */
static bool frames_ok(const inmsg *in, const b2s_wire_msg *m) {
  if (in->nframes > 4)
    return false;
  if (m->type == B2S_WIRE_DATA)
    return true;
  if (m->type == B2S_WIRE_SHM_SUBMIT &&
      (m->flags & B2S_WIRE_SHM_SUBMIT_RECORD))
    return in->nframes <= 3;     /* header and at most its record */
  return in->nframes - 1 == b2s_wire_msg_frames(m);
}

/* One handler per request type of the list (b2s_wire_types.h): the
 * table below is made from it, so a type added there without its
 * handle_NAME here does not compile. */
typedef void handler(b2sd_server *srv, inmsg *in, b2sd_session *s,
                     const b2s_wire_msg *m);

static zmq_msg_t *payload(inmsg *in) {
  return in->has_payload ? &in->payload : NULL;
}

static void handle_HELLO(b2sd_server *srv, inmsg *in, b2sd_session *s,
                         const b2s_wire_msg *m) {
  on_hello(srv, in, s, m);
}

static void handle_OPEN(b2sd_server *srv, inmsg *in, b2sd_session *s,
                        const b2s_wire_msg *m) {
  b2sd_open_msg(srv, s, m, payload(in));
}

static void handle_META(b2sd_server *srv, inmsg *in, b2sd_session *s,
                        const b2s_wire_msg *m) {
  b2sd_meta_msg(srv, s, m, payload(in));
}

static void handle_DATA(b2sd_server *srv, inmsg *in, b2sd_session *s,
                        const b2s_wire_msg *m) {
  b2sd_data_msg(srv, s, m, payload(in), in->has_extra ? &in->extra : NULL);
}

static void handle_SHM_SUBMIT(b2sd_server *srv, inmsg *in, b2sd_session *s,
                              const b2s_wire_msg *m) {
  b2sd_shm_submit_msg(srv, s, m, payload(in));
}

/* The handlers that need no frame but the header. */
#define HEADER_ONLY_(name, call)                                               \
  static void handle_##name(b2sd_server *srv, inmsg *in, b2sd_session *s,     \
                            const b2s_wire_msg *m) {                           \
    (void)in;                                                                  \
    call;                                                                      \
  }
HEADER_ONLY_(FLUSH, b2sd_flush_close_msg(srv, s, m))
HEADER_ONLY_(CLOSE, b2sd_flush_close_msg(srv, s, m))
HEADER_ONLY_(SHM_ATTACH, b2sd_shm_attach_msg(srv, s, m))
HEADER_ONLY_(FOLLOW, b2sd_follow_msg(srv, s, m))
HEADER_ONLY_(READ, b2sd_read_msg(srv, s, m))
HEADER_ONLY_(UNFOLLOW, b2sd_unfollow_msg(srv, s, m))
HEADER_ONLY_(STATS, on_stats(srv, s, m))
HEADER_ONLY_(PING, on_ping(srv, s, m))
HEADER_ONLY_(BYE, (void)m; session_end(srv, s))
#undef HEADER_ONLY_

static handler *const handlers[B2S_WIRE_FROM_DAEMON] = {
#define B2SD_HANDLER_(name, value, since) [value] = handle_##name,
    B2S_WIRE_REQUESTS(B2SD_HANDLER_)
#undef B2SD_HANDLER_
};

static void dispatch(b2sd_server *srv, inmsg *in) {
  const void *rid = zmq_msg_data(&in->rid);
  size_t rlen = zmq_msg_size(&in->rid);
  b2sd_session *s = session_find(srv, in->sock, rid, rlen);
  b2s_wire_msg m;
  int rc = decode_header(in, &m);
  if (rc == B2S_E_PROTO_VERSION) {
    char text[96];
    snprintf(text, sizeof text,
             "protocol version %u not supported; this daemon speaks %d to %d",
             m.version, B2S_WIRE_VERSION, B2S_WIRE_VERSION_MAX);
    /* in version 1 whatever the session's: the one layout every client
     * can read (PROTOCOL.md section 8) */
    if (s)
      session_end(srv, s);
    error_raw(srv, in->sock, rid, rlen, B2S_WIRE_VERSION,
              &(b2sd_errreply){.tag = m.tag, .code = rc,
                  .flags = B2S_WIRE_ERROR_CLOSED_SESSION,
                  .ref_type = m.type < 0x80 ? m.type : 0,
                  .ref_index = B2S_WIRE_VERSION + 256u * B2S_WIRE_VERSION_MAX,
                  .text = text});
    return;
  }
  uint8_t rtype = m.type < 0x80 ? m.type : 0;
  uint8_t v = s ? s->version : m.version;
  if (rc < 0) {
    error_raw(srv, in->sock, rid, rlen, v,
              &(b2sd_errreply){.tag = m.tag, .code = B2S_E_PROTO,
                  .ref_type = rtype, .text = "malformed header"});
    return;
  }
  if (m.type & B2S_WIRE_FROM_DAEMON) {
    error_raw(srv, in->sock, rid, rlen, v,
              &(b2sd_errreply){.tag = m.tag, .code = B2S_E_PROTO,
                  .text = "daemon-side message type"});
    return;
  }
  if (m.type != B2S_WIRE_HELLO && !s) {
    error_raw(srv, in->sock, rid, rlen, v,
              &(b2sd_errreply){.tag = m.tag, .code = B2S_E_PROTO,
                  .flags = B2S_WIRE_ERROR_CLOSED_SESSION, .ref_type = rtype,
                  .text = "no session: HELLO first"});
    return;
  }
  /* a session speaks its own version only; a HELLO starts a new one */
  if (s && m.type != B2S_WIRE_HELLO && m.version != s->version) {
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m.tag, .code = B2S_E_PROTO, .ref_type = rtype,
        .text = "message in another protocol version than the session's"});
    return;
  }
  if (s) {
    s->last_ns = b2sd_now_ns();
    int fd = b2sd_peer_fd(&in->hdr);
    if (fd >= 0)
      s->fd = fd;              /* a reconnection handed over (same id) */
  }
  /* a payload frame where none belongs is refused even when empty */
  if (!frames_ok(in, &m)) {
    error_raw(srv, in->sock, rid, rlen, v,
              &(b2sd_errreply){.tag = m.tag, .code = B2S_E_PROTO,
                  .ref_type = rtype, .text = "wrong number of frames"});
    return;
  }
  handler *h = m.type < B2S_WIRE_FROM_DAEMON ? handlers[m.type] : NULL;
  if (h != NULL)
    h(srv, in, s, &m);
  else
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m.tag, .code = B2S_E_PROTO, .ref_type = rtype});
}

/* Read up to RECV_BATCH messages from one socket; true when it stopped
 * at the bound, not at an empty socket. */
static bool recv_batch(b2sd_server *srv, int sock) {
  void *z = srv->sockets[sock];
  for (int n = 0; n < RECV_BATCH; n++) {
    inmsg in = {.sock = sock};
    zmq_msg_init(&in.rid);
    zmq_msg_init(&in.hdr);
    zmq_msg_init(&in.payload);
    zmq_msg_init(&in.extra);
    if (zmq_msg_recv(&in.rid, z, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&in.rid);
      zmq_msg_close(&in.hdr);
      zmq_msg_close(&in.payload);
      zmq_msg_close(&in.extra);
      return false;
    }
    in.nframes = 1;
    if (zmq_msg_more(&in.rid) && zmq_msg_recv(&in.hdr, z, 0) >= 0)
      in.nframes++;
    if (in.nframes == 2 && zmq_msg_more(&in.hdr) &&
        zmq_msg_recv(&in.payload, z, 0) >= 0) {
      in.nframes++;
      in.has_payload = true;
    }
    if (in.nframes == 3 && zmq_msg_more(&in.payload) &&
        zmq_msg_recv(&in.extra, z, 0) >= 0) {
      in.nframes++;
      in.has_extra = true;
    }
    bool more = in.nframes == 4 && zmq_msg_more(&in.extra);
    while (more) {              /* extra frames: discard, counted */
      zmq_msg_t x;
      zmq_msg_init(&x);
      zmq_msg_recv(&x, z, 0);
      more = zmq_msg_more(&x);
      zmq_msg_close(&x);
      in.nframes++;
    }
    if (in.nframes >= 2 && zmq_msg_size(&in.hdr) <= B2S_WIRE_HEADER_MAX)
      dispatch(srv, &in);
    else if (in.nframes >= 2)
      error_raw(srv, sock, zmq_msg_data(&in.rid), zmq_msg_size(&in.rid),
                B2S_WIRE_VERSION, &(b2sd_errreply){
                    .code = B2S_E_PROTO, .text = "header frame too long"});
    zmq_msg_close(&in.rid);
    zmq_msg_close(&in.hdr);
    zmq_msg_close(&in.payload);
    zmq_msg_close(&in.extra);
  }
  return true;
}

/* ---- the scan after progress -------------------------------------------------- */

/* A stream that failed ends every handle and follow on it; ref_type says
 * which of the two ref_id names (OPEN: a handle, FOLLOW: a follow). */
static void stream_failed(b2sd_server *srv, b2sd_stream *st, int code) {
  while (st->handles)
    b2sd_handle_close_ref(srv, st->handles, 0, code, B2S_WIRE_OPEN, 0);
  while (st->follows) {
    b2sd_follow *f = st->follows;
    b2sd_send_error(srv, f->sess, &(b2sd_errreply){
        .code = code, .flags = B2S_WIRE_ERROR_CLOSED_REF,
        .ref_type = B2S_WIRE_FOLLOW, .ref_id = f->id, .ref_index = f->next});
    b2sd_follow_remove(f);
  }
}

/* Returns true when something was held back and wants a retry soon. */
static bool scan(b2sd_server *srv) {
  bool retry = b2sd_reads_turn(srv);
  /* relaxed: an approximate bound, as in b2sd_buffer_accept; pairs with
   * the fetch_add there and the fetch_subs of b2sd_job_free and
   * b2sd_chunk_done */
  bool memory_ok = atomic_load_explicit(&srv->inflight_bytes,
                                        memory_order_relaxed) <
                   b2sd_memory_headroom(srv);
  for (b2sd_stream *st = srv->streams; st; st = st->next) {
    b2sd_progress p;
    b2sd_progress_load(st, &p);
    if (p.failed) {
      stream_failed(srv, st, p.failed);
      continue;
    }
    if (st->dist) {
      b2sd_dist_conflicts(srv, st);
      b2sd_dist_gone_tick(st);
    }
    for (b2sd_handle *h = st->handles, *nx; h; h = nx) {
      nx = h->next_st;
      if (!h->sess->dead)
        b2sd_handle_progress(srv, h, p.taken, p.written, p.durable,
                             memory_ok);
    }
    retry |= b2sd_follow_scan(srv, st);
  }
  b2sd_retire_turn(srv);        /* ended series' streams, step by step */
  return retry;
}

/* A shared-memory producer that died without a word: its process is gone,
 * so is its session. */
static bool session_producer_dead(const b2sd_session *s) {
  for (const b2sd_handle *h = s->handles; h; h = h->next_s)
    if (b2sd_seg_producer_dead(h->seg))
      return true;
  return false;
}

static bool session_has_segment(const b2sd_session *s) {
  for (const b2sd_handle *h = s->handles; h; h = h->next_s)
    if (h->seg)
      return true;
  return false;
}

static void sweep_sessions(b2sd_server *srv) {
  uint64_t now = b2sd_now_ns();
  for (b2sd_session *s = srv->sessions, *nx; s; s = nx) {
    nx = s->next;
    if (session_producer_dead(s)) {
      LOG_W("session %u: producer pid %u died; its slots are reclaimed",
            s->id, s->pid);
    } else if (s->dead && session_has_segment(s)) {
      LOG_W("session %u: producer pid %u died or dropped its connection; "
            "its slots are reclaimed", s->id, s->pid);
    } else if (s->dead) {
      LOG_I("session %u: peer gone", s->id);
    } else if (s->timeout_ms &&
               now - s->last_ns > (uint64_t)s->timeout_ms * 1000000u) {
      LOG_I("session %u: silent for %u ms, ended", s->id, s->timeout_ms);
    } else {
      continue;
    }
    srv->sessions_reclaimed++;
    session_end(srv, s);
  }
}

/* ---- socket options -------------------------------------------------------- */

/* A connection that does not finish its handshake (CurveZMQ included) is
 * dropped after HANDSHAKE_MS; a tcp:// peer that stops answering ZMTP
 * heartbeats (libzmq answers them itself) after HEARTBEAT_TIMEOUT_MS, and
 * its session ends with it (peers.h). */
#define HANDSHAKE_MS 10000
#define HEARTBEAT_MS 10000
#define HEARTBEAT_TIMEOUT_MS 30000

static void socket_peer_timeouts(void *z, const char *endpoint) {
  int hs = HANDSHAKE_MS, ivl = HEARTBEAT_MS, tmo = HEARTBEAT_TIMEOUT_MS;
  zmq_setsockopt(z, ZMQ_HANDSHAKE_IVL, &hs, sizeof hs);
  if (strncmp(endpoint, "tcp://", 6) == 0) {
    zmq_setsockopt(z, ZMQ_HEARTBEAT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(z, ZMQ_HEARTBEAT_TIMEOUT, &tmo, sizeof tmo);
  }
}

/* Refuse a message larger than any buffer in the transport, before its
 * bytes are received: the peer is disconnected.  libzmq applies it to
 * connections made from now on, so a reload only ever raises it (a
 * lowered max_buffer is enforced per buffer, B2S_E_OVERSIZE); a
 * connection older than a reload that raised max_buffer keeps the old
 * bound until it reconnects. */
static void socket_max_message(void *z, int64_t max_buffer) {
  int64_t most = max_buffer + B2S_WIRE_HEADER_MAX;
  zmq_setsockopt(z, ZMQ_MAXMSGSIZE, &most, sizeof most);
}

/* ---- reload --------------------------------------------------------------- */

/* One changed key, as its schema row says it reloads (b2s_config.h). */
typedef struct reload_log {
  const char *prefix;            /* "streams.raw.", "templates.t.", "" */
  bool made_only;                /* a template: streams made from it */
} reload_log;

static void reload_tell(void *arg, const b2s_reload_change *ch) {
  const reload_log *r = arg;
  const char *ap = ch->applies ? ch->applies : "";
  const char *sep = ch->applies ? " (" : "", *end = ch->applies ? ")" : "";
  if (r->made_only)
    LOG_I("reload: %s%s: applies to streams made from the template from "
          "now on; the running ones keep theirs", r->prefix, ch->key);
  else if (ch->how == B2S_RELOAD_AT_ONCE)
    LOG_I("reload: %s%s: applies at once%s%s", r->prefix, ch->key,
          ch->applies ? ", " : "", ap);
  else if (ch->how == B2S_RELOAD_NEXT_FRAME)
    LOG_I("reload: %s%s: applies to the next frame%s%s%s", r->prefix,
          ch->key, sep, ap, end);
  else
    LOG_W("reload: %s%s: needs a restart, kept at %s%s%s%s", r->prefix,
          ch->key, ch->kept, sep, ap, end);
}

/* The daemon's keys: the at-once ones into srv->dcfg, then what follows
 * them (the chunk pool, the sockets' message bound, the log level). */
static void reload_daemon(b2sd_server *srv, const b2s_config *cfg) {
  const b2s_daemon_cfg *d = b2s_config_daemon(cfg);
  reload_log top = {.prefix = ""};
  b2s_daemon_cfg_reload(&srv->dcfg, d, reload_tell, &top);
  b2s_cluster_cfg_reload(b2s_config_cluster(srv->cfg),
                         b2s_config_cluster(cfg), reload_tell,
                         &(reload_log){.prefix = "cluster."});
  b2sd_auth_reload(srv->auth, d);
  b2sd_chunkpool_set_max(srv->chunks, srv->dcfg.memory_limit / 4);
  if (srv->dcfg.max_buffer > srv->max_message) {
    srv->max_message = srv->dcfg.max_buffer;
    for (int i = 0; i < srv->nsockets; i++)
      socket_max_message(srv->sockets[i], srv->dcfg.max_buffer);
  }
  b2sd_log_set_level(srv->dcfg.log_level);
}

/* Sources start with the daemon: a change waits for a restart. */
static void reload_sources(const b2s_config *old, const b2s_config *cfg) {
  size_t n, nold;
  const b2s_source_cfg *sc = b2s_config_sources(cfg, &n);
  const b2s_source_cfg *was = b2s_config_sources(old, &nold);
  if (n != nold) {
    LOG_W("reload: sources: needs a restart, kept at %zu source%s", nold,
          nold == 1 ? "" : "s");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "sources[%zu].", i);
    b2s_source_cfg_reload(&was[i], &sc[i], reload_tell,
                          &(reload_log){.prefix = prefix});
  }
}

/* Templates: streams made from them from now on take the new ones. */
static void reload_templates(const b2s_config *old, const b2s_config *cfg) {
  size_t n;
  const b2s_stream_cfg *t = b2s_config_templates(cfg, &n);
  for (size_t i = 0; i < n; i++) {
    const b2s_stream_cfg *was = b2s_config_template_find(old, t[i].name);
    char prefix[B2S_STREAM_NAME_MAX + 16];
    snprintf(prefix, sizeof prefix, "templates.%s.", t[i].name);
    b2s_stream_cfg next;
    if (was)
      b2s_stream_cfg_reload(was, &t[i], &next, reload_tell,
                            &(reload_log){.prefix = prefix, .made_only = true});
    else
      LOG_I("reload: templates.%s: new; streams made from it from now on "
            "get it", t[i].name);
  }
}

/* A stream of the file: a running one takes each changed key as its row
 * says; a new one opens. */
static void reload_stream(b2sd_server *srv, const b2s_stream_cfg *sc) {
  b2sd_stream *st = b2sd_stream_find(srv, sc->name);
  if (st) {
    b2s_stream_cfg cur, next;
    b2sd_stream_cfg_get(st, &cur);
    char prefix[B2S_STREAM_NAME_MAX + 16];
    snprintf(prefix, sizeof prefix, "streams.%s.", st->name);
    if (b2s_stream_cfg_reload(&cur, sc, &next, reload_tell,
                              &(reload_log){.prefix = prefix}) > 0)
      b2sd_stream_reconfigure(st, &next);
    return;
  }
  /* one writer per frame: a stream made from a template may own it */
  for (st = srv->streams; st; st = st->next)
    if (strcmp(st->path, sc->full_path) == 0)
      break;
  if (st) {
    LOG_E("reload: stream %s: %s is the frame of running stream %s; not "
          "added", sc->name, sc->full_path, st->name);
    return;
  }
  if (b2sd_stream_open(srv, sc, &st) < 0)
    return;
  if (b2sd_stream_start(st) < 0) {
    b2sd_stream_free(st);
    return;
  }
  st->next = srv->streams;
  srv->streams = st;
  srv->nstreams++;
  LOG_I("reload: stream %s added", st->name);
}

static void reload(b2sd_server *srv) {
  b2s_errdetail ed;
  b2s_config *cfg = NULL;
  int rc = b2s_config_load(srv->config_path, &cfg, &ed);
  if (rc < 0) {
    LOG_E("reload: %s; keeping the running configuration", ed.text);
    return;
  }
  reload_daemon(srv, cfg);
  reload_sources(srv->cfg, cfg);
  reload_templates(srv->cfg, cfg);
  size_t n;
  const b2s_stream_cfg *sc = b2s_config_streams(cfg, &n);
  /* a configured stream the file no longer has runs on */
  size_t nold;
  const b2s_stream_cfg *was = b2s_config_streams(srv->cfg, &nold);
  for (size_t i = 0; i < nold; i++)
    if (!b2s_config_stream_find(cfg, was[i].name) &&
        b2sd_stream_find(srv, was[i].name))
      LOG_W("reload: streams.%s: not in the file any more; runs on until "
            "a restart", was[i].name);
  b2s_config *old = srv->cfg;
  srv->cfg = cfg;
  for (size_t i = 0; i < n; i++)
    reload_stream(srv, &sc[i]);
  b2s_config_free(old);
  LOG_I("configuration reloaded from %s", srv->config_path);
}

/* The acquisitions' event hook (registry.h): into the ring.  Data over
 * an event's bound is replaced by the acquisition's id, with a warning,
 * so that no event goes missing from the sequence. */
static void post_event(void *arg, const char *type, const char *id,
                       const char *data) {
  b2sd_events *ev = arg;
  if (b2sd_events_post(ev, type, id, data) >= 0)
    return;
  char small[160];
  snprintf(small, sizeof small, "{\"id\":\"%s\",\"truncated\":true}", id);
  LOG_W("acquisition %s: %s event of %zu bytes is over %d: sent without "
        "its data", id, type, strlen(data), B2SD_EVENT_DATA_MAX);
  (void)b2sd_events_post(ev, type, id, small);
}

/* The events ring, its run's epoch drawn at random, and the run's first
 * event (docs/ACQUISITIONS.md 10). */
static int events_start(b2sd_server *srv) {
  uint64_t epoch;
  if (getrandom(&epoch, sizeof epoch, 0) != sizeof epoch)
    epoch = b2sd_wall_ns() ^ (uint64_t)getpid() << 32;
  int32_t held = srv->dcfg.acq.events_held;   /* its default without
                                                 acquisitions: */
  srv->events = b2sd_events_new(held > 0 ? (size_t)held : B2SD_EVENTS_HELD,
                                epoch);
  if (!srv->events)
    return -ENOMEM;
  char data[128];
  snprintf(data, sizeof data, "{\"server\":\"b2streamd %s\","
           "\"interrupted\":[]}", B2SD_VERSION);
  int64_t rc = b2sd_events_post(srv->events, "started", "", data);
  return rc < 0 ? (int)rc : 0;
}

/* ---- init, run, fini --------------------------------------------------------- */

int b2sd_server_init(b2sd_server *srv, const char *config_path,
                     b2s_config *cfg) {
  srv->config_path = config_path;
  srv->cfg = cfg;
  srv->dcfg = *b2s_config_daemon(cfg);
  srv->sigfd = srv->wakefd = -1;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  srv->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  srv->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (srv->sigfd < 0 || srv->wakefd < 0)
    return -errno;
  srv->nworkers = b2s_daemon_cfg_workers(&srv->dcfg);
  srv->max_message = srv->dcfg.max_buffer;
  b2sd_shm_cleanup();
  int rc = b2sd_access_init(srv);
  /* idle chunk buffers: up to a quarter of memory_limit beside it
   * (chunkpool.c says why so many) */
  if (rc == 0)
    rc = b2sd_chunkpool_new(srv->dcfg.memory_limit / 4, &srv->chunks);
  if (rc == 0)
    rc = b2sd_pool_new(srv, srv->nworkers, &srv->pool);
  if (rc == 0)
    rc = b2sd_readers_new(srv, B2SD_READER_THREADS, &srv->readers);
  if (rc < 0)
    return rc;
  /* before the writers start: a distributed stream's writer makes its
   * own socket in this context (thread creation publishes the pointer) */
  srv->zctx = zmq_ctx_new();
  if (!srv->zctx)
    return -errno;
  size_t n;
  const b2s_stream_cfg *sc = b2s_config_streams(cfg, &n);
  for (size_t i = 0; i < n; i++) {
    b2sd_stream *st;
    rc = b2sd_stream_open(srv, &sc[i], &st);
    if (rc < 0)
      return rc;
    st->next = srv->streams;
    srv->streams = st;
    srv->nstreams++;
    rc = b2sd_stream_start(st);
    if (rc < 0)
      return rc;
  }
  if ((rc = b2sd_sources_new(srv)) < 0)
    return rc;
  if (srv->dcfg.curve.enabled &&
      (rc = b2sd_auth_new(srv->zctx, &srv->dcfg, &srv->auth)) < 0)
    return rc;
  for (int i = 0; i < srv->dcfg.nlisten; i++) {
    void *z = zmq_socket(srv->zctx, ZMQ_ROUTER);
    if (!z) {
      rc = -errno;
      LOG_E("cannot make a socket: %s", zmq_strerror(errno));
      return rc;
    }
    int one = 1, hwm = 100000, linger = 2000;
    socket_max_message(z, srv->dcfg.max_buffer);
    socket_peer_timeouts(z, srv->dcfg.listen[i]);
    zmq_setsockopt(z, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(z, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
    zmq_setsockopt(z, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(z, ZMQ_LINGER, &linger, sizeof linger);
    srv->sockets[srv->nsockets++] = z;
    const char *ep = srv->dcfg.listen[i];
    if ((rc = b2sd_endpoint_claim(ep)) < 0)
      return rc;
    bool curve = srv->auth && strncmp(ep, "tcp://", 6) == 0;
    if ((rc = b2sd_peers_watch(srv, i, curve)) < 0) {
      LOG_E("cannot monitor %s: %s", ep, zmq_strerror(-rc));
      return rc;
    }
    if (curve && (rc = b2sd_auth_server_socket(srv->auth, z, ep)) < 0) {
      LOG_E("cannot make %s a CURVE server: %s", ep, zmq_strerror(-rc));
      return rc;
    }
    if (!srv->auth && strncmp(ep, "tcp://", 6) == 0)
      LOG_W("listen %s: plain tcp:// without CURVE: anyone who reaches the "
            "port may read and write every stream, unencrypted", ep);
    if (zmq_bind(z, ep) < 0) {
      rc = -errno;
      LOG_E("cannot bind %s: %s", ep, zmq_strerror(errno));
      return rc;
    }
    b2sd_endpoint_bound(ep);
    if (strncmp(ep, "ipc://", 6) == 0 &&
        (rc = b2sd_access_socket(srv, ep + 6)) < 0)
      return rc;
    LOG_I("listening on %s", ep);
  }
  if (srv->auth && (rc = b2sd_auth_start(srv->auth)) < 0)
    return rc;
  /* the live view and the events first: the listener serves them */
  if ((rc = b2sd_live_start(srv, &srv->live)) < 0 ||
      (rc = events_start(srv)) < 0)
    return rc;
  srv->acq = b2sd_acq_new(srv);
  if (srv->dcfg.acq.enabled && !srv->acq)
    return -ENOMEM;
  if (srv->acq && !srv->dcfg.http.token_file[0])
    LOG_W("acquisitions: no http.token_file: anyone who reaches %s (any "
          "local user) may arm acquisitions the daemon writes under its "
          "roots (acquisitions.anonymous)", srv->dcfg.http.listen);
  b2sd_acq_set_hook(srv->acq, post_event, srv->events);
  return b2sd_http_start(srv, &srv->http);
}

static bool drained(b2sd_server *srv) {
  if (b2sd_pool_queued(srv->pool))
    return false;
  for (b2sd_stream *st = srv->streams; st; st = st->next) {
    if (b2sd_progress_failed(st))
      continue;
    if (b2sd_progress_durable(st) < st->seq_next)
      return false;
  }
  return true;
}

static int on_signal(b2sd_server *srv) {
  struct signalfd_siginfo si;
  int stop = 0;
  while (read(srv->sigfd, &si, sizeof si) == sizeof si) {
    if (si.ssi_signo == SIGHUP) {
      LOG_I("SIGHUP: reloading %s", srv->config_path);
      b2s_notify_reloading();
      reload(srv);
      b2s_notify_ready("serving");
    } else if (!srv->draining) {
      LOG_I("signal %u: draining", si.ssi_signo);
      b2s_notify_stopping();
      srv->draining = true;
      for (b2sd_stream *st = srv->streams; st; st = st->next) {
        if (b2sd_life_retiring(st->life))
          continue;                  /* drained when its series ended */
        b2sd_stream_drain_mark(st);  /* held frame numbers are stored */
        b2sd_stream_flush(st, st->seq_next);
      }
      stop = 1;
    }
  }
  return stop;
}

/* ---- the loop ------------------------------------------------------------ */

/* What the loop waits on (ioloop.h), by index in its set: each ROUTER
 * socket and its monitor, the signalfd, the eventfd, each source. */
typedef struct loop_set {
  b2sd_ioloop io;
  int sock[B2S_CONFIG_MAX_LISTEN], mon[B2S_CONFIG_MAX_LISTEN];
  int sig, wake;
  int src[B2S_CONFIG_MAX_SOURCES];
  size_t nsrc;
} loop_set;

_Static_assert(2 * B2S_CONFIG_MAX_LISTEN + 2 + B2S_CONFIG_MAX_SOURCES <=
                   B2SD_IOLOOP_MAX, "the loop's wait set holds every entry");

static int loop_add(loop_set *ls, void *z, int fd, int *at) {
  *at = b2sd_ioloop_add(&ls->io, z, fd);
  if (*at < 0)
    LOG_E("the I/O loop cannot wait on a descriptor: %s", strerror(-*at));
  return *at < 0 ? *at : 0;
}

static int loop_set_init(b2sd_server *srv, loop_set *ls) {
  int rc = b2sd_ioloop_init(&ls->io);
  for (int i = 0; rc == 0 && i < srv->nsockets; i++) {
    rc = loop_add(ls, srv->sockets[i], -1, &ls->sock[i]);
    ls->mon[i] = -1;
    if (rc == 0 && srv->monitors[i])
      rc = loop_add(ls, srv->monitors[i], -1, &ls->mon[i]);
  }
  if (rc == 0)
    rc = loop_add(ls, NULL, srv->sigfd, &ls->sig);
  if (rc == 0)
    rc = loop_add(ls, NULL, srv->wakefd, &ls->wake);
  ls->nsrc = b2sd_sources_count(srv);
  for (size_t i = 0; rc == 0 && i < ls->nsrc; i++)
    rc = loop_add(ls, b2sd_sources_socket(srv, i), -1, &ls->src[i]);
  return rc;
}

/* The signalfd and the eventfd, when they fired (both level-triggered:
 * read, they are quiet until the next signal or wakeup). */
static void loop_fds(b2sd_server *srv, loop_set *ls) {
  if (b2sd_ioloop_ready(&ls->io, ls->sig)) {
    b2sd_ioloop_set(&ls->io, ls->sig, false);
    on_signal(srv);
  }
  if (b2sd_ioloop_ready(&ls->io, ls->wake)) {
    b2sd_ioloop_set(&ls->io, ls->wake, false);
    uint64_t v;
    ssize_t r = read(srv->wakefd, &v, sizeof v);
    (void)r;
  }
}

/* The monitors' events, when one fired: b2sd_peers_turn reads them all
 * empty. */
static void loop_peers(b2sd_server *srv, loop_set *ls) {
  bool any = false;
  for (int i = 0; i < srv->nsockets; i++) {
    any |= b2sd_ioloop_ready(&ls->io, ls->mon[i]);
    b2sd_ioloop_set(&ls->io, ls->mon[i], false);
  }
  if (any)
    b2sd_peers_turn(srv);
}

/* Before a wait: a ROUTER socket sent on since it was read may have
 * input whose edge the send took (ioloop.h); ZMQ_EVENTS says.  True when
 * one has. */
static bool loop_sent(b2sd_server *srv, loop_set *ls) {
  bool any = false;
  for (int i = 0; i < srv->nsockets; i++) {
    if (!srv->sent_on[i])
      continue;
    srv->sent_on[i] = false;
    int ev = 0;
    size_t len = sizeof ev;
    if (zmq_getsockopt(srv->sockets[i], ZMQ_EVENTS, &ev, &len) == 0 &&
        (ev & ZMQ_POLLIN)) {
      b2sd_ioloop_set(&ls->io, ls->sock[i], true);
      any = true;
    }
  }
  return any;
}

/* The ROUTER sockets that fired or were left unread.  True when one was
 * left with more than a batch. */
static bool loop_routers(b2sd_server *srv, loop_set *ls) {
  bool more = false;
  for (int i = 0; i < srv->nsockets; i++) {
    if (!b2sd_ioloop_ready(&ls->io, ls->sock[i]))
      continue;
    bool left = recv_batch(srv, i);
    b2sd_ioloop_set(&ls->io, ls->sock[i], left);
    more |= left;
  }
  return more;
}

/* The sources that fired or were left unread.  *more: one was left with
 * more than a batch; *held: one was not read because the daemon drains
 * (its input counts as traffic, as the drain wants). */
static void loop_sources(b2sd_server *srv, loop_set *ls, bool *more,
                         bool *held) {
  for (size_t i = 0; i < ls->nsrc; i++) {
    if (!b2sd_ioloop_ready(&ls->io, ls->src[i]))
      continue;
    b2sd_source_left left = b2sd_sources_recv(srv, i);
    b2sd_ioloop_set(&ls->io, ls->src[i], left != B2SD_SOURCE_EMPTY);
    *more |= left == B2SD_SOURCE_MORE;
    *held |= left == B2SD_SOURCE_HELD && srv->draining;
  }
}

/* The timers of a turn: the service manager's watchdog, the sweep of
 * sessions and sources. */
typedef struct loop_timers {
  uint64_t last_sweep, last_dog, dog_usec;
} loop_timers;

static void loop_timers_turn(b2sd_server *srv, loop_timers *t, uint64_t now) {
  if (t->dog_usec && now - t->last_dog > t->dog_usec * 1000u / 3) {
    b2s_notify_watchdog();       /* the loop turns: the daemon is alive */
    t->last_dog = now;
  }
  if (now - t->last_sweep > 200000000u) {
    sweep_sessions(srv);
    b2sd_sources_tick(srv, now);
    t->last_sweep = now;
  }
}

/* While draining: whether the loop ends after this turn.  done only after
 * a wait that saw nothing for its whole timeout: every message that
 * reached a socket before the drain ended was read and answered (a DATA
 * while draining gets its ERROR at once); traffic that never stops counts
 * as held replies, which the drain abandons after its grace. */
static bool loop_drain_end(b2sd_drain *drain, uint64_t now, bool done,
                           bool busy) {
  b2sd_drain_step step = b2sd_drain_next(drain, now, done, busy);
  if (step == B2SD_DRAIN_ABANDON)
    LOG_W("drain: everything is on disk; replies to peers that do not "
          "read are abandoned");
  if (step == B2SD_DRAIN_STUCK)
    LOG_E("drain: still busy after 60 s, stopping anyway");
  return step == B2SD_DRAIN_DONE || step == B2SD_DRAIN_ABANDON ||
         step == B2SD_DRAIN_STUCK;
}

/* One wait and what follows it.  *more: a socket was left with input, so
 * the next wait only looks. */
static int loop_turn(b2sd_server *srv, loop_set *ls, bool *retry, bool *more,
                     bool *busy) {
  int timeout = *retry ? 10 : srv->draining ? 20 : 500;
  if (b2sd_sources_arm(srv))
    timeout = 1;                 /* the workers make room within it */
  *more |= loop_sent(srv, ls);
  int rc = b2sd_ioloop_wait(&ls->io, *more ? 0 : timeout);
  if (rc < 0) {
    LOG_E("epoll_wait: %s", strerror(-rc));
    return rc;
  }
  loop_fds(srv, ls);
  /* acq_rel: pairs with the exchange in b2sd_wake; cleared before the
   * scan so progress published after it wakes us again */
  atomic_exchange_explicit(&srv->wake_pending, 0, memory_order_acq_rel);
  loop_peers(srv, ls);
  bool held = false;
  *busy = rc > 0 || *more;
  *more = loop_routers(srv, ls);
  loop_sources(srv, ls, more, &held);
  *busy |= held;
  return 0;
}

int b2sd_server_run(b2sd_server *srv) {
  loop_set ls;
  int rc = loop_set_init(srv, &ls);
  bool retry = false, more = false, busy = false;
  b2sd_drain drain = {0};
  loop_timers t = {0};
  if (b2s_notify_watchdog_usec(&t.dog_usec) < 0)
    t.dog_usec = 0;
  while (rc == 0 && (rc = loop_turn(srv, &ls, &retry, &more, &busy)) == 0) {
    /* observed before the scan, so the scan sends every last ACK */
    bool done = srv->draining && drained(srv);
    retry = scan(srv);
    b2sd_acq_turn(srv->acq);     /* states, ends, events */
    b2sd_http_turn(srv->http);   /* a snapshot, when a reader asked; the
                                    control API's requests */
    b2sd_live_turn(srv->live);   /* the streams' table, when due */
    uint64_t now = b2sd_now_ns();
    loop_timers_turn(srv, &t, now);
    if (srv->draining && loop_drain_end(&drain, now, done, retry || busy))
      break;
  }
  b2sd_ioloop_fini(&ls.io);
  return rc;
}

void b2sd_server_fini(b2sd_server *srv) {
  b2sd_sources_close(srv);         /* open series: held images stored */
  b2sd_sources_free(srv);
  b2sd_http_stop(srv->http);     /* its requests end before the rest */
  srv->http = NULL;
  b2sd_live_stop(srv->live);     /* after the requests that read it */
  srv->live = NULL;
  b2sd_events_free(srv->events);
  srv->events = NULL;
  /* workers first (they finish queued jobs), then the writers */
  b2sd_pool_free(srv->pool);
  srv->pool = NULL;
  b2sd_readers_free(srv->readers);  /* before the streams they read */
  srv->readers = NULL;
  /* the sessions' reads count on their streams (nreads): let them go
   * while the streams are there */
  for (b2sd_session *s = srv->sessions; s; s = s->next)
    b2sd_reads_session_end(srv, s);
  while (srv->streams) {
    b2sd_stream *st = srv->streams;
    srv->streams = st->next;
    while (st->handles)
      b2sd_handle_free(st->handles);
    while (st->follows)
      b2sd_follow_remove(st->follows);
    b2sd_stream_free(st);
  }
  b2sd_acq_free(srv->acq);       /* its plans outlived their writers */
  srv->acq = NULL;
  b2sd_chunkpool_free(srv->chunks);  /* the writers gave every chunk back */
  srv->chunks = NULL;
  while (srv->sessions) {
    b2sd_session *s = srv->sessions;
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .code = B2S_E_CLOSED, .flags = B2S_WIRE_ERROR_CLOSED_SESSION,
        .text = "daemon stopping"});
    session_end(srv, s);
  }
  b2sd_peers_fini(srv);
  /* queued replies get a short linger: a peer that does not read must
   * not hold the stop (zmq_ctx_term waits for them) */
  int linger = STOP_LINGER_MS;
  for (int i = 0; i < srv->nsockets; i++) {
    zmq_setsockopt(srv->sockets[i], ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(srv->sockets[i]);
  }
  b2sd_auth_free(srv->auth);     /* its sockets too, before the term */
  srv->auth = NULL;
  if (srv->zctx)
    zmq_ctx_term(srv->zctx);
  if (srv->sigfd >= 0)
    close(srv->sigfd);
  if (srv->wakefd >= 0)
    close(srv->wakefd);
  for (int i = 0; i < srv->dcfg.nlisten; i++)
    b2sd_endpoint_release(srv->dcfg.listen[i]);
  b2s_config_free(srv->cfg);
}

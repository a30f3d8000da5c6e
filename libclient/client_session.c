/* Client sessions: connecting, the message pump, requests and replies,
 * errors, PING and STATS.
 *
 * Everything the daemon sends arrives on the one DEALER socket.  sc_pump
 * reads one message, lets the producer or consumer it names update its
 * state, and parks it as the reply when its tag is the one the current
 * request waits for; see client_internal.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client_internal.h"
#include "b2s_curve_key.h"

_Static_assert(B2SC_CURVE_KEY_LEN == B2S_CURVE_KEY_Z85_LEN, "one key length");

/* How long b2sc_close waits to hand BYE to the kernel. */
#define SC_LINGER_MS 1000

int64_t sc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t sc_deadline(int timeout_ms) {
  return timeout_ms < 0 ? -1 : sc_now_ms() + timeout_ms;
}

void sc_strcpy(char *dst, size_t cap, b2s_wire_str w) {
  size_t n = w.len < cap - 1 ? w.len : cap - 1;
  if (n > 0)
    memcpy(dst, w.ptr, n);
  dst[n] = '\0';
}

void sc_msg_close(sc_msg *x) {
  zmq_msg_close(&x->hdr);
  if (x->has_payload)
    zmq_msg_close(&x->payload);
  if (x->has_record)
    zmq_msg_close(&x->record);
  x->has_payload = x->has_record = false;
}

const char *b2sc_strerror(int code) { return b2s_strerror(code); }

const char *b2sc_last_error(const b2sc_session *s) {
  return s != NULL ? s->last_error : "";
}

int b2sc_last_error_code(const b2sc_session *s) {
  return s != NULL ? s->last_code : 0;
}

int sc_session_usable(const b2sc_session *s) {
  if (s == NULL)
    return B2S_E_ARG;
  return s->dead ? B2S_E_CLOSED : 0;
}

static void set_error(b2sc_session *s, int code, const char *text) {
  s->last_code = code;
  snprintf(s->last_error, sizeof s->last_error, "%s", text);
}

/* zmq errno to our codes: a closed context or socket is a closed session. */
static int zmq_fail(b2sc_session *s) {
  int e = zmq_errno();
  if (e == EAGAIN)
    return B2S_E_TIMEOUT;
  if (e == EINTR)
    return -EINTR;
  s->dead = B2S_E_CLOSED;
  return B2S_E_CLOSED;
}

int sc_send(b2sc_session *s, const b2s_wire_msg *m, zmq_msg_t *payload) {
  return sc_send_rec(s, m, payload, NULL);
}

int sc_send_rec(b2sc_session *s, const b2s_wire_msg *m, zmq_msg_t *payload,
                zmq_msg_t *record) {
  uint8_t buf[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode_v(m, s->version, buf, sizeof buf);
  if (n < 0)
    return n;
  int timeo = s->timeout_ms;
  zmq_setsockopt(s->sock, ZMQ_SNDTIMEO, &timeo, sizeof timeo);
  bool more = payload != NULL || record != NULL;
  if (zmq_send(s->sock, buf, (size_t)n, more ? ZMQ_SNDMORE : 0) < 0)
    return zmq_fail(s);
  if ((payload != NULL &&
       zmq_msg_send(payload, s->sock, record ? ZMQ_SNDMORE : 0) < 0) ||
      (record != NULL && zmq_msg_send(record, s->sock, 0) < 0)) {
    /* Part of a message went out: the daemon would misread whatever
     * follows, so this session is over. */
    s->dead = B2S_E_CLOSED;
    return B2S_E_CLOSED;
  }
  s->last_send_ms = sc_now_ms();
  return 0;
}

static void send_ping(b2sc_session *s, uint32_t tag) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_PING);
  m.tag = tag;
  m.ping.nonce = (uint64_t)sc_now_ms();
  sc_send(s, &m, NULL);
}

/* An ERROR: remember it, end what it says is ended, tell the owner. */
static void on_error(b2sc_session *s, const b2s_wire_msg *m) {
  for (int r = 0; r < SC_ROLES; r++)
    if (s->role[r] && s->role[r]->error_stale && s->role[r]->error_stale(s, m))
      return;
  char text[B2S_WIRE_TEXT_MAX + 1];
  sc_strcpy(text, sizeof text, m->error.message);
  set_error(s, m->error.code, text);
  s->last_ref_index = m->error.ref_index;
  if (m->flags & B2S_WIRE_ERROR_CLOSED_SESSION)
    s->dead = B2S_E_CLOSED;
  for (int r = 0; r < SC_ROLES; r++)
    if (s->role[r])
      s->role[r]->error(s, m);
}

/* Which role an asynchronous message is for; -1: the session's own. */
static int route(int type) {
  switch (type) {
  case B2S_WIRE_ACK:
  case B2S_WIRE_DROPPED:
  case B2S_WIRE_FLUSHED:
  case B2S_WIRE_CLOSED:
    return SC_ROLE_PRODUCER;
  case B2S_WIRE_NOTIFY:
  case B2S_WIRE_CHUNK:
  case B2S_WIRE_UNFOLLOWED:
    return SC_ROLE_CONSUMER;
  default:
    return -1;
  }
}

void sc_session_role(b2sc_session *s, int which, const sc_role *role) {
  s->role[which] = role;
}

static void dispatch(b2sc_session *s, sc_msg *x) {
  int r = route(x->m.type);
  if (r >= 0 && s->role[r])
    s->role[r]->dispatch(s, x);
  else if (x->m.type == B2S_WIRE_ERROR)
    on_error(s, &x->m);
  if (x->m.tag != 0 && x->m.tag == s->wait_tag && !s->have_reply) {
    s->reply = *x;            /* the zmq_msg_t structures move with it */
    s->have_reply = true;
    return;
  }
  sc_msg_close(x);
}

static void drain_frames(void *sock) {
  int more = 1;
  size_t sz = sizeof more;
  while (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz) == 0 && more) {
    zmq_msg_t junk;
    zmq_msg_init(&junk);
    zmq_msg_recv(&junk, sock, 0);
    zmq_msg_close(&junk);
  }
}

/* Frames after the header: up to two (payload, record).  Returns their
 * count, 3 for "more than two" (drained), or a negative error. */
static int recv_rest(b2sc_session *s, zmq_msg_t *hdr, zmq_msg_t rest[2]) {
  int n = 0;
  for (zmq_msg_t *prev = hdr; zmq_msg_more(prev); prev = &rest[n++]) {
    if (n == 2) {
      drain_frames(s->sock);
      return 3;
    }
    zmq_msg_init(&rest[n]);
    if (zmq_msg_recv(&rest[n], s->sock, 0) < 0) {
      zmq_msg_close(&rest[n]);
      return -1;
    }
  }
  return n;
}

/* Whether the decoded header may come now: the session's version, except
 * for the answers to HELLO (WELCOME names the version; an ERROR may come
 * from a daemon of version 1), and exactly the frames it announces. */
static int check_frames(const b2sc_session *s, const sc_msg *x, int extra) {
  if (!(x->m.type & B2S_WIRE_FROM_DAEMON))
    return B2S_E_PROTO;
  if (x->m.version != s->version && x->m.type != B2S_WIRE_ERROR &&
      x->m.type != B2S_WIRE_WELCOME)
    return B2S_E_PROTO;
  if (b2s_wire_msg_frames(&x->m) != 1 + extra)
    return B2S_E_PROTO;   /* payload and record exactly when due */
  size_t plen = x->has_payload ? zmq_msg_size(&x->payload) : 0;
  return b2s_wire_check_payload(&x->m, plen, SIZE_MAX);
}

/* Receive one whole message that zmq_poll said is there, check and
 * dispatch it.  A message that breaks the protocol is dropped and
 * recorded as B2S_E_PROTO in last_error. */
static int recv_one(b2sc_session *s) {
  sc_msg x = {.has_payload = false};
  zmq_msg_t rest[2];
  zmq_msg_init(&x.hdr);
  if (zmq_msg_recv(&x.hdr, s->sock, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&x.hdr);
    int rc = zmq_fail(s);
    return rc == B2S_E_TIMEOUT ? 0 : rc;
  }
  int extra = recv_rest(s, &x.hdr, rest);
  if (extra < 0) {
    zmq_msg_close(&x.hdr);
    return zmq_fail(s);
  }
  if (extra == 3) {
    for (int k = 0; k < 2; k++)
      zmq_msg_close(&rest[k]);
    zmq_msg_close(&x.hdr);
    set_error(s, B2S_E_PROTO, "message from the daemon with 4 or more frames");
    return 1;
  }
  int rc = b2s_wire_decode_v(zmq_msg_data(&x.hdr), zmq_msg_size(&x.hdr),
                             s->version, &x.m);
  /* frame 2 is the payload when the header has one, else the record */
  bool payload_first = rc == 0 && b2s_wire_msg_has_payload(&x.m);
  for (int k = 0; k < extra; k++) {
    bool is_payload = k == 0 && payload_first;
    zmq_msg_t *dst = is_payload ? &x.payload : &x.record;
    bool *has = is_payload ? &x.has_payload : &x.has_record;
    if (*has) {                        /* a second record: closed below */
      zmq_msg_close(&rest[k]);
      rc = B2S_E_PROTO;
      continue;
    }
    zmq_msg_init(dst);
    zmq_msg_move(dst, &rest[k]);
    zmq_msg_close(&rest[k]);
    *has = true;
  }
  if (rc == 0)
    rc = check_frames(s, &x, extra);
  if (rc < 0) {
    sc_msg_close(&x);
    set_error(s, B2S_E_PROTO, "malformed message from the daemon ignored");
    return 1;
  }
  dispatch(s, &x);
  return 1;
}

/* A CURVE handshake event; true when the handshake failed, which ends the
 * session with B2S_E_AUTH (ZeroMQ would only retry, forever). */
static bool monitor_failed(b2sc_session *s) {
  zmq_msg_t ev;
  zmq_msg_init(&ev);
  int n = zmq_msg_recv(&ev, s->mon, ZMQ_DONTWAIT);
  uint16_t event = 0;
  if (n >= 6)
    memcpy(&event, zmq_msg_data(&ev), sizeof event);
  if (n >= 0 && zmq_msg_more(&ev))
    drain_frames(s->mon);
  zmq_msg_close(&ev);
  if (event != ZMQ_EVENT_HANDSHAKE_FAILED_AUTH &&
      event != ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
      event != ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    return false;
  set_error(s, B2S_E_AUTH,
            event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
                ? "CURVE: the daemon does not authorize this client's key"
                : "CURVE handshake failed: wrong server key, or the endpoint "
                  "does not use CURVE");
  s->dead = B2S_E_AUTH;
  return true;
}

int sc_pump(b2sc_session *s, int64_t deadline) {
  for (;;) {
    if (s->dead)
      return s->dead;
    int64_t now = sc_now_ms();
    int64_t wait = deadline < 0 ? -1 : (deadline > now ? deadline - now : 0);
    if (s->daemon_timeout_ms > 0) {
      /* PING at a third of the daemon's limit (PROTOCOL.md 4.6). */
      int64_t ivl = s->daemon_timeout_ms / 3;
      int64_t due = s->last_send_ms + ivl - now;
      if (due <= 0) {
        send_ping(s, 0);
        due = ivl;
      }
      if (wait < 0 || wait > due)
        wait = due;
    }
    zmq_pollitem_t it[2] = {{.socket = s->sock, .events = ZMQ_POLLIN},
                            {.socket = s->mon, .events = ZMQ_POLLIN}};
    int n = zmq_poll(it, s->mon ? 2 : 1, wait > INT_MAX ? INT_MAX : (long)wait);
    if (n < 0) {
      int rc = zmq_fail(s);
      if (rc == -EINTR)
        continue;
      return rc;
    }
    if (n > 0 && (it[0].revents & ZMQ_POLLIN))
      return recv_one(s);
    if (n > 0 && monitor_failed(s))
      return s->dead;
    if (deadline >= 0 && sc_now_ms() >= deadline)
      return 0;
  }
}

int sc_request(b2sc_session *s, b2s_wire_msg *m, int want_type,
               int64_t deadline) {
  return sc_request_payload(s, m, NULL, want_type, deadline);
}

int sc_request_payload(b2sc_session *s, b2s_wire_msg *m, zmq_msg_t *payload,
                       int want_type, int64_t deadline) {
  int rc = sc_session_usable(s);
  if (rc < 0)
    return rc;
  if (++s->next_tag == 0)
    s->next_tag = 1;
  m->tag = s->next_tag;
  if ((rc = sc_send(s, m, payload)) < 0)
    return rc;
  s->wait_tag = m->tag;
  s->have_reply = false;
  while (!s->have_reply) {
    rc = sc_pump(s, deadline);
    if (rc < 0 && !s->have_reply)
      break;
    if (rc == 0) {
      rc = B2S_E_TIMEOUT;
      break;
    }
  }
  s->wait_tag = 0;   /* a late reply is dropped, not taken for another */
  if (!s->have_reply)
    return rc;
  s->have_reply = false;
  if (s->reply.m.type == B2S_WIRE_ERROR) {
    rc = s->reply.m.error.code;
    sc_msg_close(&s->reply);
    return rc;
  }
  if (s->reply.m.type != want_type) {
    sc_msg_close(&s->reply);
    set_error(s, B2S_E_PROTO, "unexpected reply type from the daemon");
    return B2S_E_PROTO;
  }
  return 0;
}

/* ---- connect and close -------------------------------------------------- */

int b2sc_default_endpoint(char *buf, size_t cap) {
  const char *env = getenv(B2SC_ENDPOINT_ENV);
  const char *rt = getenv("RUNTIME_DIRECTORY");
  int n;
  if (env != NULL && env[0])
    n = snprintf(buf, cap, "%s", env);
  else if (rt != NULL && rt[0])
    n = snprintf(buf, cap, "ipc://%s/%s", rt, B2SC_SOCKET_NAME);
  else
    n = snprintf(buf, cap, "ipc://run/%s", B2SC_SOCKET_NAME);
  return n < 0 || (size_t)n >= cap ? B2S_E_DEST_SMALL : n;
}

/* A missing ipc:// socket file is an immediate -ENOENT rather than a
 * timeout: ZeroMQ would wait for it to appear. */
static int check_endpoint(const char *ep) {
  if (strncmp(ep, "ipc://", 6) == 0) {
    const char *path = ep + 6;
    struct stat st;
    if (path[0] != '@' && stat(path, &st) < 0)
      return -errno;
    /* connecting takes write permission on the socket file; without it
     * libzmq retries quietly and HELLO would only time out */
    if (path[0] != '@' &&
        faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) < 0 &&
        (errno == EACCES || errno == EPERM))
      return -EACCES;
    return 0;
  }
  return strncmp(ep, "tcp://", 6) == 0 ? 0 : B2S_E_ARG;
}

/* The version to retry HELLO with after ERROR B2S_E_PROTO_VERSION, from
 * the daemon's range in ref_index (PROTOCOL.md 8); 0 when none fits. */
static int fallback_version(const b2sc_session *s) {
  int vmin = (int)(s->last_ref_index & 0xFF);
  int vmax = (int)(s->last_ref_index >> 8 & 0xFF);
  int v = vmax < s->version ? vmax : s->version - 1;
  return v >= 1 && v >= vmin ? v : 0;
}

static int hello(b2sc_session *s, const b2sc_options *o) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.flags = (uint16_t)(o->roles & (B2S_WIRE_HELLO_PRODUCER |
                                   B2S_WIRE_HELLO_CONSUMER));
  m.hello.pid = (uint32_t)getpid();
  m.hello.ping_ms = 0;   /* no promise: pings only while inside the library */
  m.hello.name = b2s_wire_cstr(o->client_name);
  int64_t deadline = sc_deadline(s->timeout_ms);
  s->version = B2S_WIRE_VERSION_MAX;
  int rc = sc_request(s, &m, B2S_WIRE_WELCOME, deadline);
  int v;
  if (rc == B2S_E_PROTO_VERSION && (v = fallback_version(s)) > 0) {
    /* a daemon of an older version: its ERROR ended no session of ours */
    s->version = v;
    s->dead = 0;
    rc = sc_request(s, &m, B2S_WIRE_WELCOME, deadline);
    if (rc == 0)
      set_error(s, 0, "");
  }
  if (rc < 0)
    return rc;
  const b2s_wire_msg *w = &s->reply.m;
  if (w->version > s->version) {   /* a WELCOME above what we asked */
    sc_msg_close(&s->reply);
    return B2S_E_PROTO;
  }
  s->version = w->version;
  sc_strcpy(s->server, sizeof s->server, w->welcome.server);
  s->session_id = w->welcome.session_id;
  s->max_buffer = w->welcome.max_buffer;
  s->daemon_timeout_ms = w->welcome.timeout_ms;
  s->shm = (w->flags & B2S_WIRE_WELCOME_SHM) != 0;
  sc_msg_close(&s->reply);
  return 0;
}

/* A Z85 key: 40 characters that decode to 32 bytes. */
static bool key_decode(const char *z85, uint8_t out[32]) {
  return z85 != NULL && strlen(z85) == B2SC_CURVE_KEY_LEN &&
         zmq_z85_decode(out, z85) != NULL;
}

int b2sc_curve_key_read(const char *path, char key[B2SC_CURVE_KEY_LEN + 1]) {
  return b2s_curve_key_read(path, key);
}

/* CURVE client keys, and a monitor that turns a failed handshake into
 * B2S_E_AUTH; before connecting. */
static int curve_setup(b2sc_session *s, const b2sc_options *o) {
  if (o->curve_server_key == NULL)
    return 0;
  if (!zmq_has("curve"))
    return -EOPNOTSUPP;
  uint8_t server[32], secret[32], public[32];
  char derived[B2SC_CURVE_KEY_LEN + 1];
  const char *pub = o->curve_public_key;
  if (!key_decode(o->curve_server_key, server) ||
      !key_decode(o->curve_secret_key, secret))
    return B2S_E_ARG;
  if (pub == NULL && zmq_curve_public(derived, o->curve_secret_key) == 0)
    pub = derived;
  if (!key_decode(pub, public))
    return B2S_E_ARG;
  if (zmq_setsockopt(s->sock, ZMQ_CURVE_SERVERKEY, server, 32) < 0 ||
      zmq_setsockopt(s->sock, ZMQ_CURVE_PUBLICKEY, public, 32) < 0 ||
      zmq_setsockopt(s->sock, ZMQ_CURVE_SECRETKEY, secret, 32) < 0)
    return -zmq_errno();
  const char *mon = "inproc://b2sc-monitor";   /* one per session context */
  if (zmq_socket_monitor(s->sock, mon, ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                           ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) < 0 ||
      (s->mon = zmq_socket(s->zctx, ZMQ_PAIR)) == NULL)
    return -zmq_errno();
  int zero = 0;
  zmq_setsockopt(s->mon, ZMQ_LINGER, &zero, sizeof zero);
  return zmq_connect(s->mon, mon) < 0 ? -zmq_errno() : 0;
}

/* The handshake is over (WELCOME, or failure): stop the monitor. */
static void monitor_stop(b2sc_session *s) {
  if (s->mon == NULL)
    return;
  zmq_socket_monitor(s->sock, NULL, 0);
  zmq_close(s->mon);
  s->mon = NULL;
}

static int open_socket(b2sc_session *s, const char *ep,
                       const b2sc_options *o) {
  if ((s->zctx = zmq_ctx_new()) == NULL)
    return B2S_E_NOMEM;
  if ((s->sock = zmq_socket(s->zctx, ZMQ_DEALER)) == NULL)
    return -zmq_errno();
  int linger = SC_LINGER_MS;
  zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof linger);
  int rc = curve_setup(s, o);
  if (rc < 0)
    return rc;
  if (zmq_connect(s->sock, ep) < 0)
    return zmq_errno() == EINVAL || zmq_errno() == EPROTONOSUPPORT
               ? B2S_E_ARG : -zmq_errno();
  return 0;
}

int b2sc_connect_opts(const char *endpoint, const b2sc_options *opts,
                      b2sc_session **out) {
  if (out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  b2sc_options o = opts ? *opts
                        : (b2sc_options){.roles = B2SC_ROLE_PRODUCER |
                                                  B2SC_ROLE_CONSUMER};
  if (o.timeout_ms < 0)
    return B2S_E_ARG;
  if (o.client_name && strlen(o.client_name) > B2S_WIRE_NAME_MAX)
    return B2S_E_ARG;
  char def[B2S_WIRE_PATH_MAX];
  if (endpoint == NULL) {
    if (b2sc_default_endpoint(def, sizeof def) < 0)
      return B2S_E_ARG;
    endpoint = def;
  }
  int rc = check_endpoint(endpoint);
  if (rc < 0)
    return rc;
  b2sc_session *s = calloc(1, sizeof *s);
  if (s == NULL)
    return B2S_E_NOMEM;
  s->timeout_ms = o.timeout_ms ? o.timeout_ms : B2SC_DEFAULT_TIMEOUT_MS;
  if ((rc = open_socket(s, endpoint, &o)) == 0)
    rc = hello(s, &o);
  if (s->sock)
    monitor_stop(s);
  if (rc < 0) {
    if (s->sock) {
      int zero = 0;   /* nothing worth delivering */
      zmq_setsockopt(s->sock, ZMQ_LINGER, &zero, sizeof zero);
      zmq_close(s->sock);
    }
    if (s->zctx)
      zmq_ctx_term(s->zctx);
    free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int b2sc_connect(const char *endpoint, const char *client_name,
                 b2sc_session **out) {
  b2sc_options o = {.client_name = client_name,
                    .roles = B2SC_ROLE_PRODUCER | B2SC_ROLE_CONSUMER};
  return b2sc_connect_opts(endpoint, &o, out);
}

void b2sc_close(b2sc_session *s) {
  if (s == NULL)
    return;
  for (int r = 0; r < SC_ROLES; r++)
    if (s->role[r])
      s->role[r]->free_all(s);
  if (!s->dead) {
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_BYE);
    sc_send(s, &m, NULL);
  }
  zmq_close(s->sock);
  zmq_ctx_term(s->zctx);
  free(s);
}

int b2sc_set_timeout(b2sc_session *s, int timeout_ms) {
  if (s == NULL || timeout_ms <= 0)
    return B2S_E_ARG;
  s->timeout_ms = timeout_ms;
  return 0;
}

int b2sc_protocol_version(const b2sc_session *s) {
  return s != NULL ? s->version : B2S_E_ARG;
}

int b2sc_session_info_get(const b2sc_session *s, b2sc_session_info *info) {
  if (s == NULL || info == NULL)
    return B2S_E_ARG;
  *info = (b2sc_session_info){.server = s->server,
                              .session_id = s->session_id,
                              .max_buffer = s->max_buffer,
                              .timeout_ms = s->daemon_timeout_ms,
                              .shm = s->shm};
  return 0;
}

/* ---- PING and STATS ------------------------------------------------------ */

int b2sc_ping(b2sc_session *s, int timeout_ms) {
  int rc = sc_session_usable(s);
  if (rc < 0)
    return rc;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_PING);
  m.ping.nonce = (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec;
  if ((rc = sc_request(s, &m, B2S_WIRE_PONG, sc_deadline(timeout_ms))) < 0)
    return rc;
  bool echoed = s->reply.m.pong.nonce == m.ping.nonce;
  sc_msg_close(&s->reply);
  if (!echoed)
    return B2S_E_PROTO;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  int64_t us = (t1.tv_sec - t0.tv_sec) * 1000000 +
               (t1.tv_nsec - t0.tv_nsec) / 1000;
  return us > INT32_MAX ? INT32_MAX : (int)us;
}

int b2sc_stats(b2sc_session *s, const char *stream, char **json,
               size_t *len) {
  if (json == NULL)
    return B2S_E_ARG;
  *json = NULL;
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_STATS);
  m.stats.stream = b2s_wire_cstr(stream);
  if (m.stats.stream.len > B2S_WIRE_NAME_MAX)
    return B2S_E_ARG;
  int rc = sc_request(s, &m, B2S_WIRE_STATS_REPLY, sc_deadline(s ? s->timeout_ms : 0));
  if (rc < 0)
    return rc;
  size_t n = zmq_msg_size(&s->reply.payload);
  char *out = malloc(n + 1);
  if (out != NULL) {
    memcpy(out, zmq_msg_data(&s->reply.payload), n);
    out[n] = '\0';
  }
  sc_msg_close(&s->reply);
  if (out == NULL)
    return B2S_E_NOMEM;
  *json = out;
  if (len)
    *len = n;
  return 0;
}

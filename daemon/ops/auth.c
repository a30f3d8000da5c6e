/* CURVE authentication of tcp:// clients (curve: in the configuration).
 *
 * Every tcp:// ROUTER socket becomes a CurveZMQ server with the daemon's
 * secret key; CurveZMQ then encrypts the connection and proves the client
 * holds the secret key of the public key it shows.  Which public keys may
 * come in is decided by a ZAP handler (ZeroMQ RFC 27): libzmq asks it, on
 * inproc://zeromq.zap.01 of the daemon's context, about every new
 * connection, and it answers 200 only for keys listed in the authorized
 * keys file.  ipc:// sockets keep the NULL mechanism: file permissions on
 * the socket protect them, and the handler admits NULL requests (libzmq
 * only sends them for sockets with a ZAP domain, which ipc sockets do not
 * set; the answer is there for completeness).
 *
 * Threads: one thread, "b2sd-zap", owns the ZAP REP socket.  (Failed
 * handshakes, e.g. a client using a wrong server key, are logged by the
 * I/O thread's socket monitors, peers.c.)  The I/O thread creates the sockets before
 * the thread starts and closes them after it has joined; the key set is
 * swapped on reload under `lock`, the only state both threads touch. */
#define _GNU_SOURCE
#include "b2sd.h"
#include "b2s_curve_key.h"
#include "auth.h"
#include "fscheck.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_DOMAIN "b2stream"
#define KEY_Z85_LEN B2S_CURVE_KEY_Z85_LEN
#define KEY_LEN B2S_CURVE_KEY_LEN
#define ZAP_FRAMES_MAX 16

struct b2sd_auth {
  void *zctx;
  uint8_t secret[KEY_LEN];
  void *zap;                        /* REP, bound on ZAP_ENDPOINT */
  void *ctl_main, *ctl_thread;      /* PAIR: a message stops the thread */
  pthread_t thread;
  bool started;
  pthread_mutex_t lock;             /* guards keys, nkeys */
  uint8_t (*keys)[KEY_LEN];
  size_t nkeys;
};

/* ---- key files ------------------------------------------------------------- */

/* Every key of path, one per line (b2s_curve_key.h: blank lines, '#' comments
 * and text after the key ignored).  Returns the count, or B2S_E_CONFIG /
 * -errno with the reason logged. */
static int keys_load(const char *path, uint8_t (**out)[KEY_LEN]) {
  int line = 0;
  int rc = b2sd_regular_file(path);
  if (rc < 0) {
    LOG_E("curve: cannot read %s: %s", path,
          rc == -EINVAL ? "not a regular file" : b2s_strerror(rc));
    return rc;
  }
  rc = b2s_curve_authorized_read(path, out, &line);
  if (rc == B2S_E_ARG) {
    LOG_E("curve: %s:%d: not a Z85 public key (40 characters)", path, line);
    return B2S_E_CONFIG;
  }
  if (rc < 0 && rc != B2S_E_NOMEM)
    LOG_E("curve: cannot read %s: %s", path, b2s_strerror(rc));
  return rc;
}

/* The daemon's secret key: the first key of the file (b2s_curve_key.h). */
static int secret_load(const char *path, uint8_t out[KEY_LEN]) {
  char z[B2S_CURVE_KEY_Z85_LEN + 1];
  int rc = b2sd_regular_file(path);
  if (rc < 0) {
    LOG_E("curve: cannot read %s: %s", path,
          rc == -EINVAL ? "not a regular file" : b2s_strerror(rc));
    return rc;
  }
  rc = b2s_curve_key_read(path, z);
  if (rc == 0 && zmq_z85_decode(out, z) == NULL)
    rc = B2S_E_ARG;
  explicit_bzero(z, sizeof z);
  if (rc == B2S_E_ARG) {
    LOG_E("curve: %s: no Z85 secret key (40 characters) in it", path);
    return B2S_E_CONFIG;
  }
  if (rc < 0)
    LOG_E("curve: cannot read %s: %s", path, b2s_strerror(rc));
  return rc;
}

int b2sd_auth_check(const b2s_daemon_cfg *d) {
  uint8_t secret[KEY_LEN];
  int rc = secret_load(d->curve.secret_key_file, secret);
  explicit_bzero(secret, sizeof secret);
  uint8_t (*keys)[KEY_LEN] = NULL;
  int n = keys_load(d->curve.authorized_keys_file, &keys);
  free(keys);
  return rc < 0 ? rc : n < 0 ? n : 0;
}

static int keys_reload(b2sd_auth *a, const char *authorized_keys_file) {
  uint8_t (*keys)[KEY_LEN] = NULL;
  int n = keys_load(authorized_keys_file, &keys);
  if (n < 0)
    return n;
  pthread_mutex_lock(&a->lock);
  void *old = a->keys;
  a->keys = keys;
  a->nkeys = (size_t)n;
  pthread_mutex_unlock(&a->lock);
  free(old);
  LOG_I("curve: %d authorized client keys from %s", n, authorized_keys_file);
  return n;
}

void b2sd_auth_reload(b2sd_auth *a, const b2s_daemon_cfg *loaded) {
  /* curve on or off and its secret key wait for a restart: the reload
   * says so for each (their schema rows) */
  if (a && loaded->curve.enabled &&
      keys_reload(a, loaded->curve.authorized_keys_file) < 0)
    LOG_E("reload: keeping the authorized keys in use");
}

static bool key_allowed(b2sd_auth *a, const uint8_t *key) {
  bool ok = false;
  pthread_mutex_lock(&a->lock);
  for (size_t i = 0; i < a->nkeys && !ok; i++)
    ok = memcmp(a->keys[i], key, KEY_LEN) == 0;
  pthread_mutex_unlock(&a->lock);
  return ok;
}

/* ---- the ZAP handler -------------------------------------------------------- */

static bool frame_is(zmq_msg_t *m, const char *s) {
  size_t n = strlen(s);
  return zmq_msg_size(m) == n && memcmp(zmq_msg_data(m), s, n) == 0;
}

static void frame_str(zmq_msg_t *m, char *out, size_t cap) {
  size_t n = zmq_msg_size(m);
  if (n >= cap)
    n = cap - 1;
  memcpy(out, zmq_msg_data(m), n);
  out[n] = '\0';
  for (size_t i = 0; i < n; i++)
    if (!isprint((unsigned char)out[i]))
      out[i] = '?';
}

/* One request (RFC 27: version, request id, domain, address, identity,
 * mechanism, credentials...) and its reply. */
static void zap_handle(b2sd_auth *a) {
  zmq_msg_t f[ZAP_FRAMES_MAX];
  int n = 0;
  bool more = true;
  while (more) {
    zmq_msg_t x;
    zmq_msg_init(&x);
    if (zmq_msg_recv(&x, a->zap, 0) < 0) {
      zmq_msg_close(&x);
      break;
    }
    more = zmq_msg_more(&x);
    if (n < ZAP_FRAMES_MAX)
      f[n++] = x;
    else
      zmq_msg_close(&x);
  }
  if (n < 2) {                       /* no request id: cannot answer */
    LOG_E("curve: malformed ZAP request (%d frames)", n);
    for (int i = 0; i < n; i++)
      zmq_msg_close(&f[i]);
    return;
  }
  char addr[64] = "?", user[KEY_Z85_LEN + 1] = "";
  if (n >= 4)
    frame_str(&f[3], addr, sizeof addr);
  const char *status = "400", *text = "mechanism not allowed";
  if (n < 6 || !frame_is(&f[0], "1.0")) {
    LOG_E("curve: malformed ZAP request (%d frames)", n);
    status = "500";
    text = "malformed request";
  } else if (frame_is(&f[5], "NULL")) {
    status = "200";
    text = "OK";
  } else if (frame_is(&f[5], "CURVE") && n >= 7 &&
             zmq_msg_size(&f[6]) == KEY_LEN) {
    const uint8_t *key = zmq_msg_data(&f[6]);
    zmq_z85_encode(user, key, KEY_LEN);
    if (key_allowed(a, key)) {
      status = "200";
      text = "OK";
      LOG_D("curve: client %s from %s admitted", user, addr);
    } else {
      text = "client key not authorized";
      LOG_W("curve: refused client key %s from %s: not in the authorized "
            "keys", user, addr);
    }
  } else {
    LOG_W("curve: refused a client from %s: mechanism not allowed", addr);
  }
  /* version, request id (as received), status, text, user id, metadata */
  const char *tail[4] = {status, text, user, ""};
  zmq_send(a->zap, "1.0", 3, ZMQ_SNDMORE);
  zmq_msg_send(&f[1], a->zap, ZMQ_SNDMORE);
  for (int i = 0; i < 4; i++)
    zmq_send(a->zap, tail[i], strlen(tail[i]), i < 3 ? ZMQ_SNDMORE : 0);
  for (int i = 0; i < n; i++)
    zmq_msg_close(&f[i]);
}

static void *zap_main(void *arg) {
  b2sd_auth *a = arg;
  zmq_pollitem_t it[2];
  it[0] = (zmq_pollitem_t){.socket = a->ctl_thread, .events = ZMQ_POLLIN};
  it[1] = (zmq_pollitem_t){.socket = a->zap, .events = ZMQ_POLLIN};
  for (;;) {
    if (zmq_poll(it, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      LOG_E("curve: ZAP handler stops: %s", zmq_strerror(errno));
      break;
    }
    if (it[0].revents & ZMQ_POLLIN)
      break;
    if (it[1].revents & ZMQ_POLLIN)
      zap_handle(a);
  }
  return NULL;
}

/* ---- setup ------------------------------------------------------------------ */

int b2sd_auth_new(void *zctx, const b2s_daemon_cfg *d, b2sd_auth **out) {
  *out = NULL;
  if (!zmq_has("curve")) {
    LOG_E("curve: configured, but this libzmq was built without CURVE "
          "support");
    return B2S_E_CONFIG;
  }
  b2sd_auth *a = calloc(1, sizeof *a);
  if (!a)
    return B2S_E_NOMEM;
  a->zctx = zctx;
  pthread_mutex_init(&a->lock, NULL);
  *out = a;                          /* b2sd_auth_free undoes a failure */
  int rc = secret_load(d->curve.secret_key_file, a->secret);
  if (rc < 0)
    return rc;
  char pub[KEY_Z85_LEN + 1], sec[KEY_Z85_LEN + 1];
  zmq_z85_encode(sec, a->secret, KEY_LEN);
  rc = zmq_curve_public(pub, sec) < 0 ? B2S_E_CONFIG : 0;
  explicit_bzero(sec, sizeof sec);
  if (rc < 0)
    return rc;
  if ((rc = keys_reload(a, d->curve.authorized_keys_file)) < 0)
    return rc;
  a->zap = zmq_socket(zctx, ZMQ_REP);
  a->ctl_main = zmq_socket(zctx, ZMQ_PAIR);
  a->ctl_thread = zmq_socket(zctx, ZMQ_PAIR);
  char ctl[64];
  snprintf(ctl, sizeof ctl, "inproc://b2sd-zap-ctl-%p", (void *)a);
  if (!a->zap || !a->ctl_main || !a->ctl_thread ||
      zmq_bind(a->zap, ZAP_ENDPOINT) < 0 || zmq_bind(a->ctl_main, ctl) < 0 ||
      zmq_connect(a->ctl_thread, ctl) < 0) {
    rc = -zmq_errno();
    LOG_E("curve: cannot start the ZAP handler: %s", zmq_strerror(-rc));
    return rc;
  }
  LOG_I("curve: tcp:// endpoints authenticate clients; server public key %s",
        pub);
  return 0;
}

int b2sd_auth_server_socket(b2sd_auth *a, void *z, const char *endpoint) {
  int one = 1;
  if (zmq_setsockopt(z, ZMQ_CURVE_SERVER, &one, sizeof one) < 0 ||
      zmq_setsockopt(z, ZMQ_CURVE_SECRETKEY, a->secret, KEY_LEN) < 0 ||
      zmq_setsockopt(z, ZMQ_ZAP_DOMAIN, ZAP_DOMAIN, strlen(ZAP_DOMAIN)) < 0)
    return -zmq_errno();
  (void)endpoint;
  return 0;
}

int b2sd_auth_start(b2sd_auth *a) {
  int rc = pthread_create(&a->thread, NULL, zap_main, a);
  if (rc != 0)
    return -rc;
  a->started = true;
  pthread_setname_np(a->thread, "b2sd-zap");
  return 0;
}

void b2sd_auth_free(b2sd_auth *a) {
  if (!a)
    return;
  if (a->started) {
    zmq_send(a->ctl_main, "", 0, 0);
    pthread_join(a->thread, NULL);
  }
  void *socks[] = {a->zap, a->ctl_main, a->ctl_thread};
  for (size_t i = 0; i < sizeof socks / sizeof socks[0]; i++)
    if (socks[i]) {
      int zero = 0;
      zmq_setsockopt(socks[i], ZMQ_LINGER, &zero, sizeof zero);
      zmq_close(socks[i]);
    }
  explicit_bzero(a->secret, sizeof a->secret);
  pthread_mutex_destroy(&a->lock);
  free(a->keys);
  free(a);
}

/* Peer connections: socket monitors of the ROUTER sockets (peers.h). */
#define _GNU_SOURCE
#include "peers.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PEER_EVENTS                                                          \
  (ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_ACCEPT_FAILED | ZMQ_EVENT_DISCONNECTED |   \
   ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)

int b2sd_peers_watch(b2sd_server *srv, int i, bool curve) {
  char ep[64];
  snprintf(ep, sizeof ep, "inproc://b2sd-peers-%d", i);
  void *m = zmq_socket(srv->zctx, ZMQ_PAIR);
  if (!m)
    return -zmq_errno();
  if (zmq_socket_monitor(srv->sockets[i], ep, PEER_EVENTS) < 0 ||
      zmq_connect(m, ep) < 0) {
    int rc = -zmq_errno();
    zmq_close(m);
    return rc;
  }
  srv->monitors[i] = m;
  srv->monitor_curve[i] = curve;
  return 0;
}

int b2sd_peer_fd(zmq_msg_t *m) {
  return zmq_msg_get(m, ZMQ_SRCFD);
}

/* The connection on descriptor fd of socket i ended. */
static void peer_gone(b2sd_server *srv, int i, int fd) {
  for (b2sd_session *s = srv->sessions; s; s = s->next)
    if (s->sock == i && s->fd == fd && !s->dead) {
      LOG_I("session %u: connection closed", s->id);
      s->dead = true;
    }
}

static void on_event(b2sd_server *srv, int i, uint16_t event, uint32_t value) {
  const char *ep = srv->dcfg.listen[i];
  switch (event) {
  case ZMQ_EVENT_ACCEPTED:
    srv->connections++;
    break;
  case ZMQ_EVENT_DISCONNECTED:
    if (srv->connections > 0)
      srv->connections--;
    peer_gone(srv, i, (int)value);
    break;
  case ZMQ_EVENT_ACCEPT_FAILED:
    srv->accept_failed++;
    LOG_W("%s: a connection could not be accepted: %s", ep,
          zmq_strerror((int)value));
    break;
  default:                       /* a failed handshake */
    LOG_W("%s%s: a client's handshake failed (%s 0x%x)%s",
          srv->monitor_curve[i] ? "curve: " : "", ep,
          event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? "protocol error"
                                                      : "error",
          value, srv->monitor_curve[i]
                     ? ": wrong server key, or not a CURVE client" : "");
  }
}

void b2sd_peers_turn(b2sd_server *srv) {
  for (int i = 0; i < srv->nsockets; i++) {
    void *m = srv->monitors[i];
    while (m) {
      zmq_msg_t ev, addr;
      zmq_msg_init(&ev);
      if (zmq_msg_recv(&ev, m, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&ev);
        break;
      }
      zmq_msg_init(&addr);       /* the second frame: the endpoint */
      if (zmq_msg_more(&ev))
        zmq_msg_recv(&addr, m, 0);
      if (zmq_msg_size(&ev) >= 6) {
        const uint8_t *d = zmq_msg_data(&ev);
        uint16_t event;
        uint32_t value;
        memcpy(&event, d, sizeof event);
        memcpy(&value, d + 2, sizeof value);
        on_event(srv, i, event, value);
      }
      zmq_msg_close(&ev);
      zmq_msg_close(&addr);
    }
  }
}

void b2sd_peers_fini(b2sd_server *srv) {
  for (int i = 0; i < srv->nsockets; i++) {
    if (!srv->monitors[i])
      continue;
    zmq_socket_monitor(srv->sockets[i], NULL, 0);
    int zero = 0;
    zmq_setsockopt(srv->monitors[i], ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(srv->monitors[i]);
    srv->monitors[i] = NULL;
  }
}

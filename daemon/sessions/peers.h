/* Peer connections of the ROUTER sockets (peers.c).
 *
 * A socket monitor on every ROUTER reports connections accepted, refused
 * by the system (no descriptor left) and ended.  A session remembers the
 * descriptor of the connection its messages arrive on (ZMQ_SRCFD); when
 * that connection ends, the session is marked dead and the next sweep
 * ends it, whether or not its peer promised pings: a producer killed
 * without a word gives back its handles and shared-memory segment.
 * Failed handshakes (a CURVE client with the wrong server key, a peer not
 * speaking ZMTP) are logged here too.
 *
 * A descriptor number is reused once its connection is closed, so events
 * are read before a session takes the descriptor of a new connection
 * (b2sd_peers_turn before each HELLO): an event never names a session
 * made after it.  I/O thread only; the monitor sockets belong to the
 * server (srv->monitors) and are closed by b2sd_peers_fini. */
#ifndef B2SD_PEERS_H
#define B2SD_PEERS_H

#include "session.h"

/* Monitor ROUTER socket i (before it binds).  curve: its handshakes are
 * CurveZMQ's. */
int b2sd_peers_watch(b2sd_server *srv, int i, bool curve);
/* Read every pending event; mark the sessions of ended connections dead. */
void b2sd_peers_turn(b2sd_server *srv);
/* The descriptor of the connection a received message came on, or -1. */
int b2sd_peer_fd(zmq_msg_t *m);
void b2sd_peers_fini(b2sd_server *srv);

#endif

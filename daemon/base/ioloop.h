/* The I/O thread's wait (server.c): one epoll set over the ZeroMQ sockets'
 * ZMQ_FD and plain descriptors (the signalfd, the wakeup eventfd).
 *
 * zmq_poll costs several system calls per socket and turn (a poll(2) of
 * its own, then one per socket to read ZMQ_EVENTS); here a turn costs one
 * epoll_wait, and only the sockets that fired are read.  A socket's
 * ZMQ_FD signals an edge, not a level: libzmq raises it when the socket's
 * state may have changed and clears it whenever the socket is used.  So an
 * entry stays "ready" from its edge until its owner read it empty (a
 * receive said EAGAIN), and the owner marks a socket ready again when it
 * used it otherwise (a send may consume the edge of incoming messages).
 * I/O thread only. */
#ifndef B2SD_IOLOOP_H
#define B2SD_IOLOOP_H

#include <stdbool.h>

#define B2SD_IOLOOP_MAX 64

typedef struct b2sd_ioloop {
  int epfd;
  int n;
  bool ready[B2SD_IOLOOP_MAX];   /* fired, or not yet read empty */
} b2sd_ioloop;

/* 0, or a negative errno. */
int b2sd_ioloop_init(b2sd_ioloop *l);
/* A ZeroMQ socket z (its ZMQ_FD, edge-triggered), or with z NULL a plain
 * descriptor fd (level-triggered).  It starts ready, so it is read once
 * before the first wait.  Returns its index, or a negative errno. */
int b2sd_ioloop_add(b2sd_ioloop *l, void *z, int fd);
/* Wait up to timeout_ms (0: only look) for an entry to fire, and mark the
 * ones that did ready.  Returns how many fired, or a negative errno
 * (-EINTR is not an error: none fired). */
int b2sd_ioloop_wait(b2sd_ioloop *l, int timeout_ms);
static inline bool b2sd_ioloop_ready(const b2sd_ioloop *l, int i) {
  return i >= 0 && l->ready[i];
}
static inline void b2sd_ioloop_set(b2sd_ioloop *l, int i, bool ready) {
  if (i >= 0)
    l->ready[i] = ready;
}
void b2sd_ioloop_fini(b2sd_ioloop *l);

#endif

/* The I/O thread's wait over ZMQ_FD and plain descriptors (ioloop.h). */
#define _GNU_SOURCE
#include "ioloop.h"

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <zmq.h>

int b2sd_ioloop_init(b2sd_ioloop *l) {
  l->n = 0;
  l->epfd = epoll_create1(EPOLL_CLOEXEC);
  return l->epfd < 0 ? -errno : 0;
}

int b2sd_ioloop_add(b2sd_ioloop *l, void *z, int fd) {
  if (l->n == B2SD_IOLOOP_MAX)
    return -ENOSPC;
  size_t len = sizeof fd;
  if (z && zmq_getsockopt(z, ZMQ_FD, &fd, &len) < 0)
    return -zmq_errno();
  struct epoll_event ev = {.events = EPOLLIN | (z ? EPOLLET : 0),
                           .data.u32 = (uint32_t)l->n};
  if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
    return -errno;
  l->ready[l->n] = true;
  return l->n++;
}

int b2sd_ioloop_wait(b2sd_ioloop *l, int timeout_ms) {
  struct epoll_event ev[B2SD_IOLOOP_MAX];
  int rc = epoll_wait(l->epfd, ev, B2SD_IOLOOP_MAX, timeout_ms);
  if (rc < 0)
    return errno == EINTR ? 0 : -errno;
  for (int i = 0; i < rc; i++)
    l->ready[ev[i].data.u32] = true;
  return rc;
}

void b2sd_ioloop_fini(b2sd_ioloop *l) {
  if (l->epfd >= 0)
    close(l->epfd);
  l->epfd = -1;
}

/* Accepting connections within the descriptor limit.
 *
 * libzmq 4.3's ipc:// listener aborts the process when accept() fails
 * with EMFILE, and its tcp:// listener spins on a connection it cannot
 * take; either way a flood of connections (idle ones, or tcp:// peers that
 * never finish their handshake) would end the daemon.  So the daemon
 * defines accept and accept4 itself: libzmq's calls resolve to these (an
 * executable's definitions come first in the dynamic symbol lookup), which
 * take the connection and, when it would leave fewer than
 * B2SD_FD_RESERVE_ACCEPT descriptors, close it at once and report
 * ECONNABORTED, an error libzmq expects (it emits ZMQ_EVENT_ACCEPT_FAILED,
 * counted by peers.c).  When no descriptor is left at all, a spare one is
 * given up for a moment to take the connection off the queue, so the
 * listener does not spin.  The refused peer sees its connection closed and
 * retries later; sessions already there are untouched.
 *
 * Runs on libzmq's I/O threads: touches nothing of the daemon but the
 * spare descriptor and the limit, both atomics. */
#define _GNU_SOURCE
#include "fdheadroom.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_int spare = -1;
static atomic_long fd_limit;

void b2sd_accept_guard_init(void) {
  /* relaxed: set before the first socket exists, read by libzmq's I/O
   * threads after zmq_bind created them; pairs with the loads below */
  atomic_store_explicit(&fd_limit, b2sd_fd_limit(), memory_order_relaxed);
  atomic_store_explicit(&spare, open("/dev/null", O_RDONLY | O_CLOEXEC),
                        memory_order_relaxed);
}

static int sys_accept4(int fd, struct sockaddr *addr, socklen_t *len,
                       int flags) {
  return (int)syscall(SYS_accept4, fd, addr, len, flags);
}

/* No descriptor left: give the spare up to take the connection off the
 * queue and close it, then take the spare back. */
static void drop_pending(int fd) {
  /* acq_rel: pairs with itself and the store below, one owner at a time */
  int s = atomic_exchange_explicit(&spare, -1, memory_order_acq_rel);
  if (s < 0)
    return;
  close(s);
  int c = sys_accept4(fd, NULL, NULL, SOCK_CLOEXEC);
  if (c >= 0)
    close(c);
  /* release: pairs with the exchange above */
  atomic_store_explicit(&spare, open("/dev/null", O_RDONLY | O_CLOEXEC),
                        memory_order_release);
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
  int c = sys_accept4(fd, addr, len, flags);
  if (c < 0 && (errno == EMFILE || errno == ENFILE)) {
    drop_pending(fd);
    errno = ECONNABORTED;
    return -1;
  }
  /* relaxed: see b2sd_accept_guard_init */
  long limit = atomic_load_explicit(&fd_limit, memory_order_relaxed);
  if (c >= 0 && limit > 0 &&
      !b2sd_fd_headroom(limit, b2sd_fd_open(), 0, B2SD_FD_RESERVE_ACCEPT)) {
    close(c);
    errno = ECONNABORTED;
    return -1;
  }
  return c;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
  return accept4(fd, addr, len, 0);
}

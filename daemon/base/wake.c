/* The wakeup of the I/O thread (b2sd_wake, b2sd.h): any thread, no lock,
 * coalesced on the server's eventfd, which the I/O loop (server.c) reads. */
#include "b2sd.h"

#include <unistd.h>

void b2sd_wake(b2sd_server *srv) {
  /* acq_rel: pairs with the exchange to 0 in the I/O loop before it scans;
   * whoever sets the flag writes the eventfd, so no wakeup is lost */
  if (!atomic_exchange_explicit(&srv->wake_pending, 1, memory_order_acq_rel)) {
    uint64_t one = 1;
    ssize_t w = write(srv->wakefd, &one, sizeof one);
    (void)w;
  }
}

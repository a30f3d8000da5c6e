/* Taking a metrics snapshot (msnap.c): the I/O thread's side of the HTTP
 * listener. */
#ifndef B2SD_MSNAP_H
#define B2SD_MSNAP_H

#include "b2sd.h"
#include "metrics.h"

/* A snapshot of the daemon's figures (NULL when out of memory).  I/O
 * thread. */
b2sd_msnap *b2sd_msnap_take(b2sd_server *srv, uint64_t start_ns);
void b2sd_msnap_free(b2sd_msnap *s);

#endif

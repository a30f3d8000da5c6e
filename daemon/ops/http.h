/* The HTTP listener (http.c): Prometheus metrics, a status page and its
 * JSON, thumbnails of 2-D streams, read-only, on libmicrohttpd's one
 * thread ("MHD-single" in ps).
 *
 * It never touches the I/O thread's objects: when a request wants figures
 * newer than the last snapshot, it raises a flag and wakes the I/O thread
 * (b2sd_wake), which takes a snapshot (msnap.c) at its next turn and
 * publishes it here under `lock`, a leaf mutex held only to swap or
 * reference a pointer; the request waits for it a bounded time and
 * otherwise answers from the older one.  Writers and workers never see
 * any of this. */
#ifndef B2SD_HTTP_H
#define B2SD_HTTP_H

#include "b2sd.h"

typedef struct b2sd_http b2sd_http;

/* Start the listener of srv->dcfg.http (when enabled; *out NULL when
 * not).  0, or -errno when the address cannot be bound (logged). */
int b2sd_http_start(b2sd_server *srv, b2sd_http **out);
/* I/O thread, each turn: publish a snapshot when one was asked for. */
void b2sd_http_turn(b2sd_http *h);
/* Stop and join the listener, free.  Accepts NULL. */
void b2sd_http_stop(b2sd_http *h);

#endif

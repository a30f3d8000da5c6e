/* The control API on the HTTP listener (httpapi.c, docs/ACQUISITIONS.md
 * 9): bodies read within http.max_body, bearer tokens, Origin refused on
 * changes, then each request handed to the I/O thread, which answers it
 * from the registry (registry.h).
 *
 * Threads.  libmicrohttpd's thread reads a request, suspends its
 * connection (MHD_suspend_connection: the thread goes on serving others)
 * and queues the request under `lock`, a leaf mutex, then wakes the I/O
 * thread.  The I/O thread, in b2sd_httpapi_turn, takes the queue, answers
 * each request (a wait stays with it until its condition holds or its
 * time runs out), stores the answer under `lock` and resumes the
 * connection, whose next call on the MHD thread sends it.  Neither thread
 * waits for the other. */
#ifndef B2SD_HTTPAPI_H
#define B2SD_HTTPAPI_H

#include <microhttpd.h>

#include "b2sd.h"
#include "httproute.h"

typedef struct b2sd_httpapi b2sd_httpapi;

b2sd_httpapi *b2sd_httpapi_new(b2sd_server *srv);
/* MHD thread: one call of the access handler for an API route. */
enum MHD_Result b2sd_httpapi_request(b2sd_httpapi *a, struct MHD_Connection *c,
                                     const b2sd_route *rt, const char *method,
                                     const char *upload, size_t *upload_len,
                                     void **con_cls);
/* MHD thread: the request of a connection is done (NOTIFY_COMPLETED). */
void b2sd_httpapi_completed(void *con_cls);
/* I/O thread, each turn. */
void b2sd_httpapi_turn(b2sd_httpapi *a);
/* I/O thread, before the listener stops: every pending request answered
 * (503 draining) and resumed. */
void b2sd_httpapi_close(b2sd_httpapi *a);
void b2sd_httpapi_free(b2sd_httpapi *a);

#endif

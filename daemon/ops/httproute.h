/* Which answer an HTTP request gets (httproute.c): a pure function of the
 * method and the path, fuzzed (tests/fuzz/fuzz_httproute.c). */
#ifndef B2SD_HTTPROUTE_H
#define B2SD_HTTPROUTE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum b2sd_route_kind {
  B2SD_ROUTE_NOT_FOUND = 0,      /* 404 */
  B2SD_ROUTE_METHOD,             /* 405: only GET and HEAD */
  B2SD_ROUTE_PAGE,               /* / : the status page */
  B2SD_ROUTE_METRICS,            /* /metrics */
  B2SD_ROUTE_STATUS,             /* /status.json */
  B2SD_ROUTE_THUMB,              /* /thumb/NAME.png */
} b2sd_route_kind;

#define B2SD_ROUTE_NAME_MAX 64

typedef struct b2sd_route {
  b2sd_route_kind kind;
  char stream[B2SD_ROUTE_NAME_MAX + 1]; /* THUMB: the stream's name */
} b2sd_route;

/* Route method and url (the path as given, a query string ignored). */
void b2sd_http_route(const char *method, const char *url, b2sd_route *out);

#endif

/* Which answer an HTTP request gets (httproute.c): a pure function of the
 * method and the path, and the live view's query parameters and Accept
 * header, fuzzed (tests/fuzz/fuzz_http.c). */
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
  B2SD_ROUTE_LIVE,               /* /api/v1/streams/NAME/latest */
  B2SD_ROUTE_EVENTS,             /* /api/v1/events */
} b2sd_route_kind;

#define B2SD_ROUTE_NAME_MAX 64

typedef struct b2sd_route {
  b2sd_route_kind kind;
  char stream[B2SD_ROUTE_NAME_MAX + 1]; /* THUMB, LIVE: the stream's name */
  bool api;                      /* under /api/: errors are JSON
                                    (docs/ACQUISITIONS.md 9.3) */
} b2sd_route;

/* Route method and url (the path as given, a query string ignored). */
void b2sd_http_route(const char *method, const char *url, b2sd_route *out);

/* The live view's query parameters (docs/ACQUISITIONS.md 11.1). */
enum { B2SD_LIVE_ACCEPT = 0, B2SD_LIVE_PNG = 1, B2SD_LIVE_RAW = 2 };
#define B2SD_LIVE_SIDE_MIN 16
#define B2SD_LIVE_SIDE_MAX 4096
#define B2SD_LIVE_SIDE_DEFAULT 1024

typedef struct b2sd_live_query {
  int format;                    /* B2SD_LIVE_ACCEPT: from the Accept header */
  int max_side;
  unsigned seen;                 /* the parameters given, a bit each */
  bool fault;                    /* one was unknown, repeated or out of
                                    range */
  char bad[B2SD_ROUTE_NAME_MAX + 1]; /* the parameter at fault, cut */
} b2sd_live_query;

void b2sd_live_query_init(b2sd_live_query *q);
/* One parameter (value NULL: given without '='): 0, or -1 with q->bad
 * set when it is unknown, repeated or out of range. */
int b2sd_live_query_add(b2sd_live_query *q, const char *key,
                        const char *value);
/* The format an Accept header asks for (NULL: none): raw only for
 * application/octet-stream without image/png, else png. */
int b2sd_live_accept(const char *accept);

/* The event stream's query parameters (docs/ACQUISITIONS.md 10). */
typedef struct b2sd_events_query {
  char acquisition[65];          /* "" all */
  char last_event_id[40];        /* "" none; checked by b2sd_events_id_parse */
  unsigned seen;
  bool fault;
  char bad[B2SD_ROUTE_NAME_MAX + 1];
} b2sd_events_query;

void b2sd_events_query_init(b2sd_events_query *q);
/* One parameter: 0, or -1 with q->bad set (unknown, repeated, an id
 * that is not one). */
int b2sd_events_query_add(b2sd_events_query *q, const char *key,
                          const char *value);

#endif

/* Which answer an HTTP request gets (httproute.c): a pure function of the
 * method and the path, the query parameters of the control API's routes
 * (docs/ACQUISITIONS.md 9), and the live view's and the event stream's
 * parameters and Accept header, fuzzed (tests/fuzz/fuzz_http.c). */
#ifndef B2SD_HTTPROUTE_H
#define B2SD_HTTPROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum b2sd_route_kind {
  B2SD_ROUTE_NOT_FOUND = 0,      /* 404 */
  B2SD_ROUTE_METHOD,             /* 405: only GET and HEAD */
  B2SD_ROUTE_PAGE,               /* / : the status page */
  B2SD_ROUTE_METRICS,            /* /metrics */
  B2SD_ROUTE_STATUS,             /* /status.json */
  B2SD_ROUTE_THUMB,              /* /thumb/NAME.png */
  B2SD_ROUTE_API,                /* /api/v1...: `api` says which */
  B2SD_ROUTE_API_METHOD,         /* 405 on an API path; `allow` */
  B2SD_ROUTE_LIVE,               /* /api/v1/streams/NAME/latest */
  B2SD_ROUTE_EVENTS,             /* /api/v1/events */
} b2sd_route_kind;

/* The control API's routes (9.5). */
typedef enum b2sd_api {
  B2SD_API_NONE = 0,
  B2SD_API_ROOT,                 /* GET /api/v1 */
  B2SD_API_ARM,                  /* POST /api/v1/acquisitions */
  B2SD_API_LIST,                 /* GET  /api/v1/acquisitions */
  B2SD_API_GET,                  /* GET  .../{id} */
  B2SD_API_FILES,                /* GET  .../{id}/files */
  B2SD_API_STOP,                 /* POST .../{id}/stop */
  B2SD_API_ABORT,                /* POST .../{id}/abort */
  B2SD_API_WAIT,                 /* GET  .../{id}/wait */
} b2sd_api;

/* Whether a route changes state (needs a token, refuses Origin). */
static inline bool b2sd_api_changes(b2sd_api a) {
  return a == B2SD_API_ARM || a == B2SD_API_STOP || a == B2SD_API_ABORT;
}

#define B2SD_ROUTE_NAME_MAX 64

typedef struct b2sd_route {
  b2sd_route_kind kind;
  char stream[B2SD_ROUTE_NAME_MAX + 1]; /* THUMB, LIVE: the stream's name */
  b2sd_api api;                  /* API, API_METHOD */
  char id[B2SD_ROUTE_NAME_MAX + 1];     /* API: the acquisition's id */
  const char *allow;             /* API_METHOD: the Allow header */
  bool json;                     /* under /api/: errors are JSON
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

/* The query parameters of an API route (9.1, 9.5), each at most once. */
typedef struct b2sd_api_params {
  char state[128];               /* LIST: comma list; WAIT: one; "" none */
  int limit;                     /* LIST 1..256 (256), FILES 1..1000 (1000) */
  char after[B2SD_ROUTE_NAME_MAX + 1];  /* LIST: an id */
  uint64_t after_file;           /* FILES */
  bool has_committed;            /* WAIT: committed=N */
  uint64_t committed;
  double timeout_s;              /* WAIT: 0..60 (10) */
  int allow_loss;                /* WAIT: -1 not given, 0, 1 */
} b2sd_api_params;

#define B2SD_API_MAX_PARAMS 8

/* Check the n parameters (key, value) of route `api` into p: 0, or -1
 * with the parameter at fault in field[cap] (unknown, repeated, or out of
 * range; too many parameters: field ""). */
int b2sd_api_params_parse(b2sd_api api, const char *const *keys,
                          const char *const *vals, size_t n,
                          b2sd_api_params *p, char *field, size_t cap);

#endif

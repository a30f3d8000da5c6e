/* Which answer an HTTP request gets (httproute.c): a pure function of the
 * method and the path, and the query parameters of the control API's
 * routes (docs/ACQUISITIONS.md 9), fuzzed (tests/fuzz/fuzz_http.c). */
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
  char stream[B2SD_ROUTE_NAME_MAX + 1]; /* THUMB: the stream's name */
  b2sd_api api;                  /* API, API_METHOD */
  char id[B2SD_ROUTE_NAME_MAX + 1];     /* API: the acquisition's id */
  const char *allow;             /* API_METHOD: the Allow header */
} b2sd_route;

/* Route method and url (the path as given, a query string ignored). */
void b2sd_http_route(const char *method, const char *url, b2sd_route *out);

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

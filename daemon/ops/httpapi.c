/* The control API on the HTTP listener (httpapi.h). */
#define _GNU_SOURCE
#include "httpapi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_acq_errors.h"
#include "b2s_acq_json.h"
#include "clock.h"
#include "registry.h"

#define TOKEN_FILE_MAX (64 * 1024)
#define TOKEN_MIN 32
#define TOKEN_MAX 512

typedef struct apireq {
  struct apireq *next;           /* in the queue, then the I/O thread's */
  struct MHD_Connection *c;
  b2sd_route rt;
  b2sd_api_params params;
  b2sd_acq_who who;
  bool authed;                   /* a valid token came */
  char *body;
  size_t len;
  bool too_large;
  bool queued;
  uint64_t deadline_ns;          /* a wait's */
  /* the answer: written by the I/O thread under the lock before the
   * resume, read by the MHD thread after it */
  bool answered;
  b2sd_acq_reply reply;
} apireq;

struct b2sd_httpapi {
  b2sd_server *srv;              /* b2sd_wake, and the registry on the
                                    I/O thread's side */
  pthread_mutex_t lock;          /* a leaf: the queue */
  apireq *queue;
  apireq *pending;               /* I/O thread: waits */
  int npending;
  /* settings copied at start (restart keys) */
  char token_file[B2S_CONFIG_PATH_MAX];
  int64_t max_body;
  int max_waits;
  bool enabled;                  /* acquisitions: configured */
  /* MHD thread: refused authentications are logged at most once a
   * second (9.2), with how many were not */
  uint64_t auth_logged_ns;
  unsigned auth_unlogged;
};

b2sd_httpapi *b2sd_httpapi_new(b2sd_server *srv) {
  b2sd_httpapi *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->srv = srv;
  pthread_mutex_init(&a->lock, NULL);
  snprintf(a->token_file, sizeof a->token_file, "%s",
           srv->dcfg.http.token_file);
  a->max_body = srv->dcfg.http.max_body;
  a->max_waits = srv->dcfg.http.max_waits;
  a->enabled = srv->dcfg.acq.enabled;
  return a;
}

void b2sd_httpapi_free(b2sd_httpapi *a) {
  if (!a)
    return;
  pthread_mutex_destroy(&a->lock);
  free(a);
}

/* ---- answers (MHD thread) --------------------------------------------------- */

static enum MHD_Result send_reply(struct MHD_Connection *c,
                                  b2sd_acq_reply *r, const char *allow,
                                  bool bearer_error) {
  size_t n = r->body ? strlen(r->body) : 0;
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      n, r->body, MHD_RESPMEM_MUST_FREE);
  r->body = NULL;
  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", "application/json");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  if (r->location[0])
    MHD_add_response_header(resp, "Location", r->location);
  if (allow)
    MHD_add_response_header(resp, "Allow", allow);
  if (r->status == 503)
    MHD_add_response_header(resp, "Retry-After", "1");
  if (r->status == 401)
    MHD_add_response_header(resp, "WWW-Authenticate",
                            bearer_error ? "Bearer realm=\"b2streamd\", "
                                           "error=\"invalid_token\""
                                         : "Bearer realm=\"b2streamd\"");
  enum MHD_Result rc = MHD_queue_response(c, (unsigned)r->status, resp);
  MHD_destroy_response(resp);
  return rc;
}

static enum MHD_Result send_error(struct MHD_Connection *c, int code,
                                  const char *field, const char *msg,
                                  const char *allow) {
  b2sd_acq_reply r = {0};
  b2sd_acq_error(code, field, msg, &r);
  return send_reply(c, &r, allow, code == B2S_ACQ_E_AUTH_INVALID);
}

/* ---- tokens (MHD thread) ---------------------------------------------------- */

static bool token_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || strchr("-._~+/=", ch);
}

/* Equal in a time that does not depend on where they differ. */
static bool same(const char *a, size_t an, const char *b, size_t bn) {
  unsigned char d = an != bn;
  for (size_t i = 0; i < an && i < bn; i++)
    d |= (unsigned char)(a[i] ^ b[i]);
  return d == 0;
}

/* Whether the token is in the file (read again each time: a reload, or an
 * edit, applies to the next request); its name into who. */
static bool token_known(const char *file, const char *tok, size_t tn,
                        char *who, size_t cap) {
  int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat sb;
  if (fd < 0)
    return false;
  if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
      (sb.st_mode & (S_IWGRP | S_IWOTH | S_IROTH))) {
    LOG_W("http: %s is not a regular file that only its owner's group may "
          "read: no token is taken", file);
    close(fd);
    return false;
  }
  char *buf = malloc(TOKEN_FILE_MAX + 1);
  ssize_t n = buf ? read(fd, buf, TOKEN_FILE_MAX) : -1;
  close(fd);
  if (n < 0) {
    free(buf);
    return false;
  }
  buf[n] = '\0';
  bool found = false;
  for (char *line = buf, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    size_t ln = strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrst"
                             "uvwxyz0123456789-._~+/=");
    if (line[0] == '#' || ln < TOKEN_MIN || ln > TOKEN_MAX)
      continue;
    if (same(line, ln, tok, tn) && !found) {
      found = true;
      const char *name = line + ln + strspn(line + ln, " \t");
      size_t nn = strcspn(name, " \t\r");
      snprintf(who, cap, "%.*s", (int)(nn ? nn : 7), nn ? name : "unnamed");
    }
  }
  free(buf);
  return found;
}

/* 0 when the request may go on; else the API code (401). */
static int check_auth(b2sd_httpapi *a, struct MHD_Connection *c, apireq *q) {
  snprintf(q->who.who, sizeof q->who.who, "anonymous");
  bool needs = a->token_file[0] &&
               (b2sd_api_changes(q->rt.api) || a->srv->dcfg.http.auth_reads);
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                              "Authorization");
  if (!a->token_file[0])
    q->authed = true;
  if (!h)
    return needs ? B2S_ACQ_E_AUTH_REQUIRED : 0;
  if (!a->token_file[0])
    return 0;
  if (strncmp(h, "Bearer ", 7) != 0)
    return B2S_ACQ_E_AUTH_INVALID;
  const char *tok = h + 7;
  size_t tn = strlen(tok);
  for (size_t i = 0; i < tn; i++)
    if (!token_char(tok[i]))
      return B2S_ACQ_E_AUTH_INVALID;
  if (tn < TOKEN_MIN || tn > TOKEN_MAX ||
      !token_known(a->token_file, tok, tn, q->who.who, sizeof q->who.who)) {
    snprintf(q->who.who, sizeof q->who.who, "anonymous");
    return B2S_ACQ_E_AUTH_INVALID;
  }
  q->authed = true;
  return 0;
}

static void peer_text(struct MHD_Connection *c, char *out, size_t cap) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  snprintf(out, cap, "?");
  if (!ci || !ci->client_addr)
    return;
  char host[INET6_ADDRSTRLEN] = "?";
  const struct sockaddr *sa = ci->client_addr;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const void *)sa;
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    snprintf(out, cap, "%s:%u", host, ntohs(in->sin_port));
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in = (const void *)sa;
    inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    snprintf(out, cap, "[%s]:%u", host, ntohs(in->sin6_port));
  }
}

/* ---- the request's checks (MHD thread) ------------------------------------- */

typedef struct qargs {
  const char *keys[B2SD_API_MAX_PARAMS + 1];
  const char *vals[B2SD_API_MAX_PARAMS + 1];
  size_t n;
} qargs;

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind,
                                   const char *key, const char *value) {
  (void)kind;
  qargs *q = cls;
  if (q->n <= B2SD_API_MAX_PARAMS) {
    q->keys[q->n] = key;
    q->vals[q->n] = value ? value : "";
  }
  q->n++;
  return MHD_YES;
}

static bool media_json(const char *t) {
  if (!t)
    return false;
  size_t n = strlen("application/json");
  if (strncasecmp(t, "application/json", n) != 0)
    return false;
  const char *p = t + n;
  p += strspn(p, " ");
  if (!*p)
    return true;
  if (*p != ';')
    return false;
  p++;
  p += strspn(p, " ");
  return strcasecmp(p, "charset=utf-8") == 0;
}

/* The first call: headers only.  0 and q filled, or the answer sent. */
static int first_call(b2sd_httpapi *a, struct MHD_Connection *c, apireq *q,
                      enum MHD_Result *sent) {
  int code = check_auth(a, c, q);
  if (code) {
    peer_text(c, q->who.from, sizeof q->who.from);
    uint64_t now = b2sd_now_ns();
    if (now - a->auth_logged_ns >= 1000000000u) {
      LOG_W("http: %s from %s refused: %s (%u more refused since the last "
            "line)", q->rt.api == B2SD_API_ARM ? "arm" : "request",
            q->who.from, b2s_acq_code_name(code), a->auth_unlogged);
      a->auth_logged_ns = now;
      a->auth_unlogged = 0;
    } else {
      a->auth_unlogged++;
    }
    *sent = send_error(c, code, NULL, NULL, NULL);
    return -1;
  }
  if (b2sd_api_changes(q->rt.api) &&
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin")) {
    *sent = send_error(c, B2S_ACQ_E_CROSS_ORIGIN, NULL, "a request that "
                       "changes state must not carry an Origin header", NULL);
    return -1;
  }
  if (!a->enabled && q->rt.api != B2SD_API_ROOT) {
    *sent = send_error(c, B2S_ACQ_E_ACQUISITIONS_OFF, NULL, NULL, NULL);
    return -1;
  }
  qargs args = {.n = 0};
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &args);
  char field[80];
  if (b2sd_api_params_parse(q->rt.api, args.keys, args.vals,
                            args.n, &q->params, field, sizeof field) < 0) {
    *sent = send_error(c, B2S_ACQ_E_BAD_PARAMETER, field[0] ? field : NULL,
                       NULL, NULL);
    return -1;
  }
  const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                "Content-Length");
  if (len && strtoll(len, NULL, 10) > a->max_body) {
    *sent = send_error(c, B2S_ACQ_E_BODY_TOO_LARGE, NULL, NULL, NULL);
    return -1;
  }
  const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 "Content-Type");
  bool body = (len && strcmp(len, "0") != 0) ||
              MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                          "Transfer-Encoding");
  if ((q->rt.api == B2SD_API_ARM || body) && !media_json(type)) {
    *sent = send_error(c, B2S_ACQ_E_UNSUPPORTED_MEDIA_TYPE, NULL, NULL, NULL);
    return -1;
  }
  peer_text(c, q->who.from, sizeof q->who.from);
  return 0;
}

/* Stop and abort take no body or {} (9.5). */
static bool empty_object(const apireq *q) {
  if (q->len == 0)
    return true;
  json_object *o = NULL;
  b2s_acq_err e;
  bool ok = b2s_acq_json_parse(q->body, q->len, B2S_ACQ_JSON_DEPTH, &o,
                               &e) == 0 &&
            json_object_object_length(o) == 0;
  json_object_put(o);
  return ok;
}

static void enqueue(b2sd_httpapi *a, apireq *q) {
  q->queued = true;
  if (q->rt.api == B2SD_API_WAIT)
    q->deadline_ns = b2sd_now_ns() + (uint64_t)(q->params.timeout_s * 1e9);
  pthread_mutex_lock(&a->lock);
  q->next = a->queue;
  a->queue = q;
  pthread_mutex_unlock(&a->lock);
  b2sd_wake(a->srv);
}

enum MHD_Result b2sd_httpapi_request(b2sd_httpapi *a, struct MHD_Connection *c,
                                     const b2sd_route *rt, const char *method,
                                     const char *upload, size_t *upload_len,
                                     void **con_cls) {
  (void)method;
  apireq *q = *con_cls;
  if (!q) {
    if (rt->kind == B2SD_ROUTE_API_METHOD)
      return send_error(c, B2S_ACQ_E_METHOD_NOT_ALLOWED, NULL, NULL,
                        rt->allow);
    q = calloc(1, sizeof *q);
    if (!q)
      return MHD_NO;
    q->c = c;
    q->rt = *rt;
    *con_cls = q;
    enum MHD_Result sent = MHD_YES;
    if (first_call(a, c, q, &sent) < 0)
      q->answered = true;        /* sent: the body, if any, is dropped */
    return sent;
  }
  if (*upload_len) {
    size_t n = *upload_len;
    *upload_len = 0;
    if (q->answered || q->too_large)
      return MHD_YES;
    if ((int64_t)(q->len + n) > a->max_body) {
      q->too_large = true;       /* a chunked body counted as it comes */
      return MHD_YES;
    }
    char *b = realloc(q->body, q->len + n + 1);
    if (!b)
      return MHD_NO;
    memcpy(b + q->len, upload, n);
    q->body = b;
    q->len += n;
    q->body[q->len] = '\0';
    return MHD_YES;
  }
  if (q->answered && !q->queued)
    return MHD_YES;              /* an early answer went out */
  if (q->too_large) {
    q->answered = true;
    return send_error(c, B2S_ACQ_E_BODY_TOO_LARGE, NULL, NULL, NULL);
  }
  if ((q->rt.api == B2SD_API_STOP || q->rt.api == B2SD_API_ABORT) &&
      !empty_object(q)) {
    q->answered = true;
    return send_error(c, B2S_ACQ_E_BAD_JSON, NULL, "stop and abort take no "
                      "body or {}", NULL);
  }
  if (!q->queued) {
    MHD_suspend_connection(c);   /* resumed by the I/O thread's answer */
    enqueue(a, q);
    return MHD_YES;
  }
  pthread_mutex_lock(&a->lock);
  bool done = q->answered;
  pthread_mutex_unlock(&a->lock);
  if (!done)
    return MHD_YES;
  q->queued = false;
  return send_reply(c, &q->reply, NULL, false);
}

void b2sd_httpapi_completed(void *con_cls) {
  apireq *q = con_cls;
  if (!q)
    return;
  free(q->reply.body);
  free(q->body);
  free(q);
}

/* ---- the I/O thread ------------------------------------------------------------ */

static void answer(b2sd_httpapi *a, apireq *q) {
  pthread_mutex_lock(&a->lock);
  q->answered = true;
  pthread_mutex_unlock(&a->lock);
  MHD_resume_connection(q->c);
}

/* The list's `state`: a mask of states, or -1 for a name not known. */
static int states_mask(const char *list, unsigned *mask) {
  *mask = 0;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *sp = NULL, *t = strtok_r(buf, ",", &sp); t;
       t = strtok_r(NULL, ",", &sp)) {
    int s = b2sd_acq_state_by_name(t);
    if (s < 0 || s == B2SD_ACQ_NSTATES)
      return -1;
    *mask |= s == B2SD_ACQ_NSTATES + 1 ? 7u : 1u << s;
  }
  return 0;
}

/* Answer q now; false: a wait that stays pending. */
static bool dispatch(b2sd_httpapi *a, apireq *q, bool timed_out) {
  b2sd_acqreg *r = a->srv->acq;
  const b2sd_api_params *p = &q->params;
  b2sd_acq_reply *out = &q->reply;
  if (q->rt.api == B2SD_API_ROOT) {
    b2sd_acq_api(r, q->authed, out);
    return true;
  }
  if (!r) {
    b2sd_acq_error(B2S_ACQ_E_ACQUISITIONS_OFF, NULL, NULL, out);
    return true;
  }
  switch (q->rt.api) {
  case B2SD_API_ARM:
    b2sd_acq_arm(r, q->body ? q->body : "", q->len, &q->who, out);
    return true;
  case B2SD_API_LIST: {
    unsigned mask = 0;
    if (p->state[0] && states_mask(p->state, &mask) < 0)
      b2sd_acq_error(B2S_ACQ_E_BAD_PARAMETER, "state", NULL, out);
    else
      b2sd_acq_list(r, mask, p->limit, p->after, out);
    return true;
  }
  case B2SD_API_GET:
    b2sd_acq_get(r, q->rt.id, out);
    return true;
  case B2SD_API_FILES:
    b2sd_acq_files(r, q->rt.id, p->after_file, p->limit, out);
    return true;
  case B2SD_API_STOP:
  case B2SD_API_ABORT:
    b2sd_acq_stop(r, q->rt.id, q->rt.api == B2SD_API_ABORT, &q->who, out);
    return true;
  case B2SD_API_WAIT: {
    b2sd_acq_waitq w = {.committed = p->committed, .state = -1,
                        .allow_loss = p->allow_loss};
    if (p->state[0] &&
        ((w.state = b2sd_acq_state_by_name(p->state)) < 0 ||
         w.state > B2SD_ACQ_NSTATES)) {
      b2sd_acq_error(B2S_ACQ_E_BAD_PARAMETER, "state", NULL, out);
      return true;
    }
    return b2sd_acq_wait(r, q->rt.id, &w, timed_out, out);
  }
  default:
    b2sd_acq_error(B2S_ACQ_E_NOT_FOUND, NULL, NULL, out);
    return true;
  }
}

void b2sd_httpapi_turn(b2sd_httpapi *a) {
  if (!a)
    return;
  pthread_mutex_lock(&a->lock);
  apireq *fresh = a->queue;
  a->queue = NULL;
  pthread_mutex_unlock(&a->lock);
  uint64_t now = b2sd_now_ns();
  for (apireq *q = fresh, *next; q; q = next) {
    next = q->next;
    bool wait = q->rt.api == B2SD_API_WAIT;
    if (wait && a->npending >= a->max_waits) {
      b2sd_acq_error(B2S_ACQ_E_TOO_MANY_WAITS, NULL, NULL, &q->reply);
      answer(a, q);
    } else if (dispatch(a, q, now >= q->deadline_ns)) {
      answer(a, q);
    } else {
      q->next = a->pending;
      a->pending = q;
      a->npending++;
    }
  }
  for (apireq **pp = &a->pending; *pp;) {
    apireq *q = *pp;
    if (dispatch(a, q, now >= q->deadline_ns)) {
      *pp = q->next;
      a->npending--;
      answer(a, q);
    } else {
      pp = &q->next;
    }
  }
}

void b2sd_httpapi_close(b2sd_httpapi *a) {
  if (!a)
    return;
  b2sd_httpapi_turn(a);          /* what came answered, as far as it can */
  pthread_mutex_lock(&a->lock);
  apireq *rest = a->queue;
  a->queue = NULL;
  pthread_mutex_unlock(&a->lock);
  while (a->pending) {
    apireq *q = a->pending;
    a->pending = q->next;
    q->next = rest;
    rest = q;
  }
  a->npending = 0;
  for (apireq *q = rest, *next; q; q = next) {
    next = q->next;
    free(q->reply.body);
    b2sd_acq_error(B2S_ACQ_E_DRAINING, NULL, NULL, &q->reply);
    answer(a, q);
  }
}

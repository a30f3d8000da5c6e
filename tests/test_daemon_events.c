/* GET /api/v1/events (docs/ACQUISITIONS.md section 10) against the real
 * b2streamd over real sockets: the run's `started` event and its id, a
 * reconnect with Last-Event-ID (header or parameter, the header winning)
 * that replays what is held, `events_lost` for an id of another run,
 * (read by our socket reader and by curl), keepalive comments, refused ids and parameters, at most 8 streams at a
 * time (503 beyond) while streams that never read hold nothing up: a
 * producer's every buffer is acknowledged, a closed stream's place is
 * taken again, and the daemon stops cleanly with streams open; a whole
 * acquisition's events, armed, fed and stopped with curl and the client
 * library. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/stat.h>

#include "b2stream_client.h"
#include "daemon_harness.h"
#include "http_client.h"
#include "ts.h"

static int port;

static void up(env *e) {
  port = http_free_port();
  assert_true(port > 0);
  char yaml[1024];
  snprintf(yaml, sizeof yaml, "%shttp: {listen: \"127.0.0.1:%d\"}\n"
           "streams:\n  w:\n"
           "    durability: {ack: write, group_count: 8, group_interval_ms: 5}\n",
           ENV_YAML_HEAD "workers: 2\n", port);
  env_up(e, yaml);
}

/* An event stream: the socket and what it received so far. */
typedef struct sse {
  int fd;
  char buf[65536];
  size_t len;
} sse;

static void sse_open(sse *s, const char *path, const char *extra) {
  memset(s, 0, sizeof *s);
  s->fd = http_connect(port);
  assert_true(s->fd >= 0);
  char req[1024];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "%s\r\n", path, extra);
  assert_int_equal(send(s->fd, req, (size_t)n, MSG_NOSIGNAL), n);
}

/* Read until `want` occurs (true) or ms pass or the server closes. */
static bool sse_until(sse *s, const char *want, int ms) {
  long long end = ts_now_ms() + ms;
  for (;;) {
    s->buf[s->len] = '\0';
    if (strstr(s->buf, want))
      return true;
    long long left = end - ts_now_ms();
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    if (left <= 0 || poll(&p, 1, (int)left) <= 0)
      return false;
    ssize_t r = recv(s->fd, s->buf + s->len, sizeof s->buf - 1 - s->len, 0);
    if (r <= 0)
      return false;
    s->len += (size_t)r;
  }
}

static void sse_close(sse *s) { close(s->fd); }

/* The body of s without its chunked transfer coding, in out. */
static void dechunk(const sse *s, char *out, size_t cap) {
  const char *p = strstr(s->buf, "\r\n\r\n");
  size_t used = 0;
  assert_non_null(p);
  p += 4;
  for (;;) {
    char *end;
    unsigned long n = strtoul(p, &end, 16);
    if (end == p || n == 0 || strncmp(end, "\r\n", 2) != 0)
      break;
    p = end + 2;
    if ((size_t)(s->buf + s->len - p) < n + 2 || used + n >= cap)
      break;
    memcpy(out + used, p, n);
    used += n;
    p += n + 2;
  }
  out[used] = '\0';
}

/* The run's epoch, from an events_lost reconnect (an id of another run
 * replays everything held, the `started` event first). */
static void epoch_of(char *epoch) {
  sse s;
  sse_open(&s, "/api/v1/events", "Last-Event-ID: 0000000000000000-5\r\n");
  assert_true(sse_until(&s, "event: started\ndata: ", WAIT_MS));
  assert_non_null(strstr(s.buf, "HTTP/1.1 200"));
  assert_non_null(strcasestr(s.buf, "Content-Type: text/event-stream"));
  const char *lost = strstr(s.buf, "event: events_lost\ndata: {\"last_event_id\":"
                                   "\"0000000000000000-5\",\"first_held\":\"");
  const char *started = strstr(s.buf, "\nevent: started\n");
  assert_non_null(strstr(s.buf, "retry: 2000\n\n"));
  assert_non_null(lost);
  assert_non_null(strstr(lost, "\"reason\":\"restarted\"}"));
  assert_true(lost < started);
  assert_true(sse_until(&s, "}\n\n", WAIT_MS));
  const char *id = strstr(s.buf, "id: ");
  assert_non_null(id);
  assert_true(id < started);
  assert_int_equal(sscanf(id, "id: %16[0-9a-f]-1\n", epoch), 1);
  assert_int_equal(strlen(epoch), 16);
  assert_non_null(strstr(started, "\"server\":\"b2streamd "));
  sse_close(&s);
}

static void test_events_replay(void **state) {
  (void)state;
  env e;
  up(&e);
  char epoch[17], h[128], path[128];
  epoch_of(epoch);
  /* the id before the first: started replayed, nothing lost */
  sse s;
  snprintf(h, sizeof h, "Last-Event-ID: %s-0\r\n", epoch);
  sse_open(&s, "/api/v1/events", h);
  assert_true(sse_until(&s, "event: started\n", WAIT_MS));
  assert_null(strstr(s.buf, "events_lost"));
  sse_close(&s);
  /* the header wins over the parameter */
  snprintf(path, sizeof path, "/api/v1/events?last_event_id=%s-1", epoch);
  sse_open(&s, path, h);
  assert_true(sse_until(&s, "event: started\n", WAIT_MS));
  sse_close(&s);
  /* curl, a client we did not write, reads the same replay */
  if (access("/usr/bin/curl", X_OK) == 0) {
    char cmd[256], out[4096] = "";
    snprintf(cmd, sizeof cmd, "curl -sN --max-time 3 -H 'Last-Event-ID: "
             "%s-0' http://127.0.0.1:%d/api/v1/events", epoch, port);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    pclose(f);
    char want[64];
    snprintf(want, sizeof want, "id: %s-1\nevent: started\ndata: {", epoch);
    if (!strstr(out, "retry: 2000\n") || !strstr(out, want))
      fail_msg("curl read:\n%s", out);
  }
  /* the parameter alone: after started, so nothing but comments */
  sse_open(&s, path, "");
  assert_true(sse_until(&s, ": keepalive\n\n", WAIT_MS));
  assert_null(strstr(s.buf, "event: "));
  sse_close(&s);
  env_down(&e);
}

/* The error code of a JSON error answer. */
static void expect_error(const char *method, const char *path,
                         const char *extra, int status, const char *code) {
  http_reply r;
  http_request(port, method, path, extra, 10000, &r);
  if (r.status != status)
    fail_msg("%s %s: %d, not %d\n%s", method, path, r.status, status, r.head);
  char want[80];
  snprintf(want, sizeof want, "{\"error\":{\"code\":\"%s\"", code);
  /* a HEAD answer has no body */
  if (strcmp(method, "HEAD") != 0 && (!r.body || !strstr(r.body, want)))
    fail_msg("%s %s: %s", method, path, r.body ? r.body : "(no body)");
  http_reply_free(&r);
}

static void test_events_refused(void **state) {
  (void)state;
  env e;
  up(&e);
  const char *bad_ids[] = {"zz", "0123456789abcdef-01", "0123456789abcdef-",
                           "0123456789abcde-1", "0123456789abcdef-1-2"};
  for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
    char h[128], path[128];
    snprintf(h, sizeof h, "Last-Event-ID: %s\r\n", bad_ids[i]);
    expect_error("GET", "/api/v1/events", h, 400, "bad_parameter");
    snprintf(path, sizeof path, "/api/v1/events?last_event_id=%s", bad_ids[i]);
    expect_error("GET", path, "", 400, "bad_parameter");
  }
  expect_error("GET", "/api/v1/events?since=1", "", 400, "bad_parameter");
  expect_error("GET", "/api/v1/events?acquisition=.x", "", 400, "bad_parameter");
  expect_error("GET", "/api/v1/events?acquisition=a&acquisition=b", "", 400,
               "bad_parameter");
  expect_error("POST", "/api/v1/events", "", 405, "method_not_allowed");
  expect_error("HEAD", "/api/v1/events", "", 405, "method_not_allowed");
  env_down(&e);
}

/* Eight streams that never read past their first bytes, a ninth refused
 * (503, Retry-After), a producer's buffers all acknowledged meanwhile; a
 * stream closed gives its place back; the daemon stops with streams
 * open. */
static void test_events_bounded(void **state) {
  (void)state;
  env e;
  up(&e);
  static sse s[8];
  for (int i = 0; i < 8; i++) {
    sse_open(&s[i], "/api/v1/events", "");
    assert_true(sse_until(&s[i], "retry: 2000\n\n", WAIT_MS));
  }
  http_reply r;
  http_request(port, "GET", "/api/v1/events", "", 10000, &r);
  assert_int_equal(r.status, 503);
  assert_non_null(strcasestr(r.head, "Retry-After: 1"));
  assert_non_null(strstr(r.body, "\"too_many_event_streams\""));
  http_reply_free(&r);

  void *ps = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(ps, "w", "", &o), 0);
  prod p = prod_opened(ps, &o, 200, 4000, 7);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  assert_int_equal(p.ndropped, 0);
  cli_close(&p);

  /* a closed stream is noticed at its next keepalive at the latest */
  sse_close(&s[0]);
  bool again = false;
  for (long long end = ts_now_ms() + WAIT_MS; !again && ts_now_ms() < end;) {
    sse t;
    sse_open(&t, "/api/v1/events", "");
    again = sse_until(&t, "retry: 2000\n\n", 2000);
    if (again)
      s[0] = t;
    else {
      sse_close(&t);
      usleep(200000);
    }
  }
  assert_true(again);
  env_down(&e);                  /* exits 0 with eight streams open */
  for (int i = 0; i < 8; i++)
    sse_close(&s[i]);
}

/* curl, one request with a JSON body (or none); its status. */
static int curl_status(const char *method, const char *path,
                       const char *body) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "/usr/bin/curl -s -o /dev/null -w '%%{http_code}' "
           "-X %s %s%s%s http://127.0.0.1:%d%s", method,
           body ? "-H 'Content-Type: application/json' -d '" : "",
           body ? body : "", body ? "'" : "", port, path);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  int code = 0;
  if (fscanf(f, "%d", &code) != 1)
    code = 0;
  pclose(f);
  return code;
}

/* A whole acquisition's events, armed, fed and stopped over the control
 * API: armed, writing, file, progress, closing and end, in that order,
 * with consecutive ids; a reconnect after `armed` gets the same text
 * again, byte for byte. */
static void test_events_acquisition(void **state) {
  (void)state;
  if (access("/usr/bin/curl", X_OK) != 0)
    skip();
  port = http_free_port();
  char yaml[2048];
  snprintf(yaml, sizeof yaml, "%shttp: {listen: \"127.0.0.1:%d\"}\n"
           "acquisitions: {roots: [roots], disk_floor: 0, anonymous: true}\n"
           "streams:\n  d1: {acquisitions: only, durability: "
           "{group_count: 1, group_interval_ms: 5}}\n",
           ENV_YAML_HEAD "workers: 2\n", port);
  env e;
  env_init_config(&e, yaml);
  char roots[400], dir[512], body[1024];
  snprintf(roots, sizeof roots, "%s/roots", e.dir);
  assert_int_equal(mkdir(roots, 0750), 0);
  snprintf(dir, sizeof dir, "%s/scan", roots);
  assert_int_equal(mkdir(dir, 0750), 0);
  env_start(&e);
  sse s;
  sse_open(&s, "/api/v1/events", "");
  assert_true(sse_until(&s, "retry: 2000\n\n", WAIT_MS));
  snprintf(body, sizeof body, "{\"id\": \"e1\", \"input\": {\"stream\": "
           "\"d1\"}, \"directory\": \"%s\", \"frames_per_file\": 4}", dir);
  assert_int_equal(curl_status("POST", "/api/v1/acquisitions", body), 201);
  assert_int_equal(curl_status("GET", "/api/v1/acquisitions/e1/wait?"
                               "state=writing&timeout=10", NULL), 200);
  b2sc_session *cs = NULL;
  b2sc_producer *p = NULL;
  assert_int_equal(b2sc_connect(e.sock, "events-test", &cs), 0);
  assert_int_equal(b2sc_producer_open(cs, "d1", NULL, &p), 0);
  uint8_t buf[4096];
  for (int i = 0; i < 10; i++) {
    memset(buf, i, sizeof buf);
    assert_int_equal(b2sc_send(p, buf, sizeof buf, WAIT_MS), 0);
  }
  assert_int_equal(b2sc_flush(p, WAIT_MS), 0);
  assert_int_equal(curl_status("POST", "/api/v1/acquisitions/e1/stop", NULL),
                   202);
  assert_true(sse_until(&s, "event: end\n", WAIT_MS));
  assert_true(sse_until(&s, "}\n\n", WAIT_MS));
  const char *names[] = {"armed", "writing", "file", "progress", "closing",
                         "end"};
  const char *at = s.buf;
  for (size_t i = 0; i < 6; i++) {
    char want[40];
    snprintf(want, sizeof want, "\nevent: %s\ndata: {", names[i]);
    const char *q = strstr(at, want);
    if (!q)
      fail_msg("no %s event after the ones before:\n%s", names[i], s.buf);
    at = q;
  }
  /* ids consecutive, from the armed event's */
  char epoch[17];
  unsigned long long first = 0, prev = 0;
  int ids = 0;
  for (const char *q = strstr(s.buf, "id: "); q; q = strstr(q + 1, "\nid: ")) {
    unsigned long long n;
    if (q != s.buf && *q == '\n')
      q++;
    assert_int_equal(sscanf(q, "id: %16[0-9a-f]-%llu", epoch, &n), 2);
    if (ids++ == 0)
      first = n;
    else
      assert_true(n == prev + 1);
    prev = n;
  }
  assert_true(ids >= 6);
  assert_non_null(strstr(s.buf, "\"id\":\"e1\""));
  /* again after the armed event: the rest, the same bytes */
  char h[80];
  snprintf(h, sizeof h, "Last-Event-ID: %s-%llu\r\n", epoch, first);
  sse r;
  sse_open(&r, "/api/v1/events", h);
  assert_true(sse_until(&r, "event: end\n", WAIT_MS));
  assert_true(sse_until(&r, "}\n\n", WAIT_MS));
  char after[64];
  snprintf(after, sizeof after, "id: %s-%llu\n", epoch, first + 1);
  static char b1[65536], b2[65536];
  dechunk(&s, b1, sizeof b1);
  dechunk(&r, b2, sizeof b2);
  /* a quiet moment may have put a keepalive between the live events */
  for (char *k; (k = strstr(b1, ": keepalive\n\n"));)
    memmove(k, k + 13, strlen(k + 13) + 1);
  const char *a1 = strstr(b1, after), *a2 = strstr(b2, after);
  assert_non_null(a1);
  assert_non_null(a2);
  const char *e1 = strstr(a1, "event: end\n"), *e2 = strstr(a2, "event: end\n");
  assert_int_equal(e1 - a1, e2 - a2);
  assert_memory_equal(a1, a2, (size_t)(e1 - a1));
  assert_null(strstr(r.buf, "event: armed"));
  sse_close(&r);
  sse_close(&s);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(cs);
  env_down(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_events_replay),
      cmocka_unit_test(test_events_refused),
      cmocka_unit_test(test_events_bounded),
      cmocka_unit_test(test_events_acquisition),
  };
  return harness_run(tests);
}

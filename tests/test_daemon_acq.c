/* Acquisitions against the real b2streamd (docs/ACQUISITIONS.md): armed,
 * stopped and aborted with curl over the real HTTP listener, frames from
 * the real client library over ZeroMQ and over shared memory, the files
 * read back with our reader and with python-blosc2 (when the venv is
 * there); every refusal of 6.1 that this daemon serves, with nothing
 * created; hostile requests while the service stays up. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_frame.h"
#include "b2s_meta.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "http_client.h"
#include "ts.h"
#include "venv_python.h"

#define TOKEN "Zk3uU0m7d8Qb1xP4sL9vT2cN6yR5wE0aH3jK8fG1"
#define FRAME_BYTES 4096

static env E;
static int port;
static char roots[400], tokfile[400];

static int setup(void **state) {
  (void)state;
  port = http_free_port();
  assert_true(port > 0);
  char yaml[4096];
  snprintf(yaml, sizeof yaml,
           ENV_YAML_HEAD "workers: 2\nlog_level: debug\n"
           "http: {listen: \"127.0.0.1:%d\", token_file: tokens, "
           "max_body: 4KiB, max_waits: 4}\n"
           "acquisitions: {roots: [roots], disk_floor: 0}\n"
           "streams:\n"
           "  d1: {acquisitions: only, durability: {group_count: 4, "
           "group_interval_ms: 5}}\n"
           "  d2: {acquisitions: only, codec: zstd}\n"
           "  d3: {acquisitions: only}\n"
           "  plain: {}\n", port);
  env_init_config(&E, yaml);
  snprintf(roots, sizeof roots, "%s/roots", E.dir);
  snprintf(tokfile, sizeof tokfile, "%s/tokens", E.dir);
  assert_int_equal(mkdir(roots, 0750), 0);
  FILE *f = fopen(tokfile, "w");
  assert_non_null(f);
  fprintf(f, "# test tokens\n%s alice\n", TOKEN);
  fclose(f);
  assert_int_equal(chmod(tokfile, 0600), 0);
  env_start(&E);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  env_down(&E);
  return 0;
}

/* ---- curl ------------------------------------------------------------------ */

typedef struct ans {
  int status;
  char *body;
  json_object *j;
} ans;

static void ans_free(ans *a) {
  free(a->body);
  json_object_put(a->j);
  *a = (ans){0};
}

/* One request with curl: method, path, the headers given (each "-H"),
 * body (NULL: none). */
static ans curl(const char *method, const char *path, const char *token,
                const char *extra_header, const char *body) {
  char bodyf[512], outf[512], cmd[4096];
  snprintf(bodyf, sizeof bodyf, "%s/curl-body", E.dir);
  snprintf(outf, sizeof outf, "%s/curl-out", E.dir);
  if (body) {
    FILE *f = fopen(bodyf, "w");
    assert_non_null(f);
    fwrite(body, 1, strlen(body), f);
    fclose(f);
  }
  char auth[700] = "";
  if (token)
    snprintf(auth, sizeof auth, "-H 'Authorization: Bearer %s'", token);
  snprintf(cmd, sizeof cmd,
           "/usr/bin/curl -s -o %s -w '%%{http_code}' -X %s %s %s%s%s "
           "%s%s 'http://127.0.0.1:%d%s'", outf, method, auth,
           extra_header ? "-H '" : "", extra_header ? extra_header : "",
           extra_header ? "'" : "",
           body ? "-H 'Content-Type: application/json' --data-binary @" : "",
           body ? bodyf : "", port, path);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  ans a = {0};
  if (fscanf(p, "%d", &a.status) != 1)
    a.status = -1;
  pclose(p);
  FILE *f = fopen(outf, "r");
  if (f) {
    size_t cap = 1 << 20;
    a.body = calloc(1, cap);
    size_t n = fread(a.body, 1, cap - 1, f);
    a.body[n] = '\0';
    fclose(f);
    a.j = json_tokener_parse(a.body);
  }
  unlink(outf);
  return a;
}

static const char *jstr(json_object *o, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *sp = NULL, *k = strtok_r(buf, ".", &sp); k && o;
       k = strtok_r(NULL, ".", &sp))
    o = json_object_object_get(o, k);
  return o ? json_object_get_string(o) : NULL;
}

static int64_t jint(json_object *o, const char *path) {
  const char *s = jstr(o, path);
  return s ? strtoll(s, NULL, 10) : -1;
}

/* An answer's status and, for an error, its code. */
static void expect(ans *a, int status, const char *code) {
  if (a->status != status || (code && (!jstr(a->j, "error.code") ||
                                       strcmp(jstr(a->j, "error.code"),
                                              code) != 0)))
    fail_msg("expected %d %s, got %d: %s", status, code ? code : "",
             a->status, a->body ? a->body : "");
}

static void arm_body(char *out, size_t cap, const char *id, const char *stream,
                     const char *dir, const char *more) {
  snprintf(out, cap, "{\"id\": \"%s\", \"input\": {\"stream\": \"%s\"}, "
           "\"directory\": \"%s\"%s%s}", id, stream, dir, more ? ", " : "",
           more ? more : "");
}

static ans arm(const char *id, const char *stream, const char *dir,
               const char *more) {
  char body[2048];
  arm_body(body, sizeof body, id, stream, dir, more);
  return curl("POST", "/api/v1/acquisitions", TOKEN, NULL, body);
}

static ans wait_for(const char *id, const char *cond) {
  char path[256];
  snprintf(path, sizeof path, "/api/v1/acquisitions/%s/wait?%s&timeout=20",
           id, cond);
  return curl("GET", path, NULL, NULL, NULL);
}

static ans act(const char *id, const char *what) {
  char path[256];
  snprintf(path, sizeof path, "/api/v1/acquisitions/%s/%s", id, what);
  return curl("POST", path, TOKEN, NULL, NULL);
}

static void mkdir_in_roots(const char *name, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s", roots, name);
  assert_int_equal(mkdir(out, 0750), 0);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  for (struct dirent *de; (de = readdir(d));)
    n += de->d_name[0] != '.';
  closedir(d);
  return n;
}

/* ---- producers --------------------------------------------------------------- */

static void fill(uint8_t *b, int i) {
  for (int k = 0; k < FRAME_BYTES; k++)
    b[k] = (uint8_t)(i * 7 + k % 251);
}

static b2sc_session *connect_(void) {
  char ep[400];
  snprintf(ep, sizeof ep, "%s", E.sock);
  b2sc_session *s = NULL;
  assert_int_equal(b2sc_connect(ep, "acq-test", &s), 0);
  return s;
}

/* Send frames from..to-1 over ZeroMQ and flush (after each one with
 * each: every refusal is settled): the count refused so far. */
static int send_frames_(b2sc_producer *p, int from, int to, bool each) {
  uint8_t buf[FRAME_BYTES];
  for (int i = from; i < to; i++) {
    fill(buf, i);
    assert_int_equal(b2sc_send(p, buf, sizeof buf, 10000), 0);
    if (each)
      b2sc_flush(p, 10000);
  }
  int rc = b2sc_flush(p, 10000);
  b2sc_producer_stats st;
  assert_int_equal(b2sc_producer_stats_get(p, &st), 0);
  (void)rc;
  return (int)st.rejected;
}

static int send_frames(b2sc_producer *p, int from, int to) {
  return send_frames_(p, from, to, false);
}

/* Frame file f of acquisition id holds frames first..first+n-1. */
static void check_file(const char *dir, const char *id, int file, int first,
                       int n, const char *state) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s_data_%06d.b2frame", dir, id, file);
  b2s_frame *fr = NULL;
  b2s_frame_error err;
  assert_int_equal(b2s_frame_open(path, &fr, &err), 0);
  assert_int_equal(b2s_frame_nchunks(fr), n);
  uint8_t got[FRAME_BYTES], want[FRAME_BYTES];
  for (int i = 0; i < n; i++) {
    fill(want, first + i);
    assert_int_equal(b2s_frame_chunk_decompress(fr, i, NULL, got, sizeof got),
                     FRAME_BYTES);
    assert_memory_equal(got, want, FRAME_BYTES);
  }
  uint8_t *map = NULL;
  size_t len = 0;
  assert_int_equal(b2s_frame_series_get(fr, &map, &len), 0);
  /* the map names its acquisition and its end state (3.5) */
  assert_non_null(memmem(map, len, "b2stream_acquisition", 20));
  assert_non_null(memmem(map, len, id, strlen(id)));
  assert_non_null(memmem(map, len, state, strlen(state)));
  free(map);
  b2s_frame_free(fr);
}

/* python-blosc2 reads every file: chunk counts and the first byte of each
 * chunk, and the series' state. */
static void check_python(const char *dir, const char *id, int files,
                         int total, const char *state) {
  char py[512];
  if (!ts_venv_python(py, sizeof py))
    return;
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "%s -c '\n"
           "import blosc2, glob, numpy as np\n"
           "fs = sorted(glob.glob(\"%s/%s_data_*[0-9].b2frame\"))\n"
           "assert len(fs) == %d, fs\n"
           "i = 0\n"
           "for f in fs:\n"
           "    s = blosc2.open(f)\n"
           "    a = s.vlmeta[\"series\"][\"b2stream_acquisition\"]\n"
           "    assert a[\"state\"] == \"%s\", a\n"
           "    for c in range(s.nchunks):\n"
           "        b = np.frombuffer(s.decompress_chunk(c), np.uint8)\n"
           "        assert b[0] == (i * 7) %% 256, (f, c, b[0])\n"
           "        i += 1\n"
           "assert i == %d, i\n"
           "print(\"python-blosc2 ok\", i)\n'", py, dir, id, files, state,
           total);
  assert_int_equal(system(cmd), 0);
}

/* ---- tests -------------------------------------------------------------------- */

/* A whole acquisition over ZeroMQ: rollover every 4 frames, stop drains
 * every frame sent before it, the files hold each frame's bytes. */
static void test_zmq_rollover_stop(void **state) {
  (void)state;
  char dir[512];
  mkdir_in_roots("zmq", dir, sizeof dir);
  ans a = arm("z1", "d1", dir, "\"frames_per_file\": 4, "
                             "\"series\": {\"sample\": \"lyso\"}");
  expect(&a, 201, NULL);
  assert_string_equal(jstr(a.j, "counters.frames_committed"), "0");
  ans_free(&a);
  a = wait_for("z1", "state=writing");
  expect(&a, 200, NULL);
  ans_free(&a);
  b2sc_session *s = connect_();
  b2sc_producer *p = NULL;
  assert_int_equal(b2sc_producer_open(s, "d1", NULL, &p), 0);
  assert_int_equal(send_frames(p, 0, 10), 0);
  char *js = NULL;
  assert_int_equal(b2sc_stats(s, "d1", &js, NULL), 0);
  assert_non_null(strstr(js, "\"acquisition\":\"z1\""));   /* STATS, 13 */
  free(js);
  a = wait_for("z1", "committed=10");
  expect(&a, 200, NULL);
  assert_int_equal(jint(a.j, "counters.frames_committed"), 10);
  ans_free(&a);
  a = act("z1", "stop");
  expect(&a, 202, NULL);
  assert_string_equal(jstr(a.j, "stopped_by"), "alice");
  ans_free(&a);
  a = wait_for("z1", "state=done");
  expect(&a, 200, NULL);
  assert_int_equal(jint(a.j, "counters.files"), 3);
  assert_int_equal(jint(a.j, "counters.frames_received"), 10);
  ans_free(&a);
  /* after the end: refused with B2S_E_NOT_ARMED, counted, never written */
  assert_int_equal(send_frames_(p, 10, 12, true), 2);
  a = curl("GET", "/api/v1/acquisitions/z1", NULL, NULL, NULL);
  expect(&a, 200, NULL);
  assert_int_equal(jint(a.j, "counters.frames_refused_after_end"), 2);
  ans_free(&a);
  assert_int_equal(b2sc_stats(s, "d1", &js, NULL), 0);
  assert_non_null(strstr(js, "\"acquisition\":null"));
  assert_non_null(strstr(js, "\"refused_unarmed\":2"));
  free(js);
  a = curl("GET", "/api/v1/acquisitions/z1/files", NULL, NULL, NULL);
  expect(&a, 200, NULL);
  assert_int_equal(json_object_array_length(
                       json_object_object_get(a.j, "files")), 3);
  ans_free(&a);
  b2sc_producer_close(p);
  b2sc_close(s);
  check_file(dir, "z1", 1, 0, 4, "done");
  check_file(dir, "z1", 2, 4, 4, "done");
  check_file(dir, "z1", 3, 8, 2, "done");
  assert_int_equal(count_entries(dir), 6);     /* 3 files and companions */
  check_python(dir, "z1", 3, 10, "done");
}

/* frames reached ends it by itself; the frames past it are refused. */
static void test_shm_frames_reached(void **state) {
  (void)state;
  char dir[512];
  mkdir_in_roots("shm", dir, sizeof dir);
  ans a = arm("s1", "d2", dir, "\"frames\": 6");
  expect(&a, 201, NULL);
  ans_free(&a);
  a = wait_for("s1", "state=writing");
  ans_free(&a);
  b2sc_session *s = connect_();
  b2sc_producer *p = NULL;
  assert_int_equal(b2sc_producer_open(s, "d2", NULL, &p), 0);
  assert_int_equal(b2sc_shm_attach(p, 4, FRAME_BYTES), 0);
  for (int i = 0; i < 8; i++) {
    uint32_t slot;
    void *mem;
    size_t cap = 0;
    assert_int_equal(b2sc_shm_acquire(p, 10000, &slot, &mem, &cap), 0);
    fill(mem, i);
    assert_int_equal(b2sc_shm_submit(p, slot, FRAME_BYTES), 0);
  }
  b2sc_flush(p, 10000);
  a = wait_for("s1", "state=done");
  expect(&a, 200, NULL);
  assert_string_equal(jstr(a.j, "end_reason"), "frames");
  assert_int_equal(jint(a.j, "counters.frames_committed"), 6);
  ans_free(&a);
  b2sc_producer_stats st;
  assert_int_equal(b2sc_producer_stats_get(p, &st), 0);
  assert_int_equal(st.rejected, 2);
  b2sc_producer_close(p);
  b2sc_close(s);
  check_file(dir, "s1", 1, 0, 6, "done");
  check_python(dir, "s1", 1, 6, "done");
}

/* Two acquisitions on two streams at once; one aborted. */
static void test_two_at_once_and_abort(void **state) {
  (void)state;
  char d1[512], d2[512];
  mkdir_in_roots("two-a", d1, sizeof d1);
  mkdir_in_roots("two-b", d2, sizeof d2);
  ans a = arm("t1", "d1", d1, NULL);
  expect(&a, 201, NULL);
  ans_free(&a);
  a = arm("t2", "d2", d2, NULL);
  expect(&a, 201, NULL);
  ans_free(&a);
  ans_free(&(ans){0});
  a = wait_for("t1", "state=writing");
  ans_free(&a);
  a = wait_for("t2", "state=writing");
  ans_free(&a);
  b2sc_session *s = connect_();
  b2sc_producer *p1 = NULL, *p2 = NULL;
  assert_int_equal(b2sc_producer_open(s, "d1", NULL, &p1), 0);
  assert_int_equal(b2sc_producer_open(s, "d2", NULL, &p2), 0);
  assert_int_equal(send_frames(p1, 0, 5), 0);
  assert_int_equal(send_frames(p2, 0, 3), 0);
  a = wait_for("t1", "committed=5");
  expect(&a, 200, NULL);
  ans_free(&a);
  a = wait_for("t2", "committed=3");
  expect(&a, 200, NULL);
  ans_free(&a);
  a = act("t2", "abort");
  expect(&a, 202, NULL);
  ans_free(&a);
  a = act("t1", "stop");
  expect(&a, 202, NULL);
  ans_free(&a);
  a = wait_for("t2", "state=aborted");
  expect(&a, 200, NULL);
  assert_int_equal(jint(a.j, "counters.frames_committed"), 3);
  ans_free(&a);
  a = wait_for("t1", "state=done");
  expect(&a, 200, NULL);
  ans_free(&a);
  /* a second abort or stop changes nothing */
  a = act("t2", "abort");
  expect(&a, 200, NULL);
  assert_string_equal(jstr(a.j, "state"), "aborted");
  ans_free(&a);
  b2sc_producer_close(p1);
  b2sc_producer_close(p2);
  b2sc_close(s);
  check_file(d1, "t1", 1, 0, 5, "done");
  check_file(d2, "t2", 1, 0, 3, "aborted");
  check_python(d2, "t2", 1, 3, "aborted");
}

/* Stop with frames in flight: every frame the daemon took before the stop
 * is in the files, in order; the others were refused (never written), and
 * together they are every frame sent. */
static void test_stop_in_flight(void **state) {
  (void)state;
  char dir[512];
  mkdir_in_roots("flight", dir, sizeof dir);
  ans a = arm("f1", "d1", dir, "\"frames_per_file\": 16");
  expect(&a, 201, NULL);
  ans_free(&a);
  a = wait_for("f1", "state=writing");
  ans_free(&a);
  b2sc_session *s = connect_();
  b2sc_producer *p = NULL;
  assert_int_equal(b2sc_producer_open(s, "d1", NULL, &p), 0);
  uint8_t buf[FRAME_BYTES];
  int sent = 0;
  for (; sent < 40; sent++) {    /* no flush: in the queues */
    fill(buf, sent);
    assert_int_equal(b2sc_send(p, buf, sizeof buf, 10000), 0);
  }
  a = act("f1", "stop");
  expect(&a, 202, NULL);
  ans_free(&a);
  for (; sent < 60; sent++) {    /* after the stop: refused */
    fill(buf, sent);
    assert_int_equal(b2sc_send(p, buf, sizeof buf, 10000), 0);
  }
  b2sc_flush(p, 10000);
  a = wait_for("f1", "state=done");
  expect(&a, 200, NULL);
  int64_t got = jint(a.j, "counters.frames_committed");
  assert_int_equal(jint(a.j, "counters.frames_received"), got);
  ans_free(&a);
  b2sc_producer_stats st;
  assert_int_equal(b2sc_producer_stats_get(p, &st), 0);
  assert_int_equal((int64_t)st.rejected + got, 60);
  assert_true(got >= 1 && got <= 60);
  b2sc_producer_close(p);
  b2sc_close(s);
  /* the first `got` frames, in order, in files of 16 */
  for (int f = 0; f * 16 < got; f++)
    check_file(dir, "f1", f + 1, f * 16,
               (int)(got - f * 16 < 16 ? got - f * 16 : 16), "done");
  check_python(dir, "f1", (int)(got + 15) / 16, (int)got, "done");
}

/* Every refusal this daemon serves, each with nothing created. */
static void test_refusals(void **state) {
  (void)state;
  char dir[512], body[2048];
  mkdir_in_roots("ref", dir, sizeof dir);
  arm_body(body, sizeof body, "r1", "d3", dir, NULL);
  ans a = curl("POST", "/api/v1/acquisitions", NULL, NULL, body);
  expect(&a, 401, "auth_required");
  ans_free(&a);
  a = curl("POST", "/api/v1/acquisitions",
           "Xk3uU0m7d8Qb1xP4sL9vT2cN6yR5wE0aH3jK8fG1", NULL, body);
  expect(&a, 401, "auth_invalid");
  ans_free(&a);
  a = curl("POST", "/api/v1/acquisitions", TOKEN, "Origin: http://evil",
           body);
  expect(&a, 403, "cross_origin");
  ans_free(&a);
  a = curl("POST", "/api/v1/acquisitions", TOKEN, NULL, "{\"id\": ");
  expect(&a, 400, "bad_json");
  ans_free(&a);
  a = curl("POST", "/api/v1/acquisitions", TOKEN, NULL,
           "{\"id\": \"r1\", \"frame\": 3}");
  expect(&a, 400, "unknown_field");
  ans_free(&a);
  char *huge = malloc(8192);
  memset(huge, ' ', 8191);
  huge[0] = '{';
  huge[8189] = '}';
  huge[8190] = '\0';
  a = curl("POST", "/api/v1/acquisitions", TOKEN, NULL, huge);
  expect(&a, 413, "body_too_large");
  ans_free(&a);
  free(huge);
  a = curl("POST", "/api/v1/acquisitions", TOKEN,
           "Content-Type: text/plain", "{}");
  expect(&a, 415, "unsupported_media_type");
  ans_free(&a);
  a = arm("r1", "nope", dir, NULL);
  expect(&a, 404, "no_such_input");
  ans_free(&a);
  a = arm("r1", "plain", dir, NULL);
  expect(&a, 409, "input_not_acquirable");
  ans_free(&a);
  a = arm("r1", "d3", "/tmp", NULL);
  expect(&a, 403, "outside_roots");
  ans_free(&a);
  char dotdot[600];
  snprintf(dotdot, sizeof dotdot, "%s/../ref", dir);
  a = arm("r1", "d3", dotdot, NULL);
  expect(&a, 400, "bad_directory");
  ans_free(&a);
  char link[600];
  snprintf(link, sizeof link, "%s/escape", roots);
  assert_int_equal(symlink("/tmp", link), 0);
  a = arm("r1", "d3", link, NULL);
  expect(&a, 403, "outside_roots");
  ans_free(&a);
  char missing[600];
  snprintf(missing, sizeof missing, "%s/missing", dir);
  a = arm("r1", "d3", missing, NULL);
  expect(&a, 404, "no_such_directory");
  ans_free(&a);
  a = arm("r1", "d3", dir, "\"frames\": 1000000000000");
  expect(&a, 201, NULL);         /* no frames seen yet: only the floor */
  ans_free(&a);
  a = arm("r1", "d3", dir, "\"frames\": 5");
  expect(&a, 409, "id_conflict");
  ans_free(&a);
  a = arm("r1", "d3", dir, "\"frames\": 1000000000000");
  expect(&a, 200, NULL);         /* the same arm again: the same one */
  ans_free(&a);
  a = arm("r2", "d3", dir, NULL);
  expect(&a, 409, "input_busy");
  ans_free(&a);
  a = act("r1", "stop");
  expect(&a, 202, NULL);
  ans_free(&a);
  a = wait_for("r1", "state=ended");
  expect(&a, 200, NULL);
  ans_free(&a);
  assert_int_equal(count_entries(dir), 2);     /* r1's one file, no other */
  a = arm("r3", "d3", dir, "\"file_template\": \"r1_{channel}_{file:06}"
                           ".b2frame\"");
  expect(&a, 409, "files_exist");
  ans_free(&a);
  assert_int_equal(count_entries(dir), 2);
  a = curl("GET", "/api/v1/acquisitions/none", NULL, NULL, NULL);
  expect(&a, 404, "no_such_acquisition");
  ans_free(&a);
  a = curl("GET", "/api/v1/acquisitions?limit=0", NULL, NULL, NULL);
  expect(&a, 400, "bad_parameter");
  ans_free(&a);
  a = curl("GET", "/api/v1/acquisitions/r1/wait?committed=1&state=done",
           NULL, NULL, NULL);
  expect(&a, 400, "bad_parameter");
  ans_free(&a);
  a = curl("DELETE", "/api/v1/acquisitions/r1", TOKEN, NULL, NULL);
  expect(&a, 405, "method_not_allowed");
  ans_free(&a);
  a = curl("GET", "/api/v1/acquisitions/r1/wait?committed=5&timeout=0",
           NULL, NULL, NULL);
  expect(&a, 409, "wait_unreachable");   /* ended with fewer */
  ans_free(&a);
}

/* The wait's timeout is 504 with the acquisition; many arms, malformed
 * bodies: the service answers every one and stays up. */
static void test_wait_timeout_and_many(void **state) {
  (void)state;
  char dir[512];
  mkdir_in_roots("many", dir, sizeof dir);
  ans a = arm("w1", "d1", dir, NULL);
  expect(&a, 201, NULL);
  ans_free(&a);
  a = curl("GET", "/api/v1/acquisitions/w1/wait?committed=1&timeout=0.2",
           NULL, NULL, NULL);
  expect(&a, 504, "wait_timeout");
  assert_string_equal(jstr(a.j, "acquisition.id"), "w1");
  ans_free(&a);
  for (int i = 0; i < 200; i++) {
    char id[32];
    snprintf(id, sizeof id, "m%d", i);
    a = arm(id, "d1", dir, NULL);
    expect(&a, 409, "input_busy");
    ans_free(&a);
    a = curl("POST", "/api/v1/acquisitions", TOKEN, NULL,
             i % 2 ? "[1,2,3]" : "{\"id\": \"\\ud800\"}");
    expect(&a, 400, "bad_json");
    ans_free(&a);
  }
  a = curl("GET", "/api/v1", NULL, NULL, NULL);
  expect(&a, 200, NULL);
  assert_string_equal(jstr(a.j, "api"), "1.0");
  assert_null(json_object_object_get(a.j, "roots"));   /* not authenticated */
  ans_free(&a);
  a = curl("GET", "/api/v1", TOKEN, NULL, NULL);
  expect(&a, 200, NULL);
  assert_non_null(json_object_object_get(a.j, "roots"));
  ans_free(&a);
  a = curl("GET", "/api/v1/acquisitions?state=active", NULL, NULL, NULL);
  expect(&a, 200, NULL);
  assert_int_equal(json_object_array_length(
                       json_object_object_get(a.j, "acquisitions")), 1);
  ans_free(&a);
  a = act("w1", "stop");
  expect(&a, 202, NULL);
  ans_free(&a);
  a = wait_for("w1", "state=done");
  expect(&a, 200, NULL);
  ans_free(&a);
  assert_int_equal(env_log_count(&E, "arm of w1 by alice"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zmq_rollover_stop),
      cmocka_unit_test(test_shm_frames_reached),
      cmocka_unit_test(test_two_at_once_and_abort),
      cmocka_unit_test(test_stop_in_flight),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_wait_timeout_and_many),
  };
  if (harness_init() != 0)
    return 1;
  int rc = ts_run_tests(tests, setup, teardown);
  harness_fini();
  return rc;
}

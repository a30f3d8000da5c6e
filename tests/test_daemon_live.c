/* The live view (docs/ACQUISITIONS.md section 11) against the real
 * b2streamd: images sent with the C client library, read back over HTTP
 * (raw bytes equal to what was sent, the PNG decoded by libpng, ETag and
 * 304) and from the ZeroMQ PUB socket by a libzmq SUB (odin-data's two
 * parts: a JSON header, read with json-c, then the pixels); every_n and
 * max_rate_hz bound what is sampled (counted, against the time that
 * passed); a subscriber that does not read misses frames, counted, and
 * gets every other one; the API's errors as JSON. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <json-c/json.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "b2stream_client.h"
#include "daemon_harness.h"
#include "http_client.h"
#include "ts.h"

#define IMG_H 64
#define IMG_W 48
#define IMG_BYTES (IMG_H * IMG_W * 2)

static int port;

/* The daemon with http:, the live: keys given and streams img (64 x 48
 * <u2 images), w (not b2nd) and big (256 x 256 <u2). */
static void up(env *e, const char *live) {
  port = http_free_port();
  assert_true(port > 0);
  char yaml[4096];
  snprintf(yaml, sizeof yaml, "%shttp: {listen: \"127.0.0.1:%d\"}\n%s"
           "streams:\n"
           "  w: {}\n"
           "  img:\n"
           "    b2nd: {shape: [0, %d, %d], chunkshape: [1, %d, %d], "
           "blockshape: [1, 16, 12], dtype: \"<u2\"}\n"
           "    durability: {ack: write, group_count: 1, group_interval_ms: 5}\n"
           "  big:\n"
           "    b2nd: {shape: [0, 256, 256], chunkshape: [1, 256, 256], "
           "blockshape: [1, 64, 256], dtype: \"<u2\"}\n"
           "    durability: {ack: write, group_count: 1, group_interval_ms: 5}\n",
           ENV_YAML_HEAD "workers: 2\nmax_buffer: 1MiB\n", port, live, IMG_H,
           IMG_W, IMG_H, IMG_W);
  env_up(e, yaml);
}

/* Image i: pixel (y, x) = 100 i + 10 y + x, little endian. */
static void image(int i, uint8_t *b) {
  for (int y = 0; y < IMG_H; y++)
    for (int x = 0; x < IMG_W; x++) {
      uint16_t v = (uint16_t)(100 * i + 10 * y + x);
      b[2 * (y * IMG_W + x)] = (uint8_t)v;
      b[2 * (y * IMG_W + x) + 1] = (uint8_t)(v >> 8);
    }
}

/* Send n images (image(i), or len bytes of i for other streams) to
 * stream with the client library and wait until they are durable. */
static void send_images(env *e, const char *stream, int n, size_t len) {
  b2sc_session *s = NULL;
  b2sc_producer *p = NULL;
  assert_int_equal(b2sc_connect(e->sock, "live-test", &s), 0);
  assert_int_equal(b2sc_producer_open(s, stream, NULL, &p), 0);
  uint8_t *b = malloc(len);
  assert_non_null(b);
  for (int i = 0; i < n; i++) {
    if (len == IMG_BYTES)
      image(i, b);
    else
      memset(b, i, len);
    assert_int_equal(b2sc_send(p, b, len, WAIT_MS), 0);
  }
  assert_int_equal(b2sc_flush(p, WAIT_MS), 0);
  free(b);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
}

static void *subscribe(env *e, int rcvhwm) {
  void *z = zmq_socket(zctx, ZMQ_SUB);
  assert_non_null(z);
  char ep[400];
  snprintf(ep, sizeof ep, "ipc://%s/run/live.sock", e->dir);
  assert_int_equal(zmq_setsockopt(z, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm), 0);
  assert_int_equal(zmq_setsockopt(z, ZMQ_SUBSCRIBE, "", 0), 0);
  assert_int_equal(zmq_connect(z, ep), 0);
  usleep(200000);                /* the subscription reaches the PUB */
  return z;
}

/* One PUB message: its header parsed and its pixels; false when none
 * came within ms. */
typedef struct pubmsg {
  json_object *hdr;
  uint8_t *px;
  size_t len;
} pubmsg;

static bool pub_recv(void *z, int ms, pubmsg *m) {
  zmq_pollitem_t it = {.socket = z, .events = ZMQ_POLLIN};
  if (zmq_poll(&it, 1, ms) <= 0)
    return false;
  zmq_msg_t a, b;
  zmq_msg_init(&a);
  zmq_msg_init(&b);
  assert_true(zmq_msg_recv(&a, z, 0) >= 0);
  assert_true(zmq_msg_more(&a));
  assert_true(zmq_msg_recv(&b, z, 0) >= 0);
  assert_false(zmq_msg_more(&b));   /* two parts, no topic frame */
  char *text = strndup(zmq_msg_data(&a), zmq_msg_size(&a));
  m->hdr = json_tokener_parse(text);
  assert_non_null(m->hdr);
  free(text);
  m->len = zmq_msg_size(&b);
  m->px = malloc(m->len ? m->len : 1);
  memcpy(m->px, zmq_msg_data(&b), m->len);
  zmq_msg_close(&a);
  zmq_msg_close(&b);
  return true;
}

static void pub_free(pubmsg *m) {
  json_object_put(m->hdr);
  free(m->px);
}

static const char *jstr(json_object *o, const char *k) {
  json_object *v;
  assert_true(json_object_object_get_ex(o, k, &v));
  return json_object_get_string(v);
}

static int64_t jint(json_object *o, const char *k) {
  json_object *v;
  assert_true(json_object_object_get_ex(o, k, &v));
  return json_object_get_int64(v);
}

/* The value of header `name` in an answer's head ("" when absent). */
static void header(const http_reply *r, const char *name, char *out,
                   size_t n) {
  out[0] = '\0';
  char want[80];
  snprintf(want, sizeof want, "\r\n%s: ", name);
  const char *p = strcasestr(r->head, want);
  if (!p)
    return;
  p += strlen(want);
  size_t l = strcspn(p, "\r\n");
  snprintf(out, n, "%.*s", (int)(l < n ? l : n - 1), p);
}

/* GET path, the status and the error code of a JSON error body. */
static void expect_error(const char *method, const char *path, int status,
                         const char *code) {
  http_reply r;
  http_request(port, method, path, "", 10000, &r);
  if (r.status != status)
    fail_msg("%s %s: %d, not %d\n%s%s", method, path, r.status, status,
             r.head, r.body ? r.body : "");
  char type[80];
  header(&r, "Content-Type", type, sizeof type);
  assert_string_equal(type, "application/json");
  json_object *o = json_tokener_parse(r.body), *err;
  assert_non_null(o);
  assert_true(json_object_object_get_ex(o, "error", &err));
  assert_string_equal(jstr(err, "code"), code);
  assert_int_equal(jint(err, "status"), status);
  json_object_put(o);
  http_reply_free(&r);
}

static double metric(const char *series) {
  char *text = http_get_ok(port, "/metrics", NULL);
  assert_non_null(text);
  double v = prom_value(text, series);
  free(text);
  return v;
}

/* ---- tests ------------------------------------------------------------------ */

/* every_n: 4.  The PUB socket sends frames 0, 4, 8, ... only, each its
 * header (odin-data's members and ours) and the very bytes sent, up to
 * the newest eligible one (36 of 0..39); the HTTP route gives the same
 * frame raw, as a PNG libpng decodes to the stretched image, and 304 for
 * its ETag. */
static void test_live_pub_and_http(void **state) {
  (void)state;
  env e;
  up(&e, "live: {every_n: 4, max_rate_hz: 1000, publish: ipc://live.sock}\n");
  void *sub = subscribe(&e, 1000);
  send_images(&e, "img", 40, IMG_BYTES);
  uint8_t want[IMG_BYTES];
  int64_t last = -1;
  int got = 0;
  while (last != 36) {
    pubmsg m;
    if (!pub_recv(sub, WAIT_MS, &m))
      fail_msg("no PUB message after frame %lld", (long long)last);
    int64_t f = jint(m.hdr, "frame_num");
    assert_true(f % 4 == 0 && f > last && f <= 36);
    assert_string_equal(jstr(m.hdr, "dtype"), "uint16");
    assert_string_equal(jstr(m.hdr, "dataset"), "img");
    assert_string_equal(jstr(m.hdr, "compression"), "none");
    assert_string_equal(jstr(m.hdr, "acquisition_id"), "");
    assert_int_equal(jint(m.hdr, "dsize"), IMG_BYTES);
    json_object *shape, *b;
    assert_true(json_object_object_get_ex(m.hdr, "shape", &shape));
    assert_int_equal(json_object_array_length(shape), 3);
    assert_string_equal(
        json_object_get_string(json_object_array_get_idx(shape, 1)), "64");
    assert_string_equal(
        json_object_get_string(json_object_array_get_idx(shape, 2)), "48");
    assert_true(json_object_object_get_ex(m.hdr, "b2stream", &b));
    assert_string_equal(jstr(b, "descr"), "<u2");
    assert_string_equal(jstr(b, "stream"), "img");
    assert_int_equal(jint(b, "chunk"), f);
    image((int)f, want);
    assert_int_equal(m.len, IMG_BYTES);
    assert_memory_equal(m.px, want, IMG_BYTES);
    last = f;
    got++;
    pub_free(&m);
  }
  assert_true(metric("b2stream_live_frames_total") >= got);
  assert_true(metric("b2stream_live_dropped_total") == 0);

  http_reply r;
  http_request(port, "GET", "/api/v1/streams/img/latest?format=raw", "",
               10000, &r);
  assert_int_equal(r.status, 200);
  char v[128], etag[128];
  header(&r, "X-B2stream-Dtype", v, sizeof v);
  assert_string_equal(v, "<u2");
  header(&r, "X-B2stream-Shape", v, sizeof v);
  assert_string_equal(v, "1,64,48");
  header(&r, "X-B2stream-Frame", v, sizeof v);
  assert_string_equal(v, "36");
  header(&r, "Content-Type", v, sizeof v);
  assert_string_equal(v, "application/octet-stream");
  header(&r, "X-B2stream-Written-At", v, sizeof v);
  assert_int_equal(strlen(v), strlen("2026-05-01T12:34:56.123456Z"));
  header(&r, "ETag", etag, sizeof etag);
  assert_true(strncmp(etag, "\"36-", 4) == 0);
  assert_int_equal(r.len, IMG_BYTES);
  image(36, want);
  assert_memory_equal(r.body, want, IMG_BYTES);
  http_reply_free(&r);

  char inm[200];
  snprintf(inm, sizeof inm, "If-None-Match: %s\r\n", etag);
  http_request(port, "GET", "/api/v1/streams/img/latest", inm, 10000, &r);
  assert_int_equal(r.status, 304);
  http_reply_free(&r);

  /* the PNG: the first image stretched from its minimum to its maximum */
  http_request(port, "GET", "/api/v1/streams/img/latest", "Accept: image/png\r\n",
               10000, &r);
  assert_int_equal(r.status, 200);
  header(&r, "Content-Type", v, sizeof v);
  assert_string_equal(v, "image/png");
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  assert_true(png_image_begin_read_from_memory(&im, r.body, r.len));
  assert_int_equal(im.width, IMG_W);
  assert_int_equal(im.height, IMG_H);
  im.format = PNG_FORMAT_GRAY;
  static uint8_t g[IMG_H * IMG_W];
  assert_true(png_image_finish_read(&im, NULL, g, IMG_W, NULL));
  double lo = 3600, hi = 3600 + 10 * (IMG_H - 1) + IMG_W - 1;
  for (int y = 0; y < IMG_H; y++)
    for (int x = 0; x < IMG_W; x++) {
      double exp = (3600 + 10 * y + x - lo) / (hi - lo) * 255.0;
      double d = g[y * IMG_W + x] - exp;
      if (d > 1 || d < -1)
        fail_msg("pixel (%d, %d) is %d, not %.1f", y, x, g[y * IMG_W + x], exp);
    }
  assert_int_equal(g[0], 0);
  assert_int_equal(g[IMG_H * IMG_W - 1], 255);
  http_reply_free(&r);
  /* scaled down to max_side */
  http_request(port, "GET", "/api/v1/streams/img/latest?max_side=16", "",
               10000, &r);
  assert_int_equal(r.status, 200);
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  assert_true(png_image_begin_read_from_memory(&im, r.body, r.len));
  assert_int_equal(im.height, 16);
  assert_int_equal(im.width, 12);
  png_image_free(&im);
  http_reply_free(&r);
  zmq_close(sub);
  env_down(&e);
}

/* max_rate_hz: 2.  However fast frames come, the frames sampled are at
 * most one plus two per second that passed; a subscriber that reads gets
 * every one of them, the newest last. */
static void test_live_rate_bound(void **state) {
  (void)state;
  long long t0 = ts_now_ms();
  env e;
  up(&e, "live: {max_rate_hz: 2, publish: ipc://live.sock}\n");
  void *sub = subscribe(&e, 1000);
  send_images(&e, "img", 60, IMG_BYTES);
  int got = 0;
  int64_t last = -1;
  while (last != 59) {
    pubmsg m;
    if (!pub_recv(sub, WAIT_MS, &m))
      fail_msg("no PUB message after frame %lld", (long long)last);
    int64_t f = jint(m.hdr, "frame_num");
    assert_true(f > last);
    last = f;
    got++;
    pub_free(&m);
  }
  double frames = metric("b2stream_live_frames_total");
  long long t1 = ts_now_ms();
  double bound = 1 + 2.0 * (double)(t1 - t0) / 1000.0;
  if (frames > bound || frames < got)
    fail_msg("%g frames sampled in %lld ms (bound %g), %d received", frames,
             t1 - t0, bound, got);
  zmq_close(sub);
  env_down(&e);
}

/* send_hwm: 1 and a subscriber that reads nothing: frames it cannot take
 * are counted as dropped, and what it reads afterwards is exactly every
 * frame sampled but those; ingest went on (every buffer acknowledged). */
static void test_live_slow_subscriber(void **state) {
  (void)state;
  env e;
  up(&e, "live: {max_rate_hz: 1000, send_hwm: 1, publish: ipc://live.sock}\n");
  void *sub = subscribe(&e, 1);
  int rcvbuf = 4096;
  zmq_setsockopt(sub, ZMQ_RCVBUF, &rcvbuf, sizeof rcvbuf);
  send_images(&e, "big", 150, 256 * 256 * 2);
  /* the sampler is done once its figure stops moving */
  double frames = -1, now = metric("b2stream_live_frames_total");
  while (now != frames) {
    frames = now;
    usleep(1000000);
    now = metric("b2stream_live_frames_total");
  }
  double dropped = metric("b2stream_live_dropped_total");
  int got = 0;
  pubmsg m;
  while (pub_recv(sub, 1000, &m)) {
    assert_int_equal(m.len, 256 * 256 * 2);
    got++;
    pub_free(&m);
  }
  if (dropped <= 0 || got != frames - dropped)
    fail_msg("%g sampled, %g dropped, %d received", frames, dropped, got);
  zmq_close(sub);
  env_down(&e);
}

/* Without a PUB socket the route samples on demand; its refusals are the
 * API's JSON errors (docs/ACQUISITIONS.md 9.3, 12). */
static void test_live_errors(void **state) {
  (void)state;
  env e;
  up(&e, "live: {max_bytes: 4KiB}\n");
  expect_error("GET", "/api/v1/streams/img/latest", 404, "no_frame");
  expect_error("GET", "/api/v1/streams/nosuch/latest", 404, "no_such_stream");
  expect_error("GET", "/api/v1/streams/w/latest", 409, "not_an_image");
  expect_error("GET", "/api/v1/streams/img/latest?format=jpeg", 400,
               "bad_parameter");
  expect_error("GET", "/api/v1/streams/img/latest?max_side=15", 400,
               "bad_parameter");
  expect_error("GET", "/api/v1/streams/img/latest?max_side=4097", 400,
               "bad_parameter");
  expect_error("GET", "/api/v1/streams/img/latest?frame=1", 400,
               "bad_parameter");
  expect_error("GET", "/api/v1/streams/img/latest?format=raw&format=raw", 400,
               "bad_parameter");
  expect_error("POST", "/api/v1/streams/img/latest", 405,
               "method_not_allowed");
  expect_error("GET", "/api/v1/streams/img/latest/", 404, "not_found");
  expect_error("GET", "/api/v1/nothing", 404, "not_found");
  send_images(&e, "img", 3, IMG_BYTES);   /* 6 KiB a frame, over 4 KiB */
  expect_error("GET", "/api/v1/streams/img/latest", 409, "frame_too_large");
  env_down(&e);
  /* the same stream under the default max_bytes, asked after its frames
   * came: the first request waits for the sampler */
  up(&e, "");
  send_images(&e, "img", 5, IMG_BYTES);
  http_reply r;
  http_request(port, "GET", "/api/v1/streams/img/latest?format=raw", "",
               10000, &r);
  assert_int_equal(r.status, 200);
  uint8_t want[IMG_BYTES];
  image(4, want);
  assert_int_equal(r.len, IMG_BYTES);
  assert_memory_equal(r.body, want, IMG_BYTES);
  http_reply_free(&r);
  env_down(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_live_pub_and_http),
      cmocka_unit_test(test_live_rate_bound),
      cmocka_unit_test(test_live_slow_subscriber),
      cmocka_unit_test(test_live_errors),
  };
  return harness_run(tests);
}

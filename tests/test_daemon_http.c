/* The daemon's HTTP listener against the real b2streamd over real sockets:
 * metrics that match what a producer sent (raw client), the status JSON,
 * a thumbnail decoded from the PNG the daemon renders from its frame,
 * methods and paths it refuses, `promtool check metrics` on its text, and
 * hostile clients (idle connections, a slowloris, huge headers) that
 * never keep a producer's buffers from being acknowledged. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "daemon_harness.h"
#include "http_client.h"

/* Image stream: 64 x 48 pixels of <u2 per buffer. */
#define IMG_H 64
#define IMG_W 48
#define IMG_BYTES (IMG_H * IMG_W * 2)

static int port;

static void up(env *e) {
  port = http_free_port();
  assert_true(port > 0);
  char yaml[4096];
  snprintf(yaml, sizeof yaml, "%shttp: {listen: \"127.0.0.1:%d\"}\n"
           "streams:\n"
           "  w:\n"
           "    durability: {ack: write, group_count: 8, group_interval_ms: 5}\n"
           "  dn:\n"
           "    codec: zstd\n    clevel: 9\n    queue_depth: 1\n"
           "    backpressure: drop-newest\n"
           "  img:\n"
           /* square blocks: stored block after block, shown in C order */
           "    b2nd: {shape: [0, %d, %d], chunkshape: [1, %d, %d], "
           "blockshape: [1, 16, 12], dtype: \"<u2\"}\n"
           "    durability: {ack: write, group_count: 1, group_interval_ms: 5}\n",
           ENV_YAML_HEAD
           "workers: 2\nmax_buffer: 1MiB\nlog_level: debug\n", port, IMG_H,
           IMG_W, IMG_H, IMG_W);
  env_up(e, yaml);
}

/* Poll /metrics until `series` shows `want` (the snapshot may be a turn
 * behind); the last text (caller frees). */
static char *metrics_until(const char *series, double want) {
  char *text = NULL;
  for (int i = 0; i < WAIT_MS / 50; i++) {
    free(text);
    text = http_get_ok(port, "/metrics", NULL);  /* NULL: not answered yet */
    if (text && prom_value(text, series) == want)
      return text;
    usleep(50000);
  }
  fail_msg("%s never became %g:\n%s", series, want, text ? text : "");
  return NULL;
}

/* One image of pixel (y, x) = base + 10 * y + x, sent as a DATA buffer. */
static void send_image(void *s, const b2s_wire_msg *o, uint64_t id,
                       uint16_t base) {
  static uint8_t img[IMG_BYTES];
  for (int y = 0; y < IMG_H; y++)
    for (int x = 0; x < IMG_W; x++) {
      uint16_t v = (uint16_t)(base + 10 * y + x);
      img[2 * (y * IMG_W + x)] = (uint8_t)v;
      img[2 * (y * IMG_W + x) + 1] = (uint8_t)(v >> 8);
    }
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_DATA);
  m.data.handle = o->opened.handle;
  m.data.buffer_id = id;
  cli_send(s, &m, img, sizeof img);
}

/* Counters match what was sent and dropped; the text passes promtool. */
static void test_metrics_match_ingest(void **state) {
  (void)state;
  env e;
  up(&e);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  prod p = prod_opened(s, &o, 60, 3000, 100);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  uint64_t bytes = 0;
  for (int i = 0; i < 60; i++)
    bytes += buf_len(100 + i, 3000);
  cli_close(&p);
  b2s_wire_msg od;
  assert_int_equal(cli_open(s, "dn", "", &od), 0);
  prod pd = prod_opened(s, &od, 60, 200000, 3);
  prod_run(&pd, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&pd);
  assert_true(pd.ndropped > 0);

  char *text = metrics_until("b2stream_stream_chunks_total{stream=\"w\"}", 60);
  assert_true(prom_value(text, "b2stream_stream_buffers_in_total{stream=\"w\"}") == 60);
  assert_true(prom_value(text, "b2stream_stream_bytes_in_total{stream=\"w\"}") ==
              (double)bytes);
  assert_true(prom_value(text, "b2stream_stream_bytes_out_total{stream=\"w\"}") > 0);
  assert_true(prom_value(text, "b2stream_stream_committed_chunks{stream=\"w\"}") == 60);
  assert_true(prom_value(text, "b2stream_stream_state{stream=\"w\",state=\"writing\"}") == 1);
  assert_true(prom_value(text, "b2stream_stream_commit_duration_seconds_count{stream=\"w\"}") >= 1);
  free(text);
  text = metrics_until("b2stream_stream_dropped_total{stream=\"dn\",policy=\"drop-newest\"}",
                       (double)pd.ndropped);
  assert_true(prom_value(text, "b2stream_stream_dropped_total{stream=\"dn\",policy=\"drop-oldest\"}") == 0);
  assert_true(prom_value(text, "b2stream_build_info{version=\"0.1.0\"}") == 1);
  assert_true(prom_value(text, "b2stream_sessions") == 1);
  assert_true(prom_value(text, "b2stream_memory_limit_bytes") == 256 << 20);
  assert_true(prom_value(text, "b2stream_data_dir_free_bytes") > 0);
  assert_true(prom_value(text, "b2stream_open_fds") > 0);

  /* promtool from Debian's prometheus package, when installed */
  char path[400];
  snprintf(path, sizeof path, "%s/metrics.txt", e.dir);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  free(text);
  if (access("/usr/bin/promtool", X_OK) == 0) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "/usr/bin/promtool check metrics < %s", path);
    assert_int_equal(system(cmd), 0);
  } else {
    print_message("promtool not installed (Debian package prometheus): "
                  "its check is not run\n");
  }
  zmq_close(s);
  env_down(&e);
}

/* The status JSON and page, the thumbnail of the latest committed image,
 * and what is refused. */
static void test_page_and_thumbnail(void **state) {
  (void)state;
  env e;
  up(&e);
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "img", "", &o), 0);
  send_image(s, &o, 0, 1000);
  send_image(s, &o, 1, 2000);    /* the latest: what the thumbnail shows */
  int acked = 0;
  while (acked < 2) {
    rx r;
    cli_recv(s, &r);
    if (r.m.type == B2S_WIRE_ACK && r.m.ack.level == B2S_WIRE_LEVEL_WRITTEN)
      acked = (int)r.m.ack.upto;
    rx_free(&r);
  }
  char *text = metrics_until("b2stream_stream_committed_chunks{stream=\"img\"}", 2);
  free(text);

  char *json = http_get_ok(port, "/status.json", NULL);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"img\":{\"format\":\"contiguous\",\"buffers_in\":2,"
                               "\"bytes_in\":12288,"));
  assert_non_null(strstr(json, "\"thumbnail\":true"));
  free(json);

  size_t len;
  char *png = http_get_ok(port, "/thumb/img.png", &len);
  assert_non_null(png);
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  assert_true(png_image_begin_read_from_memory(&im, png, len));
  assert_int_equal(im.width, IMG_W);
  assert_int_equal(im.height, IMG_H);
  im.format = PNG_FORMAT_GRAY;
  static uint8_t g[IMG_H * IMG_W];
  assert_true(png_image_finish_read(&im, NULL, g, IMG_W, NULL));
  /* image 2: 2000 + 10y + x over 2000..2677, stretched to 0..255 */
  for (int y = 0; y < IMG_H; y += 7)
    for (int x = 0; x < IMG_W; x += 5) {
      double want = (10.0 * y + x) * 255.0 / 677.0;
      assert_true(abs((int)g[y * IMG_W + x] - (int)(want + 0.5)) <= 0);
    }
  free(png);

  http_reply r;
  http_request(port, "GET", "/", "", 5000, &r);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.head, "Content-Type: text/html"));
  assert_non_null(strstr(r.body, "/status.json"));
  assert_null(strstr(r.body, "http://"));    /* no external assets */
  assert_null(strstr(r.body, "https://"));
  http_reply_free(&r);
  http_request(port, "HEAD", "/metrics", "", 5000, &r);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.len, 0);
  http_reply_free(&r);
  http_request(port, "POST", "/metrics", "Content-Length: 0\r\n", 5000, &r);
  assert_int_equal(r.status, 405);
  assert_non_null(strstr(r.head, "Allow: GET, HEAD"));
  http_reply_free(&r);
  http_request(port, "GET", "/thumb/w.png", "", 5000, &r);
  assert_int_equal(r.status, 404);   /* not a 2-D stream */
  http_reply_free(&r);
  http_request(port, "GET", "/thumb/nope.png", "", 5000, &r);
  assert_int_equal(r.status, 404);
  http_reply_free(&r);
  http_request(port, "GET", "/etc/passwd", "", 5000, &r);
  assert_int_equal(r.status, 404);
  http_reply_free(&r);
  zmq_close(s);
  env_down(&e);
}

/* 200 idle connections, a slowloris dripping a header, a request with
 * 100 KiB of headers: a producer's 250 buffers are all acknowledged
 * meanwhile, the huge request is refused, and once the hostile clients are
 * gone /metrics answers again. */
static void test_hostile_http_never_stops_ingest(void **state) {
  (void)state;
  env e;
  up(&e);
  int loris = http_connect(port);   /* accepted: the listener's first */
  assert_true(loris >= 0);
  int idle[200], nidle = 0;
  for (int i = 0; i < 200; i++)
    if ((idle[nidle] = http_connect_nowait(port)) >= 0)
      nidle++;
  assert_int_equal(nidle, 200);  /* beyond the listener's bound some stay
                                    pending in the kernel */
  const char *drip = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ";
  void *s = cli_producer(&e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  prod p = prod_opened(s, &o, 250, 20000, 1);
  for (int from = 0; from < 250; from += 25) {
    assert_int_equal(send(loris, drip + (from / 25), 1, MSG_NOSIGNAL), 1);
    prod_send(&p, from, from + 25);
  }
  while (p.acked[B2S_WIRE_LEVEL_WRITTEN] < 250) {
    rx r;
    cli_recv(s, &r);
    prod_handle(&p, &r);
    rx_free(&r);
  }
  assert_int_equal(p.acked[B2S_WIRE_LEVEL_WRITTEN], 250);
  assert_int_equal(p.ndropped, 0);
  cli_close(&p);
  for (int i = 0; i < nidle; i++)
    close(idle[i]);
  close(loris);

  /* huge headers: refused (431) or cut, never answered 200 */
  size_t big = 100 * 1024;
  char *hdr = malloc(big + 32);
  strcpy(hdr, "X-big: ");
  memset(hdr + 7, 'a', big);
  strcpy(hdr + 7 + big, "\r\n");
  http_reply r;
  http_request(port, "GET", "/metrics", hdr, 10000, &r);
  assert_true(r.status == 0 || r.status == 431 || r.status == 413);
  http_reply_free(&r);
  free(hdr);

  /* connections the hostile clients held are released */
  char *text = metrics_until("b2stream_stream_buffers_in_total{stream=\"w\"}", 250);
  free(text);
  /* still ingesting after it all */
  zmq_close(s);
  s = cli_producer(&e);
  b2s_wire_msg o2;
  assert_int_equal(cli_open(s, "w", "", &o2), 0);
  prod p3 = prod_opened(s, &o2, 20, 1000, 7);
  prod_run(&p3, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p3);
  zmq_close(s);
  env_down(&e);
}

/* http: not configured: nothing listens. */
static void test_off_unless_configured(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  assert_int_equal(env_log_count(&e, "http:"), 0);
  zmq_close(cli_producer(&e));
  env_down(&e);
}

/* A non-loopback address only with allow_remote, and then with a warning
 * in the log; the port taken by another process: the daemon does not
 * start, and says why. */
static void test_remote_and_busy_port(void **state) {
  (void)state;
  env e;
  int p = http_free_port();
  char yaml[512];
  snprintf(yaml, sizeof yaml, ENV_YAML_HEAD "http: {listen: \"0.0.0.0:%d\", "
           "allow_remote: true}\nstreams:\n  w: {}\n", p);
  env_up(&e, yaml);
  /* the listener starts beside the ready socket: wait for its warning */
  env_log_wait(&e, "is not a loopback address", 1);
  assert_int_equal(env_log_count(&e, "is not a loopback address"), 1);
  port = p;
  free(metrics_until("b2stream_streams", 1));
  /* a second daemon on the same port */
  env e2;
  snprintf(yaml, sizeof yaml,
           ENV_YAML_HEAD "http: {listen: \"127.0.0.1:%d\"}\n"
           "streams:\n  w: {}\n", p);
  env_init_config(&e2, yaml);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "timeout 20 %s --config %s > %s 2>&1", daemon_path,
           e2.config, e2.log);
  assert_int_not_equal(system(cmd), 0);
  assert_int_equal(env_log_count(&e2, "http: cannot listen on"), 1);
  env_fini(&e2);
  env_down(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_metrics_match_ingest),
      cmocka_unit_test(test_page_and_thumbnail),
      cmocka_unit_test(test_hostile_http_never_stops_ingest),
      cmocka_unit_test(test_off_unless_configured),
      cmocka_unit_test(test_remote_and_busy_port),
  };
  signal(SIGPIPE, SIG_IGN);
  return harness_run(tests);
}

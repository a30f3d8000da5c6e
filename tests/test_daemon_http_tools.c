/* The daemon's HTTP listener seen by the tools operators use, all from
 * Debian: a real Prometheus server scrapes it and its query API returns
 * the series; headless Chromium runs the status page, whose DOM shows the
 * streams and a decoded thumbnail, and takes a screenshot; `b2stream top`
 * in a tmux pane shows the streams and answers its keys.  A test whose
 * tool is not installed is skipped (scripts/install-deps installs them). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "daemon_harness.h"
#include "http_client.h"
#include "ts.h"

#define IMG_H 32
#define IMG_W 40

static int port;

static void up(env *e) {
  port = http_free_port();
  assert_true(port > 0);
  char yaml[2048];
  snprintf(yaml, sizeof yaml,
           ENV_YAML_HEAD
           "workers: 2\nlog_level: debug\n"
           "http: {listen: \"127.0.0.1:%d\"}\n"
           "streams:\n"
           "  w:\n"
           "    durability: {ack: write, group_count: 8, group_interval_ms: 5}\n"
           "  img:\n"
           "    typesize: 1\n"
           "    b2nd: {shape: [0, %d, %d], chunkshape: [1, %d, %d], "
           "dtype: \"|u1\"}\n"
           "    durability: {ack: write, group_count: 1, group_interval_ms: 5}\n",
           port, IMG_H, IMG_W, IMG_H, IMG_W);
  env_up(e, yaml);
}

/* 40 buffers on w and 3 images on img, all written. */
static void *ingest(env *e) {
  void *s = cli_producer(e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, "w", "", &o), 0);
  prod p = prod_opened(s, &o, 40, 2000, 5);
  prod_run(&p, B2S_WIRE_LEVEL_WRITTEN);
  cli_close(&p);
  assert_int_equal(cli_open(s, "img", "", &o), 0);
  static uint8_t img[IMG_H * IMG_W];
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < IMG_H * IMG_W; i++)
      img[i] = (uint8_t)(i * (k + 1));
    b2s_wire_msg m;
    b2s_wire_init(&m, B2S_WIRE_DATA);
    m.data.handle = o.opened.handle;
    m.data.buffer_id = (uint64_t)k;
    cli_send(s, &m, img, sizeof img);
  }
  uint64_t upto = 0;
  while (upto < 3) {
    rx r;
    cli_recv(s, &r);
    if (r.m.type == B2S_WIRE_ACK && r.m.ack.level == B2S_WIRE_LEVEL_WRITTEN)
      upto = r.m.ack.upto;
    rx_free(&r);
  }
  return s;
}

/* Run argv with stdout to out_path (NULL: /dev/null), stderr to
 * /dev/null; its pid. */
static pid_t spawn(char *const argv[], const char *out_path) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    int out = out_path ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644)
                       : null;
    dup2(null, 0);
    dup2(out, 1);
    dup2(null, 2);
    setpgid(0, 0);               /* its children go with it */
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

/* Wait for pid up to secs; kill its group when it overstays.  Its exit
 * status, or -1 when killed. */
static int wait_bounded(pid_t pid, int secs) {
  for (int i = 0; i < secs * 10; i++) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    usleep(100000);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

static char *slurp(const char *path) {
  char *text = ts_read_text(path, NULL);
  return text != NULL ? text : strdup("");
}

/* ---- Prometheus ------------------------------------------------------------- */

static void test_prometheus_scrapes(void **state) {
  (void)state;
  if (access("/usr/bin/prometheus", X_OK) != 0)
    skip();
  env e;
  up(&e);
  void *s = ingest(&e);
  int pport = http_free_port();
  char yml[400], tsdb[400], listen[64], cfgarg[420], tsdbarg[420],
      listenarg[100];
  snprintf(yml, sizeof yml, "%s/prometheus.yml", e.dir);
  snprintf(tsdb, sizeof tsdb, "%s/tsdb", e.dir);
  FILE *f = fopen(yml, "w");
  fprintf(f, "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
             "scrape_configs:\n"
             "  - job_name: b2stream\n"
             "    static_configs: [{targets: [\"127.0.0.1:%d\"]}]\n", port);
  fclose(f);
  snprintf(listen, sizeof listen, "127.0.0.1:%d", pport);
  snprintf(cfgarg, sizeof cfgarg, "--config.file=%s", yml);
  snprintf(tsdbarg, sizeof tsdbarg, "--storage.tsdb.path=%s", tsdb);
  snprintf(listenarg, sizeof listenarg, "--web.listen-address=%s", listen);
  char *argv[] = {"/usr/bin/prometheus", cfgarg, tsdbarg, listenarg,
                  "--log.level=warn", NULL};
  pid_t pid = spawn(argv, NULL);
  /* its query API: the series of stream w, scraped from the daemon */
  const char *q = "/api/v1/query?query=b2stream_stream_buffers_in_total"
                  "%7Bstream%3D%22w%22%7D";
  bool seen = false;
  char *body = NULL;
  for (int i = 0; i < 600 && !seen; i++) {   /* 60 s at most */
    usleep(100000);
    http_reply r;
    http_request(pport, "GET", q, "", 2000, &r);
    free(body);
    body = r.body;
    seen = r.status == 200 && body &&
           strstr(body, "\"job\":\"b2stream\"") &&
           strstr(body, "\"stream\":\"w\"") && strstr(body, ",\"40\"]");
  }
  if (!seen)
    fail_msg("Prometheus never returned the series: %s", body ? body : "");
  free(body);
  http_reply r;
  http_request(pport, "GET", "/api/v1/query?query=up%7Bjob%3D%22b2stream%22%7D",
               "", 2000, &r);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body, ",\"1\"]"));
  http_reply_free(&r);
  http_request(pport, "GET", "/api/v1/query?query="
               "b2stream_stream_committed_chunks%7Bstream%3D%22img%22%7D",
               "", 2000, &r);
  assert_int_equal(r.status, 200);
  assert_non_null(strstr(r.body, ",\"3\"]"));
  http_reply_free(&r);
  kill(pid, SIGTERM);
  assert_true(wait_bounded(pid, 30) >= 0);
  zmq_close(s);
  env_down(&e);
}

/* ---- Chromium ------------------------------------------------------------------ */

static pid_t chromium(env *e, const char *what, const char *out) {
  static char prof[400], url[100], whatarg[500];
  snprintf(prof, sizeof prof, "--user-data-dir=%s/chrome-%s", e->dir,
           strchr(what, '=') ? "shot" : "dom");
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
  snprintf(whatarg, sizeof whatarg, "%s", what);
  char *argv[] = {"/usr/bin/chromium", "--headless", "--no-sandbox",
                  "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", prof,
                  "--virtual-time-budget=8000", "--window-size=1024,600",
                  whatarg, url, NULL};
  return spawn(argv, out);
}

static void test_chromium_page(void **state) {
  (void)state;
  if (access("/usr/bin/chromium", X_OK) != 0)
    skip();
  env e;
  up(&e);
  void *s = ingest(&e);
  char dom[400], shot[400], shotarg[420];
  snprintf(dom, sizeof dom, "%s/dom.html", e.dir);
  assert_int_equal(wait_bounded(chromium(&e, "--dump-dom", dom), 120), 0);
  char *html = slurp(dom);
  /* the script ran: rows of both streams, figures from status.json, and
   * the thumbnail loaded and decoded at its natural width */
  if (!strstr(html, "<tr data-stream=\"w\"") ||
      !strstr(html, "<tr data-stream=\"img\"") ||
      !strstr(html, "data-width=\"40\"") || !strstr(html, ">writing<"))
    fail_msg("the page's DOM lacks the streams or the thumbnail:\n%s", html);
  assert_null(strstr(html, "data-updates=\"0\""));
  free(html);
  snprintf(shot, sizeof shot, "%s/shot.png", e.dir);
  snprintf(shotarg, sizeof shotarg, "--screenshot=%s", shot);
  assert_int_equal(wait_bounded(chromium(&e, shotarg, NULL), 120), 0);
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  assert_true(png_image_begin_read_from_file(&im, shot));
  assert_int_equal(im.width, 1024);
  assert_int_equal(im.height, 600);
  png_image_free(&im);
  zmq_close(s);
  env_down(&e);
}

/* ---- b2stream top in tmux --------------------------------------------------- */

static char tmux_sock[64];

static int tmux(const char *args, char *out, size_t cap) {
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "tmux -L %s %s", tmux_sock, args);
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1;
  size_t n = out ? fread(out, 1, cap - 1, p) : 0;
  if (out)
    out[n] = '\0';
  return pclose(p);
}

static bool pane_shows(const char *a, const char *b, char *screen, size_t cap) {
  for (int i = 0; i < 200; i++) {            /* 20 s at most */
    usleep(100000);
    if (tmux("capture-pane -p -t top", screen, cap) == 0 &&
        strstr(screen, a) && (!b || strstr(screen, b)))
      return true;
  }
  return false;
}

static void test_top_in_tmux(void **state) {
  (void)state;
  const char *cli = getenv("B2S_CLI");
  if (access("/usr/bin/tmux", X_OK) != 0 || !cli)
    skip();
  env e;
  up(&e);
  void *s = ingest(&e);
  snprintf(tmux_sock, sizeof tmux_sock, "b2s-top-%d", (int)getpid());
  char args[1200], screen[8192];
  snprintf(args, sizeof args, "new-session -d -s top -x 120 -y 20 "
           "'%s top --interval 0.3 --endpoint %s'", cli, e.sock);
  assert_int_equal(tmux(args, NULL, 0), 0);
  if (!pane_shows("sorted by name", "\nimg ", screen, sizeof screen))
    fail_msg("top never showed the streams:\n%s", screen);
  const char *w = strstr(screen, "\nw ");
  assert_non_null(w);
  assert_true(strstr(screen, "\nimg ") < w);   /* by name: img, then w */
  assert_non_null(strstr(w, " ok "));
  assert_int_equal(tmux("send-keys -t top d", NULL, 0), 0);
  if (!pane_shows("sorted by drops", NULL, screen, sizeof screen))
    fail_msg("top did not sort by drops:\n%s", screen);
  assert_int_equal(tmux("send-keys -t top q", NULL, 0), 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; i++) {
    usleep(100000);
    gone = tmux("has-session -t top 2>/dev/null", NULL, 0) != 0;
  }
  assert_true(gone);             /* q ended top, and with it the session */
  tmux("kill-server 2>/dev/null", NULL, 0);
  zmq_close(s);
  env_down(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prometheus_scrapes),
      cmocka_unit_test(test_chromium_page),
      cmocka_unit_test(test_top_in_tmux),
  };
  signal(SIGPIPE, SIG_IGN);
  return harness_run(tests);
}

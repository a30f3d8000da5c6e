/* `b2stream acq` and `b2stream token` (tools/cmd_acq.c, cmd_token.c):
 * the readers of the daemon's answers and event streams on exact bytes,
 * then the tool run as a real process ($B2S_CLI) against the real
 * b2streamd ($B2S_DAEMON) over its HTTP listener: its command lines, the
 * token file, a daemon that is not there, a listener that does not serve
 * the acquisition API, and every error body the daemon sends turned into
 * one line with its code, and an acquisition driven through its states. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli_acq.h"
#include "daemon_harness.h"
#include "http_client.h"
#include "ts.h"

static const char *cli_path;

/* ---- running the tool ----------------------------------------------------------- */

typedef struct run_result {
  int status;                    /* exit status, or 128 + signal */
  char out[1 << 16], err[1 << 14];
  size_t out_len, err_len;
} run_result;

static void drain(int fd, char *buf, size_t cap, size_t *len, bool *open_) {
  char tmp[4096];
  ssize_t r = read(fd, tmp, sizeof tmp);
  if (r <= 0) {
    *open_ = false;
    return;
  }
  size_t n = (size_t)r;
  if (*len + n >= cap)
    n = cap - 1 - *len;
  memcpy(buf + *len, tmp, n);
  *len += n;
  buf[*len] = '\0';
}

/* Run b2stream with args (NULL-terminated) and env "K=V" settings (NULL
 * value unsets K), stdin from /dev/null. */
static void run_env(run_result *r, const char *const *env, const char *const *args) {
  int o[2], e[2];
  assert_int_equal(pipe2(o, O_CLOEXEC), 0);
  assert_int_equal(pipe2(e, O_CLOEXEC), 0);
  char *argv[64];
  int n = 0;
  argv[n++] = (char *)cli_path;
  for (; args[n - 1] != NULL; n++)
    argv[n] = (char *)args[n - 1];
  argv[n] = NULL;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(o[1], 1);
    dup2(e[1], 2);
    unsetenv("B2STREAM_URL");
    unsetenv("B2STREAM_TOKEN_FILE");
    for (int i = 0; env && env[i]; i++) {
      char kv[1024];
      snprintf(kv, sizeof kv, "%s", env[i]);
      char *eq = strchr(kv, '=');
      if (eq) {
        *eq = '\0';
        setenv(kv, eq + 1, 1);
      }
    }
    execv(cli_path, argv);
    _exit(127);
  }
  close(o[1]);
  close(e[1]);
  memset(r, 0, sizeof *r);
  bool oo = true, eo = true;
  while (oo || eo) {
    struct pollfd p[2] = {{oo ? o[0] : -1, POLLIN, 0}, {eo ? e[0] : -1, POLLIN, 0}};
    assert_true(poll(p, 2, WAIT_MS * 3) > 0);
    if (p[0].revents)
      drain(o[0], r->out, sizeof r->out, &r->out_len, &oo);
    if (p[1].revents)
      drain(e[0], r->err, sizeof r->err, &r->err_len, &eo);
  }
  close(o[0]);
  close(e[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define RUN(r, ...)                                                            \
  do {                                                                         \
    const char *const a_[] = {__VA_ARGS__, NULL};                              \
    run_env((r), NULL, a_);                                                    \
  } while (0)

/* One line on stderr, starting "b2stream: ", that contains want. */
/* Exit 0, else the test fails with what the tool said. */
static void expect_ok(const run_result *r) {
  if (r->status != 0)
    fail_msg("exit %d, stderr: %s, stdout: %s", r->status, r->err, r->out);
}

static void expect_err(const run_result *r, int status, const char *want) {
  if (r->status != status || strncmp(r->err, "b2stream: ", 10) != 0 ||
      strchr(r->err, '\n') != r->err + r->err_len - 1 ||
      strstr(r->err, want) == NULL)
    fail_msg("exit %d (want %d), stderr: %s (want one line with '%s'), "
             "stdout: %s", r->status, status, r->err, want, r->out);
}

/* ---- the readers ------------------------------------------------------------------ */

static void test_err_text(void **state) {
  (void)state;
  char line[512], code[65];
  const char *body = "{\"error\": {\"code\": \"files_exist\", \"message\": "
                     "\"/data/p/x_data_000001.b2frame exists; overwrite is "
                     "refuse\", \"status\": 409, \"field\": \"file_template\"}}";
  assert_int_equal(cli_acq_err_text(409, body, strlen(body), line, sizeof line, code), 11);
  assert_string_equal(code, "files_exist");
  assert_string_equal(line, "files_exist (409): /data/p/x_data_000001.b2frame "
                      "exists; overwrite is refuse (field file_template)");
  /* a wait's timeout tells how far the acquisition got */
  body = "{\"error\":{\"code\":\"wait_timeout\",\"message\":\"ran out after 2 s\","
         "\"status\":504},\"acquisition\":{\"id\":\"a\",\"state\":\"writing\","
         "\"counters\":{\"frames_committed\":17}}}";
  assert_true(cli_acq_err_text(504, body, strlen(body), line, sizeof line, code) > 0);
  assert_string_equal(line, "wait_timeout (504): ran out after 2 s; the "
                      "acquisition is writing, 17 frames committed");
  /* control characters from the daemon never reach the terminal */
  body = "{\"error\":{\"code\":\"bad_json\",\"message\":\"a\\u001b[2Jb\\nc\"}}";
  assert_true(cli_acq_err_text(400, body, strlen(body), line, sizeof line, code) > 0);
  assert_string_equal(line, "bad_json (400): a?[2Jb?c");
  /* not the API's error body: the status and what came */
  body = "<html>404 Not Found</html>";
  assert_int_equal(cli_acq_err_text(404, body, strlen(body), line, sizeof line, code), 0);
  assert_string_equal(code, "");
  assert_string_equal(line, "HTTP 404, not an error of the acquisition API: "
                      "<html>404 Not Found</html>");
  assert_int_equal(cli_acq_err_text(502, "", 0, line, sizeof line, code), 0);
  assert_string_equal(line, "HTTP 502, no body");
  /* a member given twice is not read as either value */
  body = "{\"error\":{\"code\":\"a\",\"code\":\"b\"}}";
  assert_int_equal(cli_acq_err_text(400, body, strlen(body), line, sizeof line, code), 0);
  /* a small buffer is cut, never overrun */
  char small[8];
  body = "{\"error\":{\"code\":\"files_exist\",\"message\":\"long long long\"}}";
  cli_acq_err_text(409, body, strlen(body), small, sizeof small, code);
  assert_string_equal(small, "files_e");
}

typedef struct evs {
  int n;
  char text[4096];
} evs;

static bool collect(void *arg, const cli_sse_event *ev) {
  evs *e = arg;
  size_t l = strlen(e->text);
  snprintf(e->text + l, sizeof e->text - l, "[%s|%s|%.*s]", ev->event, ev->id,
           (int)ev->data_len, ev->data);
  e->n++;
  return true;
}

/* Feed text to a new reader in pieces of `step` bytes. */
static int sse_run(const char *text, size_t step, evs *e, cli_sse *s) {
  memset(e, 0, sizeof *e);
  assert_int_equal(cli_sse_init(s), 0);
  size_t n = strlen(text);
  int rc = 0;
  for (size_t off = 0; off < n && rc == 0; off += step)
    rc = cli_sse_feed(s, text + off, n - off < step ? n - off : step, collect, e);
  return rc;
}

static void test_sse(void **state) {
  (void)state;
  const char *text =
      "\xEF\xBB\xBFretry: 2000\n: keepalive\n\n"
      "id: 5f0c2a9e4b7d1c3a-1\nevent: started\ndata: {\"server\":\"x\"}\n\n"
      "id: 5f0c2a9e4b7d1c3a-2\r\nevent: progress\r\ndata:{\"a\":1}\r\n\r\n"
      "data: one\rdata: two\r\r"          /* no event name, CR endings */
      "event: ignored\n\n"                 /* no data: not dispatched */
      "id\ndata\n\n"                       /* empty id and data fields */
      "data: cut";                         /* no blank line yet */
  const char *want =
      "[started|5f0c2a9e4b7d1c3a-1|{\"server\":\"x\"}]"
      "[progress|5f0c2a9e4b7d1c3a-2|{\"a\":1}]"
      "[message|5f0c2a9e4b7d1c3a-2|one\ntwo]"
      "[message||]";
  for (size_t step = 1; step <= 7; step += 3) {
    evs e;
    cli_sse s;
    assert_int_equal(sse_run(text, step, &e, &s), 0);
    assert_string_equal(e.text, want);
    assert_int_equal(s.retry_ms, 2000);
    cli_sse_fini(&s);
  }
  /* bounds: a line over 64 KiB is an error, not a growing buffer */
  size_t big = CLI_SSE_LINE_MAX + 10;
  char *huge = malloc(big + 1);
  memset(huge, 'x', big);
  huge[big] = '\0';
  evs e;
  cli_sse s;
  assert_int_equal(sse_run(huge, 4096, &e, &s), -1);
  assert_string_equal(s.error, "a line over 64 KiB");
  cli_sse_fini(&s);
  free(huge);
}

static void test_answers(void **state) {
  (void)state;
  const char *list =
      "{\"acquisitions\":[{\"id\":\"a\",\"state\":\"done\",\"request\":"
      "{\"frames\":10},\"counters\":{\"frames_committed\":10,\"files\":1,"
      "\"loss\":false}},{\"id\":\"b\",\"state\":\"failed\",\"counters\":"
      "{\"frames_committed\":3,\"files\":2,\"loss\":true}}],\"next\":\"b\"}";
  char *buf = NULL, next[65];
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_int_equal(cli_acq_list_text(f, list, strlen(list), next), 2);
  fclose(f);
  assert_string_equal(buf, "a done 10/10 files=1\nb failed 3 files=2 loss\n");
  assert_string_equal(next, "b");
  free(buf);
  assert_int_equal(cli_acq_list_text(NULL, "[]", 2, next), -1);
  const char *files =
      "{\"files\":[{\"channel\":\"data\",\"number\":1,\"state\":\"finished\","
      "\"path\":\"/d/a_data_000001.b2frame\",\"frames\":4,"
      "\"frames_committed\":4}],\"next\":{\"channel\":\"data\",\"after\":1}}";
  char fnext[160];
  f = open_memstream(&buf, &len);
  assert_int_equal(cli_acq_files_text(f, files, strlen(files), fnext, sizeof fnext), 1);
  fclose(f);
  assert_string_equal(buf, "data 1 finished 4 4 /d/a_data_000001.b2frame\n");
  assert_string_equal(fnext, "?channel=data&after=1");
  free(buf);
  char st[16];
  const char *end = "{\"id\":\"scan-42\",\"state\":\"failed\"}";
  assert_true(cli_acq_end_of(end, strlen(end), "scan-42", st));
  assert_string_equal(st, "failed");
  assert_false(cli_acq_end_of(end, strlen(end), "scan-4", st));
  assert_true(cli_acq_token_valid("abcdefghijklmnopqrstuvwxyz012345", 32));
  assert_false(cli_acq_token_valid("abcdefghijklmnopqrstuvwxyz01234", 31));
  assert_false(cli_acq_token_valid("abcdefghijklmnopqrstuvwxyz01234 5", 33));
}

/* ---- the tool, without a daemon ---------------------------------------------------- */

static char scratch[256];

static void test_usage(void **state) {
  (void)state;
  run_result r;
  RUN(&r, "acq");
  expect_err(&r, 2, "missing subcommand");
  RUN(&r, "acq", "frobnicate");
  expect_err(&r, 2, "unknown subcommand 'frobnicate'");
  RUN(&r, "acq", "status");
  expect_err(&r, 2, "acq status: missing ID");
  RUN(&r, "acq", "status", "../x");
  expect_err(&r, 2, "'../x' is not an acquisition id");
  RUN(&r, "acq", "stop", "a", "b");
  expect_err(&r, 2, "unexpected argument 'b'");
  RUN(&r, "acq", "arm", "a", "--directory", "/d");
  expect_err(&r, 2, "exactly one of --stream and --source");
  RUN(&r, "acq", "arm", "a", "--stream", "s", "--source", "tcp://x:1", "--directory", "/d");
  expect_err(&r, 2, "exactly one of --stream and --source");
  RUN(&r, "acq", "arm", "a", "--stream", "s");
  expect_err(&r, 2, "missing --directory");
  RUN(&r, "acq", "arm", "a", "--stream", "s", "--directory", "/d", "--frames", "-1");
  expect_err(&r, 2, "--frames: '-1' is not an integer");
  RUN(&r, "acq", "arm", "a", "--stream", "s", "--directory", "/d", "--series", "[1]");
  expect_err(&r, 2, "--series: not a JSON object");
  RUN(&r, "acq", "arm", "a", "--stream", "s", "--directory", "/d", "--series",
      "{\"k\": NaN}");
  expect_err(&r, 2, "--series: not a JSON object: bad JSON at byte 6");
  RUN(&r, "acq", "arm", "a", "--body", "-");
  expect_err(&r, 2, "--body goes alone");
  RUN(&r, "acq", "wait", "a");
  expect_err(&r, 2, "exactly one of --committed and --state");
  RUN(&r, "acq", "wait", "a", "--committed", "1", "--state", "done");
  expect_err(&r, 2, "exactly one of --committed and --state");
  RUN(&r, "acq", "wait", "a", "--state", "done&x=1");
  expect_err(&r, 2, "is not a state");
  RUN(&r, "acq", "wait", "a", "--state", "done", "--timeout", "nan");
  expect_err(&r, 2, "--timeout: 'nan'");
  RUN(&r, "acq", "events", "--until-end");
  expect_err(&r, 2, "--until-end needs --acquisition");
  RUN(&r, "acq", "events", "--last-event-id", "a\r\nX: y");
  expect_err(&r, 2, "--last-event-id: not an event id");
  RUN(&r, "acq", "list", "--url", "ftp://x/");
  expect_err(&r, 2, "--url: 'ftp://x/' is not http://HOST:PORT");
  RUN(&r, "acq", "list", "--bogus");
  expect_err(&r, 2, "unknown option '--bogus'");
  RUN(&r, "acq", "arm", "--help");
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "--frames-per-file N"));
  RUN(&r, "--help");
  assert_non_null(strstr(r.out, "  acq "));
  assert_non_null(strstr(r.out, "  token "));
}

static void test_unreachable(void **state) {
  (void)state;
  int port = http_free_port();   /* nothing listens there */
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  run_result r;
  RUN(&r, "acq", "list", "--url", url);
  expect_err(&r, 3, "acq list: cannot reach http://127.0.0.1:");
  RUN(&r, "acq", "wait", "a", "--state", "done", "--url", url);
  expect_err(&r, 3, "acq wait a: cannot reach");
  RUN(&r, "acq", "events", "--url", url);
  expect_err(&r, 3, "acq events: cannot reach");
  /* $B2STREAM_URL is the default */
  char env_url[96];
  snprintf(env_url, sizeof env_url, "B2STREAM_URL=%s/", url);
  const char *const env[] = {env_url, NULL};
  const char *const args[] = {"acq", "status", "x", NULL};
  run_env(&r, env, args);
  expect_err(&r, 3, url);
}

static void test_token(void **state) {
  (void)state;
  char file[300];
  snprintf(file, sizeof file, "%s/tokens", scratch);
  run_result r;
  RUN(&r, "token", file, "alice");
  assert_int_equal(r.status, 0);
  assert_int_equal(r.out_len, 44);           /* 43 base64url characters */
  char tok1[64];
  memcpy(tok1, r.out, 43);
  tok1[43] = '\0';
  assert_true(cli_acq_token_valid(tok1, 43));
  for (int i = 0; i < 43; i++)
    assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                           "0123456789-_", tok1[i]));
  struct stat st;
  assert_int_equal(stat(file, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  RUN(&r, "token", file);
  assert_int_equal(r.status, 0);
  char tok2[64];
  memcpy(tok2, r.out, 43);
  tok2[43] = '\0';
  assert_string_not_equal(tok1, tok2);
  size_t len;
  char *text = ts_read_text(file, &len);
  char want[200];
  snprintf(want, sizeof want, "%s alice\n%s\n", tok1, tok2);
  assert_string_equal(text, want);
  free(text);
  RUN(&r, "token", file, "has space");
  expect_err(&r, 2, "NAME:");
  assert_int_equal(chmod(file, 0644), 0);
  RUN(&r, "token", file);
  expect_err(&r, 1, "mode 0644");
  assert_int_equal(chmod(file, 0600), 0);
  /* the token the acq commands read is the first token line */
  char bad[300];
  snprintf(bad, sizeof bad, "%s/bad-tokens", scratch);
  FILE *f = fopen(bad, "w");
  fputs("# comment\n\nshort name\n", f);
  fclose(f);
  RUN(&r, "acq", "list", "--token-file", bad, "--url", "http://127.0.0.1:1");
  expect_err(&r, 1, "line 3: not a token");
  RUN(&r, "acq", "list", "--token-file", "/nonexistent/t", "--url", "http://127.0.0.1:1");
  expect_err(&r, 1, "/nonexistent/t: No such file or directory");
}

/* ---- against the real daemon -------------------------------------------------------- */

/* A daemon whose listener has no acquisitions: configured: every route is
 * the contract's acquisitions_off, one line and exit 1; a URL that does not
 * lead to the API gets the listener's own 404, exit 3. */
static void test_daemon_without_acquisitions(void **state) {
  (void)state;
  int port = http_free_port();
  char yaml[1024], url[64], other[80];
  snprintf(yaml, sizeof yaml, "%shttp: {listen: \"127.0.0.1:%d\"}\n"
           "workers: 1\nstreams:\n  w: {}\n", ENV_YAML_HEAD, port);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  snprintf(other, sizeof other, "%s/thumb", url);
  env e;
  env_up(&e, yaml);
  run_result r;
  /* the listener may come up just after the ipc socket */
  int64_t deadline = ts_now_ms() + WAIT_MS;
  do
    RUN(&r, "acq", "list", "--url", url);
  while (r.status == 3 && strstr(r.err, "cannot reach") && ts_now_ms() < deadline);
  expect_err(&r, 1, "acq list: acquisitions_off (404): the configuration has no");
  RUN(&r, "acq", "status", "a", "--url", url);
  expect_err(&r, 1, "acq status a: acquisitions_off (404)");
  RUN(&r, "acq", "stop", "a", "--url", url);
  expect_err(&r, 1, "acq stop a: acquisitions_off (404)");
  RUN(&r, "acq", "wait", "a", "--state", "done", "--timeout", "0", "--url", url);
  expect_err(&r, 1, "acq wait a: acquisitions_off (404)");
  RUN(&r, "acq", "arm", "a", "--stream", "w", "--directory", "/tmp", "--url", url);
  expect_err(&r, 1, "acq arm a: acquisitions_off (404)");
  assert_int_equal(r.out_len, 0);
  RUN(&r, "acq", "list", "--url", other);
  expect_err(&r, 3, "acq list: HTTP 404, not an error of the acquisition API");
  env_down(&e);
}

/* An acquisition driven by the tool against the real daemon: arm (again:
 * the same one; otherwise id_conflict), writing, a wait that runs out,
 * stop, done; refusals and authentication as one line with the
 * contract's code and exit 1. */
static void test_whole_acquisition(void **state) {
  (void)state;
  int port = http_free_port();
  char yaml[2048], url[64], tokens[300], wrong[300], root[300], dir[400];
  env e;
  env_init_config(&e, ENV_YAML_HEAD);
  snprintf(root, sizeof root, "%s/acq", e.dir);
  snprintf(dir, sizeof dir, "%s/scan", root);
  assert_int_equal(mkdir(root, 0755), 0);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(yaml, sizeof yaml, "%shttp: {listen: \"127.0.0.1:%d\", token_file: tokens}\n"
           "acquisitions: {roots: [%s], disk_floor: 0}\n"
           "workers: 1\nstreams:\n  det:\n    acquisitions: only\n    typesize: 2\n"
           "    b2nd: {shape: [0, 16, 24], chunkshape: [1, 16, 24], dtype: \"<u2\"}\n"
           "    durability: {ack: write, group_count: 4, group_interval_ms: 5}\n",
           ENV_YAML_HEAD, port, root);
  env_write_config(&e, yaml);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
  snprintf(tokens, sizeof tokens, "%s/tokens", e.dir);
  snprintf(wrong, sizeof wrong, "%s/wrong", e.dir);
  run_result r;
  RUN(&r, "token", tokens, "ctl");
  expect_ok(&r);
  RUN(&r, "token", wrong);
  expect_ok(&r);
  env_start(&e);
  int64_t deadline = ts_now_ms() + WAIT_MS;
  do
    RUN(&r, "acq", "list", "--url", url, "--token-file", tokens);
  while (r.status == 3 && ts_now_ms() < deadline);
  expect_ok(&r);
  assert_int_equal(r.out_len, 0);               /* none held yet */

  /* no token, a wrong one: refused, nothing armed */
  RUN(&r, "acq", "arm", "s1", "--stream", "det", "--directory", dir, "--url", url);
  expect_err(&r, 1, "acq arm s1: auth_required (401)");
  RUN(&r, "acq", "arm", "s1", "--stream", "det", "--directory", dir, "--url", url,
      "--token-file", wrong);
  expect_err(&r, 1, "acq arm s1: auth_invalid (401)");
  RUN(&r, "acq", "arm", "s1", "--stream", "det", "--directory", "/etc", "--url", url,
      "--token-file", tokens);
  expect_err(&r, 1, "outside_roots (403)");
  RUN(&r, "acq", "arm", "s1", "--stream", "nope", "--directory", dir, "--url", url,
      "--token-file", tokens);
  expect_err(&r, 1, "no_such_input (404)");

  RUN(&r, "acq", "arm", "s1", "--stream", "det", "--directory", dir,
      "--frames-per-file", "4", "--series", "{\"scan\": 7}", "--json",
      "--url", url, "--token-file", tokens);
  expect_ok(&r);
  json_object *o = json_tokener_parse(r.out);
  assert_non_null(o);
  json_object *v;
  assert_true(json_object_object_get_ex(o, "armed_by", &v));
  assert_string_equal(json_object_get_string(v), "ctl");
  json_object_put(o);
  RUN(&r, "acq", "arm", "s1", "--stream", "det", "--directory", dir,
      "--frames-per-file", "4", "--series", "{\"scan\": 7}",
      "--url", url, "--token-file", tokens);
  expect_ok(&r);
  assert_non_null(strstr(r.out, "created:          no: a held acquisition"));
  RUN(&r, "acq", "arm", "s1", "--stream", "det", "--directory", dir,
      "--url", url, "--token-file", tokens);
  expect_err(&r, 1, "acq arm s1: id_conflict (409)");
  RUN(&r, "acq", "wait", "s1", "--state", "writing", "--timeout", "20", "--url", url);
  expect_ok(&r);

  /* frames come in python/tests/test_control_daemon.py; here the count
   * stays 0 and a wait for one more runs out with how far it got */
  RUN(&r, "acq", "wait", "s1", "--committed", "1", "--timeout", "0.2", "--url", url);
  expect_err(&r, 4, "wait_timeout (504)");
  assert_non_null(strstr(r.err, "the acquisition is writing, 0 frames committed"));
  RUN(&r, "acq", "status", "s1", "--url", url);
  expect_ok(&r);
  assert_non_null(strstr(r.out, "state:            writing\n"));
  assert_non_null(strstr(r.out, "frames per file:  4\n"));
  RUN(&r, "acq", "stop", "s1", "--url", url, "--token-file", tokens);
  expect_ok(&r);
  RUN(&r, "acq", "wait", "s1", "--state", "done", "--timeout", "30", "--url", url);
  expect_ok(&r);
  assert_non_null(strstr(r.out, "state:            done\n"));
  assert_non_null(strstr(r.out, "stopped by:       ctl\n"));
  RUN(&r, "acq", "list", "--url", url);
  expect_ok(&r);
  assert_int_equal(strncmp(r.out, "s1 done 0 files=", 16), 0);
  RUN(&r, "acq", "abort", "s1", "--url", url);
  expect_err(&r, 1, "acq abort s1: auth_required (401)");
  RUN(&r, "acq", "wait", "s1", "--state", "aborted", "--timeout", "0", "--url", url);
  expect_err(&r, 1, "wait_unreachable (409)");
  RUN(&r, "acq", "status", "s2", "--url", url);
  expect_err(&r, 1, "acq status s2: no_such_acquisition (404)");
  env_down(&e);
}

static int setup(void **state) {
  (void)state;
  cli_path = getenv("B2S_CLI");
  if (cli_path == NULL || cli_path[0] == '\0') {
    fprintf(stderr, "B2S_CLI is not set\n");
    return -1;
  }
  snprintf(scratch, sizeof scratch, "/tmp/b2s-cliacq-XXXXXX");
  return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return ts_rmtree(scratch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_err_text),
      cmocka_unit_test(test_sse),
      cmocka_unit_test(test_answers),
      cmocka_unit_test(test_usage),
      cmocka_unit_test(test_unreachable),
      cmocka_unit_test(test_token),
      cmocka_unit_test(test_daemon_without_acquisitions),
      cmocka_unit_test(test_whole_acquisition),
  };
  if (harness_init() != 0)
    return 1;
  int rc = ts_run_group("test_cli_acq", tests, sizeof tests / sizeof tests[0],
                        setup, teardown);
  harness_fini();
  return rc;
}

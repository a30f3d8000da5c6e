/* One writer per frame, and endpoints that never cost a file, against the
 * real daemon ($B2S_DAEMON) and the real tool ($B2S_CLI):
 *   - a second b2streamd on the same configuration refuses to start, naming
 *     the directory and the first one's PID, and the first one's frames and
 *     socket are untouched;
 *   - `b2stream recover` and `convert` refuse a frame the daemon writes,
 *     while `info`, `ls`, `cat` and `verify` read it;
 *   - a frame the daemon cannot lock (another writer holds it) fails that
 *     stream with a message naming the path and the holder;
 *   - an ipc:// endpoint path naming a regular file, or a socket someone
 *     answers on, is left alone and the daemon refuses to start (and
 *     --check-config says so); a stale socket file is replaced;
 *   - outside systemd the daemon's frames are not world-readable. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2s_frame.h"
#include "b2s_wire.h"
#include "daemon_harness.h"
#include "ts.h"

static const char *cli_path;

/* ---- processes ---------------------------------------------------------------- */

/* Run prog with args (NULL-terminated), stdout and stderr to out_path; wait
 * up to WAIT_MS; return the exit status, or -1 after killing a process
 * that did not exit in time. */
static int run_wait(const char *out_path, const char *prog, ...) {
  char *args[16];
  int n = 0;
  va_list ap;
  va_start(ap, prog);
  args[n++] = (char *)prog;
  for (const char *a; n < 15 && (a = va_arg(ap, const char *)) != NULL;)
    args[n++] = (char *)a;
  args[n] = NULL;
  va_end(ap);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(prog, args);
    _exit(127);
  }
  for (int i = 0; i < WAIT_MS / 10; i++) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

static bool exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

/* The text of path, valid until the next call (callers do not free). */
static char *slurp(const char *path) {
  static char *last;
  free(last);
  return last = ts_read_file(path, NULL);
}

/* A second daemon on config; it must refuse to start.  Returns its
 * output. */
static char *second_daemon_refused(env *e, const char *config) {
  char out[400];
  snprintf(out, sizeof out, "%s/second.log", e->dir);
  int st = run_wait(out, daemon_path, "--config", config, (char *)NULL);
  char *text = slurp(out);
  if (st <= 0)
    fail_msg("the second daemon exited with %d: %s", st, text);
  return text;
}

static void expect_contains(const char *text, const char *want) {
  if (strstr(text, want) == NULL)
    fail_msg("'%s' not in: %s", want, text);
}

static void send_some(env *e, const char *stream, int n, int seed, prod *out) {
  void *s = cli_producer(e);
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, stream, NULL, &o), 0);
  *out = prod_opened(s, &o, n, 3000, seed);
  prod_run(out, o.opened.ack_level);
}

/* The daemon still answers on its socket. */
static void still_serving(env *e) {
  void *s = cli_connect(e);
  cli_hello(s, 0);
  zmq_close(s);
}

/* ---- one daemon per configuration --------------------------------------------- */

static void test_second_daemon_refused(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  prod pw, pr;
  send_some(&e, "w", 20, 0, &pw);
  send_some(&e, "r", 20, 100, &pr);
  char *text = second_daemon_refused(&e, e.config);
  char want[400];
  snprintf(want, sizeof want, "%s/run", e.dir);
  expect_contains(text, want);
  snprintf(want, sizeof want, "PID %d", (int)e.pid);
  expect_contains(text, want);
  still_serving(&e);
  /* the first daemon goes on writing */
  prod pf;
  send_some(&e, "f", 10, 200, &pf);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  check_frame(path, &pw, 20);
  frame_path(&e, "r", path, sizeof path);
  check_frame(path, &pr, 20);
  frame_path(&e, "f", path, sizeof path);
  check_frame(path, &pf, 10);
  zmq_close(pw.s);
  zmq_close(pr.s);
  zmq_close(pf.s);
  env_fini(&e);
}

/* data_dir is the lock too: another run_dir on the same data_dir. */
static void test_second_daemon_same_data_dir(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  char cfg[400], yaml[600];
  snprintf(cfg, sizeof cfg, "%s/other.yaml", e.dir);
  snprintf(yaml, sizeof yaml,
           "listen: [ipc://o.sock]\nrun_dir: run2\ndata_dir: %s/data\n"
           "streams:\n  w:\n    typesize: 4\n", e.dir);
  FILE *f = fopen(cfg, "w");
  fputs(yaml, f);
  fclose(f);
  char *text = second_daemon_refused(&e, cfg);
  char want[400];
  snprintf(want, sizeof want, "%s/data", e.dir);
  expect_contains(text, want);
  snprintf(want, sizeof want, "PID %d", (int)e.pid);
  expect_contains(text, want);
  still_serving(&e);
  env_down(&e);
}

/* A frame reached through another data_dir (a hard link) is still one
 * frame: the second daemon's stream cannot lock it.  That stream fails,
 * naming the holder; the second daemon itself starts and stops cleanly
 * (one unusable frame does not take a daemon down). */
static void test_frame_locked_elsewhere(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  prod pw;
  send_some(&e, "w", 10, 0, &pw);
  char dir2[300], lnk[400], path[400], cfg[300], yaml[900];
  snprintf(dir2, sizeof dir2, "%s/data2", e.dir);
  assert_int_equal(mkdir(dir2, 0750), 0);
  frame_path(&e, "w", path, sizeof path);
  snprintf(lnk, sizeof lnk, "%s/w.b2frame", dir2);
  assert_int_equal(link(path, lnk), 0);
  snprintf(cfg, sizeof cfg, "%s/other.yaml", e.dir);
  snprintf(yaml, sizeof yaml,
           "listen: [ipc://%s/o.sock]\nrun_dir: run2\ndata_dir: data2\n"
           "streams:\n  w:\n    typesize: 4\n", e.dir);
  FILE *f = fopen(cfg, "w");
  fputs(yaml, f);
  fclose(f);
  env e2 = e;
  snprintf(e2.log, sizeof e2.log, "%s/second.log", e.dir);
  snprintf(e2.config, sizeof e2.config, "%s", cfg);
  snprintf(e2.sock, sizeof e2.sock, "ipc://%s/o.sock", e.dir);
  e2.pid = 0;
  env_start_as_is(&e2);
  char want[500];
  snprintf(want, sizeof want, "%s is held by another writer (PID %d)", lnk,
           (int)e.pid);
  env_log_wait(&e2, want, 1);
  env_log_wait(&e2, "stream w: failed", 1);
  assert_int_equal(env_stop(&e2, SIGTERM), 0);
  still_serving(&e);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_frame(path, &pw, 10);
  zmq_close(pw.s);
  env_fini(&e);
}

/* ---- the tool on frames the daemon writes ------------------------------------- */

static int cli(env *e, const char *out, const char *a, const char *b,
               const char *c) {
  char o[400];
  snprintf(o, sizeof o, "%s/%s", e->dir, out);
  return run_wait(o, cli_path, a, b, c, (char *)NULL);
}

static void test_tools_on_live_frames(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  prod pw, pr;
  send_some(&e, "w", 12, 0, &pw);
  send_some(&e, "r", 12, 100, &pr);
  char w[400], r[400], dst[400], out[400], want[64];
  frame_path(&e, "w", w, sizeof w);
  frame_path(&e, "r", r, sizeof r);
  snprintf(want, sizeof want, "PID %d", (int)e.pid);
  const char *frames[] = {w, r};
  for (int k = 0; k < 2; k++) {
    /* readers are never blocked */
    assert_int_equal(cli(&e, "o", "info", frames[k], NULL), 0);
    assert_int_equal(cli(&e, "o", "ls", frames[k], NULL), 0);
    assert_int_equal(cli(&e, "o", "verify", frames[k], NULL), 0);
    assert_int_equal(cli(&e, "o", "cat", frames[k], NULL), 0);
    /* recover and convert are refused, naming the holder */
    assert_int_equal(cli(&e, "o", "recover", frames[k], NULL), 1);
    snprintf(out, sizeof out, "%s/o", e.dir);
    char *text = slurp(out);
    expect_contains(text, frames[k]);
    expect_contains(text, want);
    snprintf(dst, sizeof dst, "%s/copy%d.b2frame", e.dir, k);
    assert_int_equal(cli(&e, "o", "convert", frames[k], dst), 1);
    text = slurp(out);
    expect_contains(text, want);
    assert_false(exists(dst));
  }
  /* nothing the daemon wrote was touched */
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  check_frame(w, &pw, 12);
  check_frame(r, &pr, 12);
  /* without the daemon both work */
  assert_int_equal(cli(&e, "o", "recover", r, NULL), 0);
  snprintf(dst, sizeof dst, "%s/copy.b2frame", e.dir);
  assert_int_equal(cli(&e, "o", "convert", r, dst), 0);
  zmq_close(pw.s);
  zmq_close(pr.s);
  env_fini(&e);
}

/* A sparse frame that lost a chunk file: the daemon recovers it at start
 * with every other chunk and serves the stream. */
static void test_missing_chunk_file_at_start(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  prod pr;
  send_some(&e, "r", 10, 100, &pr);
  cli_close(&pr);
  zmq_close(pr.s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char r[400], gone[500];
  frame_path(&e, "r", r, sizeof r);
  snprintf(gone, sizeof gone, "%s/00000003.chunk", r);
  assert_int_equal(unlink(gone), 0);
  env_start(&e);
  env_log_wait(&e, "1 entries of missing chunk files removed", 1);
  still_serving(&e);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  pr.dropped[3] = 1;   /* what check_frame skips */
  check_frame(r, &pr, 9);
  env_fini(&e);
}

/* ---- ipc:// endpoints ----------------------------------------------------------- */

static void sock_path(env *e, char *out, size_t n) {
  snprintf(out, n, "%s/run/d.sock", e->dir);
}

static void test_endpoint_regular_file(void **state) {
  (void)state;
  env e;
  env_init(&e);
  char run[400], sock[400];
  snprintf(run, sizeof run, "%s/run", e.dir);
  assert_int_equal(mkdir(run, 0750), 0);
  sock_path(&e, sock, sizeof sock);
  FILE *f = fopen(sock, "w");
  fputs("precious bytes\n", f);
  fclose(f);
  char *text = second_daemon_refused(&e, e.config);
  expect_contains(text, sock);
  expect_contains(text, "not a socket");
  assert_string_equal(slurp(sock), "precious bytes\n");
  /* --check-config says so as well */
  char out[400];
  snprintf(out, sizeof out, "%s/check.out", e.dir);
  int st = run_wait(out, daemon_path, "--check-config", e.config,
                    (char *)NULL);
  text = slurp(out);
  if (st == 0)
    fail_msg("--check-config passed: %s", text);
  expect_contains(text, sock);
  expect_contains(text, "not a socket");
  assert_string_equal(slurp(sock), "precious bytes\n");
  env_fini(&e);
}

/* A frame as endpoint: the most expensive file to lose. */
static void test_endpoint_names_a_frame(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  prod pw;
  send_some(&e, "w", 5, 0, &pw);
  cli_close(&pw);
  zmq_close(pw.s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char w[400], cfg[400], yaml[4096];
  frame_path(&e, "w", w, sizeof w);
  snprintf(cfg, sizeof cfg, "%s/frame-ep.yaml", e.dir);
  snprintf(yaml, sizeof yaml, "listen: [ipc://%s]\nrun_dir: run3\n"
           "data_dir: data3\nstreams:\n  x: {}\n", w);
  FILE *f = fopen(cfg, "w");
  fputs(yaml, f);
  fclose(f);
  char *text = second_daemon_refused(&e, cfg);
  expect_contains(text, "not a socket");
  check_frame(w, &pw, 5);
  /* refused before it opened a frame of its own */
  char x[400];
  snprintf(x, sizeof x, "%s/data3/x.b2frame", e.dir);
  assert_false(exists(x));
  env_fini(&e);
}

static void test_endpoint_live_socket_kept(void **state) {
  (void)state;
  env e;
  env_up(&e, base_config);
  /* another configuration, other directories, the same socket path */
  char cfg[400], yaml[1024], sock[400];
  sock_path(&e, sock, sizeof sock);
  snprintf(cfg, sizeof cfg, "%s/other.yaml", e.dir);
  snprintf(yaml, sizeof yaml, "listen: [ipc://%s]\nrun_dir: run2\n"
           "data_dir: data2\nstreams:\n  w: {}\n", sock);
  FILE *f = fopen(cfg, "w");
  fputs(yaml, f);
  fclose(f);
  struct stat before, after;
  assert_int_equal(lstat(sock, &before), 0);
  char *text = second_daemon_refused(&e, cfg);
  expect_contains(text, sock);
  expect_contains(text, "in use");
  char w2[400];
  snprintf(w2, sizeof w2, "%s/data2/w.b2frame", e.dir);
  assert_false(exists(w2));
  assert_int_equal(lstat(sock, &after), 0);
  assert_true(before.st_ino == after.st_ino);
  still_serving(&e);
  env_down(&e);
}

static void test_endpoint_stale_socket_replaced(void **state) {
  (void)state;
  env e;
  env_init(&e);
  char run[400], sock[400];
  snprintf(run, sizeof run, "%s/run", e.dir);
  assert_int_equal(mkdir(run, 0750), 0);
  sock_path(&e, sock, sizeof sock);
  /* a socket file nobody listens on: what a killed daemon leaves */
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  assert_true(strlen(sock) < sizeof a.sun_path);
  memcpy(a.sun_path, sock, strlen(sock) + 1);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  close(fd);
  struct stat sb;
  assert_int_equal(lstat(sock, &sb), 0);
  assert_true(S_ISSOCK(sb.st_mode));
  env_start_as_is(&e);
  env_log_wait(&e, "listening on", 1);
  assert_int_equal(env_log_count(&e, "removing the stale socket"), 1);
  /* the file is the daemon's socket now (inode numbers may be reused) */
  still_serving(&e);
  env_down(&e);
}

/* ---- modes --------------------------------------------------------------------- */

static void expect_mode(const char *path, mode_t want) {
  struct stat sb;
  assert_int_equal(lstat(path, &sb), 0);
  if ((sb.st_mode & 07777) != want)
    fail_msg("%s: mode %o, not %o", path, sb.st_mode & 07777, want);
}

/* Started by hand with umask 022 (not under systemd), the daemon's frames
 * are not world-readable. */
static void test_frames_not_world_readable(void **state) {
  (void)state;
  mode_t old = umask(022);
  env e;
  env_up(&e, base_config);
  umask(old);
  prod pw, pr;
  send_some(&e, "w", 4, 0, &pw);
  send_some(&e, "r", 4, 100, &pr);
  cli_close(&pr);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char w[400], r[400], f[500];
  frame_path(&e, "w", w, sizeof w);
  frame_path(&e, "r", r, sizeof r);
  expect_mode(w, 0640);
  expect_mode(r, 0750);
  snprintf(f, sizeof f, "%s/chunks.b2frame", r);
  expect_mode(f, 0640);
  snprintf(f, sizeof f, "%s/00000000.chunk", r);
  expect_mode(f, 0640);
  zmq_close(pw.s);
  zmq_close(pr.s);
  env_fini(&e);
}

int main(void) {
  if (harness_init())
    return 1;
  /* the daemons here run outside systemd, whatever runs the tests */
  unsetenv("NOTIFY_SOCKET");
  cli_path = getenv("B2S_CLI");
  if (cli_path == NULL) {
    fprintf(stderr, "B2S_CLI is not set\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_second_daemon_refused),
      cmocka_unit_test(test_second_daemon_same_data_dir),
      cmocka_unit_test(test_frame_locked_elsewhere),
      cmocka_unit_test(test_tools_on_live_frames),
      cmocka_unit_test(test_missing_chunk_file_at_start),
      cmocka_unit_test(test_endpoint_regular_file),
      cmocka_unit_test(test_endpoint_names_a_frame),
      cmocka_unit_test(test_endpoint_live_socket_kept),
      cmocka_unit_test(test_endpoint_stale_socket_replaced),
      cmocka_unit_test(test_frames_not_world_readable),
  };
  int rc = ts_run_tests(tests, NULL, NULL);
  harness_fini();
  return rc;
}

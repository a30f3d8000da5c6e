/* Integration tests of b2streamd: failures a user can understand and
 * recover from.  A full disk (a file-size limit) reaches the producer with
 * its real cause and the stream takes data again once there is room,
 * without a restart; a damaged frame fails its stream only; --check-config
 * checks what start checks; strings from the wire cannot forge log lines;
 * frames are not world-readable; a plain tcp:// endpoint is warned about; a
 * socket the user may not open is a permission error. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "b2s_frame.h"
#include "b2s_wire.h"
#include "ts.h"

static void noise_fill(uint8_t *b, size_t len, int i) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
  for (size_t k = 0; k < len; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b[k] = (uint8_t)x;
  }
}

/* The frame of a stream holds exactly n chunks: noise buffers 0..n-1. */
static void check_noise_exact(const char *path, size_t len, int64_t n) {
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  assert_int_equal(b2s_frame_nchunks(f), n);
  uint8_t *want = malloc(len), *got = malloc(len);
  for (int64_t i = 0; i < n; i++) {
    noise_fill(want, len, (int)i);
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, got, len),
                     (int)len);
    assert_memory_equal(got, want, len);
  }
  free(want);
  free(got);
  b2s_frame_free(f);
}

/* Run argv with stdout and stderr to `out`; its exit status, or -1 when it
 * did not end within 10 s (then it is killed). */
static int run_to(const char *out, char *const argv[]) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv);
    _exit(127);
  }
  for (int i = 0; i < 1000; i++) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

static void read_text(const char *path, char *buf, size_t cap) {
  char *text = ts_read_file(path, NULL);
  snprintf(buf, cap, "%s", text);
  free(text);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* ---- a full disk, and room again ------------------------------------------ */

/* File too large (RLIMIT_FSIZE): the producer's calls return EFBIG, the
 * reason in b2sc_last_error too, also after it sent more; OPEN says EFBIG while there is
 * no room; once there is, OPEN re-opens the stream (its frame back to the
 * last commit) and it takes data again, without a restart. */
static void test_full_disk_reopen(void **state) {
  (void)state;
  env e;
  env_init(&e);
  e.fsize_limit = 3000000;     /* above the frame's 1 MiB data reserve */
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "filler", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  const size_t len = 65536;
  uint8_t *b = malloc(len);
  int rc = 0, i;
  for (i = 0; i < 2000 && rc == 0; i++) {
    noise_fill(b, len, i);
    rc = b2sc_send(p, b, len, 5000);
  }
  assert_int_equal(rc, -EFBIG);
  for (int k = 0; k < 5; k++)        /* more after the end: refused here */
    assert_int_equal(b2sc_send(p, b, len, 1000), -EFBIG);
  assert_true(b2sc_ping(s, 5000) >= 0);
  assert_int_equal(b2sc_last_error_code(s), -EFBIG);
  assert_non_null(strstr(b2sc_last_error(s), "too large"));
  b2sc_producer_stats st;
  assert_int_equal(b2sc_producer_stats_get(p, &st), 0);
  assert_int_equal(b2sc_producer_close(p), -EFBIG);
  /* no room yet: OPEN says why */
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), -EFBIG);
  assert_int_equal(b2sc_last_error_code(s), -EFBIG);

  /* room again: the same daemon re-opens the stream */
  struct rlimit rl;
  assert_int_equal(prlimit(e.pid, RLIMIT_FSIZE, NULL, &rl), 0);
  rl.rlim_cur = rl.rlim_max;
  assert_int_equal(prlimit(e.pid, RLIMIT_FSIZE, &rl, NULL), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  int64_t before = b2s_frame_nchunks(f);
  b2s_frame_free(f);
  assert_true(before >= 4);
  for (int k = 0; k < 5; k++) {
    noise_fill(b, len, (int)before + k);
    assert_int_equal(b2sc_send(p, b, len, 5000), 0);
  }
  assert_int_equal(b2sc_flush(p, 10000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  /* consumers see the new chunks after the old ones */
  b2sc_consumer *c;
  assert_int_equal(b2sc_follow(s, "w", (uint64_t)before - 1, 0, &c), 0);
  b2sc_chunk_info ci;
  for (int64_t k = before - 1; k < before + 5; k++) {
    assert_int_equal(b2sc_next(c, 5000, &ci), 0);
    assert_int_equal(ci.index, (uint64_t)k);
  }
  assert_int_equal(b2sc_unfollow(c), 0);
  b2sc_close(s);
  free(b);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  assert_true(env_log_count(&e, "stream w: re-opened") >= 1);
  check_noise_exact(path, len, before + 5);
  env_fini(&e);
}

/* ---- one damaged frame ------------------------------------------------------ */

/* A contiguous frame cut to 50 bytes and a sparse frame whose index is cut
 * to 50 bytes: the daemon starts, those streams fail with a clear error
 * (log, STATS, OPEN), the others serve.  (A sparse frame that only lost a
 * chunk file recovers without it: test_daemon_locks.c.) */
static void test_damaged_frame_start(void **state) {
  (void)state;
  env e;
  env_init(&e);
  env_start(&e);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "seed", &s), 0);
  const char *names[] = {"w", "r"};
  for (int k = 0; k < 2; k++) {
    b2sc_producer *p;
    assert_int_equal(b2sc_producer_open(s, names[k], NULL, &p), 0);
    for (int i = 0; i < 6; i++)
      assert_int_equal(b2sc_send(p, "abcdefgh", 8, 5000), 0);
    assert_int_equal(b2sc_flush(p, 10000), 0);
    assert_int_equal(b2sc_producer_close(p), 0);
  }
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char path[400];
  frame_path(&e, "w", path, sizeof path);
  assert_int_equal(truncate(path, 50), 0);
  char index[500];
  frame_path(&e, "r", path, sizeof path);
  snprintf(index, sizeof index, "%s/chunks.b2frame", path);
  assert_int_equal(truncate(index, 50), 0);

  env_start(&e);
  env_log_wait(&e, "ready", 1);
  assert_true(env_log_count(&e, "stream w: failed") >= 1);
  assert_true(env_log_count(&e, "stream r: failed") >= 1);
  assert_int_equal(b2sc_connect(e.sock, "user", &s), 0);
  b2sc_producer *p;
  int rc = b2sc_producer_open(s, "w", NULL, &p);
  assert_true(rc < 0 && rc != B2S_E_NOSTREAM && rc != B2S_E_CLOSED);
  assert_non_null(strstr(b2sc_last_error(s), "recovering the frame failed"));
  rc = b2sc_producer_open(s, "r", NULL, &p);
  assert_true(rc < 0 && rc != B2S_E_NOSTREAM && rc != B2S_E_CLOSED);
  char *json = NULL;
  assert_int_equal(b2sc_stats(s, "w", &json, NULL), 0);
  assert_non_null(strstr(json, "\"failed\":-"));
  assert_non_null(strstr(json, "\"error\":\"recovering the frame failed"));
  free(json);
  /* the others serve */
  assert_int_equal(b2sc_producer_open(s, "f", NULL, &p), 0);
  for (int i = 0; i < 3; i++)
    assert_int_equal(b2sc_send(p, "abcd", 4, 5000), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  /* the operator moves the damaged frame aside: OPEN starts a new one */
  char aside[500];
  frame_path(&e, "w", path, sizeof path);
  snprintf(aside, sizeof aside, "%s.damaged", path);
  assert_int_equal(rename(path, aside), 0);
  assert_int_equal(b2sc_producer_open(s, "w", NULL, &p), 0);
  assert_int_equal(b2sc_send(p, "abcd", 4, 5000), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  assert_int_equal(b2s_frame_open(path, &f, &err), 0);
  assert_int_equal(b2s_frame_nchunks(f), 1);
  b2s_frame_free(f);
  env_fini(&e);
}

/* ---- log lines cannot be forged -------------------------------------------- */

static void test_log_escaped(void **state) {
  (void)state;
  env e;
  env_init(&e);
  env_start(&e);
  void *z = cli_connect(&e);
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.tag = 1;
  static const char name[] = "evil\n<3>forged line\x1b[31m \xc3\xa9";
  m.hello.name = (b2s_wire_str){name, sizeof name - 1};
  m.hello.pid = 42;
  cli_send(z, &m, NULL, 0);
  rx r;
  cli_expect(z, B2S_WIRE_WELCOME, &r);
  rx_free(&r);
  b2s_wire_init(&m, B2S_WIRE_OPEN);
  m.tag = 2;
  static const char tmpl[] = "no\nsuch";
  m.open.stream = b2s_wire_cstr("newone");
  m.open.tmpl = (b2s_wire_str){tmpl, sizeof tmpl - 1};
  cli_send(z, &m, NULL, 0);
  cli_expect(z, B2S_WIRE_ERROR, &r);
  rx_free(&r);
  zmq_close(z);
  env_log_wait(&e, "pid 42", 1);
  assert_int_equal(env_stop(&e, SIGTERM), 0);
  char *text = malloc(1 << 20);
  read_text(e.log, text, 1 << 20);
  assert_null(strstr(text, "\n<3>forged"));
  assert_null(strstr(text, "\x1b"));
  assert_non_null(strstr(text, "evil\\x0a<3>forged line\\x1b[31m \xc3\xa9"));
  for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
    assert_true(l[0] == '<');          /* every line has its priority */
    if (!strchr(l, '\n'))
      break;
  }
  free(text);
  env_fini(&e);
}

/* ---- --check-config checks what start checks --------------------------- */

static int check_config(env *e, const char *config, char *out_text,
                        size_t cap) {
  char out[400];
  snprintf(out, sizeof out, "%s/check.out", e->dir);
  char *argv[] = {(char *)daemon_path, "--check-config", (char *)config, NULL};
  int rc = run_to(out, argv);
  read_text(out, out_text, cap);
  return rc;
}

static void test_check_config_deep(void **state) {
  (void)state;
  env e;
  env_init(&e);
  char cfg[400], text[4096];
  /* a FIFO as the configuration: refused, not read forever */
  snprintf(cfg, sizeof cfg, "%s/fifo.yaml", e.dir);
  assert_int_equal(mkfifo(cfg, 0600), 0);
  assert_int_equal(check_config(&e, cfg, text, sizeof text), 2);
  assert_non_null(strstr(text, "regular file"));
  /* a group that does not exist */
  snprintf(cfg, sizeof cfg, "%s/group.yaml", e.dir);
  write_text(cfg, ENV_YAML_HEAD
                  "group: no-such-group-b2s\nstreams:\n  a: {}\n");
  assert_int_equal(check_config(&e, cfg, text, sizeof text), 2);
  assert_non_null(strstr(text, "no-such-group-b2s"));
  /* CURVE key files: missing, a directory, a FIFO */
  char dir[400], fifo[400];
  snprintf(dir, sizeof dir, "%s/keydir", e.dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(fifo, sizeof fifo, "%s/key.fifo", e.dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  const char *keys[] = {"/nonexistent/b2s.key", dir, fifo};
  for (int k = 0; k < 3; k++) {
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "listen: [tcp://127.0.0.1:5999]\nrun_dir: run\ndata_dir: data\n"
             "curve:\n  secret_key_file: %s\n  authorized_keys_file: %s\n"
             "streams:\n  a: {}\n", keys[k], keys[k]);
    snprintf(cfg, sizeof cfg, "%s/curve%d.yaml", e.dir, k);
    write_text(cfg, yaml);
    assert_int_equal(check_config(&e, cfg, text, sizeof text), 2);
    assert_non_null(strstr(text, keys[k]));
  }
  /* a data directory that cannot be created (a file is in the way) */
  char block[400];
  snprintf(block, sizeof block, "%s/blocker", e.dir);
  write_text(block, "x");
  snprintf(cfg, sizeof cfg, "%s/data.yaml", e.dir);
  char yaml[1024];
  snprintf(yaml, sizeof yaml,
           "listen: [ipc://d.sock]\nrun_dir: run\ndata_dir: %s/sub\n"
           "streams:\n  a: {}\n", block);
  write_text(cfg, yaml);
  assert_int_equal(check_config(&e, cfg, text, sizeof text), 2);
  assert_non_null(strstr(text, "blocker"));
  /* an ipc endpoint whose directory is a file */
  snprintf(yaml, sizeof yaml,
           "listen: [ipc://%s/d.sock]\nrun_dir: run\ndata_dir: data\n"
           "streams:\n  a: {}\n", block);
  write_text(cfg, yaml);
  assert_int_equal(check_config(&e, cfg, text, sizeof text), 2);
  assert_non_null(strstr(text, "blocker"));
  /* a cluster store directory that cannot be created */
  snprintf(yaml, sizeof yaml,
           ENV_YAML_HEAD
           "cluster:\n  storage: %s/store\n  rank: 0\n"
           "  ranks: [tcp://127.0.0.1:5999]\n  committer: tcp://c:1\n"
           "streams:\n  a: {format: distributed, chunk_nbytes: 4k}\n",
           block);
  write_text(cfg, yaml);
  assert_int_equal(check_config(&e, cfg, text, sizeof text), 2);
  assert_non_null(strstr(text, "cluster storage"));
  /* the harness's own configuration still passes */
  assert_int_equal(check_config(&e, e.config, text, sizeof text), 0);
  env_fini(&e);
}

/* ---- access --------------------------------------------------------------- */

/* Frames and the directories the daemon creates are not world-readable,
 * the run and data directories belong to `group:`; a plain tcp://
 * endpoint is warned about. */
static void test_modes_and_plain_tcp(void **state) {
  (void)state;
  env e;
  env_init_config(&e, "listen: [ipc://d.sock, tcp://127.0.0.1:39517]\n"
                      "run_dir: run\ndata_dir: data/deep\nworkers: 1\n"
                      "group: nogroup\n"
                      "streams:\n  a: {}\n  s: {format: sparse}\n");
  umask(0);
  env_start(&e);
  umask(022);
  env_log_wait(&e, "ready", 1);
  assert_true(env_log_count(&e, "without CURVE") >= 1);
  b2sc_session *s;
  assert_int_equal(b2sc_connect(e.sock, "m", &s), 0);
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, "s", NULL, &p), 0);
  assert_int_equal(b2sc_send(p, "abcd", 4, 5000), 0);
  assert_int_equal(b2sc_flush(p, 10000), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
  b2sc_close(s);
  char path[500];
  struct stat sb;
  snprintf(path, sizeof path, "%s/data/deep/a.b2frame", e.dir);
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0007, 0);
  snprintf(path, sizeof path, "%s/data/deep/s.b2frame/00000000.chunk", e.dir);
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0007, 0);
  const char *dirs[] = {"data", "data/deep", "run", "data/deep/s.b2frame"};
  for (int k = 0; k < 4; k++) {
    snprintf(path, sizeof path, "%s/%s", e.dir, dirs[k]);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0007, 0);
  }
  struct group *g = getgrnam("nogroup");
  assert_non_null(g);
  const char *shared[] = {"run", "data/deep"};
  for (int k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "%s/%s", e.dir, shared[k]);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_gid, g->gr_gid);
    assert_int_equal(sb.st_mode & 0050, 0050);
  }
  env_down(&e);
}

/* A socket this user may not open: a permission error, not a silent
 * daemon. */
static void test_socket_permission(void **state) {
  (void)state;
  env e;
  env_init(&e);
  env_start(&e);
  char sock[400];
  snprintf(sock, sizeof sock, "%s/run/d.sock", e.dir);
  assert_int_equal(chmod(sock, 0600), 0);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/run", e.dir);
  assert_int_equal(chmod(dir, 0755), 0);
  assert_int_equal(chmod(e.dir, 0755), 0);
  char out[400];                     /* the other user writes it */
  snprintf(out, sizeof out, "%s/cli.out", e.dir);
  write_text(out, "");
  assert_int_equal(chmod(out, 0666), 0);
  for (int cli = 0; cli < 2; cli++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      if (setgid(65534) < 0 || setuid(65534) < 0)
        _exit(3);
      if (cli) {                     /* the tool says why */
        const char *tool = getenv("B2S_CLI");
        /* 4: the build tree is private (a 0700 parent): not this user's */
        if (tool == NULL || access(tool, X_OK) < 0)
          _exit(4);
        int fd = open(out, O_WRONLY | O_TRUNC);
        dup2(fd, 2);
        execl(tool, tool, "stats", "--endpoint", e.sock, (char *)NULL);
        _exit(127);
      }
      b2sc_session *s = NULL;
      int rc = b2sc_connect(e.sock, "nobody", &s);
      _exit(rc == -EACCES ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == 3)        /* 3: cannot change user here */
      break;
    if (WEXITSTATUS(st) == 4) {
      print_message("the tool cannot run as another user from this build "
                    "tree; its message is not checked here\n");
      break;
    }
    assert_int_equal(WEXITSTATUS(st), cli ? 1 : 0);
    if (cli) {
      char text[1024];
      read_text(out, text, sizeof text);
      assert_non_null(strstr(text, "permission denied"));
      assert_null(strstr(text, "no answer"));
    }
  }
  env_down(&e);
}

int main(void) {
  if (harness_init())
    return 77;
  signal(SIGXFSZ, SIG_IGN);     /* inherited: EFBIG, not a signal death */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_disk_reopen),
      cmocka_unit_test(test_damaged_frame_start),
      cmocka_unit_test(test_log_escaped),
      cmocka_unit_test(test_check_config_deep),
      cmocka_unit_test(test_modes_and_plain_tcp),
      cmocka_unit_test(test_socket_permission),
  };
  int rc = ts_run_tests(tests, NULL, NULL);
  harness_fini();
  return rc;
}

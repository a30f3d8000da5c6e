/* Integration tests of b2streamd over tcp://, with and without CURVE: the
 * real daemon ($B2S_DAEMON) listens on ipc:// (for the harness) and on
 * tcp://127.0.0.1 at a port free at test time.  Producers and consumers
 * talk to it raw (daemon_harness) and through the client library; frames
 * are checked byte for byte.  Refused clients (unauthorized key, wrong
 * server key, no CURVE) must get nothing in and a clean error, while the
 * daemon keeps serving everyone else. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_errors.h"
#include "b2stream_client.h"
#include "daemon_harness.h"
#include "b2s_frame.h"
#include "b2s_wire.h"

#define KEY 41                      /* Z85 key with its NUL */

/* A port nothing listens on now (the kernel's pick for port 0). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

typedef struct keys {
  char server_pub[KEY], server_sec[KEY];
  char client_pub[KEY], client_sec[KEY];    /* authorized */
  char other_pub[KEY], other_sec[KEY];      /* not authorized */
} keys;

static void keys_make(keys *k) {
  assert_int_equal(zmq_curve_keypair(k->server_pub, k->server_sec), 0);
  assert_int_equal(zmq_curve_keypair(k->client_pub, k->client_sec), 0);
  assert_int_equal(zmq_curve_keypair(k->other_pub, k->other_sec), 0);
}

static void file_put(const env *e, const char *name, const char *text) {
  char path[400];
  snprintf(path, sizeof path, "%s/%s", e->dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* A net environment: streams w, v (ack write) and t (ack receipt), ipc for
 * the harness, tcp on a free port; CURVE when k is not NULL. */
typedef struct netenv {
  env e;
  char tcp[64];
} netenv;

static void netenv_init(netenv *n, const keys *k) {
  env_init(&n->e);
  int port = free_port();
  snprintf(n->tcp, sizeof n->tcp, "tcp://127.0.0.1:%d", port);
  char yaml[2048];
  int len = snprintf(yaml, sizeof yaml,
                     "listen: [ipc://d.sock, '%s']\n"
                     "run_dir: run\n"
                     "data_dir: data\n"
                     "workers: 2\n"
                     "log_level: debug\n"
                     "streams:\n"
                     "  w:\n"
                     "    typesize: 4\n"
                     "    durability: {ack: write, group_count: 4, "
                     "group_interval_ms: 5}\n"
                     "  t:\n"
                     "    codec: lz4\n"
                     "    durability: {ack: receipt, group_count: 4, "
                     "group_interval_ms: 5}\n"
                     "  v:\n"
                     "    durability: {ack: write, group_count: 4, "
                     "group_interval_ms: 5}\n",
                     n->tcp);
  if (k) {
    snprintf(yaml + len, sizeof yaml - (size_t)len,
             "curve:\n"
             "  secret_key_file: keys/server.key\n"
             "  authorized_keys_file: keys/authorized\n");
    char dir[400], text[400];
    snprintf(dir, sizeof dir, "%s/keys", n->e.dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(text, sizeof text, "# the daemon\n%s\n", k->server_sec);
    file_put(&n->e, "keys/server.key", text);
    /* comments, blank lines, a commented-out key, text after a key */
    snprintf(text, sizeof text,
             "# clients allowed in\n\n#%s (retired)\n  %s  camera-1\n",
             k->other_pub, k->client_pub);
    file_put(&n->e, "keys/authorized", text);
  }
  env_write_config(&n->e, yaml);
}

/* A raw DEALER on endpoint, a CURVE client when server_pub is set. */
static void *raw_connect(const char *ep, const char *server_pub,
                         const char *pub, const char *sec) {
  void *s = zmq_socket(zctx, ZMQ_DEALER);
  int linger = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
  if (server_pub) {
    assert_int_equal(zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_pub, KEY), 0);
    assert_int_equal(zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, KEY), 0);
    assert_int_equal(zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, KEY), 0);
  }
  assert_int_equal(zmq_connect(s, ep), 0);
  return s;
}

static int64_t frame_chunks(env *e, const char *stream) {
  char path[400];
  frame_path(e, stream, path, sizeof path);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  int64_t n = b2s_frame_nchunks(f);
  b2s_frame_free(f);
  return n;
}

/* A raw producer run of n buffers on stream (ack write) over socket s; the
 * frame then holds exactly them, byte for byte. */
static void raw_produce(env *e, void *s, const char *stream, int n, int seed) {
  b2s_wire_msg o;
  assert_int_equal(cli_open(s, stream, "", &o), 0);
  prod p = prod_opened(s, &o, n, 3000, seed);
  prod_run(&p, o.opened.ack_level);
  cli_close(&p);
  assert_int_equal(p.ndropped, 0);
  char path[400];
  frame_path(e, stream, path, sizeof path);
  check_frame(path, &p, n);
}

/* A raw consumer: FOLLOW with push_decompressed from 0; every one of the
 * n chunks arrives once, in order, with the producer's bytes. */
static void raw_follow_check(void *s, const char *stream, int n, int seed) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_FOLLOW);
  m.tag = 21;
  m.flags = B2S_WIRE_FOLLOW_PUSH_DECOMPRESSED;
  m.follow.target = b2s_wire_cstr(stream);
  cli_send(s, &m, NULL, 0);
  rx r;
  cli_expect(s, B2S_WIRE_FOLLOWING, &r);
  uint32_t fid = r.m.following.follow_id;
  uint8_t *want = malloc(4000);
  for (int i = 0; i < n; i++) {
    cli_expect(s, B2S_WIRE_CHUNK, &r);
    assert_int_equal(r.m.chunk.follow_id, fid);
    assert_int_equal(r.m.chunk.index, (uint64_t)i);
    size_t len = buf_len(seed + i, 3000);
    buf_fill(want, len, seed + i);
    assert_int_equal(r.plen, len);
    assert_memory_equal(r.payload, want, len);
    rx_free(&r);
  }
  free(want);
}

/* Nothing arrives on s within ms. */
static void expect_silence(void *s, int ms) {
  zmq_pollitem_t it = {.socket = s, .events = ZMQ_POLLIN};
  assert_int_equal(zmq_poll(&it, 1, ms), 0);
}

/* HELLO, OPEN and a DATA sent blind on a refused connection. */
static void blind_attempt(void *s) {
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_HELLO);
  m.tag = 1;
  m.hello.name = b2s_wire_cstr("intruder");
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  int len = b2s_wire_encode(&m, hdr, sizeof hdr);
  zmq_send(s, hdr, (size_t)len, ZMQ_DONTWAIT);
  b2s_wire_init(&m, B2S_WIRE_OPEN);
  m.tag = 2;
  m.open.stream = b2s_wire_cstr("w");
  len = b2s_wire_encode(&m, hdr, sizeof hdr);
  zmq_send(s, hdr, (size_t)len, ZMQ_DONTWAIT);
  b2s_wire_init(&m, B2S_WIRE_DATA);
  m.data.handle = 1;
  len = b2s_wire_encode(&m, hdr, sizeof hdr);
  zmq_send(s, hdr, (size_t)len, ZMQ_DONTWAIT | ZMQ_SNDMORE);
  zmq_send(s, "payload", 7, ZMQ_DONTWAIT);
}

/* ---- library helpers ---------------------------------------------------------- */

/* Send n buffers (content seed + i) through the client library and flush. */
static void lib_produce(b2sc_session *s, const char *stream, int n, int seed) {
  b2sc_producer *p;
  assert_int_equal(b2sc_producer_open(s, stream, NULL, &p), 0);
  uint8_t *b = malloc(4000);
  for (int i = 0; i < n; i++) {
    size_t len = buf_len(seed + i, 3000);
    buf_fill(b, len, seed + i);
    assert_int_equal(b2sc_send(p, b, len, WAIT_MS), 0);
  }
  free(b);
  assert_int_equal(b2sc_flush(p, WAIT_MS), 0);
  assert_int_equal(b2sc_producer_close(p), 0);
}

/* ---- tests ------------------------------------------------------------------ */

/* No CURVE: producer and consumer over tcp, raw and through the library. */
static void test_tcp_plain(void **state) {
  (void)state;
  netenv n;
  netenv_init(&n, NULL);
  env_start(&n.e);
  void *s = raw_connect(n.tcp, NULL, NULL, NULL);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER);
  raw_produce(&n.e, s, "w", 30, 100);
  void *c = raw_connect(n.tcp, NULL, NULL, NULL);
  cli_hello(c, B2S_WIRE_HELLO_CONSUMER);
  raw_follow_check(c, "w", 30, 100);
  zmq_close(c);
  zmq_close(s);

  b2sc_session *ls;
  assert_int_equal(b2sc_connect(n.tcp, "net-test", &ls), 0);
  lib_produce(ls, "t", 25, 500);
  b2sc_consumer *cons;
  assert_int_equal(b2sc_follow(ls, "t", 0, B2SC_FOLLOW_PUSH_DECOMPRESSED,
                               &cons), 0);
  uint8_t *want = malloc(4000);
  for (int i = 0; i < 25; i++) {
    b2sc_chunk_info ci;
    assert_int_equal(b2sc_next(cons, WAIT_MS, &ci), 0);
    assert_int_equal(ci.index, (uint64_t)i);
    size_t len = buf_len(500 + i, 3000);
    buf_fill(want, len, 500 + i);
    assert_int_equal(ci.len, len);
    assert_memory_equal(ci.data, want, len);
  }
  free(want);
  b2sc_unfollow(cons);
  b2sc_close(ls);
  prod p = {.n = 25, .base = 3000, .seed = 500};
  char path[400];
  frame_path(&n.e, "t", path, sizeof path);
  check_frame(path, &p, 25);
  assert_int_equal(env_stop(&n.e, SIGTERM), 0);
  check_frame(path, &p, 25);
  env_fini(&n.e);
}

/* CURVE: an authorized client produces and consumes over tcp, raw and
 * through the library (public key derived from the secret key); the ipc
 * socket needs no key. */
static void test_curve_authorized(void **state) {
  (void)state;
  keys k;
  keys_make(&k);
  netenv n;
  netenv_init(&n, &k);
  env_start(&n.e);
  void *s = raw_connect(n.tcp, k.server_pub, k.client_pub, k.client_sec);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER);
  raw_produce(&n.e, s, "w", 40, 7);
  void *c = raw_connect(n.tcp, k.server_pub, k.client_pub, k.client_sec);
  cli_hello(c, B2S_WIRE_HELLO_CONSUMER);
  raw_follow_check(c, "w", 40, 7);
  zmq_close(c);
  zmq_close(s);

  b2sc_options o = {.client_name = "curve-test",
                    .roles = B2SC_ROLE_PRODUCER | B2SC_ROLE_CONSUMER,
                    .curve_server_key = k.server_pub,
                    .curve_secret_key = k.client_sec};
  b2sc_session *ls;
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls), 0);
  lib_produce(ls, "t", 20, 900);
  assert_true(b2sc_ping(ls, WAIT_MS) >= 0);
  b2sc_close(ls);
  prod p = {.n = 20, .base = 3000, .seed = 900};
  char path[400];
  frame_path(&n.e, "t", path, sizeof path);
  check_frame(path, &p, 20);

  void *ipc = cli_connect(&n.e);      /* ipc:// stays without CURVE */
  cli_hello(ipc, 0);
  zmq_close(ipc);
  assert_true(env_log_count(&n.e, "curve: client ") >= 3);
  assert_int_equal(env_log_count(&n.e, "refused"), 0);
  env_down(&n.e);
}

/* CURVE: an unauthorized key, a wrong server key, a client without CURVE
 * and a malformed key get nothing in and a clean error; the daemon logs
 * the refusal with the peer's address and keeps serving others. */
static void test_curve_refused(void **state) {
  (void)state;
  keys k;
  keys_make(&k);
  netenv n;
  netenv_init(&n, &k);
  env_start(&n.e);
  /* raw: nothing comes back, nothing is written */
  void *bad[3] = {
      raw_connect(n.tcp, k.server_pub, k.other_pub, k.other_sec),
      raw_connect(n.tcp, k.other_pub, k.client_pub, k.client_sec),
      raw_connect(n.tcp, NULL, NULL, NULL),
  };
  for (int i = 0; i < 3; i++)
    blind_attempt(bad[i]);
  for (int i = 0; i < 3; i++)
    expect_silence(bad[i], i == 0 ? 1500 : 300);
  env_log_wait(&n.e, "refused client key", 1);
  char line[200];
  snprintf(line, sizeof line, "refused client key %s from 127.0.0.1",
           k.other_pub);
  assert_true(env_log_count(&n.e, line) >= 1);
  env_log_wait(&n.e, "handshake failed", 1);
  assert_int_equal(env_log_count(&n.e, "hello from"), 0);
  assert_int_equal(frame_chunks(&n.e, "w"), 0);

  /* the library: B2S_E_AUTH rather than a timeout */
  b2sc_options o = {.roles = B2SC_ROLE_PRODUCER, .timeout_ms = WAIT_MS,
                    .curve_server_key = k.server_pub,
                    .curve_secret_key = k.other_sec};
  b2sc_session *ls = NULL;
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls), B2S_E_AUTH);
  assert_null(ls);
  o.curve_server_key = k.other_pub;        /* wrong server key */
  o.curve_secret_key = k.client_sec;
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls), B2S_E_AUTH);
  o.curve_server_key = k.server_pub;       /* public key not the secret's */
  o.curve_public_key = k.other_pub;
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls), B2S_E_AUTH);
  o.curve_public_key = NULL;
  o.curve_secret_key = "too short";
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls), B2S_E_ARG);
  o.curve_secret_key = NULL;
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls), B2S_E_ARG);
  b2sc_options plain = {.roles = B2SC_ROLE_PRODUCER, .timeout_ms = 500};
  assert_int_equal(b2sc_connect_opts(n.tcp, &plain, &ls), B2S_E_TIMEOUT);
  assert_int_equal(env_log_count(&n.e, "hello from"), 0);

  /* others are served all along, on tcp and ipc */
  void *s = raw_connect(n.tcp, k.server_pub, k.client_pub, k.client_sec);
  cli_hello(s, B2S_WIRE_HELLO_PRODUCER);
  raw_produce(&n.e, s, "w", 10, 3);      /* exactly these 10, nothing else */
  zmq_close(s);
  void *ipc = cli_producer(&n.e);
  raw_produce(&n.e, ipc, "v", 5, 60);
  zmq_close(ipc);
  for (int i = 0; i < 3; i++) {
    expect_silence(bad[i], 10);
    zmq_close(bad[i]);
  }
  assert_int_equal(env_stop(&n.e, SIGTERM), 0);
  assert_int_equal(frame_chunks(&n.e, "w"), 10);
  env_fini(&n.e);
}

/* SIGHUP re-reads the authorized keys: a key added is admitted, a key
 * removed is refused from then on; a broken keys file keeps the old set. */
static void test_curve_keys_reload(void **state) {
  (void)state;
  keys k;
  keys_make(&k);
  netenv n;
  netenv_init(&n, &k);
  env_start(&n.e);
  b2sc_options o = {.timeout_ms = WAIT_MS, .curve_server_key = k.server_pub,
                    .curve_secret_key = k.other_sec};
  b2sc_session *ls = NULL;
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls), B2S_E_AUTH);
  char text[200];
  snprintf(text, sizeof text, "%s\n%s\n", k.client_pub, k.other_pub);
  file_put(&n.e, "keys/authorized", text);
  kill(n.e.pid, SIGHUP);
  env_log_wait(&n.e, "configuration reloaded", 1);
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls), 0);
  assert_true(b2sc_ping(ls, WAIT_MS) >= 0);
  /* remove the key: the session in place stays, new ones are refused */
  snprintf(text, sizeof text, "%s\n", k.client_pub);
  file_put(&n.e, "keys/authorized", text);
  kill(n.e.pid, SIGHUP);
  env_log_wait(&n.e, "configuration reloaded", 2);
  b2sc_session *ls2 = NULL;
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls2), B2S_E_AUTH);
  assert_true(b2sc_ping(ls, WAIT_MS) >= 0);
  b2sc_close(ls);
  /* a broken file: logged, the old set stays */
  file_put(&n.e, "keys/authorized", "not a key\n");
  kill(n.e.pid, SIGHUP);
  env_log_wait(&n.e, "configuration reloaded", 3);
  assert_true(env_log_count(&n.e, "keeping the authorized keys in use") >= 1);
  o.curve_secret_key = k.client_sec;
  assert_int_equal(b2sc_connect_opts(n.tcp, &o, &ls), 0);
  b2sc_close(ls);
  env_down(&n.e);
}

/* Exit status of the daemon on n's configuration, which must not start. */
static int daemon_fails(netenv *n) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(n->e.log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 2);
    execl(daemon_path, daemon_path, "--config", n->e.config, (char *)NULL);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

/* Broken key files stop the daemon at start with a clear message. */
static void test_curve_bad_keys(void **state) {
  (void)state;
  keys k;
  keys_make(&k);
  netenv n;
  netenv_init(&n, &k);
  file_put(&n.e, "keys/server.key", "# nothing here\n");
  assert_int_equal(daemon_fails(&n), 1);
  assert_int_equal(env_log_count(&n.e, "no Z85 secret key"), 1);
  char text[200];
  snprintf(text, sizeof text, "%s\n", k.server_sec);
  file_put(&n.e, "keys/server.key", text);
  snprintf(text, sizeof text, "# one good, one bad\n%s\nshorter\n",
           k.client_pub);
  file_put(&n.e, "keys/authorized", text);
  assert_int_equal(daemon_fails(&n), 1);
  assert_int_equal(env_log_count(&n.e, "authorized:3: not a Z85 public key"),
                   1);
  char path[400];
  snprintf(path, sizeof path, "%s/keys/authorized", n.e.dir);
  unlink(path);
  assert_int_equal(daemon_fails(&n), 1);
  assert_int_equal(env_log_count(&n.e, "cannot read"), 1);
  env_fini(&n.e);
}

/* Run the b2stream tool ($B2S_CLI) with CURVE variables server_key and
 * key_file (NULL: unset); stdout and stderr go to out[cap].  Returns the
 * exit status. */
static int run_cli(const char *const *args, const char *server_key,
                   const char *key_file, char *out, size_t cap) {
  const char *cli = getenv("B2S_CLI");
  assert_non_null(cli);
  char tmpl[] = "/tmp/b2sd-cli-XXXXXX";
  int fd = mkstemp(tmpl);
  assert_true(fd >= 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    if (server_key)
      setenv("B2S_CURVE_SERVER_KEY", server_key, 1);
    else
      unsetenv("B2S_CURVE_SERVER_KEY");
    if (key_file)
      setenv("B2S_CURVE_KEY_FILE", key_file, 1);
    else
      unsetenv("B2S_CURVE_KEY_FILE");
    char *argv[16] = {(char *)cli};
    for (int i = 0; args[i] && i < 14; i++)
      argv[i + 1] = (char *)args[i];
    execv(cli, argv);
    _exit(127);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  ssize_t n = pread(fd, out, cap - 1, 0);
  out[n > 0 ? n : 0] = '\0';
  close(fd);
  unlink(tmpl);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

/* b2stream keygen makes the keys, and b2stream stats connects with them
 * from B2S_CURVE_SERVER_KEY and B2S_CURVE_KEY_FILE. */
static void test_cli_curve(void **state) {
  (void)state;
  keys k;
  keys_make(&k);
  netenv n;
  netenv_init(&n, &k);
  char skey[400], ckey[400], okey[400], out[4096];
  char spub[KEY], cpub[KEY];
  snprintf(skey, sizeof skey, "%s/keys/server.key", n.e.dir);
  snprintf(ckey, sizeof ckey, "%s/client.key", n.e.dir);
  snprintf(okey, sizeof okey, "%s/other.key", n.e.dir);
  unlink(skey);
  const char *gen_s[] = {"keygen", skey, NULL};
  assert_int_equal(run_cli(gen_s, NULL, NULL, out, sizeof out), 0);
  assert_int_equal(strlen(out), KEY);          /* the public key and \n */
  snprintf(spub, sizeof spub, "%.40s", out);
  struct stat sb;
  assert_int_equal(stat(skey, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  assert_int_equal(run_cli(gen_s, NULL, NULL, out, sizeof out), 1);
  assert_non_null(strstr(out, "File exists"));  /* never overwritten */
  const char *pub_s[] = {"keygen", "--public", skey, NULL};
  assert_int_equal(run_cli(pub_s, NULL, NULL, out, sizeof out), 0);
  assert_memory_equal(out, spub, 40);
  const char *gen_c[] = {"keygen", ckey, NULL};
  assert_int_equal(run_cli(gen_c, NULL, NULL, out, sizeof out), 0);
  snprintf(cpub, sizeof cpub, "%.40s", out);
  const char *gen_o[] = {"keygen", okey, NULL};
  assert_int_equal(run_cli(gen_o, NULL, NULL, out, sizeof out), 0);
  char text[200];
  snprintf(text, sizeof text, "%s\n", cpub);
  file_put(&n.e, "keys/authorized", text);
  env_start(&n.e);
  snprintf(text, sizeof text, "server public key %s", spub);
  assert_int_equal(env_log_count(&n.e, text), 1);
  const char *stats[] = {"stats", "--endpoint", n.tcp, "w", NULL};
  assert_int_equal(run_cli(stats, spub, ckey, out, sizeof out), 0);
  assert_non_null(strstr(out, "\"w\":{"));
  assert_int_equal(run_cli(stats, spub, okey, out, sizeof out), 1);
  assert_non_null(strstr(out, "refused by CURVE"));
  assert_int_equal(run_cli(stats, cpub, ckey, out, sizeof out), 1);
  assert_non_null(strstr(out, "refused by CURVE"));
  assert_int_equal(run_cli(stats, spub, NULL, out, sizeof out), 1);
  assert_non_null(strstr(out, "B2S_CURVE_KEY_FILE"));
  env_down(&n.e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tcp_plain),
    cmocka_unit_test(test_curve_authorized),
    cmocka_unit_test(test_curve_refused),
    cmocka_unit_test(test_curve_keys_reload),
    cmocka_unit_test(test_curve_bad_keys),
    cmocka_unit_test(test_cli_curve),
  };
  return harness_run(tests);
}

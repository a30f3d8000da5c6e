/* The test harness of the daemon's integration tests: the real b2streamd
 * ($B2S_DAEMON) on a temporary directory with its own configuration and ipc
 * socket, a raw DEALER client speaking docs/PROTOCOL.md byte for byte, and
 * checks of the frames it writes.  Every wait has a generous timeout that
 * only guards against a hang. */
#ifndef DAEMON_HARNESS_H
#define DAEMON_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "b2s_wire.h"

struct CMUnitTest;   /* cmocka.h */

#define WAIT_MS 20000

/* The start of every test configuration: the harness's socket and the
 * daemon's directories, inside the env's directory; the test's keys and
 * streams follow (ENV_YAML_HEAD "workers: 2\nstreams:\n  w: {}\n"). */
#define ENV_YAML_HEAD                                                          \
  "listen: [ipc://d.sock]\nrun_dir: run\ndata_dir: data\n"

extern const char *daemon_path;   /* from $B2S_DAEMON */
extern void *zctx;
extern const char *base_config;   /* streams w, f, r, dn, do, bl, bq; template tm */

typedef struct env {
  char dir[256];
  char config[300];
  char sock[300];
  char log[300];
  pid_t pid;
  long fsize_limit;           /* RLIMIT_FSIZE of the daemon, bytes; 0 none */
  long nofile_limit;          /* RLIMIT_NOFILE of the daemon (soft and hard); 0
                                 none */
} env;

typedef struct rx {
  uint8_t hdr[B2S_WIRE_HEADER_MAX];
  b2s_wire_msg m;
  uint8_t *payload;
  size_t plen;
} rx;

/* A producer run: send n buffers on `handle` honouring credits, collect
 * ACKs and DROPPED until every buffer is settled at `level`. */
typedef struct prod {
  void *s;
  uint32_t handle;
  uint32_t credits;
  int n;
  size_t base;
  int seed;                   /* buffer i has content seed + i */
  uint8_t dropped[256];       /* per buffer id; n <= 256 */
  uint64_t ndropped, ack_dropped, acked[4];
  uint64_t bare_acks;         /* ACKs at level received without credits */
  int drop_reason;
} prod;

/* A temporary directory with base_config (or yaml) as b2streamd.yaml,
 * listening on ipc://DIR/run/d.sock; start, signal and stop the daemon. */
void env_init(env *e);
void env_init_config(env *e, const char *yaml);
/* The same in a directory made from tmpl (mkdtemp's XXXXXX at its end),
 * e.g. inside a test's own scratch directory, which its janitor removes. */
void env_init_config_at(env *e, const char *tmpl, const char *yaml);
void env_start(env *e);
/* Start without removing a socket file left at run/d.sock first (which
 * then passes for the daemon's: wait for its log line). */
void env_start_as_is(env *e);
int env_stop(env *e, int sig);
void env_fini(env *e);
/* The usual pair: env_init_config + env_start, and a SIGTERM stop that
 * must exit 0 + env_fini. */
void env_up(env *e, const char *yaml);
void env_down(env *e);
/* Replace the configuration file (before a SIGHUP). */
void env_write_config(env *e, const char *yaml);
/* How often text occurs in the daemon's log so far; wait (up to WAIT_MS)
 * until it occurs at least n times. */
int env_log_count(env *e, const char *text);
void env_log_wait(env *e, const char *text, int n);
void frame_path(env *e, const char *stream, char *out, size_t n);
/* The raw client: connect, send, receive, HELLO, OPEN. */
void *cli_connect(env *e);
void cli_send(void *s, const b2s_wire_msg *m, const void *p,
                     size_t plen);
void rx_free(rx *r);
void cli_recv(void *s, rx *r);
void cli_expect(void *s, int type, rx *r);
void cli_hello(void *s, uint16_t flags);
int cli_open(void *s, const char *stream, const char *tmpl,
                    b2s_wire_msg *opened);
/* Connect and HELLO as a producer. */
void *cli_producer(env *e);
/* Producer runs with deterministic buffers (content seed + i), checked
 * byte for byte in the frame by check_frame. */
size_t buf_len(int i, size_t base);
void buf_fill(uint8_t *b, size_t len, int i);
/* A run of n buffers (sizes around base) on the handle OPENED o gave on
 * socket s. */
prod prod_opened(void *s, const b2s_wire_msg *o, int n, size_t base, int seed);
void prod_handle(prod *p, rx *r);
/* Send buffers [from, to) honouring credits. */
void prod_send(prod *p, int from, int to);
/* Send all n buffers and wait until they are settled at `level`. */
void prod_run(prod *p, int level);
void cli_close(prod *p);
void check_frame(const char *path, const prod *p, int64_t expect_min);
uint64_t count_kept(const prod *p);

/* A cluster of n ranks on this machine (docs/DISTRIBUTED.md): a daemon
 * each, in its own directory (rank[i].sock is its endpoint), sharing a
 * store: storage (a directory under dir, or the URL given) and one
 * committer endpoint (ipc://DIR/commit.sock, pub: ipc://DIR/pub.sock)
 * that the test serves itself or with the committer process. */
#define CLUSTER_MAX 8
typedef struct cluster {
  int n, frames_per_block;
  char dir[256];
  char storage[512];
  char ceph_conf[512];             /* rados: $B2S_CEPH_CONF */
  char committer[320], pub[320];
  env rank[CLUSTER_MAX];
  const char *eps[CLUSTER_MAX];    /* rank[i].sock */
} cluster;

/* Directories and configurations: listen on run/d.sock, the cluster
 * section of rank i, then streams_yaml ("streams:\n ..."); storage NULL:
 * DIR/store; a rados:// storage gets ceph_conf $B2S_CEPH_CONF. */
void cluster_init(cluster *c, int n, int frames_per_block,
                  const char *storage, const char *streams_yaml);
void cluster_start(cluster *c);
/* SIGTERM every running rank (each must exit 0), remove everything. */
void cluster_fini(cluster *c);

/* Set daemon_path and zctx from the environment; returns 0 or prints why
 * not and returns 1. */
int harness_init(void);
void harness_fini(void);
/* main() of a daemon test: harness_init, the group, harness_fini. */
int harness_run_group(const char *name, const struct CMUnitTest *tests,
                      size_t n);
#define harness_run(tests) \
  harness_run_group(#tests, tests, sizeof tests / sizeof tests[0])

#endif

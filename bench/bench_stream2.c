/* DECTRIS Stream V2 ingest throughput.
 *
 * Single-channel 16-bit photon-counting images (bench_counting_image),
 * bslz4-framed by the project's encoder and wrapped in Stream V2 messages
 * (tests/support/b2s_s2enc.c), are pushed as fast as ZeroMQ takes them.  Three
 * sides, alternating round by round:
 *   raw      - the same messages over a bare PUSH/PULL pair (a receiving
 *              thread that only counts them): the transport's ceiling;
 *   ingest   - the real daemon's source, images stored by rewriting the
 *              framing (bitshuffle's default 8192-byte blocks);
 *   recomp   - the same daemon and messages with 16384-byte blocks, which
 *              the frames' 8192-byte b2nd blocks do not match: every image
 *              is decoded and compressed again (the fallback path).
 * A round of the daemon sides ends when the frame holds every image.
 * Printed: images/s min/median/max per side, the ingest/raw ratio, and CPU
 * seconds per GB of pixels (the daemon's for ingest and recomp, this
 * process's for raw).
 *
 * usage: bench_stream2 [--rounds R] [--small N] [--large N] [--daemon PATH]
 *                      [--dir DIR] [--verify true|false]
 *                      [--only raw|ingest|recomp] */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_h5lz4.h"
#include "bench_images.h"
#include "bench_proc.h"
#include "b2s_frame.h"
#include "b2s_s2enc.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* utime + stime of a process (pid > 0) or of this one, seconds. */
static double cpu_s(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid > 0 ? (int)pid : (int)getpid());
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (p)
    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

typedef struct msgs {
  int n;
  uint8_t **b;
  size_t *len;
  size_t nbytes;               /* pixels per image */
  uint64_t ny, nx;
} msgs;

/* A series id encoded in 4 bytes, patched per round. */
#define SID_PLACEHOLDER 0xfffffff0u

/* Distinct images per size: drawing a counting image costs far more than
 * sending it, so the messages cycle through this many. */
#define NDISTINCT 16

/* Image messages 1..n of one series (start and end are made per round). */
static void make_msgs(msgs *m, uint64_t ny, uint64_t nx, int n, uint32_t block) {
  m->n = n;
  m->ny = ny;
  m->nx = nx;
  m->nbytes = ny * nx * 2;
  m->b = calloc((size_t)n, sizeof *m->b);
  m->len = calloc((size_t)n, sizeof *m->len);
  uint16_t *px = malloc(m->nbytes);
  b2s_h5_params p = {.kind = B2S_H5_BSLZ4, .elem_size = 2, .typesize = 2, .clevel = 5};
  size_t cap = b2s_h5_compress_bound(&p, block, m->nbytes);
  uint8_t *fr[NDISTINCT];
  int64_t fl[NDISTINCT];
  for (int i = 0; i < NDISTINCT && i < n; i++) {
    fr[i] = malloc(cap);
    bench_counting_image(px, ny * nx, i);
    fl[i] = b2s_h5_compress(&p, block, px, m->nbytes, fr[i], cap);
  }
  b2s_s2enc e = {0};
  for (int i = 0; i < n; i++) {
    int k = i % NDISTINCT;
    b2s_s2e_part part = {"threshold_1", 2, ny, nx, "bslz4", fr[k], (size_t)fl[k], 0};
    b2s_s2e_reset(&e);
    b2s_s2e_image(&e, SID_PLACEHOLDER, "bench", (uint64_t)i + 1, &part, 1, (uint64_t)i, (uint64_t)i + 1,
             1, 1000, NULL);
    m->b[i] = malloc(e.n);
    memcpy(m->b[i], e.b, e.n);
    m->len[i] = e.n;
  }
  b2s_s2e_free(&e);
  for (int i = 0; i < NDISTINCT && i < n; i++)
    free(fr[i]);
  free(px);
}

/* The image messages carry SID_PLACEHOLDER (CBOR uint32): each round
 * writes its series id there. */
static void send_series(void *push, const msgs *m, uint64_t sid) {
  static const char *const ch[] = {"threshold_1"};
  b2s_s2enc e = {0};
  b2s_s2e_start(&e, sid, "bench", ch, 1, "uint16", m->ny, m->nx, (uint64_t)m->n, 0);
  zmq_send(push, e.b, e.n, 0);
  for (int i = 0; i < m->n; i++) {
    uint8_t *b = m->b[i];
    uint8_t *at = memmem(b, 40, "series_id", 9);
    at[10] = (uint8_t)(sid >> 24); at[11] = (uint8_t)(sid >> 16);
    at[12] = (uint8_t)(sid >> 8); at[13] = (uint8_t)sid;
    zmq_send(push, b, m->len[i], 0);
  }
  b2s_s2e_reset(&e);
  b2s_s2e_end(&e, sid, "bench");
  zmq_send(push, e.b, e.n, 0);
  b2s_s2e_free(&e);
}

typedef struct sink { void *pull; int want; } sink;

static void *sink_main(void *arg) {
  sink *k = arg;
  zmq_msg_t msg;
  zmq_msg_init(&msg);
  for (int i = 0; i < k->want; i++)
    zmq_msg_recv(&msg, k->pull, 0);
  zmq_msg_close(&msg);
  return NULL;
}

static void round_raw(void *ctx, const msgs *m, const char *dir, double *ips,
                      double *cpu_gb) {
  char ep[512];
  snprintf(ep, sizeof ep, "ipc://%s/raw.sock", dir);
  void *push = zmq_socket(ctx, ZMQ_PUSH), *pull = zmq_socket(ctx, ZMQ_PULL);
  zmq_bind(pull, ep);
  zmq_connect(push, ep);
  sink k = {pull, m->n + 2};
  pthread_t t;
  double c0 = cpu_s(0), t0 = now_s();
  pthread_create(&t, NULL, sink_main, &k);
  send_series(push, m, 1 << 20);
  pthread_join(t, NULL);
  double dt = now_s() - t0, dc = cpu_s(0) - c0;
  *ips = m->n / dt;
  *cpu_gb = dc / ((double)m->nbytes * m->n / 1e9);
  zmq_close(push);
  zmq_close(pull);
}

static int64_t frame_chunks(const char *path) {
  b2s_frame *f = NULL;
  if (b2s_frame_open(path, &f, NULL) < 0)
    return -1;
  int64_t n = b2s_frame_nchunks(f);
  b2s_frame_free(f);
  return n;
}

static void round_daemon(void *push, pid_t pid, const msgs *m, const char *dir,
                         uint64_t sid, double *ips, double *cpu_gb) {
  char path[600];
  snprintf(path, sizeof path, "%s/data/bench-%llu-threshold_1.b2frame", dir,
           (unsigned long long)sid);
  double c0 = cpu_s(pid), t0 = now_s();
  send_series(push, m, sid);
  while (frame_chunks(path) < m->n)
    usleep(2000);
  double dt = now_s() - t0, dc = cpu_s(pid) - c0;
  *ips = m->n / dt;
  *cpu_gb = dc / ((double)m->nbytes * m->n / 1e9);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void summary(const char *label, double *v, int n, const char *unit) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  printf("  %-8s %10.2f %10.2f %10.2f  %s\n", label, v[0], v[n / 2], v[n - 1], unit);
}

#define MAXR 64

/* --only SIDE (raw, ingest, recomp): that side alone, e.g. to profile it. */
static const char *only;

static void run_size(void *ctx, pid_t pid, void *push, const char *dir,
                     uint64_t ny, uint64_t nx, int n, int rounds, uint64_t *sid) {
  msgs fast, slow;
  make_msgs(&fast, ny, nx, n, 0);
  make_msgs(&slow, ny, nx, n, 16384);
  double ips[3][MAXR], cpu[3][MAXR];
  memset(ips, 0, sizeof ips);
  memset(cpu, 0, sizeof cpu);
  for (int r = 0; r < rounds; r++) {     /* alternating sides */
    if (!only || !strcmp(only, "raw"))
      round_raw(ctx, &fast, dir, &ips[0][r], &cpu[0][r]);
    if (!only || !strcmp(only, "ingest"))
      round_daemon(push, pid, &fast, dir, (*sid)++, &ips[1][r], &cpu[1][r]);
    if (!only || !strcmp(only, "recomp"))
      round_daemon(push, pid, &slow, dir, (*sid)++, &ips[2][r], &cpu[2][r]);
  }
  size_t comp = 0;
  for (int i = 0; i < n; i++)
    comp += fast.len[i];
  printf("%llux%llu uint16, %d images/round (%.1f MB pixels, %.1f MB "
         "messages), %d rounds\n", (unsigned long long)ny,
         (unsigned long long)nx, n, (double)fast.nbytes * n / 1e6,
         (double)comp / 1e6, rounds);
  double med[3][2];
  for (int s = 0; s < 3; s++) {
    double a[MAXR], b[MAXR];
    memcpy(a, ips[s], sizeof a);
    memcpy(b, cpu[s], sizeof b);
    qsort(a, (size_t)rounds, sizeof *a, cmp);
    qsort(b, (size_t)rounds, sizeof *b, cmp);
    med[s][0] = a[rounds / 2];
    med[s][1] = b[rounds / 2];
  }
  printf("  images/s    min        median     max\n");
  summary("raw", ips[0], rounds, "");
  summary("ingest", ips[1], rounds, "");
  summary("recomp", ips[2], rounds, "");
  printf("  CPU s per GB of pixels (min median max)\n");
  summary("raw", cpu[0], rounds, "(this process: push + pull)");
  summary("ingest", cpu[1], rounds, "(daemon)");
  summary("recomp", cpu[2], rounds, "(daemon)");
  printf("  ratios (medians): ingest/raw images/s %.2f; ingest/recomp CPU "
         "per GB %.2f; ingest/recomp images/s %.2f\n\n",
         med[1][0] / med[0][0], med[1][1] / med[2][1], med[1][0] / med[2][0]);
}

int main(int argc, char **argv) {
  int rounds = 5, nsmall = 400, nlarge = 12;
  const char *daemon = NULL, *dir = NULL, *verify = "true";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--small")) nsmall = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--large")) nlarge = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--daemon")) daemon = argv[i + 1];
    else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!strcmp(argv[i], "--verify")) verify = argv[i + 1];
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
  }
  if (rounds < 1 || rounds > MAXR)
    rounds = 5;
  char buf[4096], tmp[256];
  if (!daemon)
    daemon = bench_exe_locate(B2S_BENCH_DAEMON, "daemon/b2streamd", buf, sizeof buf);
  if (!dir) {
    snprintf(tmp, sizeof tmp, "/tmp/b2s-bench-s2-XXXXXX");
    dir = mkdtemp(tmp);
  }
  if (!daemon || !dir) {
    fprintf(stderr, "no daemon or directory\n");
    return 1;
  }
  char cfgpath[600], log[600], sock[600];
  snprintf(cfgpath, sizeof cfgpath, "%s/b2streamd.yaml", dir);
  snprintf(log, sizeof log, "%s/daemon.log", dir);
  snprintf(sock, sizeof sock, "%s/run/d.sock", dir);
  FILE *f = fopen(cfgpath, "w");
  fprintf(f, "listen: [ipc://d.sock]\nrun_dir: run\ndata_dir: data\n"
             "max_buffer: 64MiB\nmemory_limit: 1GiB\nmax_streams: 1000\n"
             "templates:\n  eiger: {queue_depth: 64}\n"
             "sources:\n  - kind: dectris-stream2\n"
             "    endpoint: 'ipc://%s/det.sock'\n    template: eiger\n"
             "    name: 'bench-{series_id}-{channel}'\n    verify: %s\n", dir,
          verify);
  fclose(f);
  void *ctx = zmq_ctx_new();
  char ep[600];
  snprintf(ep, sizeof ep, "ipc://%s/det.sock", dir);
  void *push = zmq_socket(ctx, ZMQ_PUSH);
  int hwm = 1000;
  zmq_setsockopt(push, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_bind(push, ep);
  char *args[] = {(char *)daemon, "--config", cfgpath, NULL};
  pid_t pid = bench_spawn(args, log);
  if (pid < 0 || bench_wait_path(pid, sock, 20000) < 0) {
    fprintf(stderr, "daemon did not start (log %s)\n", log);
    return 1;
  }
  printf("bench_stream2: Stream V2 bslz4 images, 1 channel, verify %s, daemon "
         "%s, dir %s\n\n", verify, daemon, dir);
  uint64_t sid = 100;
  run_size(ctx, pid, push, dir, 514, 1030, nsmall, rounds, &sid);
  run_size(ctx, pid, push, dir, 4362, 4148, nlarge, rounds, &sid);
  zmq_close(push);
  bench_stop(pid, 20000);
  zmq_ctx_term(ctx);
  return 0;
}

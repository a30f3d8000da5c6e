/* Distributed frames on Ceph RADOS: aggregate throughput of chunk objects
 * stored by N writer processes (stand-ins for the ranks of a cluster, each
 * storing every N-th frame of one distributed frame with
 * b2s_dframe_put_chunk), against `rados bench -p POOL S write -b SIZE -t N
 * --no-cleanup` with objects of the same size, run in the same run.
 *
 * Each writer compresses the benchmarks' detector images (bench_images.h,
 * 16-bit, IMAGE bytes each, lz4 clevel 5 shuffle: the daemon's default
 * stream) before the clock starts, then stores them round robin for S
 * seconds, one synchronous put at a time (a rank's writer thread); SIZE is
 * the mean compressed size, so both sides write objects of about the same
 * size, N at a time.  Throughput is compressed bytes stored per second by
 * all writers together.  For each N the two sides alternate (ours first on
 * even rounds, rados bench first on odd ones), and the table gives the
 * medians and min/median/max of the per-round ratios ours / rados bench.
 * Objects of both sides are removed after each run, outside the clock
 * (the test cluster keeps its objects in memory).
 *
 * With --daemons the N are real ranks instead: N b2streamd processes
 * (the build's, as bench_e2e finds its daemon), each configured as rank r
 * of N (cluster: storage rados://POOL, ranks and the committer on ipc://
 * sockets in a temporary directory, frames_per_block 1) with a template
 * of format distributed (lz4 5 shuffle typesize 2, chunk_nbytes the image
 * size, ack write, queue_depth W), and one b2stream-committer.  Per round
 * a routing producer (b2sc_cluster, a stream and so a frame of its own)
 * sends the images uncompressed with frame numbers 0, 1, ... for S
 * seconds, W buffers in flight per rank, then waits for every
 * acknowledgement (the chunk object is in RADOS).  Figures: image bytes
 * acknowledged per second, compressed bytes stored per second (the sizes
 * of the chunk objects), and the ratio stored / rados bench with -t N and
 * objects of the mean compressed size (the ranks' writers store one object
 * at a time each).  After each round, outside the clock, the frame must
 * have been closed by the committer with every frame committed; then its
 * objects are removed.  One run on a shared 2-core VM with one memstore
 * OSD (the test cluster), where producer, ranks, committer and OSD share
 * the two cores (--seconds 2 --rounds 2; MB/s, ratio min/med/max):
 *
 *   ranks  images  stored  rados bench  ratio
 *   1       580.8   291.7        608.8  0.470/0.481/0.493
 *   2       818.4   411.0        681.7  0.596/0.603/0.609
 *   3       751.3   377.3        727.1  0.486/0.519/0.553
 *
 * Needs a Ceph cluster: B2S_CEPH_CONF names its configuration
 * (scripts/ceph-test-cluster start prints it); without it the benchmark
 * says so and exits 0.  Nothing asserts on time.
 *
 *   bench_rados [--daemons] [--seconds S] [--rounds R] [--writers 1,2,3]
 *               [--window W] [--image BYTES] [--pool POOL]
 *
 * Defaults: 2 s, 3 rounds, 1, 2 and 3 writers (or ranks), W 8, 4 MiB
 * images, pool
 * $B2S_CEPH_POOL or "b2stream".  The test cluster keeps its objects in
 * memory (B2S_CEPH_MEM, 2 GiB by default): one run writes S seconds at the
 * cluster's rate, which must fit (2 s at some 700 MB/s do; here a cluster
 * of 3 GiB reported itself full, "-2147483648% full", after a few runs, so
 * longer runs need another cluster).  A full cluster fails the writes
 * after 10 s and rados bench after 3 S + 30 s instead of blocking. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "b2s_dframe.h"
#include "b2s_errors.h"
#include "b2stream_client.h"
#include "bench_images.h"
#include "bench_proc.h"

#define NIMAGES 8                 /* distinct images cycled through */
#define MAX_WRITERS 16
#define MAX_ROUNDS 32

typedef struct opts {
  int seconds, rounds, nwriters, window;
  bool daemons;                    /* real ranks instead of writers */
  int writers[MAX_WRITERS];
  size_t image;
  const char *pool, *conf;
} opts;

/* What a writer reports when its time is up. */
typedef struct writer_result {
  int rc;
  int64_t chunks, bytes;
  double seconds;
} writer_result;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

/* ---- the images --------------------------------------------------------- */

typedef struct images {
  uint8_t *chunk[NIMAGES];
  size_t cbytes[NIMAGES];
} images;

static void images_free(images *im) {
  for (int k = 0; k < NIMAGES; k++)
    free(im->chunk[k]);
}

static b2s_cparams bench_cparams(void) {
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;   /* lz4 clevel 5 shuffle */
  cp.typesize = 2;
  return cp;
}

/* Compress the detector images (every process makes the same ones). */
static int images_make(images *im, size_t image) {
  memset(im, 0, sizeof *im);
  b2s_cparams cp = bench_cparams();
  uint16_t *px = malloc(image);
  b2s_ctx *ctx = b2s_ctx_new();
  int rc = px && ctx ? 0 : B2S_E_NOMEM;
  for (int k = 0; rc >= 0 && k < NIMAGES; k++) {
    bench_detector_image(px, image / 2, k);
    im->chunk[k] = malloc(image + B2S_MAX_OVERHEAD);
    if (im->chunk[k] == NULL) {
      rc = B2S_E_NOMEM;
      break;
    }
    rc = b2s_compress(ctx, &cp, px, image, im->chunk[k],
                      image + B2S_MAX_OVERHEAD);
    im->cbytes[k] = rc > 0 ? (size_t)rc : 0;
  }
  free(px);
  b2s_ctx_free(ctx);
  return rc < 0 ? rc : 0;
}

static double images_mean(const images *im) {
  double sum = 0;
  for (int k = 0; k < NIMAGES; k++)
    sum += (double)im->cbytes[k];
  return sum / NIMAGES;
}

/* ---- our side: N writer processes ------------------------------------------- */

static int open_frame(const opts *o, const char *name, int nw, size_t image,
                      b2s_store **s, b2s_dframe **df) {
  char url[256];
  snprintf(url, sizeof url, "rados://%s", o->pool);
  /* a full cluster blocks writes: fail them instead */
  b2s_store_opts so = {.ceph_conf = o->conf, .timeout_ms = 10000};
  b2s_dframe_params p = {.cparams = bench_cparams(),
                         .chunk_nbytes = (int32_t)image,
                         .ranks = nw,
                         .frames_per_block = 1};
  int rc = b2s_store_open(url, &so, s);
  return rc < 0 ? rc : b2s_dframe_create(*s, name, &p, df);
}

/* Rank r of nw: prepare, say ready, wait for the start (EOF on go), then
 * store frames r, r + nw, ... for o->seconds. */
static writer_result writer_run(const opts *o, const char *name, int r,
                                int nw, int ready, int go) {
  writer_result res = {0};
  images im;
  b2s_store *s = NULL;
  b2s_dframe *df = NULL;
  res.rc = images_make(&im, o->image);
  if (res.rc == 0)
    res.rc = open_frame(o, name, nw, o->image, &s, &df);
  char c = 1;
  write_all(ready, &c, 1);
  while (read(go, &c, 1) > 0)
    ;                              /* released together at EOF */
  double t0 = now(), t = t0;
  for (int64_t i = r; res.rc == 0 && t - t0 < o->seconds; i += nw) {
    int k = (int)(i % NIMAGES);
    res.rc = b2s_dframe_put_chunk(df, i, im.chunk[k], im.cbytes[k], NULL);
    res.chunks++;
    res.bytes += (int64_t)im.cbytes[k];
    t = now();
  }
  res.seconds = t - t0;
  if (res.rc < 0)
    fprintf(stderr, "bench_rados: writer %d: %s %s\n", r, b2s_strerror(res.rc),
            b2s_store_last_error());
  b2s_dframe_free(df);
  b2s_store_free(s);
  images_free(&im);
  return res;
}

/* Remove what the writers stored (a process of its own: librados is set
 * up after fork only). */
static int cleanup_frame(const opts *o, const char *name, int nw,
                         int64_t upto) {
  b2s_store *s;
  b2s_dframe *df;
  int rc = open_frame(o, name, nw, o->image, &s, &df);
  b2s_dframe_free(df);
  char obj[256];
  for (int64_t i = 0; rc >= 0 && i < upto; i++) {
    b2s_dframe_chunk_name(name, i, obj, sizeof obj);
    b2s_store_remove(s, obj);      /* -ENOENT past a writer's last */
  }
  static const char *const suffix[] = {".meta", ".index"};
  for (int k = 0; rc >= 0 && k < 2; k++) {
    snprintf(obj, sizeof obj, "%s%s", name, suffix[k]);
    b2s_store_remove(s, obj);
  }
  b2s_store_free(s);
  return rc;
}

static pid_t spawn_writer(const opts *o, const char *name, int r, int nw,
                          int fds[3], int go_w) {
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  close(go_w);                     /* else the child holds its own go open */
  writer_result res = writer_run(o, name, r, nw, fds[0], fds[1]);
  _exit(write_all(fds[2], &res, sizeof res) == 0 && res.rc == 0 ? 0 : 1);
}

/* Aggregate bytes per second of nw writers, or < 0. */
static double ours(const opts *o, int nw, int round) {
  char name[96];
  snprintf(name, sizeof name, "bench-%d-%d-%d", (int)getpid(), nw, round);
  int ready[2], go[2], res[2];
  if (pipe(ready) < 0 || pipe(go) < 0 || pipe(res) < 0)
    return -1;
  pid_t pids[MAX_WRITERS];
  for (int r = 0; r < nw; r++)
    pids[r] = spawn_writer(o, name, r, nw, (int[3]){ready[1], go[0], res[1]},
                           go[1]);
  close(ready[1]);
  close(go[0]);
  close(res[1]);
  char c;
  for (int r = 0; r < nw; r++)
    read_all(ready[0], &c, 1);
  close(go[1]);                    /* start */
  int64_t bytes = 0, most = 0;      /* most: chunks of the busiest writer */
  double longest = 0;
  bool ok = true;
  for (int r = 0; r < nw; r++) {
    writer_result w;
    ok = ok && read_all(res[0], &w, sizeof w) == 0 && w.rc == 0;
    bytes += ok ? w.bytes : 0;
    most = ok && w.chunks > most ? w.chunks : most;
    longest = ok && w.seconds > longest ? w.seconds : longest;
  }
  for (int r = 0; r < nw; r++)
    waitpid(pids[r], NULL, 0);
  close(ready[0]);
  close(res[0]);
  pid_t pid = fork();
  if (pid == 0)
    _exit(cleanup_frame(o, name, nw, (most + 1) * nw) < 0);
  waitpid(pid, NULL, 0);
  return ok && longest > 0 ? (double)bytes / longest : -1;
}

/* ---- rados bench ------------------------------------------------------------- */

/* A number after `key` in the output, or -1. */
static double field(const char *out, const char *key) {
  const char *p = strstr(out, key);
  return p ? strtod(p + strlen(key), NULL) : -1;
}

/* `rados bench` with nw ops in flight and objects of size bytes: bytes per
 * second from its totals, or < 0. */
static double rados_bench(const opts *o, int nw, size_t size) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "timeout %d rados -c '%s' bench -p '%s' %d write -b %zu -t %d "
           "--no-cleanup 2>&1",
           3 * o->seconds + 30, o->conf, o->pool, o->seconds, size, nw);
  FILE *p = popen(cmd, "r");
  if (p == NULL)
    return -1;
  static char out[1 << 16];
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  double writes = field(out, "Total writes made:");
  double wsize = field(out, "Write size:");
  double secs = field(out, "Total time run:");
  snprintf(cmd, sizeof cmd,
           "timeout 120 rados -c '%s' -p '%s' --force-full cleanup "
           ">/dev/null 2>&1", o->conf, o->pool);
  if (system(cmd) != 0)
    fprintf(stderr, "bench_rados: rados cleanup failed\n");
  if (st != 0 || writes <= 0 || wsize <= 0 || secs <= 0) {
    fprintf(stderr, "bench_rados: rados bench failed:\n%s\n", out);
    return -1;
  }
  return writes * wsize / secs;
}

/* ---- report -------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct summary {
  int writers;
  double ours, rados;              /* medians, bytes per second */
  double rmin, rmed, rmax;         /* per-round ratios ours / rados */
} summary;

/* Rounds for nw writers, alternating which side goes first; rados bench
 * writes objects of `size` bytes. */
static int run_writers(const opts *o, int nw, size_t size, summary *sum) {
  double a[MAX_ROUNDS], b[MAX_ROUNDS], ratio[MAX_ROUNDS];
  for (int r = 0; r < o->rounds; r++) {
    if (r % 2 == 0)
      a[r] = ours(o, nw, r);
    b[r] = rados_bench(o, nw, size);
    if (r % 2 == 1)
      a[r] = ours(o, nw, r);
    if (a[r] <= 0 || b[r] <= 0)
      return -1;
    ratio[r] = a[r] / b[r];
    printf("  writers %d round %d (%s first): put_chunk %8.1f MB/s, rados "
           "bench %8.1f MB/s, ratio %.3f\n", nw, r, r % 2 ? "rados" : "ours",
           a[r] / 1e6, b[r] / 1e6, ratio[r]);
  }
  *sum = (summary){.writers = nw, .ours = median(a, o->rounds),
                   .rados = median(b, o->rounds),
                   .rmed = median(ratio, o->rounds)};
  sum->rmin = ratio[0];            /* median() sorted them */
  sum->rmax = ratio[o->rounds - 1];
  return 0;
}

/* ---- real ranks: b2streamd processes, the committer, a routing producer ------ */

#ifndef B2S_BENCH_DAEMON
#define B2S_BENCH_DAEMON ""
#endif
#ifndef B2S_BENCH_COMMITTER
#define B2S_BENCH_COMMITTER ""
#endif

typedef struct ranks_proc {
  char dir[64];                    /* configs, sockets, logs */
  char eps[MAX_WRITERS][96];       /* ipc://dir/rK.sock, rank order */
  int n;
} ranks_proc;

/* Started processes, killed at exit if still running (a failed run). */
static pid_t procs[MAX_WRITERS + 1];

static void procs_kill(void) {
  for (int k = 0; k <= MAX_WRITERS; k++)
    if (procs[k] > 0) {
      kill(procs[k], SIGKILL);
      waitpid(procs[k], NULL, 0);
      procs[k] = 0;
    }
}

/* Rank r's configuration: one template, so each round opens a stream (and
 * a frame in the store) of its own. */
static int rank_config(const opts *o, const ranks_proc *rp, int r) {
  char path[128];
  snprintf(path, sizeof path, "%s/r%d.yaml", rp->dir, r);
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return -1;
  size_t mem = 4 * ((size_t)o->window + 4) * o->image;
  fprintf(f,
          "listen: [%s]\nrun_dir: %s/run%d\ndata_dir: %s/data%d\n"
          "workers: 2\nmemory_limit: %zu\nmax_buffer: %zu\n"
          "log_level: warning\ncluster:\n  storage: rados://%s\n"
          "  ceph_conf: %s\n  rank: %d\n  committer: ipc://%s/commit.sock\n"
          "  committer_pub: ipc://%s/pub.sock\n  frames_per_block: 1\n"
          "  ranks:\n", rp->eps[r], rp->dir, r, rp->dir, r,
          mem < ((size_t)256 << 20) ? (size_t)256 << 20 : mem, o->image,
          o->pool, o->conf, r, rp->dir, rp->dir);
  for (int k = 0; k < rp->n; k++)
    fprintf(f, "    - %s\n", rp->eps[k]);
  fprintf(f,
          "templates:\n  bench:\n    format: distributed\n"
          "    chunk_nbytes: %zu\n    codec: lz4\n    clevel: 5\n"
          "    typesize: 2\n    filters: [shuffle]\n"
          "    durability: {ack: write}\n    backpressure: block\n"
          "    queue_depth: %d\n", o->image, o->window);
  return fclose(f) == 0 ? 0 : -1;
}

/* Fork and exec argv with its output to log; the pid goes in procs[slot]. */
static void spawn(char *const argv[], const char *log, int slot) {
  pid_t pid = bench_spawn(argv, log);
  procs[slot] = pid > 0 ? pid : 0;
}

/* Wait (up to 10 s) for rank r's socket to appear. */
static int rank_wait(const ranks_proc *rp, int r) {
  int rc = bench_wait_path(procs[r], rp->eps[r] + strlen("ipc://"), 10000);
  if (rc == -ECHILD)
    procs[r] = 0;                  /* reaped */
  return rc < 0 ? -1 : 0;
}

/* n ranks and the committer, configured and listening. */
static int ranks_start(const opts *o, ranks_proc *rp, int n) {
  char dbuf[512], cbuf[512], log[128], cfg[128], url[256], pull[128],
      pub[128];
  const char *daemon = bench_exe_locate(B2S_BENCH_DAEMON, "daemon/b2streamd",
                                        dbuf, sizeof dbuf);
  const char *committer = bench_exe_locate(B2S_BENCH_COMMITTER,
                                           "cluster/b2stream-committer", cbuf,
                                           sizeof cbuf);
  rp->n = 0;                       /* nothing to stop yet */
  snprintf(rp->dir, sizeof rp->dir, "/tmp/bench-rados-XXXXXX");
  if (daemon == NULL || committer == NULL || mkdtemp(rp->dir) == NULL) {
    fprintf(stderr, "bench_rados: no b2streamd or b2stream-committer\n");
    return -1;
  }
  rp->n = n;
  for (int r = 0; r < n; r++)
    snprintf(rp->eps[r], sizeof rp->eps[r], "ipc://%s/r%d.sock", rp->dir, r);
  snprintf(url, sizeof url, "rados://%s", o->pool);
  snprintf(pull, sizeof pull, "ipc://%s/commit.sock", rp->dir);
  snprintf(pub, sizeof pub, "ipc://%s/pub.sock", rp->dir);
  snprintf(log, sizeof log, "%s/committer.log", rp->dir);
  spawn((char *[]){(char *)committer, "--store", url, "--pull", pull,
                   "--pub", pub, "--ceph-conf", (char *)o->conf, NULL},
        log, MAX_WRITERS);
  for (int r = 0; r < n; r++) {
    snprintf(cfg, sizeof cfg, "%s/r%d.yaml", rp->dir, r);
    snprintf(log, sizeof log, "%s/r%d.log", rp->dir, r);
    if (rank_config(o, rp, r) < 0)
      return -1;
    spawn((char *[]){(char *)daemon, "--config", cfg, NULL}, log, r);
  }
  for (int r = 0; r < n; r++)
    if (rank_wait(rp, r) < 0) {
      fprintf(stderr, "bench_rados: rank %d did not start (%s/r%d.log)\n", r,
              rp->dir, r);
      return -1;
    }
  return 0;
}

/* SIGTERM, then SIGKILL after 10 s; 0 when it exited with 0. */
static int proc_stop(int slot) {
  int rc = bench_stop(procs[slot], 10000);
  procs[slot] = 0;
  return rc == 0 ? 0 : -1;
}

/* Stop the ranks, then the committer; the directory goes unless something
 * failed (its logs say what). */
static int ranks_stop(ranks_proc *rp, bool failed) {
  int rc = 0;
  for (int r = 0; r < rp->n; r++)
    rc |= proc_stop(r);
  rc |= proc_stop(MAX_WRITERS);
  if (failed || rc != 0) {
    fprintf(stderr, "bench_rados: logs in %s\n", rp->dir);
    return -1;
  }
  return bench_rmtree(rp->dir) == 0 ? 0 : -1;
}

/* Wait (up to 30 s) for the committer to close frame `name`, then add up
 * the sizes of its chunk objects [0, n) and remove them with the frame's
 * own objects.  Runs in a child: librados is set up after fork only. */
static int64_t frame_reap(const opts *o, const char *name, int64_t n) {
  char url[256], obj[256];
  snprintf(url, sizeof url, "rados://%s", o->pool);
  b2s_store_opts so = {.ceph_conf = o->conf, .timeout_ms = 10000};
  b2s_store *s;
  b2s_dframe *df = NULL;
  if (b2s_store_open(url, &so, &s) < 0)
    return -1;
  bool closed = false;
  int64_t committed = 0, bytes = 0;
  for (int i = 0; i < 300 && !closed; i++) {
    if (df == NULL && b2s_dframe_open(s, name, &df) < 0)
      df = NULL;
    if (df && b2s_dframe_refresh(df, &committed, &closed) < 0)
      break;
    if (!closed)
      usleep(100000);
  }
  b2s_dframe_free(df);
  for (int64_t i = 0; i < n; i++) {
    uint64_t size = 0;
    b2s_dframe_chunk_name(name, i, obj, sizeof obj);
    bytes += b2s_store_stat(s, obj, &size) == 0 ? (int64_t)size : 0;
    b2s_store_remove(s, obj);
  }
  static const char *const suffix[] = {".meta", ".index"};
  for (int k = 0; k < 2; k++) {
    snprintf(obj, sizeof obj, "%s%s", name, suffix[k]);
    b2s_store_remove(s, obj);
  }
  b2s_store_free(s);
  if (!closed || committed != n)
    fprintf(stderr, "bench_rados: %s %s at %lld of %lld frames\n", name,
            closed ? "closed" : "still open", (long long)committed,
            (long long)n);
  return closed && committed == n ? bytes : -1;
}

/* frame_reap in a child process. */
static int64_t frame_reap_child(const opts *o, const char *name, int64_t n) {
  int fd[2];
  if (pipe(fd) < 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    int64_t bytes = frame_reap(o, name, n);
    _exit(write_all(fd[1], &bytes, sizeof bytes) == 0 ? 0 : 1);
  }
  close(fd[1]);
  int64_t bytes = -1;
  if (read_all(fd[0], &bytes, sizeof bytes) < 0)
    bytes = -1;
  close(fd[0]);
  waitpid(pid, NULL, 0);
  return bytes;
}

typedef struct ranks_result {
  double images, stored;           /* bytes per second */
} ranks_result;

/* Route frames 0, 1, ... of the images to the ranks for o->seconds, then
 * wait for every acknowledgement (ack write: the chunk object is in
 * RADOS).  A stream, and so a frame, of its own per round. */
static int ranks_round(const opts *o, const ranks_proc *rp, int round,
                       uint16_t *const raw[NIMAGES], ranks_result *res) {
  char name[96];
  snprintf(name, sizeof name, "bench-%d-%d-%d", (int)getpid(), rp->n, round);
  const char *eps[MAX_WRITERS];
  for (int r = 0; r < rp->n; r++)
    eps[r] = rp->eps[r];
  b2sc_cluster *c;
  int rc = b2sc_cluster_open(eps, rp->n, 1, name, "bench", NULL, &c);
  if (rc < 0) {
    fprintf(stderr, "bench_rados: cluster open: %s\n", b2s_strerror(rc));
    return -1;
  }
  double t0 = now();
  int64_t f = 0;
  for (; rc == 0 && now() - t0 < o->seconds; f++)
    rc = b2sc_cluster_send(c, (uint64_t)f, raw[f % NIMAGES], o->image, 30000);
  if (rc == 0)
    rc = b2sc_cluster_flush(c, 60000);
  double secs = now() - t0;
  if (rc < 0)
    fprintf(stderr, "bench_rados: %s: %s\n", b2s_strerror(rc),
            b2sc_cluster_last_error(c));
  rc |= b2sc_cluster_close(c);
  int64_t stored = frame_reap_child(o, name, f);   /* outside the clock */
  if (rc < 0 || stored <= 0)
    return -1;
  *res = (ranks_result){.images = (double)f * (double)o->image / secs,
                        .stored = (double)stored / secs};
  return 0;
}

typedef struct ranks_summary {
  int ranks;
  double images, stored, rados;    /* medians, bytes per second */
  double rmin, rmed, rmax;         /* per-round ratios stored / rados */
} ranks_summary;

/* Rounds for n ranks, alternating which side goes first. */
static int run_ranks(const opts *o, int n, size_t size,
                     uint16_t *const raw[NIMAGES], ranks_summary *sum) {
  ranks_proc rp;
  if (ranks_start(o, &rp, n) < 0) {
    ranks_stop(&rp, true);
    return -1;
  }
  double im[MAX_ROUNDS], st[MAX_ROUNDS], b[MAX_ROUNDS], ratio[MAX_ROUNDS];
  int rc = 0;
  for (int r = 0; rc == 0 && r < o->rounds; r++) {
    ranks_result a = {0};
    if (r % 2 == 0)
      rc = ranks_round(o, &rp, r, raw, &a);
    b[r] = rc == 0 ? rados_bench(o, n, size) : -1;
    if (r % 2 == 1 && b[r] > 0)
      rc = ranks_round(o, &rp, r, raw, &a);
    if (rc < 0 || b[r] <= 0)
      rc = -1;
    im[r] = a.images;
    st[r] = a.stored;
    ratio[r] = rc == 0 ? st[r] / b[r] : 0;
    if (rc == 0)
      printf("  ranks %d round %d (%s first): images %8.1f MB/s, stored "
             "%8.1f MB/s, rados bench %8.1f MB/s, ratio %.3f\n", n, r,
             r % 2 ? "rados" : "ours", im[r] / 1e6, st[r] / 1e6, b[r] / 1e6,
             ratio[r]);
  }
  if (ranks_stop(&rp, rc < 0) < 0 || rc < 0)
    return -1;
  *sum = (ranks_summary){.ranks = n, .images = median(im, o->rounds),
                         .stored = median(st, o->rounds),
                         .rados = median(b, o->rounds),
                         .rmed = median(ratio, o->rounds)};
  sum->rmin = ratio[0];            /* median() sorted them */
  sum->rmax = ratio[o->rounds - 1];
  return 0;
}

static int parse_list(const char *s, opts *o) {
  o->nwriters = 0;
  for (char *end; *s && o->nwriters < MAX_WRITERS; s = *end ? end + 1 : end) {
    long v = strtol(s, &end, 10);
    if (v < 1 || v > MAX_WRITERS || (*end && *end != ','))
      return -1;
    o->writers[o->nwriters++] = (int)v;
  }
  return o->nwriters > 0 ? 0 : -1;
}

static int parse(int argc, char **argv, opts *o) {
  const char *pool = getenv("B2S_CEPH_POOL");
  *o = (opts){.seconds = 2, .rounds = 3, .nwriters = 3,
              .writers = {1, 2, 3}, .image = 4 << 20, .window = 8,
              .pool = pool && pool[0] ? pool : "b2stream",
              .conf = getenv("B2S_CEPH_CONF")};
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = v == NULL;
    if (!strcmp(argv[i], "--daemons")) {
      o->daemons = true;
      continue;
    }
    if (!bad && !strcmp(argv[i], "--seconds"))
      bad = (o->seconds = atoi(v)) < 1;
    else if (!bad && !strcmp(argv[i], "--rounds"))
      bad = (o->rounds = atoi(v)) < 1 || o->rounds > MAX_ROUNDS;
    else if (!bad && !strcmp(argv[i], "--writers"))
      bad = parse_list(v, o) < 0;
    else if (!bad && !strcmp(argv[i], "--image"))
      bad = (o->image = (size_t)atol(v)) < 1024 || o->image % 2;
    else if (!bad && !strcmp(argv[i], "--window"))
      bad = (o->window = atoi(v)) < 1;
    else if (!bad && !strcmp(argv[i], "--pool"))
      o->pool = v;
    else
      bad = 1;
    if (bad) {
      fprintf(stderr, "usage: bench_rados [--daemons] [--seconds S] "
                      "[--rounds R] [--writers 1,2,3] [--window W] "
                      "[--image BYTES] [--pool POOL]\n");
      return -1;
    }
    i++;
  }
  return 0;
}

/* The writers' table. */
static int main_writers(const opts *o, size_t size) {
  summary sums[MAX_WRITERS];
  for (int k = 0; k < o->nwriters; k++)
    if (run_writers(o, o->writers[k], size, &sums[k]) < 0)
      return 1;
  printf("\n%-8s %16s %18s %22s\n", "writers", "put_chunk MB/s",
         "rados bench MB/s", "ratio min/med/max");
  for (int k = 0; k < o->nwriters; k++)
    printf("%-8d %16.1f %18.1f %10.3f/%.3f/%.3f\n", sums[k].writers,
           sums[k].ours / 1e6, sums[k].rados / 1e6, sums[k].rmin,
           sums[k].rmed, sums[k].rmax);
  return 0;
}

/* The ranks' table: the producer sends the images uncompressed. */
static int main_ranks(const opts *o, size_t size) {
  uint16_t *raw[NIMAGES] = {0};
  int rc = 0;
  for (int k = 0; rc == 0 && k < NIMAGES; k++) {
    raw[k] = malloc(o->image);
    if (raw[k] == NULL)
      rc = 1;
    else
      bench_detector_image(raw[k], o->image / 2, k);
  }
  ranks_summary sums[MAX_WRITERS];
  printf("ranks: b2streamd each, one b2stream-committer, a routing "
         "producer with %d buffers in flight per rank (ack write)\n",
         o->window);
  for (int k = 0; rc == 0 && k < o->nwriters; k++)
    if (run_ranks(o, o->writers[k], size, raw, &sums[k]) < 0)
      rc = 1;
  for (int k = 0; k < NIMAGES; k++)
    free(raw[k]);
  if (rc != 0)
    return rc;
  printf("\n%-6s %12s %12s %18s %22s\n", "ranks", "images MB/s",
         "stored MB/s", "rados bench MB/s", "ratio min/med/max");
  for (int k = 0; k < o->nwriters; k++)
    printf("%-6d %12.1f %12.1f %18.1f %10.3f/%.3f/%.3f\n", sums[k].ranks,
           sums[k].images / 1e6, sums[k].stored / 1e6, sums[k].rados / 1e6,
           sums[k].rmin, sums[k].rmed, sums[k].rmax);
  return 0;
}

int main(int argc, char **argv) {
  opts o;
  if (parse(argc, argv, &o) < 0)
    return 2;
  if (o.conf == NULL || !o.conf[0]) {
    printf("bench_rados: needs the Ceph test cluster: run "
           "scripts/ceph-test-cluster start and set B2S_CEPH_CONF to the "
           "CEPH_CONF it prints\n");
    return 0;
  }
  if (!b2s_store_have_rados()) {
    printf("bench_rados: this build has no librados (meson -Drados)\n");
    return 0;
  }
  signal(SIGPIPE, SIG_IGN);
  printf("pool %s, %d s per run, %d rounds, %zu-byte detector images "
         "(lz4 5 shuffle)\n", o.pool, o.seconds, o.rounds, o.image);
  images im;   /* as every writer makes them: for the objects' size */
  if (images_make(&im, o.image) < 0) {
    fprintf(stderr, "bench_rados: cannot compress the images\n");
    return 1;
  }
  size_t size = (size_t)(images_mean(&im) + 0.5);
  size_t lo = im.cbytes[0], hi = im.cbytes[0];
  for (int k = 1; k < NIMAGES; k++) {
    lo = im.cbytes[k] < lo ? im.cbytes[k] : lo;
    hi = im.cbytes[k] > hi ? im.cbytes[k] : hi;
  }
  printf("objects of %zu bytes on average (%zu .. %zu)\n", size, lo, hi);
  images_free(&im);
  int rc = o.daemons ? main_ranks(&o, size) : main_writers(&o, size);
  procs_kill();
  return rc;
}

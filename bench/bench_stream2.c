/* DECTRIS Stream V2 ingest throughput.
 *
 * Single-channel 16-bit photon-counting images (bench_counting_image),
 * bslz4-framed by the project's encoder and wrapped in Stream V2 messages
 * (tests/support/b2s_s2enc.c), are pushed as fast as ZeroMQ takes them.  Four
 * sides, alternating round by round:
 *   raw      - the same messages over a bare PUSH/PULL pair, sockets set as
 *              on the daemon side (PUSH bound, SNDHWM 1000; PULL connected,
 *              RCVHWM 64, in a context of its own), a receiving thread that
 *              only counts them: the transport's ceiling.  It never touches
 *              the payload, which any receiver must;
 *   raw+wr   - the same, the receiver appending every message to a file in
 *              the same directory with write(2) (page cache, no fsync): a
 *              ceiling for receiving and storing;
 *   ingest   - the real daemon's source, images stored by rewriting the
 *              framing (bitshuffle's default 8192-byte blocks);
 *   recomp   - the same daemon and messages with 16384-byte blocks, which
 *              the frames' 8192-byte b2nd blocks do not match: every image
 *              is decoded and compressed again (the fallback path).
 * A round of the daemon sides ends when the frame holds every image; the
 * daemon's CPU is counted until it is idle again (the series' close
 * included), and the next round starts only then.
 * Printed: images/s min/median/max per side, the ratios, and CPU seconds
 * per GB of pixels (the daemon's for ingest and recomp, this process's for
 * raw and raw+wr, and this process's during ingest rounds: the sender).
 *
 * usage: bench_stream2 [--rounds R] [--small N] [--large N] [--daemon PATH]
 *                      [--dir DIR] [--verify true|false]
 *                      [--only raw|rawwrite|ingest|recomp] [--queue-depth N]
 *                      [--io direct|buffered] [--compression bslz4|lz4]
 *                      [--pin]
 * --compression lz4: HDF5 LZ4-framed images (one block each) into a source
 * set for them; the recompress side sends 8 KiB LZ4 blocks instead.
 * --pin: the sender, the receiving side (the daemon's I/O thread, or the
 * raw sink), the daemon's workers and its writers on CPU sets of their own
 * (bench_pin.h), the workers as many as the CPUs left; with too few CPUs
 * it says so and runs unpinned.  Either way the "with a core per thread"
 * line is the projection from the unpinned thread times. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_h5lz4.h"
#include "bench_images.h"
#include "bench_pin.h"
#include "bench_proc.h"
#include "b2s_frame.h"
#include "b2s_s2enc.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* utime + stime of a process (pid > 0: in clock ticks, so rounds should
 * last many ticks) or of this one (to the ns), seconds. */
static double cpu_s(pid_t pid) {
  if (pid <= 0) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
  }
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
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
static bool lz4_images;   /* --compression lz4: HDF5 LZ4 framing, else bslz4 */

static void make_msgs(msgs *m, uint64_t ny, uint64_t nx, int n, uint32_t block) {
  m->n = n;
  m->ny = ny;
  m->nx = nx;
  m->nbytes = ny * nx * 2;
  m->b = calloc((size_t)n, sizeof *m->b);
  m->len = calloc((size_t)n, sizeof *m->len);
  uint16_t *px = malloc(m->nbytes);
  b2s_h5_params p = {.kind = lz4_images ? B2S_H5_LZ4 : B2S_H5_BSLZ4,
                     .elem_size = 2, .typesize = 2, .clevel = 5};
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
    b2s_s2e_part part = {"threshold_1", 2, ny, nx, lz4_images ? "lz4" : "bslz4",
                         fr[k], (size_t)fl[k], 0};
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

/* The raw receiver: a thread counting the messages off a PULL socket of
 * its own ZeroMQ context (its own I/O thread, as the daemon has), and for
 * "raw + write" appending each one to a file with write(2). */
typedef struct sink {
  void *pull;
  int want, fd;
  atomic_bool done, sampled;
} sink;

/* --pin and a plan that fits: the CPU sets (bench_pin.h). */
static bench_pin pin;
static bool pinned;

static void *sink_main(void *arg) {
  sink *k = arg;
  pthread_setname_np(pthread_self(), "raw-sink");
  if (pinned)
    bench_pin_self(&pin.io);     /* where the daemon's I/O thread runs */
  zmq_msg_t msg;
  zmq_msg_init(&msg);
  for (int i = 0; i < k->want; i++) {
    if (zmq_msg_recv(&msg, k->pull, 0) < 0)
      break;
    if (k->fd >= 0 && write(k->fd, zmq_msg_data(&msg), zmq_msg_size(&msg)) < 0)
      perror("raw + write");
  }
  atomic_store(&k->done, true);
  /* alive until the round has sampled this thread's CPU */
  while (!atomic_load(&k->sampled))
    usleep(100);
  zmq_msg_close(&msg);
  return NULL;
}

enum { RAW, RAWW, INGEST, RECOMP, SENDER, NSIDES };

/* The busiest thread's name, per side, of the last round; the daemon's
 * alone (its workers apart) in ingest rounds, and how many workers ran. */
static char busy_comm[NSIDES][16], daemon_comm[16];
static int nworkers;

/* The sockets as the daemon side has them: PUSH bound with SNDHWM 1000,
 * PULL connected with RCVHWM 64 (daemon/sources/source_s2.c).  busy: the most
 * CPU one thread of this process spent, us per image. */
static void round_raw(const msgs *m, const char *dir, bool to_file, double *ips,
                      double *cpu_gb, double *busy) {
  char ep[512], path[512];
  snprintf(ep, sizeof ep, "ipc://%s/raw.sock", dir);
  snprintf(path, sizeof path, "%s/raw.out", dir);
  void *sctx = zmq_ctx_new(), *rctx = zmq_ctx_new();
  void *push = zmq_socket(sctx, ZMQ_PUSH);
  /* the receiving context's I/O thread, started by its first socket,
   * inherits this thread's CPUs: the daemon's I/O set when pinned */
  if (pinned)
    bench_pin_self(&pin.io);
  void *pull = zmq_socket(rctx, ZMQ_PULL);
  if (pinned)
    bench_pin_self(&pin.sender);
  int shwm = 1000, rhwm = 64;
  zmq_setsockopt(push, ZMQ_SNDHWM, &shwm, sizeof shwm);
  zmq_setsockopt(pull, ZMQ_RCVHWM, &rhwm, sizeof rhwm);
  zmq_bind(push, ep);
  zmq_connect(pull, ep);
  sink k = {.pull = pull, .want = m->n + 2, .fd = -1};
  if (to_file)
    k.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pthread_t t;
  static bench_threads th0, th1;
  bench_threads_sample(0, &th0);
  double c0 = cpu_s(0), t0 = now_s();
  pthread_create(&t, NULL, sink_main, &k);
  send_series(push, m, 1 << 20);
  /* the sink's CPU before it ends (a joined thread leaves /proc) */
  while (!atomic_load(&k.done))
    usleep(200);
  bench_threads_sample(0, &th1);
  atomic_store(&k.sampled, true);
  pthread_join(t, NULL);
  double dt = now_s() - t0, dc = cpu_s(0) - c0;
  *busy = bench_threads_busiest(&th0, &th1, NULL, busy_comm[to_file]) * 1e6 / m->n;
  *ips = m->n / dt;
  *cpu_gb = dc / ((double)m->nbytes * m->n / 1e9);
  if (k.fd >= 0) {
    close(k.fd);
    unlink(path);
  }
  zmq_close(push);
  zmq_close(pull);
  zmq_ctx_term(sctx);
  zmq_ctx_term(rctx);
}

static int64_t frame_chunks(const char *path) {
  b2s_frame *f = NULL;
  if (b2s_frame_open(path, &f, NULL) < 0)
    return -1;
  int64_t n = b2s_frame_nchunks(f);
  b2s_frame_free(f);
  return n;
}

/* Wait until the daemon used under a clock tick in 50 ms (at most 10 s). */
static void settle(pid_t pid) {
  double c = cpu_s(pid);
  for (int i = 0; i < 200; i++) {
    usleep(50000);
    double d = cpu_s(pid);
    if (d - c < 0.5 / (double)sysconf(_SC_CLK_TCK))
      return;
    c = d;
  }
}

/* The watcher of a daemon round, a thread of its own so that the sending
 * thread only sends: waits until the frame holds every image, sampling
 * the daemon's threads every 20 ms (the series' writer ends with it). */
typedef struct watch {
  const char *path;
  int64_t n;
  pid_t pid;
  bench_threads d1, now;
} watch;

static void *watch_main(void *arg) {
  watch *w = arg;
  pthread_setname_np(pthread_self(), "bench-watch");
  for (int i = 0; frame_chunks(w->path) < w->n; i++) {
    if (i % 10 == 0) {
      if (pinned)
        bench_pin_daemon(&pin, w->pid);   /* this series' writer too */
      bench_threads_sample(w->pid, &w->now);
      bench_threads_merge(&w->d1, &w->now);
    }
    usleep(2000);
  }
  bench_threads_sample(w->pid, &w->now);
  bench_threads_merge(&w->d1, &w->now);
  return NULL;
}

/* The daemon's I/O thread (its socket loop), CPU us per image, of the
 * last daemon round. */
static double last_loop_us;

/* sender_gb: this process's CPU meanwhile (the PUSH side, and the
 * watcher).  busy: the most CPU one thread of the daemon (but its workers)
 * or of the sender spent, work: the workers' together, us per image, up
 * to the last image stored. */
static void round_daemon(void *push, pid_t pid, const msgs *m, const char *dir,
                         uint64_t sid, double *ips, double *cpu_gb,
                         double *sender_gb, double *busy, double *work,
                         double *dbusy, int side) {
  char path[600];
  snprintf(path, sizeof path, "%s/data/bench-%llu-threshold_1.b2frame", dir,
           (unsigned long long)sid);
  static watch w;
  static bench_threads d0, s0t, s1;
  w = (watch){.path = path, .n = m->n, .pid = pid};
  bench_threads_sample(pid, &d0);
  w.d1 = d0;
  bench_threads_sample(0, &s0t);
  double c0 = cpu_s(pid), s0 = cpu_s(0), t0 = now_s();
  pthread_t t;
  pthread_create(&t, NULL, watch_main, &w);
  send_series(push, m, sid);
  bench_threads_sample(0, &s1);           /* the sender, done */
  pthread_join(t, NULL);
  double dt = now_s() - t0;
  char cd[16], cs[16];
  double bd = bench_threads_busiest(&d0, &w.d1, "b2s-work-", cd);
  double bs = bench_threads_busiest(&s0t, &s1, "bench-watch", cs);
  *busy = (bd > bs ? bd : bs) * 1e6 / m->n;
  *dbusy = bd * 1e6 / m->n;
  *work = bench_threads_sum(&d0, &w.d1, "b2s-work-") * 1e6 / m->n;
  last_loop_us = bench_threads_sum(&d0, &w.d1, "b2streamd") * 1e6 / m->n;
  memcpy(busy_comm[side], bd > bs ? cd : cs, sizeof cd);
  if (side == INGEST) {
    memcpy(daemon_comm, cd, sizeof cd);
    nworkers = bench_threads_count(&w.d1, "b2s-work-");
  }
  *sender_gb = (cpu_s(0) - s0) / ((double)m->nbytes * m->n / 1e9);
  /* The series' close (commit, compaction, fsync) happens after; its CPU
   * is counted here, and the next round starts once the daemon is idle
   * rather than sharing the cores with it. */
  settle(pid);
  double dc = cpu_s(pid) - c0;
  *ips = m->n / dt;
  *cpu_gb = dc / ((double)m->nbytes * m->n / 1e9);
  /* the series is closed: its frames go, or rounds fill the disk */
  char data[600], prefix[64];
  snprintf(data, sizeof data, "%s/data", dir);
  snprintf(prefix, sizeof prefix, "bench-%llu-", (unsigned long long)sid);
  bench_rm_prefix(data, prefix);
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

/* --only SIDE (raw, rawwrite, ingest, recomp): that side alone, e.g. to
 * profile it. */
static const char *only;

static bool side_on(const char *name) { return !only || !strcmp(only, name); }

static double median(const double *v, int n) {
  double a[MAXR];
  memcpy(a, v, (size_t)n * sizeof *a);
  qsort(a, (size_t)n, sizeof *a, cmp);
  return a[n / 2];
}

static void run_size(void *push, pid_t pid, const char *dir, uint64_t ny,
                     uint64_t nx, int n, int rounds, uint64_t *sid) {
  msgs fast, slow;
  make_msgs(&fast, ny, nx, n, 0);
  /* a block other than the frame's: the recompress path */
  make_msgs(&slow, ny, nx, n, lz4_images ? 8192 : 16384);
  double ips[NSIDES][MAXR], cpu[NSIDES][MAXR], busy[NSIDES][MAXR], unused;
  double work[NSIDES][MAXR], dbusy[MAXR], loop_us[MAXR];
  memset(ips, 0, sizeof ips);
  memset(cpu, 0, sizeof cpu);
  memset(busy, 0, sizeof busy);
  memset(work, 0, sizeof work);
  memset(dbusy, 0, sizeof dbusy);
  for (int r = 0; r < rounds; r++) {     /* alternating sides */
    if (side_on("raw"))
      round_raw(&fast, dir, false, &ips[RAW][r], &cpu[RAW][r], &busy[RAW][r]);
    if (side_on("rawwrite"))
      round_raw(&fast, dir, true, &ips[RAWW][r], &cpu[RAWW][r],
                &busy[RAWW][r]);
    if (side_on("ingest"))
      round_daemon(push, pid, &fast, dir, (*sid)++, &ips[INGEST][r],
                   &cpu[INGEST][r], &cpu[SENDER][r], &busy[INGEST][r], &work[INGEST][r],
                   &dbusy[r], INGEST);
    loop_us[r] = last_loop_us;
    if (side_on("recomp"))
      round_daemon(push, pid, &slow, dir, (*sid)++, &ips[RECOMP][r],
                   &cpu[RECOMP][r], &unused, &busy[RECOMP][r],
                   &work[RECOMP][r], &unused, RECOMP);
  }
  size_t comp = 0;
  for (int i = 0; i < n; i++)
    comp += fast.len[i];
  printf("%llux%llu uint16, %d images/round (%.1f MB pixels, %.1f MB "
         "messages), %d rounds\n", (unsigned long long)ny,
         (unsigned long long)nx, n, (double)fast.nbytes * n / 1e6,
         (double)comp / 1e6, rounds);
  double mi[NSIDES], mc[NSIDES];
  for (int k = 0; k < NSIDES; k++) {
    mi[k] = median(ips[k], rounds);
    mc[k] = median(cpu[k], rounds);
  }
  printf("  images/s    min        median     max\n");
  summary("raw", ips[RAW], rounds, "");
  summary("raw+wr", ips[RAWW], rounds, "(raw, each message written to a file)");
  summary("ingest", ips[INGEST], rounds, "");
  summary("recomp", ips[RECOMP], rounds, "");
  printf("  CPU s per GB of pixels (min median max)\n");
  summary("raw", cpu[RAW], rounds, "(this process: push + pull)");
  summary("raw+wr", cpu[RAWW], rounds, "(this process: push + pull + write)");
  summary("ingest", cpu[INGEST], rounds, "(daemon, with the series' close)");
  summary("recomp", cpu[RECOMP], rounds, "(daemon, with the series' close)");
  summary("sender", cpu[SENDER], rounds, "(this process in ingest rounds: push)");
  double mb[NSIDES], mw[NSIDES];
  for (int k = 0; k < NSIDES; k++) {
    mb[k] = median(busy[k], rounds);
    mw[k] = median(work[k], rounds);
  }
  printf("  busiest thread (the daemon's workers apart), CPU us per image "
         "(min median max)\n");
  static const char *const sides[] = {"raw", "raw+wr", "ingest", "recomp"};
  for (int k = RAW; k <= RECOMP; k++) {
    char what[64];
    snprintf(what, sizeof what, "(%s: %s)", k < INGEST ? "this process" :
             "daemon or sender", busy_comm[k]);
    summary(sides[k], busy[k], rounds, what);
  }
  printf("  ratios (medians): ingest/raw images/s %.2f; ingest/(raw+write) "
         "images/s %.2f;\n    ingest/recomp CPU per GB %.2f; ingest/recomp "
         "images/s %.2f\n", mi[INGEST] / mi[RAW], mi[INGEST] / mi[RAWW],
         mc[INGEST] / mc[RECOMP], mi[INGEST] / mi[RECOMP]);
  char what[64];
  snprintf(what, sizeof what, "(ingest: the daemon's alone, %s)",
           daemon_comm);
  summary("daemon", dbusy, rounds, what);
  summary("workers", work[INGEST], rounds, "(ingest: the daemon's workers "
          "together)");
  if (side_on("ingest"))
    summary("loop", loop_us, rounds, "(ingest: the daemon's I/O thread, "
            "b2streamd)");
  /* With a core for each thread (the detector on its own host), the
   * busiest thread sets the rate, and the workers share theirs: the
   * workers for 0.9 of raw, if its other threads allow it. */
  double room = mb[RAW] / 0.9;
  if (mb[RAW] > 0 && mb[INGEST] > 0 && nworkers > 0)  /* both sides ran */
    printf("    with a core per thread: ingest/raw images/s %.2f with %d "
           "workers; 0.9 %s with %.0f workers\n",
           mb[RAW] / fmax(mb[INGEST], mw[INGEST] / nworkers), nworkers,
           mb[INGEST] <= room ? "reached" : "not reached (other threads)",
           ceil(mw[INGEST] / room));
  if (pinned)
    printf("    pinned, measured (beside the projection above): ingest/raw "
           "images/s %.2f, ingest/(raw+write) %.2f\n", mi[INGEST] / mi[RAW],
           mi[INGEST] / mi[RAWW]);
  printf("\n");
}

/* What --pin did: the sets, or why it could not pin. */
static void pin_report(bool want, const char *why, pid_t pid) {
  if (pinned) {
    char d[512];
    bench_pin_daemon(&pin, pid);
    bench_pin_describe(&pin, d, sizeof d);
    printf("pinned: %s\n", d);
  } else if (want) {
    printf("--pin: cannot pin: %s; the figures are unpinned, and the line "
           "\"with a core per thread\" is the projection\n", why);
  }
}

int main(int argc, char **argv) {
  int rounds = 5, nsmall = 400, nlarge = 12;
  const char *daemon = NULL, *dir = NULL, *verify = "true";
  int qdepth = 64;
  const char *io = "direct";
  bool want_pin = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--pin")) {   /* a flag, without a value */
      want_pin = true;
      continue;
    }
    if (i + 1 >= argc)
      break;
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--small")) nsmall = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--large")) nlarge = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--daemon")) daemon = argv[i + 1];
    else if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!strcmp(argv[i], "--verify")) verify = argv[i + 1];
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    else if (!strcmp(argv[i], "--queue-depth")) qdepth = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--io")) io = argv[i + 1];
    else if (!strcmp(argv[i], "--compression"))
      lz4_images = !strcmp(argv[i + 1], "lz4");
    i++;
  }
  char pin_why[160] = "";
  pinned = want_pin && bench_pin_plan(&pin, pin_why, sizeof pin_why);
  if (rounds < 1 || rounds > MAXR)
    rounds = 5;
  char buf[4096], tmp[256];
  if (!daemon)
    daemon = bench_exe_locate(B2S_BENCH_DAEMON, "daemon/b2streamd", buf, sizeof buf);
  bool own_dir = !dir;         /* made here, so removed at the end */
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
  if (pinned)                  /* a worker per CPU of the workers' set */
    fprintf(f, "workers: %d\n", pin.nworkers);
  fprintf(f, "listen: [ipc://d.sock]\nrun_dir: run\ndata_dir: data\n"
             "max_buffer: 64MiB\nmemory_limit: 1GiB\nmax_streams: 1000\n"
             "templates:\n  eiger: {queue_depth: %d, io: %s}\n"
             "sources:\n  - kind: dectris-stream2\n"
             "    endpoint: 'ipc://%s/det.sock'\n    template: eiger\n"
             "    name: 'bench-{series_id}-{channel}'\n    verify: %s\n"
             "    compression: %s\n", qdepth, io, dir, verify,
          lz4_images ? "lz4" : "bslz4");
  fclose(f);
  if (pinned)                  /* this process, its ZeroMQ thread and the
                                  daemon it starts (its threads move) */
    bench_pin_self(&pin.sender);
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
  printf("bench_stream2: Stream V2 %s images, 1 channel, verify %s, daemon "
         "%s, dir %s\n", lz4_images ? "lz4" : "bslz4", verify, daemon, dir);
  pin_report(want_pin, pin_why, pid);
  printf("\n");
  uint64_t sid = 100;
  if (nsmall > 0)
    run_size(push, pid, dir, 514, 1030, nsmall, rounds, &sid);
  if (nlarge > 0)
    run_size(push, pid, dir, 4362, 4148, nlarge, rounds, &sid);
  zmq_close(push);
  bench_stop(pid, 20000);
  zmq_ctx_term(ctx);
  if (own_dir)
    bench_rmtree(dir);
  return 0;
}

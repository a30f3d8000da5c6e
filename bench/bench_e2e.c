/* End-to-end benchmark of the service: producer -> b2streamd -> frame.
 *
 * One run starts the real daemon on a temporary directory and prints, next
 * to baselines measured in the same run on the same data:
 *   compress   - in-process: N threads, one b2s_ctx each, b2s_compress with
 *                the cparams the daemon's stream uses (read from the same
 *                configuration file through the config library), then the
 *                XXH64 of each chunk, as the workers take it for its
 *                record; the CPU of the two parts is told apart;
 *   raw zmq    - DEALER -> ROUTER over ipc:// (and tcp loopback), same
 *                message size, a credit window like the daemon's: the
 *                transport alone;
 *   disk       - sequential 4 MiB O_DIRECT appends in DIR with an
 *                fdatasync every 256 MiB, at least 2 GiB and 3 s (the
 *                sustained rate, past any cache); times the compression
 *                ratio, the input rate the disk can take;
 *   ceiling    - per round, min(in-process compress, disk x ratio): what
 *                the machine can take; e2e zmq and shm are held to it;
 *   e2e zmq    - b2sc_send_zc through the daemon, timed until every buffer
 *                is acknowledged at level written (CLOSED of the handle);
 *                with --zmq-copy b2sc_send, which copies each buffer;
 *   e2e shm    - b2sc_shm_acquire / fill / b2sc_shm_submit, same end point;
 *   records    - with --records, e2e zmq and e2e shm again right after
 *                each, every buffer with a record (frame number,
 *                timestamp, a small user map; protocol version 2),
 *                against the same transport without: the cost of records;
 *   followers  - e2e zmq again while F consumers (notify mode, each on its
 *                own thread and session) follow the stream, against e2e
 *                zmq without them in the same round: consumers must not
 *                slow the writer;
 *   latency    - a consumer thread following a stream with group_count 1
 *                (no fsync) timestamps each chunk b2sc_next returns; the
 *                producer sends one small buffer every interval.
 * Figures are printed with their ratio to the baseline and the target;
 * nothing here asserts on time.  Each throughput run also prints the CPU
 * seconds per GB of input spent by each kind of daemon thread (I/O loop,
 * ZeroMQ I/O, workers, writer), which says where the time went.
 *
 * Data: 16-bit detector-like images (smooth background, shot noise, a few
 * peaks), typesize 2; --data counting gives photon-counting frames instead
 * (mostly zeros, a diffuse ring, Bragg spots), which compress about 10x
 * and so take the disk out of the way on most machines.  Defaults: 4 MiB
 * buffers, about 1 GiB per run, a warm-up then 4 rounds (median figures,
 * min/median/max of per-round ratios), lz4 clevel 5 shuffle, window
 * (queue_depth) 16, group_count 64, one worker per CPU, 8 followers; latency: 2500 buffers of 64 KiB, one
 * every 2 ms.  Each round runs all phases, forward on even rounds and
 * backward on odd ones, so no figure always runs before its baseline or
 * always meets the page cache another one filled.
 *
 *   bench_e2e [--workers N] [--size BYTES[,BYTES...]] [--count N] [--repeat N]
 *             [--codec lz4|lz4hc|zstd|zlib] [--clevel N]
 *             [--filter shuffle|bitshuffle|none] [--data detector|counting]
 *             [--window N] [--group N]
 *             [--lat-count N] [--lat-size BYTES] [--lat-interval-us N]
 *             [--followers N] [--shm-copy] [--records] [--zmq-copy]
 *             [--phases compress,raw,disk,zmq,shm,follow,lat]
 *             [--daemon PATH] [--dir DIR] [--keep] */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "b2s_chunk.h"
#include "b2s_config.h"
#include "b2s_meta.h"
#include "b2s_names.h"
#include "b2stream_client.h"
#include "bench_images.h"
#include "bench_proc.h"

#define NFRAMES 8                 /* distinct images cycled through */
#define MAX_SIZES 4
#define MAX_ROWS 64
#define MAX_REPEAT 32             /* rounds per buffer size */
#define DEFAULT_RUN_BYTES ((size_t)1 << 30)
#define WAIT_MS 60000             /* guards against a hang only */
#define FILL_SLOTS 4096           /* B2S_SHM_MAX_SLOTS */

/* ---- options -------------------------------------------------------------- */

typedef struct opts {
  int workers;
  size_t sizes[MAX_SIZES];
  int nsizes;
  long count;                     /* 0: about DEFAULT_RUN_BYTES per run */
  int repeat;                     /* rounds per figure (made even) */
  const char *codec;
  int clevel;
  const char *filter;
  const char *data;               /* "detector" or "counting" images */
  int window;                     /* credits: queue_depth, raw zmq window */
  int group;                      /* group_count of the throughput streams */
  int lat_count;
  size_t lat_size;
  int lat_interval_us;
  int followers;                  /* consumers of the follow phase */
  bool shm_copy;                  /* copy every buffer into its slot */
  bool records;                   /* also e2e with a record per buffer */
  bool zmq_copy;                  /* e2e zmq with b2sc_send (a copy) */
  const char *phases;
  const char *daemon;
  const char *dir;
  bool keep;
} opts;

/* Shared memory slots a producer attaches: the window plus what the workers
 * and the hand-offs hold. */
static long shm_slots(const opts *o) {
  return (long)o->window + o->workers + 2;
}

static bool phase_on(const opts *o, const char *name) {
  size_t n = strlen(name);
  for (const char *p = o->phases; (p = strstr(p, name)) != NULL; p += n)
    if ((p == o->phases || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
      return true;
  return false;
}

/* ---- small helpers -------------------------------------------------------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t t) {
  struct timespec ts = {.tv_sec = (time_t)(t / 1000000000u),
                        .tv_nsec = (long)(t % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

static double gbps(size_t bytes, uint64_t ns) {
  return ns ? (double)bytes / (double)ns : 0.0;
}

/* "4M", "256k", "65536", "512MiB" -> bytes (b2s_names.h); 0 when
 * malformed, 0, or 1 GiB and more. */
static size_t parse_size(const char *s) {
  int64_t v;
  if (b2s_size_parse(s, &v) < 0 || v == 0 || v > INT32_MAX / 2)
    return 0;
  return (size_t)v;
}

static void size_name(size_t n, char *buf, size_t cap) {
  if (n % (1u << 20) == 0)
    snprintf(buf, cap, "%zu MiB", n >> 20);
  else if (n % (1u << 10) == 0)
    snprintf(buf, cap, "%zu KiB", n >> 10);
  else
    snprintf(buf, cap, "%zu B", n);
}

/* ---- results table ---------------------------------------------------------- */

typedef struct row {
  char figure[80];
  double value;
  char unit[8];
  char base[40];            /* baseline name; "" when none */
  double base_value;
  double rmin, rmed, rmax;  /* per-round ratios to the baseline */
  char target[16];          /* e.g. ">= 0.80", "<= 1000"; "" when none */
  double limit;
  int cmp;                  /* +1: ratio >= limit, -1: value <= limit,
                               -2: ratio <= limit */
} row;

static row rows[MAX_ROWS];
static int nrows;

static row *row_add(const char *figure, double value, const char *unit) {
  if (nrows == MAX_ROWS)
    return NULL;
  row *r = &rows[nrows++];
  memset(r, 0, sizeof *r);
  snprintf(r->figure, sizeof r->figure, "%s", figure);
  snprintf(r->unit, sizeof r->unit, "%s", unit);
  r->value = value;
  return r;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of v[0..n) (mean of the middle two when n is even); 0 when n is 0. */
static double median(double *v, int n) {
  if (n == 0)
    return 0;
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The figure measured in round i (0 when it was not) against its baseline
 * in the same round: the ratio is taken per round, so a load swing between
 * rounds moves both sides of it. */
static void row_base(row *r, const char *base, const double *val,
                     const double *bval, int rounds) {
  if (r == NULL)
    return;
  double q[MAX_REPEAT], b[MAX_REPEAT];
  int n = 0, nb = 0;
  for (int i = 0; i < rounds; i++) {
    if (bval[i] > 0)
      b[nb++] = bval[i];
    if (val[i] > 0 && bval[i] > 0)
      q[n++] = val[i] / bval[i];
  }
  if (n == 0)
    return;
  snprintf(r->base, sizeof r->base, "%s", base);
  r->base_value = median(b, nb);
  r->rmed = median(q, n);
  r->rmin = q[0];
  r->rmax = q[n - 1];
}

static void row_target(row *r, int cmp, double limit) {
  if (r == NULL)
    return;
  r->cmp = cmp;
  r->limit = limit;
  snprintf(r->target, sizeof r->target,
           cmp > 0 ? "ratio>=%.2f" : cmp == -2 ? "ratio<=%.2f" : "<=%.0f",
           limit);
}

static void table_print(void) {
  printf("\n%-38s %10s %-5s  %-36s %10s %21s  %-11s %s\n", "figure", "value",
         "unit", "baseline", "base", "ratio min/med/max", "target", "met?");
  for (int i = 0; i < nrows; i++) {
    const row *r = &rows[i];
    char base[16] = "", ratio[32] = "", met[8] = "";
    double q = r->rmed;
    if (r->base[0]) {
      snprintf(base, sizeof base, "%.3f", r->base_value);
      snprintf(ratio, sizeof ratio, "%.3f/%.3f/%.3f", r->rmin, r->rmed, r->rmax);
    }
    if (r->cmp > 0)
      snprintf(met, sizeof met, "%s", q >= r->limit ? "yes" : "NO");
    else if (r->cmp == -2)
      snprintf(met, sizeof met, "%s", q <= r->limit ? "yes" : "NO");
    else if (r->cmp < 0)
      snprintf(met, sizeof met, "%s", r->value <= r->limit ? "yes" : "NO");
    printf("%-38s %10.3f %-5s  %-36s %10s %21s  %-11s %s\n", r->figure,
           r->value, r->unit, r->base, base, ratio, r->target, met);
  }
}

/* ---- data ----------------------------------------------------------------- */

typedef struct dataset {
  size_t size;
  uint8_t *buf[NFRAMES];
} dataset;

static int dataset_make(dataset *d, size_t size, const char *kind) {
  bool counting = strcmp(kind, "counting") == 0;
  memset(d, 0, sizeof *d);
  d->size = size;
  for (int k = 0; k < NFRAMES; k++) {
    /* whole pixels; an odd trailing byte stays as padding */
    if ((d->buf[k] = calloc(1, size + 1)) == NULL)
      return -ENOMEM;
    if (counting)
      bench_counting_image((uint16_t *)(void *)d->buf[k], size / 2, k);
    else
      bench_detector_image((uint16_t *)(void *)d->buf[k], size / 2, k);
  }
  return 0;
}

static void dataset_free(dataset *d) {
  for (int k = 0; k < NFRAMES; k++)
    free(d->buf[k]);
}

/* ---- CPU time per thread kind ------------------------------------------------------ */

/* Where a run's CPU time went, by thread name: the daemon's I/O loop (main
 * thread), ZeroMQ I/O threads, workers, stream writers; in this process the
 * producer and the client's ZeroMQ thread.  Seconds, from schedstat. */
enum { CPU_MAIN, CPU_ZMQ, CPU_WORK, CPU_WRITER, CPU_OTHER, CPU_KINDS };

static int cpu_kind(const char *comm) {
  if (strncmp(comm, "ZMQbg/", 6) == 0)
    return CPU_ZMQ;
  if (strncmp(comm, "b2s-work-", 9) == 0)
    return CPU_WORK;
  if (strncmp(comm, "b2s-w-", 6) == 0 || strncmp(comm, "b2s-c-", 6) == 0)
    return CPU_WRITER;         /* a stream's writer and its cache helper */
  if (strcmp(comm, "b2streamd") == 0 || strcmp(comm, "bench_e2e") == 0)
    return CPU_MAIN;
  return CPU_OTHER;
}

static void cpu_sample(pid_t pid, double out[CPU_KINDS], double flt[CPU_KINDS]) {
  memset(out, 0, CPU_KINDS * sizeof *out);
  memset(flt, 0, CPU_KINDS * sizeof *flt);
  static bench_threads t;
  bench_threads_sample(pid, &t);
  for (int i = 0; i < t.n; i++) {
    int k = cpu_kind(t.comm[i]);
    out[k] += t.cpu[i];
    flt[k] += t.minflt[i];
  }
}

typedef struct cpu_use {
  double daemon[CPU_KINDS], self[CPU_KINDS];
  double daemon_flt[CPU_KINDS], self_flt[CPU_KINDS];
} cpu_use;

static void cpu_use_begin(cpu_use *c, pid_t daemon) {
  cpu_sample(daemon, c->daemon, c->daemon_flt);
  cpu_sample(getpid(), c->self, c->self_flt);
}

/* Print CPU seconds per GB of input since cpu_use_begin; returns the
 * workers' (0 without a daemon).  *busy (may be NULL) gets the share of
 * the machine's CPUs that the daemon and this process kept busy. */
static double cpu_use_print(const char *label, const cpu_use *c0, pid_t daemon,
                            size_t bytes, uint64_t ns, double *busy) {
  cpu_use c;
  cpu_use_begin(&c, daemon);
  double gb = (double)bytes / 1e9, d[CPU_KINDS], s[CPU_KINDS], all = 0;
  for (int k = 0; k < CPU_KINDS; k++) {
    d[k] = (c.daemon[k] - c0->daemon[k]) / gb;
    s[k] = (c.self[k] - c0->self[k]) / gb;
    all += (d[k] + s[k]) * gb;
  }
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (busy)
    *busy = ncpu > 0 ? all / ((double)ns * 1e-9 * (double)ncpu) : 0;
  if (daemon > 0)
    printf("  %s: %.3f GB/s; CPU s per GB of input: daemon I/O loop %.3f, "
           "zmq I/O %.3f, workers %.3f (%.0f minor faults), writer %.3f; "
           "bench %.3f, its zmq I/O %.3f (%.0f minor faults)\n",
           label, gb / ((double)ns * 1e-9), d[CPU_MAIN], d[CPU_ZMQ],
           d[CPU_WORK], c.daemon_flt[CPU_WORK] - c0->daemon_flt[CPU_WORK],
           d[CPU_WRITER], s[CPU_MAIN], s[CPU_ZMQ],
           c.self_flt[CPU_MAIN] + c.self_flt[CPU_ZMQ] -
               c0->self_flt[CPU_MAIN] - c0->self_flt[CPU_ZMQ]);
  else
    printf("  %s: %.3f GB/s; CPU s per GB: bench threads %.3f, zmq I/O "
           "%.3f\n", label, gb / ((double)ns * 1e-9), s[CPU_MAIN], s[CPU_ZMQ]);
  fflush(stdout);
  return daemon > 0 ? d[CPU_WORK] : 0;
}

/* ---- baseline A: in-process compression --------------------------------------- */

typedef struct comp_arg {
  const dataset *d;
  uint8_t *const *in;             /* the inputs cycled through */
  long nin;
  const b2s_cparams *cp;
  long first, step, count;
  pthread_barrier_t *start;
  size_t cbytes;
  double cpu;                     /* thread CPU seconds of the timed part */
  double cpu_hash;                /* of which the checksums */
  uint64_t hashes;                /* keeps the checksums used */
  int rc;
} comp_arg;

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *comp_main(void *arg) {
  comp_arg *a = arg;
  b2s_ctx *ctx = b2s_ctx_new();
  int32_t cap = (int32_t)a->d->size + B2S_MAX_OVERHEAD;
  uint8_t *dst = malloc((size_t)cap);
  if (ctx == NULL || dst == NULL)
    a->rc = B2S_E_NOMEM;
  else   /* warm the codec state and scratch before the clock starts */
    a->rc = b2s_compress(ctx, a->cp, a->d->buf[0], (int32_t)a->d->size, dst,
                         cap) < 0 ? B2S_E_COMPRESS : 0;
  pthread_barrier_wait(a->start);
  double c0 = thread_cpu_s();
  for (long i = a->first; a->rc == 0 && i < a->count; i += a->step) {
    int n = b2s_compress(ctx, a->cp, a->in[i % a->nin],
                         (int32_t)a->d->size, dst, cap);
    if (n < 0) {
      a->rc = n;
      break;
    }
    /* the record's checksum, as the daemon's workers take it: right
     * after compressing, from this core's cache */
    double h0 = thread_cpu_s();
    a->hashes ^= b2s_chunk_xxh64(dst, (size_t)n);
    a->cpu_hash += thread_cpu_s() - h0;
    a->cbytes += (size_t)n;
  }
  a->cpu = thread_cpu_s() - c0;
  pthread_barrier_wait(a->start);
  free(dst);
  b2s_ctx_free(ctx);
  return NULL;
}

/* The inputs of the in-process baseline: nin buffers, copies of the
 * dataset's images, so that its inputs take as much memory as the shared
 * memory slots the daemon's workers read (a detector writes every image
 * anew: neither side finds its input in the cache because the same few
 * images came by a moment ago).  NULL when out of memory. */
static uint8_t **inputs_make(const dataset *d, long nin) {
  uint8_t **in = calloc((size_t)nin, sizeof *in);
  for (long k = 0; in && k < nin; k++) {
    if ((in[k] = malloc(d->size)) == NULL) {
      while (k-- > 0)
        free(in[k]);
      free(in);
      return NULL;
    }
    memcpy(in[k], d->buf[k % NFRAMES], d->size);
  }
  return in;
}

/* GB/s of input, compressing each buffer and taking the checksum of each
 * chunk (the work of the daemon's workers, whose record of each chunk
 * holds its XXH64); *ratio gets nbytes / cbytes, *cpu_gb the threads' CPU
 * seconds per GB of input (what the daemon's workers are held to),
 * *comp_gb the part of it spent compressing.  The threads cycle through
 * nin input buffers. */
static double bench_compress(const dataset *d, const b2s_cparams *cp,
                             int nthreads, long nin, long count, double *ratio,
                             double *cpu_gb, double *comp_gb) {
  pthread_t th[256];
  comp_arg a[256];
  pthread_barrier_t bar;
  uint8_t **in = inputs_make(d, nin);
  if (in == NULL) {
    fprintf(stderr, "compress: %s\n", b2s_strerror(B2S_E_NOMEM));
    return 0;
  }
  pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1);
  for (int t = 0; t < nthreads; t++) {
    a[t] = (comp_arg){.d = d, .in = in, .nin = nin, .cp = cp,
                      .first = t, .step = nthreads,
                      .count = count, .start = &bar};
    pthread_create(&th[t], NULL, comp_main, &a[t]);
  }
  pthread_barrier_wait(&bar);
  uint64_t t0 = now_ns();
  pthread_barrier_wait(&bar);
  uint64_t dt = now_ns() - t0;
  size_t cbytes = 0;
  int rc = 0;
  double cpu = 0, hash = 0;
  for (int t = 0; t < nthreads; t++) {
    pthread_join(th[t], NULL);
    cbytes += a[t].cbytes;
    cpu += a[t].cpu;
    hash += a[t].cpu_hash;
    if (a[t].rc < 0)
      rc = a[t].rc;
  }
  pthread_barrier_destroy(&bar);
  for (long k = 0; k < nin; k++)
    free(in[k]);
  free(in);
  if (rc < 0) {
    fprintf(stderr, "compress: %s\n", b2s_strerror(rc));
    return 0;
  }
  *ratio = cbytes ? (double)d->size * (double)count / (double)cbytes : 0;
  *cpu_gb = cpu / ((double)d->size * (double)count / 1e9);
  *comp_gb = (cpu - hash) / ((double)d->size * (double)count / 1e9);
  return gbps(d->size * (size_t)count, dt);
}

/* ---- baseline C: the disk ------------------------------------------------------ */

#define DISK_BLOCK ((size_t)4 << 20)
#define DISK_SYNC_EVERY ((size_t)256 << 20)
#define DISK_MIN_BYTES ((size_t)2 << 30)
#define DISK_MAX_BYTES ((size_t)16 << 30)
#define DISK_MIN_NS 3000000000ull

/* Bytes the page cache may hold dirty (vm.dirty_bytes, else vm.dirty_ratio
 * of MemAvailable, which the kernel's figure is close to); 0 unknown. */
static double dirty_limit_bytes(void) {
  long long v = 0, avail_kb = 0;
  FILE *f = fopen("/proc/sys/vm/dirty_bytes", "r");
  if (f && fscanf(f, "%lld", &v) == 1 && v > 0) {
    fclose(f);
    return (double)v;
  }
  if (f)
    fclose(f);
  long long ratio = 0;
  if ((f = fopen("/proc/sys/vm/dirty_ratio", "r")) != NULL) {
    if (fscanf(f, "%lld", &ratio) != 1)
      ratio = 0;
    fclose(f);
  }
  char line[256];
  if ((f = fopen("/proc/meminfo", "r")) != NULL) {
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %lld kB", &avail_kb) == 1)
        break;
    fclose(f);
  }
  return (double)avail_kb * 1024.0 * (double)ratio / 100.0;
}

/* The sustained rate the disk takes compressed bytes at, which bounds the
 * service at that rate times the compression ratio.  Sequential O_DIRECT
 * appends of 4 MiB to a new file in dir, as the daemon writes chunk data
 * (io: direct), with an fdatasync every 256 MiB and at the end, inside the
 * timing: O_DIRECT keeps the guest's page cache out, the syncs flush a
 * host's write cache (a VM's disk), so a short run cannot read as a
 * burst into memory.  At least 2 GiB and 3 s.  0 when the file system
 * takes no direct I/O. */
static double bench_disk(const char *dir) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/disk.bench", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
  void *buf = NULL;
  if (fd < 0 || posix_memalign(&buf, 4096, DISK_BLOCK) != 0) {
    if (fd >= 0)
      close(fd);
    return 0;
  }
  memset(buf, 0x5a, DISK_BLOCK);
  uint64_t t0 = now_ns(), dt = 0;
  size_t done = 0;
  bool ok = true;
  while (ok && done < DISK_MAX_BYTES &&
         (done < DISK_MIN_BYTES || dt < DISK_MIN_NS)) {
    ok = pwrite(fd, buf, DISK_BLOCK, (off_t)done) == (ssize_t)DISK_BLOCK;
    done += ok ? DISK_BLOCK : 0;
    if (ok && done % DISK_SYNC_EVERY == 0)
      ok = fdatasync(fd) == 0;
    dt = now_ns() - t0;
  }
  ok = ok && fdatasync(fd) == 0;
  dt = now_ns() - t0;
  close(fd);
  unlink(path);
  free(buf);
  return ok ? gbps(done, dt) : 0;
}

/* ---- baseline B: raw ZeroMQ ------------------------------------------------------ */

/* The receiving side plays the daemon's I/O thread: it reads a batch of
 * messages (identity, 40-byte header, payload), lets the payloads go, and
 * returns their credits in one message per batch. */
typedef struct raw_rx {
  void *ctx, *sock;
  long count;
  int rc;
} raw_rx;

static int raw_recv_one(void *sock, int flags) {
  zmq_msg_t m;
  int parts = 0, more;
  do {
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, sock, parts ? 0 : flags) < 0) {
      zmq_msg_close(&m);
      return parts ? -EPROTO : -zmq_errno();
    }
    more = zmq_msg_more(&m);
    zmq_msg_close(&m);
    parts++;
  } while (more);
  return parts == 3 ? 0 : -EPROTO;
}

static void *raw_rx_main(void *arg) {
  raw_rx *r = arg;
  long got = 0;
  uint8_t rid[256];
  while (got < r->count) {
    /* the identity comes first: the credit goes back to it */
    int n = zmq_recv(r->sock, rid, sizeof rid, 0);
    if (n < 0 || n > (int)sizeof rid) {
      r->rc = -EPROTO;
      return NULL;
    }
    zmq_msg_t m;
    for (int k = 0; k < 2; k++) {   /* header, payload */
      zmq_msg_init(&m);
      zmq_msg_recv(&m, r->sock, 0);
      zmq_msg_close(&m);
    }
    uint32_t credits = 1;
    while (credits < 256 && got + credits < r->count &&
           raw_recv_one(r->sock, ZMQ_DONTWAIT) == 0)
      credits++;
    got += credits;
    zmq_send(r->sock, rid, (size_t)n, ZMQ_SNDMORE);
    zmq_send(r->sock, &credits, sizeof credits, 0);
  }
  return NULL;
}

static int raw_credit_wait(void *sock, int *credits) {
  uint32_t c;
  int n = zmq_recv(sock, &c, sizeof c, 0);
  if (n != (int)sizeof c)
    return -EPROTO;
  *credits += (int)c;
  return 0;
}

/* GB/s over `endpoint` ("ipc://PATH" or "tcp://127.0.0.1:*"). */
static double bench_raw(const dataset *d, const char *endpoint, long count,
                        int window) {
  raw_rx r = {.count = count};
  r.ctx = zmq_ctx_new();
  r.sock = zmq_socket(r.ctx, ZMQ_ROUTER);
  char ep[512];
  size_t eplen = sizeof ep;
  if (zmq_bind(r.sock, endpoint) < 0 ||
      zmq_getsockopt(r.sock, ZMQ_LAST_ENDPOINT, ep, &eplen) < 0) {
    fprintf(stderr, "raw zmq: bind %s: %s\n", endpoint, zmq_strerror(errno));
    zmq_close(r.sock);
    zmq_ctx_term(r.ctx);
    return 0;
  }
  void *sctx = zmq_ctx_new();
  void *s = zmq_socket(sctx, ZMQ_DEALER);
  zmq_connect(s, ep);
  pthread_t th;
  pthread_create(&th, NULL, raw_rx_main, &r);
  uint8_t hdr[40] = {0};
  int credits = window, rc = 0;
  cpu_use cu;
  cpu_use_begin(&cu, 0);
  uint64_t t0 = now_ns();
  for (long i = 0; i < count && rc == 0; i++) {
    while (credits == 0 && rc == 0)
      rc = raw_credit_wait(s, &credits);
    zmq_msg_t m;
    zmq_msg_init_data(&m, d->buf[i % NFRAMES], d->size, NULL, NULL);
    zmq_send(s, hdr, sizeof hdr, ZMQ_SNDMORE);
    if (zmq_msg_send(&m, s, 0) < 0)
      rc = -zmq_errno();
    credits--;
  }
  while (rc == 0 && credits < window)   /* everything received */
    rc = raw_credit_wait(s, &credits);
  uint64_t dt = now_ns() - t0;
  pthread_join(th, NULL);
  if (rc == 0 && r.rc == 0)
    cpu_use_print(ep, &cu, 0, d->size * (size_t)count, dt, NULL);
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  zmq_setsockopt(r.sock, ZMQ_LINGER, &zero, sizeof zero);
  zmq_close(s);
  zmq_close(r.sock);
  zmq_ctx_term(sctx);
  zmq_ctx_term(r.ctx);
  if (rc < 0 || r.rc < 0) {
    fprintf(stderr, "raw zmq %s: %s\n", ep, strerror(rc < 0 ? -rc : -r.rc));
    return 0;
  }
  return gbps(d->size * (size_t)count, dt);
}

/* ---- the daemon ------------------------------------------------------------------ */

typedef struct daemon_proc {
  char dir[PATH_MAX];
  char config[PATH_MAX + 32];
  char sock[PATH_MAX + 32];
  char endpoint[PATH_MAX + 40];
  char log[PATH_MAX + 32];
  pid_t pid;
} daemon_proc;

static pid_t daemon_pid;          /* killed at exit if still running */

static void daemon_kill_at_exit(void) {
  if (daemon_pid > 0) {
    kill(daemon_pid, SIGKILL);
    waitpid(daemon_pid, NULL, 0);
  }
}

static const char *daemon_locate(const char *given, char *buf, size_t cap) {
  return given ? given
               : bench_exe_locate(B2S_BENCH_DAEMON, "daemon/b2streamd", buf,
                                  cap);
}

/* The configuration: streams zmq and shm for throughput (ack write, group
 * commit), lat for latency (ack write, every chunk committed alone). */
static int daemon_config(const daemon_proc *dp, const opts *o,
                         size_t max_size) {
  FILE *f = fopen(dp->config, "w");
  if (f == NULL)
    return -errno;
  size_t slots = (size_t)shm_slots(o);
  size_t mem = 4 * slots * max_size;
  if (mem < ((size_t)256 << 20))
    mem = (size_t)256 << 20;
  size_t slot_size = max_size < 4096 ? 4096 : max_size;
  fprintf(f,
          "listen: [ipc://d.sock]\nrun_dir: run\ndata_dir: data\n"
          "workers: %d\nmemory_limit: %zu\nmax_buffer: %zu\n"
          "log_level: warning\nshm: {slots: %zu, slot_size: %zu}\nstreams:\n",
          o->workers, mem, slot_size < 1024 ? 1024 : slot_size, slots,
          slot_size);
  static const char *const names[] = {"zmq", "shm", "lat"};
  for (int i = 0; i < 3; i++) {
    bool lat = i == 2;
    fprintf(f,
            "  %s:\n    codec: %s\n    clevel: %d\n    typesize: 2\n"
            "    filters: [%s]\n"
            "    durability: {ack: write, group_count: %d, "
            "group_interval_ms: %d}\n"
            "    backpressure: block\n    queue_depth: %d\n",
            names[i], o->codec, o->clevel,
            strcmp(o->filter, "none") == 0 ? "" : o->filter,
            lat ? 1 : o->group, lat ? 0 : 10, o->window);
  }
  return fclose(f) == 0 ? 0 : -errno;
}

static int daemon_start(daemon_proc *dp, const char *path) {
  pid_t pid = bench_spawn((char *[]){(char *)path, "--config", dp->config,
                                     NULL},
                          dp->log);
  if (pid < 0)
    return (int)pid;
  dp->pid = daemon_pid = pid;
  int rc = bench_wait_path(pid, dp->sock, 10000);
  if (rc == -ECHILD)
    dp->pid = daemon_pid = 0;
  return rc;
}

static int daemon_stop(daemon_proc *dp) {
  int rc = bench_stop(dp->pid, 60000);
  dp->pid = daemon_pid = 0;
  return rc;
}

/* A stream's "key":number from the daemon's statistics; NAN when absent. */
static double stats_number(b2sc_session *s, const char *stream,
                           const char *key) {
  char *json = NULL;
  if (b2sc_stats(s, stream, &json, NULL) < 0)
    return NAN;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(json, pat);
  double v = p ? strtod(p + strlen(pat), NULL) : NAN;
  free(json);
  return v;
}

/* ---- e2e throughput ------------------------------------------------------------- */

/* The record a detector would send with image i: its frame number, a
 * timestamp and a small user map ({"exp": 10}, PROTOCOL.md 9.3). */
static b2sc_record bench_record(long i) {
  static const uint8_t user[] = {0x81, 0xa3, 'e', 'x', 'p', 0x0a};
  b2sc_record r = {0};
  r.present = B2SC_REC_FRAME | B2SC_REC_TS | B2SC_REC_USER_MAP;
  r.frame = (uint64_t)i;
  r.ts_ns = (int64_t)now_ns();
  r.user = user;
  r.user_len = sizeof user;
  return r;
}

static bool zmq_copy;               /* --zmq-copy */

static int zmq_send_one(b2sc_producer *p, const dataset *d, long i, bool rec) {
  if (zmq_copy && !rec)
    return b2sc_send(p, d->buf[i % NFRAMES], d->size, WAIT_MS);
  if (!rec)
    return b2sc_send_zc(p, d->buf[i % NFRAMES], d->size, NULL, NULL);
  b2sc_record r = bench_record(i);
  return b2sc_send_zc_rec(p, d->buf[i % NFRAMES], d->size, &r, NULL, NULL);
}

static int zmq_send_all(b2sc_producer *p, const dataset *d, long count,
                        bool rec) {
  for (long i = 0; i < count; i++) {
    int rc;
    while ((rc = zmq_send_one(p, d, i, rec)) == B2S_E_BUSY)
      if ((rc = b2sc_wait_credit(p, WAIT_MS)) < 0)
        return rc;
    if (rc < 0)
      return rc;
  }
  return 0;
}

typedef struct shm_fill {
  bool copy_always;
  uint8_t filled[FILL_SLOTS];
} shm_fill;

static int shm_send_all(b2sc_producer *p, const dataset *d, long count,
                        shm_fill *fill, bool rec) {
  for (long i = 0; i < count; i++) {
    uint32_t slot;
    void *ptr;
    size_t cap;
    int rc = b2sc_shm_acquire(p, WAIT_MS, &slot, &ptr, &cap);
    if (rc < 0)
      return rc;
    if (cap < d->size)
      return B2S_E_OVERSIZE;
    /* A detector's readout writes the slot itself; copying the image in
     * at the slot's first use (or every time with --shm-copy) stands for
     * that. */
    if (fill->copy_always || slot >= FILL_SLOTS || !fill->filled[slot]) {
      memcpy(ptr, d->buf[i % NFRAMES], d->size);
      if (slot < FILL_SLOTS)
        fill->filled[slot] = 1;
    }
    b2sc_record r = bench_record(i);
    rc = rec ? b2sc_shm_submit_rec(p, slot, d->size, &r)
             : b2sc_shm_submit(p, slot, d->size);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* ZeroMQ or shared memory, each with or without a record per buffer. */
enum { VIA_ZMQ, VIA_SHM, VIA_ZMQ_REC, VIA_SHM_REC };

static bool via_shm(int via) { return via == VIA_SHM || via == VIA_SHM_REC; }
static bool via_rec(int via) { return via >= VIA_ZMQ_REC; }

static int send_all(b2sc_producer *p, int via, const dataset *d, long count,
                    shm_fill *fill) {
  return via_shm(via) ? shm_send_all(p, d, count, fill, via_rec(via))
                      : zmq_send_all(p, d, count, via_rec(via));
}

/* Open `stream` (and a segment for shm), send `warm` buffers untimed and
 * flush them (codec states, frame pages, the segment's pages: a producer
 * attaches once and streams for hours, so first touches are not its
 * throughput), then send `count` buffers and close the handle, which
 * returns once every buffer is acknowledged at the stream's level
 * (written).  Returns the ns of the timed part, or a negative code. */
static int64_t e2e_pass(b2sc_session *s, const char *stream, int via,
                        const dataset *d, long warm, long count,
                        shm_fill *fill, uint32_t nslots, double *wcpu,
                        double *busy) {
  b2sc_producer *p;
  int rc = b2sc_producer_open(s, stream, NULL, &p);
  if (rc < 0)
    return rc;
  if (rc == 0 && via_rec(via) && b2sc_protocol_version(s) < 2)
    rc = B2S_E_PROTO_VERSION;   /* records need protocol version 2 */
  if (rc == 0 && via_shm(via))
    rc = b2sc_shm_attach(p, nslots, d->size);
  if (rc == 0 && warm > 0 && (rc = send_all(p, via, d, warm, fill)) == 0)
    rc = b2sc_flush(p, WAIT_MS);
  if (rc < 0) {
    b2sc_producer_close(p);
    return rc;
  }
  b2sc_producer_stats st0, st;
  b2sc_producer_stats_get(p, &st0);
  cpu_use cu;
  cpu_use_begin(&cu, daemon_pid);
  uint64_t t0 = now_ns();
  rc = send_all(p, via, d, count, fill);
  b2sc_producer_stats_get(p, &st);
  int crc = b2sc_producer_close(p);
  uint64_t dt = now_ns() - t0;
  if (rc == 0)
    rc = crc;
  if (rc == 0 && (st.sent - st0.sent != (uint64_t)count || st.dropped ||
                  st.rejected))
    rc = B2S_E_DROPPED;
  if (rc == 0)
    *wcpu = cpu_use_print(via_shm(via) ? (via_rec(via) ? "e2e shm+records" : "e2e shm")
                               : (via_rec(via) ? "e2e zmq+records" : "e2e zmq"),
                  &cu, daemon_pid,
                  d->size * (size_t)count, dt, busy);
  return rc < 0 ? rc : (int64_t)dt;
}

/* Returns GB/s, or -1 after printing why not; *busy (may be NULL) the
 * share of the CPUs kept busy (cpu_use_print); *wcpu gets the workers' CPU
 * seconds per GB of input. */
static double bench_e2e(b2sc_session *s, const char *stream, int via,
                        const dataset *d, long count, const opts *o,
                        double *wcpu, double *busy) {
  shm_fill fill = {.copy_always = o->shm_copy};
  uint32_t nslots = (uint32_t)shm_slots(o);
  long warm = count / 8 < 2L * o->window ? count / 8 : 2L * o->window;
  int64_t rc = e2e_pass(s, stream, via, d, warm, count, &fill, nslots, wcpu,
                        busy);
  if (rc == -EOPNOTSUPP && via_shm(via)) {
    printf("  shm: not offered by this daemon\n");
    return -1;
  }
  if (rc < 0) {
    printf("  e2e %s: %s (%s)\n", stream, b2sc_strerror((int)rc),
           b2sc_last_error(s));
    return -1;
  }
  return gbps(d->size * (size_t)count, (uint64_t)rc);
}

/* ---- consumers following during e2e zmq ---------------------------------------- */

/* Consumers in notify mode on their own threads and sessions, counting
 * what b2sc_next returns until told to stop. */
typedef struct follower {
  const char *endpoint, *stream;
  pthread_t th;
  atomic_bool *stop;
  pthread_barrier_t *ready;
  long got;
  int rc;
} follower;

static void *follower_main(void *arg) {
  follower *f = arg;
  b2sc_session *s = NULL;
  b2sc_consumer *c = NULL;
  f->rc = b2sc_connect(f->endpoint, "bench-follower", &s);
  if (f->rc == 0)
    f->rc = b2sc_follow(s, f->stream, 0,
                        B2SC_FOLLOW_NOTIFY | B2SC_FOLLOW_FROM_END, &c);
  pthread_barrier_wait(f->ready);
  /* after stop, until the notices of the last commits are in */
  for (bool quiet = false; f->rc == 0 && !(quiet && atomic_load(f->stop));) {
    b2sc_chunk_info info;
    int rc = b2sc_next(c, atomic_load(f->stop) ? 1000 : 50, &info);
    quiet = rc == B2S_E_TIMEOUT;
    if (rc == 0)
      f->got++;
    else if (rc != B2S_E_TIMEOUT)
      f->rc = rc;
  }
  b2sc_unfollow(c);
  b2sc_close(s);
  return NULL;
}

/* e2e zmq with nf followers on `stream`; GB/s or -1.  Every follower must
 * have seen every chunk of the timed pass (at least `count`). */
static double bench_e2e_followed(b2sc_session *s, const char *endpoint,
                                 const char *stream, const dataset *d,
                                 long count, const opts *o, int nf) {
  follower *f = calloc((size_t)nf, sizeof *f);
  atomic_bool stop = false;
  pthread_barrier_t ready;
  if (f == NULL)
    return -1;
  pthread_barrier_init(&ready, NULL, (unsigned)nf + 1);
  int started = 0;
  for (int i = 0; i < nf; i++) {
    f[i] = (follower){.endpoint = endpoint, .stream = stream, .stop = &stop,
                      .ready = &ready};
    if (pthread_create(&f[i].th, NULL, follower_main, &f[i]) != 0)
      break;
    started++;
  }
  double v = -1;
  if (started == nf) {
    pthread_barrier_wait(&ready);
    bool ok = true;
    for (int i = 0; i < nf; i++)
      ok &= f[i].rc == 0;
    if (ok)
      v = bench_e2e(s, stream, VIA_ZMQ, d, count, o, &(double){0}, NULL);
  }
  atomic_store(&stop, true);
  for (int i = 0; i < started; i++)
    pthread_join(f[i].th, NULL);
  for (int i = 0; v > 0 && i < nf; i++)
    if (f[i].rc < 0 || f[i].got < count) {
      printf("  follower %d: %ld chunks, %s\n", i, f[i].got,
             f[i].rc < 0 ? b2sc_strerror(f[i].rc) : "missed some");
      v = -1;
    }
  if (started < nf)
    printf("  followers: cannot start threads\n");
  pthread_barrier_destroy(&ready);
  free(f);
  return v;
}

/* ---- notification latency ------------------------------------------------------ */

typedef struct lat_consumer {
  const char *endpoint;
  int n;
  uint64_t *t_notify;          /* per sample, 0 until notified */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int state;                   /* 0 starting, 1 following, <0 failed */
  int got, rc;
  bool records;                /* follow with records (protocol 2) */
} lat_consumer;

static void lat_set_state(lat_consumer *c, int state) {
  pthread_mutex_lock(&c->lock);
  c->state = state;
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static void *lat_consumer_main(void *arg) {
  lat_consumer *lc = arg;
  b2sc_session *s = NULL;
  b2sc_consumer *c = NULL;
  int rc = b2sc_connect(lc->endpoint, "bench-consumer", &s);
  if (rc == 0)
    rc = b2sc_follow(s, "lat", 0,
                     B2SC_FOLLOW_NOTIFY | B2SC_FOLLOW_FROM_END |
                         (lc->records ? B2SC_FOLLOW_RECORDS : 0),
                     &c);
  if (rc < 0) {
    lc->rc = rc;
    lat_set_state(lc, -1);
    b2sc_close(s);
    return NULL;
  }
  uint64_t start = b2sc_position(c);
  lat_set_state(lc, 1);
  while (lc->got < lc->n) {
    b2sc_chunk_info info;
    b2sc_record rec;
    rc = b2sc_next_rec(c, 5000, &info, &rec);
    uint64_t t = now_ns();
    if (rc < 0) {
      lc->rc = rc;
      break;
    }
    uint64_t k = info.index - start;
    if (k < (uint64_t)lc->n) {
      lc->t_notify[k] = t;
      lc->got++;
    }
  }
  b2sc_unfollow(c);
  b2sc_close(s);
  return NULL;
}

/* Pump the session until buffer `id` is acknowledged at level written.
 * Polls every 20 us rather than spinning, so the wait does not take CPU
 * from the daemon on small machines; the receipt time is thus late by up
 * to a poll interval, which keeps ack->notified a lower bound. */
static int wait_written(b2sc_producer *p, uint64_t id, uint64_t *t) {
  uint64_t give_up = now_ns() + (uint64_t)WAIT_MS * 1000000u;
  for (;;) {
    int rc = b2sc_wait_credit(p, 0);
    if (rc < 0 && rc != B2S_E_TIMEOUT)
      return rc;
    b2sc_producer_stats st;
    b2sc_producer_stats_get(p, &st);
    *t = now_ns();
    if (st.written > id)
      return 0;
    if (*t > give_up)
      return B2S_E_TIMEOUT;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 20000};
    nanosleep(&ts, NULL);
  }
}

typedef struct lat_result {
  int n;
  int64_t *send_notify, *ack_notify, *send_ack;   /* ns */
  double ping[3];              /* p50, p99, max in us */
  double notify_us[3];         /* the daemon's commit -> NOTIFY sent, same */
  double commit_avg_us, commit_max_us;
} lat_result;

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* q-quantile of sorted v[0..n), nearest rank. */
static int64_t quantile(const int64_t *v, int n, double q) {
  int k = (int)ceil(q * n) - 1;
  return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static int lat_produce(b2sc_session *s, const dataset *d, const opts *o,
                       bool records, uint64_t *t_send, uint64_t *t_ack) {
  b2sc_producer *p;
  int rc = b2sc_producer_open(s, "lat", NULL, &p);
  if (rc < 0)
    return rc;
  uint64_t step = (uint64_t)o->lat_interval_us * 1000u, t0 = now_ns() + step;
  for (int i = 0; i < o->lat_count && rc == 0; i++) {
    sleep_until_ns(t0 + (uint64_t)i * step);
    size_t off = (size_t)(i / NFRAMES) * 4096 % (d->size - o->lat_size + 1);
    const uint8_t *buf = d->buf[i % NFRAMES] + off;
    t_send[i] = now_ns();
    b2sc_record r = bench_record(i);
    rc = b2sc_send_rec(p, buf, o->lat_size, records ? &r : NULL, WAIT_MS);
    if (rc == 0)
      rc = wait_written(p, (uint64_t)i, &t_ack[i]);
  }
  int crc = b2sc_producer_close(p);
  return rc < 0 ? rc : crc;
}

static void lat_ping(b2sc_session *s, int n, double out[3]) {
  int64_t *v = calloc((size_t)n, sizeof *v);
  int k = 0;
  for (int i = 0; v && i < n; i++) {
    uint64_t t = now_ns();
    if (b2sc_ping(s, WAIT_MS) < 0)
      break;
    v[k++] = (int64_t)(now_ns() - t);
    usleep(1000);
  }
  if (k > 0) {
    qsort(v, (size_t)k, sizeof *v, cmp_i64);
    out[0] = quantile(v, k, 0.5) / 1e3;
    out[1] = quantile(v, k, 0.99) / 1e3;
    out[2] = v[k - 1] / 1e3;
  }
  free(v);
}

/* Consumer thread and producer on their own sessions; afterwards PING
 * round trips and the daemon's commit times on the same connection. */
static int lat_measure(b2sc_session *s, lat_consumer *lc, const dataset *d,
                       const opts *o, uint64_t *t_send, uint64_t *t_ack) {
  pthread_t th;
  int rc = 0;
  if (pthread_create(&th, NULL, lat_consumer_main, lc) != 0)
    return -EAGAIN;
  pthread_mutex_lock(&lc->lock);
  while (lc->state == 0)
    pthread_cond_wait(&lc->cond, &lc->lock);
  pthread_mutex_unlock(&lc->lock);
  if (lc->state > 0)
    rc = lat_produce(s, d, o, lc->records, t_send, t_ack);
  pthread_join(th, NULL);   /* the consumer ends after n chunks or 5 s idle */
  return rc < 0 ? rc : lc->rc;
}

static int bench_latency(const char *endpoint, const dataset *d, const opts *o,
                         bool records, lat_result *res) {
  int n = o->lat_count;
  uint64_t *t_send = calloc((size_t)n, 8), *t_ack = calloc((size_t)n, 8);
  lat_consumer lc = {.endpoint = endpoint, .n = n, .records = records,
                     .t_notify = calloc((size_t)n, 8)};
  res->n = n;
  res->send_notify = calloc((size_t)n, 8);
  res->ack_notify = calloc((size_t)n, 8);
  res->send_ack = calloc((size_t)n, 8);
  pthread_mutex_init(&lc.lock, NULL);
  pthread_cond_init(&lc.cond, NULL);
  b2sc_session *s = NULL;
  int rc = B2S_E_NOMEM;
  if (t_send && t_ack && lc.t_notify && res->send_notify && res->ack_notify &&
      res->send_ack && (rc = b2sc_connect(endpoint, "bench-latency", &s)) == 0) {
    b2sc_set_timeout(s, WAIT_MS);
    rc = lat_measure(s, &lc, d, o, t_send, t_ack);
  }
  for (int i = 0; rc == 0 && i < n; i++) {
    res->send_notify[i] = (int64_t)(lc.t_notify[i] - t_send[i]);
    res->ack_notify[i] = (int64_t)(lc.t_notify[i] - t_ack[i]);
    res->send_ack[i] = (int64_t)(t_ack[i] - t_send[i]);
  }
  if (rc == 0) {
    lat_ping(s, 500, res->ping);
    res->commit_avg_us = stats_number(s, "lat", "commit_latency_avg_us");
    res->commit_max_us = stats_number(s, "lat", "commit_latency_max_us");
    static const char *const key[] = {"notify_latency_p50_us",
                                      "notify_latency_p99_us",
                                      "notify_latency_max_us"};
    for (int i = 0; i < 3; i++)
      res->notify_us[i] = stats_number(s, "lat", key[i]);
  }
  b2sc_close(s);
  pthread_mutex_destroy(&lc.lock);
  pthread_cond_destroy(&lc.cond);
  free(t_send);
  free(t_ack);
  free(lc.t_notify);
  return rc;
}

static void lat_rows(lat_result *r, const char *sfx) {
  int n = r->n;
  qsort(r->send_notify, (size_t)n, 8, cmp_i64);
  qsort(r->ack_notify, (size_t)n, 8, cmp_i64);
  qsort(r->send_ack, (size_t)n, 8, cmp_i64);
  static const char *const q[] = {"p50", "p99", "max"};
  static const double qv[] = {0.5, 0.99, 1.0};
  for (int i = 0; i < 3; i++) {
    char fig[64];
    snprintf(fig, sizeof fig, "send->notified %s (upper)%s", q[i], sfx);
    row *rw = row_add(fig, quantile(r->send_notify, n, qv[i]) / 1e3, "us");
    char base[40];
    snprintf(base, sizeof base, "ping rtt %s", q[i]);
    if (rw)
      row_base(rw, base, &rw->value, &r->ping[i], 1); /* one measurement each */
  }
  /* The daemon times commit -> NOTIFY sent itself; the NOTIFY then takes
   * one hop to the consumer, less than a PING round trip. */
  for (int i = 0; i < 3; i++) {
    char fig[64];
    snprintf(fig, sizeof fig, "commit->NOTIFY sent %s (daemon)%s", q[i], sfx);
    row_add(fig, r->notify_us[i], "us");
  }
  char estl[80];
  snprintf(estl, sizeof estl, "commit->notified p99 (estimate)%s", sfx);
  row *est = row_add(estl, r->notify_us[1] + r->ping[1], "us");
  row_target(est, -1, 1000);
  for (int i = 0; i < 3; i++) {
    char fig[64];
    snprintf(fig, sizeof fig, "ack(written)->notified %s (lower)%s", q[i], sfx);
    row_add(fig, quantile(r->ack_notify, n, qv[i]) / 1e3, "us");
  }
  for (int i = 0; i < 2; i++) {
    char fig[64];
    snprintf(fig, sizeof fig, "send->ack(written) %s%s", q[i], sfx);
    row_add(fig, quantile(r->send_ack, n, qv[i]) / 1e3, "us");
  }
  char fig[80];
  snprintf(fig, sizeof fig, "daemon commit time avg (stats)%s", sfx);
  row_add(fig, r->commit_avg_us, "us");
  snprintf(fig, sizeof fig, "daemon commit time max (stats)%s", sfx);
  row_add(fig, r->commit_max_us, "us");
}

/* ---- one buffer size --------------------------------------------------------------- */

/* Per-round figures of one buffer size; 0 = not measured that round, a
 * negative value = failed or refused (said why), not retried. */
typedef struct rounds {
  double comp[MAX_REPEAT], ratio[MAX_REPEAT], raw[MAX_REPEAT], rawtcp[MAX_REPEAT];
  double disk[MAX_REPEAT], diskx[MAX_REPEAT], ceiling[MAX_REPEAT];
  double ez[MAX_REPEAT], es[MAX_REPEAT];
  double ef[MAX_REPEAT], ezr[MAX_REPEAT], esr[MAX_REPEAT];
  /* CPU seconds per GB of input: in-process threads, the daemon's workers */
  double comp_cpu[MAX_REPEAT], ez_cpu[MAX_REPEAT], es_cpu[MAX_REPEAT];
  double comp_only_cpu[MAX_REPEAT];  /* comp_cpu less the checksums */
  double ez_busy[MAX_REPEAT], es_busy[MAX_REPEAT];  /* CPUs kept busy */
  bool ez_failed, es_failed, ef_failed, ezr_failed, esr_failed;
} rounds;

enum { PH_COMPRESS, PH_RAW, PH_DISK, PH_ZMQ, PH_SHM, NPHASES };

/* One phase of round i (i < 0: the warm-up, whose figures are dropped). */
static void run_phase(int ph, int i, const opts *o, const daemon_proc *dp,
                      b2sc_session *s, const b2s_cparams *cp, const dataset *d,
                      long count, const char *ep, rounds *R) {
  double v, q = 0;
  int k = i < 0 ? 0 : i;
  if (ph == PH_COMPRESS && phase_on(o, "compress")) {
    v = bench_compress(d, cp, o->workers, shm_slots(o), count, &q,
                       &R->comp_cpu[k], &R->comp_only_cpu[k]);
    R->comp[k] = v, R->ratio[k] = q;
  } else if (ph == PH_RAW && phase_on(o, "raw")) {
    R->raw[k] = bench_raw(d, ep, count, o->window);
    R->rawtcp[k] = bench_raw(d, "tcp://127.0.0.1:*", count, o->window);
  } else if (ph == PH_DISK && i >= 0 && phase_on(o, "disk")) {
    R->disk[k] = bench_disk(dp->dir);   /* nothing to warm: no warm-up */
  } else if (ph == PH_ZMQ && !R->ez_failed && phase_on(o, "zmq")) {
    R->ez[k] = bench_e2e(s, "zmq", VIA_ZMQ, d, count, o, &R->ez_cpu[k],
                        &R->ez_busy[k]);
    R->ez_failed = R->ez[k] < 0;
    /* right after the plain pass: the cost of a record per buffer */
    if (o->records && !R->ez_failed && !R->ezr_failed) {
      R->ezr[k] = bench_e2e(s, "zmq", VIA_ZMQ_REC, d, count, o, &(double){0}, NULL);
      R->ezr_failed = R->ezr[k] < 0;
    }
    /* right after a plain zmq pass, so both see the same conditions */
    if (!R->ez_failed && !R->ef_failed && phase_on(o, "follow")) {
      R->ef[k] = bench_e2e_followed(s, dp->endpoint, "zmq", d, count, o, o->followers);
      R->ef_failed = R->ef[k] < 0;
    }
  } else if (ph == PH_SHM && !R->es_failed && phase_on(o, "shm")) {
    R->es[k] = bench_e2e(s, "shm", VIA_SHM, d, count, o, &R->es_cpu[k],
                        &R->es_busy[k]);
    R->es_failed = R->es[k] < 0;
    if (o->records && !R->es_failed && !R->esr_failed) {
      R->esr[k] = bench_e2e(s, "shm", VIA_SHM_REC, d, count, o, &(double){0}, NULL);
      R->esr_failed = R->esr[k] < 0;
    }
  }
}

/* A warm-up round of full passes (the daemon's buffer pools grow to what
 * the load needs, as in a service's first minutes, so no timed round pays
 * for that growth), then o->repeat (even) rounds running the phases
 * forward on even rounds and backward on odd ones: each figure is taken as
 * often before its baseline as after it, and ratios are taken per round. */
static void run_rounds(const opts *o, const daemon_proc *dp, b2sc_session *s,
                       const b2s_cparams *cp, const dataset *d, long count,
                       const char *ep, rounds *R) {
  for (int ph = 0; ph < NPHASES; ph++)
    run_phase(ph, -1, o, dp, s, cp, d, count, ep, R);
  for (int i = 0; i < o->repeat; i++) {
    for (int j = 0; j < NPHASES; j++)
      run_phase(i % 2 == 0 ? j : NPHASES - 1 - j, i, o, dp, s, cp, d, count, ep, R);
    /* the input rate the machine can take: compression or the disk */
    R->diskx[i] = R->disk[i] * R->ratio[i];
    R->ceiling[i] = R->diskx[i] > 0 && R->diskx[i] < R->comp[i] ? R->diskx[i]
                                                                 : R->comp[i];
  }
}

/* A row for a figure with its median over the rounds; NULL when never measured. */
static row *row_median(const char *label, const double *v, int n, const char *unit) {
  double m[MAX_REPEAT];
  int k = 0;
  for (int i = 0; i < n; i++)
    if (v[i] > 0)
      m[k++] = v[i];
  return k ? row_add(label, median(m, k), unit) : NULL;
}

/* A row of v against baseline bv, none when bv was not measured (a phase
 * left out), so a figure is not repeated without its ratio. */
static row *row_against(const char *label, const double *v, int n,
                        const char *unit, const char *base, const double *bv) {
  bool any = false;
  for (int i = 0; i < n; i++)
    any = any || bv[i] > 0;
  row *r = any ? row_median(label, v, n, unit) : NULL;
  row_base(r, base, v, bv, n);
  return r;
}

/* The cost of a record per buffer: throughput with records over the same
 * transport without, per round.  Targets: at most 3% less with buffers of
 * 4 MiB and more, at most 10% with 64 KiB and less. */
static void report_records(const opts *o, const char *sz, const rounds *R,
                           size_t size) {
  static const char *const via[] = {"zmq (ipc)", "shm"};
  const double *with[] = {R->ezr, R->esr}, *without[] = {R->ez, R->es};
  double target = size >= ((size_t)4 << 20) ? 0.97
                  : size <= ((size_t)64 << 10) ? 0.90 : 0;
  for (int t = 0; t < 2; t++) {
    char label[80], base[40];
    snprintf(label, sizeof label, "[%s] e2e %s with records", sz, via[t]);
    row *r = row_median(label, with[t], o->repeat, "GB/s");
    if (r == NULL)
      continue;
    snprintf(base, sizeof base, "e2e %s", via[t]);
    row_base(r, base, with[t], without[t], o->repeat);
    if (r->base[0] && target > 0)
      row_target(r, 1, target);
  }
}

/* The daemon's workers against in-process compression, CPU seconds per GB
 * of the same input, per round: the service's overhead on the compressing
 * threads (target: at most 10% more than the same work in-process,
 * compression and each chunk's checksum), and, for information, against
 * compression alone. */
static void report_worker_cpu(const opts *o, const char *sz, const rounds *R) {
  char label[80];
  static const char *const work = "in-process compress+xxh64";
  static const char *const comp = "in-process compress only";
  snprintf(label, sizeof label, "[%s] %s, CPU", sz, work);
  row_median(label, R->comp_cpu, o->repeat, "s/GB");
  snprintf(label, sizeof label, "[%s] %s, CPU", sz, comp);
  row_median(label, R->comp_only_cpu, o->repeat, "s/GB");
  static const char *const via[] = {"zmq", "shm"};
  const double *v[] = {R->ez_cpu, R->es_cpu};
  for (int t = 0; t < 2; t++) {
    snprintf(label, sizeof label, "[%s] workers CPU per GB, e2e %s", sz, via[t]);
    row *r = row_against(label, v[t], o->repeat, "s/GB", work, R->comp_cpu);
    if (r)
      row_target(r, -2, 1.1);
    if (!row_against(label, v[t], o->repeat, "s/GB", comp, R->comp_only_cpu))
      row_median(label, v[t], o->repeat, "s/GB");
  }
}

static void report_size(const opts *o, const char *sz, const rounds *R,
                        size_t size) {
  char label[80];
  int n = o->repeat;
  snprintf(label, sizeof label, "[%s] in-process compress", sz);
  row_median(label, R->comp, n, "GB/s");
  snprintf(label, sizeof label, "[%s] compression ratio", sz);
  row_median(label, R->ratio, n, "x");
  snprintf(label, sizeof label, "[%s] raw zmq ipc", sz);
  row_median(label, R->raw, n, "GB/s");
  snprintf(label, sizeof label, "[%s] raw zmq tcp loopback", sz);
  row_median(label, R->rawtcp, n, "GB/s");
  snprintf(label, sizeof label, "[%s] disk, O_DIRECT+fdatasync", sz);
  row_median(label, R->disk, n, "GB/s");
  snprintf(label, sizeof label, "[%s] disk x compression ratio", sz);
  row_median(label, R->diskx, n, "GB/s");
  snprintf(label, sizeof label, "[%s] ceiling", sz);
  row_median(label, R->ceiling, n, "GB/s");
  static const char *const ceiling = "ceiling: min(compress, disk x ratio)";
  snprintf(label, sizeof label, "[%s] e2e zmq (ipc)", sz);
  row_median(label, R->ez, n, "GB/s");
  row *r = row_against(label, R->ez, n, "GB/s", "raw zmq ipc", R->raw);
  if (r)
    row_target(r, 1, 0.8);
  row_against(label, R->ez, n, "GB/s", "in-process compress", R->comp);
  if ((r = row_against(label, R->ez, n, "GB/s", ceiling, R->ceiling)))
    row_target(r, 1, 0.8);
  snprintf(label, sizeof label, "[%s] e2e zmq, CPUs busy", sz);
  row_median(label, R->ez_busy, n, "x");
  snprintf(label, sizeof label, "[%s] e2e shm%s", sz, o->shm_copy ? " (copy in)" : "");
  row_median(label, R->es, n, "GB/s");
  row_against(label, R->es, n, "GB/s", "in-process compress", R->comp);
  row_against(label, R->es, n, "GB/s", "raw zmq ipc", R->raw);
  if ((r = row_against(label, R->es, n, "GB/s", ceiling, R->ceiling)))
    row_target(r, 1, 0.9);
  snprintf(label, sizeof label, "[%s] e2e shm, CPUs busy", sz);
  row_median(label, R->es_busy, n, "x");
  report_worker_cpu(o, sz, R);
  snprintf(label, sizeof label, "[%s] e2e zmq, %d followers", sz, o->followers);
  r = row_median(label, R->ef, n, "GB/s");
  if (r) {
    row_base(r, "e2e zmq, no followers", R->ef, R->ez, n);
    row_target(r, 1, 0.95);
  }
  report_records(o, sz, R, size);
}

static void run_size(const opts *o, const daemon_proc *dp, b2sc_session *s,
                     const b2s_cparams *cp, size_t size) {
  dataset d;
  if (dataset_make(&d, size, o->data) < 0) {
    fprintf(stderr, "out of memory for the data\n");
    dataset_free(&d);
    return;
  }
  long count = o->count ? o->count : (long)(DEFAULT_RUN_BYTES / size);
  char sz[32], ep[PATH_MAX + 40];
  size_name(size, sz, sizeof sz);
  printf("%s buffers of %s, %ld per run, %d rounds after a warm-up, %d workers, %s clevel "
         "%d %s, window %d\n", o->data, sz, count, o->repeat, o->workers,
         o->codec, o->clevel, o->filter, o->window);
  fflush(stdout);
  if (phase_on(o, "disk"))
    printf("disk: the page cache may hold %.1f GB dirty (vm.dirty_*, "
           "MemAvailable); the baseline bypasses it (O_DIRECT) and flushes "
           "every 256 MiB (fdatasync)\n", dirty_limit_bytes() / 1e9);
  snprintf(ep, sizeof ep, "ipc://%s/raw.sock", dp->dir);
  rounds R;
  memset(&R, 0, sizeof R);
  run_rounds(o, dp, s, cp, &d, count, ep, &R);
  report_size(o, sz, &R, size);
  dataset_free(&d);
}

/* The latency phase, with or without a record per buffer. */
static void run_latency(const opts *o, const daemon_proc *dp, bool records) {
  dataset d;
  lat_result lr = {0};
  printf("latency%s: %d buffers of %zu bytes, one every %d us, stream lat "
         "(ack write, group_count 1, no fsync)\n", records ? " with records" : "",
         o->lat_count, o->lat_size, o->lat_interval_us);
  fflush(stdout);
  int lrc = dataset_make(&d, o->sizes[0], o->data);
  if (lrc == 0)
    lrc = bench_latency(dp->endpoint, &d, o, records, &lr);
  if (lrc == 0)
    lat_rows(&lr, records ? " +records" : "");
  else
    printf("  latency: %s\n", b2sc_strerror(lrc));
  free(lr.send_notify);
  free(lr.ack_notify);
  free(lr.send_ack);
  dataset_free(&d);
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_e2e [--workers N] [--size BYTES[,BYTES...]] "
          "[--count N] [--repeat N]\n"
          "                 [--codec lz4|lz4hc|zstd|zlib] [--clevel N] "
          "[--filter shuffle|bitshuffle|none]\n"
          "                 [--data detector|counting]\n"
          "                 [--window N] [--group N] [--lat-count N] "
          "[--lat-size BYTES]\n"
          "                 [--lat-interval-us N] [--followers N] "
          "[--shm-copy] [--records] [--zmq-copy]\n"
          "                 [--phases compress,raw,disk,zmq,shm,follow,lat]\n"
          "                 [--daemon PATH] [--dir DIR] [--keep]\n");
}

static int parse_sizes(opts *o, const char *arg) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", arg);
  o->nsizes = 0;
  for (char *save, *t = strtok_r(buf, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    size_t v = parse_size(t);
    if (v < 64 || o->nsizes == MAX_SIZES)
      return -1;
    o->sizes[o->nsizes++] = v;
  }
  return o->nsizes ? 0 : -1;
}

static int parse_args(opts *o, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    bool flag = strcmp(a, "--shm-copy") == 0 || strcmp(a, "--keep") == 0 ||
                strcmp(a, "--records") == 0 || strcmp(a, "--zmq-copy") == 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (!flag && v == NULL)
      return -1;
    if (strcmp(a, "--workers") == 0) o->workers = atoi(v);
    else if (strcmp(a, "--size") == 0) { if (parse_sizes(o, v)) return -1; }
    else if (strcmp(a, "--count") == 0) o->count = atol(v);
    else if (strcmp(a, "--repeat") == 0) o->repeat = atoi(v) + atoi(v) % 2;
    else if (strcmp(a, "--codec") == 0) o->codec = v;
    else if (strcmp(a, "--clevel") == 0) o->clevel = atoi(v);
    else if (strcmp(a, "--filter") == 0) o->filter = v;
    else if (strcmp(a, "--data") == 0) o->data = v;
    else if (strcmp(a, "--window") == 0) o->window = atoi(v);
    else if (strcmp(a, "--group") == 0) o->group = atoi(v);
    else if (strcmp(a, "--lat-count") == 0) o->lat_count = atoi(v);
    else if (strcmp(a, "--lat-size") == 0) o->lat_size = parse_size(v);
    else if (strcmp(a, "--lat-interval-us") == 0) o->lat_interval_us = atoi(v);
    else if (strcmp(a, "--followers") == 0) o->followers = atoi(v);
    else if (strcmp(a, "--phases") == 0) o->phases = v;
    else if (strcmp(a, "--daemon") == 0) o->daemon = v;
    else if (strcmp(a, "--dir") == 0) o->dir = v;
    else if (strcmp(a, "--shm-copy") == 0) o->shm_copy = true;
    else if (strcmp(a, "--keep") == 0) o->keep = true;
    else if (strcmp(a, "--records") == 0) o->records = true;
    else if (strcmp(a, "--zmq-copy") == 0) o->zmq_copy = true;
    else return -1;
    if (!flag)
      i++;
  }
  if (o->workers < 1 || o->workers > 256 || o->count < 0 || o->repeat < 2 || o->repeat > MAX_REPEAT || o->window < 1 ||
      o->group < 1 || o->lat_count < 1 || o->lat_size < 64 ||
      o->lat_interval_us < 0 || o->clevel < 0 || o->clevel > 9 ||
      o->followers < 1 || o->followers > 256 ||
      (strcmp(o->data, "detector") != 0 && strcmp(o->data, "counting") != 0) ||
      b2s_codec_from_name(o->codec) < 0 || b2s_filter_from_name(o->filter) < 0)
    return -1;
  for (int i = 0; i < o->nsizes; i++)
    if (o->lat_size > o->sizes[i])
      return -1;
  return 0;
}

/* The cparams the daemon derives for stream zmq from the same file. */
static int load_cparams(const daemon_proc *dp, b2s_cparams *cp) {
  b2s_errdetail ed;
  b2s_config *cfg = NULL;
  int rc = b2s_config_load(dp->config, &cfg, &ed);
  if (rc < 0) {
    fprintf(stderr, "%s\n", ed.text);
    return rc;
  }
  *cp = b2s_config_stream_find(cfg, "zmq")->cparams;
  b2s_config_free(cfg);
  return 0;
}

static int setup(daemon_proc *dp, const opts *o, const char *daemon) {
  size_t max_size = 0;
  for (int i = 0; i < o->nsizes; i++)
    max_size = o->sizes[i] > max_size ? o->sizes[i] : max_size;
  snprintf(dp->dir, sizeof dp->dir, "%s/b2s-bench-e2e-XXXXXX", o->dir);
  if (mkdtemp(dp->dir) == NULL) {
    fprintf(stderr, "mkdtemp %s: %s\n", dp->dir, strerror(errno));
    return -errno;
  }
  snprintf(dp->config, sizeof dp->config, "%s/b2streamd.yaml", dp->dir);
  snprintf(dp->sock, sizeof dp->sock, "%s/run/d.sock", dp->dir);
  snprintf(dp->endpoint, sizeof dp->endpoint, "ipc://%s", dp->sock);
  snprintf(dp->log, sizeof dp->log, "%s/daemon.log", dp->dir);
  int rc = daemon_config(dp, o, max_size);
  if (rc < 0)
    return rc;
  if ((rc = daemon_start(dp, daemon)) < 0)
    fprintf(stderr, "%s did not start (%s); its log: %s\n", daemon,
            b2s_strerror(rc), dp->log);
  return rc;
}

int main(int argc, char **argv) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  opts o = {.workers = ncpu > 0 && ncpu <= 256 ? (int)ncpu : 2,
            .sizes = {(size_t)4 << 20}, .nsizes = 1, .repeat = 4, .codec = "lz4",
            .clevel = 5, .filter = "shuffle", .data = "detector", .window = 16, .group = 64,
            .lat_count = 2500, .lat_size = 64 << 10, .lat_interval_us = 2000,
            .followers = 8, .phases = "compress,raw,disk,zmq,shm,follow,lat",
            .dir = "/tmp"};
  if (parse_args(&o, argc, argv) < 0) {
    usage(stderr);
    return 2;
  }
  /* the raw zmq receiver gets the allocator settings b2streamd uses for
   * its messages (daemon/main.c), so transport is compared like for like;
   * not with --zmq-copy, which measures b2sc_send's copies under the
   * allocator a producer program has */
  if (!o.zmq_copy) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  char found[PATH_MAX + 32];
  const char *daemon = daemon_locate(o.daemon, found, sizeof found);
  if (daemon == NULL) {
    fprintf(stderr, "b2streamd not found; pass --daemon PATH\n");
    return 2;
  }
  zmq_copy = o.zmq_copy;
  signal(SIGPIPE, SIG_IGN);
  atexit(daemon_kill_at_exit);
  daemon_proc dp = {0};
  b2s_cparams cp;
  b2sc_session *s = NULL;
  int rc = setup(&dp, &o, daemon);
  if (rc == 0)
    rc = load_cparams(&dp, &cp);
  if (rc == 0 && (rc = b2sc_connect(dp.endpoint, "bench-e2e", &s)) < 0)
    fprintf(stderr, "connect %s: %s\n", dp.endpoint, b2sc_strerror(rc));
  if (rc == 0) {
    b2sc_set_timeout(s, WAIT_MS);
    printf("b2streamd %s (pid %d) on %s\n", daemon, (int)dp.pid, dp.dir);
    for (int i = 0; i < o.nsizes; i++)
      run_size(&o, &dp, s, &cp, o.sizes[i]);
  }
  if (rc == 0 && phase_on(&o, "lat")) {
    run_latency(&o, &dp, false);
    if (o.records)   /* the same with a record per buffer, delivered too */
      run_latency(&o, &dp, true);
  }
  b2sc_close(s);
  int drc = daemon_stop(&dp);
  if (drc < 0)
    fprintf(stderr, "b2streamd did not stop cleanly; log: %s\n", dp.log);
  table_print();
  if (phase_on(&o, "lat"))
    printf("\nupper = producer send -> consumer's b2sc_next return (transfer, "
         "compression, append, commit, notify);\nlower = producer's receipt "
         "of ACK(written) -> consumer's b2sc_next return (the commit is "
         "before both);\nestimate = the daemon's commit -> NOTIFY sent "
         "p99 (10 us buckets, from its stats) + ping rtt p99.\n");
  if (dp.dir[0] && !o.keep && drc == 0)
    bench_rmtree(dp.dir);
  else if (dp.dir[0])
    printf("kept %s\n", dp.dir);
  return rc < 0 ? 1 : 0;
}

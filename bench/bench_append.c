/* Append cost against frame size.
 *
 * Appends small pre-compressed chunks to a new frame and reports, at 10^3,
 * 10^5 and 10^6 chunks:
 *
 *   - the cumulative mean time per append over all appends so far (the
 *     append call plus its share of commits and slot moves), and the ratio
 *     between the largest and the smallest frame (target <= 1.2);
 *   - per decade (the appends from 10^(k-1) to 10^k; the first decade is
 *     1..10^3): mean, p99 and max of one append step (append call plus the
 *     commit when one follows it), and of the commit calls alone, so that
 *     a mean carried by a few huge steps shows;
 *   - the same for a baseline that appends the same bytes to a plain file
 *     with one pwrite per chunk, and each mean's ratio to it;
 *   - the cumulative means in CPU time too, with the context switches
 *     between marks.  On a shared machine the wall time of a long run
 *     includes the time other processes hold the CPU ("preempted"), which
 *     the first 10^3 appends (a few ms) mostly escape; the CPU-time ratio
 *     shows the writer's own cost.  For wall-time figures free of that,
 *     run it as `chrt -f 1 bench_append ...`.
 *
 *   bench_append [DIR] [MAX_CHUNKS] [GROUP...]
 *
 * GROUP is the number of appends per commit (default: 1 and 64).
 * B2S_BENCH_CONTIGUOUS_ONLY=1 skips the sparse frames. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "frame_writer.h"

#define NMARKS 3

static const long marks[NMARKS] = {1000, 100000, 1000000};

static double clock_s(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }

/* Process CPU time (single-threaded): unlike wall time it leaves out the
 * time other processes hold the CPU, which on a shared machine grows with
 * the length of the run. */
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* Context switches so far: voluntary (the writer slept) and involuntary
 * (another process took the CPU). */
static void switches(long out[2]) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  out[0] = ru.ru_nvcsw;
  out[1] = ru.ru_nivcsw;
}

/* A small compressed chunk per distinct payload; 16 variants. */
static int make_chunks(uint8_t chunks[16][256], int32_t sizes[16]) {
  b2s_ctx *ctx = b2s_ctx_new();
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.typesize = 2;
  for (int k = 0; k < 16; k++) {
    uint16_t img[96];
    for (int i = 0; i < 96; i++)
      img[i] = (uint16_t)(1000 + (i * 7 + k * 13) % 50);
    sizes[k] = b2s_compress(ctx, &cp, img, sizeof img, chunks[k], 256);
    if (sizes[k] <= 0)
      return -1;
  }
  b2s_ctx_free(ctx);
  return 0;
}

/* Times of one run: per append step, and per commit (0: no commit). */
typedef struct run {
  long n;                 /* appends done */
  double *step, *commit;
  double cum[NMARKS];     /* cumulative mean per append at each mark */
  double cpu[NMARKS];     /* the same in CPU time */
  long csw[NMARKS][2];    /* context switches in each decade */
} run;

typedef struct stats {
  double mean, p99, max;
  long count;
} stats;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Stats of v[from, to), zeros skipped when skip_zero. */
static stats stats_of(const double *v, long from, long to, bool skip_zero) {
  stats s = {0};
  double *t = malloc((size_t)(to - from + 1) * sizeof *t);
  if (t == NULL)
    return s;
  double sum = 0;
  for (long i = from; i < to; i++)
    if (!skip_zero || v[i] > 0) {
      t[s.count++] = v[i];
      sum += v[i];
    }
  if (s.count > 0) {
    qsort(t, (size_t)s.count, sizeof *t, cmp_double);
    s.mean = sum / (double)s.count;
    s.p99 = t[(s.count * 99) / 100 < s.count ? (s.count * 99) / 100 : s.count - 1];
    s.max = t[s.count - 1];
  }
  free(t);
  return s;
}

static int run_alloc(run *r, long max) {
  memset(r, 0, sizeof *r);
  r->step = calloc((size_t)max, sizeof *r->step);
  r->commit = calloc((size_t)max, sizeof *r->commit);
  return r->step && r->commit ? 0 : -1;
}

static void run_free(run *r) {
  free(r->step);
  free(r->commit);
}

/* Figures at mark c after n appends; sw holds the switches at the start
 * of the decade and is moved on. */
static void mark_reached(run *r, int c, long n, double total, double cpu0,
                         long sw[2]) {
  long now_sw[2];
  r->cum[c] = total / (double)n;
  r->cpu[c] = (cpu_now() - cpu0) / (double)n;
  switches(now_sw);
  r->csw[c][0] = now_sw[0] - sw[0];
  r->csw[c][1] = now_sw[1] - sw[1];
  sw[0] = now_sw[0];
  sw[1] = now_sw[1];
}

static int run_frame(const char *path, bool sparse, long max, int group,
                     run *r) {
  uint8_t chunks[16][256];
  int32_t sizes[16];
  if (make_chunks(chunks, sizes) < 0)
    return -1;
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.compact_on_close = false;
  b2s_fwriter *w;
  int rc = b2s_fwriter_create(path, sparse, &o, NULL, &w);
  if (rc < 0) {
    fprintf(stderr, "bench_append: %s: %s\n", path, b2s_strerror(rc));
    return -1;
  }
  int c = 0;
  long sw[2];
  switches(sw);
  double total = 0, cpu0 = cpu_now();
  for (long i = 0; i < max; i++) {
    double t0 = now();
    int64_t e = b2s_fwriter_append(w, chunks[i % 16], (size_t)sizes[i % 16]);
    double t1 = now(), t2 = t1;
    if (e >= 0 && (i + 1) % group == 0) {
      e = b2s_fwriter_commit(w);
      t2 = now();
      r->commit[i] = t2 - t1;
    }
    if (e < 0) {
      fprintf(stderr, "bench_append: append %ld: %s\n", i, b2s_strerror((int)e));
      b2s_fwriter_free(w);
      return -1;
    }
    r->step[i] = t2 - t0;
    total += t2 - t0;
    r->n = i + 1;
    if (c < NMARKS && i + 1 == marks[c])
      mark_reached(r, c++, i + 1, total, cpu0, sw);
  }
  b2s_fwriter_stats st;
  b2s_fwriter_stats_get(w, &st);
  printf("  file %.1f MiB, holes %.1f KiB (%.2f%%), %lld commits\n",
         (double)st.file_bytes / (1 << 20), (double)st.hole_bytes / 1024,
         100.0 * (double)st.hole_bytes / (double)st.file_bytes,
         (long long)st.commits);
  b2s_fwriter_free(w);
  return c;
}

/* Baseline: the chunk bytes appended to a plain file, one pwrite each. */
static int run_baseline(const char *path, long max, run *r) {
  uint8_t chunks[16][256];
  int32_t sizes[16];
  if (make_chunks(chunks, sizes) < 0)
    return -1;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return -1;
  off_t pos = 0;
  int c = 0;
  long sw[2];
  switches(sw);
  double total = 0, cpu0 = cpu_now();
  for (long i = 0; i < max; i++) {
    double t0 = now();
    if (pwrite(fd, chunks[i % 16], (size_t)sizes[i % 16], pos) < 0)
      break;
    double t = now() - t0;
    pos += sizes[i % 16];
    r->step[i] = t;
    total += t;
    r->n = i + 1;
    if (c < NMARKS && i + 1 == marks[c])
      mark_reached(r, c++, i + 1, total, cpu0, sw);
  }
  close(fd);
  unlink(path);
  return c;
}

/* Decade k covers appends (10^(k-1), 10^k]; the first one 1..10^3. */
static void decade(long k_end, long *from, long *to) {
  *to = k_end;
  *from = k_end <= 1000 ? 0 : k_end / 10;
}

static void print_decades(const run *r, const run *base, int nmarks,
                          bool commits) {
  printf("    %-18s %10s %10s %10s %10s %9s\n", "decade (appends)",
         "mean us", "p99 us", "max us", "x baseline", commits ? "commits" : "");
  for (int c = 0; c < nmarks; c++) {
    long from, to;
    decade(marks[c], &from, &to);
    stats s = stats_of(r->step, from, to, false);
    char label[40];
    snprintf(label, sizeof label, "%ld..%ld", from + 1, to);
    if (base != NULL) {
      stats b = stats_of(base->step, from, to, false);
      printf("    %-18s %10.3f %10.3f %10.1f %10.2f\n", label, s.mean * 1e6,
             s.p99 * 1e6, s.max * 1e6, s.mean / b.mean);
    } else {
      printf("    %-18s %10.3f %10.3f %10.1f\n", label, s.mean * 1e6,
             s.p99 * 1e6, s.max * 1e6);
    }
    if (commits) {
      stats cs = stats_of(r->commit, from, to, true);
      printf("    %-18s %10.3f %10.3f %10.1f %10s %9ld\n", "  commit alone",
             cs.mean * 1e6, cs.p99 * 1e6, cs.max * 1e6, "", cs.count);
    }
  }
}

/* Cumulative means at each mark, wall and CPU time, with the context
 * switches since the previous mark; then the ratios.  base is NULL for the
 * baseline itself. */
static void print_cumulative(const run *r, const run *base, int nmarks) {
  for (int c = 0; c < nmarks; c++) {
    printf("  mean per append over 1..%-8ld %8.3f us", marks[c],
           r->cum[c] * 1e6);
    if (base != NULL)
      printf(" (x%.2f baseline)", r->cum[c] / base->cum[c]);
    printf(", CPU %.3f us; switches since %ld: %ld slept, %ld preempted\n",
           r->cpu[c] * 1e6, c > 0 ? marks[c - 1] : 0, r->csw[c][0],
           r->csw[c][1]);
  }
  if (nmarks < 2)
    return;
  int l = nmarks - 1;
  printf("  RATIO mean %ld / mean %ld: %.2f", marks[l], marks[0],
         r->cum[l] / r->cum[0]);
  if (base != NULL)
    printf(" (target <= 1.2); baseline's own: %.2f",
           base->cum[l] / base->cum[0]);
  printf("\n  RATIO in CPU time:           %.2f", r->cpu[l] / r->cpu[0]);
  if (base != NULL)
    printf("; baseline's own: %.2f", base->cpu[l] / base->cpu[0]);
  printf("\n");
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  long max = argc > 2 ? atol(argv[2]) : 1000000;
  int groups[8] = {1, 64};
  int ngroups = 2;
  if (argc > 3) {
    ngroups = 0;
    for (int i = 3; i < argc && ngroups < 8; i++)
      groups[ngroups++] = atoi(argv[i]) > 0 ? atoi(argv[i]) : 1;
  }
  if (max < 1)
    return 2;
  char path[4096];
  snprintf(path, sizeof path, "%s/bench-append-%d.raw", dir, (int)getpid());
  run base;
  if (run_alloc(&base, max) < 0)
    return 1;
  int nb = run_baseline(path, max, &base);
  if (nb < 1) {
    fprintf(stderr, "bench_append: fewer than %ld appends\n", marks[0]);
    return 1;
  }
  printf("baseline (one pwrite per chunk):\n");
  print_cumulative(&base, NULL, nb);
  print_decades(&base, NULL, nb, false);
  int kinds = getenv("B2S_BENCH_CONTIGUOUS_ONLY") ? 1 : 2;
  for (int sparse = 0; sparse < kinds; sparse++) {
    /* a million files is a file-system benchmark: sparse stops at 10^5 */
    long limit = sparse && max > 100000 ? 100000 : max;
    for (int g = 0; g < ngroups; g++) {
      snprintf(path, sizeof path, "%s/bench-append-%d.b2frame", dir,
               (int)getpid());
      char cmd[4200];
      snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
      printf("%s frame, commit every %d append(s):\n",
             sparse ? "sparse" : "contiguous", groups[g]);
      run r;
      if (run_alloc(&r, limit) < 0)
        return 1;
      int n = run_frame(path, sparse, limit, groups[g], &r);
      if (system(cmd) != 0 || n < 1)
        return 1;
      n = n < nb ? n : nb;
      print_cumulative(&r, &base, n);
      print_decades(&r, &base, n, true);
      run_free(&r);
    }
  }
  run_free(&base);
  return 0;
}

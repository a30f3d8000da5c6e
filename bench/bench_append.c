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
 * B2S_BENCH_CONTIGUOUS_ONLY=1 skips the sparse frames.
 *
 * Built with c-blosc2 (B2S_BENCH_BLOSC2), it then appends the same chunks
 * to a contiguous frame of ours (a commit per append) and to one of
 * c-blosc2 (blosc2_schunk_append_chunk) in the same run, the two taking
 * turns every VS_BLOCK appends with the order flipped each turn, and prints
 * the mean per append over 1..10^3, 10^3..10^4 and 10^4..10^5 for both.
 * Each side stops once its appends took B2S_BENCH_VS_LIMIT seconds in all
 * (default 20): c-blosc2 rewrites its whole index on every append. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "b2s_frame_writer.h"
#ifdef B2S_BENCH_BLOSC2
#include <blosc2.h>
#endif

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

#ifdef B2S_BENCH_BLOSC2
/* ---- the same appends to c-blosc2, side by side ------------------------- */

#define VS_MARKS 3
#define VS_BLOCK 100

static const long vs_marks[VS_MARKS] = {1000, 10000, 100000};

typedef struct vs_side {
  const char *name;
  void *st;
  int (*append)(void *st, const uint8_t *chunk, int32_t len);
  long n;                  /* appends done */
  double total;            /* seconds spent appending */
  double dec[VS_MARKS];    /* of which in each decade */
  long dec_n[VS_MARKS];
} vs_side;

static int ours_append(void *st, const uint8_t *chunk, int32_t len) {
  b2s_fwriter *w = st;
  int64_t e = b2s_fwriter_append(w, chunk, (size_t)len);
  if (e >= 0)
    e = b2s_fwriter_commit(w);
  return e < 0 ? (int)e : 0;
}

static int ref_append(void *st, const uint8_t *chunk, int32_t len) {
  (void)len;
  int64_t n = blosc2_schunk_append_chunk(st, (uint8_t *)(uintptr_t)chunk, true);
  return n < 0 ? (int)n : 0;
}

/* VS_BLOCK appends of side s, timed as one; -1 on an append error. */
static int vs_block(vs_side *s, uint8_t chunks[16][256], const int32_t sizes[16]) {
  int d = 0;
  while (d < VS_MARKS - 1 && s->n >= vs_marks[d])
    d++;
  double t0 = now();
  for (int i = 0; i < VS_BLOCK; i++, s->n++) {
    int rc = s->append(s->st, chunks[s->n % 16], sizes[s->n % 16]);
    if (rc < 0) {
      fprintf(stderr, "bench_append: %s append %ld: %d\n", s->name, s->n, rc);
      return -1;
    }
  }
  double t = now() - t0;
  s->total += t;
  s->dec[d] += t;
  s->dec_n[d] += VS_BLOCK;
  return 0;
}

/* Turns of VS_BLOCK appends, order flipped every turn, until both sides
 * reached `max` appends or their time limit. */
static int vs_run(vs_side sd[2], long max, double limit) {
  uint8_t chunks[16][256];
  int32_t sizes[16];
  if (make_chunks(chunks, sizes) < 0)
    return -1;
  for (long turn = 0;; turn++) {
    int active = 0;
    for (int j = 0; j < 2; j++) {
      vs_side *s = &sd[turn % 2 == 0 ? j : 1 - j];
      if (s->n >= max || s->total >= limit)
        continue;
      active++;
      if (vs_block(s, chunks, sizes) < 0)
        return -1;
    }
    if (active == 0)
      return 0;
  }
}

static void vs_print(const vs_side sd[2], double limit) {
  printf("contiguous frame vs c-blosc2, a commit per append, turns of %d appends,"
         " each side stops after %.0f s (time ratio: ours / c-blosc2):\n", VS_BLOCK, limit);
  printf("    %-18s %12s %12s %10s\n", "decade (appends)", "b2stream us", "c-blosc2 us",
         "time ratio");
  for (int d = 0; d < VS_MARKS; d++) {
    if (sd[0].dec_n[d] == 0 && sd[1].dec_n[d] == 0)
      break;
    char label[40], m[2][16];
    snprintf(label, sizeof label, "%ld..%ld", d ? vs_marks[d - 1] + 1 : 1, vs_marks[d]);
    for (int j = 0; j < 2; j++)
      snprintf(m[j], sizeof m[j], sd[j].dec_n[d] ? "%.3f" : "-",
               sd[j].dec[d] / (double)sd[j].dec_n[d] * 1e6);
    printf("    %-18s %12s %12s", label, m[0], m[1]);
    if (sd[0].dec_n[d] && sd[1].dec_n[d])
      printf(" %10.3f", (sd[0].dec[d] / (double)sd[0].dec_n[d]) /
                            (sd[1].dec[d] / (double)sd[1].dec_n[d]));
    printf("\n");
  }
  for (int j = 0; j < 2; j++) {
    int last = 0;
    while (last + 1 < VS_MARKS && sd[j].dec_n[last + 1] > 0)
      last++;
    printf("  %s: %ld appends in %.2f s; RATIO mean of the last decade (%ld of its"
           " appends) / first: %.2f\n", sd[j].name, sd[j].n, sd[j].total,
           sd[j].dec_n[last], (sd[j].dec[last] / (double)sd[j].dec_n[last]) /
                                  (sd[j].dec[0] / (double)sd[j].dec_n[0]));
  }
}

static int vs_blosc2(const char *dir, long max) {
  const char *e = getenv("B2S_BENCH_VS_LIMIT");
  double limit = e && atof(e) > 0 ? atof(e) : 20;
  char ours_path[4096], ref_path[4096];
  snprintf(ours_path, sizeof ours_path, "%s/bench-append-%d-ours.b2frame", dir, (int)getpid());
  snprintf(ref_path, sizeof ref_path, "%s/bench-append-%d-ref.b2frame", dir, (int)getpid());
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.compact_on_close = false;
  b2s_fwriter *w;
  int rc = b2s_fwriter_create(ours_path, false, &o, NULL, &w);
  if (rc < 0) {
    fprintf(stderr, "bench_append: %s: %s\n", ours_path, b2s_strerror(rc));
    return -1;
  }
  blosc2_init();
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.typesize = 2;
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS;
  blosc2_storage st = {.contiguous = true, .urlpath = ref_path, .cparams = &cp, .dparams = &dp};
  blosc2_schunk *sc = blosc2_schunk_new(&st);
  vs_side sd[2] = {{.name = "b2stream", .st = w, .append = ours_append},
                   {.name = "c-blosc2", .st = sc, .append = ref_append}};
  rc = sc ? vs_run(sd, max < vs_marks[VS_MARKS - 1] ? max : vs_marks[VS_MARKS - 1], limit) : -1;
  if (rc == 0)
    vs_print(sd, limit);
  if (sc)
    blosc2_schunk_free(sc);
  b2s_fwriter_free(w);
  unlink(ours_path);
  unlink(ref_path);
  blosc2_destroy();
  return rc;
}
#endif

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
#ifdef B2S_BENCH_BLOSC2
  if (vs_blosc2(dir, max) < 0)
    return 1;
#endif
  return 0;
}

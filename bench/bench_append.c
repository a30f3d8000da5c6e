/* Append cost against frame size.
 *
 * Appends small pre-compressed chunks to a new frame and reports, at 10^3,
 * 10^5 and 10^6 chunks, the mean time per append (commits and slot moves
 * included) over all appends so far, the ratio between the largest and
 * the smallest frame (target <= 1.2), and the ratio to the baseline:
 * appending the same bytes to a plain file with one pwrite per chunk.
 * The mean over the last 1000 appends before each mark is printed too: it
 * shows the cost of a single append at that size, moves included when one
 * falls in the window.
 *
 *   bench_append [DIR] [MAX_CHUNKS] [GROUP...]
 *
 * GROUP is the number of appends per commit (default: 1 and 64). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "frame_writer.h"

#define WINDOW 1000

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
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

static const long checkpoints[] = {1000, 100000, 1000000};

/* Mean seconds per append in the windows ending at each checkpoint. */
static int run_frame(const char *path, bool sparse, long max, int group,
                     double mean[3], double window[3]) {
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
  double t0 = 0, start = now();
  for (long i = 0; i < max && c < 3; i++) {
    if (i == checkpoints[c] - WINDOW)
      t0 = now();
    int64_t r = b2s_fwriter_append(w, chunks[i % 16], (size_t)sizes[i % 16]);
    if (r >= 0 && (i + 1) % group == 0)
      r = b2s_fwriter_commit(w);
    if (r < 0) {
      fprintf(stderr, "bench_append: append %ld: %s\n", i, b2s_strerror((int)r));
      b2s_fwriter_free(w);
      return -1;
    }
    if (i + 1 == checkpoints[c]) {
      double t = now();
      window[c] = (t - t0) / WINDOW;
      mean[c++] = (t - start) / (double)(i + 1);
    }
  }
  b2s_fwriter_stats st;
  b2s_fwriter_stats_get(w, &st);
  printf("    file %.1f MiB, holes %.1f KiB (%.2f%%), %lld commits\n",
         (double)st.file_bytes / (1 << 20), (double)st.hole_bytes / 1024,
         100.0 * (double)st.hole_bytes / (double)st.file_bytes,
         (long long)st.commits);
  b2s_fwriter_free(w);
  return c;
}

/* Baseline: the chunk bytes appended to a plain file, one pwrite each;
 * cumulative means at the same marks, since the file system's own cost
 * grows with the file. */
static int run_baseline(const char *path, long max, double mean[3]) {
  uint8_t chunks[16][256];
  int32_t sizes[16];
  if (make_chunks(chunks, sizes) < 0)
    return -1;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return -1;
  off_t pos = 0;
  int c = 0;
  double t0 = now();
  for (long i = 0; i < max && c < 3; i++) {
    if (pwrite(fd, chunks[i % 16], (size_t)sizes[i % 16], pos) < 0)
      break;
    pos += sizes[i % 16];
    if (i + 1 == checkpoints[c])
      mean[c++] = (now() - t0) / (double)(i + 1);
  }
  close(fd);
  unlink(path);
  return c;
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
  char path[4096];
  snprintf(path, sizeof path, "%s/bench-append-%d.raw", dir, (int)getpid());
  double base[3];
  int nb = run_baseline(path, max, base);
  if (nb < 1)
    return 1;
  for (int c = 0; c < nb; c++)
    printf("baseline (one pwrite per chunk) at %8ld chunks: %.3f us\n",
           checkpoints[c], base[c] * 1e6);
  int kinds = getenv("B2S_BENCH_CONTIGUOUS_ONLY") ? 1 : 2;
  for (int sparse = 0; sparse < kinds; sparse++) {
    /* a million files is a file-system benchmark: sparse stops at 10^5 */
    long limit = sparse && max > 100000 ? 100000 : max;
    for (int g = 0; g < ngroups; g++) {
      snprintf(path, sizeof path, "%s/bench-append-%d.b2frame", dir, (int)getpid());
      char cmd[4200];
      snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
      printf("%s frame, commit every %d append(s):\n",
             sparse ? "sparse" : "contiguous", groups[g]);
      double mean[3], window[3];
      int n = run_frame(path, sparse, limit, groups[g], mean, window);
      if (system(cmd) != 0 || n < 1)
        return 1;
      for (int c = 0; c < n; c++)
        printf("  at %8ld chunks: %8.3f us per append (x%.2f baseline),"
               " last %d: %.3f us\n", checkpoints[c], mean[c] * 1e6,
               mean[c] / base[c], WINDOW, window[c] * 1e6);
      printf("  ratio %ld / %ld chunks: %.2f (target <= 1.2); "
             "against the baseline's own growth: %.2f\n",
             checkpoints[n - 1], checkpoints[0], mean[n - 1] / mean[0],
             (mean[n - 1] / base[n - 1]) / (mean[0] / base[0]));
    }
  }
  return 0;
}

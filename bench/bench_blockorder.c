/* What a worker's gather into block order (b2s_blockorder.h) costs: for
 * images in square blocks, compressing the C-ordered image as it came
 * (the baseline: what the same bytes cost a stream whose blocks are runs
 * of the C order) against b2s_compress_blocks, which gathers each block as
 * it compresses it (what the daemon does for such a stream), and against
 * gathering the whole chunk first and compressing that; the whole gather
 * alone and a memcpy of the same bytes for scale.
 * The sides take turns on the same images, the order flips every round,
 * a warm-up round comes first; each ratio is min / median / max over the
 * rounds.  Times are the thread's CPU time.
 * Usage: bench_blockorder [MiB per side and round, default 64] [rounds,
 * default 6, made even] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b2s_blockorder.h"
#include "b2s_chunk.h"
#include "bench_images.h"

typedef struct bcase {
  const char *name;
  int32_t c[3], b[3];
  int codec, clevel, filter;
} bcase;

static const bcase CASES[] = {
  {"128x128 in 32x32, lz4 shuffle", {1, 128, 128}, {1, 32, 32},
   B2S_CODEC_LZ4, 5, B2S_FILTER_SHUFFLE},
  {"128x128 in 32x32, zstd 1 bitshuffle", {1, 128, 128}, {1, 32, 32},
   B2S_CODEC_ZSTD, 1, B2S_FILTER_BITSHUFFLE},
  {"1024x1024 in 128x128, lz4 shuffle", {1, 1024, 1024}, {1, 128, 128},
   B2S_CODEC_LZ4, 5, B2S_FILTER_SHUFFLE},
  {"1024x1024 in 128x128, zstd 1 bitshuffle", {1, 1024, 1024}, {1, 128, 128},
   B2S_CODEC_ZSTD, 1, B2S_FILTER_BITSHUFFLE},
  {"4x256x256 in 2x64x32, lz4 shuffle", {4, 256, 256}, {2, 64, 32},
   B2S_CODEC_LZ4, 5, B2S_FILTER_SHUFFLE},
};

/* This thread's CPU time: on a shared machine the sides' wall times
 * swing with the other processes' load, their CPU times much less. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { PLAIN, FUSED, GATHERED, GATHER_ONLY, MEMCPY, NSIDE };

typedef struct run {
  const bcase *k;
  b2s_blockorder o;
  b2s_cparams cp;
  b2s_ctx *ctx;
  uint8_t *imgs, *gather, *out;
  int nimg;
  size_t nbytes;
  long sink;
} run;

/* One side over every image; seconds. */
static double side(run *r, int s) {
  double t0 = now();
  size_t cap = r->nbytes + B2S_MAX_OVERHEAD;
  for (int i = 0; i < r->nimg; i++) {
    const uint8_t *src = r->imgs + (size_t)i * r->nbytes;
    if (s == MEMCPY) {               /* the same bytes copied in one run */
      memcpy(r->gather, src, r->nbytes);
      r->sink += r->gather[i % r->nbytes];
      continue;
    }
    if (s == FUSED) {
      r->sink += b2s_compress_blocks(r->ctx, &r->cp, &r->o, src,
                                     (int32_t)r->nbytes, r->out, (int32_t)cap);
      continue;
    }
    if (s != PLAIN) {
      b2s_blockorder_gather(&r->o, src, r->gather);
      src = r->gather;
    }
    if (s != GATHER_ONLY)
      r->sink += b2s_compress(r->ctx, &r->cp, src, (int32_t)r->nbytes, r->out,
                              (int32_t)cap);
    else
      r->sink += r->gather[i % r->nbytes];
  }
  return now() - t0;
}

static int setup(run *r, const bcase *k, size_t total) {
  memset(r, 0, sizeof *r);
  r->k = k;
  if (b2s_blockorder_init(&r->o, 3, k->c, k->b, 2, NULL) < 0 || !r->o.gather)
    return -1;
  r->nbytes = (size_t)r->o.nbytes;
  r->nimg = (int)(total / r->nbytes);
  if (r->nimg > 256)              /* a cycle of distinct images, then again */
    r->nimg = 256;
  r->cp = B2S_CPARAMS_DEFAULTS;
  r->cp.codec = k->codec;
  r->cp.clevel = k->clevel;
  r->cp.typesize = 2;
  r->cp.blocksize = 2 * k->b[0] * k->b[1] * k->b[2];
  r->cp.filters[5] = (uint8_t)k->filter;
  r->ctx = b2s_ctx_new();
  r->imgs = malloc(r->nbytes * (size_t)r->nimg);
  r->gather = malloc(r->nbytes);
  r->out = malloc(r->nbytes + B2S_MAX_OVERHEAD);
  if (!r->ctx || !r->imgs || !r->gather || !r->out)
    return -1;
  size_t npx = r->nbytes / 2;
  for (int i = 0; i < r->nimg; i++)
    bench_detector_image((uint16_t *)(r->imgs + (size_t)i * r->nbytes), npx, i);
  return 0;
}

static void teardown(run *r) {
  b2s_ctx_free(r->ctx);
  free(r->imgs);
  free(r->gather);
  free(r->out);
}

/* min / median / max over the rounds of side s's time over PLAIN's. */
static void ratio(double t[][NSIDE], int rounds, int s, double out[3]) {
  double v[64];
  for (int i = 0; i < rounds; i++)
    v[i] = t[i][s] / t[i][PLAIN];
  qsort(v, (size_t)rounds, sizeof v[0], cmp);
  out[0] = v[0];
  out[1] = v[rounds / 2];
  out[2] = v[rounds - 1];
}

static void report(const bcase *k, double t[][NSIDE], int rounds, double bytes) {
  double med[NSIDE];
  for (int s = 0; s < NSIDE; s++) {
    double v[64];
    for (int i = 0; i < rounds; i++)
      v[i] = t[i][s];
    qsort(v, (size_t)rounds, sizeof v[0], cmp);
    med[s] = v[rounds / 2];
  }
  double f[3], g[3];
  ratio(t, rounds, FUSED, f);
  ratio(t, rounds, GATHERED, g);
  printf("%s\n  MB/s: compress %.0f, compress_blocks %.0f, gather then compress "
         "%.0f, gather %.0f, memcpy %.0f\n"
         "  time / compress's: compress_blocks %.3f / %.3f / %.3f, gather then "
         "compress %.3f / %.3f / %.3f\n", k->name, bytes / med[PLAIN] / 1e6,
         bytes / med[FUSED] / 1e6, bytes / med[GATHERED] / 1e6,
         bytes / med[GATHER_ONLY] / 1e6, bytes / med[MEMCPY] / 1e6, f[0], f[1],
         f[2], g[0], g[1], g[2]);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64;
  int rounds = argc > 2 ? atoi(argv[2]) : 6;
  if (mib < 1)
    mib = 1;
  if (rounds < 2)
    rounds = 2;
  if (rounds > 64)
    rounds = 64;
  rounds += rounds % 2;
  printf("bench_blockorder: %zu MiB per side and round, %d rounds "
         "(min / median / max of the ratios)\n", mib, rounds);
  long sink = 0;
  for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
    run r;
    if (setup(&r, &CASES[c], mib << 20) < 0) {
      fprintf(stderr, "%s: cannot set up\n", CASES[c].name);
      return 1;
    }
    int reps = (int)((mib << 20) / (r.nbytes * (size_t)r.nimg));
    if (reps < 1)
      reps = 1;
    double t[64][NSIDE];
    for (int s = 0; s < NSIDE; s++)
      side(&r, s);                     /* warm-up */
    for (int i = 0; i < rounds; i++)
      for (int j = 0; j < NSIDE; j++) {
        int s = i % 2 ? NSIDE - 1 - j : j;
        t[i][s] = 0;
        for (int k = 0; k < reps; k++)
          t[i][s] += side(&r, s);
      }
    report(&CASES[c], t, rounds, (double)r.nbytes * r.nimg * reps);
    sink += r.sink;
    teardown(&r);
  }
  return sink == 42 ? 2 : 0;        /* keep the work */
}

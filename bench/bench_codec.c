/* Chunk codec benchmark: compress/decompress speed and ratio for every codec
 * x filter on three kinds of instrument-like data, each figure printed with
 * its ratio to baselines measured in the same run:
 *   memcpy     - copying the same bytes;
 *   direct     - the codec library called directly on the same chunks
 *                (no blocking, no filters): what the format costs or gains;
 *   c-blosc2   - the reference library with the same parameters and one
 *                thread, when built with it (pkg-config blosc2).
 * Usage: bench_codec [MiB per data set, default 16] [clevel, default 5] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lz4.h>
#include <lz4hc.h>
#include <zlib.h>
#include <zstd.h>

#include "b2s_chunk.h"
#include "b2s_names.h"
#ifdef B2S_BENCH_BLOSC2
#include <blosc2.h>
#endif

#define CHUNK (4 << 20)

typedef struct dataset {
  const char *name;
  int typesize;
  uint8_t *data;
  size_t size;
} dataset;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint32_t lcg(uint32_t *x) {
  *x = *x * 1103515245u + 12345u;
  return *x >> 16 & 0x7fff;
}

/* float32 ramp with noise: slow signal plus low-order jitter. */
static void make_f32(uint8_t *p, size_t n) {
  uint32_t x = 1;
  for (size_t i = 0; i < n / 4; i++) {
    float f = (float)((double)i * 0.01 + lcg(&x) * (0.001 / 32768.0));
    memcpy(p + 4 * i, &f, 4);
  }
}

/* uint16 detector frames: dark background with shot noise and a few bright
 * peaks, 1024 x 1024 pixels per frame. */
static void make_u16(uint8_t *p, size_t n) {
  uint32_t x = 7;
  for (size_t i = 0; i < n / 2; i++) {
    size_t col = i % 1024, row = (i / 1024) % 1024;
    uint32_t v = 100 + lcg(&x) % 16;
    size_t dr = row > 512 ? row - 512 : 512 - row, dc = col > 300 ? col - 300 : 300 - col;
    if (dr < 20 && dc < 20)
      v += 3000 - 100 * (uint32_t)(dr + dc);
    uint16_t s = (uint16_t)v;
    memcpy(p + 2 * i, &s, 2);
  }
}

static void make_text(uint8_t *p, size_t n) {
  static const char *w[] = {"detector", "frame", "beam", "sample", "the", "of",
                            "shutter", "exposure", "temperature", "and", "a",
                            "motor", "position", "run", "scan", "stream"};
  uint32_t x = 3;
  size_t i = 0;
  for (int k = 0; i < n; k++) {
    const char *s = w[lcg(&x) & 15];
    for (; *s && i < n; s++)
      p[i++] = (uint8_t)*s;
    if (i < n)
      p[i++] = k % 10 == 9 ? '\n' : ' ';
  }
}

static double bench_memcpy(const dataset *d) {
  uint8_t *dst = malloc(d->size);
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
    double t = now();
    memcpy(dst, d->data, d->size);
    t = now() - t;
    best = t < best ? t : best;
    /* Read the copy back so the compiler cannot drop it. */
    if (memcmp(dst, d->data, d->size) != 0)
      abort();
  }
  free(dst);
  return (double)d->size / best / 1e9;
}

typedef struct result {
  double cspeed, dspeed, ratio;
} result;

/* Best of `reps` passes over the data set, chunk by chunk. */
typedef int (*comp_fn)(void *st, const uint8_t *src, int n, uint8_t *dst, int cap);
typedef int (*decomp_fn)(void *st, const uint8_t *src, int n, uint8_t *dst, int cap);

static result run(const dataset *d, void *st, comp_fn c, decomp_fn dc, int reps) {
  size_t nchunks = (d->size + CHUNK - 1) / CHUNK;
  uint8_t *comp = malloc(nchunks * (CHUNK + 64 + CHUNK / 16));
  int *csz = calloc(nchunks, sizeof(int));
  uint8_t *out = malloc(CHUNK);
  result r = {0, 0, 0};
  double bc = 1e9, bd = 1e9;
  size_t total = 0;
  for (int rep = 0; rep < reps; rep++) {
    double t = now();
    total = 0;
    for (size_t k = 0; k < nchunks; k++) {
      size_t n = d->size - k * CHUNK < CHUNK ? d->size - k * CHUNK : CHUNK;
      csz[k] = c(st, d->data + k * CHUNK, (int)n, comp + k * (CHUNK + 64 + CHUNK / 16),
                 CHUNK + 64 + CHUNK / 16);
      if (csz[k] <= 0) {
        fprintf(stderr, "compression failed: %d\n", csz[k]);
        exit(1);
      }
      total += (size_t)csz[k];
    }
    t = now() - t;
    bc = t < bc ? t : bc;
    t = now();
    for (size_t k = 0; k < nchunks; k++) {
      size_t n = d->size - k * CHUNK < CHUNK ? d->size - k * CHUNK : CHUNK;
      int got = dc(st, comp + k * (CHUNK + 64 + CHUNK / 16), csz[k], out, (int)n);
      if (got != (int)n || memcmp(out, d->data + k * CHUNK, n) != 0) {
        fprintf(stderr, "round trip failed on chunk %zu\n", k);
        exit(1);
      }
    }
    t = now() - t;
    bd = t < bd ? t : bd;
  }
  r.cspeed = (double)d->size / bc / 1e9;
  r.dspeed = (double)d->size / bd / 1e9;
  r.ratio = (double)d->size / (double)total;
  free(comp);
  free(csz);
  free(out);
  return r;
}

/* --- b2stream ------------------------------------------------------------ */
typedef struct ours {
  b2s_ctx *ctx;
  b2s_cparams cp;
} ours;

static int ours_c(void *st, const uint8_t *s, int n, uint8_t *d, int cap) {
  ours *o = st;
  return b2s_compress(o->ctx, &o->cp, s, n, d, cap);
}
static int ours_d(void *st, const uint8_t *s, int n, uint8_t *d, int cap) {
  return b2s_decompress(((ours *)st)->ctx, s, (size_t)n, d, (size_t)cap);
}

/* --- the codec library alone ---------------------------------------------- */
typedef struct direct {
  int codec, clevel;
  void *state;
  ZSTD_CCtx *zc;
  ZSTD_DCtx *zd;
} direct;

static int direct_c(void *st, const uint8_t *s, int n, uint8_t *d, int cap) {
  direct *o = st;
  switch (o->codec) {
  case B2S_CODEC_LZ4:
    return LZ4_compress_fast_extState(o->state, (const char *)s, (char *)d, n, cap, 10 - o->clevel);
  case B2S_CODEC_LZ4HC:
    return LZ4_compress_HC_extStateHC(o->state, (const char *)s, (char *)d, n, cap, o->clevel);
  case B2S_CODEC_ZLIB: {
    uLongf len = (uLongf)cap;
    return compress2(d, &len, s, (uLong)n, o->clevel) == Z_OK ? (int)len : -1;
  }
  default: {
    size_t r = ZSTD_compressCCtx(o->zc, d, (size_t)cap, s, (size_t)n,
                                 o->clevel < 9 ? 2 * o->clevel - 1 : ZSTD_maxCLevel());
    return ZSTD_isError(r) ? -1 : (int)r;
  }
  }
}

static int direct_d(void *st, const uint8_t *s, int n, uint8_t *d, int cap) {
  direct *o = st;
  switch (o->codec) {
  case B2S_CODEC_LZ4:
  case B2S_CODEC_LZ4HC:
    return LZ4_decompress_safe((const char *)s, (char *)d, n, cap);
  case B2S_CODEC_ZLIB: {
    uLongf len = (uLongf)cap;
    return uncompress(d, &len, s, (uLong)n) == Z_OK ? (int)len : -1;
  }
  default: {
    size_t r = ZSTD_decompressDCtx(o->zd, d, (size_t)cap, s, (size_t)n);
    return ZSTD_isError(r) ? -1 : (int)r;
  }
  }
}

#ifdef B2S_BENCH_BLOSC2
typedef struct ref {
  blosc2_context *c, *d;
} ref;
static int ref_c(void *st, const uint8_t *s, int n, uint8_t *d, int cap) {
  return blosc2_compress_ctx(((ref *)st)->c, s, n, d, cap);
}
static int ref_d(void *st, const uint8_t *s, int n, uint8_t *d, int cap) {
  return blosc2_decompress_ctx(((ref *)st)->d, s, n, d, cap);
}
#endif

/* Sums of log ratios against the baselines, for the closing summary. */
static struct {
  double c_dir, d_dir, c_b2, d_b2, worst_c_b2, worst_d_b2;
  int n;
} summary = {0, 0, 0, 0, 1e9, 1e9, 0};

static void bench_one(const dataset *d, int codec, int filter, int clevel,
                      double mcpy, b2s_ctx *ctx) {
  int reps = codec == B2S_CODEC_LZ4 ? 5 : 2;
  ours o = {ctx, B2S_CPARAMS_DEFAULTS};
  o.cp.codec = codec;
  o.cp.clevel = clevel;
  o.cp.typesize = d->typesize;
  o.cp.filters[5] = (uint8_t)filter;
  result a = run(d, &o, ours_c, ours_d, reps);

  direct dr = {codec, clevel, NULL, ZSTD_createCCtx(), ZSTD_createDCtx()};
  dr.state = codec == B2S_CODEC_LZ4HC ? (void *)LZ4_createStreamHC()
                                      : malloc((size_t)LZ4_sizeofState());
  result b = run(d, &dr, direct_c, direct_d, reps);
  printf("%-6s %-6s %-10s %6.2f %6.2f %7.2f %6.2f %6.3f %5.2f  %6.2f %5.2f %6.2f",
         d->name, b2s_codec_name(codec), b2s_filter_name(filter), a.ratio, a.cspeed, a.dspeed,
         a.cspeed / mcpy, a.dspeed / mcpy, b.ratio, a.cspeed / b.cspeed,
         a.dspeed / b.dspeed, a.ratio / b.ratio);
  summary.n++;
  summary.c_dir += log(a.cspeed / b.cspeed);
  summary.d_dir += log(a.dspeed / b.dspeed);
  if (codec == B2S_CODEC_LZ4HC)
    LZ4_freeStreamHC(dr.state);
  else
    free(dr.state);
  ZSTD_freeCCtx(dr.zc);
  ZSTD_freeDCtx(dr.zd);
#ifdef B2S_BENCH_BLOSC2
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.compcode = (uint8_t)codec;
  cp.clevel = (uint8_t)clevel;
  cp.typesize = d->typesize;
  cp.nthreads = 1;
  cp.filters[5] = (uint8_t)filter;
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS;
  ref rf = {blosc2_create_cctx(cp), blosc2_create_dctx(dp)};
  result c = run(d, &rf, ref_c, ref_d, reps);
  printf("  %6.2f %6.2f %7.2f  %5.2f %5.2f", c.ratio, c.cspeed, c.dspeed,
         a.cspeed / c.cspeed, a.dspeed / c.dspeed);
  summary.c_b2 += log(a.cspeed / c.cspeed);
  summary.d_b2 += log(a.dspeed / c.dspeed);
  summary.worst_c_b2 = fmin(summary.worst_c_b2, a.cspeed / c.cspeed);
  summary.worst_d_b2 = fmin(summary.worst_d_b2, a.dspeed / c.dspeed);
  blosc2_free_ctx(rf.c);
  blosc2_free_ctx(rf.d);
#endif
  printf("\n");
  fflush(stdout);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 16;
  int clevel = argc > 2 ? atoi(argv[2]) : 5;
  if (mib < 1 || clevel < 1 || clevel > 9) {
    fprintf(stderr, "usage: bench_codec [MiB >= 1] [clevel 1..9]\n");
    return 2;
  }
#ifdef B2S_BENCH_BLOSC2
  blosc2_init();
#endif
  dataset sets[3] = {{"f32", 4, NULL, mib << 20}, {"u16det", 2, NULL, mib << 20},
                     {"text", 1, NULL, mib << 20}};
  void (*make[3])(uint8_t *, size_t) = {make_f32, make_u16, make_text};
  b2s_ctx *ctx = b2s_ctx_new();
  printf("b2stream chunk codec, %zu MiB per data set, %d MiB chunks, clevel %d, one thread\n",
         mib, CHUNK >> 20, clevel);
  printf("speeds in GB/s; x = ours / baseline\n");
  printf("%-6s %-6s %-10s %6s %6s %7s %6s %6s %5s  %6s %5s %6s", "data", "codec",
         "filter", "ratio", "comp", "decomp", "c/mcpy", "d/mcpy", "dir.r",
         "c/dir", "d/dir", "r/dir");
#ifdef B2S_BENCH_BLOSC2
  printf("  %6s %6s %7s  %5s %5s", "b2.rat", "b2.c", "b2.d", "c/b2", "d/b2");
#endif
  printf("\n");
  int codecs[] = {B2S_CODEC_LZ4, B2S_CODEC_LZ4HC, B2S_CODEC_ZSTD, B2S_CODEC_ZLIB};
  for (int s = 0; s < 3; s++) {
    sets[s].data = malloc(sets[s].size);
    make[s](sets[s].data, sets[s].size);
    double mcpy = bench_memcpy(&sets[s]);
    printf("%-6s memcpy %.2f GB/s\n", sets[s].name, mcpy);
    for (int c = 0; c < 4; c++)
      for (int f = 0; f < 3; f++)
        bench_one(&sets[s], codecs[c], f, clevel, mcpy, ctx);
    free(sets[s].data);
  }
  b2s_ctx_free(ctx);
  printf("geometric mean over %d configurations: compress %.2fx, decompress %.2fx"
         " the codec library called directly\n",
         summary.n, exp(summary.c_dir / summary.n), exp(summary.d_dir / summary.n));
#ifdef B2S_BENCH_BLOSC2
  printf("geometric mean vs c-blosc2: compress %.2fx (worst %.2fx), decompress %.2fx"
         " (worst %.2fx)\n", exp(summary.c_b2 / summary.n), summary.worst_c_b2,
         exp(summary.d_b2 / summary.n), summary.worst_d_b2);
  blosc2_destroy();
#endif
  return 0;
}

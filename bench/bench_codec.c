/* Chunk codec benchmark: compress/decompress speed and ratio for every codec
 * x filter on three kinds of instrument-like data, each figure printed with
 * its ratio to baselines measured in the same run:
 *   memcpy     - copying the same bytes;
 *   direct     - the codec library called directly on the same chunks
 *                (no blocking, no filters): what the format costs or gains;
 *   c-blosc2   - the reference library with the same parameters and one
 *                thread, when built with it (pkg-config blosc2).
 * Every side runs on the same chunk in turn (order flipped every round), so
 * a load swing on a shared machine hits all of them alike; each ratio is
 * printed as min / median / max over the rounds.
 * Usage: bench_codec [MiB per data set, default 16] [clevel, default 5]
 *                    [rounds, default 6, made even] [data set] [codec] [filter]
 * ("all" for data set or codec runs every one; the filter restricts the rows
 * to none, shuffle or bitshuffle, e.g. to profile one filter alone). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lz4.h>
#include <lz4hc.h>
#include <zlib.h>
#include <zstd.h>

#include "bench_stats.h"
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

typedef int (*comp_fn)(void *st, const uint8_t *src, int n, uint8_t *dst, int cap);
typedef int (*decomp_fn)(void *st, const uint8_t *src, int n, uint8_t *dst, int cap);

#define SLOT (CHUNK + 64 + CHUNK / 16)
#define MAX_SIDES 4
#define MAX_ROUNDS 64

/* One contender: ours (always side 0) or a baseline.  Each keeps its own
 * compressed copy of the data set and its times for the current round. */
typedef struct side {
  const char *name;
  void *st;
  comp_fn c;
  decomp_fn d;
  uint8_t *comp;
  int *csz;
  size_t total;
  double ct, dt;
  double cr[MAX_ROUNDS], dr[MAX_ROUNDS]; /* baseline time / our time */
} side;

static size_t chunk_len(const dataset *d, size_t k) {
  return d->size - k * CHUNK < CHUNK ? d->size - k * CHUNK : CHUNK;
}

/* Side index at position i of round r: forward on even rounds, backward on
 * odd ones, so every baseline runs as often before ours as after it. */
static int order(int r, int i, int n) {
  return r % 2 == 0 ? i : n - 1 - i;
}

static void compress_chunk(const dataset *d, side *s, size_t k) {
  double t = now();
  s->csz[k] = s->c(s->st, d->data + k * CHUNK, (int)chunk_len(d, k), s->comp + k * SLOT, SLOT);
  s->ct += now() - t;
  if (s->csz[k] <= 0) {
    fprintf(stderr, "%s: compression failed: %d\n", s->name, s->csz[k]);
    exit(1);
  }
  s->total += (size_t)s->csz[k];
}

static void decompress_chunk(const dataset *d, side *s, size_t k, uint8_t *out) {
  size_t n = chunk_len(d, k);
  double t = now();
  int got = s->d(s->st, s->comp + k * SLOT, s->csz[k], out, (int)n);
  s->dt += now() - t;
  /* Checked outside the timed call; also keeps the work observable. */
  if (got != (int)n || memcmp(out, d->data + k * CHUNK, n) != 0) {
    fprintf(stderr, "%s: round trip failed on chunk %zu\n", s->name, k);
    exit(1);
  }
}

/* One round: every chunk compressed by every side in turn, then every chunk
 * decompressed likewise.  Interleaving chunk by chunk puts each side under
 * the same machine load as the others, whatever the neighbours do. */
static void round_once(const dataset *d, side *sd, int n, int r, uint8_t *out) {
  size_t nchunks = (d->size + CHUNK - 1) / CHUNK;
  for (int i = 0; i < n; i++)
    sd[i].ct = sd[i].dt = 0, sd[i].total = 0;
  for (size_t k = 0; k < nchunks; k++)
    for (int i = 0; i < n; i++)
      compress_chunk(d, &sd[order(r, i, n)], k);
  for (size_t k = 0; k < nchunks; k++)
    for (int i = 0; i < n; i++)
      decompress_chunk(d, &sd[order(r, i, n)], k, out);
}

/* Our chunks and c-blosc2's are the same bytes: a benchmark of chunks that
 * differ would compare different work. */
static void same_chunks(const dataset *d, const side *sd, int n) {
  size_t nchunks = (d->size + CHUNK - 1) / CHUNK;
  for (int i = 1; i < n; i++) {
    if (strcmp(sd[i].name, "c-blosc2") != 0)
      continue;
    for (size_t k = 0; k < nchunks; k++)
      if (sd[i].csz[k] != sd[0].csz[k] ||
          memcmp(sd[i].comp + k * SLOT, sd[0].comp + k * SLOT, (size_t)sd[0].csz[k]) != 0) {
        fprintf(stderr, "%s: chunk %zu differs from c-blosc2's\n", d->name, k);
        exit(1);
      }
  }
}

/* A warm-up round, then `rounds` (even) timed ones.  Returns our median
 * speeds; each baseline's per-round ratios land in its cr/dr. */
static void run_sides(const dataset *d, side *sd, int n, int rounds, double *cspeed,
                      double *dspeed) {
  size_t nchunks = (d->size + CHUNK - 1) / CHUNK;
  uint8_t *out = malloc(CHUNK);
  double cs[MAX_ROUNDS], ds[MAX_ROUNDS], m[3];
  for (int i = 0; i < n; i++) {
    sd[i].comp = malloc(nchunks * SLOT);
    sd[i].csz = calloc(nchunks, sizeof(int));
  }
  round_once(d, sd, n, 1, out); /* warm-up: caches, page faults, codec state */
  same_chunks(d, sd, n);
  for (int r = 0; r < rounds; r++) {
    round_once(d, sd, n, r, out);
    cs[r] = (double)d->size / sd[0].ct / 1e9;
    ds[r] = (double)d->size / sd[0].dt / 1e9;
    for (int i = 1; i < n; i++) {
      sd[i].cr[r] = sd[i].ct / sd[0].ct;
      sd[i].dr[r] = sd[i].dt / sd[0].dt;
    }
  }
  bench_spread(cs, rounds, m);
  *cspeed = m[1];
  bench_spread(ds, rounds, m);
  *dspeed = m[1];
  for (int i = 0; i < n; i++) {
    free(sd[i].comp);
    free(sd[i].csz);
  }
  free(out);
}

/* --- memcpy ---------------------------------------------------------------- */
static int copy_c(void *st, const uint8_t *s, int n, uint8_t *d, int cap) {
  (void)st;
  (void)cap;
  memcpy(d, s, (size_t)n);
  return n;
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

/* Sums of log median ratios and the worst medians, for the closing summary. */
typedef struct tally {
  double c, d, worst_c, worst_d;
  int n;
} tally;

/* Per baseline, and per filter for c-blosc2 (each filter has its own kernels,
 * so a lead on one must not hide a lag on another). */
static tally summary[MAX_SIDES], ref_by_filter[3];
static const char *baseline_names[MAX_SIDES];

static void tally_add(tally *t, double c, double d) {
  t->n++;
  t->c += log(c);
  t->d += log(d);
  t->worst_c = t->n == 1 ? c : fmin(t->worst_c, c);
  t->worst_d = t->n == 1 ? d : fmin(t->worst_d, d);
}

static void tally_print(const tally *t, const char *what) {
  printf("geometric mean of medians over %d configurations vs %s: compress %.2fx"
         " (worst %.2fx), decompress %.2fx (worst %.2fx)\n",
         t->n, what, exp(t->c / t->n), t->worst_c, exp(t->d / t->n), t->worst_d);
}

/* Summary slot of the baseline called `name`, so like adds to like. */
static int slot_of(const char *name) {
  int i = 0;
  while (baseline_names[i] && strcmp(baseline_names[i], name) != 0)
    i++;
  baseline_names[i] = name;
  return i;
}

static void report(const dataset *d, int codec, int filter, const side *sd, int n,
                   int rounds, double cspeed, double dspeed) {
  for (int i = 1; i < n; i++) {
    double c[3], dd[3];
    bench_spread(sd[i].cr, rounds, c);
    bench_spread(sd[i].dr, rounds, dd);
    printf("%-6s %-7s %-10s %6.2f %6.2f %7.2f  %-8s %5.2f %5.2f %5.2f  %5.2f %5.2f %5.2f %6.2f\n",
           d->name, b2s_codec_name(codec), b2s_filter_name(filter),
           (double)d->size / (double)sd[0].total, cspeed, dspeed, sd[i].name, c[0], c[1],
           c[2], dd[0], dd[1], dd[2], (double)d->size / (double)sd[i].total);
    tally_add(&summary[slot_of(sd[i].name)], c[1], dd[1]);
    if (strcmp(sd[i].name, "c-blosc2") == 0 && filter >= 0 && filter < 3)
      tally_add(&ref_by_filter[filter], c[1], dd[1]);
  }
  fflush(stdout);
}

/* Ours against every baseline at once; BloscLZ has no library of its own,
 * so it has no direct side. */
static void bench_one(const dataset *d, int codec, int filter, int clevel, int rounds,
                      b2s_ctx *ctx) {
  side sd[MAX_SIDES];
  memset(sd, 0, sizeof(sd));
  int n = 0;
  ours o = {ctx, B2S_CPARAMS_DEFAULTS};
  o.cp.codec = codec;
  o.cp.clevel = clevel;
  o.cp.typesize = d->typesize;
  o.cp.filters[5] = (uint8_t)filter;
  sd[n++] = (side){.name = "b2stream", .st = &o, .c = ours_c, .d = ours_d};
  sd[n++] = (side){.name = "memcpy", .c = copy_c, .d = copy_c};
  direct dr = {codec, clevel, NULL, ZSTD_createCCtx(), ZSTD_createDCtx()};
  dr.state = codec == B2S_CODEC_LZ4HC ? (void *)LZ4_createStreamHC()
                                      : malloc((size_t)LZ4_sizeofState());
  if (codec != B2S_CODEC_BLOSCLZ)
    sd[n++] = (side){.name = "direct", .st = &dr, .c = direct_c, .d = direct_d};
#ifdef B2S_BENCH_BLOSC2
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.compcode = (uint8_t)codec;
  cp.clevel = (uint8_t)clevel;
  cp.typesize = d->typesize;
  cp.nthreads = 1;
  cp.filters[5] = (uint8_t)filter;
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS;
  ref rf = {blosc2_create_cctx(cp), blosc2_create_dctx(dp)};
  sd[n++] = (side){.name = "c-blosc2", .st = &rf, .c = ref_c, .d = ref_d};
#endif
  double cspeed, dspeed;
  run_sides(d, sd, n, rounds, &cspeed, &dspeed);
  report(d, codec, filter, sd, n, rounds, cspeed, dspeed);
#ifdef B2S_BENCH_BLOSC2
  blosc2_free_ctx(rf.c);
  blosc2_free_ctx(rf.d);
#endif
  if (codec == B2S_CODEC_LZ4HC)
    LZ4_freeStreamHC(dr.state);
  else
    free(dr.state);
  ZSTD_freeCCtx(dr.zc);
  ZSTD_freeDCtx(dr.zd);
}

static void print_header(int rounds) {
  printf("speeds in GB/s (ours, median of %d rounds after a warm-up); x = baseline time /"
         " our time per round, sides interleaved chunk by chunk, order flipped each round\n",
         rounds);
  printf("%-6s %-7s %-10s %6s %6s %7s  %-8s %5s %5s %5s  %5s %5s %5s %6s\n", "data",
         "codec", "filter", "ratio", "comp", "decomp", "vs", "c.min", "c.med", "c.max",
         "d.min", "d.med", "d.max", "b.rat");
}

static void print_summary(void) {
  for (int k = 0; k < MAX_SIDES && baseline_names[k]; k++)
    tally_print(&summary[k], baseline_names[k]);
  char what[64];
  for (int f = 0; f < 3; f++)
    if (ref_by_filter[f].n > 0) {
      snprintf(what, sizeof(what), "c-blosc2, %s rows only", b2s_filter_name(f));
      tally_print(&ref_by_filter[f], what);
    }
#ifndef B2S_BENCH_BLOSC2
  printf("no c-blosc2 figures: pkg-config found no blosc2 when this was built\n");
#endif
}

/* Usage: bench_codec [MiB] [clevel] [rounds] [data set] [codec] */
int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 16;
  int clevel = argc > 2 ? atoi(argv[2]) : 5;
  int rounds = argc > 3 ? atoi(argv[3]) : 6;
  const char *only_set = argc > 4 && strcmp(argv[4], "all") != 0 ? argv[4] : NULL;
  bool all_codecs = argc <= 5 || strcmp(argv[5], "all") == 0;
  int only_codec = all_codecs ? -1 : b2s_codec_from_name(argv[5]);
  int only_filter = argc > 6 ? b2s_filter_from_name(argv[6]) : -1;
  rounds += rounds % 2; /* even, so both orders run equally often */
  if (mib < 1 || clevel < 1 || clevel > 9 || rounds < 2 || rounds > MAX_ROUNDS ||
      (!all_codecs && only_codec < 0) || (argc > 6 && (only_filter < 0 || only_filter > 2))) {
    fprintf(stderr, "usage: bench_codec [MiB >= 1] [clevel 1..9] [rounds 2..%d]"
                    " [f32|u16det|text|all] [codec|all] [none|shuffle|bitshuffle]\n",
            MAX_ROUNDS);
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
  print_header(rounds);
  int codecs[] = {B2S_CODEC_BLOSCLZ, B2S_CODEC_LZ4, B2S_CODEC_LZ4HC, B2S_CODEC_ZSTD,
                  B2S_CODEC_ZLIB};
  for (int s = 0; s < 3; s++) {
    if (only_set && strcmp(only_set, sets[s].name) != 0)
      continue;
    sets[s].data = malloc(sets[s].size);
    make[s](sets[s].data, sets[s].size);
    for (int c = 0; c < 5; c++)
      for (int f = 0; f < 3; f++)
        if ((only_codec < 0 || only_codec == codecs[c]) &&
            (only_filter < 0 || only_filter == f))
          bench_one(&sets[s], codecs[c], f, clevel, rounds, ctx);
    free(sets[s].data);
  }
  b2s_ctx_free(ctx);
  print_summary();
#ifdef B2S_BENCH_BLOSC2
  blosc2_destroy();
#endif
  return 0;
}

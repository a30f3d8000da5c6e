/* Shuffle kernels alone: b2s_shuffle, b2s_unshuffle, b2s_bitshuffle and
 * b2s_bitunshuffle on blocks of the size the chunk encoder cuts, against
 * c-blosc2's exported kernels (blosc2_shuffle, ...) when built with it, and
 * against memcpy of the same bytes.
 *   bench_shuffle [MiB per side, default 64] [rounds, default 8, made even]
 * Each side works through blocks of a region of its own, the items side in
 * the region and the rows side in a scratch block (as the encoder reads a
 * chunk into its filter scratch and the decoder writes from it into the
 * caller's buffer): with regions larger than the caches, the items side is
 * cold as it is in a real chunk.  Sides alternate block by block, the order
 * flipping every block and round; each ratio is min / median / max over the
 * rounds of the baseline's time / ours.
 *   bench_shuffle --one KERNEL TYPESIZE BYTES REPS [ours|c-blosc2]
 * runs one kernel REPS times on one fixed block, inside one_run(), for
 * instruction counts: valgrind --tool=callgrind --toggle-collect=one_run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "b2s_shuffle.h"
#ifdef B2S_BENCH_BLOSC2
#include <blosc2.h>
#endif

#define MAX_ROUNDS 64

typedef void (*kernel_fn)(size_t ts, size_t size, const uint8_t *src, uint8_t *dst);

typedef struct kernel {
  const char *name;
  kernel_fn ours, ref;
  int to_items; /* 1: rows -> items (the items side is written) */
} kernel;

static void copy_k(size_t ts, size_t size, const uint8_t *src, uint8_t *dst) {
  (void)ts;
  memcpy(dst, src, size);
}

#ifdef B2S_BENCH_BLOSC2
static void ref_shuffle(size_t ts, size_t size, const uint8_t *src, uint8_t *dst) {
  blosc2_shuffle((int32_t)ts, (int32_t)size, src, dst);
}
static void ref_unshuffle(size_t ts, size_t size, const uint8_t *src, uint8_t *dst) {
  blosc2_unshuffle((int32_t)ts, (int32_t)size, src, dst);
}
static void ref_bitshuffle(size_t ts, size_t size, const uint8_t *src, uint8_t *dst) {
  blosc2_bitshuffle((int32_t)ts, (int32_t)size, src, dst);
}
static void ref_bitunshuffle(size_t ts, size_t size, const uint8_t *src, uint8_t *dst) {
  blosc2_bitunshuffle((int32_t)ts, (int32_t)size, src, dst);
}
#define REF(f) ref_##f
#else
#define REF(f) NULL
#endif

static const kernel kernels[] = {
    {"shuffle", b2s_shuffle, REF(shuffle), 0},
    {"unshuffle", b2s_unshuffle, REF(unshuffle), 1},
    {"bitshuffle", b2s_bitshuffle, REF(bitshuffle), 0},
    {"bitunshuffle", b2s_bitunshuffle, REF(bitunshuffle), 1},
};

/* The block b2s_compress cuts for lz4 at clevel 5: split into one stream
 * per byte of the item with shuffle (64 KiB each), 128 KiB otherwise. */
static size_t block_for(const kernel *k, size_t ts) {
  return k->name[0] == 'b' ? 128 << 10 : ts * (64 << 10);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Not random: each byte differs from its neighbours and from the same byte
 * of the next item, so no kernel can take a shortcut. */
static void fill(uint8_t *p, size_t n, uint32_t seed) {
  uint32_t x = seed;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (uint8_t)(x >> 24);
  }
}

enum { SIDES = 3 };

typedef struct side {
  kernel_fn fn;
  uint8_t *region, *scratch;
  double t;
} side;

/* One block of one side: the items in the region, the rows in scratch. */
static void run_block(const kernel *k, side *s, size_t ts, size_t block, size_t b) {
  uint8_t *items = s->region + b * block;
  double t = now();
  if (k->to_items)
    s->fn(ts, block, s->scratch, items);
  else
    s->fn(ts, block, items, s->scratch);
  s->t += now() - t;
}

/* Ours and the reference write the same bytes; checked once, untimed. */
static void check_same(const kernel *k, size_t ts, size_t block) {
  if (!k->ref)
    return;
  uint8_t *in = calloc(1, block), *a = malloc(block), *b = malloc(block);
  fill(in, block, 99);
  k->ours(ts, block, in, a);
  k->ref(ts, block, in, b);
  if (memcmp(a, b, block) != 0) {
    fprintf(stderr, "%s typesize %zu: ours and c-blosc2's differ\n", k->name, ts);
    exit(1);
  }
  free(in);
  free(a);
  free(b);
}

static void bench_one(const kernel *k, size_t ts, size_t mib, int rounds) {
  size_t block = block_for(k, ts), nblocks = (mib << 20) / block;
  if (nblocks == 0)
    nblocks = 1;
  check_same(k, ts, block);
  side sd[SIDES] = {{k->ours, 0, 0, 0}, {copy_k, 0, 0, 0}, {k->ref, 0, 0, 0}};
  int n = k->ref ? 3 : 2;
  for (int i = 0; i < n; i++) {
    sd[i].region = malloc(nblocks * block);
    sd[i].scratch = malloc(block);
    fill(sd[i].region, nblocks * block, 1);
    fill(sd[i].scratch, block, 2);
  }
  double ratio[SIDES][MAX_ROUNDS], speed[MAX_ROUNDS];
  for (int r = -1; r < rounds; r++) { /* round -1 warms up */
    for (int i = 0; i < n; i++)
      sd[i].t = 0;
    for (size_t b = 0; b < nblocks; b++)
      for (int i = 0; i < n; i++) {
        int j = (b + (size_t)(r + 1)) % 2 ? n - 1 - i : i;
        run_block(k, &sd[j], ts, block, b);
      }
    if (r < 0)
      continue;
    speed[r] = (double)(nblocks * block) / sd[0].t / 1e9;
    for (int i = 1; i < n; i++)
      ratio[i][r] = sd[i].t / sd[0].t;
  }
  double m[3], c[3];
  bench_spread(speed, rounds, m);
  bench_spread(ratio[1], rounds, c);
  printf("%-12s %2zu %7zu %7.2f  %5.2f %5.2f %5.2f", k->name, ts, block, m[1], c[0], c[1], c[2]);
  if (n == 3) {
    bench_spread(ratio[2], rounds, c);
    printf("  %5.2f %5.2f %5.2f", c[0], c[1], c[2]);
  }
  printf("\n");
  fflush(stdout);
  for (int i = 0; i < n; i++) {
    free(sd[i].region);
    free(sd[i].scratch);
  }
}

/* Kept out of line so that callgrind can count it alone. */
__attribute__((noinline)) static void one_run(kernel_fn fn, size_t ts, size_t size,
                                              const uint8_t *in, uint8_t *out, long reps) {
  for (long i = 0; i < reps; i++)
    fn(ts, size, in, out);
}

static int run_one(int argc, char **argv) {
  const kernel *k = NULL;
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
    if (argc > 2 && strcmp(argv[2], kernels[i].name) == 0)
      k = &kernels[i];
  long ts = argc > 3 ? atol(argv[3]) : 0, size = argc > 4 ? atol(argv[4]) : 0;
  long reps = argc > 5 ? atol(argv[5]) : 0;
  int use_ref = argc > 6 && strcmp(argv[6], "c-blosc2") == 0;
  if (!k || ts < 1 || ts > 255 || size < 1 || reps < 1 ||
      (argc > 6 && !use_ref && strcmp(argv[6], "ours") != 0)) {
    fprintf(stderr, "usage: bench_shuffle --one shuffle|unshuffle|bitshuffle|bitunshuffle"
                    " TYPESIZE BYTES REPS [ours|c-blosc2]\n");
    return 2;
  }
  if (use_ref && !k->ref) {
    fprintf(stderr, "bench_shuffle: built without c-blosc2\n");
    return 2;
  }
  uint8_t *in = malloc((size_t)size), *out = malloc((size_t)size);
  fill(in, (size_t)size, 99);
  one_run(use_ref ? k->ref : k->ours, (size_t)ts, (size_t)size, in, out, reps);
  uint64_t sum = 0;
  for (long i = 0; i < size; i++)
    sum = sum * 31 + out[i];
  printf("%s typesize %ld, %ld bytes x %ld (%s, level %d): output checksum %016llx\n",
         k->name, ts, size, reps, use_ref ? "c-blosc2" : "ours", b2s_simd_level(),
         (unsigned long long)sum);
  free(in);
  free(out);
  return 0;
}

int main(int argc, char **argv) {
#ifdef B2S_BENCH_BLOSC2
  blosc2_init();
#endif
  int rc = 0;
  if (argc > 1 && strcmp(argv[1], "--one") == 0) {
    rc = run_one(argc, argv);
  } else {
    long mib = argc > 1 ? atol(argv[1]) : 64;
    int rounds = argc > 2 ? atoi(argv[2]) : 8;
    rounds += rounds % 2;
    if (mib < 1 || rounds < 2 || rounds > MAX_ROUNDS) {
      fprintf(stderr, "usage: bench_shuffle [MiB >= 1] [rounds 2..%d]\n", MAX_ROUNDS);
      return 2;
    }
    printf("shuffle kernels, SIMD level %d, %ld MiB per side, %d rounds after a warm-up;"
           " GB/s ours (median); x = baseline time / ours, min median max\n",
           b2s_simd_level(), mib, rounds);
    printf("%-12s %2s %7s %7s  %-17s  %s\n", "kernel", "ts", "block", "GB/s", "x memcpy",
           kernels[0].ref ? "x c-blosc2" : "(no c-blosc2: pkg-config found none)");
    static const size_t sizes[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
      for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++)
        if (sizes[t] > 1 || kernels[i].name[0] == 'b') /* byte shuffle of 1: a copy */
          bench_one(&kernels[i], sizes[t], (size_t)mib, rounds);
  }
#ifdef B2S_BENCH_BLOSC2
  blosc2_destroy();
#endif
  return rc;
}

/* The LZ4 sequence walk that vouches for detector streams
 * (b2s_lz4_block_ok) against decoding the same blocks (LZ4_decompress_safe).
 *   bench_lz4walk [--rounds R] [--only walk|pairs|decode]
 * --only times one side alone, for counting its instructions and cycles
 * (perf stat -e instructions,cycles).
 * Blocks: the bslz4 streams of 514x1030 photon-counting images (the images
 * of bench_stream2), one of a random-ish image (bytes of 2 bits: many short
 * sequences) and one of zeros (a single long match).  Each round times the
 * two sides in turn, alternating their order; figures are min/median/max
 * over rounds, per image (per block set) and per sequence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lz4.h>

#include "b2s_h5lz4.h"
#include "bench_images.h"

/* A length's extension bytes (255 + 255 + ... + last), for counting. */
static void ext_len(const uint8_t **p, const uint8_t *lim, uint64_t *len) {
  uint8_t b;
  do
    *len += b = *(*p)++;
  while (b == 255 && *p < lim);
}

/* Sequences of a sound block, and how many have a 15 nibble (the length
 * goes on in extra bytes). */
static void count_seqs(const uint8_t *ip, size_t csize, long *seqs,
                       long *lit15, long *ml15) {
  const uint8_t *iend = ip + csize;
  while (ip < iend) {
    unsigned t = *ip++;
    uint64_t lit = t >> 4, ml = t & 15;
    (*seqs)++;
    *lit15 += lit == 15;
    *ml15 += ml == 15;
    if (lit == 15)
      ext_len(&ip, iend, &lit);
    ip += lit;
    if (ip >= iend)
      break;
    ip += 2;
    if (ml == 15)
      ext_len(&ip, iend, &ml);
  }
}

/* ---- the block sets */
typedef struct {
  const char *name;
  int nimg;                   /* images the blocks come from */
  int nblk;
  const uint8_t **b;
  size_t *cs, *n;
  long seqs, lit15, ml15;
} set;

static void add_block(set *s, const uint8_t *b, size_t cs, size_t n) {
  s->b = realloc(s->b, (size_t)(s->nblk + 1) * sizeof *s->b);
  s->cs = realloc(s->cs, (size_t)(s->nblk + 1) * sizeof *s->cs);
  s->n = realloc(s->n, (size_t)(s->nblk + 1) * sizeof *s->n);
  s->b[s->nblk] = b;
  s->cs[s->nblk] = cs;
  s->n[s->nblk] = n;
  s->nblk++;
  count_seqs(b, cs, &s->seqs, &s->lit15, &s->ml15);
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The LZ4 blocks of a bslz4 framing of 16-bit pixels (kept allocated). */
static void add_bslz4(set *s, const uint16_t *px, size_t npx) {
  b2s_h5_params p = {.kind = B2S_H5_BSLZ4, .elem_size = 2, .typesize = 2,
                     .clevel = 5};
  size_t cap = b2s_h5_compress_bound(&p, 0, npx * 2);
  uint8_t *fr = malloc(cap);
  int64_t len = b2s_h5_compress(&p, 0, px, npx * 2, fr, cap);
  if (len < B2S_H5_HEADER_LEN) {
    fprintf(stderr, "bench_lz4walk: bslz4 encoding failed\n");
    exit(1);
  }
  uint64_t nbytes = (uint64_t)be32(fr) << 32 | be32(fr + 4);
  uint32_t block = be32(fr + 8);
  const uint8_t *q = fr + B2S_H5_HEADER_LEN;
  for (uint64_t done = 0;;) {
    uint64_t rest = (nbytes - done) / 16 * 16;   /* whole groups of 8 */
    uint64_t nb = rest < block ? rest : block;
    if (nb == 0)
      break;
    uint32_t cs = be32(q);
    add_block(s, q + 4, cs, (size_t)nb);
    q += 4 + cs;
    done += nb;
  }
  s->nimg++;
}

static const uint8_t *lz4_of(const uint8_t *src, size_t n, size_t *cs) {
  uint8_t *c = malloc((size_t)LZ4_compressBound((int)n));
  *cs = (size_t)LZ4_compress_default((const char *)src, (char *)c, (int)n,
                                     LZ4_compressBound((int)n));
  return c;
}

/* ---- timing */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { NEW, PAIR, DECODE, NSIDE };
static const char *side_name[NSIDE] = {"walk", "pairs", "decode"};
static uint8_t scratch[1 << 16];
static int only = -1;           /* --only: the one side to time */

/* The side named name, or -1. */
static int side_of(const char *name) {
  for (int k = 0; k < NSIDE; k++)
    if (!strcmp(name, side_name[k]))
      return k;
  return -1;
}

/* Seconds for reps passes over the set; every block must be vouched for
 * (decoded to its size). */
static double pass(const set *s, int side, int reps) {
  double t0 = now();
  long ok = 0;
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < s->nblk; i++) {
      if (side == PAIR && i + 1 < s->nblk) {
        bool two[2];
        b2s_lz4_blocks_ok2(s->b[i], s->cs[i], s->n[i], s->b[i + 1],
                           s->cs[i + 1], s->n[i + 1], two);
        ok += two[0] + two[1];
        i++;
      } else {
        ok += side != DECODE
                  ? b2s_lz4_block_ok(s->b[i], s->cs[i], s->n[i])
                  : LZ4_decompress_safe((const char *)s->b[i],
                                        (char *)scratch, (int)s->cs[i],
                                        (int)s->n[i]) == (int)s->n[i];
      }
    }
  double t = now() - t0;
  if (ok != (long)reps * s->nblk) {
    fprintf(stderr, "bench_lz4walk: %s refused a sound block of %s\n",
            side_name[side], s->name);
    exit(1);
  }
  return t;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void run(const set *s, int rounds) {
  /* about 20 ms per side and round */
  int reps = 1;
  while (pass(s, NEW, reps) < 0.02 && reps < (1 << 24))
    reps *= 2;
  double *t[NSIDE];
  for (int k = 0; k < NSIDE; k++)
    t[k] = malloc((size_t)rounds * sizeof(double));
  for (int r = 0; r < rounds; r++)
    for (int j = 0; j < NSIDE; j++) {
      int k = r % 2 ? NSIDE - 1 - j : j;     /* alternate the order */
      t[k][r] = only < 0 || only == k ? pass(s, k, reps) / reps : 1;
    }
  double per_img = s->nimg ? s->nimg : 1;
  printf("\n%s: %d blocks, %.0f images, %ld sequences per image (%.1f%% "
         "with literal length 15+, %.1f%% match length 19+)\n",
         s->name, s->nblk, per_img, (long)(s->seqs / per_img),
         100.0 * (double)s->lit15 / (double)s->seqs,
         100.0 * (double)s->ml15 / (double)s->seqs);
  printf("  %-9s %10s %10s %10s   %s\n", "", "min", "median", "max",
         "ns per sequence (median)");
  double med[NSIDE];
  for (int k = 0; k < NSIDE; k++) {
    qsort(t[k], (size_t)rounds, sizeof(double), cmpd);
    med[k] = t[k][rounds / 2];
    printf("  %-9s %10.2f %10.2f %10.2f   %.2f   us per image\n",
           side_name[k], t[k][0] * 1e6 / per_img, med[k] * 1e6 / per_img,
           t[k][rounds - 1] * 1e6 / per_img, med[k] * 1e9 / (double)s->seqs);
  }
  printf("  ratio (medians): walk/decode %.2f, pairs/decode %.2f, "
         "pairs/walk %.2f\n", med[NEW] / med[DECODE], med[PAIR] / med[DECODE],
         med[PAIR] / med[NEW]);
  for (int k = 0; k < NSIDE; k++)
    free(t[k]);
}

int main(int argc, char **argv) {
  int rounds = 11;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc &&
             (only = side_of(argv[++i])) >= 0)
      ;
    else {
      fprintf(stderr, "usage: bench_lz4walk [--rounds R] "
                      "[--only walk|pairs|decode]\n");
      return 2;
    }
  if (rounds < 1)
    rounds = 1;
  size_t npx = 514 * 1030;
  uint16_t *px = malloc(npx * 2);
  set counting = {.name = "photon-counting 514x1030 uint16, bslz4"};
  for (int k = 0; k < 8; k++) {
    bench_counting_image(px, npx, k);
    add_bslz4(&counting, px, npx);
  }
  set noisy = {.name = "random-ish 514x1030 uint16 (values 0-3), bslz4"};
  uint64_t x = 88172645463325252u;
  for (size_t i = 0; i < npx; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    px[i] = (uint16_t)(x & 3);
  }
  add_bslz4(&noisy, px, npx);
  set bytes = {.name = "random-ish bytes 0-3, one 8 KiB block"};
  uint8_t *raw = malloc(8192);
  for (size_t i = 0; i < 8192; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    raw[i] = (uint8_t)(x & 3);
  }
  size_t cs;
  const uint8_t *c = lz4_of(raw, 8192, &cs);
  add_block(&bytes, c, cs, 8192);
  set zeros = {.name = "zeros, one 8 KiB block"};
  memset(raw, 0, 8192);
  c = lz4_of(raw, 8192, &cs);
  add_block(&zeros, c, cs, 8192);
  printf("bench_lz4walk: b2s_lz4_block_ok against "
         "LZ4_decompress_safe (liblz4 %s), %d rounds\n", LZ4_versionString(),
         rounds);
  run(&counting, rounds);
  run(&noisy, rounds);
  run(&bytes, rounds);
  run(&zeros, rounds);
  free(px);
  free(raw);
  return 0;
}

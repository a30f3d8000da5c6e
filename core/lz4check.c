/* Whether an LZ4 block decodes to exactly n bytes, found by walking its
 * sequences without writing them out (see b2s_h5lz4.h).
 *
 * Checking a detector's stream by decoding it writes every pixel
 * (bitshuffled) once more: for the sparse images of photon-counting
 * detectors that was half the daemon's CPU, while the walk costs one step
 * per sequence.  The walk accepts only what every LZ4 decoder we know
 * (liblz4 1.9 and 1.10, the one inside c-blosc2) accepts and decodes to n
 * bytes: LZ4_decompress_safe's rules, taken at their strictest where
 * versions differ (length bytes ending within the limits of both, offset
 * 0 refused).  It may refuse a block a decoder would take; callers then
 * decode it to decide.
 *
 * A step waits on the byte the step before found, so one walk runs at the
 * load latency; two blocks walked in the same loop overlap in the CPU
 * (b2s_lz4_blocks_ok2, bench/bench_lz4walk). */
#include "b2s_h5lz4.h"

#define MINMATCH 4
#define LASTLITERALS 5    /* the last 5 bytes of a block are literals */
#define MFLIMIT 12        /* the last match starts 12 bytes before the end */

/* One block's walk: where it is, and 0 while going, 1 sound, -1 not shown. */
typedef struct lzw {
  const uint8_t *ip, *iend;
  int64_t op, oend;
  int state;
} lzw;

static void lzw_start(lzw *w, const void *src, size_t csize, size_t n) {
  bool ok = src && csize > 0 && n > 0 && n <= INT32_MAX && csize <= INT32_MAX;
  w->ip = src;
  w->iend = w->ip + (ok ? csize : 0);
  w->op = 0;
  w->oend = (int64_t)n;
  w->state = ok ? 0 : -1;
}

/* A length's extension bytes: 255 + 255 + ... + last.  Each byte read
 * must leave p at or below lim; false otherwise. */
static bool ext_len(const uint8_t **p, const uint8_t *lim, uint64_t *len) {
  uint8_t b;
  do {
    if (*p >= lim)
      return false;
    b = *(*p)++;
    *len += b;
  } while (b == 255 && *len < ((uint64_t)1 << 32));
  return *p <= lim && b != 255;
}

static inline bool lzw_end(lzw *w, bool ok) {
  w->state = ok ? 1 : -1;
  return false;
}

/* One sequence; false once the walk has ended (w->state says how). */
static inline bool lzw_step(lzw *w) {
  const uint8_t *ip = w->ip, *iend = w->iend;
  int64_t op = w->op, oend = w->oend;
  if (ip >= iend)
    return lzw_end(w, false);
  unsigned token = *ip++;
  uint64_t lit = token >> 4;
  /* literal length bytes end below iend - 15 (liblz4's limit for them) */
  if (lit == 15 && (iend - ip <= 15 || !ext_len(&ip, iend - 15, &lit)))
    return lzw_end(w, false);
  if (lit > (uint64_t)(iend - ip))
    return lzw_end(w, false);
  /* Past these limits a decoder takes the sequence as the last one: its
   * literals must end the input and the output, exactly. */
  if (op + (int64_t)lit > oend - MFLIMIT ||
      (int64_t)lit > (iend - ip) - (2 + 1 + LASTLITERALS))
    return lzw_end(w, ip + lit == iend && op + (int64_t)lit == oend);
  ip += lit;
  op += (int64_t)lit;
  unsigned offset = (unsigned)ip[0] | (unsigned)ip[1] << 8;
  ip += 2;
  if (offset == 0 || offset > op)
    return lzw_end(w, false);
  uint64_t ml = token & 15;
  if (ml == 15 && !ext_len(&ip, iend - LASTLITERALS, &ml))
    return lzw_end(w, false);
  ml += MINMATCH;
  if (ml > (uint64_t)(oend - LASTLITERALS - op))
    return lzw_end(w, false);    /* the last 5 bytes must be literals */
  w->ip = ip;
  w->op = op + (int64_t)ml;
  return true;
}

bool b2s_lz4_block_ok(const void *src, size_t csize, size_t n) {
  lzw w;
  lzw_start(&w, src, csize, n);
  while (w.state == 0 && lzw_step(&w))
    ;
  return w.state > 0;
}

void b2s_lz4_blocks_ok2(const void *a, size_t ca, size_t na, const void *b,
                        size_t cb, size_t nb, bool ok[2]) {
  lzw x, y;
  lzw_start(&x, a, ca, na);
  lzw_start(&y, b, cb, nb);
  /* both steps every turn (not &&): the point is that they overlap */
  if (x.state == 0 && y.state == 0)
    while ((int)lzw_step(&x) & (int)lzw_step(&y))
      ;
  while (x.state == 0 && lzw_step(&x))
    ;
  while (y.state == 0 && lzw_step(&y))
    ;
  ok[0] = x.state > 0;
  ok[1] = y.state > 0;
}

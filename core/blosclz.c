/* BloscLZ decoder and c-blosc2-identical encoder (spec 2.5). */
#include "b2s_blosclz.h"

#include "b2s_errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define RUN_MAX 32u             /* longest literal run of one instruction */
#define NEAR_LIMIT 8191u        /* biased distances below this are "near" */
#define FAR_LIMIT 73725u        /* the encoder ignores candidates this far */
#define FAR_BASE 8192u          /* decoded far distance = 16-bit field + this */
#define HASH_LOG_MAX 14u

/* ------------------------------------------------------------------------ */
/* Unaligned loads; rd32 is little-endian on any host, as the hash needs.   */

static inline uint32_t rd32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static inline uint64_t ld64(const uint8_t *p)
{
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* Index of the lowest-addressed differing byte of two 8-byte loads. */
static inline unsigned first_diff(uint64_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return (unsigned)__builtin_clzll(x) >> 3;
#else
  return (unsigned)__builtin_ctzll(x) >> 3;
#endif
}

/* ------------------------------------------------------------------------ */
/* Decoder                                                                  */

#if defined(__GNUC__)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#endif

/* Bytes the wide match copies may write past the end of the match. */
#define WIDE_SLACK 16u

/* Copy len bytes from dist bytes back with the result of a byte-by-byte
 * copy, possibly writing up to WIDE_SLACK - 1 bytes past op + len. */
static inline void copy_match_wide(uint8_t *op, size_t dist, size_t len)
{
  const uint8_t *ref = op - dist;
  uint8_t *end = op + len;

  if (dist >= 16) {
    /* each block reads only bytes finished before it */
    do {
      memcpy(op, ref, 16);
      op += 16;
      ref += 16;
    } while (op < end);
  } else if (dist >= 8) {
    do {
      memcpy(op, ref, 8);
      op += 8;
      ref += 8;
    } while (op < end);
  } else {
    /* short period: store a 16-byte pattern, advance by whole periods */
    uint8_t pat[16];
    memcpy(pat, ref, dist);
    for (size_t k = dist; k < 16; k++)
      pat[k] = pat[k - dist];
    size_t step = 16 / dist * dist;
    do {
      memcpy(op, pat, 16);
      op += step;
    } while (op < end);
  }
}

/* Match copy that never writes at or past oend (len <= oend - op). */
static inline void copy_match(uint8_t *op, size_t dist, size_t len,
                              uint8_t *oend)
{
  size_t room = (size_t)(oend - op);
  if (dist == 1 && len >= 64) { /* long runs: libc's memset is fastest */
    memset(op, op[-1], len);
    return;
  }
  if (LIKELY(room - len >= WIDE_SLACK)) {
    copy_match_wide(op, dist, len);
    return;
  }
  /* near the end: wide copy for all but the last bytes, then exact */
  size_t tail = len < WIDE_SLACK ? len : WIDE_SLACK;
  if (len > tail)
    copy_match_wide(op, dist, len - tail);
  op += len - tail;
  const uint8_t *ref = op - dist;
  for (size_t i = 0; i < tail; i++)
    op[i] = ref[i];
}

/* Decode one match whose control byte c was read; *ipp points after it. */
static int decode_match(unsigned c, const uint8_t **ipp, const uint8_t *iend,
                        uint8_t **opp, uint8_t *dst, uint8_t *oend)
{
  const uint8_t *ip = *ipp;
  uint8_t *op = *opp;
  size_t room = (size_t)(oend - op);
  size_t len = (c >> 5) + 2;

  if (len == 9) {
    unsigned e;
    do {
      if (UNLIKELY(ip == iend))
        return B2S_E_DECODE;
      e = *ip++;
      len += e;
      if (UNLIKELY(len > room)) /* also ends hostile 255 chains early */
        return B2S_E_DECODE;
    } while (e == 255);
  }
  if (UNLIKELY(ip == iend))
    return B2S_E_DECODE;
  size_t dist = (size_t)(c & 31u) * 256 + *ip++ + 1;
  if (UNLIKELY(dist == 8192)) { /* H = 31, D = 255: 16-bit far distance */
    if (iend - ip < 2)
      return B2S_E_DECODE;
    dist = ((size_t)ip[0] << 8 | ip[1]) + FAR_BASE;
    ip += 2;
  }
  if (UNLIKELY(len > room || dist > (size_t)(op - dst)))
    return B2S_E_DECODE;
  copy_match(op, dist, len, oend);
  *ipp = ip;
  *opp = op + len;
  return 0;
}

int b2s_blosclz_decompress(const uint8_t *src, int32_t srclen, uint8_t *dst,
                           int32_t dstlen)
{
  if (srclen < 0 || dstlen < 0 || (!src && srclen) || (!dst && dstlen))
    return B2S_E_ARG;
  if (srclen == 0)
    return dstlen == 0 ? 0 : B2S_E_DECODE;

  const uint8_t *ip = src, *iend = src + srclen;
  uint8_t *op = dst, *oend = dst + dstlen;
  /* bit 5 of the first byte is the format marker, not a length */
  unsigned c = *ip++ & 31u;

  for (;;) {
    if (c < 32) {
      size_t len = c + 1;
      /* common case: one fixed-size copy; the next control byte exists */
      if (LIKELY(oend - op >= (ptrdiff_t)RUN_MAX &&
                 iend - ip > (ptrdiff_t)RUN_MAX)) {
        memcpy(op, ip, RUN_MAX);
        op += len;
        ip += len;
        c = *ip++;
        continue;
      }
      if (len > (size_t)(oend - op) || len > (size_t)(iend - ip))
        return B2S_E_DECODE;
      memcpy(op, ip, len);
      op += len;
      ip += len;
    } else if (decode_match(c, &ip, iend, &op, dst, oend) < 0) {
      return B2S_E_DECODE;
    }
    /* Any instruction may be the last one (spec 2.5).  c-blosc2's decoder
     * insists on a final literal run, which every encoder writes anyway. */
    if (ip == iend)
      break;
    c = *ip++;
  }
  return op == oend ? dstlen : B2S_E_DECODE;
}

/* ------------------------------------------------------------------------ */
/* Encoder.  Every decision below mirrors c-blosc2 so the output matches it */
/* byte for byte; a "better" choice anywhere would change the stream.       */

static inline uint32_t hash32(uint32_t v, unsigned hlog)
{
  return (v * 2654435761u) >> (32 - hlog);
}

/* End of the match at a (candidate dist back) as c-blosc2 measures it: one
 * past the first mismatch at or after a+4, capped at bound.  Inlined: most
 * candidates end within the first word, so a call costs more than the
 * work on data that barely compresses. */
static inline __attribute__((always_inline)) ptrdiff_t
match_end(const uint8_t *p, ptrdiff_t a, uint32_t dist, ptrdiff_t bound)
{
  ptrdiff_t m = a + 4;
  while (m + 8 <= bound) {
    uint64_t x = ld64(p + m) ^ ld64(p + m - dist);
    if (x)
      return m + (ptrdiff_t)first_diff(x) + 1;
    m += 8;
  }
  for (; m < bound; m++)
    if (p[m] != p[m - dist])
      return m + 1;
  return bound;
}

/* Entropy probe: a dry run of the compressor that only counts output bytes
 * (spec 2.5 step 1).  Returns input consumed / estimated output.  Indices
 * are pointer-wide, so no loop step sign-extends one; hlog is a constant
 * where the caller is inlined (see b2s_blosclz_compress). */
static inline __attribute__((always_inline)) double
probe_ratio(const uint8_t *p, int32_t plen, unsigned hlog, uint32_t *tab)
{
  ptrdiff_t lim = plen < (1 << hlog) ? plen : (1 << hlog);
  ptrdiff_t i = 0, stop = lim - 12;
  int32_t oc = 5;
  unsigned lit = 4;

  memset(tab, 0, sizeof(*tab) << hlog);
  while (i < stop) {
    ptrdiff_t a = i;
    uint32_t h = hash32(rd32(p + a), hlog);
    uint32_t dist = (uint32_t)a - tab[h];
    tab[h] = (uint32_t)a;
    ptrdiff_t len = 0;
    if (dist - 1 < FAR_LIMIT - 1 && rd32(p + a - dist) == rd32(p + a))
      len = match_end(p, a, dist, lim - 1) - 4 - a;
    if (len < 4) {
      oc++;
      i = a + 1;
      if (++lit == RUN_MAX) {
        lit = 0;
        oc++;
      }
      continue;
    }
    if (lit == 0)
      oc--; /* the run byte assumed after the last match is not needed */
    lit = 0;
    if (len >= 7)
      oc += (int32_t)(len - 7) / 255 + 1;
    oc += dist - 1 < NEAR_LIMIT ? 2 : 4;
    ptrdiff_t q = a + len;
    tab[hash32(rd32(p + q), hlog)] = (uint32_t)q;
    i = q + 2;
    oc++;
  }
  return (double)i / (double)oc;
}

struct lz_out {
  uint8_t *op, *end;
  unsigned lit; /* literals in the open run; its count byte is op[-lit-1] */
};

/* c-blosc2 wants room for two bytes before every literal. */
static bool put_literal(struct lz_out *o, uint8_t b)
{
  if (o->op + 2 > o->end)
    return false;
  *o->op++ = b;
  if (++o->lit == RUN_MAX) {
    o->lit = 0;
    *o->op++ = RUN_MAX - 1;
  }
  return true;
}

/* Patch the open run's count, or drop its count byte if it is empty. */
static void close_run(struct lz_out *o)
{
  if (o->lit)
    o->op[-(ptrdiff_t)o->lit - 1] = (uint8_t)(o->lit - 1);
  else
    o->op--;
  o->lit = 0;
}

/* Match with length field len (>= 4) and biased distance d, followed by a
 * fresh run byte.  c-blosc2 checks room piecewise; all of it must fit. */
static bool put_match(struct lz_out *o, uint32_t len, uint32_t d)
{
  bool far = d >= NEAR_LIMIT;
  uint32_t fd = far ? d - NEAR_LIMIT : d;
  uint32_t ext = len >= 7 ? (len - 7) / 255 + 1 : 0;
  size_t need = 1 + ext + (far ? 3 : 1) + 1;
  if ((size_t)(o->end - o->op) < need)
    return false;

  uint8_t hi = far ? 31 : (uint8_t)(d >> 8);
  *o->op++ = (uint8_t)((len < 7 ? len : 7) << 5 | hi);
  if (len >= 7) {
    uint32_t rest = len - 7;
    for (; rest >= 255; rest -= 255)
      *o->op++ = 255;
    *o->op++ = (uint8_t)rest;
  }
  if (far) {
    *o->op++ = 255;
    *o->op++ = (uint8_t)(fd >> 8);
  }
  *o->op++ = (uint8_t)fd;
  *o->op++ = RUN_MAX - 1;
  return true;
}

static inline __attribute__((always_inline)) bool
encode(int clevel, const uint8_t *in, int32_t n, unsigned hlog, uint32_t *tab,
       struct lz_out *o)
{
  ptrdiff_t i = 4, stop = (ptrdiff_t)n - 12;

  memset(tab, 0, sizeof(*tab) << hlog);
  *o->op++ = RUN_MAX - 1;
  memcpy(o->op, in, 4);
  o->op += 4;
  o->lit = 4;

  while (i < stop) {
    ptrdiff_t a = i;
    uint32_t h = hash32(rd32(in + a), hlog);
    uint32_t dist = (uint32_t)a - tab[h];
    tab[h] = (uint32_t)a;
    ptrdiff_t len = 0;
    if (dist - 1 < FAR_LIMIT - 1 && rd32(in + a - dist) == rd32(in + a))
      len = match_end(in, a, dist, n - 1) - 4 - a;
    /* short far matches cost more to decode than they save */
    if (len < 4 || (len <= 5 && dist - 1 >= NEAR_LIMIT)) {
      if (!put_literal(o, in[a]))
        return false;
      i = a + 1;
      continue;
    }
    close_run(o);
    if (!put_match(o, (uint32_t)len, dist - 1))
      return false;
    ptrdiff_t q = a + len;
    uint32_t v = rd32(in + q);
    tab[hash32(v, hlog)] = (uint32_t)q;
    if (clevel == 9)
      tab[hash32(v >> 8, hlog)] = (uint32_t)q + 1;
    i = q + 2;
  }
  for (; i < n; i++)
    if (!put_literal(o, in[i]))
      return false;
  close_run(o);
  return true;
}

static __attribute__((noinline)) int
compress_with(int clevel, const uint8_t *in, int32_t n, uint8_t *out,
              int32_t cap, unsigned hlog, int32_t plen, double min_ratio)
{
  uint32_t tab[1u << HASH_LOG_MAX];
  if (probe_ratio(in + (n - plen), plen, hlog, tab) < min_ratio)
    return 0;
  struct lz_out o = {out, out + cap, 0};
  if (!encode(clevel, in, n, hlog, tab, &o))
    return 0;
  out[0] |= 0x20; /* format marker */
  return (int)(o.op - out);
}

int b2s_blosclz_compress(int clevel, const uint8_t *in, int32_t n, uint8_t *out,
                         int32_t cap)
{
  static const double min_ratio[10] = {0,   2.0, 1.5, 1.2,  1.2,
                                       1.2, 1.2, 1.15, 1.1, 1.0};
  if (clevel < 1 || clevel > 9 || n < 0 || cap < 0 || (!in && n) ||
      (!out && cap))
    return B2S_E_ARG;
  /* c-blosc2 probes first, but either test alone means "give up" */
  if (n < 16 || cap < 66)
    return 0;

  unsigned hlog = clevel == 1 ? 12 : clevel == 2 ? 13 : 14;
  int32_t plen = clevel == 1 ? n / 8 : clevel <= 3 ? n / 4
                                     : clevel <= 6 ? n / 2 : n;
  /* one copy of the loops per table size: the hash's shift is then a
   * constant, not a count reloaded into %cl on every byte */
  switch (hlog) {
  case 12:
    return compress_with(clevel, in, n, out, cap, 12, plen, min_ratio[clevel]);
  case 13:
    return compress_with(clevel, in, n, out, cap, 13, plen, min_ratio[clevel]);
  default:
    return compress_with(clevel, in, n, out, cap, 14, plen, min_ratio[clevel]);
  }
}

/* Byte shuffle and bit shuffle: scalar reference kernels, the tiled bit
 * shuffle drivers shared by every instruction set, and the run-time
 * dispatcher.  Layouts: spec sections 3.2, 3.3 and 3.6. */
#include "b2s_shuffle.h"
#include "shuffle_simd.h"

#include <stdatomic.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* 64-bit word helpers                                                      */

static inline uint64_t load_le64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static inline void store_le64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  memcpy(p, &v, sizeof v);
}

/* The bits of `hi` under `mask` trade places with the bits `shift` higher
 * in `lo`. */
static inline void swap_masked(uint64_t *lo, uint64_t *hi, unsigned shift,
                               uint64_t mask) {
  uint64_t t = ((*lo >> shift) ^ *hi) & mask;
  *hi ^= t;
  *lo ^= t << shift;
}

/* Same block-swap scheme across 8 words.  With unit 1 (bits): afterwards
 * bit b of each byte of w[k] is the former bit k of that byte of w[b].  With
 * unit 8 (bytes): afterwards byte r of w[c] is the former byte c of w[r]. */
static inline void transpose_words(uint64_t *w, unsigned unit,
                                   const uint64_t *masks) {
#pragma GCC unroll 3
  for (unsigned step = 0; step < 3; step++) {
    unsigned d = 1u << step;
#pragma GCC unroll 8
    for (unsigned k = 0; k < 8; k++)
      if ((k & d) == 0)
        swap_masked(&w[k], &w[k + d], unit * d, masks[step]);
  }
}

static const uint64_t bit_masks[3] = {
    UINT64_C(0x5555555555555555),
    UINT64_C(0x3333333333333333),
    UINT64_C(0x0F0F0F0F0F0F0F0F),
};
static const uint64_t byte_masks[3] = {
    UINT64_C(0x00FF00FF00FF00FF),
    UINT64_C(0x0000FFFF0000FFFF),
    UINT64_C(0x00000000FFFFFFFF),
};

/* ------------------------------------------------------------------------ */
/* Scalar byte shuffle                                                       */

/* Items per pass of the generic loops: keeps the strided side of the
 * transpose inside L1 whatever the typesize. */
enum { SCALAR_TILE_BYTES = 4096 };

/* Two loop orders, each called with a literal typesize so that it unrolls
 * (and, for the smallest typesizes, vectorises).  Item-major order touches
 * all `ts` rows for every item; that is best while the rows fit in L1 ways,
 * but with many rows a power-of-two row stride (the usual block sizes) maps
 * them all to the same cache sets.  Row-major order over L1-sized tiles then
 * writes (or reads) each row as one contiguous run instead. */
static inline void shuffle_items_fixed(size_t ts, size_t n, size_t from,
                                       const uint8_t *src, uint8_t *dst) {
  for (size_t i = from; i < n; i++) {
    const uint8_t *item = src + i * ts;
    for (size_t j = 0; j < ts; j++)
      dst[j * n + i] = item[j];
  }
}

static inline void unshuffle_items_fixed(size_t ts, size_t n, size_t from,
                                         const uint8_t *src, uint8_t *dst) {
  for (size_t i = from; i < n; i++) {
    uint8_t *item = dst + i * ts;
    for (size_t j = 0; j < ts; j++)
      item[j] = src[j * n + i];
  }
}

static inline size_t scalar_tile_items(size_t ts) {
  size_t tile = SCALAR_TILE_BYTES / ts;
  return tile < 64 ? 64 : tile;
}

static inline void shuffle_items_tiled(size_t ts, size_t n, size_t from,
                                       const uint8_t *src, uint8_t *dst) {
  size_t tile = scalar_tile_items(ts);
  for (size_t i0 = from; i0 < n; i0 += tile) {
    size_t end = n - i0 < tile ? n : i0 + tile;
    for (size_t j = 0; j < ts; j++) {
      const uint8_t *s = src + j;
      uint8_t *d = dst + j * n;
      for (size_t i = i0; i < end; i++)
        d[i] = s[i * ts];
    }
  }
}

static inline void unshuffle_items_tiled(size_t ts, size_t n, size_t from,
                                         const uint8_t *src, uint8_t *dst) {
  size_t tile = scalar_tile_items(ts);
  for (size_t i0 = from; i0 < n; i0 += tile) {
    size_t end = n - i0 < tile ? n : i0 + tile;
    for (size_t j = 0; j < ts; j++) {
      const uint8_t *s = src + j * n;
      uint8_t *d = dst + j;
      for (size_t i = i0; i < end; i++)
        d[i * ts] = s[i];
    }
  }
}

/* Groups of 8 items as 64-bit words.  Typesize 8: the 8 words are an 8x8
 * byte matrix and its transpose is the 8 rows.  Typesize 4: 4 words; read a
 * byte position as bits [word(2) | byte-in-word(3)] = [i2 i1 | i0 j1 j0]
 * (item i, byte j).  Each masked swap exchanges one word bit with one byte
 * bit; three of them give [j0 j1 | i2 i1 i0], so row j ends in word
 * 2 * (j & 1) + (j >> 1).  Unshuffle undoes the swaps in reverse order. */
static size_t shuffle8_words(size_t n, size_t from, const uint8_t *src,
                             uint8_t *dst) {
  size_t i = from;
  for (; i + 8 <= n; i += 8) {
    uint64_t w[8];
#pragma GCC unroll 8
    for (unsigned k = 0; k < 8; k++)
      w[k] = load_le64(src + 8 * (i + k));
    transpose_words(w, 8, byte_masks);
#pragma GCC unroll 8
    for (unsigned j = 0; j < 8; j++)
      store_le64(dst + j * n + i, w[j]);
  }
  return i;
}

static size_t unshuffle8_words(size_t n, size_t from, const uint8_t *src,
                               uint8_t *dst) {
  size_t i = from;
  for (; i + 8 <= n; i += 8) {
    uint64_t w[8];
#pragma GCC unroll 8
    for (unsigned j = 0; j < 8; j++)
      w[j] = load_le64(src + j * n + i);
    transpose_words(w, 8, byte_masks);
#pragma GCC unroll 8
    for (unsigned k = 0; k < 8; k++)
      store_le64(dst + 8 * (i + k), w[k]);
  }
  return i;
}

static size_t shuffle4_words(size_t n, size_t from, const uint8_t *src,
                             uint8_t *dst) {
  size_t i = from;
  for (; i + 8 <= n; i += 8) {
    const uint8_t *s = src + 4 * i;
    uint64_t w0 = load_le64(s), w1 = load_le64(s + 8);
    uint64_t w2 = load_le64(s + 16), w3 = load_le64(s + 24);
    swap_masked(&w0, &w2, 32, byte_masks[2]); /* i2 <-> i0 */
    swap_masked(&w1, &w3, 32, byte_masks[2]);
    swap_masked(&w0, &w1, 16, byte_masks[1]); /* i1 <-> j1 */
    swap_masked(&w2, &w3, 16, byte_masks[1]);
    swap_masked(&w0, &w2, 8, byte_masks[0]); /* i0 <-> j0 */
    swap_masked(&w1, &w3, 8, byte_masks[0]);
    store_le64(dst + i, w0);
    store_le64(dst + n + i, w2);
    store_le64(dst + 2 * n + i, w1);
    store_le64(dst + 3 * n + i, w3);
  }
  return i;
}

static size_t unshuffle4_words(size_t n, size_t from, const uint8_t *src,
                               uint8_t *dst) {
  size_t i = from;
  for (; i + 8 <= n; i += 8) {
    uint64_t w0 = load_le64(src + i), w2 = load_le64(src + n + i);
    uint64_t w1 = load_le64(src + 2 * n + i), w3 = load_le64(src + 3 * n + i);
    swap_masked(&w0, &w2, 8, byte_masks[0]);
    swap_masked(&w1, &w3, 8, byte_masks[0]);
    swap_masked(&w0, &w1, 16, byte_masks[1]);
    swap_masked(&w2, &w3, 16, byte_masks[1]);
    swap_masked(&w0, &w2, 32, byte_masks[2]);
    swap_masked(&w1, &w3, 32, byte_masks[2]);
    uint8_t *d = dst + 4 * i;
    store_le64(d, w0);
    store_le64(d + 8, w1);
    store_le64(d + 16, w2);
    store_le64(d + 24, w3);
  }
  return i;
}

/* Typesize 16: two 8x8 byte transposes per 8 items (bytes 0-7 and 8-15).
 * The 16 rows would collide in L1 sets at power-of-two strides, so a tile
 * goes through a stage and each row is then copied as one run. */
enum { STAGE16_ITEMS = 256 };

static void shuffle16_group(const uint8_t *src, uint8_t *stage) {
  uint64_t lo[8], hi[8];
#pragma GCC unroll 8
  for (unsigned k = 0; k < 8; k++) {
    lo[k] = load_le64(src + 16 * k);
    hi[k] = load_le64(src + 16 * k + 8);
  }
  transpose_words(lo, 8, byte_masks);
  transpose_words(hi, 8, byte_masks);
#pragma GCC unroll 8
  for (unsigned j = 0; j < 8; j++) {
    store_le64(stage + j * STAGE16_ITEMS, lo[j]);
    store_le64(stage + (j + 8) * STAGE16_ITEMS, hi[j]);
  }
}

static void unshuffle16_group(const uint8_t *stage, uint8_t *dst) {
  uint64_t lo[8], hi[8];
#pragma GCC unroll 8
  for (unsigned j = 0; j < 8; j++) {
    lo[j] = load_le64(stage + j * STAGE16_ITEMS);
    hi[j] = load_le64(stage + (j + 8) * STAGE16_ITEMS);
  }
  transpose_words(lo, 8, byte_masks);
  transpose_words(hi, 8, byte_masks);
#pragma GCC unroll 8
  for (unsigned k = 0; k < 8; k++) {
    store_le64(dst + 16 * k, lo[k]);
    store_le64(dst + 16 * k + 8, hi[k]);
  }
}

static size_t shuffle16_words(size_t n, size_t from, const uint8_t *src,
                              uint8_t *dst) {
  uint8_t stage[16 * STAGE16_ITEMS];
  size_t i = from;
  for (; i + STAGE16_ITEMS <= n; i += STAGE16_ITEMS) {
    for (size_t g = 0; g < STAGE16_ITEMS; g += 8)
      shuffle16_group(src + 16 * (i + g), stage + g);
    for (unsigned j = 0; j < 16; j++)
      memcpy(dst + j * n + i, stage + j * STAGE16_ITEMS, STAGE16_ITEMS);
  }
  return i;
}

static size_t unshuffle16_words(size_t n, size_t from, const uint8_t *src,
                                uint8_t *dst) {
  uint8_t stage[16 * STAGE16_ITEMS];
  size_t i = from;
  for (; i + STAGE16_ITEMS <= n; i += STAGE16_ITEMS) {
    for (unsigned j = 0; j < 16; j++)
      memcpy(stage + j * STAGE16_ITEMS, src + j * n + i, STAGE16_ITEMS);
    for (size_t g = 0; g < STAGE16_ITEMS; g += 8)
      unshuffle16_group(stage + g, dst + 16 * (i + g));
  }
  return i;
}

/* Kernel per typesize chosen by measurement on 256 KiB blocks. */
void b2s_shuffle_items_scalar(size_t ts, size_t n, size_t from,
                              const uint8_t *src, uint8_t *dst) {
  switch (ts) {
  case 2: shuffle_items_fixed(2, n, from, src, dst); break;
  case 4:
    from = shuffle4_words(n, from, src, dst);
    shuffle_items_fixed(4, n, from, src, dst);
    break;
  case 8:
    from = shuffle8_words(n, from, src, dst);
    shuffle_items_fixed(8, n, from, src, dst);
    break;
  case 16:
    from = shuffle16_words(n, from, src, dst);
    shuffle_items_tiled(16, n, from, src, dst);
    break;
  default: shuffle_items_tiled(ts, n, from, src, dst); break;
  }
}

void b2s_unshuffle_items_scalar(size_t ts, size_t n, size_t from,
                                const uint8_t *src, uint8_t *dst) {
  switch (ts) {
  case 2: unshuffle_items_fixed(2, n, from, src, dst); break;
  case 4:
    from = unshuffle4_words(n, from, src, dst);
    unshuffle_items_fixed(4, n, from, src, dst);
    break;
  case 8:
    from = unshuffle8_words(n, from, src, dst);
    unshuffle_items_fixed(8, n, from, src, dst);
    break;
  case 16:
    from = unshuffle16_words(n, from, src, dst);
    unshuffle_items_tiled(16, n, from, src, dst);
    break;
  default: unshuffle_items_tiled(ts, n, from, src, dst); break;
  }
}

/* Typesize 0 or 1, or fewer than two items: the transpose is the identity. */
static int shuffle_is_copy(size_t ts, size_t size) {
  return ts <= 1 || size / ts <= 1;
}

static void copy_bytes(uint8_t *dst, const uint8_t *src, size_t len) {
  if (len > 0)
    memcpy(dst, src, len);
}

void b2s_shuffle_scalar(size_t ts, size_t size, const uint8_t *src,
                        uint8_t *dst) {
  if (shuffle_is_copy(ts, size)) {
    copy_bytes(dst, src, size);
    return;
  }
  size_t n = size / ts;
  b2s_shuffle_items_scalar(ts, n, 0, src, dst);
  copy_bytes(dst + n * ts, src + n * ts, size - n * ts);
}

void b2s_unshuffle_scalar(size_t ts, size_t size, const uint8_t *src,
                          uint8_t *dst) {
  if (shuffle_is_copy(ts, size)) {
    copy_bytes(dst, src, size);
    return;
  }
  size_t n = size / ts;
  b2s_unshuffle_items_scalar(ts, n, 0, src, dst);
  copy_bytes(dst + n * ts, src + n * ts, size - n * ts);
}

/* ------------------------------------------------------------------------ */
/* Scalar bit-row transpose                                                 */

/* Transposes the 8x8 bit matrix whose row r is byte r (bit c = column c):
 * afterwards bit c of byte r is the former bit r of byte c.  Three rounds
 * swap ever larger off-diagonal blocks (1x1, 2x2, 4x4). */
static inline uint64_t transpose8x8(uint64_t x) {
  uint64_t t;
  t = (x ^ (x >> 7)) & UINT64_C(0x00AA00AA00AA00AA);
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & UINT64_C(0x0000CCCC0000CCCC);
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & UINT64_C(0x00000000F0F0F0F0);
  x ^= t ^ (t << 28);
  return x;
}

/* 64 bytes per step as 8 words: gather byte k of every group of 8 into word
 * k, then transpose bits across the words; word b is 8 bytes of row b.
 * Groups left over are done one at a time. */
void b2s_bitrow_fwd_scalar_from(const uint8_t *in, size_t from, size_t nbytes,
                                uint8_t *out, size_t stride) {
  size_t i = from;
  for (; i + 64 <= nbytes; i += 64) {
    uint64_t w[8];
#pragma GCC unroll 8
    for (unsigned q = 0; q < 8; q++)
      w[q] = load_le64(in + i + 8 * q);
    transpose_words(w, 8, byte_masks);
    transpose_words(w, 1, bit_masks);
#pragma GCC unroll 8
    for (unsigned b = 0; b < 8; b++)
      store_le64(out + b * stride + i / 8, w[b]);
  }
  for (; i + 8 <= nbytes; i += 8) {
    uint64_t y = transpose8x8(load_le64(in + i));
    uint8_t *o = out + i / 8;
#pragma GCC unroll 8
    for (unsigned b = 0; b < 8; b++)
      o[b * stride] = (uint8_t)(y >> (8 * b));
  }
}

void b2s_bitrow_inv_scalar_from(const uint8_t *in, size_t stride, size_t from,
                                size_t nbytes, uint8_t *out) {
  size_t i = from;
  for (; i + 64 <= nbytes; i += 64) {
    uint64_t w[8];
#pragma GCC unroll 8
    for (unsigned b = 0; b < 8; b++)
      w[b] = load_le64(in + b * stride + i / 8);
    transpose_words(w, 1, bit_masks);
    transpose_words(w, 8, byte_masks);
#pragma GCC unroll 8
    for (unsigned q = 0; q < 8; q++)
      store_le64(out + i + 8 * q, w[q]);
  }
  for (; i + 8 <= nbytes; i += 8) {
    const uint8_t *r = in + i / 8;
    uint64_t x = 0;
#pragma GCC unroll 8
    for (unsigned b = 0; b < 8; b++)
      x |= (uint64_t)r[b * stride] << (8 * b);
    store_le64(out + i, transpose8x8(x));
  }
}

static void bitrow_fwd_scalar(const uint8_t *in, size_t nbytes, uint8_t *out,
                              size_t stride) {
  b2s_bitrow_fwd_scalar_from(in, 0, nbytes, out, stride);
}

static void bitrow_inv_scalar(const uint8_t *in, size_t stride, size_t nbytes,
                              uint8_t *out) {
  b2s_bitrow_inv_scalar_from(in, stride, 0, nbytes, out);
}

/* ------------------------------------------------------------------------ */
/* Bit shuffle drivers (shared by all kernel sets)                           */

/* Stack scratch for one tile of byte-shuffled items: small enough to stay in
 * L1 next to the rows being written. */
enum { BIT_TILE_BYTES = 8192 };

/* Items per tile: a multiple of 8 (whole output bytes), and of 64 when the
 * typesize allows, so the vector bit-row kernels mostly run on full steps. */
static size_t bit_tile_items(size_t ts) {
  size_t items = BIT_TILE_BYTES / ts;
  return items >= 64 ? items & ~(size_t)63 : items & ~(size_t)7;
}

/* Typesizes too large for one tile of 8 items (Blosc2 typesizes are one
 * byte, so only reachable through direct calls): gather, transpose and
 * scatter 8 items at a time, without scratch. */
static void bitshuffle_direct(size_t ts, size_t m8, const uint8_t *src,
                              uint8_t *dst) {
  size_t rowlen = m8 / 8;
  for (size_t q = 0; q < rowlen; q++)
    for (size_t j = 0; j < ts; j++) {
      uint64_t x = 0;
      for (unsigned k = 0; k < 8; k++)
        x |= (uint64_t)src[(8 * q + k) * ts + j] << (8 * k);
      uint64_t y = transpose8x8(x);
      for (unsigned b = 0; b < 8; b++)
        dst[(8 * j + b) * rowlen + q] = (uint8_t)(y >> (8 * b));
    }
}

static void bitunshuffle_direct(size_t ts, size_t m8, const uint8_t *src,
                                uint8_t *dst) {
  size_t rowlen = m8 / 8;
  for (size_t q = 0; q < rowlen; q++)
    for (size_t j = 0; j < ts; j++) {
      uint64_t x = 0;
      for (unsigned b = 0; b < 8; b++)
        x |= (uint64_t)src[(8 * j + b) * rowlen + q] << (8 * b);
      uint64_t y = transpose8x8(x);
      for (unsigned k = 0; k < 8; k++)
        dst[(8 * q + k) * ts + j] = (uint8_t)(y >> (8 * k));
    }
}

/* One-pass kernels write all 8 * ts rows at once, and at the usual
 * power-of-two row lengths those rows fall in the same L1 sets: with more
 * rows than ways, each line is evicted before it is complete.  So they write
 * tiles of BIT_STAGE_BYTES into a stage, and each row is copied out as one
 * run.  Returns the items done, the rest being left to the tiled path. */
enum { BIT_STAGE_BYTES = 4096 };

static inline size_t bitshuffle_staged(const struct b2s_shuffle_kernels *k,
                                       size_t ts, size_t m8, const uint8_t *src,
                                       uint8_t *dst, size_t rowlen) {
  if (!k->bitshuffle_items)
    return 0;
  _Alignas(64) uint8_t stage[BIT_STAGE_BYTES];
  const size_t tile = BIT_STAGE_BYTES / ts, run = tile / 8;
  size_t i = 0;
  for (; i + tile <= m8; i += tile) {
    if (k->bitshuffle_items(ts, tile, src + i * ts, stage, run) != tile)
      break;
    for (size_t r = 0; r < 8 * ts; r++)
      memcpy(dst + r * rowlen + i / 8, stage + r * run, run);
  }
  return i;
}

static void bitshuffle_with(const struct b2s_shuffle_kernels *k, size_t ts,
                            size_t size, const uint8_t *src, uint8_t *dst) {
  size_t m8 = ts == 0 ? 0 : (size / ts) & ~(size_t)7;
  size_t rowlen = m8 / 8;
  if (ts == 1) {
    k->bitrow_fwd(src, m8, dst, rowlen);
  } else if (ts > BIT_TILE_BYTES / 8) {
    bitshuffle_direct(ts, m8, src, dst);
  } else if (m8 > 0) {
    _Alignas(64) uint8_t tmp[BIT_TILE_BYTES];
    size_t tile = bit_tile_items(ts);
    size_t done = ts == 2 ? bitshuffle_staged(k, 2, m8, src, dst, rowlen) : 0;
    for (size_t i0 = done; i0 < m8; i0 += tile) {
      size_t cnt = m8 - i0 < tile ? m8 - i0 : tile;
      k->shuffle(ts, cnt * ts, src + i0 * ts, tmp);
      for (size_t j = 0; j < ts; j++)
        k->bitrow_fwd(tmp + j * cnt, cnt, dst + 8 * j * rowlen + i0 / 8,
                      rowlen);
    }
  }
  copy_bytes(dst + m8 * ts, src + m8 * ts, size - m8 * ts);
}

static void bitunshuffle_with(const struct b2s_shuffle_kernels *k, size_t ts,
                              size_t size, const uint8_t *src, uint8_t *dst) {
  size_t m8 = ts == 0 ? 0 : (size / ts) & ~(size_t)7;
  size_t rowlen = m8 / 8;
  if (ts == 1) {
    k->bitrow_inv(src, rowlen, m8, dst);
  } else if (ts > BIT_TILE_BYTES / 8) {
    bitunshuffle_direct(ts, m8, src, dst);
  } else if (m8 > 0) {
    _Alignas(64) uint8_t tmp[BIT_TILE_BYTES];
    size_t tile = bit_tile_items(ts);
    for (size_t i0 = 0; i0 < m8; i0 += tile) {
      size_t cnt = m8 - i0 < tile ? m8 - i0 : tile;
      for (size_t j = 0; j < ts; j++)
        k->bitrow_inv(src + 8 * j * rowlen + i0 / 8, rowlen, cnt,
                      tmp + j * cnt);
      k->unshuffle(ts, cnt * ts, tmp, dst + i0 * ts);
    }
  }
  copy_bytes(dst + m8 * ts, src + m8 * ts, size - m8 * ts);
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

static const struct b2s_shuffle_kernels scalar_kernels = {
    b2s_shuffle_scalar,
    b2s_unshuffle_scalar,
    bitrow_fwd_scalar,
    bitrow_inv_scalar,
    NULL,
};

#ifdef B2S_HAVE_X86_SIMD
static const struct b2s_shuffle_kernels sse2_kernels = {
    b2s_shuffle_sse2,
    b2s_unshuffle_sse2,
    b2s_bitrow_fwd_sse2,
    b2s_bitrow_inv_sse2,
    NULL,
};
static const struct b2s_shuffle_kernels avx2_kernels = {
    b2s_shuffle_avx2,
    b2s_unshuffle_avx2,
    b2s_bitrow_fwd_avx2,
    b2s_bitrow_inv_avx2,
    NULL, /* a one-pass typesize-2 kernel measured no faster than the tiles */
};
#ifdef B2S_HAVE_GFNI
static const struct b2s_shuffle_kernels gfni_kernels = {
    b2s_shuffle_avx2,    b2s_unshuffle_avx2,        b2s_bitrow_fwd_gfni,
    b2s_bitrow_inv_gfni, b2s_bitshuffle_items_gfni,
};
#endif
static const struct b2s_shuffle_kernels *const level_kernels[] = {
    &scalar_kernels,
    &sse2_kernels,
    &avx2_kernels,
#ifdef B2S_HAVE_GFNI
    &gfni_kernels,
#endif
};
#else
static const struct b2s_shuffle_kernels *const level_kernels[] = {
    &scalar_kernels,
};
#endif

/* -1 until the first call detects the CPU; detection is idempotent, so a
 * race between two first callers is harmless. */
static atomic_int active_level = -1;

static int detect_level(void) {
#ifdef B2S_HAVE_X86_SIMD
  __builtin_cpu_init();
#ifdef B2S_HAVE_GFNI
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("gfni"))
    return 3;
#endif
  if (__builtin_cpu_supports("avx2"))
    return 2;
  if (__builtin_cpu_supports("sse2"))
    return 1;
#endif
  return 0;
}

int b2s_simd_level(void) {
  int level = atomic_load_explicit(&active_level, memory_order_relaxed);
  if (level < 0) {
    level = detect_level();
    atomic_store_explicit(&active_level, level, memory_order_relaxed);
  }
  return level;
}

int b2s_simd_force(int level) {
  int best = detect_level();
  if (level > best)
    level = best;
  if (level < 0)
    level = 0;
  atomic_store_explicit(&active_level, level, memory_order_relaxed);
  return level;
}

static const struct b2s_shuffle_kernels *kernels(void) {
  return level_kernels[b2s_simd_level()];
}

/* ------------------------------------------------------------------------ */
/* Public entry points                                                       */

void b2s_shuffle(size_t ts, size_t size, const uint8_t *src, uint8_t *dst) {
  kernels()->shuffle(ts, size, src, dst);
}

void b2s_unshuffle(size_t ts, size_t size, const uint8_t *src, uint8_t *dst) {
  kernels()->unshuffle(ts, size, src, dst);
}

void b2s_bitshuffle(size_t ts, size_t size, const uint8_t *src, uint8_t *dst) {
  bitshuffle_with(kernels(), ts, size, src, dst);
}

void b2s_bitunshuffle(size_t ts, size_t size, const uint8_t *src,
                      uint8_t *dst) {
  bitunshuffle_with(kernels(), ts, size, src, dst);
}

void b2s_bitshuffle_scalar(size_t ts, size_t size, const uint8_t *src,
                           uint8_t *dst) {
  bitshuffle_with(&scalar_kernels, ts, size, src, dst);
}

void b2s_bitunshuffle_scalar(size_t ts, size_t size, const uint8_t *src,
                             uint8_t *dst) {
  bitunshuffle_with(&scalar_kernels, ts, size, src, dst);
}

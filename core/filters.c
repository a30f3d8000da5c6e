/* The six-slot filter pipeline on one block (spec section 3). */
#include <stdlib.h>

#include "b2s_shuffle.h"
#include "chunk_internal.h"

/* DELTA works on units of 1, 2, 4 or 8 bytes (spec 3.4). */
static int32_t delta_unit(int32_t typesize) {
  if (typesize == 1 || typesize == 2 || typesize == 4 || typesize == 8)
    return typesize;
  return typesize % 8 == 0 ? 8 : 1;
}

static uint64_t load_unit(const uint8_t *p, int32_t u) {
  uint64_t v = 0;
  memcpy(&v, p, (size_t)u);
  return v;
}

static void store_unit(uint8_t *p, uint64_t v, int32_t u) {
  memcpy(p, &v, (size_t)u);
}

/* Block 0 is XORed with its previous unit, other blocks with block 0 of the
 * chunk.  Bytes after the last whole unit are copied (c-blosc2 leaves them
 * undefined; copying them makes such chunks round-trip). */
static void delta_encode(const uint8_t *ref, int is_first, int32_t bsize,
                         int32_t typesize, const uint8_t *src, uint8_t *dst) {
  int32_t u = delta_unit(typesize), k = bsize / u;
  if (is_first) {
    if (k > 0)
      store_unit(dst, load_unit(src, u), u);
    for (int32_t i = 1; i < k; i++)
      store_unit(dst + i * u, load_unit(src + i * u, u) ^ load_unit(src + (i - 1) * u, u), u);
  } else {
    for (int32_t i = 0; i < k; i++)
      store_unit(dst + i * u, load_unit(src + i * u, u) ^ load_unit(ref + i * u, u), u);
  }
  memcpy(dst + k * u, src + k * u, (size_t)(bsize - k * u));
}

static void delta_decode(const uint8_t *ref, int is_first, int32_t bsize,
                         int32_t typesize, const uint8_t *src, uint8_t *dst) {
  int32_t u = delta_unit(typesize), k = bsize / u;
  if (is_first) {
    uint64_t prev = 0;
    for (int32_t i = 0; i < k; i++) {
      prev ^= load_unit(src + i * u, u);
      store_unit(dst + i * u, prev, u);
    }
  } else {
    for (int32_t i = 0; i < k; i++)
      store_unit(dst + i * u, load_unit(src + i * u, u) ^ load_unit(ref + i * u, u), u);
  }
  memmove(dst + k * u, src + k * u, (size_t)(bsize - k * u));
}

/* Zeroed mantissa bits for TRUNC_PREC, or -1 when the meta is out of range. */
static int trunc_zeroed_bits(int8_t prec, int32_t typesize) {
  int mant = typesize == 4 ? 23 : typesize == 8 ? 52 : -1;
  if (mant < 0 || abs(prec) > mant)
    return -1;
  int zeroed = prec >= 0 ? mant - prec : -prec;
  return zeroed >= mant ? -1 : zeroed;
}

static void trunc_prec(int zeroed, int32_t typesize, int32_t bsize,
                       const uint8_t *src, uint8_t *dst) {
  int32_t n = bsize / typesize;
  if (typesize == 4) {
    uint32_t mask = ~((UINT32_C(1) << zeroed) - 1);
    for (int32_t i = 0; i < n; i++) {
      uint32_t v;
      memcpy(&v, src + 4 * i, 4);
      v &= mask;
      memcpy(dst + 4 * i, &v, 4);
    }
  } else {
    uint64_t mask = ~((UINT64_C(1) << zeroed) - 1);
    for (int32_t i = 0; i < n; i++) {
      uint64_t v;
      memcpy(&v, src + 8 * i, 8);
      v &= mask;
      memcpy(dst + 8 * i, &v, 8);
    }
  }
  memcpy(dst + n * typesize, src + n * typesize, (size_t)(bsize - n * typesize));
}

int b2s_filters_validate(const uint8_t *filters, const uint8_t *meta,
                         int32_t typesize, int for_compress) {
  for (int i = 0; i < B2S_MAX_FILTERS; i++) {
    if (filters[i] > B2S_FILTER_TRUNC_PREC)
      return B2S_E_FILTER;
    if (for_compress && filters[i] == B2S_FILTER_TRUNC_PREC &&
        trunc_zeroed_bits((int8_t)meta[i], typesize) < 0)
      return B2S_E_FILTER;
  }
  return 0;
}

static int32_t shuffle_group(uint8_t meta, int32_t typesize) {
  return meta ? meta : typesize;
}

const uint8_t *b2s_pipeline_forward(const b2s_cparams *cp, const uint8_t *src,
                                    int32_t bsize, const uint8_t *ref,
                                    int is_first, uint8_t *t0, uint8_t *t1) {
  const uint8_t *in = src;
  uint8_t *out = t0, *spare = t1;
  for (int i = 0; i < B2S_MAX_FILTERS; i++) {
    uint8_t meta = cp->filters_meta[i];
    switch (cp->filters[i]) {
    case B2S_FILTER_SHUFFLE:
      b2s_shuffle((size_t)shuffle_group(meta, cp->typesize), (size_t)bsize, in, out);
      break;
    case B2S_FILTER_BITSHUFFLE:
      b2s_bitshuffle((size_t)cp->typesize, (size_t)bsize, in, out);
      break;
    case B2S_FILTER_DELTA:
      delta_encode(ref, is_first, bsize, cp->typesize, in, out);
      break;
    case B2S_FILTER_TRUNC_PREC:
      trunc_prec(trunc_zeroed_bits((int8_t)meta, cp->typesize), cp->typesize,
                 bsize, in, out);
      break;
    default:
      continue;
    }
    /* Ping-pong between the two scratch buffers, never writing to src. */
    in = out;
    out = spare;
    spare = (uint8_t *)in;
  }
  return in;
}

int b2s_pipeline_backward(const b2s_chunk_info *info, uint8_t *src,
                          int32_t bsize, uint8_t *dst, const uint8_t *ref,
                          int is_first, uint8_t *t0) {
  /* Undo slots 5..0.  Each step writes to whichever of dst/t0 does not hold
   * the current data; a final copy lands the result in dst. */
  uint8_t *cur = src;
  for (int i = B2S_MAX_FILTERS - 1; i >= 0; i--) {
    uint8_t *out = cur == dst ? t0 : dst;
    int32_t ts = info->typesize;
    switch (info->filters[i]) {
    case B2S_FILTER_SHUFFLE:
      b2s_unshuffle((size_t)shuffle_group(info->filters_meta[i], ts), (size_t)bsize, cur, out);
      break;
    case B2S_FILTER_BITSHUFFLE:
      b2s_bitunshuffle((size_t)ts, (size_t)bsize, cur, out);
      break;
    case B2S_FILTER_DELTA:
      delta_decode(ref, is_first, bsize, ts, cur, out);
      break;
    case B2S_FILTER_NONE:
    case B2S_FILTER_TRUNC_PREC:    /* lossy, nothing to undo */
      continue;
    default:
      return B2S_E_FILTER;
    }
    cur = out;
  }
  if (cur != dst)
    memcpy(dst, cur, (size_t)bsize);
  return 0;
}

/* A b2nd chunk's items between C order and block order (b2s_blockorder.h).
 *
 * A run is a block's extent along the last split dimension times every
 * whole dimension after it: one run of bytes in both orders.  Dimensions
 * of extent 1 are dropped first, and whole trailing ones folded into the
 * item.  The chunk is walked band by band (the blocks that differ only in
 * their place along the last split dimension, one after the other in
 * block order), each band row by row in C order, so that the C-ordered
 * side is read (or written) forward. */
#include "b2s_blockorder.h"

#include <string.h>

static int bad_shape(b2s_errdetail *ed, int d, int32_t c, int32_t b) {
  return b2s_errdetail_set(ed, B2S_E_ARG, "dimension %d: block extent %d "
                           "for a chunk extent of %d", d, (int)b, (int)c);
}

/* Drops extent-1 dimensions; 0, or B2S_E_ARG. */
static int keep_dims(int ndim, const int32_t *cs, const int32_t *bs,
                     int64_t *c, int64_t *b, int *n, b2s_errdetail *ed) {
  *n = 0;
  for (int d = 0; d < ndim; d++) {
    if (cs[d] < 1 || bs[d] < 1)
      return bad_shape(ed, d, cs[d], bs[d]);
    if (cs[d] > 1) {
      c[*n] = cs[d];
      b[(*n)++] = bs[d];
    }
  }
  return 0;
}

int b2s_blockorder_init(b2s_blockorder *o, int ndim, const int32_t *chunkshape,
                        const int32_t *blockshape, int32_t typesize,
                        b2s_errdetail *ed) {
  b2s_errdetail_clear(ed);
  *o = (b2s_blockorder){0};
  if (ndim < 1 || ndim > B2S_BLOCKORDER_MAX_DIM || typesize < 1 ||
      !chunkshape || !blockshape)
    return b2s_errdetail_set(ed, B2S_E_ARG, "%d dimensions of %d-byte items",
                             ndim, (int)typesize);
  int64_t c[B2S_BLOCKORDER_MAX_DIM], b[B2S_BLOCKORDER_MAX_DIM];
  int n;
  int rc = keep_dims(ndim, chunkshape, blockshape, c, b, &n, ed);
  if (rc < 0)
    return rc;
  int64_t total = typesize;
  for (int d = 0; d < n; d++) {
    if (total > INT32_MAX / c[d])
      return b2s_errdetail_set(ed, B2S_E_ARG, "a chunk of more than %d bytes",
                               INT32_MAX);
    total *= c[d];
  }
  int64_t item = typesize;
  while (n > 0 && b[n - 1] == c[n - 1])        /* whole: part of the item */
    item *= c[--n];
  o->nbytes = total;
  /* a block larger than the chunk (a detector's padded chunk) is one
   * partial block: a run, if nothing before it splits */
  o->run = n ? (b[n - 1] < c[n - 1] ? b[n - 1] : c[n - 1]) * item : item;
  /* a run of the C order: one split dimension and nothing before it */
  if (n <= 1)
    return 0;
  for (int d = 0, k = 0; d < ndim; d++) {
    if (chunkshape[d] == 1)
      continue;
    if (c[k] % b[k])
      return b2s_errdetail_set(ed, B2S_E_ARG, "dimension %d: %d does not "
                               "divide the chunk's %d (blocks that are not "
                               "runs of the chunk's C order must)", d,
                               (int)blockshape[d], (int)chunkshape[d]);
    if (++k == n)
      break;
  }
  o->gather = true;
  o->n = n;
  int64_t stride = item;
  o->nbands = 1;
  for (int d = n - 1; d >= 0; d--) {
    o->grid[d] = c[d] / b[d];
    o->block[d] = b[d];
    o->stride[d] = stride;
    stride *= c[d];
    if (d < n - 1)
      o->nbands *= o->grid[d];
  }
  o->band_bytes = o->nbytes / o->nbands;
  return 0;
}

/* count runs of run bytes, cstep apart in the C-ordered chunk (c), bstep
 * apart in block order (b).  Runs of the common sizes are copied with
 * fixed-size moves, which the compiler inlines. */
#define RUNS(len)                                                          \
  do {                                                                     \
    for (int64_t r = 0; r < count; r++, c += cstep, b += bstep) {          \
      if (gather)                                                          \
        memcpy(b, c, (len));                                               \
      else                                                                 \
        memcpy(c, b, (len));                                               \
    }                                                                      \
  } while (0)

static void runs_copy(uint8_t *c, uint8_t *b, size_t run, int64_t count,
                      int64_t cstep, int64_t bstep, bool gather) {
  switch (run) {
  case 8: RUNS(8); break;
  case 16: RUNS(16); break;
  case 32: RUNS(32); break;
  case 64: RUNS(64); break;
  case 128: RUNS(128); break;
  case 256: RUNS(256); break;
  default: RUNS(run); break;
  }
}

/* Band k between its place in the C-ordered chunk and band[band_bytes].
 * The band's rows are visited in C order, each one run of the chunk (the
 * whole last split dimension), read or written in one pass and spread
 * over the band's blocks: the C-ordered side is walked forward, as the
 * caches and prefetchers like it.  Digits: a row's position in the block
 * along dimensions 0 .. n-2. */
static void band_walk(const b2s_blockorder *o, int64_t k, uint8_t *c_order,
                      uint8_t *band, bool gather) {
  int n = o->n;
  int64_t off = 0;
  for (int d = n - 2; d >= 0; d--) {          /* the band's corner */
    off += k % o->grid[d] * o->block[d] * o->stride[d];
    k /= o->grid[d];
  }
  int64_t at[B2S_BLOCKORDER_MAX_DIM] = {0};
  int64_t per = o->grid[n - 1], bbytes = o->band_bytes / per;
  for (int64_t pos = 0; pos < bbytes; pos += o->run) {
    runs_copy(c_order + off, band + pos, (size_t)o->run, per, o->run, bbytes,
              gather);
    int d = n - 2;
    while (d >= 0 && ++at[d] == o->block[d]) {  /* carry, rewinding */
      off -= (o->block[d] - 1) * o->stride[d];
      at[d--] = 0;
    }
    if (d >= 0)
      off += o->stride[d];
  }
}

static void walk(const b2s_blockorder *o, const uint8_t *src, uint8_t *dst,
                 bool gather) {
  uint8_t *c_order = (uint8_t *)(gather ? src : dst);
  uint8_t *blocked = (uint8_t *)(gather ? dst : src);
  for (int64_t k = 0; k < o->nbands; k++)
    band_walk(o, k, c_order, blocked + k * o->band_bytes, gather);
}

void b2s_blockorder_gather_band(const b2s_blockorder *o, const void *src,
                                int64_t k, void *dst) {
  band_walk(o, k, (uint8_t *)src, dst, true);
}

void b2s_blockorder_gather(const b2s_blockorder *o, const void *src, void *dst) {
  if (o->gather)
    walk(o, src, dst, true);
}

void b2s_blockorder_scatter(const b2s_blockorder *o, const void *src, void *dst) {
  if (o->gather)
    walk(o, src, dst, false);
}

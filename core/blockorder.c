/* A b2nd chunk's items between C order and block order (b2s_blockorder.h).
 *
 * The walk visits the chunk's block rows in block order: the blocks in C
 * order of the grid, each block's rows in C order of the blockshape; a
 * row is the block's extent along the last split dimension times every
 * whole dimension after it, one run of bytes in both orders.  Dimensions
 * of extent 1 are dropped first, and whole trailing ones folded into the
 * item, so an image in square blocks walks 2 grid and 1 row digit. */
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
    if (cs[d] < 1 || bs[d] < 1 || bs[d] > cs[d])
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
  o->run = n ? b[n - 1] * item : item;
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
  for (int d = n - 1; d >= 0; d--) {
    o->grid[d] = c[d] / b[d];
    o->block[d] = b[d];
    o->stride[d] = stride;
    stride *= c[d];
  }
  return 0;
}

/* Calls back each run: its offset in the C-ordered chunk, in block order.
 * Digits: the n grid positions, then the block row's n - 1 positions. */
static void walk(const b2s_blockorder *o, const uint8_t *src, uint8_t *dst,
                 bool gather) {
  int n = o->n, nd = 2 * n - 1;
  int64_t lim[2 * B2S_BLOCKORDER_MAX_DIM], step[2 * B2S_BLOCKORDER_MAX_DIM];
  int64_t at[2 * B2S_BLOCKORDER_MAX_DIM] = {0};
  for (int d = 0; d < n; d++) {
    lim[d] = o->grid[d];
    step[d] = o->block[d] * o->stride[d];
  }
  for (int d = 0; d < n - 1; d++) {
    lim[n + d] = o->block[d];
    step[n + d] = o->stride[d];
  }
  size_t run = (size_t)o->run;
  int64_t off = 0;
  for (int64_t seq = 0; seq < o->nbytes; seq += o->run) {
    if (gather)
      memcpy(dst + seq, src + off, run);
    else
      memcpy(dst + off, src + seq, run);
    int d = nd - 1;
    while (d >= 0 && ++at[d] == lim[d]) {   /* carry, rewinding the digit */
      off -= (lim[d] - 1) * step[d];
      at[d--] = 0;
    }
    if (d >= 0)
      off += step[d];
  }
}

void b2s_blockorder_gather(const b2s_blockorder *o, const void *src, void *dst) {
  if (o->gather)
    walk(o, src, dst, true);
}

void b2s_blockorder_scatter(const b2s_blockorder *o, const void *src, void *dst) {
  if (o->gather)
    walk(o, src, dst, false);
}

/* The two orders of a b2nd chunk's items.
 *
 * A producer has a chunk's items in C order of its chunkshape (as a
 * C-contiguous numpy array of that shape holds them).  A b2nd frame
 * stores them block after block: the blocks in C order of the chunk's
 * block grid, each block's items in C order of the blockshape (c-blosc2's
 * b2nd; docs/BLOSC2_FORMAT.md).  The two orders are the same when every
 * block is one run of the C-ordered chunk (after the first dimension a
 * block splits, it spans the chunk); otherwise the items are gathered
 * into block order before they are compressed, and scattered back after
 * they are decompressed.
 *
 * Only blockshapes that divide the chunkshape are gathered: c-blosc2 pads
 * any other chunk to whole blocks, a chunk of another size.
 *
 * Ownership: a b2s_blockorder is a plain value, made once per shape and
 * read by any number of threads; the buffers belong to the caller. */
#ifndef B2S_BLOCKORDER_H
#define B2S_BLOCKORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "b2s_errors.h"

#define B2S_BLOCKORDER_MAX_DIM 16

typedef struct b2s_blockorder {
  bool gather;        /* false: block order is C order, nothing to move */
  int n;              /* dimensions left after folding whole trailing ones */
  int64_t nbytes;     /* bytes of one chunk */
  int64_t run;        /* bytes moved at a time: one row of a block */
  int64_t grid[B2S_BLOCKORDER_MAX_DIM];    /* blocks along each dimension */
  int64_t block[B2S_BLOCKORDER_MAX_DIM];   /* a block's extent */
  int64_t stride[B2S_BLOCKORDER_MAX_DIM];  /* bytes between C-order steps */
  /* A band: the grid[n - 1] blocks that differ only along the last split
   * dimension, one after the other in block order (band k starts at byte
   * k * band_bytes); a chunk has nbands of them. */
  int64_t band_bytes, nbands;
} b2s_blockorder;

/* The plan for chunks of chunkshape in blocks of blockshape (ndim
 * 1..B2S_BLOCKORDER_MAX_DIM, every extent >= 1) of typesize-byte items.
 * B2S_E_ARG for shapes outside that, or for blocks that are not runs of
 * the C order and do not divide the chunkshape (ed says which dimension).
 * A block larger than the chunk is a run only where nothing before it is
 * split (the padded chunks of a detector's flat images, one block). */
int b2s_blockorder_init(b2s_blockorder *o, int ndim, const int32_t *chunkshape,
                        const int32_t *blockshape, int32_t typesize,
                        b2s_errdetail *ed);

/* One chunk's o->nbytes bytes from C order (src) into block order (dst),
 * and back.  src and dst do not overlap.  Nothing to do when !o->gather
 * (the bytes are the same; the callers skip the copy). */
void b2s_blockorder_gather(const b2s_blockorder *o, const void *src, void *dst);
void b2s_blockorder_scatter(const b2s_blockorder *o, const void *src, void *dst);

/* Only band k (0 .. o->nbands - 1) of the C-ordered chunk src into dst,
 * its o->band_bytes in block order; o->gather must be set.  What the chunk
 * encoder calls band by band (b2s_compress_blocks), so that each band is
 * gathered while it fits the cache. */
void b2s_blockorder_gather_band(const b2s_blockorder *o, const void *src,
                                int64_t k, void *dst);

#endif

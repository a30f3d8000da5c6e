/* Frame chunks in the HDF5 bitshuffle+LZ4 framing (bslz4.h): re-encoded
 * from the decoded items, or re-framed when the stored chunk already is
 * bitshuffle+LZ4 in blocks the framing can hold. */
#include <stdlib.h>
#include <string.h>

#include "b2s_h5lz4.h"
#include "cli_bslz4.h"
#include "cmd_export.h"

enum { BSHUF_MULT = 8 };

/* ---- from a frame's chunk ------------------------------------------------ */

/* Whether the chunk's decoded bytes are its items in C order: no b2nd, or
 * blocks that divide the chunk, split one dimension with only dimensions
 * of size 1 before it (a block (2, 3, x) of a chunk (2, 6, x) holds rows
 * of two images) and span the chunk after it. */
static bool c_order(const cli_exp_shape *sh) {
  if (!sh->b2nd)
    return true;
  const b2s_b2nd *nd = &sh->nd;
  for (int d = 0; d < nd->ndim; d++)
    if (nd->chunkshape[d] % nd->blockshape[d])
      return false;
  int d = 0;
  while (d < nd->ndim && nd->chunkshape[d] == 1)
    d++;
  for (d++; d < nd->ndim; d++)
    if (nd->blockshape[d] != nd->chunkshape[d])
      return false;
  return true;
}

/* b2nd block order -> C order of the chunk (blocks padded to whole
 * blockshapes at the edges, as b2nd stores them). */
static void unblock(const cli_exp_shape *sh, const uint8_t *in, uint8_t *out) {
  const b2s_b2nd *nd = &sh->nd;
  int n = nd->ndim;
  size_t ts = (size_t)sh->typesize;
  int64_t grid[B2S_B2ND_MAX_DIM], g[B2S_B2ND_MAX_DIM] = {0};
  int64_t nblocks = 1, rows_per_block = 1;
  for (int d = 0; d < n; d++) {
    grid[d] = (nd->chunkshape[d] + nd->blockshape[d] - 1) / nd->blockshape[d];
    nblocks *= grid[d];
    if (d < n - 1)
      rows_per_block *= nd->blockshape[d];
  }
  size_t row_bytes = (size_t)nd->blockshape[n - 1] * ts;
  for (int64_t b = 0; b < nblocks; b++) {
    for (int64_t r = 0; r < rows_per_block; r++, in += row_bytes) {
      int64_t pos = 0, rr = r;
      bool inside = true;
      int64_t p[B2S_B2ND_MAX_DIM];
      for (int d = n - 2; d >= 0; d--) {
        p[d] = g[d] * nd->blockshape[d] + rr % nd->blockshape[d];
        rr /= nd->blockshape[d];
        inside = inside && p[d] < nd->chunkshape[d];
      }
      int64_t x0 = g[n - 1] * nd->blockshape[n - 1];
      int64_t w = nd->chunkshape[n - 1] - x0;
      if (!inside || w <= 0)
        continue;
      if (w > nd->blockshape[n - 1])
        w = nd->blockshape[n - 1];
      for (int d = 0; d < n - 1; d++)
        pos = pos * nd->chunkshape[d] + p[d];
      pos = pos * nd->chunkshape[n - 1] + x0;
      memcpy(out + (size_t)pos * ts, in, (size_t)w * ts);
    }
    for (int d = n - 1; d >= 0 && ++g[d] == grid[d]; d--)
      g[d] = 0;
  }
}

/* The stored chunk's LZ4 blocks re-framed, when its layout allows (see
 * the top); 1 when done, 0 when the chunk must be re-encoded. */
static int reframe(cli_exp_job *j, const cli_chunk *d) {
  const b2s_chunk_info *ci = &d->info;
  int32_t ts = j->sh.typesize;
  if (!d->stored || ci->special || ci->memcpyed || ci->vl_blocks ||
      ci->use_dict || ci->codec != B2S_CODEC_LZ4 || ci->typesize != ts ||
      ci->header_len != B2S_HEADER_LEN || !c_order(&j->sh) ||
      d->nbytes != j->sh.chunk_nbytes)
    return 0;
  for (int k = 0; k < B2S_MAX_FILTERS - 1; k++)
    if (ci->filters[k] != B2S_FILTER_NONE)
      return 0;
  if (ci->filters[B2S_MAX_FILTERS - 1] != B2S_FILTER_BITSHUFFLE)
    return 0;
  int32_t bs = ci->blocksize, nb = d->nbytes;
  int32_t nblocks = (nb + bs - 1) / bs, last = nb - (nblocks - 1) * bs;
  /* every block but the last a multiple of 8 items, the last one too
   * (then no raw tail), and nothing of the chunk stored by other means */
  if (bs % (ts * BSHUF_MULT) || last % (ts * BSHUF_MULT))
    return 0;
  const uint8_t *c = d->bytes;
  j->buf.len = 0;
  if (cli_bslz4_frame_header(&j->buf, (uint64_t)nb, (uint32_t)bs) < 0)
    return -1;
  for (int32_t b = 0; b < nblocks; b++) {
    int32_t start = (int32_t)(c[32 + 4 * b] | c[33 + 4 * b] << 8 |
                              c[34 + 4 * b] << 16 | (uint32_t)c[35 + 4 * b] << 24);
    int32_t neblock = b == nblocks - 1 ? last : bs;
    if (start < 32 || start > d->cbytes - 4)
      return 0;
    int32_t cs = (int32_t)(c[start] | c[start + 1] << 8 | c[start + 2] << 16 |
                           (uint32_t)c[start + 3] << 24);
    /* one LZ4 stream per block; a run or a block kept raw is re-encoded */
    if (cs <= 0 || cs >= neblock || cs > d->cbytes - start - 4)
      return 0;
    uint8_t be[4];
    cli_bslz4_put_be32(be, (uint32_t)cs);
    if (b2s_mp_write_raw(&j->buf, be, 4) < 0 ||
        b2s_mp_write_raw(&j->buf, c + start + 4, (size_t)cs) < 0)
      return -1;
  }
  return 1;
}

int cli_exp_bslz4_chunk(cli_exp_job *j, int64_t i, const cli_chunk *d) {
  int r = reframe(j, d);
  if (r != 0)
    return r < 0 ? -1 : 0;
  const uint8_t *dec;
  int n = cli_src_decode(&j->src, i, &dec);
  if (n < 0)
    return -1;
  size_t full = (size_t)j->sh.chunk_nbytes;
  const uint8_t *items = dec;
  if (!c_order(&j->sh)) {
    memset(j->pad, 0, full);
    unblock(&j->sh, dec, j->pad);
    items = j->pad;
  } else if ((size_t)n != full) {   /* short last chunk or gap: whole chunk */
    memset(j->pad, 0, full);
    memcpy(j->pad, dec, (size_t)n < full ? (size_t)n : full);
    items = j->pad;
  }
  j->buf.len = 0;
  b2s_h5_params hp = {.kind = B2S_H5_BSLZ4, .elem_size = j->sh.typesize};
  size_t bound = b2s_h5_compress_bound(&hp, 0, full);
  int64_t rc = b2s_mpbuf_reserve(&j->buf, bound);
  if (rc >= 0)
    rc = b2s_h5_compress(&hp, 0, items, full, j->buf.data, bound);
  if (rc >= 0)
    j->buf.len = (size_t)rc;
  if (rc < 0)
    cli_err("%s: chunk %lld: %s", j->src.path, (long long)i,
            b2s_strerror((int)rc));
  return rc < 0 ? -1 : 0;
}

/* A stored chunk as one HDF5 Blosc2-filter chunk.
 *
 * The filter (hdf5-blosc2, as hdf5plugin ships it) decompresses each HDF5
 * chunk with blosc2_schunk_from_buffer: the chunk must be a whole
 * contiguous Blosc2 frame.  With a "b2nd" metalayer it reads the array
 * through b2nd (so blocks that do not span the trailing dimensions are
 * put back in C order), and the array's shape must equal the dataset's
 * chunk shape; without one it decompresses frame chunk 0 as is.  So the
 * frame's chunk goes in untouched behind a header, with an index of one
 * entry and an empty trailer: no decoding, no recompression. */
#include <string.h>

#include "cmd_export.h"

/* The index chunk: one 64-bit offset (0: the chunk follows the header),
 * stored memcpy'ed as c-blosc2 stores a tiny index. */
static int index_chunk(uint8_t out[B2S_HEADER_LEN + 8]) {
  uint8_t zero[8] = {0};
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.clevel = 0;
  cp.filters[B2S_MAX_FILTERS - 1] = B2S_FILTER_NONE;
  b2s_ctx *ctx = b2s_ctx_new();
  if (ctx == NULL)
    return B2S_E_NOMEM;
  int rc = b2s_compress(ctx, &cp, zero, sizeof zero, out, B2S_HEADER_LEN + 8);
  b2s_ctx_free(ctx);
  return rc;
}

static int one_chunk_b2nd(const b2s_b2nd *nd, b2s_frame_metas *m) {
  b2s_b2nd one = *nd;
  for (int d = 0; d < nd->ndim; d++)
    one.shape[d] = nd->chunkshape[d];
  b2s_mpbuf b;
  b2s_mpbuf_init(&b);
  int rc = b2s_b2nd_write(&one, &b);
  if (rc >= 0)
    rc = b2s_frame_metas_add(m, "b2nd", b.data, (int32_t)b.len);
  b2s_mpbuf_fini(&b);
  return rc < 0 ? rc : 0;
}

static uint8_t ix[B2S_HEADER_LEN + 8];   /* the same for every chunk */
static int ixlen;

int cli_exp_wrap_head(const b2s_frame_header *src, const b2s_b2nd *nd,
                      int32_t cbytes, int32_t nbytes, b2s_mpbuf *out) {
  if (ixlen <= 0 && (ixlen = index_chunk(ix)) < 0)
    return ixlen;
  b2s_frame_metas m;
  b2s_frame_metas_init(&m);
  b2s_frame_metas vl;
  b2s_frame_metas_init(&vl);
  int rc = nd ? one_chunk_b2nd(nd, &m) : 0;
  int64_t hlen = rc < 0 ? rc : b2s_frame_header_size(&m);
  int64_t tlen = b2s_frame_trailer_size(&vl);
  if (hlen < 0 || tlen < 0) {
    b2s_frame_metas_fini(&m);
    return hlen < 0 ? (int)hlen : (int)tlen;
  }
  b2s_frame_header h = *src;
  h.general_flags = (uint8_t)((src->general_flags & B2S_FRAME_GF_VERSION_MASK) |
                              B2S_FRAME_GF_OFFSETS64);
  h.frame_type = B2S_FRAME_TYPE_CONTIGUOUS;
  h.nbytes = nbytes;
  h.cbytes = cbytes;
  h.chunksize = nbytes;
  h.has_vlmeta = false;
  h.frame_len = hlen + cbytes + ixlen + tlen;
  rc = b2s_frame_header_write(&h, &m, out);
  b2s_frame_metas_fini(&m);
  return rc < 0 ? rc : 0;
}

int cli_exp_wrap_tail(b2s_mpbuf *out) {
  b2s_frame_metas vl;
  b2s_frame_metas_init(&vl);
  int rc = b2s_mp_write_raw(out, ix, (size_t)ixlen);
  if (rc >= 0)
    rc = b2s_frame_trailer_write(&vl, out);
  return rc < 0 ? rc : 0;
}

int cli_exp_wrap_cframe(const b2s_frame_header *src, const b2s_b2nd *nd,
                        const uint8_t *chunk, int32_t cbytes, int32_t nbytes,
                        b2s_mpbuf *out) {
  int rc = cli_exp_wrap_head(src, nd, cbytes, nbytes, out);
  if (rc == 0)
    rc = b2s_mp_write_raw(out, chunk, (size_t)cbytes);
  if (rc >= 0)
    rc = cli_exp_wrap_tail(out);
  return rc < 0 ? rc : 0;
}

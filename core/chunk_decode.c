/* Chunk decoder: whole chunks and item ranges (spec sections 1-3).  The
 * header is validated by b2s_chunk_info_get(); everything read from the body
 * (bstarts, stream sizes, dictionary) is bounds-checked here against cbytes. */
#include <stdlib.h>

#include "chunk_internal.h"

typedef struct dec {
  b2s_ctx *ctx;
  const uint8_t *src;
  b2s_chunk_info ci;
  int32_t data_start;              /* first byte after bstarts and dictionary */
  int32_t leftover;
  bool filtered;                   /* some filter must be undone */
  uint8_t *t0, *t1, *ref, *part;   /* scratch: pipeline, codec out, DELTA ref, slice */
  /* Runs already in t1: bit s set when stream s of run_neblock bytes at
   * t1 + s * run_neblock holds the byte run_byte[s], left there by the
   * block before.  A split block's run streams (the high bytes of small
   * integers, a float's exponent) are mostly the same block after block,
   * and are then not written again. */
  uint32_t runs;
  int32_t run_neblock;
  uint8_t run_byte[32];
} dec;

static bool has_filter(const b2s_chunk_info *ci, int id) {
  for (int i = 0; i < B2S_MAX_FILTERS; i++)
    if (ci->filters[i] == id)
      return true;
  return false;
}

static void fill_special(const dec *d, uint8_t *dst, int64_t from, int64_t n) {
  static const uint8_t nan32[4] = {0x00, 0x00, 0xc0, 0x7f};
  static const uint8_t nan64[8] = {0, 0, 0, 0, 0, 0, 0xf8, 0x7f};
  const uint8_t *item;
  int64_t isz;
  switch (d->ci.special) {
  case B2S_SPECIAL_ZERO:
    memset(dst, 0, (size_t)n);
    return;
  case B2S_SPECIAL_UNINIT:
    return;                        /* contents undefined; leave dst alone */
  case B2S_SPECIAL_NAN:
    item = d->ci.typesize == 4 ? nan32 : nan64;
    isz = d->ci.typesize;
    break;
  default:
    item = d->src + d->ci.header_len;
    isz = d->ci.cbytes - d->ci.header_len;
    break;
  }
  /* One period at the right phase, then double it: every copied prefix is
   * a whole number of periods long. */
  int64_t first = n < isz ? n : isz;
  for (int64_t i = 0; i < first; i++)
    dst[i] = item[(from + i) % isz];
  for (int64_t k = first; k < n; k *= 2)
    memcpy(dst + k, dst, (size_t)(n - k < k ? n - k : k));
}

/* Stream k of a block decoded into t1 is a run of `byte`: written unless
 * it is there already. */
static void run_into_t1(dec *d, int32_t k, uint8_t byte, uint8_t *out, int32_t neblock) {
  uint32_t bit = k < 32 ? UINT32_C(1) << k : 0;
  if (bit && (d->runs & bit) && d->run_byte[k] == byte)
    return;
  memset(out, byte, (size_t)neblock);
  if (bit) {
    d->runs |= bit;
    d->run_byte[k] = byte;
  }
}

/* Stream k of neblock bytes into out; t1 says whether out is t1 + k *
 * neblock (see dec.runs). */
static int stream_at(dec *d, int32_t *pos, uint8_t *out, int32_t neblock, int32_t k,
                     bool t1) {
  const uint8_t *s = d->src;
  int32_t cb = d->ci.cbytes, p = *pos;
  if (p < d->data_start || p > cb - 4)
    return B2S_E_STREAM;
  int32_t csize = b2s_rd32(s + p);
  p += 4;
  if (t1 && neblock != d->run_neblock) {
    d->runs = 0;                   /* the streams lie elsewhere in t1 now */
    d->run_neblock = neblock;
  }
  if (t1 && k < 32 && csize > 0)
    d->runs &= ~(UINT32_C(1) << k);
  if (csize == 0) {
    if (t1)
      run_into_t1(d, k, 0, out, neblock);
    else
      memset(out, 0, (size_t)neblock);
  } else if (csize < 0) {
    if (p >= cb)
      return B2S_E_STREAM;
    if (csize < -255 || !(s[p] & 0x01))
      return B2S_E_TOKEN;
    if (t1)
      run_into_t1(d, k, (uint8_t)((-csize) & 0xff), out, neblock);
    else
      memset(out, (-csize) & 0xff, (size_t)neblock);
    p += 1;
  } else {
    if (csize > cb - p)
      return B2S_E_STREAM;
    if (csize == neblock)
      memcpy(out, s + p, (size_t)neblock);
    else {
      int rc = b2s_codec_decompress(d->ctx, d->ci.compformat, s + p, csize, out, neblock);
      if (rc < 0)
        return rc;
    }
    p += csize;
  }
  *pos = p;
  return 0;
}

static int32_t block_size(const dec *d, int32_t j) {
  return j == d->ci.nblocks - 1 && d->leftover ? d->leftover : d->ci.blocksize;
}

/* Blosc1 version 2 stored blocks with a partial group of 8 items unshuffled. */
static bool skip_bitshuffle(const dec *d, int32_t bsize) {
  return d->ci.header_len == B2S_HEADER1_LEN && d->ci.version == 2 &&
         (bsize / d->ci.typesize) % 8 != 0;
}

/* Decode block j into out.  ref: decoded block 0 (for DELTA). */
static int decode_block(dec *d, int32_t j, uint8_t *out, const uint8_t *ref) {
  int32_t bsize = block_size(d, j);
  bool short_last = bsize != d->ci.blocksize;
  int32_t nstreams = d->ci.dont_split || short_last ? 1 : d->ci.typesize;
  if (bsize % nstreams)
    return B2S_E_BLOCKSIZE;        /* a split block must hold whole items */
  int32_t neblock = bsize / nstreams;
  int32_t pos = b2s_rd32(d->src + d->ci.header_len + 4 * j);
  uint8_t *raw = d->filtered ? d->t1 : out;
  for (int32_t s = 0; s < nstreams; s++) {
    int rc = stream_at(d, &pos, raw + (size_t)s * neblock, neblock, s, d->filtered);
    if (rc < 0)
      return rc;
  }
  if (!d->filtered)
    return 0;
  b2s_chunk_info ci = d->ci;
  if (skip_bitshuffle(d, bsize))
    for (int i = 0; i < B2S_MAX_FILTERS; i++)
      if (ci.filters[i] == B2S_FILTER_BITSHUFFLE)
        ci.filters[i] = B2S_FILTER_NONE;
  return b2s_pipeline_backward(&ci, raw, bsize, out, ref, j == 0, d->t0);
}

static bool any_backward_filter(const b2s_chunk_info *ci) {
  for (int i = 0; i < B2S_MAX_FILTERS; i++)
    if (ci->filters[i] != B2S_FILTER_NONE && ci->filters[i] != B2S_FILTER_TRUNC_PREC)
      return true;
  return false;
}

static int read_dict(dec *d) {
  int32_t at = d->data_start;
  if (at > d->ci.cbytes - 4)
    return B2S_E_DICT;
  int32_t dsize = b2s_rd32(d->src + at);
  if (dsize <= 0 || dsize > B2S_MAX_DICT || dsize > d->ci.cbytes - at - 4)
    return B2S_E_DICT;
  if (d->ci.compformat != 1 && d->ci.compformat != 4)
    return B2S_E_DICT;             /* only lz4(hc) and zstd take dictionaries */
  d->data_start = at + 4 + dsize;
  return b2s_codec_dict_begin(d->ctx, d->ci.compformat == 4, d->src + at + 4, dsize, 0);
}

static int setup(dec *d, b2s_ctx *ctx, const void *src, size_t srcsize,
                 size_t maxblock) {
  memset(d, 0, sizeof(*d));
  d->ctx = ctx;
  d->src = src;
  if (!ctx)
    return B2S_E_ARG;
  int rc = b2s_chunk_info_get(src, srcsize, &d->ci);
  if (rc < 0 || d->ci.special || d->ci.memcpyed)
    return rc;
  d->leftover = d->ci.vl_blocks ? 0 : d->ci.nbytes % d->ci.blocksize;
  d->filtered = any_backward_filter(&d->ci);
  int64_t bst_end = d->ci.header_len + 4 * (int64_t)d->ci.nblocks;
  if (bst_end > d->ci.cbytes)
    return B2S_E_BSTARTS;
  d->data_start = (int32_t)bst_end;
  size_t blk = maxblock ? maxblock : (size_t)d->ci.blocksize;
  if (!(d->t0 = b2s_ctx_scratch(ctx, 0, blk)))
    return B2S_E_NOMEM;
  d->t1 = b2s_ctx_scratch(ctx, 1, blk);
  d->ref = b2s_ctx_scratch(ctx, 2, blk);
  d->part = b2s_ctx_scratch(ctx, 3, blk);
  return d->ci.use_dict ? read_dict(d) : 0;
}

/* VL-block chunks (spec 1.11): block i spans bstarts[i] .. bstarts[i+1] (or
 * cbytes) and starts with its own uncompressed size. */
static int vl_block_span(const dec *d, int32_t i, int32_t *start, int32_t *clen,
                         int32_t *nb) {
  const uint8_t *bst = d->src + d->ci.header_len;
  int64_t s = b2s_rd32(bst + 4 * i);
  int64_t e = i + 1 < d->ci.nblocks ? b2s_rd32(bst + 4 * (i + 1)) : d->ci.cbytes;
  /* 64-bit so hostile starts cannot overflow the difference */
  if (s < d->data_start || e > d->ci.cbytes || e - s < 4)
    return B2S_E_BSTARTS;
  *nb = b2s_rd32(d->src + s);
  *start = (int32_t)s + 4;
  *clen = (int32_t)(e - s - 4);
  return *nb < 0 ? B2S_E_STREAM : 0;
}

static int vl_decode(dec *d, uint8_t *dst, size_t dstsize) {
  int64_t total = 0, maxblk = 1;
  for (int32_t i = 0; i < d->ci.nblocks; i++) {
    int32_t s, c, nb;
    int rc = vl_block_span(d, i, &s, &c, &nb);
    if (rc < 0)
      return rc;
    total += nb;
    maxblk = nb > maxblk ? nb : maxblk;
  }
  if (total != d->ci.nbytes)
    return B2S_E_CBYTES;
  if ((size_t)total > dstsize)
    return B2S_E_DEST_SMALL;
  if (!(d->t0 = b2s_ctx_scratch(d->ctx, 0, (size_t)maxblk)))
    return B2S_E_NOMEM;
  d->t1 = b2s_ctx_scratch(d->ctx, 1, (size_t)maxblk);
  int64_t off = 0;
  for (int32_t i = 0; i < d->ci.nblocks; i++) {
    int32_t s, c, nb;
    vl_block_span(d, i, &s, &c, &nb);
    uint8_t *raw = d->filtered ? d->t1 : dst + off;
    int rc = c == nb ? (memcpy(raw, d->src + s, (size_t)nb), 0)
                     : b2s_codec_decompress(d->ctx, d->ci.compformat, d->src + s, c, raw, nb);
    /* each VL block is its own DELTA reference */
    if (rc == 0 && d->filtered)
      rc = b2s_pipeline_backward(&d->ci, raw, nb, dst + off, dst + off, 1, d->t0);
    if (rc < 0)
      return rc;
    off += nb;
  }
  return (int)total;
}

static int finish(dec *d, int rc) {
  if (d->ci.use_dict)
    b2s_codec_dict_end(d->ctx);
  return rc;
}

int b2s_decompress(b2s_ctx *ctx, const void *src, size_t srcsize, void *dst,
                   size_t dstsize) {
  dec d;
  if (!src || (!dst && dstsize))
    return B2S_E_ARG;
  int rc = setup(&d, ctx, src, srcsize, 0);
  if (rc < 0)
    return finish(&d, rc);
  if (d.ci.vl_blocks)
    return finish(&d, vl_decode(&d, dst, dstsize));
  if ((size_t)d.ci.nbytes > dstsize)
    return finish(&d, B2S_E_DEST_SMALL);
  if (d.ci.special)
    fill_special(&d, dst, 0, d.ci.nbytes);
  else if (d.ci.memcpyed)
    b2s_copy_blocks(dst, d.src + d.ci.header_len, (size_t)d.ci.nbytes,
                    (size_t)d.ci.blocksize);
  else
    for (int32_t j = 0; j < d.ci.nblocks && rc == 0; j++)
      rc = decode_block(&d, j, (uint8_t *)dst + (size_t)j * d.ci.blocksize, dst);
  return finish(&d, rc < 0 ? rc : d.ci.nbytes);
}

/* Decoded block 0 for DELTA, decoding it once into scratch when the range
 * does not start with it. */
static int delta_ref(dec *d, int32_t first, const uint8_t **ref) {
  *ref = NULL;
  if (!has_filter(&d->ci, B2S_FILTER_DELTA))
    return 0;
  *ref = d->ref;
  return first == 0 ? 0 : decode_block(d, 0, d->ref, d->ref);
}

static int getitem_blocks(dec *d, int64_t from, int64_t to, uint8_t *dst) {
  int32_t bs = d->ci.blocksize;
  int32_t first = (int32_t)(from / bs), last = (int32_t)((to - 1) / bs);
  const uint8_t *ref;
  int rc = delta_ref(d, first, &ref);
  for (int32_t j = first; j <= last && rc == 0; j++) {
    int64_t b0 = (int64_t)j * bs, b1 = b0 + block_size(d, j);
    int64_t lo = from > b0 ? from : b0, hi = to < b1 ? to : b1;
    if (lo == b0 && hi == b1 && j != 0) {
      rc = decode_block(d, j, dst + (b0 - from), ref);
      continue;
    }
    /* Partial block (or block 0, which DELTA needs whole): via scratch. */
    uint8_t *out = j == 0 && ref ? d->ref : d->part;
    rc = decode_block(d, j, out, j == 0 ? out : ref);
    if (rc == 0)
      memcpy(dst + (lo - from), out + (lo - b0), (size_t)(hi - lo));
  }
  return rc;
}

int b2s_getitem(b2s_ctx *ctx, const void *src, size_t srcsize, int32_t start,
                int32_t nitems, void *dst, size_t dstsize) {
  dec d;
  if (!src || !dst || start < 0 || nitems < 0)
    return B2S_E_ARG;
  int rc = setup(&d, ctx, src, srcsize, 0);
  if (rc < 0)
    return finish(&d, rc);
  int64_t isz = d.ci.special == B2S_SPECIAL_VALUE ? d.ci.cbytes - d.ci.header_len
                                                   : d.ci.typesize;
  int64_t from = start * isz, to = from + nitems * isz;
  if (to > d.ci.nbytes)
    return finish(&d, B2S_E_RANGE);
  if ((size_t)(to - from) > dstsize)
    return finish(&d, B2S_E_DEST_SMALL);
  if (to == from)
    return finish(&d, 0);
  if (d.ci.special)
    fill_special(&d, dst, from, to - from);
  else if (d.ci.memcpyed)
    memcpy(dst, d.src + d.ci.header_len + from, (size_t)(to - from));
  else if (d.ci.vl_blocks)
    rc = B2S_E_ARG;                /* VL chunks are read whole */
  else
    rc = getitem_blocks(&d, from, to, dst);
  return finish(&d, rc < 0 ? rc : (int)(to - from));
}

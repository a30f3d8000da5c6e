/* Chunk encoder.  Single-threaded by design (one context per worker thread),
 * so blocks are stored in index order and the output is deterministic and
 * identical to c-blosc2 with nthreads = 1 (spec sections 1 and 9). */
#include <stdlib.h>

#include "b2s_blockorder.h"
#include "chunk_internal.h"

typedef struct enc {
  b2s_ctx *ctx;
  const b2s_cparams *cp;
  const uint8_t *src;
  uint8_t *dst;
  int32_t nbytes, dstsize, blocksize, nblocks, leftover, pos;
  bool split;
  uint8_t *t0, *t1;
  /* b2s_compress_blocks: src holds the items in C order; the band of
   * blocks holding block j is gathered into band when block j is taken
   * (blocks are taken in order), block 0 (DELTA's reference) once into
   * g0 */
  const b2s_blockorder *order;
  uint8_t *band, *g0;
  int32_t per_band;
  int64_t band_at;                 /* the band in band, -1: none */
} enc;

/* Block j's bytes, in block order. */
static const uint8_t *block_in(enc *e, int32_t j) {
  if (!e->order)
    return e->src + (size_t)j * e->blocksize;
  int64_t k = j / e->per_band;
  if (k != e->band_at) {
    b2s_blockorder_gather_band(e->order, e->src, k, e->band);
    e->band_at = k;
  }
  return e->band + (size_t)(j % e->per_band) * e->blocksize;
}

/* Block 0 as DELTA refers to it. */
static const uint8_t *ref_block(const enc *e) {
  return e->order ? e->g0 : e->src;
}

int b2s_cparams_check(const b2s_cparams *cp) {
  if (cp == NULL)
    return B2S_E_ARG;
  if (cp->clevel < 0 || cp->clevel > 9 || cp->blocksize < 0 ||
      cp->blocksize > B2S_MAX_BLOCKSIZE || cp->splitmode < B2S_SPLIT_ALWAYS ||
      cp->splitmode > B2S_SPLIT_FORWARD_COMPAT)
    return B2S_E_ARG;
  if (cp->typesize < 1 || cp->typesize > B2S_MAX_TYPESIZE)
    return B2S_E_TYPESIZE;
  if (b2s_codec_compformat(cp->codec) < 0)
    return B2S_E_CODEC;
  if (cp->use_dict && cp->codec != B2S_CODEC_ZSTD && cp->codec != B2S_CODEC_LZ4 &&
      cp->codec != B2S_CODEC_LZ4HC)
    return B2S_E_NODICT_CODEC;
  return b2s_filters_validate(cp->filters, cp->filters_meta, cp->typesize, 1);
}

static int validate(const b2s_cparams *cp, int32_t nbytes, int32_t dstsize) {
  if (!cp || nbytes < 0 || nbytes > B2S_MAX_BUFFERSIZE)
    return B2S_E_ARG;
  if (dstsize < B2S_MAX_OVERHEAD)
    return B2S_E_DEST_SMALL;     /* not even room for a header */
  return b2s_cparams_check(cp);
}

static bool has_delta(const b2s_cparams *cp) {
  for (int i = 0; i < B2S_MAX_FILTERS; i++)
    if (cp->filters[i] == B2S_FILTER_DELTA)
      return true;
  return false;
}

static void write_header(uint8_t *d, const b2s_cparams *cp, uint8_t flags,
                         int32_t nbytes, int32_t blocksize, uint8_t b2flags) {
  memset(d, 0, B2S_HEADER_LEN);
  d[B2S_OFF_VERSION] = B2S_CHUNK_VERSION;
  d[B2S_OFF_VERSIONLZ] = 1;
  d[B2S_OFF_FLAGS] = flags;
  d[B2S_OFF_TYPESIZE] = (uint8_t)cp->typesize;
  b2s_wr32(d + B2S_OFF_NBYTES, nbytes);
  b2s_wr32(d + B2S_OFF_BLOCKSIZE, blocksize);
  memcpy(d + B2S_OFF_FILTERS, cp->filters, B2S_MAX_FILTERS);
  d[B2S_OFF_UDCODEC] = (uint8_t)cp->codec;
  memcpy(d + B2S_OFF_FILTERS_META, cp->filters_meta, B2S_MAX_FILTERS);
  d[B2S_OFF_BLOSC2_FLAGS] = b2flags;
}

/* The whole input after the header, unfiltered.  On a fallback, flags keep
 * the bits of the attempted compression, as in c-blosc2.  The dictionary bit
 * is always dropped: c-blosc2 3.3 keeps it and then fails (-9) to read its
 * own memcpy+dictionary chunks, so here we deliberately differ. */
static int write_memcpy(enc *e, uint8_t flags) {
  if ((int64_t)e->nbytes + B2S_HEADER_LEN > e->dstsize)
    return B2S_E_DEST_SMALL;
  write_header(e->dst, e->cp, flags | B2S_FLAG_MEMCPY | 0x05, e->nbytes,
               e->blocksize, 0);
  if (e->order)
    b2s_blockorder_gather(e->order, e->src, e->dst + B2S_HEADER_LEN);
  else
    b2s_copy_blocks(e->dst + B2S_HEADER_LEN, e->src, (size_t)e->nbytes,
                    (size_t)e->blocksize);
  b2s_wr32(e->dst + B2S_OFF_CBYTES, e->nbytes + B2S_HEADER_LEN);
  return e->nbytes + B2S_HEADER_LEN;
}

static uint64_t word_at(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

/* Whole stream one byte value?  Runs are usually long (the zero high
 * bytes of small integers after a shuffle), so most of the time goes to
 * checking streams that are runs: 32 bytes per step, one branch each. */
static bool is_run(const uint8_t *p, int32_t n) {
  uint64_t pat;
  memset(&pat, p[0], sizeof(pat));
  int32_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t diff = (word_at(p + i) ^ pat) | (word_at(p + i + 8) ^ pat) |
                    (word_at(p + i + 16) ^ pat) | (word_at(p + i + 24) ^ pat);
    if (diff)
      return false;
  }
  for (; i + 8 <= n; i += 8)
    if (word_at(p + i) != pat)
      return false;
  for (; i < n; i++)
    if (p[i] != p[0])
      return false;
  return true;
}

/* One stream at e->pos.  Returns 0 on success, 1 when it does not fit
 * (memcpy fallback), negative on failure. */
static int put_stream(enc *e, const uint8_t *s, int32_t n) {
  uint8_t *d = e->dst;
  int32_t at = e->pos;
  e->pos += 4;
  if (is_run(s, n)) {
    /* Zero run: csize 0.  Other byte runs: csize = -value plus token 1. */
    if (e->pos + (s[0] != 0) > e->dstsize)
      return 1;
    b2s_wr32(d + at, -(int32_t)s[0]);
    if (s[0])
      d[e->pos++] = 0x01;
    return 0;
  }
  int32_t cap = n;
  if (e->pos + cap > e->dstsize)
    cap = e->dstsize - e->pos;
  if (cap <= 0)
    return 1;
  int c = b2s_codec_compress(e->ctx, e->cp->codec, e->cp->clevel, s, n,
                             d + e->pos, cap);
  if (c < 0 || c > cap)
    return c < 0 ? c : B2S_E_COMPRESS;
  if (c == 0 || c == n) {
    /* The codec could not shrink it: store raw, csize == stream size. */
    if (e->pos + n > e->dstsize)
      return 1;
    memcpy(d + e->pos, s, (size_t)n);
    c = n;
  }
  b2s_wr32(d + at, c);
  e->pos += c;
  return 0;
}

static int put_block(enc *e, int32_t j) {
  bool last_short = j == e->nblocks - 1 && e->leftover > 0;
  int32_t bsize = last_short ? e->leftover : e->blocksize;
  const uint8_t *blk = b2s_pipeline_forward(e->cp, block_in(e, j), bsize,
                                            ref_block(e), j == 0, e->t0, e->t1);
  int32_t nstreams = e->split && !last_short ? e->cp->typesize : 1;
  int32_t neblock = bsize / nstreams;
  b2s_wr32(e->dst + B2S_HEADER_LEN + 4 * j, e->pos);
  for (int32_t s = 0; s < nstreams; s++) {
    int rc = put_stream(e, blk + (size_t)s * neblock, neblock);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int32_t total_streams(const enc *e) {
  if (!e->split)
    return e->nblocks;
  return e->leftover ? (e->nblocks - 1) * e->cp->typesize + 1
                     : e->nblocks * e->cp->typesize;
}

/* The filtered blocks, concatenated: what c-blosc2 samples dictionaries from. */
static int filtered_samples(enc *e, uint8_t *out) {
  for (int32_t j = 0; j < e->nblocks; j++) {
    int32_t bsize = j == e->nblocks - 1 && e->leftover ? e->leftover : e->blocksize;
    const uint8_t *blk = b2s_pipeline_forward(
        e->cp, block_in(e, j), bsize, ref_block(e), j == 0, e->t0, e->t1);
    memcpy(out + (size_t)j * e->blocksize, blk, (size_t)bsize);
  }
  return 0;
}

/* Dictionary bytes for this chunk into out (capacity maxdict); returns the
 * size, 0 when c-blosc2 would go without one. */
static int make_dict(enc *e, const uint8_t *samples, int32_t ns, size_t ssize,
                     int32_t maxdict, uint8_t *out) {
  if (e->cp->codec == B2S_CODEC_ZSTD)
    return b2s_zstd_train_dict(samples, ns, ssize, out, maxdict);
  int32_t dsize = (int64_t)ns * (int64_t)ssize < maxdict ? ns * (int32_t)ssize : maxdict;
  memcpy(out, samples, (size_t)dsize);
  /* c-blosc2 writes the size field over the sample bytes at 4*nblocks before
   * it copies the samples (memmove-like); reproduce it for identical bytes. */
  uint8_t sz[4];
  b2s_wr32(sz, dsize);
  for (int32_t i = 0; i < 4; i++)
    if ((int64_t)4 * e->nblocks + i < dsize)
      out[4 * e->nblocks + i] = sz[i];
  return dsize;
}

/* Writes the dictionary section after bstarts (spec 1.8) and leaves e->pos
 * after it.  Returns its size, 0 for no dictionary. */
static int put_dict(enc *e) {
  int32_t maxdict = e->nbytes / 20 < B2S_MAX_DICT ? e->nbytes / 20 : B2S_MAX_DICT;
  int32_t ns = e->nblocks * (e->split ? e->cp->typesize : 1);
  if (ns < 8)
    ns = 8;
  size_t ssize = (size_t)e->nbytes / (size_t)ns / 16;
  if (maxdict < 256 || ssize == 0)
    return 0;
  uint8_t *samples = malloc((size_t)e->nbytes + (size_t)maxdict);
  if (!samples)
    return B2S_E_NOMEM;
  uint8_t *dict = samples + e->nbytes;
  filtered_samples(e, samples);
  int dsize = make_dict(e, samples, ns, ssize, maxdict, dict);
  if (dsize > 0 && e->pos + 4 + dsize <= e->dstsize) {
    b2s_wr32(e->dst + e->pos, dsize);
    memcpy(e->dst + e->pos + 4, dict, (size_t)dsize);
    e->pos += 4 + dsize;
  } else if (dsize > 0) {
    dsize = 0;
  }
  free(samples);
  return dsize;
}

static int put_blocks(enc *e) {
  for (int32_t j = 0; j < e->nblocks; j++) {
    int rc = put_block(e, j);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* Dictionary (optional) then every block; returns 0, 1 (does not fit) or a
 * negative error. */
static int put_body(enc *e) {
  e->pos = B2S_HEADER_LEN + 4 * e->nblocks;
  if (!(e->dst[B2S_OFF_BLOSC2_FLAGS] & B2S_B2FLAG_DICT))
    return put_blocks(e);
  int dsize = put_dict(e);
  if (dsize < 0)
    return dsize;
  if (dsize == 0) {
    e->dst[B2S_OFF_BLOSC2_FLAGS] &= (uint8_t)~B2S_B2FLAG_DICT;
    return put_blocks(e);
  }
  const uint8_t *dict = e->dst + e->pos - dsize;
  int rc = b2s_codec_dict_begin(e->ctx, e->cp->codec == B2S_CODEC_ZSTD, dict, dsize, 1);
  if (rc == 0)
    rc = put_blocks(e);
  b2s_codec_dict_end(e->ctx);
  return rc;
}

static int setup(enc *e, b2s_ctx *ctx, const b2s_cparams *cp, const void *src,
                 int32_t nbytes, void *dst, int32_t dstsize) {
  *e = (enc){.ctx = ctx, .cp = cp, .src = src, .dst = dst, .nbytes = nbytes,
             .dstsize = dstsize};
  e->blocksize = b2s_compute_blocksize(cp, nbytes);
  e->nblocks = nbytes / e->blocksize + (nbytes % e->blocksize != 0);
  e->leftover = nbytes % e->blocksize;
  e->split = b2s_split_decision(cp, cp->typesize, e->blocksize);
  e->t0 = b2s_ctx_scratch(ctx, 0, (size_t)e->blocksize);
  if (!e->t0)
    return B2S_E_NOMEM;
  e->t1 = b2s_ctx_scratch(ctx, 1, (size_t)e->blocksize);
  return 0;
}

/* The blocks of order are the chunk's: the band buffer, block 0 in g0. */
static int setup_order(enc *e, const b2s_blockorder *order) {
  if (!order->gather || order->nbytes != e->nbytes ||
      order->band_bytes != (int64_t)e->blocksize * order->grid[order->n - 1])
    return B2S_E_ARG;
  e->order = order;
  e->per_band = (int32_t)order->grid[order->n - 1];
  e->band = b2s_ctx_band(e->ctx, (size_t)order->band_bytes);
  e->g0 = b2s_ctx_scratch(e->ctx, 3, (size_t)e->blocksize);
  if (!e->band || !e->g0)
    return B2S_E_NOMEM;
  e->band_at = -1;
  memcpy(e->g0, block_in(e, 0), (size_t)e->blocksize);
  return 0;
}

static int encode(b2s_ctx *ctx, const b2s_cparams *cp,
                  const b2s_blockorder *order, const void *src,
                  int32_t nbytes, void *dst, int32_t dstsize) {
  int rc = validate(cp, nbytes, dstsize);
  if (rc < 0 || !ctx || !dst || (!src && nbytes > 0))
    return rc < 0 ? rc : B2S_E_ARG;
  enc e;
  if ((rc = setup(&e, ctx, cp, src, nbytes, dst, dstsize)) < 0)
    return rc;
  if (order && (rc = setup_order(&e, order)) < 0)
    return rc;
  if (cp->clevel == 0 || nbytes < B2S_MIN_BUFFERSIZE ||
      B2S_HEADER_LEN + 4 * (int64_t)e.nblocks > dstsize)
    return write_memcpy(&e, 0);
  uint8_t flags = (uint8_t)(0x05 | (has_delta(cp) ? B2S_FLAG_DELTA : 0) |
                            (e.split ? 0 : B2S_FLAG_DONT_SPLIT) |
                            b2s_codec_compformat(cp->codec) << 5);
  write_header(dst, cp, flags, nbytes, e.blocksize, cp->use_dict ? B2S_B2FLAG_DICT : 0);
  rc = put_body(&e);
  if (rc < 0)
    return rc;
  if (rc == 1)
    return write_memcpy(&e, flags);
  bool dict = e.dst[B2S_OFF_BLOSC2_FLAGS] & B2S_B2FLAG_DICT;
  if (!dict && e.pos == B2S_HEADER_LEN + 4 * e.nblocks + 4 * total_streams(&e)) {
    /* Every stream was a zero run: the chunk becomes a special zeros chunk. */
    e.dst[B2S_OFF_BLOSC2_FLAGS] |= B2S_SPECIAL_ZERO << 4;
    e.pos = B2S_HEADER_LEN;
  }
  b2s_wr32(e.dst + B2S_OFF_CBYTES, e.pos);
  return e.pos;
}

int b2s_compress(b2s_ctx *ctx, const b2s_cparams *cp, const void *src,
                 int32_t nbytes, void *dst, int32_t dstsize) {
  return encode(ctx, cp, NULL, src, nbytes, dst, dstsize);
}

int b2s_compress_blocks(b2s_ctx *ctx, const b2s_cparams *cp,
                        const struct b2s_blockorder *order, const void *src,
                        int32_t nbytes, void *dst, int32_t dstsize) {
  if (!order)
    return B2S_E_ARG;
  return encode(ctx, cp, order, src, nbytes, dst, dstsize);
}

/* Special chunks as c-blosc2's constructors write them: header only (plus
 * the value for kind 3), no filters, codec byte 0. */
static int special_chunk(const b2s_cparams *cp, int32_t nbytes, int32_t itemsize,
                         int kind, void *dst, int32_t dstsize, int32_t extra) {
  if (!cp || !dst || nbytes < 0 || nbytes > B2S_MAX_BUFFERSIZE || itemsize < 1 ||
      cp->clevel < 0 || cp->clevel > 9)
    return B2S_E_ARG;
  if (kind != B2S_SPECIAL_ZERO && nbytes % itemsize)
    return B2S_E_ARG;
  if (dstsize < B2S_HEADER_LEN + extra)
    return B2S_E_DEST_SMALL;
  b2s_cparams c = *cp;
  c.typesize = itemsize;
  uint8_t *d = dst;
  memset(d, 0, B2S_HEADER_LEN);
  d[B2S_OFF_VERSION] = B2S_CHUNK_VERSION;
  d[B2S_OFF_VERSIONLZ] = 1;
  d[B2S_OFF_FLAGS] = 0x05;
  d[B2S_OFF_TYPESIZE] = (uint8_t)(itemsize > B2S_MAX_TYPESIZE ? 1 : itemsize);
  b2s_wr32(d + B2S_OFF_NBYTES, nbytes);
  b2s_wr32(d + B2S_OFF_BLOCKSIZE, b2s_compute_blocksize(&c, nbytes));
  b2s_wr32(d + B2S_OFF_CBYTES, B2S_HEADER_LEN + extra);
  d[B2S_OFF_BLOSC2_FLAGS] = (uint8_t)(kind << 4);
  return B2S_HEADER_LEN + extra;
}

static int checked_typesize(const b2s_cparams *cp) {
  return cp && cp->typesize >= 1 && cp->typesize <= B2S_MAX_TYPESIZE;
}

int b2s_chunk_zeros(const b2s_cparams *cp, int32_t nbytes, void *dst, int32_t dstsize) {
  if (!checked_typesize(cp))
    return B2S_E_TYPESIZE;
  return special_chunk(cp, nbytes, cp->typesize, B2S_SPECIAL_ZERO, dst, dstsize, 0);
}

int b2s_chunk_uninit(const b2s_cparams *cp, int32_t nbytes, void *dst, int32_t dstsize) {
  if (!checked_typesize(cp))
    return B2S_E_TYPESIZE;
  return special_chunk(cp, nbytes, cp->typesize, B2S_SPECIAL_UNINIT, dst, dstsize, 0);
}

int b2s_chunk_nans(const b2s_cparams *cp, int32_t nbytes, void *dst, int32_t dstsize) {
  if (!cp || (cp->typesize != 4 && cp->typesize != 8))
    return B2S_E_TYPESIZE;       /* only float32 and float64 have a NaN */
  return special_chunk(cp, nbytes, cp->typesize, B2S_SPECIAL_NAN, dst, dstsize, 0);
}

int b2s_chunk_special_as_repeat(const b2s_cparams *cp, int kind,
                                int32_t nbytes, void *dst, int32_t dstsize) {
  static const uint8_t nan32[4] = {0x00, 0x00, 0xc0, 0x7f};
  static const uint8_t nan64[8] = {0, 0, 0, 0, 0, 0, 0xf8, 0x7f};
  static const uint8_t zeros[B2S_MAX_TYPESIZE];
  if (!cp || nbytes <= 0)
    return B2S_E_ARG;
  int32_t ts = cp->typesize;
  const uint8_t *val = zeros;
  if (ts < 1 || ts > B2S_MAX_TYPESIZE || nbytes % ts != 0)
    ts = 1;                      /* no whole items: a byte is the item */
  if (kind == B2S_SPECIAL_NAN && ts != 4 && ts != 8)
    ts = 1;                      /* a NaN needs float items; zeros then */
  else if (kind == B2S_SPECIAL_NAN)
    val = ts == 4 ? nan32 : nan64;
  b2s_cparams c = *cp;
  c.typesize = ts;
  return b2s_chunk_repeatval(&c, nbytes, dst, dstsize, val, ts);
}

int b2s_chunk_repeatval(const b2s_cparams *cp, int32_t nbytes, void *dst,
                        int32_t dstsize, const void *value, int32_t valsize) {
  if (!value || valsize < 1 || valsize > B2S_MAX_BUFFERSIZE)
    return B2S_E_ARG;
  int rc = special_chunk(cp, nbytes, valsize, B2S_SPECIAL_VALUE, dst, dstsize, valsize);
  if (rc > 0)
    memcpy((uint8_t *)dst + B2S_HEADER_LEN, value, (size_t)valsize);
  return rc;
}

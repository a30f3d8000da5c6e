/* HDF5 LZ4 framings (bslz4, lz4) -> Blosc2 chunks; see b2s_h5lz4.h.
 *
 * The Blosc2 chunk made by a rewrite is: the 32-byte header (LZ4, no split,
 * BITSHUFFLE in slot 5 for bslz4), bstarts, then one stream per block in
 * block order, each `int32 LE csize` + the LZ4 block taken from the input.
 * Blosc2 reads a stream whose csize equals its block size as raw bytes, so a
 * bslz4 block that LZ4 did not shrink is decoded and stored raw (what
 * c-blosc2 itself writes for such a block).  bslz4 keeps the last nelem % 8
 * elements outside LZ4, Blosc2 keeps them inside the last block's stream
 * (after the bitshuffled part, unchanged): that one block is re-encoded. */
#include <stdlib.h>

#include <lz4.h>

#include "b2s_h5lz4.h"
#include "b2s_shuffle.h"
#include "chunk_internal.h"

static uint64_t rd_be64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}
static uint32_t rd_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void wr_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static void wr_be64(uint8_t *p, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8)
    p[i] = (uint8_t)v;
}

int b2s_h5_header(const void *src, size_t srcsize, int64_t *nbytes,
                  uint32_t *block) {
  if (!src || srcsize < B2S_H5_HEADER_LEN)
    return B2S_E_DECODE;
  uint64_t n = rd_be64(src);
  uint32_t b = rd_be32((const uint8_t *)src + 8);
  if (n > (uint64_t)B2S_MAX_BUFFERSIZE || b == 0)
    return B2S_E_DECODE;
  *nbytes = (int64_t)n;
  *block = b;
  return 0;
}

/* Iterates over the streams of a framing, checking every size. */
typedef struct walk {
  const uint8_t *s;
  size_t n, pos;
  int kind;
  int32_t es;
  int64_t nbytes, off;           /* uncompressed bytes covered so far */
  int64_t block, nstreams, idx;
  int64_t full;                  /* bslz4: number of full blocks */
  int64_t last;                  /* bslz4: bytes in the short LZ4 block */
  int64_t tail;                  /* bslz4: raw bytes after the last block */
} walk;

static int walk_init(walk *w, const b2s_h5_params *p, const void *src,
                     size_t srcsize, int64_t expect) {
  uint32_t block;
  int rc = b2s_h5_header(src, srcsize, &w->nbytes, &block);
  if (rc < 0)
    return rc;
  if (w->nbytes != expect)
    return B2S_E_DECODE;
  w->s = src; w->n = srcsize; w->pos = B2S_H5_HEADER_LEN;
  w->kind = p->kind; w->off = 0; w->idx = 0; w->block = block;
  w->es = p->elem_size;
  if (p->kind == B2S_H5_BSLZ4) {
    if (w->es < 1 || w->nbytes % w->es || block % (8u * (uint32_t)w->es))
      return B2S_E_DECODE;
    int64_t nelem = w->nbytes / w->es, bel = block / w->es;
    int64_t rem = nelem % bel;
    w->full = nelem / bel;
    w->last = (rem - rem % 8) * w->es;
    w->tail = (nelem % 8) * w->es;
    w->nstreams = w->full + (w->last > 0);
  } else if (p->kind == B2S_H5_LZ4) {
    w->nstreams = (w->nbytes + w->block - 1) / w->block;
    w->full = w->nstreams; w->last = 0; w->tail = 0;
  } else {
    return B2S_E_ARG;
  }
  return 0;
}

/* Next stream: 1 and its bytes, 0 after the last, < 0 on a bad size. */
static int walk_next(walk *w, const uint8_t **stream, int32_t *csize,
                     int32_t *neblock) {
  if (w->idx >= w->nstreams)
    return 0;
  int64_t ne;
  if (w->kind == B2S_H5_BSLZ4)
    ne = w->idx < w->full ? w->block : w->last;
  else
    ne = w->nbytes - w->off < w->block ? w->nbytes - w->off : w->block;
  if (w->n - w->pos < 4)
    return B2S_E_DECODE;
  uint32_t cs = rd_be32(w->s + w->pos);
  w->pos += 4;
  if (cs == 0 || cs > w->n - w->pos || cs > INT32_MAX)
    return B2S_E_DECODE;
  *stream = w->s + w->pos;
  *csize = (int32_t)cs;
  *neblock = (int32_t)ne;
  w->pos += cs;
  w->off += ne;
  w->idx++;
  return 1;
}

/* The raw tail (bslz4) and the end of the input, which must be exact. */
static int walk_tail(walk *w, const uint8_t **tail) {
  if ((int64_t)(w->n - w->pos) != w->tail)
    return B2S_E_DECODE;
  *tail = w->s + w->pos;
  return 0;
}

/* Decode one stream to exactly neblock bytes (raw when lz4 says so). */
static int decode_stream(const walk *w, const uint8_t *s, int32_t csize,
                         int32_t neblock, uint8_t *out) {
  if (w->kind == B2S_H5_LZ4 && csize == neblock) {
    memcpy(out, s, (size_t)neblock);
    return 0;
  }
  int got = LZ4_decompress_safe((const char *)s, (char *)out, csize, neblock);
  return got == neblock ? 0 : B2S_E_DECODE;
}

int b2s_h5_decompress(const b2s_h5_params *p, const void *src, size_t srcsize,
                      void *dst, size_t nbytes) {
  walk w;
  if (!p || !dst || nbytes > (size_t)B2S_MAX_BUFFERSIZE)
    return B2S_E_ARG;
  int rc = walk_init(&w, p, src, srcsize, (int64_t)nbytes);
  if (rc < 0)
    return rc;
  uint8_t *out = dst, *tmp = NULL;
  if (p->kind == B2S_H5_BSLZ4) {
    int64_t tb = w.block < w.nbytes ? w.block : w.nbytes;
    if (!(tmp = malloc(tb ? (size_t)tb : 1)))
      return B2S_E_NOMEM;
  }
  const uint8_t *s, *tail;
  int32_t cs, ne;
  int64_t off = 0;
  while ((rc = walk_next(&w, &s, &cs, &ne)) > 0) {
    if (tmp) {
      if ((rc = decode_stream(&w, s, cs, ne, tmp)) < 0)
        break;
      b2s_bitunshuffle((size_t)w.es, (size_t)ne, tmp, out + off);
    } else if ((rc = decode_stream(&w, s, cs, ne, out + off)) < 0) {
      break;
    }
    off += ne;
  }
  free(tmp);
  if (rc < 0 || (rc = walk_tail(&w, &tail)) < 0)
    return rc;
  memcpy(out + off, tail, (size_t)w.tail);
  return (int)nbytes;
}

/* The filter's default block in bytes.  bitshuffle's: 8192 bytes' worth
 * of elements rounded down to a multiple of 8, at least 128 elements. */
static uint32_t default_block(const b2s_h5_params *p) {
  if (p->kind != B2S_H5_BSLZ4)
    return B2S_H5LZ4_DEFAULT_BLOCK;
  uint32_t es = p->elem_size > 0 ? (uint32_t)p->elem_size : 1;
  uint32_t n = B2S_BSLZ4_DEFAULT_BLOCK / es / 8 * 8;
  return (n > 128 ? n : 128) * es;
}

int64_t b2s_rows_per_block(int64_t row_bytes, int64_t ny) {
  int64_t r = row_bytes >= B2S_BSLZ4_DEFAULT_BLOCK || row_bytes < 1
                  ? 1 : B2S_BSLZ4_DEFAULT_BLOCK / row_bytes;
  return r < ny ? r : ny;
}

size_t b2s_h5_compress_bound(const b2s_h5_params *p, uint32_t block,
                             size_t nbytes) {
  if (block == 0)
    block = default_block(p);
  size_t nb = nbytes / block + 1;
  return B2S_H5_HEADER_LEN + nb * 4 + nbytes + nbytes / 255 + nb * 16;
}

int64_t b2s_h5_compress(const b2s_h5_params *p, uint32_t block,
                        const void *src, size_t nbytes, void *dst,
                        size_t dstsize) {
  if (!p || !src || !dst || nbytes > (size_t)B2S_MAX_BUFFERSIZE)
    return B2S_E_ARG;
  if (dstsize < b2s_h5_compress_bound(p, block, nbytes))
    return B2S_E_DEST_SMALL;
  int bs = p->kind == B2S_H5_BSLZ4;
  if (block == 0)
    block = default_block(p);
  /* the HDF5 LZ4 filter writes the block it used: at most the data */
  if (!bs && nbytes > 0 && block > nbytes)
    block = (uint32_t)nbytes;
  if (bs && (p->elem_size < 1 || nbytes % (size_t)p->elem_size ||
             block % (8u * (uint32_t)p->elem_size)))
    return B2S_E_ARG;
  uint8_t *d = dst, *tmp = NULL;
  const uint8_t *in = src;
  wr_be64(d, nbytes);
  wr_be32(d + 8, block);
  size_t pos = B2S_H5_HEADER_LEN, off = 0, end = nbytes;
  if (bs) {
    size_t nelem = nbytes / (size_t)p->elem_size;
    end = (nelem - nelem % 8) * (size_t)p->elem_size;
    if (!(tmp = malloc(block < nbytes ? block : nbytes + 1)))
      return B2S_E_NOMEM;
  }
  while (off < end) {
    size_t n = end - off < block ? end - off : block;
    const uint8_t *blk = in + off;
    if (bs) {
      b2s_bitshuffle((size_t)p->elem_size, n, blk, tmp);
      blk = tmp;
    }
    int c = LZ4_compress_default((const char *)blk, (char *)d + pos + 4, (int)n,
                                 LZ4_compressBound((int)n));
    if (!bs && (c <= 0 || (size_t)c >= n)) {    /* HDF5 LZ4 stores it raw */
      memcpy(d + pos + 4, blk, n);
      c = (int)n;
    } else if (c <= 0) {
      free(tmp);
      return B2S_E_COMPRESS;
    }
    wr_be32(d + pos, (uint32_t)c);
    pos += 4 + (size_t)c;
    off += n;
  }
  free(tmp);
  memcpy(d + pos, in + end, nbytes - end);
  return (int64_t)(pos + nbytes - end);
}

int64_t b2s_h5_chunk_bound(const b2s_h5_params *p, const void *src,
                           size_t srcsize) {
  int64_t nbytes;
  uint32_t block;
  int rc = b2s_h5_header(src, srcsize, &nbytes, &block);
  if (rc < 0)
    return rc;
  int64_t bs = block < nbytes ? block : nbytes;
  if (p && p->want_block > bs)     /* padding to the wanted blocks */
    bs = p->want_block;
  int64_t nblocks = bs ? (nbytes + bs - 1) / bs : 0;
  int64_t rewrite = (int64_t)srcsize + B2S_HEADER_LEN + 4 * nblocks + bs + 8;
  int64_t again = nbytes + bs + B2S_MAX_OVERHEAD;   /* padded: < bs more */
  return rewrite > again ? rewrite : again;
}

/* Everything a rewrite needs to hand around. */
typedef struct rw {
  b2s_ctx *ctx;
  const b2s_h5_params *p;
  uint8_t *d;
  int64_t dcap, pos;
  size_t sb;                     /* scratch: one block + the bslz4 tail */
  const uint8_t *held;           /* a stream copied, not yet checked */
  int32_t held_cs, held_ne;
} rw;

/* Scratch k, taken when a block must be decoded: with whole-image blocks
 * (lz4) it is an image's size, which the copying path never needs. */
static uint8_t *scratch(rw *r, int k) {
  return b2s_ctx_scratch(r->ctx, k, r->sb);
}

static int put_stream(rw *r, const uint8_t *s, int32_t csize) {
  if (r->pos + 4 + csize > r->dcap)
    return B2S_E_DEST_SMALL;
  b2s_wr32(r->d + r->pos, csize);
  memcpy(r->d + r->pos + 4, s, (size_t)csize);
  r->pos += 4 + csize;
  return 0;
}

/* Compress a rebuilt block; stored raw when LZ4 cannot shrink it. */
static int put_encoded(rw *r, const uint8_t *blk, int32_t n) {
  if (r->pos + 4 + n > r->dcap)
    return B2S_E_DEST_SMALL;
  int c = b2s_codec_compress(r->ctx, B2S_CODEC_LZ4, r->p->clevel, blk, n,
                             r->d + r->pos + 4, n);
  if (c < 0)
    return c;
  if (c == 0 || c >= n)
    return put_stream(r, blk, n);
  b2s_wr32(r->d + r->pos, c);
  r->pos += 4 + c;
  return 0;
}

static void put_header(rw *r, int32_t nbytes, int32_t blocksize) {
  uint8_t *d = r->d;
  memset(d, 0, B2S_HEADER_LEN);
  d[B2S_OFF_VERSION] = B2S_CHUNK_VERSION;
  d[B2S_OFF_VERSIONLZ] = 1;
  d[B2S_OFF_FLAGS] = 0x05 | B2S_FLAG_DONT_SPLIT |
                     (uint8_t)(b2s_codec_compformat(B2S_CODEC_LZ4) << 5);
  d[B2S_OFF_TYPESIZE] = (uint8_t)r->p->typesize;
  b2s_wr32(d + B2S_OFF_NBYTES, nbytes);
  b2s_wr32(d + B2S_OFF_BLOCKSIZE, blocksize);
  if (r->p->kind == B2S_H5_BSLZ4)
    d[B2S_OFF_FILTERS + 5] = B2S_FILTER_BITSHUFFLE;
  d[B2S_OFF_UDCODEC] = B2S_CODEC_LZ4;
  b2s_wr32(d + B2S_OFF_CBYTES, (int32_t)r->pos);
}

/* A stream the walk could not vouch for is decoded, which decides. */
static int decide(rw *r, const walk *w, const uint8_t *s, int32_t cs,
                  int32_t ne) {
  uint8_t *tmp = scratch(r, 0);
  return tmp ? decode_stream(w, s, cs, ne, tmp) : B2S_E_NOMEM;
}

/* The walk shows most streams sound without writing them out.  Streams
 * are walked two at a time, which overlaps the two walks in the CPU: the
 * first of a pair is held until the second comes, or s is NULL (the
 * end).  The chunk is only handed out once every stream was checked. */
static int check_stream(rw *r, const walk *w, const uint8_t *s, int32_t cs,
                        int32_t ne) {
  if (s && !r->held) {
    r->held = s;
    r->held_cs = cs;
    r->held_ne = ne;
    return 0;
  }
  const uint8_t *h = r->held;
  bool ok[2] = {true, true};
  if (h && s)
    b2s_lz4_blocks_ok2(h, (size_t)r->held_cs, (size_t)r->held_ne, s,
                       (size_t)cs, (size_t)ne, ok);
  else if (h)
    ok[0] = b2s_lz4_block_ok(h, (size_t)r->held_cs, (size_t)r->held_ne);
  r->held = NULL;
  int rc = 0;
  if (!ok[0])
    rc = decide(r, w, h, r->held_cs, r->held_ne);
  if (rc == 0 && !ok[1])
    rc = decide(r, w, s, cs, ne);
  return rc;
}

/* One input stream into the chunk: copied, or decoded and stored raw when
 * LZ4 did not shrink it (a bslz4 stream of exactly neblock bytes would
 * otherwise read as raw).  Returns 1 when it was re-encoded. */
static int rewrite_stream(rw *r, walk *w, const uint8_t *s, int32_t cs,
                          int32_t ne) {
  bool raw_in = w->kind == B2S_H5_LZ4 && cs == ne;
  if (!raw_in && cs >= ne) {
    uint8_t *tmp = scratch(r, 0);
    if (!tmp)
      return B2S_E_NOMEM;
    int rc = decode_stream(w, s, cs, ne, tmp);
    return rc < 0 ? rc : (rc = put_stream(r, tmp, ne)) < 0 ? rc : 1;
  }
  /* copied first: the copy streams the message's bytes into the cache,
   * where the walk's chain of loads (one per sequence) finds them; walked
   * cold, each new cache line stalls the chain */
  int rc = put_stream(r, s, cs);
  if (rc == 0 && r->p->verify && !raw_in)
    rc = check_stream(r, w, r->d + r->pos - cs, cs, ne);
  return rc < 0 ? rc : 0;
}

/* The chunk's last block when it is not the input's last stream as it is:
 * that stream decoded (s NULL: none), the bslz4 raw tail, zero padding up
 * to bsz, filtered again as Blosc2 filters a block of bsz bytes. */
static int put_last(rw *r, walk *w, const uint8_t *s, int32_t cs, int32_t ne,
                    int32_t bsz) {
  bool bs = w->kind == B2S_H5_BSLZ4;
  uint8_t *plain = scratch(r, 0), *shuf = scratch(r, 1);
  if (!plain || !shuf)
    return B2S_E_NOMEM;
  int32_t have = 0;
  const uint8_t *tail;
  int rc;
  if (s) {
    if ((rc = decode_stream(w, s, cs, ne, bs ? shuf : plain)) < 0)
      return rc;
    if (bs)
      b2s_bitunshuffle((size_t)w->es, (size_t)ne, shuf, plain);
    have = ne;
  }
  if ((rc = walk_tail(w, &tail)) < 0)
    return rc;
  memcpy(plain + have, tail, (size_t)w->tail);
  have += (int32_t)w->tail;
  memset(plain + have, 0, (size_t)(bsz - have));
  if (bs)
    b2s_bitshuffle((size_t)w->es, (size_t)bsz, plain, shuf);
  return put_encoded(r, bs ? shuf : plain, bsz);
}

static int rewrite(rw *r, walk *w, int32_t bsize, int64_t cnbytes,
                   b2s_h5_result *res) {
  int32_t nblocks = (int32_t)((cnbytes + bsize - 1) / bsize);
  int32_t lastsz = (int32_t)(cnbytes - (int64_t)(nblocks - 1) * bsize);
  bool rebuild = w->tail > 0 || cnbytes > w->nbytes;
  r->pos = B2S_HEADER_LEN + 4 * (int64_t)nblocks;
  if (r->pos > r->dcap)
    return B2S_E_DEST_SMALL;
  res->nblocks = nblocks;
  const uint8_t *s, *tail;
  int32_t cs, ne, i = 0;
  bool last_done = false;
  int rc;
  while ((rc = walk_next(w, &s, &cs, &ne)) > 0) {
    if (i >= nblocks)
      return B2S_E_DECODE;
    b2s_wr32(r->d + B2S_HEADER_LEN + 4 * i++, (int32_t)r->pos);
    if (w->idx == w->nstreams && ne < bsize && rebuild) {
      if ((rc = put_last(r, w, s, cs, ne, lastsz)) < 0)
        return rc;
      res->reencoded++;
      last_done = true;
      continue;
    }
    if ((rc = rewrite_stream(r, w, s, cs, ne)) < 0)
      return rc;
    res->reencoded += rc;
  }
  if (rc < 0)
    return rc;
  if (!last_done && w->tail > 0) {
    /* Fewer than 8 elements after the full blocks: a block of their own. */
    if (i >= nblocks)
      return B2S_E_DECODE;
    b2s_wr32(r->d + B2S_HEADER_LEN + 4 * i++, (int32_t)r->pos);
    if ((rc = put_last(r, w, NULL, 0, 0, lastsz)) < 0)
      return rc;
    res->reencoded++;
  } else if (!last_done && (rc = walk_tail(w, &tail)) < 0) {
    return rc;
  }
  if (i != nblocks)
    return B2S_E_DECODE;
  if ((rc = check_stream(r, w, NULL, 0, 0)) < 0)
    return rc;
  put_header(r, (int32_t)cnbytes, bsize);
  return (int)r->pos;
}

/* Decode everything, then compress with the stream's own parameters. */
static int recompress(b2s_ctx *ctx, const b2s_h5_params *p, const void *src,
                      size_t srcsize, int64_t nbytes, int64_t cnbytes,
                      int64_t block, void *dst, size_t dstsize) {
  uint8_t *buf = malloc(cnbytes ? (size_t)cnbytes : 1);
  if (!buf)
    return B2S_E_NOMEM;
  memset(buf + nbytes, 0, (size_t)(cnbytes - nbytes));
  int rc = b2s_h5_decompress(p, src, srcsize, buf, (size_t)nbytes);
  if (rc >= 0) {
    b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
    cp.codec = B2S_CODEC_LZ4;
    cp.clevel = p->clevel;
    cp.typesize = p->typesize;
    cp.splitmode = B2S_SPLIT_NEVER;
    cp.filters[5] = p->kind == B2S_H5_BSLZ4 ? B2S_FILTER_BITSHUFFLE : 0;
    cp.blocksize = block <= B2S_MAX_BLOCKSIZE && block % p->typesize == 0
                       ? (int32_t)block : 0;
    int32_t cap = dstsize > (size_t)INT32_MAX ? INT32_MAX : (int32_t)dstsize;
    rc = b2s_compress(ctx, &cp, buf, (int32_t)cnbytes, dst, cap);
  }
  free(buf);
  return rc;
}

int b2s_h5_to_chunk(b2s_ctx *ctx, const b2s_h5_params *p, const void *src,
                    size_t srcsize, int64_t expect_nbytes, void *dst,
                    size_t dstsize, b2s_h5_result *res) {
  b2s_h5_result dummy;
  if (!res)
    res = &dummy;
  *res = (b2s_h5_result){0};
  if (!ctx || !p || !dst || p->typesize < 1 || p->typesize > B2S_MAX_TYPESIZE ||
      p->clevel < 1 || p->clevel > 9)
    return B2S_E_ARG;
  walk w;
  int rc = walk_init(&w, p, src, srcsize, expect_nbytes);
  if (rc < 0)
    return rc;
  int64_t bsize = w.block < w.nbytes ? w.block : w.nbytes;
  bool block_ok = true;
  if (p->want_block > 0) {
    /* an LZ4 header may say a block larger than the data (1 GiB, the
     * filter's default): the one block is then the data */
    block_ok = (w.kind == B2S_H5_LZ4 ? bsize : w.block) == (int64_t)p->want_block;
    bsize = p->want_block;
  }
  int64_t cnbytes = w.nbytes;
  if (p->pad_blocks && bsize > 0)
    cnbytes = (w.nbytes + bsize - 1) / bsize * bsize;
  if (cnbytes > B2S_MAX_BUFFERSIZE)
    return B2S_E_NBYTES;
  bool maps = block_ok && w.nbytes >= B2S_MIN_BUFFERSIZE && bsize <= B2S_MAX_BLOCKSIZE &&
              (p->kind != B2S_H5_BSLZ4 || p->elem_size == p->typesize);
  if (maps) {
    /* scratch: one block plus the bslz4 tail (< 8 elements of <= 255 bytes) */
    rw r = {.ctx = ctx, .p = p, .d = dst,
            .dcap = dstsize > (size_t)INT32_MAX ? INT32_MAX : (int64_t)dstsize,
            .sb = (size_t)bsize + 8 * 255};
    rc = rewrite(&r, &w, (int32_t)bsize, cnbytes, res);
    if (rc < 0 && rc != B2S_E_DEST_SMALL)
      return rc;
    /* Larger than the data + 32 (incompressible): c-blosc2 would store it
     * memcpy'ed, so let the encoder decide as it does. */
    if (rc >= 0 && rc <= cnbytes + B2S_MAX_OVERHEAD) {
      res->path = res->reencoded ? B2S_H5_PATCHED : B2S_H5_VERBATIM;
      return rc;
    }
  }
  *res = (b2s_h5_result){.path = B2S_H5_RECOMPRESSED};
  rc = recompress(ctx, p, src, srcsize, w.nbytes, cnbytes, bsize, dst, dstsize);
  if (rc >= 0) {
    b2s_chunk_info ci;
    if (b2s_chunk_info_get(dst, (size_t)rc, &ci) == 0)
      res->nblocks = ci.nblocks;
  }
  return rc;
}

/* Internals shared by the chunk encoder and decoder.  Not installed. */
#ifndef B2S_CHUNK_INTERNAL_H
#define B2S_CHUNK_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include <zlib.h>

#include "b2s_chunk.h"

/* Header byte offsets. */
enum {
  B2S_OFF_VERSION = 0, B2S_OFF_VERSIONLZ = 1, B2S_OFF_FLAGS = 2,
  B2S_OFF_TYPESIZE = 3, B2S_OFF_NBYTES = 4, B2S_OFF_BLOCKSIZE = 8,
  B2S_OFF_CBYTES = 12, B2S_OFF_FILTERS = 16, B2S_OFF_UDCODEC = 22,
  B2S_OFF_CODEC_META = 23, B2S_OFF_FILTERS_META = 24, B2S_OFF_FLAGS2 = 30,
  B2S_OFF_BLOSC2_FLAGS = 31,
};

enum {
  B2S_FLAG_SHUFFLE = 0x01, B2S_FLAG_MEMCPY = 0x02, B2S_FLAG_BITSHUFFLE = 0x04,
  B2S_FLAG_DELTA = 0x08, B2S_FLAG_DONT_SPLIT = 0x10,
};
enum { B2S_B2FLAG_DICT = 0x01, B2S_B2FLAG_LAZY = 0x08, B2S_B2FLAG_INSTR = 0x80 };
enum { B2S_FLAGS2_VLBLOCKS = 0x01 };
enum { B2S_CHUNK_VERSION = 5, B2S_CHUNK_VERSION_VL = 6 };

static inline int32_t b2s_rd32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24);
}
static inline void b2s_wr32(uint8_t *p, int32_t v) {
  uint32_t u = (uint32_t)v;
  p[0] = (uint8_t)u; p[1] = (uint8_t)(u >> 8);
  p[2] = (uint8_t)(u >> 16); p[3] = (uint8_t)(u >> 24);
}

/* memcpy in blocksize pieces: a multi-megabyte memcpy switches glibc to
 * non-temporal stores, which leave the data out of cache right before the
 * caller reads it. */
static inline void b2s_copy_blocks(uint8_t *dst, const uint8_t *src, size_t n,
                                   size_t block) {
  for (size_t off = 0; off < n; off += block)
    memcpy(dst + off, src + off, n - off < block ? n - off : block);
}

/* Per-thread codec states and scratch, see b2s_ctx_new(). */
struct b2s_ctx {
  void *zcctx, *zdctx;             /* ZSTD_CCtx, ZSTD_DCtx */
  void *lz4_state;                 /* LZ4_compress_fast_extState state */
  void *lz4hc_state;               /* LZ4_streamHC_t */
  void *lz4_stream;                /* LZ4_stream_t, dictionary compression */
  z_stream deflate, inflate;
  int deflate_level;               /* -1 until deflate is initialised */
  int inflate_ready;
  uint8_t *scratch;                /* 4 block-sized buffers (see ctx.c) */
  size_t scratch_block;
  uint8_t *band;                   /* b2s_compress_blocks' gathered band */
  size_t band_cap;
  /* Dictionary in use by the current call (points into a chunk). */
  const uint8_t *dict;
  int32_t dict_size;
  void *zcdict, *zddict;           /* ZSTD_CDict / ZSTD_DDict for this call */
};

/* Scratch buffer k (0..3) holding at least `block` bytes; NULL on ENOMEM. */
uint8_t *b2s_ctx_scratch(b2s_ctx *ctx, int k, size_t block);
/* The band buffer of b2s_compress_blocks, at least n bytes (at most a
 * chunk's), kept like the scratch; NULL on ENOMEM. */
uint8_t *b2s_ctx_band(b2s_ctx *ctx, size_t n);

/* Codec adapters (codecs.c).  compress: returns the stream size, 0 when the
 * output does not fit or the codec cannot shrink it (stored raw), negative on
 * a hard failure.  decompress: returns 0 when exactly `dstlen` bytes came out,
 * else B2S_E_DECODE. */
int b2s_codec_compress(b2s_ctx *ctx, int codec, int clevel, const uint8_t *src,
                       int32_t srclen, uint8_t *dst, int32_t cap);
int b2s_codec_decompress(b2s_ctx *ctx, int compformat, const uint8_t *src,
                         int32_t srclen, uint8_t *dst, int32_t dstlen);
int b2s_codec_dict_begin(b2s_ctx *ctx, int is_zstd, const uint8_t *dict,
                         int32_t size, int for_compress);
void b2s_codec_dict_end(b2s_ctx *ctx);
int b2s_zstd_train_dict(const uint8_t *samples, int32_t nsamples,
                        size_t sample_size, uint8_t *dict, int32_t cap);
int b2s_codec_compformat(int codec);

/* Filter pipeline on one block (filters.c).  Forward returns the buffer that
 * holds the filtered block (src itself when no filter applies).  `ref` is the
 * original first block of the chunk (DELTA reference), `is_first` tells
 * whether this block is block 0. */
const uint8_t *b2s_pipeline_forward(const b2s_cparams *cp, const uint8_t *src,
                                    int32_t bsize, const uint8_t *ref,
                                    int is_first, uint8_t *t0, uint8_t *t1);
/* Backward undoes the pipeline of `info` from src into dst (dst must not
 * alias src; t0 is scratch). ref is decoded block 0 (DELTA). */
int b2s_pipeline_backward(const b2s_chunk_info *info, uint8_t *src,
                          int32_t bsize, uint8_t *dst, const uint8_t *ref,
                          int is_first, uint8_t *t0);
int b2s_filters_validate(const uint8_t *filters, const uint8_t *meta,
                         int32_t typesize, int for_compress);

#endif

/* Codec adapters: one stream in, one stream out, with the exact library calls
 * and level mappings c-blosc2 uses (spec section 2), so the bytes match.
 * All codec state lives in the b2s_ctx and is created on first use. */
#include <stdlib.h>

#include <lz4.h>
#include <lz4hc.h>
#include <zdict.h>
#include <zstd.h>

#include "b2s_blosclz.h"
#include "chunk_internal.h"

int b2s_codec_compformat(int codec) {
  switch (codec) {
  case B2S_CODEC_BLOSCLZ: return 0;
  case B2S_CODEC_LZ4:
  case B2S_CODEC_LZ4HC: return 1;
  case B2S_CODEC_ZLIB: return 3;
  case B2S_CODEC_ZSTD: return 4;
  default: return -1;
  }
}

static int zstd_level(int clevel) {
  return clevel < 9 ? clevel * 2 - 1 : ZSTD_maxCLevel();
}

static int lz4_compress(b2s_ctx *ctx, int clevel, const uint8_t *src,
                        int32_t n, uint8_t *dst, int32_t cap) {
  int accel = 10 - clevel;
  if (ctx->dict) {
    if (!ctx->lz4_stream && !(ctx->lz4_stream = LZ4_createStream()))
      return B2S_E_NOMEM;
    /* Every stream starts from the dictionary alone, so each one decodes
     * independently. */
    LZ4_loadDict(ctx->lz4_stream, (const char *)ctx->dict, ctx->dict_size);
    return LZ4_compress_fast_continue(ctx->lz4_stream, (const char *)src,
                                      (char *)dst, n, cap, accel);
  }
  if (!ctx->lz4_state && !(ctx->lz4_state = malloc((size_t)LZ4_sizeofState())))
    return B2S_E_NOMEM;
  return LZ4_compress_fast_extState(ctx->lz4_state, (const char *)src,
                                    (char *)dst, n, cap, accel);
}

static int lz4hc_compress(b2s_ctx *ctx, int clevel, const uint8_t *src,
                          int32_t n, uint8_t *dst, int32_t cap) {
  /* Heap state owned by the context: LZ4_compress_HC would malloc 256 KiB
   * on every call; the output is the same. */
  if (!ctx->lz4hc_state && !(ctx->lz4hc_state = LZ4_createStreamHC()))
    return B2S_E_NOMEM;
  if (ctx->dict) {
    LZ4_resetStreamHC_fast(ctx->lz4hc_state, clevel);
    LZ4_loadDictHC(ctx->lz4hc_state, (const char *)ctx->dict, ctx->dict_size);
    return LZ4_compress_HC_continue(ctx->lz4hc_state, (const char *)src,
                                    (char *)dst, n, cap);
  }
  return LZ4_compress_HC_extStateHC(ctx->lz4hc_state, (const char *)src,
                                    (char *)dst, n, cap, clevel);
}

/* compress2() semantics on a z_stream kept in the context (compress2 would
 * allocate and free its deflate state on every call). */
static int zlib_compress(b2s_ctx *ctx, int clevel, const uint8_t *src,
                         int32_t n, uint8_t *dst, int32_t cap) {
  z_stream *z = &ctx->deflate;
  if (ctx->deflate_level != clevel) {
    if (ctx->deflate_level >= 0)
      deflateEnd(z);
    ctx->deflate_level = -1;
    memset(z, 0, sizeof(*z));
    if (deflateInit(z, clevel) != Z_OK)
      return B2S_E_NOMEM;
    ctx->deflate_level = clevel;
  } else if (deflateReset(z) != Z_OK) {
    return B2S_E_COMPRESS;
  }
  z->next_in = (Bytef *)(uintptr_t)src;
  z->avail_in = (uInt)n;
  z->next_out = dst;
  z->avail_out = (uInt)cap;
  int rc = deflate(z, Z_FINISH);
  return rc == Z_STREAM_END ? (int)z->total_out : 0;
}

static int zstd_compress(b2s_ctx *ctx, int clevel, const uint8_t *src,
                         int32_t n, uint8_t *dst, int32_t cap) {
  if (!ctx->zcctx && !(ctx->zcctx = ZSTD_createCCtx()))
    return B2S_E_NOMEM;
  size_t r = ctx->zcdict
                 ? ZSTD_compress_usingCDict(ctx->zcctx, dst, (size_t)cap, src,
                                            (size_t)n, ctx->zcdict)
                 : ZSTD_compressCCtx(ctx->zcctx, dst, (size_t)cap, src,
                                     (size_t)n, zstd_level(clevel));
  /* Any zstd error (mostly "dst too small") means: store the stream raw. */
  return ZSTD_isError(r) ? 0 : (int)r;
}

int b2s_codec_compress(b2s_ctx *ctx, int codec, int clevel, const uint8_t *src,
                       int32_t srclen, uint8_t *dst, int32_t cap) {
  switch (codec) {
  case B2S_CODEC_BLOSCLZ: return b2s_blosclz_compress(clevel, src, srclen, dst, cap);
  case B2S_CODEC_LZ4: return lz4_compress(ctx, clevel, src, srclen, dst, cap);
  case B2S_CODEC_LZ4HC: return lz4hc_compress(ctx, clevel, src, srclen, dst, cap);
  case B2S_CODEC_ZLIB: return zlib_compress(ctx, clevel, src, srclen, dst, cap);
  case B2S_CODEC_ZSTD: return zstd_compress(ctx, clevel, src, srclen, dst, cap);
  default: return B2S_E_CODEC;
  }
}

static int zlib_decompress(b2s_ctx *ctx, const uint8_t *src, int32_t n,
                           uint8_t *dst, int32_t dstlen) {
  z_stream *z = &ctx->inflate;
  if (!ctx->inflate_ready) {
    memset(z, 0, sizeof(*z));
    if (inflateInit(z) != Z_OK)
      return B2S_E_NOMEM;
    ctx->inflate_ready = 1;
  } else if (inflateReset(z) != Z_OK) {
    return B2S_E_DECODE;
  }
  z->next_in = (Bytef *)(uintptr_t)src;
  z->avail_in = (uInt)n;
  z->next_out = dst;
  z->avail_out = (uInt)dstlen;
  int rc = inflate(z, Z_FINISH);
  return rc == Z_STREAM_END && z->total_out == (uLong)dstlen ? 0 : B2S_E_DECODE;
}

static int zstd_decompress(b2s_ctx *ctx, const uint8_t *src, int32_t n,
                           uint8_t *dst, int32_t dstlen) {
  if (!ctx->zdctx && !(ctx->zdctx = ZSTD_createDCtx()))
    return B2S_E_NOMEM;
  size_t r = ctx->zddict
                 ? ZSTD_decompress_usingDDict(ctx->zdctx, dst, (size_t)dstlen,
                                              src, (size_t)n, ctx->zddict)
                 : ZSTD_decompressDCtx(ctx->zdctx, dst, (size_t)dstlen, src,
                                       (size_t)n);
  return !ZSTD_isError(r) && r == (size_t)dstlen ? 0 : B2S_E_DECODE;
}

static int lz4_decompress(b2s_ctx *ctx, const uint8_t *src, int32_t n,
                          uint8_t *dst, int32_t dstlen) {
  int r = ctx->dict ? LZ4_decompress_safe_usingDict(
                          (const char *)src, (char *)dst, n, dstlen,
                          (const char *)ctx->dict, ctx->dict_size)
                    : LZ4_decompress_safe((const char *)src, (char *)dst, n, dstlen);
  return r == dstlen ? 0 : B2S_E_DECODE;
}

int b2s_codec_decompress(b2s_ctx *ctx, int compformat, const uint8_t *src,
                         int32_t srclen, uint8_t *dst, int32_t dstlen) {
  switch (compformat) {
  case 0: {
    int r = b2s_blosclz_decompress(src, srclen, dst, dstlen);
    return r == dstlen ? 0 : B2S_E_DECODE;
  }
  case 1: return lz4_decompress(ctx, src, srclen, dst, dstlen);
  case 3: return zlib_decompress(ctx, src, srclen, dst, dstlen);
  case 4: return zstd_decompress(ctx, src, srclen, dst, dstlen);
  default: return B2S_E_CODEC;
  }
}

int b2s_codec_dict_begin(b2s_ctx *ctx, int is_zstd, const uint8_t *dict,
                         int32_t size, int for_compress) {
  ctx->dict = dict;
  ctx->dict_size = size;
  if (is_zstd) {
    /* c-blosc2 digests the dictionary at level 1 whatever the clevel. */
    if (for_compress)
      ctx->zcdict = ZSTD_createCDict(dict, (size_t)size, 1);
    else
      ctx->zddict = ZSTD_createDDict(dict, (size_t)size);
    if (!ctx->zcdict && !ctx->zddict) {
      b2s_codec_dict_end(ctx);
      return for_compress ? B2S_E_NOMEM : B2S_E_DICT;
    }
  }
  return 0;
}

void b2s_codec_dict_end(b2s_ctx *ctx) {
  ZSTD_freeCDict(ctx->zcdict);
  ZSTD_freeDDict(ctx->zddict);
  ctx->zcdict = NULL;
  ctx->zddict = NULL;
  ctx->dict = NULL;
  ctx->dict_size = 0;
}

int b2s_zstd_train_dict(const uint8_t *samples, int32_t nsamples,
                        size_t sample_size, uint8_t *dict, int32_t cap) {
  size_t *sizes = malloc((size_t)nsamples * sizeof(*sizes));
  if (!sizes)
    return B2S_E_NOMEM;
  for (int32_t i = 0; i < nsamples; i++)
    sizes[i] = sample_size;
  size_t r = ZDICT_trainFromBuffer(dict, (size_t)cap, samples, sizes,
                                   (unsigned)nsamples);
  free(sizes);
  return ZDICT_isError(r) ? 0 : (int)r;
}

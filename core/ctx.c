/* The per-thread compression context: codec states and scratch buffers,
 * created lazily and kept for the context's lifetime. */
#include <stdlib.h>

#include <lz4.h>
#include <lz4hc.h>
#include <zstd.h>

#include "chunk_internal.h"

/* Four scratch buffers of one block each: filter ping-pong (2), codec output
 * before unfiltering (1), and the decoded DELTA reference block (1). */
enum { SCRATCH_BUFFERS = 4 };

b2s_ctx *b2s_ctx_new(void) {
  b2s_ctx *ctx = calloc(1, sizeof(*ctx));
  if (ctx)
    ctx->deflate_level = -1;
  return ctx;
}

void b2s_ctx_free(b2s_ctx *ctx) {
  if (!ctx)
    return;
  b2s_codec_dict_end(ctx);
  ZSTD_freeCCtx(ctx->zcctx);
  ZSTD_freeDCtx(ctx->zdctx);
  free(ctx->lz4_state);
  LZ4_freeStreamHC(ctx->lz4hc_state);
  LZ4_freeStream(ctx->lz4_stream);
  if (ctx->deflate_level >= 0)
    deflateEnd(&ctx->deflate);
  if (ctx->inflate_ready)
    inflateEnd(&ctx->inflate);
  free(ctx->scratch);
  free(ctx->band);
  free(ctx);
}

uint8_t *b2s_ctx_scratch(b2s_ctx *ctx, int k, size_t block) {
  if (block > ctx->scratch_block) {
    /* Rounded up so every buffer stays 64-byte aligned.  Growing frees the
     * old buffers: callers fetch all four after sizing them once. */
    size_t stride = (block + 63) & ~(size_t)63;
    uint8_t *p = aligned_alloc(64, stride * SCRATCH_BUFFERS);
    if (!p)
      return NULL;
    free(ctx->scratch);
    ctx->scratch = p;
    ctx->scratch_block = stride;
  }
  return ctx->scratch + (size_t)k * ctx->scratch_block;
}

uint8_t *b2s_ctx_band(b2s_ctx *ctx, size_t n) {
  if (n > ctx->band_cap) {
    uint8_t *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!p)
      return NULL;
    free(ctx->band);
    ctx->band = p;
    ctx->band_cap = n;
  }
  return ctx->band;
}

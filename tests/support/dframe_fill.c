/* Distributed test frames of known chunks (dframe_fill.h). */
#include <stdlib.h>

#include "b2s_errors.h"
#include "dframe_fill.h"

static const char dtype[] = "<u2";
/* {"e": 1.0} */
static const uint8_t user_map[] = {0x81, 0xa1, 'e', 0xcb, 0x3f, 0xf0,
                                   0,    0,    0,   0,    0,    0};

void dfill_params(b2s_dframe_params *p) {
  *p = (b2s_dframe_params){.cparams = B2S_CPARAMS_DEFAULTS,
                           .chunk_nbytes = DFILL_NBYTES,
                           .ranks = 1,
                           .frames_per_block = 1,
                           .has_b2nd = true};
  p->cparams.codec = B2S_CODEC_ZSTD;
  p->cparams.clevel = 1;
  p->cparams.typesize = 2;
  p->cparams.filters[B2S_MAX_FILTERS - 1] = B2S_FILTER_BITSHUFFLE;
  b2s_b2nd *nd = &p->b2nd;
  nd->version = 0;
  nd->ndim = 3;
  nd->shape[0] = 0, nd->shape[1] = 64, nd->shape[2] = 32;
  nd->chunkshape[0] = 1, nd->chunkshape[1] = 64, nd->chunkshape[2] = 32;
  nd->blockshape[0] = 1, nd->blockshape[1] = 64, nd->blockshape[2] = 32;
  nd->has_dtype = true;
  nd->dtype = dtype;
  nd->dtype_len = sizeof dtype - 1;
}

void dfill_data(int64_t k, uint16_t out[DFILL_ITEMS]) {
  for (int i = 0; i < DFILL_ITEMS; i++)
    out[i] = (uint16_t)(k * 7 + i);
}

int dfill_put(b2s_dframe *df, int64_t k) {
  uint16_t items[DFILL_ITEMS];
  uint8_t chunk[DFILL_NBYTES + B2S_MAX_OVERHEAD];
  dfill_data(k, items);
  b2s_ctx *ctx = b2s_ctx_new();
  if (ctx == NULL)
    return B2S_E_NOMEM;
  int cb = b2s_compress(ctx, &b2s_dframe_params_get(df)->cparams, items,
                        sizeof items, chunk, sizeof chunk);
  b2s_ctx_free(ctx);
  if (cb < 0)
    return cb;
  b2s_record r = {.has_ts = true, .ts = DFILL_TS0 + k};
  if (k == 1)
    r.user_kind = B2S_RECORD_USER_MAP, r.user = user_map,
    r.user_len = sizeof user_map;
  return b2s_dframe_put_chunk(df, k, chunk, (size_t)cb, &r);
}

int dfill_commit_to(b2s_dframe *df, int64_t h) {
  int64_t from = b2s_dframe_committed(df);
  if (from < 0)
    return (int)from;
  if (h <= from)
    return 0;
  size_t n = (size_t)(h - from);
  b2s_mpbuf *bufs = calloc(n, sizeof *bufs);
  const uint8_t **recs = calloc(n, sizeof *recs);
  size_t *lens = calloc(n, sizeof *lens);
  int rc = bufs && recs && lens ? 0 : B2S_E_NOMEM;
  for (size_t k = 0; rc >= 0 && k < n; k++) {
    rc = b2s_dframe_stored_record(df, from + (int64_t)k, &bufs[k]);
    recs[k] = bufs[k].data;
    lens[k] = bufs[k].len;
  }
  if (rc >= 0)
    rc = b2s_dframe_commit(df, (int64_t)n, recs, lens);
  for (size_t k = 0; bufs && k < n; k++)
    b2s_mpbuf_fini(&bufs[k]);
  free(bufs);
  free(recs);
  free(lens);
  return rc;
}

/* The records frame of a data frame: its parameters and mark, and records
 * encoded and appended.  The paired writer (pair.c) appends them beside
 * the data; pair_publish.c and pair_recover.c fill one for a data frame
 * that has none or too few. */
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "pair_internal.h"

#define RECORDS_VLMETA "b2stream"

/* Records: small msgpack maps, lz4 at level 1 (stored as they are when
 * that does not shrink them). */
static b2s_cparams records_cparams(void) {
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.codec = B2S_CODEC_LZ4;
  cp.clevel = 1;
  cp.typesize = 1;
  memset(cp.filters, 0, sizeof cp.filters);
  return cp;
}

b2s_fwriter_opts b2s_pair_records_opts(const b2s_fwriter_opts *data) {
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.cparams = records_cparams();
  o.sync = data->sync;
  o.compact_on_close = data->compact_on_close;
  o.reserve_min = 64 << 10;
  return o;
}

/* The records frame's "b2stream" vlmetalayer: {"records": 1, "data": NAME}
 * with NAME the data frame's file name. */
static int mark_records(b2s_fwriter *rec, const char *data_path) {
  size_t n = strlen(data_path);
  while (n > 1 && data_path[n - 1] == '/')
    n--;
  size_t b = n;
  while (b > 0 && data_path[b - 1] != '/')
    b--;
  b2s_mpbuf m;
  b2s_mpbuf_init(&m);
  int rc = b2s_mp_put_map(&m, 2);
  if (rc == 0 && (rc = b2s_mp_put_str(&m, "records", 7)) == 0)
    rc = b2s_mp_put_uint(&m, 1);
  if (rc == 0 && (rc = b2s_mp_put_str(&m, "data", 4)) == 0)
    rc = b2s_mp_put_str(&m, data_path + b, n - b);
  if (rc == 0)
    rc = b2s_fwriter_vlmeta_set(rec, RECORDS_VLMETA, m.data, (int32_t)m.len);
  b2s_mpbuf_fini(&m);
  return rc;
}

int b2s_pair_records_create(const char *data_path, const char *rpath,
                            bool sparse, const b2s_fwriter_opts *opts,
                            b2s_fwriter **out) {
  b2s_fwriter_opts ro = b2s_pair_records_opts(opts);
  b2s_fwriter *w = NULL;
  int rc = b2s_fwriter_create(rpath, sparse, &ro, NULL, &w);
  if (rc == 0)
    rc = mark_records(w, data_path);
  if (rc == 0)
    rc = b2s_fwriter_commit(w);
  if (rc < 0) {
    b2s_fwriter_free(w);
    w = NULL;
  }
  *out = w;
  return rc;
}

/* ---- records appended ------------------------------------------------------ */

int b2s_recenc_init(b2s_recenc *e) {
  memset(e, 0, sizeof *e);
  e->ctx = b2s_ctx_new();
  if (e->ctx == NULL)
    return B2S_E_NOMEM;
  b2s_mpbuf_init(&e->mp);
  return 0;
}

void b2s_recenc_fini(b2s_recenc *e) {
  b2s_ctx_free(e->ctx);
  b2s_mpbuf_fini(&e->mp);
  free(e->chunk);
  memset(e, 0, sizeof *e);
}

int b2s_recenc_put(b2s_recenc *e, b2s_fwriter *rec, const b2s_record *in,
                   uint64_t hash, uint32_t extra_flags) {
  b2s_record r = in ? *in : (b2s_record){0};
  r.xxh64 = hash;
  r.flags |= extra_flags;
  e->mp.len = 0;
  int rc = b2s_record_encode(&r, &e->mp);
  if (rc < 0)
    return rc;
  size_t need = e->mp.len + B2S_MAX_OVERHEAD;
  if (need > e->cap) {
    uint8_t *c = realloc(e->chunk, need);
    if (c == NULL)
      return B2S_E_NOMEM;
    e->chunk = c;
    e->cap = need;
  }
  b2s_cparams cp = records_cparams();
  rc = b2s_compress(e->ctx, &cp, e->mp.data, (int32_t)e->mp.len, e->chunk,
                    (int32_t)need);
  if (rc < 0)
    return rc;
  int64_t n = b2s_fwriter_append(rec, e->chunk, (size_t)rc);
  return n < 0 ? (int)n : 0;
}

/* A "no record" record (checksum as stored) for each chunk of the data
 * frame from `from` on: chunks whose producer's record is unknown (a frame
 * written without records, or records lost with a power loss) stay data. */
int b2s_pair_records_fill(b2s_fwriter *rec, const char *data_path,
                          int64_t from) {
  b2s_recenc e;
  int rc = b2s_recenc_init(&e);
  b2s_frame *f = NULL;
  if (rc == 0)
    rc = b2s_frame_open(data_path, &f, NULL);
  int64_t n = rc < 0 ? 0 : b2s_frame_nchunks(f);
  uint8_t *buf = NULL;
  for (int64_t i = from; rc >= 0 && i < n; i++) {
    int32_t cb = 0;
    rc = b2s_frame_chunk_sizes(f, i, &cb, NULL);
    uint8_t *nb = rc >= 0 ? realloc(buf, (size_t)cb) : NULL;
    if (rc >= 0 && nb == NULL)
      rc = B2S_E_NOMEM;
    if (rc >= 0) {
      buf = nb;
      rc = b2s_frame_chunk_read(f, i, buf, (size_t)cb);
    }
    if (rc >= 0)
      rc = b2s_recenc_put(&e, rec, NULL, b2s_chunk_xxh64(buf, (size_t)rc),
                          B2S_RECORD_NONE);
  }
  free(buf);
  b2s_frame_free(f);
  b2s_recenc_fini(&e);
  return rc < 0 ? rc : 0;
}

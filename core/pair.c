/* The paired writer: a data frame and its records frame, appended together
 * and committed records first (b2s_meta.h, docs/METADATA.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "pair_internal.h"

#define RECORDS_VLMETA "b2stream"
#define PATH_CAP 4096

struct b2s_pair {
  b2s_fwriter *data, *rec;
  b2s_ctx *ctx;
  b2s_mpbuf mp;                    /* the record being encoded */
  uint8_t *rchunk;                 /* its chunk */
  size_t rcap;
};

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

static b2s_fwriter_opts records_opts(const b2s_fwriter_opts *data) {
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.cparams = records_cparams();
  o.sync = data->sync;
  o.compact_on_close = data->compact_on_close;
  o.reserve_min = 64 << 10;
  return o;
}

static b2s_pair *pair_new(void) {
  b2s_pair *p = calloc(1, sizeof *p);
  if (p == NULL)
    return NULL;
  p->ctx = b2s_ctx_new();
  if (p->ctx == NULL) {
    free(p);
    return NULL;
  }
  b2s_mpbuf_init(&p->mp);
  return p;
}

void b2s_pair_free(b2s_pair *p) {
  if (p == NULL)
    return;
  b2s_fwriter_free(p->rec);
  b2s_fwriter_free(p->data);
  b2s_ctx_free(p->ctx);
  b2s_mpbuf_fini(&p->mp);
  free(p->rchunk);
  free(p);
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

static int create_records(b2s_pair *p, const char *data_path, const char *rpath,
                          bool sparse, const b2s_fwriter_opts *opts) {
  b2s_fwriter_opts ro = records_opts(opts);
  int rc = b2s_fwriter_create(rpath, sparse, &ro, NULL, &p->rec);
  if (rc == 0)
    rc = mark_records(p->rec, data_path);
  return rc == 0 ? b2s_fwriter_commit(p->rec) : rc;
}

int b2s_pair_create(const char *data_path, bool sparse,
                    const b2s_fwriter_opts *opts, const b2s_frame_metas *metas,
                    b2s_pair **out) {
  if (data_path == NULL || out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  b2s_fwriter_opts def = B2S_FWRITER_OPTS_DEFAULTS;
  opts = opts ? opts : &def;
  char rpath[PATH_CAP];
  int rc = b2s_records_path(data_path, rpath, sizeof rpath);
  if (rc < 0)
    return rc;
  /* a records frame left without its data frame is not ours to replace */
  if (b2s_pair_exists(rpath))
    return -EEXIST;
  b2s_pair *p = pair_new();
  if (p == NULL)
    return B2S_E_NOMEM;
  /* data first: a crash before the records frame exists leaves a data
   * frame that b2s_pair_open completes */
  rc = b2s_fwriter_create(data_path, sparse, opts, metas, &p->data);
  if (rc == 0)
    rc = create_records(p, data_path, rpath, sparse, opts);
  if (rc < 0) {
    b2s_pair_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

/* ---- appending ------------------------------------------------------------ */

/* Encode and append the record of the chunk about to be appended. */
static int put_record(b2s_pair *p, const b2s_record *in, uint64_t hash,
                      uint32_t extra_flags) {
  b2s_record r = in ? *in : (b2s_record){0};
  r.xxh64 = hash;
  r.flags |= extra_flags;
  p->mp.len = 0;
  int rc = b2s_record_encode(&r, &p->mp);
  if (rc < 0)
    return rc;
  size_t need = p->mp.len + B2S_MAX_OVERHEAD;
  if (need > p->rcap) {
    uint8_t *c = realloc(p->rchunk, need);
    if (c == NULL)
      return B2S_E_NOMEM;
    p->rchunk = c;
    p->rcap = need;
  }
  b2s_cparams cp = records_cparams();
  rc = b2s_compress(p->ctx, &cp, p->mp.data, (int32_t)p->mp.len, p->rchunk,
                    (int32_t)need);
  if (rc < 0)
    return rc;
  int64_t n = b2s_fwriter_append(p->rec, p->rchunk, (size_t)rc);
  return n < 0 ? (int)n : 0;
}

/* Append record + chunk; the record is taken back when the chunk fails. */
static int64_t append_both(b2s_pair *p, const void *chunk, size_t cbytes,
                           const b2s_record *rec, uint64_t hash,
                           uint32_t extra_flags) {
  int rc = put_record(p, rec, hash, extra_flags);
  if (rc < 0)
    return rc;
  int64_t n = b2s_fwriter_append(p->data, chunk, cbytes);
  if (n < 0)
    b2s_fwriter_delete(p->rec, b2s_fwriter_nchunks(p->rec) - 1);
  return n;
}

/* The repeated-value chunk equivalent to a zeros/NaN/uninit chunk (the
 * frame writer would otherwise store those as index entries or rewrite
 * them, and the checksum must be of the bytes as stored), with the data
 * frame's typesize. */
static int as_repeat(const b2s_pair *p, const b2s_chunk_info *ci,
                     uint8_t *out) {
  b2s_cparams cp;
  b2s_frame_header_cparams(b2s_fwriter_header(p->data), &cp);
  return b2s_chunk_special_as_repeat(&cp, ci->special, ci->nbytes, out,
                                     B2S_REPEAT_CHUNK_MAX);
}

/* hashed: xxh64 is the checksum of chunk[cbytes] as given */
static int64_t append_chunk(b2s_pair *p, const void *chunk, size_t cbytes,
                            const b2s_record *rec, bool hashed,
                            uint64_t xxh64) {
  if (p == NULL || chunk == NULL)
    return B2S_E_ARG;
  b2s_chunk_info ci;
  int rc = b2s_chunk_info_get(chunk, cbytes, &ci);
  if (rc < 0)
    return rc;
  uint8_t repl[B2S_REPEAT_CHUNK_MAX];
  if (ci.special == B2S_SPECIAL_ZERO || ci.special == B2S_SPECIAL_NAN ||
      ci.special == B2S_SPECIAL_UNINIT) {
    rc = as_repeat(p, &ci, repl);
    if (rc < 0)
      return rc;
    chunk = repl;
    cbytes = (size_t)rc;
    hashed = false;               /* the bytes stored are other bytes */
  }
  return append_both(p, chunk, cbytes, rec,
                     hashed ? xxh64 : b2s_chunk_xxh64(chunk, cbytes), 0);
}

int64_t b2s_pair_append(b2s_pair *p, const void *chunk, size_t cbytes,
                        const b2s_record *rec) {
  return append_chunk(p, chunk, cbytes, rec, false, 0);
}

int64_t b2s_pair_append_hashed(b2s_pair *p, const void *chunk, size_t cbytes,
                               const b2s_record *rec, uint64_t xxh64) {
  return append_chunk(p, chunk, cbytes, rec, true, xxh64);
}

int b2s_gap_chunk(const b2s_cparams *cp, int32_t nbytes, uint8_t *out,
                  size_t cap) {
  if (cp == NULL || out == NULL || nbytes <= 0)
    return B2S_E_ARG;
  int32_t c = cap > INT32_MAX ? INT32_MAX : (int32_t)cap;
  return b2s_chunk_special_as_repeat(cp, B2S_SPECIAL_ZERO, nbytes, out, c);
}

int64_t b2s_pair_append_gap(b2s_pair *p, int32_t nbytes, uint32_t flags,
                            const b2s_record *rec) {
  if (p == NULL || nbytes <= 0)
    return B2S_E_ARG;
  uint8_t chunk[B2S_GAP_CHUNK_MAX];
  b2s_cparams cp;
  b2s_frame_header_cparams(b2s_fwriter_header(p->data), &cp);
  int rc = b2s_gap_chunk(&cp, nbytes, chunk, sizeof chunk);
  if (rc < 0)
    return rc;
  return append_both(p, chunk, (size_t)rc, rec,
                     b2s_chunk_xxh64(chunk, (size_t)rc), B2S_RECORD_GAP | flags);
}

int64_t b2s_pair_append_again(b2s_pair *p) {
  if (p == NULL)
    return B2S_E_ARG;
  int64_t n = b2s_fwriter_append_again(p->rec);
  if (n < 0)
    return n;
  n = b2s_fwriter_append_again(p->data);
  if (n < 0)
    b2s_fwriter_delete(p->rec, b2s_fwriter_nchunks(p->rec) - 1);
  return n;
}

int b2s_pair_commit(b2s_pair *p) {
  if (p == NULL)
    return B2S_E_ARG;
  int rc = b2s_fwriter_commit(p->rec);
  return rc < 0 ? rc : b2s_fwriter_commit(p->data);
}

int b2s_pair_close(b2s_pair *p) {
  if (p == NULL)
    return B2S_E_ARG;
  /* records first, as in a commit */
  int rc = b2s_fwriter_close(p->rec);
  p->rec = NULL;
  int rc2 = rc == 0 ? b2s_fwriter_close(p->data) : 0;
  if (rc == 0)
    p->data = NULL;
  b2s_pair_free(p);
  return rc < 0 ? rc : rc2;
}

int64_t b2s_pair_nchunks(const b2s_pair *p) {
  return p ? b2s_fwriter_nchunks(p->data) : 0;
}

b2s_fwriter *b2s_pair_data(b2s_pair *p) { return p ? p->data : NULL; }
b2s_fwriter *b2s_pair_records(b2s_pair *p) { return p ? p->rec : NULL; }

/* ---- opening ------------------------------------------------------------- */

/* A "no record" record (checksum as stored) for each chunk of the data
 * frame from `from` on: chunks whose producer's record is unknown (a frame
 * written without records, or records lost with a power loss) stay data. */
static int fill(b2s_pair *p, const char *data_path, int64_t from) {
  b2s_frame *f;
  int rc = b2s_frame_open(data_path, &f, NULL);
  if (rc < 0)
    return rc;
  int64_t n = b2s_frame_nchunks(f);
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
      rc = put_record(p, NULL, b2s_chunk_xxh64(buf, (size_t)rc),
                      B2S_RECORD_NONE);
  }
  free(buf);
  b2s_frame_free(f);
  return rc < 0 ? rc : 0;
}

int b2s_pair_records_fill(b2s_fwriter *rec, const char *data_path,
                          int64_t from) {
  b2s_pair *p = pair_new();
  if (p == NULL)
    return B2S_E_NOMEM;
  p->rec = rec;                    /* borrowed */
  int rc = fill(p, data_path, from);
  p->rec = NULL;
  b2s_pair_free(p);
  return rc;
}

int b2s_pair_records_create(const char *data_path, const char *rpath,
                            bool sparse, const b2s_fwriter_opts *opts,
                            b2s_fwriter **out) {
  b2s_pair *p = pair_new();
  if (p == NULL)
    return B2S_E_NOMEM;
  int rc = create_records(p, data_path, rpath, sparse, opts);
  *out = rc < 0 ? NULL : p->rec;
  if (rc == 0)
    p->rec = NULL;
  b2s_pair_free(p);
  return rc;
}

static int open_records(b2s_pair *p, const char *data_path,
                        const b2s_fwriter_opts *opts, b2s_frame_error *err) {
  char rpath[PATH_CAP];
  int rc = b2s_records_path(data_path, rpath, sizeof rpath);
  if (rc < 0)
    return rc;
  if (!b2s_pair_exists(rpath)) {
    /* built aside and published whole: a crash leaves none or all */
    const b2s_frame_header *h = b2s_fwriter_header(p->data);
    rc = b2s_pair_records_publish(data_path, rpath,
                                  h->frame_type == B2S_FRAME_TYPE_SPARSE, opts);
    if (rc < 0)
      return rc;
  }
  b2s_fwriter_opts ro = records_opts(opts);
  return b2s_fwriter_open(rpath, &ro, &p->rec, err);
}

/* As recovery: records past the data cut back, data chunks past the
 * records given "no record" records (data is never cut). */
static int align(b2s_pair *p, const char *data_path) {
  int64_t nd = b2s_fwriter_nchunks(p->data), nr = b2s_fwriter_nchunks(p->rec);
  if (nd == nr)
    return 0;
  if (nr > nd) {
    int64_t cut = b2s_pair_cut_tail(p->rec, nd);
    return cut < 0 ? (int)cut : b2s_fwriter_commit(p->rec);
  }
  int rc = fill(p, data_path, nr);
  return rc < 0 ? rc : b2s_fwriter_commit(p->rec);
}

int b2s_pair_open(const char *data_path, const b2s_fwriter_opts *opts,
                  b2s_pair **out, b2s_frame_error *err) {
  if (data_path == NULL || out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  b2s_fwriter_opts def = B2S_FWRITER_OPTS_DEFAULTS;
  opts = opts ? opts : &def;
  b2s_pair *p = pair_new();
  if (p == NULL)
    return B2S_E_NOMEM;
  int rc = b2s_fwriter_open(data_path, opts, &p->data, err);
  if (rc == 0)
    rc = open_records(p, data_path, opts, err);
  if (rc == 0)
    rc = align(p, data_path);
  if (rc < 0) {
    b2s_pair_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

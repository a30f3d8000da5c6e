/* The paired writer: a data frame and its records frame, appended together
 * and committed records first (b2s_meta.h, docs/METADATA.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "pair_internal.h"

#define PATH_CAP 4096

struct b2s_pair {
  b2s_fwriter *data, *rec;
  b2s_recenc enc;                  /* the records being appended */
};

static b2s_pair *pair_new(void) {
  b2s_pair *p = calloc(1, sizeof *p);
  if (p != NULL && b2s_recenc_init(&p->enc) < 0) {
    free(p);
    return NULL;
  }
  return p;
}

void b2s_pair_free(b2s_pair *p) {
  if (p == NULL)
    return;
  b2s_fwriter_free(p->rec);
  b2s_fwriter_free(p->data);
  b2s_recenc_fini(&p->enc);
  free(p);
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
    rc = b2s_pair_records_create(data_path, rpath, sparse, opts, &p->rec);
  if (rc < 0) {
    b2s_pair_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

/* ---- appending ------------------------------------------------------------ */

/* Append record + chunk; the record is taken back when the chunk fails. */
static int64_t append_both(b2s_pair *p, const void *chunk, size_t cbytes,
                           const b2s_record *rec, uint64_t hash,
                           uint32_t extra_flags) {
  int rc = b2s_recenc_put(&p->enc, p->rec, rec, hash, extra_flags);
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
  b2s_fwriter_opts ro = b2s_pair_records_opts(opts);
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
  int rc = b2s_pair_records_fill(p->rec, data_path, nr);
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

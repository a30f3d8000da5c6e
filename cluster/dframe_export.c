/* Exporting a distributed frame's committed chunks to a local Blosc2 frame
 * and its records frame, through core's paired writer, so c-blosc2 and
 * python-blosc2 open the result unchanged. */
#include <stdlib.h>

#include "dframe_internal.h"

/* a commit every 4 runs of DF_LIST_MAX chunks bounds what the writers hold */
#define EXPORT_COMMIT_RUNS 4

/* A gap record whose checksum is that of a gap chunk: appended as a gap
 * (with the export's typesize, b2s_pair_append_gap) without reading its
 * object.  Ranks before version 0.2 stored gaps with a one-byte value,
 * which c-blosc2 cannot read in a frame of wider items; their records
 * are recognised too, so the export never copies such a chunk. */
static bool plain_gap(const b2s_dframe *df, const b2s_record *rec) {
  if (!(rec->flags & B2S_RECORD_GAP))
    return false;
  uint8_t chunk[B2S_GAP_CHUNK_MAX];
  b2s_cparams cp = df->p.cparams;
  for (int legacy = 0; legacy < 2; legacy++) {
    if (legacy) {               /* one-byte value, default blocks */
      cp = B2S_CPARAMS_DEFAULTS;
      cp.typesize = 1;
    }
    int n = b2s_gap_chunk(&cp, df->p.chunk_nbytes, chunk, sizeof chunk);
    if (n > 0 && b2s_chunk_xxh64(chunk, (size_t)n) == rec->xxh64)
      return true;
  }
  return false;
}

static int export_one(b2s_dframe *df, b2s_pair *p, int64_t i,
                      const uint8_t *rb, size_t rlen) {
  b2s_record rec;
  int rc = b2s_record_decode(rb, rlen, &rec);
  if (rc < 0)
    return rc;
  if (plain_gap(df, &rec)) {
    int64_t n = b2s_pair_append_gap(p, df->p.chunk_nbytes,
                                    rec.flags & ~(uint32_t)B2S_RECORD_GAP,
                                    &rec);
    return n < 0 ? (int)n : 0;
  }
  uint8_t *chunk;
  size_t cbytes;
  rc = b2s_dframe_chunk_get(df, i, &chunk, &cbytes);
  if (rc < 0)
    return rc;
  if (b2s_chunk_xxh64(chunk, cbytes) != rec.xxh64) {
    free(chunk);
    return B2S_E_CHECKSUM;
  }
  int64_t n = b2s_pair_append(p, chunk, cbytes, &rec);
  free(chunk);
  return n < 0 ? (int)n : 0;
}

/* Chunks [from, from + n): their records in one listing, then each. */
static int export_run(b2s_dframe *df, b2s_pair *p, int64_t from, int64_t n,
                      b2s_mpbuf *recs, size_t *lens) {
  recs->len = 0;
  int rc = b2s_dframe_records_list(df, from, n, recs, lens);
  size_t off = 0;
  for (int64_t k = 0; rc == 0 && k < n; k++) {
    rc = export_one(df, p, from + k, recs->data + off, lens[k]);
    off += lens[k];
  }
  return rc;
}

static int export_series(b2s_dframe *df, b2s_pair *p) {
  uint8_t *map;
  size_t len;
  int rc = b2s_dframe_series_get(df, &map, &len);
  if (rc < 0)
    return rc;
  if (len > 1)                         /* 0x80: no series metadata */
    rc = b2s_fwriter_series_set(b2s_pair_data(p), map, len);
  free(map);
  return rc;
}

static int create_pair(b2s_dframe *df, const char *path, bool sparse,
                       b2s_pair **out) {
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.cparams = df->p.cparams;
  o.sync = B2S_SYNC_FULL;
  b2s_frame_metas metas;
  b2s_frame_metas_init(&metas);
  int rc = df->p.has_b2nd ? b2s_frame_metas_add_b2nd(&metas, &df->p.b2nd) : 0;
  if (rc >= 0)
    rc = b2s_pair_create(path, sparse, &o, &metas, out);
  b2s_frame_metas_fini(&metas);
  return rc;
}

int64_t b2s_dframe_export(b2s_dframe *df, const char *path, bool sparse) {
  if (df == NULL || path == NULL)
    return B2S_E_ARG;
  int64_t h;
  int rc = b2s_dframe_refresh(df, &h, NULL);
  b2s_pair *p = NULL;
  if (rc == 0)
    rc = create_pair(df, path, sparse, &p);
  b2s_mpbuf recs;
  b2s_mpbuf_init(&recs);
  size_t lens[DF_LIST_MAX];
  for (int64_t i = 0; rc == 0 && i < h; i += DF_LIST_MAX) {
    int64_t n = h - i < DF_LIST_MAX ? h - i : DF_LIST_MAX;
    rc = export_run(df, p, i, n, &recs, lens);
    if (rc == 0 && (i / DF_LIST_MAX + 1) % EXPORT_COMMIT_RUNS == 0)
      rc = b2s_pair_commit(p);
  }
  b2s_mpbuf_fini(&recs);
  if (rc == 0)
    rc = export_series(df, p);
  if (rc < 0) {
    b2s_pair_free(p);
    return rc;
  }
  rc = b2s_pair_close(p);
  return rc < 0 ? rc : h;
}

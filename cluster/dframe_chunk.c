/* Chunk objects of a distributed frame: NAME.c.%016llx holds chunk i as
 * stored, its attribute the chunk's record.  Both go in one put_once, so a
 * chunk is never seen without its record, and the first writer of index i
 * (a rank, or the committer's gap) wins for good. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dframe_internal.h"

int b2s_dframe_chunk_name(const char *name, int64_t i, char *out,
                          size_t cap) {
  if (name == NULL || out == NULL || !b2s_dname_valid(name, strlen(name)) ||
      i < 0 || i >= B2S_DFRAME_INDEX_LIMIT)
    return B2S_E_ARG;
  int n = snprintf(out, cap, "%s.c.%016" PRIx64, name, (uint64_t)i);
  return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : n;
}

/* Encode the record of chunk i into df->mp. */
static int encode_record(b2s_dframe *df, int64_t i, const b2s_record *in,
                         uint64_t hash, uint32_t flags) {
  b2s_record r = in ? *in : (b2s_record){0};
  r.has_frame = true;
  r.frame = (uint64_t)i;
  r.xxh64 = hash;
  r.flags |= flags;
  df->mp.len = 0;
  return b2s_record_encode(&r, &df->mp);
}

static int put(b2s_dframe *df, int64_t i, const void *chunk, size_t cbytes) {
  char obj[DF_OBJ_MAX];
  int rc = b2s_dframe_chunk_name(df->name, i, obj, sizeof obj);
  if (rc < 0)
    return rc;
  return b2s_store_put_once(df->s, obj, chunk, cbytes, df->mp.data,
                            df->mp.len);
}

int b2s_dframe_put_chunk(b2s_dframe *df, int64_t i, const void *chunk,
                         size_t cbytes, const b2s_record *rec) {
  if (df == NULL || chunk == NULL || i < 0 || i >= B2S_DFRAME_INDEX_LIMIT)
    return B2S_E_ARG;
  b2s_chunk_info ci;
  int rc = b2s_chunk_info_get(chunk, cbytes, &ci);
  if (rc < 0)
    return rc;
  if (ci.nbytes != df->p.chunk_nbytes || (size_t)ci.cbytes != cbytes)
    return B2S_E_CHUNK_SIZE;
  rc = encode_record(df, i, rec, b2s_chunk_xxh64(chunk, cbytes), 0);
  return rc < 0 ? rc : put(df, i, chunk, cbytes);
}

int b2s_dframe_stored_record(b2s_dframe *df, int64_t i, b2s_mpbuf *rec) {
  if (df == NULL || rec == NULL)
    return B2S_E_ARG;
  char obj[DF_OBJ_MAX];
  int rc = b2s_dframe_chunk_name(df->name, i, obj, sizeof obj);
  uint8_t *attr = NULL;
  size_t len = 0;
  if (rc >= 0)
    rc = b2s_store_get_attr(df->s, obj, DF_RECORD_MAX, &attr, &len);
  if (rc < 0)
    return rc;
  b2s_record r;
  rc = b2s_record_decode(attr, len, &r);
  if (rc == 0)
    rc = b2s_mp_write_raw(rec, attr, len);
  free(attr);
  return rc;
}

int b2s_dframe_put_gap(b2s_dframe *df, int64_t i, uint32_t flags,
                       b2s_mpbuf *real_record) {
  if (df == NULL || i < 0 || i >= B2S_DFRAME_INDEX_LIMIT)
    return B2S_E_ARG;
  uint8_t chunk[B2S_GAP_CHUNK_MAX];
  int rc = b2s_gap_chunk(&df->p.cparams, df->p.chunk_nbytes, chunk,
                         sizeof chunk);
  if (rc < 0)
    return rc;
  size_t cbytes = (size_t)rc;
  rc = encode_record(df, i, NULL, b2s_chunk_xxh64(chunk, cbytes),
                     B2S_RECORD_GAP | flags);
  if (rc == 0)
    rc = put(df, i, chunk, cbytes);
  if (rc == B2S_E_OBJ_CONFLICT) {
    /* a chunk is there already (a rank's, or an earlier gap): it stays */
    rc = real_record ? b2s_dframe_stored_record(df, i, real_record) : 0;
    return rc < 0 ? rc : 1;
  }
  if (rc == 0 && real_record != NULL)
    rc = b2s_mp_write_raw(real_record, df->mp.data, df->mp.len);
  return rc;
}

int b2s_dframe_chunk_get(b2s_dframe *df, int64_t i, uint8_t **chunk,
                         size_t *cbytes) {
  if (df == NULL || chunk == NULL || cbytes == NULL || i < 0)
    return B2S_E_ARG;
  if (i >= df->committed)
    return -ENOENT;
  char obj[DF_OBJ_MAX];
  int rc = b2s_dframe_chunk_name(df->name, i, obj, sizeof obj);
  if (rc < 0)
    return rc;
  size_t max = (size_t)df->p.chunk_nbytes + B2S_MAX_OVERHEAD;
  rc = b2s_store_get(df->s, obj, max, chunk, cbytes);
  if (rc < 0)
    return rc;
  b2s_chunk_info ci;
  rc = b2s_chunk_info_get(*chunk, *cbytes, &ci);
  if (rc == 0 && (ci.nbytes != df->p.chunk_nbytes ||
                  (size_t)ci.cbytes != *cbytes))
    rc = B2S_E_CHUNK_SIZE;
  if (rc < 0) {
    free(*chunk);
    *chunk = NULL;
  }
  return rc;
}

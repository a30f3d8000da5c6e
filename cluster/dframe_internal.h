/* What the files of a distributed frame share (dframe.c: the handle;
 * dframe_meta.c: NAME.meta; dframe_chunk.c: chunk objects; dframe_index.c:
 * the key log NAME.index; dframe_series.c: series updates in it;
 * dframe_export.c).  dist-internal. */
#ifndef B2S_DFRAME_INTERNAL_H
#define B2S_DFRAME_INTERNAL_H

#include "b2s_dframe.h"
#include "b2s_dname.h"

/* "NAME.c." + 16 hex digits, "NAME.index", "NAME.meta" */
#define DF_OBJ_MAX (B2S_DFRAME_NAME_MAX + 24)
/* NAME.meta is small: a few dozen bytes plus the b2nd metalayer */
#define DF_META_MAX (64 << 10)
/* one series update is one key-log value: the store's 64 KiB limit (the
 * whole map may reach the 256 KiB of a local frame's) */
#define DF_SERIES_MAX (64 << 10)
/* a stored record: its map with a user part of at most 4 KiB */
#define DF_RECORD_MAX (B2S_RECORD_USER_MAX + 256)

struct b2s_dframe {
  b2s_store *s;                    /* borrowed */
  char name[B2S_DFRAME_NAME_MAX + 1];
  char index_obj[DF_OBJ_MAX];
  b2s_dframe_params p;             /* p.b2nd.dtype points into meta */
  uint8_t *meta;                   /* NAME.meta as stored */
  size_t meta_len;
  int64_t committed;               /* as of the last refresh */
  bool closed;
  int64_t commit_h;                /* the committer's H; -1 until read */
  uint8_t *rec;                    /* the last record read (record_get) */
  b2s_mpbuf mp;                    /* scratch for encoding records */
  int64_t recs_from_objects;       /* committed records the key log lost */
};

/* ---- NAME.meta (dframe_meta.c) ---- */

/* Whether params can describe a frame (ranges of every field). */
int b2s_dframe_params_check(const b2s_dframe_params *p);
/* Append NAME.meta's map for p (the same bytes for the same params). */
int b2s_dframe_meta_encode(const b2s_dframe_params *p, b2s_mpbuf *out);
/* Decode and check an untrusted NAME.meta; p->b2nd.dtype points into buf.
 * B2S_E_META for anything but a well-formed map of known keys. */
int b2s_dframe_meta_decode(const uint8_t *buf, size_t len,
                           b2s_dframe_params *p);

/* ---- key log ---- */

/* Parse a decimal count as "committed" holds it. */
int b2s_dframe_parse_count(const uint8_t *v, size_t len, int64_t *out);

/* Committed records [from, from + n), n <= DF_LIST_MAX, copied by one
 * key-log listing into out (one after the other) with their lengths in
 * lens.  B2S_E_INDEX when one is missing. */
#define DF_LIST_MAX 1024
int b2s_dframe_records_list(b2s_dframe *df, int64_t from, int64_t n,
                            b2s_mpbuf *out, size_t *lens);

#endif

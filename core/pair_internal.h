/* What the paired writer (pair.c), the records frame (pair_records.c),
 * its publication (pair_publish.c) and pair recovery (pair_recover.c)
 * share.  Core-internal. */
#ifndef B2S_PAIR_INTERNAL_H
#define B2S_PAIR_INTERNAL_H

#include <stdint.h>

#include "b2s_chunk.h"
#include "b2s_frame_writer.h"
#include "b2s_meta.h"
#include "b2s_msgpack.h"

/* Remove chunks from the end of w until it holds `keep` (pending until the
 * next commit).  Returns how many were removed. */
int64_t b2s_pair_cut_tail(b2s_fwriter *w, int64_t keep);

/* Whether a file or directory exists at path. */
bool b2s_pair_exists(const char *path);

/* The records frame's writer options for a data frame written with data. */
b2s_fwriter_opts b2s_pair_records_opts(const b2s_fwriter_opts *data);

/* Records encoded and appended to a records frame: scratch kept between
 * records. */
typedef struct b2s_recenc {
  b2s_ctx *ctx;
  b2s_mpbuf mp;                    /* the record being encoded */
  uint8_t *chunk;                  /* its chunk */
  size_t cap;
} b2s_recenc;

int b2s_recenc_init(b2s_recenc *e);
void b2s_recenc_fini(b2s_recenc *e);
/* Encode in (NULL: an empty record) with checksum hash and extra_flags,
 * and append it to rec (pending until rec's next commit). */
int b2s_recenc_put(b2s_recenc *e, b2s_fwriter *rec, const b2s_record *in,
                   uint64_t hash, uint32_t extra_flags);

/* Append a "no record" record (checksum of the chunk as stored) to rec
 * for each chunk of the committed data frame at data_path from `from` on
 * (pending until rec's next commit). */
int b2s_pair_records_fill(b2s_fwriter *rec, const char *data_path,
                          int64_t from);

/* Create and commit an empty records frame at rpath, marked as the records
 * of data_path. */
int b2s_pair_records_create(const char *data_path, const char *rpath,
                            bool sparse, const b2s_fwriter_opts *opts,
                            b2s_fwriter **out);

/* Build the records frame of data_path (a "no record" record per chunk)
 * under a temporary name beside rpath, then publish it at rpath: written,
 * synced, renamed, directory synced.  A crash leaves no records frame (a
 * leftover build is removed by the next call). */
int b2s_pair_records_publish(const char *data_path, const char *rpath,
                             bool sparse, const b2s_fwriter_opts *opts);

#endif

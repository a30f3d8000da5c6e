/* Acquisition metadata: series metadata, chunk records and the paired
 * writer of a data frame and its records frame (docs/METADATA.md).
 *
 * Series metadata: one vlmetalayer "series" of the data frame, whose
 * content is a msgpack map {str key: value} as python-blosc2 writes
 * `schunk.vlmeta["series"] = dict` (so blosc2.open(path).vlmeta["series"]
 * is a dict).  It lives in the trailer, so it is durable with the next
 * commit whatever the chunk count.
 *
 * Records: a companion frame of the same kind (NAME.b2frame ->
 * NAME.records.b2frame, file or directory) whose chunk i is the record of
 * data chunk i: a msgpack map {"frame", "ts", "xxh64", "flags", "user"}.
 * The data frame's chunk count is the truth; b2s_pair keeps the two
 * aligned through crashes (records committed first, recovery cuts the
 * longer one back).
 *
 * Ownership: maps and records handed in are read during the call only.  A
 * decoded b2s_record borrows its user bytes from the buffer it was decoded
 * from (for b2s_records_get: until the next call on that handle).  Output
 * maps go to a caller's b2s_mpbuf, which the caller finalises.  A b2s_pair
 * owns its two frame writers; b2s_pair_data() lends the data writer.
 *
 * Threads: one thread at a time per b2s_pair or b2s_records handle. */
#ifndef B2S_META_H
#define B2S_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_frame.h"
#include "b2s_frame_writer.h"
#include "b2s_msgpack.h"

/* ---- series metadata ------------------------------------------------------ */

#define B2S_SERIES_VLMETA "series"
#define B2S_SERIES_KEY_MAX 64              /* bytes of UTF-8 */
#define B2S_SERIES_VALUE_MAX (64 << 10)    /* one value, encoded */
#define B2S_SERIES_MAP_MAX (256 << 10)     /* the whole map, encoded */

/* Check a series map: a msgpack map, keys non-empty UTF-8 strings of at
 * most 64 bytes, no key twice, values well formed (nesting at most
 * B2S_MP_MAX_DEPTH) of at most 64 KiB each, at most 256 KiB in all, no
 * trailing bytes.  allow_nil: nil values (deletions in an update) pass.
 * Returns the number of keys or B2S_E_SERIES_*. */
int b2s_series_check(const void *map, size_t len, bool allow_nil);

/* out = base updated by upd: every key of upd replaces or adds its value,
 * a nil value deletes the key.  Keys of base keep their order, new keys
 * follow in upd's order.  base may be NULL/0 (empty).  The result is
 * checked against the limits (B2S_E_SERIES_SIZE when it grows too big);
 * out is replaced only on success. */
int b2s_series_merge(const void *base, size_t base_len, const void *upd,
                     size_t upd_len, b2s_mpbuf *out);

/* The series map of a frame (an empty map, 0x80, when it has none), in a
 * malloc'ed buffer the caller frees. */
int b2s_frame_series_get(b2s_frame *f, uint8_t **map, size_t *len);

/* The series map as the writer holds it now (pending changes included). */
int b2s_fwriter_series_get(b2s_fwriter *w, uint8_t **map, size_t *len);

/* Merge upd into the writer's series map (nil deletes); visible and durable
 * with the next commit.  An update leaving the map empty removes the
 * vlmetalayer. */
int b2s_fwriter_series_merge(b2s_fwriter *w, const void *upd, size_t len);

/* Replace the whole series map (nil values are dropped). */
int b2s_fwriter_series_set(b2s_fwriter *w, const void *map, size_t len);

/* ---- records ------------------------------------------------------------ */

#define B2S_RECORD_USER_MAX 4096           /* user part, encoded */

enum b2s_record_flag {
  B2S_RECORD_GAP = 1,                      /* placeholder chunk */
  B2S_RECORD_DROPPED = 2,                  /* buffer dropped (backpressure) */
  B2S_RECORD_REJECTED = 4,                 /* buffer refused (bad input) */
  B2S_RECORD_NONE = 8,                     /* no record: made from the stored
                                              chunk, the producer's unknown */
};

enum b2s_record_user {
  B2S_RECORD_USER_NONE = 0,
  B2S_RECORD_USER_MAP = 1,                 /* user: an encoded msgpack map */
  B2S_RECORD_USER_BIN = 2,                 /* user: raw bytes (msgpack bin) */
};

typedef struct b2s_record {
  bool has_frame, has_ts;
  uint64_t frame;                          /* producer frame number */
  int64_t ts;                              /* ns since the epoch */
  uint64_t xxh64;                          /* XXH64 seed 0 of the stored chunk */
  uint32_t flags;                          /* enum b2s_record_flag */
  int user_kind;                           /* enum b2s_record_user */
  const uint8_t *user;
  uint32_t user_len;
} b2s_record;

/* Append the record's msgpack map to out (keys in the order frame, ts,
 * xxh64, flags, user; absent ones left out).  B2S_E_RECORD_USER when the
 * user part is over 4 KiB or a MAP that is not one well-formed map. */
int b2s_record_encode(const b2s_record *rec, b2s_mpbuf *out);

/* Decode a record map (every msgpack encoding accepted; unknown keys are
 * skipped; xxh64 and flags required).  rec->user points into buf. */
int b2s_record_decode(const void *buf, size_t len, b2s_record *rec);

/* The records frame's path for a data frame's path: "NAME.b2frame" (a
 * trailing '/' ignored) -> "NAME.records.b2frame", any other name gets
 * ".records.b2frame" appended.  Returns the length, -ENAMETOOLONG when out
 * is too small. */
int b2s_records_path(const char *data_path, char *out, size_t outlen);

/* XXH64 (seed 0) of a stored chunk, as records hold it. */
uint64_t b2s_chunk_xxh64(const void *chunk, size_t cbytes);

/* Reading the records of a data frame. */
typedef struct b2s_records b2s_records;

/* Open the records frame of the data frame at data_path; -ENOENT when it
 * has none.  err (may be NULL) describes a records frame that does not
 * open. */
int b2s_records_open(const char *data_path, b2s_records **out,
                     b2s_frame_error *err);
void b2s_records_free(b2s_records *r);
int64_t b2s_records_count(const b2s_records *r);
/* Record i (O(1): chunk i of the records frame), decoded; rec->user stays
 * valid until the next call on r. */
int b2s_records_get(b2s_records *r, int64_t i, b2s_record *rec);
/* The records frame, for its vlmetalayers and errors (borrowed). */
b2s_frame *b2s_records_frame(b2s_records *r);

/* ---- the paired writer ---------------------------------------------------- */

typedef struct b2s_pair b2s_pair;

/* Create the data frame at data_path (b2s_fwriter_create) and its records
 * frame beside it.  -EEXIST when either exists. */
int b2s_pair_create(const char *data_path, bool sparse,
                    const b2s_fwriter_opts *opts, const b2s_frame_metas *metas,
                    b2s_pair **out);

/* Open both for appending.  A data frame without a records frame gets one,
 * with a record (flags 0, checksum of the chunk as stored) for every chunk
 * it holds.  Counts that differ are aligned as b2s_pair_recover does.
 * B2S_E_RECOVER when either frame's last commit was interrupted. */
int b2s_pair_open(const char *data_path, const b2s_fwriter_opts *opts,
                  b2s_pair **out, b2s_frame_error *err);

/* Commit what is pending (b2s_pair_commit) and close both; the pair is
 * freed whatever the result.  Returns the first error. */
int b2s_pair_close(b2s_pair *p);
/* Free without committing (as a crash would).  Accepts NULL. */
void b2s_pair_free(b2s_pair *p);

/* Append a chunk and its record.  rec (may be NULL) gives frame, ts,
 * flags and user; its xxh64 is ignored: the checksum of the chunk as
 * stored is computed here.  A zeros, NaN or uninitialised special chunk
 * is stored as the equivalent repeated-value chunk (a form the frame
 * writer never rewrites, so the checksum stays that of the bytes on
 * disk).  Returns the new chunk count. */
int64_t b2s_pair_append(b2s_pair *p, const void *chunk, size_t cbytes,
                        const b2s_record *rec);

/* b2s_pair_append with the checksum of chunk[cbytes] computed by the
 * caller (XXH64, seed 0: b2s_chunk_xxh64), e.g. where it was compressed,
 * while the bytes were in that core's cache. */
int64_t b2s_pair_append_hashed(b2s_pair *p, const void *chunk, size_t cbytes,
                               const b2s_record *rec, uint64_t xxh64);

/* Append a placeholder chunk of nbytes (a repeated-zero special chunk, a
 * few dozen bytes on disk) whose record has B2S_RECORD_GAP plus `flags`;
 * rec (may be NULL) gives frame, ts and user.  Returns the new count. */
int64_t b2s_pair_append_gap(b2s_pair *p, int32_t nbytes, uint32_t flags,
                            const b2s_record *rec);

/* The placeholder chunk b2s_pair_append_gap appends, for writers that
 * store gaps elsewhere: zeros of nbytes as a repeated-value chunk with the
 * frame's parameters cp (its value one item of cp->typesize, its blocks
 * cp's), as c-blosc2 reads it at any place of the frame, b2nd slices
 * across it included.  Returns its size, at most B2S_GAP_CHUNK_MAX. */
#define B2S_GAP_CHUNK_MAX B2S_REPEAT_CHUNK_MAX
int b2s_gap_chunk(const b2s_cparams *cp, int32_t nbytes, uint8_t *out,
                  size_t cap);

/* Append the last chunk and its record again, sharing their stored bytes
 * (b2s_fwriter_append_again): a run of identical gaps costs no file and
 * no chunk bytes past its first. */
int64_t b2s_pair_append_again(b2s_pair *p);

/* Commit the records frame, then the data frame: a crash in between leaves
 * records ahead, which recovery cuts back. */
int b2s_pair_commit(b2s_pair *p);

int64_t b2s_pair_nchunks(const b2s_pair *p);
/* The data frame's writer (series metadata, stats), borrowed. */
b2s_fwriter *b2s_pair_data(b2s_pair *p);
/* The records frame's writer, borrowed (tests, stats). */
b2s_fwriter *b2s_pair_records(b2s_pair *p);

/* ---- recovery ------------------------------------------------------------ */

typedef struct b2s_pair_report {
  b2s_recover_report data, records;
  bool has_records;                /* a records frame exists */
  int64_t records_cut;             /* records past the data count removed */
  int64_t records_filled;          /* "no record" records given to data
                                      chunks that had none */
} b2s_pair_report;

/* Recover the data frame and, when it exists, its records frame
 * (b2s_frame_recover on each), then align the counts: records past the
 * data frame's chunk count are cut; data chunks past the records count
 * (after power loss without fsync) get "no record" records: data is
 * never cut.  err describes
 * the frame that failed.  rep and err may be NULL. */
int b2s_pair_recover(const char *data_path, bool deep, b2s_pair_report *rep,
                     b2s_frame_error *err);

#endif

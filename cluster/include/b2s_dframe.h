/* A distributed sparse frame: one logical Blosc2 sparse frame whose chunks
 * are objects in a b2s_store, written by several ranks on several nodes,
 * with one committer keeping the index (docs/DISTRIBUTED.md).
 *
 * Layout of frame NAME in its store:
 *   NAME.meta          written once at create: a msgpack map of the frame's
 *                      parameters (format version, compression defaults,
 *                      chunk size, b2nd metalayer, ranks, frames per block);
 *                      every rank creates it with the same bytes
 *   NAME.c.%016llx     chunk i (lower-case hex, 16 digits): the Blosc2 chunk
 *                      as stored, written once; its attribute is the chunk's
 *                      record (b2s_meta.h encoding, xxh64 of these bytes)
 *   NAME.index         key log: "committed" -> decimal H (chunks 0..H-1 are
 *                      committed), "r.%016llx" -> record of chunk i (set in
 *                      the same batch that moves "committed" past i),
 *                      "s.<ns>.<tag>" -> one series update (the series
 *                      map is their fold in key order, so concurrent
 *                      merges never lose one), "closed" -> "1" once the
 *                      frame is finished
 * Chunk i is the frame number i: a chunk's place is fixed by its frame
 * number, never by arrival.  A frame missing for good becomes a gap chunk
 * (a repeated-zero special chunk of the frame's chunk size) with a gap
 * record, written by the committer like any other chunk object.
 *
 * Commit cost: one key-log batch of the new records plus "committed",
 * independent of the number of chunks.  The Blosc2 index (chunks.b2frame)
 * exists only in exports (b2s_dframe_export), which c-blosc2 opens.
 *
 * Roles: ranks call put_chunk; the committer calls put_gap, commit and
 * scan; readers call refresh, chunk_get, record_get.  Any of them may live
 * on any node.  Visibility: readers see chunks below "committed" only.
 *
 * Ownership: a b2s_dframe borrows its store (free the frame first).  A
 * decoded record's user bytes stay valid until the next call on that
 * handle.  Threads: one thread at a time per handle. */
#ifndef B2S_DFRAME_H
#define B2S_DFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_chunk.h"
#include "b2s_meta.h"
#include "b2s_store.h"
#include "b2s_frame_format.h"

typedef struct b2s_dframe b2s_dframe;

typedef struct b2s_dframe_params {
  b2s_cparams cparams;       /* compression defaults (header of exports) */
  int32_t chunk_nbytes;      /* bytes of every chunk (gap size), > 0 */
  int32_t ranks;             /* N ranks, 1..1024 */
  int32_t frames_per_block;  /* frame f belongs to rank (f / block) % N */
  bool has_b2nd;
  b2s_b2nd b2nd;             /* N-d array metadata of exports */
} b2s_dframe_params;

/* Object names of frame `name` (1..160 bytes of [A-Za-z0-9._-]). */
int b2s_dframe_chunk_name(const char *name, int64_t i, char *out, size_t cap);

/* The rank that owns frame number f. */
static inline int32_t b2s_dframe_owner(int64_t f, int32_t frames_per_block,
                                       int32_t ranks) {
  return (int32_t)((f / frames_per_block) % ranks);
}

/* Create NAME.meta from params, or open a frame whose NAME.meta holds
 * exactly these parameters (every rank and the committer call this; a
 * frame with other parameters gives B2S_E_OBJ_CONFLICT). */
int b2s_dframe_create(b2s_store *s, const char *name,
                      const b2s_dframe_params *p, b2s_dframe **out);
/* What ranks call instead: NAME.meta is created only once more than half
 * of p->ranks ranks proposed exactly these parameters (each rank writes
 * its proposal, NAME.p.RANK, then counts), so a rank configured with
 * another N or frames_per_block never decides the frame alone.  0 with
 * *out when the frame is open; B2S_E_BUSY while no majority agrees yet
 * (nothing created: call again later; ed says who proposes what);
 * B2S_E_OBJ_CONFLICT when NAME.meta holds other parameters (ed names
 * both). */
int b2s_dframe_create_agreed(b2s_store *s, const char *name, int32_t rank,
                             const b2s_dframe_params *p, b2s_dframe **out,
                             b2s_errdetail *ed);
/* Open an existing frame (readers); -ENOENT when it has no NAME.meta. */
int b2s_dframe_open(b2s_store *s, const char *name, b2s_dframe **out);
void b2s_dframe_free(b2s_dframe *df);                 /* accepts NULL */
const b2s_dframe_params *b2s_dframe_params_get(const b2s_dframe *df);
/* Records of committed chunks this handle found missing from the key log
 * (a damaged batch, which the store skips) and read from their chunk
 * objects instead: callers warn when it is not 0. */
int64_t b2s_dframe_records_recovered(const b2s_dframe *df);

/* Rebuild the key log from the chunk objects (b2stream recover, with no
 * committer running): the record of every chunk below H is written again
 * from its object's attribute, and chunks stored right above H are
 * committed as a committer's start-up scan would (not on a closed frame);
 * "committed" never moves back.  *missing gets the records the key log
 * had lost, *h the committed count after.  B2S_E_INDEX when a chunk below
 * H has no object (*h then names it). */
int b2s_dframe_reindex(b2s_dframe *df, int64_t *missing, int64_t *h);

/* ---- ranks ------------------------------------------------------------------ */

/* Store chunk i (checked with b2s_chunk_info_get; its nbytes must equal
 * chunk_nbytes) with its record (rec may be NULL; its xxh64 is computed
 * here, frame is set to i).  0 once the store acknowledged it; a retry
 * with the same bytes is harmless; B2S_E_OBJ_CONFLICT when chunk i exists
 * with other bytes (e.g. the committer already made it a gap). */
int b2s_dframe_put_chunk(b2s_dframe *df, int64_t i, const void *chunk,
                         size_t cbytes, const b2s_record *rec);

/* ---- the committer ---------------------------------------------------------- */

/* Store a gap chunk at i with a gap record (B2S_RECORD_GAP | flags).
 * Returns 0 when the gap was stored, 1 when a chunk was already there
 * (a rank's, or a gap of an earlier committer), or an error.  On 0 and 1
 * real_record, when not NULL, gets the record now stored at i appended
 * (the gap's, or the chunk's that was there): what to commit at i. */
int b2s_dframe_put_gap(b2s_dframe *df, int64_t i, uint32_t flags,
                       b2s_mpbuf *real_record);

/* The stored committed count H (re-read from the store). */
int64_t b2s_dframe_committed(b2s_dframe *df);

/* Make chunks [H, H + n) committed: recs[k] is the encoded record of chunk
 * H + k, as stored in its object's attribute.  One key-log batch. */
int b2s_dframe_commit(b2s_dframe *df, int64_t n, const uint8_t *const *recs,
                      const size_t *rec_lens);

/* Chunk i's stored record (from its object's attribute, committed or not);
 * -ENOENT when chunk i is not stored.  For a restarted committer. */
int b2s_dframe_stored_record(b2s_dframe *df, int64_t i, b2s_mpbuf *rec);

/* Mark the frame finished (readers stop following). */
int b2s_dframe_close_mark(b2s_dframe *df);

/* ---- readers ---------------------------------------------------------------- */

/* Re-read "committed" and "closed". */
int b2s_dframe_refresh(b2s_dframe *df, int64_t *committed, bool *closed);
/* Committed chunk i as stored (malloc'ed); -ENOENT beyond the committed
 * count (as of the last refresh). */
int b2s_dframe_chunk_get(b2s_dframe *df, int64_t i, uint8_t **chunk,
                         size_t *cbytes);
/* Committed record i, decoded (from the index). */
int b2s_dframe_record_get(b2s_dframe *df, int64_t i, b2s_record *rec);
/* Series map (0x80 when none), malloc'ed; merge applies like
 * b2s_series_merge, is visible at once, and is safe against other
 * writers merging at the same time (an update is at most 64 KiB). */
int b2s_dframe_series_get(b2s_dframe *df, uint8_t **map, size_t *len);
int b2s_dframe_series_merge(b2s_dframe *df, const void *upd, size_t len);

/* Write the committed chunks to a local frame at path (sparse directory or
 * contiguous file, which must not exist) with its records frame and the
 * series metadata, through the core frame writer: c-blosc2 and
 * python-blosc2 open it unchanged.  Returns the number of chunks.  A chunk
 * whose checksum differs from its record stops it with B2S_E_CHECKSUM; a
 * failed export leaves its partial frames for the caller to remove. */
int64_t b2s_dframe_export(b2s_dframe *df, const char *path, bool sparse);

#endif

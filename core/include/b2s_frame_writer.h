/* Writing Blosc2 frames: create, append, insert, update, delete, reorder,
 * metalayers and vlmetalayers, with commits that survive crashes.
 *
 * Layout (docs/FRAME_COMMIT.md has the full protocol).  A frame we write is
 * an ordinary Blosc2 frame that c-blosc2 opens, with three additions that
 * live in bytes c-blosc2 ignores:
 *   - a 4 KiB commit area right after the natural header (a hole at the
 *     start of a contiguous frame's data section; header padding in a
 *     sparse frame's chunks.b2frame) holding two checksummed commit
 *     records, written alternately;
 *   - two index slots, each an index chunk stored memcpy'ed followed by a
 *     trailer.  A commit brings the inactive slot up to date (only the new
 *     index entries and the trailer are written), then flips the header to
 *     it.  The active slot is never written, so the frame opens at every
 *     instant;
 *   - in a contiguous frame, reserved space for future chunks before the
 *     slots, grown geometrically, so slots move rarely.
 * Append cost is therefore independent of the number of chunks: the index
 * lives in memory and a commit writes O(new entries + trailer) bytes.
 *
 * Unused bytes ("holes": the commit area, the reserve, the inactive slot,
 * deleted chunks, bytes of interrupted commits) are bounded by
 * 4 KiB + reserve (max(reserve_min, data/8)) + one slot + deleted chunks,
 * are reported by b2s_fwriter_stats(), and b2s_fwriter_close() with
 * compaction removes all but the commit area (a sparse frame's
 * chunks.b2frame is then rewritten without it, in c-blosc2's layout).
 *
 * Durability: nothing is visible to readers or survives a crash before
 * b2s_fwriter_commit().  With B2S_SYNC_NONE a commit survives the death of
 * the process; with B2S_SYNC_FULL it also survives power loss (fdatasync
 * before and after the header flip, and of the directory of new files).
 *
 * Threads: one thread at a time per writer.  Readers (b2s_frame, other
 * processes, c-blosc2) may read the frame concurrently; they see the state
 * of some completed commit.  A writer with direct I/O or drop-behind (see
 * the options) starts one helper thread of its own, with every signal
 * blocked, for writing out while the caller goes on; close and free join
 * it.
 *
 * Ownership: chunk buffers passed in are copied or written before the call
 * returns; the caller keeps them. */
#ifndef B2S_FRAME_WRITER_H
#define B2S_FRAME_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_chunk.h"
#include "b2s_frame.h"
#include "b2s_frame_format.h"

typedef struct b2s_fwriter b2s_fwriter;

enum b2s_sync {
  B2S_SYNC_NONE = 0,     /* no fsync: safe against process crashes only */
  B2S_SYNC_FULL = 1,     /* fsync barriers: safe against power loss */
};

typedef struct b2s_fwriter_opts {
  /* Compression defaults recorded in the header (codec, clevel, typesize,
   * filters, split mode, blocksize) and used by append_buffer. */
  b2s_cparams cparams;
  int sync;                        /* enum b2s_sync */
  int64_t reserve_min;             /* bytes reserved ahead for chunks in a
                                      contiguous frame; 0 = 1 MiB */
  bool compact_on_close;           /* close() removes reserve and slot holes */
  /* Contiguous frame: chunk data bypasses the page cache (O_DIRECT) where
   * the file system allows it; see b2s_fwriter_direct_io. */
  bool direct_io;
  /* Contiguous frame whose chunk data goes through the page cache (no
   * direct I/O): after each commit, the writer's helper thread hands data
   * more than 64 MiB behind the end to writeback and drops data 128 MiB
   * behind from the page cache, so a long stream recycles a bounded set of
   * cache pages.  For writers that append far more than they read back. */
  bool drop_behind;
} b2s_fwriter_opts;

#define B2S_FWRITER_OPTS_DEFAULTS                                              \
  ((b2s_fwriter_opts){.cparams = B2S_CPARAMS_DEFAULTS,                         \
                      .sync = B2S_SYNC_NONE, .reserve_min = 0,                 \
                      .compact_on_close = true})

/* Create a new frame at path (a file, or a directory when sparse).  Fails
 * with -EEXIST when path exists.  metas (may be NULL) are the fixed-size
 * metalayers, which a frame can only get at creation.  The empty frame is
 * committed under the name PATH.b2s-new, then renamed to path before this
 * returns, so a crash never leaves a frame without a commit at path (a
 * leftover PATH.b2s-new is removed by the next create). */
int b2s_fwriter_create(const char *path, bool sparse,
                       const b2s_fwriter_opts *opts,
                       const b2s_frame_metas *metas, b2s_fwriter **out);

/* Open an existing frame for writing.  A frame whose last commit was
 * interrupted gives B2S_E_RECOVER (run b2s_frame_recover first); a frame
 * written by another tool is rewritten once into the layout above (a
 * contiguous frame is copied, a sparse frame only gets a new
 * chunks.b2frame).  opts->cparams is ignored: the header's defaults are
 * kept.  err (may be NULL) describes a frame that does not open. */
int b2s_fwriter_open(const char *path, const b2s_fwriter_opts *opts,
                     b2s_fwriter **out, b2s_frame_error *err);

/* Commit what is pending, optionally compact, close.  Compacting a sparse
 * frame replaces chunks.b2frame with an unpadded copy (written beside it,
 * synced, renamed over it), which c-blosc2 can append to.  The writer is
 * freed whatever the result; returns the first error. */
int b2s_fwriter_close(b2s_fwriter *w);

/* Free without committing: pending changes are dropped, as a crash would
 * drop them.  Accepts NULL. */
void b2s_fwriter_free(b2s_fwriter *w);

/* ---- state ----------------------------------------------------------- */

int64_t b2s_fwriter_nchunks(const b2s_fwriter *w);
const b2s_frame_header *b2s_fwriter_header(const b2s_fwriter *w);
/* Contiguous frame: the file offset where its chunk data ends (holes
 * included; the next appended chunk goes there).  0 for a sparse frame. */
int64_t b2s_fwriter_data_end(const b2s_fwriter *w);
/* Whether the writer holds its frame's lock (b2s_frame_lock.h): false only on a
 * file system without flock, where nothing keeps a second writer out. */
bool b2s_fwriter_locked(const b2s_fwriter *w);
/* Whether chunk data goes out with direct I/O (asked for, and the file
 * system took it). */
bool b2s_fwriter_direct_io(const b2s_fwriter *w);
/* The most memory the writer's direct-I/O stages take (two of them: one
 * filling, one being written); 0 without direct I/O.  Before a writer
 * exists: B2S_FWRITER_STAGE_BYTES (more only on a device whose alignment
 * exceeds 1 MiB). */
size_t b2s_fwriter_stage_bytes(const b2s_fwriter *w);
#define B2S_FWRITER_STAGE ((size_t)4 << 20)
#define B2S_FWRITER_STAGE_BYTES (2 * B2S_FWRITER_STAGE)

typedef struct b2s_fwriter_stats {
  int64_t nchunks, nbytes;         /* logical chunks and their bytes */
  int64_t stored_bytes;            /* sum of stored chunk sizes */
  int64_t file_bytes;              /* size on disk (cframe file, or index
                                      file + chunk files of a sparse frame) */
  int64_t hole_bytes;              /* unreferenced bytes inside the frame */
  int64_t commits;                 /* commit sequence number */
  int64_t bytes_written;           /* by this writer, all calls */
} b2s_fwriter_stats;

int b2s_fwriter_stats_get(const b2s_fwriter *w, b2s_fwriter_stats *st);

/* ---- chunks (visible after the next commit) ---------------------------- */

/* Append a Blosc2 chunk as it is (validated with b2s_chunk_info_get).
 * Zeros/NaN/uninit special chunks become special index entries when the
 * frame has a fixed chunksize, else repeated-value chunks.  Returns the new
 * number of chunks. */
int64_t b2s_fwriter_append(b2s_fwriter *w, const void *chunk, size_t cbytes);

/* Append the last chunk again without storing it again: the new index
 * entry names the same stored bytes (offset, or chunk file), which
 * c-blosc2 reads like any entry.  A run of identical chunks (placeholders)
 * then costs 8 index bytes each, not a file each.  Such entries stay next
 * to each other (delete and update keep the storage while a neighbour uses
 * it; do not reorder them apart).  B2S_E_ARG when the last chunk is not
 * stored (none, or a special entry).  Returns the new number of chunks. */
int64_t b2s_fwriter_append_again(b2s_fwriter *w);

/* Compress src[0..nbytes) with the header's defaults and append.  ctx may
 * be NULL (the writer's own). */
int64_t b2s_fwriter_append_buffer(b2s_fwriter *w, b2s_ctx *ctx,
                                  const void *src, int32_t nbytes);

int b2s_fwriter_insert(b2s_fwriter *w, int64_t pos, const void *chunk,
                       size_t cbytes);
int b2s_fwriter_update(b2s_fwriter *w, int64_t pos, const void *chunk,
                       size_t cbytes);
int b2s_fwriter_delete(b2s_fwriter *w, int64_t pos);
/* new_index[i] = old_index[order[i]]; order is a permutation of 0..n-1. */
int b2s_fwriter_reorder(b2s_fwriter *w, const int64_t *order, int64_t n);

/* ---- metadata ------------------------------------------------------------ */

/* Replace the content of an existing metalayer; the new content must have
 * the same length (metalayers live in the fixed-size header). */
int b2s_fwriter_meta_update(b2s_fwriter *w, const char *name,
                            const void *content, int32_t len);

/* Add or replace a vlmetalayer (stored as a Blosc2 chunk in the trailer). */
int b2s_fwriter_vlmeta_set(b2s_fwriter *w, const char *name,
                           const void *content, int32_t len);
int b2s_fwriter_vlmeta_delete(b2s_fwriter *w, const char *name);
const b2s_frame_metas *b2s_fwriter_vlmetas(const b2s_fwriter *w);

/* b2nd metalayer for b2s_fwriter_create(): adds "b2nd" to metas. */
int b2s_frame_metas_add_b2nd(b2s_frame_metas *metas, const b2s_b2nd *nd);

/* A frame whose b2nd array grows along its first dimension: set the
 * metalayer's shape[0] to the items of the whole slabs of chunks the frame
 * holds (never less than it says), visible with the next commit.  Returns
 * 1 when it changed, 0 when it had nothing to do (no b2nd metalayer, or
 * the shape covers the chunks), or a negative code. */
int b2s_fwriter_b2nd_grow(b2s_fwriter *w);

/* ---- commits ---------------------------------------------------------- */

/* Make every change since the last commit visible and durable per the sync
 * policy.  Returns 0; on failure nothing of this commit is visible, the
 * writer keeps the pending changes and the frame stays at the last commit. */
int b2s_fwriter_commit(b2s_fwriter *w);

/* Test hook: fail every write after `bytes` more bytes (a write that
 * crosses the limit is cut there), as a crash would.  -1 disables. */
void b2s_fwriter_set_write_limit(b2s_fwriter *w, int64_t bytes);

/* ---- recovery ----------------------------------------------------------- */

typedef struct b2s_recover_report {
  bool was_clean;                  /* nothing to do */
  int64_t nchunks;                 /* chunks in the restored frame */
  int64_t commit;                  /* commit sequence restored */
  int64_t dropped_chunks;          /* referenced by a torn state, not kept */
  int64_t chunks_checked;          /* chunks decoded to check them */
  int64_t orphan_files;            /* sparse: unreferenced chunk files removed */
  int64_t missing_files;           /* sparse: entries whose chunk file was
                                      gone, taken out of the index */
} b2s_recover_report;

/* Restore a frame whose last commit was interrupted: pick the newest
 * complete commit record whose index slot and chunks check out (chunks
 * written since the previous commit are decoded in full; with `deep`, all
 * of them), rewrite the header from it.  Never adds a chunk that does not
 * decode.  A frame without commit records (written by another tool) is
 * only checked.  A sparse frame whose index names chunk files that are
 * gone keeps every other chunk, in order: those entries are removed with
 * one more commit (rep->missing_files).  Fails with B2S_E_LOCKED while a
 * writer holds the frame (b2s_frame_lock.h).  rep and err may be NULL. */
int b2s_frame_recover(const char *path, bool deep, b2s_recover_report *rep,
                      b2s_frame_error *err);

#endif

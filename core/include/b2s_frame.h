/* Reading Blosc2 frames: contiguous frames (a file, or a buffer in memory)
 * and sparse frames (a directory of chunk files plus chunks.b2frame).
 *
 * Opening parses and checks the header, metalayers, trailer, vlmetalayers
 * and the whole chunk index, and keeps them in memory (the model of
 * b2s_frame_format.h plus an int64 index array, which a writer can extend).
 * Chunk data stay on disk: each chunk is read with pread when asked for, so
 * a frame of any size opens in memory proportional to its index.
 *
 * Untrusted input: every size and offset is checked before use; allocations
 * are bounded by the size of the file (the decompressed index and
 * vlmetalayers by B2S_FRAME_DECODED_CAP()).  Every failure caused by the
 * bytes of the frame is described by a b2s_frame_error (code, byte offset,
 * chunk, reason): through the `err` out-parameter of the open functions and
 * b2s_frame_last_error() afterwards.
 *
 * Threads: a b2s_frame is used by one thread at a time (it keeps a read
 * buffer, a codec context and the last error).  Open one handle per thread
 * to read in parallel.
 *
 * Ownership: b2s_frame_free() releases the handle and everything it hands
 * out by pointer (header, index, metalayer lists and contents, b2nd dtype).
 * A memory frame borrows the caller's buffer, which must stay valid and
 * unchanged until b2s_frame_free().  Buffers passed to the chunk functions
 * belong to the caller.  b2s_frame_vlmeta_get() returns malloc'ed memory
 * that the caller frees. */
#ifndef B2S_FRAME_H
#define B2S_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_chunk.h"
#include "b2s_frame_format.h"

/* Largest decoded size accepted for an index or a vlmetalayer that is
 * stored in `stored` bytes: a frame only gets to claim much more data than
 * it holds when that data compresses extremely well (special chunks).
 * The floor can be lowered at build time (fuzzing). */
#ifndef B2S_FRAME_DECODED_FLOOR
#define B2S_FRAME_DECODED_FLOOR (INT64_C(64) << 20)
#endif
#define B2S_FRAME_DECODED_RATIO 256
#define B2S_FRAME_DECODED_CAP(stored)                                          \
  ((stored) > B2S_FRAME_DECODED_FLOOR / B2S_FRAME_DECODED_RATIO                \
       ? (int64_t)(stored) * B2S_FRAME_DECODED_RATIO                           \
       : B2S_FRAME_DECODED_FLOOR)

#define B2S_SFRAME_INDEX_FILE "chunks.b2frame"

typedef struct b2s_frame b2s_frame;

/* Open a frame: a directory is a sparse frame, anything else a contiguous
 * frame starting at byte 0. */
int b2s_frame_open(const char *path, b2s_frame **out, b2s_frame_error *err);

/* Contiguous frame starting at `offset` inside a file (bytes after the
 * frame are allowed).  Error offsets are relative to the frame start. */
int b2s_frame_open_file(const char *path, int64_t offset, b2s_frame **out,
                        b2s_frame_error *err);

/* Contiguous frame in memory, borrowed (see Ownership above). */
int b2s_frame_open_buffer(const void *buf, size_t len, b2s_frame **out,
                          b2s_frame_error *err);

/* Sparse frame directory. */
int b2s_frame_open_sparse(const char *dir, b2s_frame **out,
                          b2s_frame_error *err);

/* Close and release.  Accepts NULL. */
void b2s_frame_free(b2s_frame *f);

/* The error of the last call on f that reads chunks or metalayers (code 0
 * when that call succeeded); open errors go to the open's `err`. */
const b2s_frame_error *b2s_frame_last_error(const b2s_frame *f);

/* ---- what was parsed ----------------------------------------------------- */

const b2s_frame_header *b2s_frame_header_get(const b2s_frame *f);
bool b2s_frame_is_sparse(const b2s_frame *f);
int64_t b2s_frame_nchunks(const b2s_frame *f);

/* The index: nchunks entries (offsets into the data section, sparse chunk
 * ids, or B2S_FRAME_ENTRY_* special values).  NULL when empty. */
const int64_t *b2s_frame_index(const b2s_frame *f);

/* Where the index chunk and the trailer are: frame offsets, and the index
 * chunk's stored size (0 when the frame has no index chunk). */
int b2s_frame_layout(const b2s_frame *f, int64_t *index_offset,
                     int32_t *index_cbytes, int64_t *trailer_offset,
                     int64_t *trailer_len);

/* ---- chunks ---------------------------------------------------------------- */

/* Sizes of chunk i: cbytes of the stored chunk (32 for a special entry,
 * which is synthesised on read) and its uncompressed nbytes.  Either
 * pointer may be NULL.  Returns 0. */
int b2s_frame_chunk_sizes(b2s_frame *f, int64_t i, int32_t *cbytes,
                          int32_t *nbytes);

/* Copy chunk i as stored (a special entry becomes the equivalent 32-byte
 * special chunk) into dst.  Returns cbytes; B2S_E_DEST_SMALL when dstsize is
 * smaller (b2s_frame_chunk_sizes tells the size). */
int b2s_frame_chunk_read(b2s_frame *f, int64_t i, void *dst, size_t dstsize);

/* Decompress chunk i into dst.  Returns its nbytes.  ctx may be NULL (the
 * frame's own context is used).  Special entries are expanded directly:
 * zeros, NaN (typesize 4 or 8) or, for uninitialised chunks, nothing is
 * written.  In a frame with a fixed chunksize every chunk must hold
 * chunksize bytes (the last one: the rest of nbytes), else
 * B2S_E_CHUNK_SIZE. */
int b2s_frame_chunk_decompress(b2s_frame *f, int64_t i, b2s_ctx *ctx,
                               void *dst, size_t dstsize);

/* ---- metalayers -------------------------------------------------------- */

const b2s_frame_metas *b2s_frame_metalayers(const b2s_frame *f);

/* Content of the metalayer `name`, borrowed from f. */
int b2s_frame_meta_get(b2s_frame *f, const char *name,
                       const uint8_t **content, int32_t *len);

/* vlmetalayers as stored (each content is a Blosc2 chunk). */
const b2s_frame_metas *b2s_frame_vlmetalayers(const b2s_frame *f);

/* Decompressed content of the vlmetalayer `name` in a malloc'ed buffer
 * (at least 1 byte allocated, the caller frees it); *len is its size. */
int b2s_frame_vlmeta_get(b2s_frame *f, const char *name, b2s_ctx *ctx,
                         uint8_t **content, int32_t *len);

/* The "b2nd" metalayer (or the legacy "caterva"), parsed.  nd->dtype
 * borrows from f.  B2S_E_NOTFOUND when the frame is not an N-d array. */
int b2s_frame_b2nd_get(b2s_frame *f, b2s_b2nd *nd);

#endif

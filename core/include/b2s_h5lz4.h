/* The HDF5 LZ4 framings DECTRIS detectors send images in, and their
 * conversion into Blosc2 chunks.
 *
 * Both framings ("bslz4" = bitshuffle HDF5 filter with LZ4, "lz4" = HDF5 LZ4
 * filter) start with a 12-byte header: uint64 BE uncompressed byte count,
 * uint32 BE block size in bytes.  Then, per block, a uint32 BE stream size
 * and the raw LZ4 block.
 *
 * bslz4: every block is bitshuffled (elements in groups of 8) and LZ4
 * compressed, always (even when that makes it larger).  Blocks hold
 * block/elem_size elements, a multiple of 8; the last one holds the rest
 * rounded down to a multiple of 8 (none if that is 0), and the final
 * (nelem % 8) elements follow raw, outside any LZ4 stream.
 *
 * lz4: blocks of `block` bytes, the last one shorter; a stream whose size
 * equals its block's size is stored raw.
 *
 * A Blosc2 chunk with one LZ4 stream per block (no split) and the
 * bitshuffle filter (bslz4) or no filter (lz4) has the same blocks, so most
 * images convert by rewriting the framing around streams copied as they
 * are.  Where the layouts differ only the affected block is re-encoded; where
 * they cannot map at all the image is decoded and compressed again. */
#ifndef B2S_H5LZ4_H
#define B2S_H5LZ4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_chunk.h"

#define B2S_H5_HEADER_LEN 12
#define B2S_BSLZ4_DEFAULT_BLOCK 8192        /* bytes, bitshuffle's default */
#define B2S_H5LZ4_DEFAULT_BLOCK (1 << 30)   /* bytes, HDF5 LZ4 filter default */

enum b2s_h5_kind { B2S_H5_BSLZ4 = 1, B2S_H5_LZ4 = 2 };

/* How an image became a chunk (counted by callers). */
enum b2s_h5_path {
  B2S_H5_VERBATIM = 0,    /* every stream copied as it came */
  B2S_H5_PATCHED = 1,     /* streams copied, a few blocks re-encoded */
  B2S_H5_RECOMPRESSED = 2 /* decoded and compressed again */
};

typedef struct b2s_h5_params {
  int kind;              /* enum b2s_h5_kind */
  int32_t elem_size;     /* bslz4: bitshuffle element size (1..255) */
  int32_t typesize;      /* item size of the chunk to make (1..255) */
  int clevel;            /* for re-encoded blocks and the fallback (1..9) */
  bool verify;           /* check every copied LZ4 stream decodes to its block */
  /* Zero-pad the chunk to a whole number of blocks.  A b2nd array with
   * one-dimensional blocks of the framing's block size needs it: c-blosc2
   * reads b2nd slices block by block and wants the chunk's blocks to be
   * the array's (a 2-D image whose rows do not divide the block cannot
   * have them), so such frames hold images flattened, padded. */
  bool pad_blocks;
  /* 0, or the block size the chunk must have (a b2nd array's blocks): a
   * framing with other blocks is decoded and compressed again. */
  int32_t want_block;
} b2s_h5_params;

typedef struct b2s_h5_result {
  int path;              /* enum b2s_h5_path */
  int32_t nblocks;       /* blocks in the chunk */
  int32_t reencoded;     /* blocks not copied as they came */
} b2s_h5_result;

/* Read the 12-byte header; checks sizes against Blosc2's limits
 * (nbytes <= B2S_MAX_BUFFERSIZE) and that the block size is > 0. */
int b2s_h5_header(const void *src, size_t srcsize, int64_t *nbytes,
                  uint32_t *block);

/* Bytes a destination needs for b2s_h5_to_chunk() of this buffer with
 * these parameters, or a negative error when its header is invalid. */
int64_t b2s_h5_chunk_bound(const b2s_h5_params *p, const void *src,
                           size_t srcsize);

/* Convert src[0..srcsize) into one Blosc2 chunk in dst (of the image's
 * size, or padded, see pad_blocks).  The framing must
 * describe exactly `expect_nbytes` bytes (the image's declared size) and be
 * consumed exactly.  Returns the chunk size; res says how it was made.
 * Malformed input gives B2S_E_DECODE (or another negative code) and dst
 * holds nothing valid. */
int b2s_h5_to_chunk(b2s_ctx *ctx, const b2s_h5_params *p, const void *src,
                    size_t srcsize, int64_t expect_nbytes, void *dst,
                    size_t dstsize, b2s_h5_result *res);

/* True when the LZ4 block src[0..csize) certainly decodes
 * (LZ4_decompress_safe, in liblz4 and in c-blosc2) to exactly n bytes;
 * checked by walking its sequences, nothing is written.  False means
 * "not shown": decode it to decide (the walk refuses a few odd blocks that
 * decoders take, e.g. a match at offset 0). */
bool b2s_lz4_block_ok(const void *src, size_t csize, size_t n);

/* b2s_lz4_block_ok of two blocks at once (ok[0] for a, ok[1] for b): the
 * two walks overlap in the CPU, which makes checking a frame's blocks in
 * pairs faster than one by one. */
void b2s_lz4_blocks_ok2(const void *a, size_t ca, size_t na, const void *b,
                        size_t cb, size_t nb, bool ok[2]);

/* Rows of row_bytes each in a block of a 2-D image laid out for bslz4: the
 * whole rows that fit in bitshuffle's default block, at least one, at
 * most ny (the detector source's `layout: images` and the export's). */
int64_t b2s_rows_per_block(int64_t row_bytes, int64_t ny);

/* Decode the framing into dst[0..nbytes) (nbytes must match the header). */
int b2s_h5_decompress(const b2s_h5_params *p, const void *src, size_t srcsize,
                      void *dst, size_t nbytes);

/* Encode src[0..nbytes) the way the bitshuffle HDF5 filter (bslz4) or the
 * HDF5 LZ4 filter (lz4) does; block (bytes) = 0 picks that filter's
 * default (bitshuffle: 8192 bytes of elements rounded down to a multiple
 * of 8 elements, at least 128; lz4: 1 GiB).
 * Returns the size written; dst needs b2s_h5_compress_bound() bytes. */
int64_t b2s_h5_compress(const b2s_h5_params *p, uint32_t block,
                        const void *src, size_t nbytes, void *dst,
                        size_t dstsize);
size_t b2s_h5_compress_bound(const b2s_h5_params *p, uint32_t block,
                             size_t nbytes);

#endif

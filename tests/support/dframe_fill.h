/* Distributed frames for tests (the tool's and the Python package's): a
 * frame of known chunks built with the b2s_dframe calls of ranks and
 * committer, so readers are checked against bytes they did not write.
 *
 * Chunk k holds DFILL_ITEMS uint16 items (k * 7 + i) mod 2^16, compressed
 * with zstd and bitshuffle; its record has frame number k, timestamp
 * DFILL_TS0 + k and, for chunk 1, the user map {"e": 1.0}.  The frame is a
 * b2nd array of shape [0, 64, 32], chunks [1, 64, 32], dtype "<u2"; one
 * rank, one frame per block.
 *
 * Ownership: nothing is kept; buffers handed in belong to the caller. */
#ifndef B2S_DFRAME_FILL_H
#define B2S_DFRAME_FILL_H

#include <stdint.h>

#include "b2s_dframe.h"

#define DFILL_ITEMS 2048
#define DFILL_NBYTES (DFILL_ITEMS * 2)
#define DFILL_TS0 INT64_C(1700000000000000000)

void dfill_params(b2s_dframe_params *p);
/* The items of chunk k. */
void dfill_data(int64_t k, uint16_t out[DFILL_ITEMS]);
/* Compress chunk k and store it as a rank does (b2s_dframe_put_chunk). */
int dfill_put(b2s_dframe *df, int64_t k);
/* Commit [committed, h) with the records stored in the chunk objects, as
 * the committer does. */
int dfill_commit_to(b2s_dframe *df, int64_t h);

#endif

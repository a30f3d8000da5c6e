/* Distributed streams (format: distributed, docs/DISTRIBUTED.md): which
 * rank owns a buffer, as plain functions of plain data.  The I/O thread
 * asks before it accepts a buffer: a rank stores only the frame numbers
 * it owns, so a buffer of another rank's frame is refused (never stored
 * here, where nobody would look for it). */
#ifndef B2SD_RANK_H
#define B2SD_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_errors.h"

/* Frame numbers stop here: chunk indexes of a distributed frame and the
 * index of its messages are below 2^62. */
#define B2SD_RANK_FRAME_LIMIT (UINT64_C(1) << 62)

/* This daemon's place in its cluster, as a stream saw it at open. */
typedef struct b2sd_rank {
  int32_t rank;                  /* 0..nranks-1 */
  int32_t nranks;                /* 1..1024 */
  int32_t frames_per_block;      /* >= 1 */
} b2sd_rank;

/* The rank owning frame number f (b2s_dframe_owner's rule). */
int32_t b2sd_rank_owner(const b2sd_rank *k, uint64_t f);

/* Whether this rank takes a buffer with (has_frame, f): 0, or
 * B2S_E_NEED_FRAME (no frame number), B2S_E_ARG (f >= 2^62),
 * B2S_E_WRONG_RANK (another rank owns it; *owner says which).  why
 * (cap bytes, may be NULL) gets the message for the producer. */
int b2sd_rank_check(const b2sd_rank *k, bool has_frame, uint64_t f,
                    int32_t *owner, b2s_errdetail *ed);

#endif

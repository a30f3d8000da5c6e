/* Ownership of frame numbers among the ranks of a distributed stream
 * (rank.h). */
#include "rank.h"

#include <stdio.h>

#include "b2s_errors.h"

int32_t b2sd_rank_owner(const b2sd_rank *k, uint64_t f) {
  return (int32_t)((f / (uint64_t)k->frames_per_block) % (uint64_t)k->nranks);
}

int b2sd_rank_check(const b2sd_rank *k, bool has_frame, uint64_t f,
                    int32_t *owner, b2s_errdetail *ed) {
  b2s_errdetail_clear(ed);
  if (!has_frame)
    return b2s_errdetail_set(ed, B2S_E_NEED_FRAME, "a distributed stream "
                             "needs a frame number with every buffer (rank "
                             "%d of %d)", (int)k->rank, (int)k->nranks);
  if (f >= B2SD_RANK_FRAME_LIMIT)
    return b2s_errdetail_set(ed, B2S_E_ARG, "frame number %llu is beyond "
                             "2^62 (rank %d of %d)", (unsigned long long)f,
                             (int)k->rank, (int)k->nranks);
  int32_t o = b2sd_rank_owner(k, f);
  if (owner)
    *owner = o;
  if (o == k->rank)
    return 0;
  return b2s_errdetail_set(ed, B2S_E_WRONG_RANK, "frame number %llu belongs "
                           "to rank %d, not to this rank %d",
                           (unsigned long long)f, (int)o, (int)k->rank);
}

/* Ownership of frame numbers among the ranks of a distributed stream
 * (rank.h). */
#include "rank.h"

#include <stdio.h>

#include "b2s_errors.h"

int32_t b2sd_rank_owner(const b2sd_rank *k, uint64_t f) {
  return (int32_t)((f / (uint64_t)k->frames_per_block) % (uint64_t)k->nranks);
}

static void say(char *why, size_t cap, const char *fmt, uint64_t f,
                int32_t a, int32_t b) {
  if (why && cap)
    snprintf(why, cap, fmt, (unsigned long long)f, (int)a, (int)b);
}

int b2sd_rank_check(const b2sd_rank *k, bool has_frame, uint64_t f,
                    int32_t *owner, char *why, size_t cap) {
  if (why && cap)
    why[0] = '\0';
  if (!has_frame) {
    if (why && cap)
      snprintf(why, cap, "a distributed stream needs a frame number with "
               "every buffer (rank %d of %d)", (int)k->rank, (int)k->nranks);
    return B2S_E_NEED_FRAME;
  }
  if (f >= B2SD_RANK_FRAME_LIMIT) {
    say(why, cap, "frame number %llu is beyond 2^62 (rank %d of %d)", f,
        k->rank, k->nranks);
    return B2S_E_ARG;
  }
  int32_t o = b2sd_rank_owner(k, f);
  if (owner)
    *owner = o;
  if (o == k->rank)
    return 0;
  say(why, cap, "frame number %llu belongs to rank %d, not to this rank %d",
      f, o, k->rank);
  return B2S_E_WRONG_RANK;
}

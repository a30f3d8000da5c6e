/* A stream's life (life.h): the transition table and the one function
 * that moves along it. */
#include "life.h"

#include <errno.h>

#include "b2s_assert.h"
#include "log.h"

#define B(s) (1u << B2SD_LIFE_##s)

/* For each state, the states it may move to (life.h). */
static const unsigned next[B2SD_LIFE_COUNT] = {
    [B2SD_LIFE_NEW] = B(READY) | B(FAILED) | B(ENDED),
    [B2SD_LIFE_READY] = B(WRITING) | B(FAILED) | B(RETIRING) | B(ENDED),
    [B2SD_LIFE_FAILED] = B(RETIRING) | B(ENDED),
    [B2SD_LIFE_WRITING] = B(RETIRING) | B(ENDED),
    [B2SD_LIFE_RETIRING] = B(STOPPING) | B(CLOSED) | B(ENDED),
    [B2SD_LIFE_STOPPING] = B(CLOSED) | B(ENDED),
    [B2SD_LIFE_CLOSED] = B(ENDED),
    [B2SD_LIFE_ENDED] = B(READY) | B(FAILED),
};

const char *b2sd_life_name(b2sd_life s) {
  static const char *const names[B2SD_LIFE_COUNT] = {
      "NEW", "READY", "FAILED", "WRITING", "RETIRING", "STOPPING", "CLOSED",
      "ENDED"};
  return (unsigned)s < B2SD_LIFE_COUNT ? names[s] : "?";
}

bool b2sd_life_legal(b2sd_life from, b2sd_life to) {
  return (unsigned)from < B2SD_LIFE_COUNT && (unsigned)to < B2SD_LIFE_COUNT &&
         (next[from] & (1u << to)) != 0;
}

int b2sd_life_move(b2sd_life *life, b2sd_life to, const char *stream) {
  if (!b2sd_life_legal(*life, to)) {
    LOG_E("stream %s: %s -> %s is no move of a stream's life; refused",
          stream, b2sd_life_name(*life), b2sd_life_name(to));
    B2S_ASSERT(!"a stream's life moved outside its machine (life.h)");
    return -EINVAL;
  }
  *life = to;
  return 0;
}

/* What the paired writer (pair.c) and pair recovery (pair_recover.c)
 * share.  Core-internal. */
#ifndef B2S_PAIR_INTERNAL_H
#define B2S_PAIR_INTERNAL_H

#include <stdint.h>

#include "b2s_frame_writer.h"

/* Remove chunks from the end of w until it holds `keep` (pending until the
 * next commit).  Returns how many were removed. */
int64_t b2s_pair_cut_tail(b2s_fwriter *w, int64_t keep);

/* Whether a file or directory exists at path. */
bool b2s_pair_exists(const char *path);

#endif

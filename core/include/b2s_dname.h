/* Rules shared by the frame layout (dframe*.c) and the message codec
 * (dmsg.c): what a distributed frame's name may be, how many ranks it may
 * have.  dist-internal. */
#ifndef B2S_DNAME_H
#define B2S_DNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define B2S_DFRAME_NAME_MAX 160
#define B2S_DFRAME_RANKS_MAX 1024
/* Chunk indices and frame counts stay below this (16 hex digits, and an
 * int64_t sum of two never overflows). */
#define B2S_DFRAME_INDEX_LIMIT (INT64_C(1) << 62)

/* 1..160 bytes of [A-Za-z0-9._-], not starting with '.': the store's
 * object-name rule, with room for the ".c.%016llx" suffix. */
bool b2s_dname_valid(const char *name, size_t len);

#endif

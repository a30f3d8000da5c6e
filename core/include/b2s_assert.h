/* B2S_ASSERT(cond): the invariants the comments state, checked in
 * developer builds (-Ddeveloper=true defines B2S_DEVELOPER).  A failed
 * assertion prints the condition with its file and line and aborts; in
 * other builds the condition is not evaluated at all.  Never a way to
 * handle bad input: that gets an error code. */
#ifndef B2S_ASSERT_H
#define B2S_ASSERT_H

#ifdef B2S_DEVELOPER
#include <stdio.h>
#include <stdlib.h>
#define B2S_ASSERT(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__,     \
              #cond);                                                          \
      abort();                                                                 \
    }                                                                          \
  } while (0)
#else
#define B2S_ASSERT(cond) ((void)sizeof(cond))
#endif

#endif

/* The stop after SIGTERM (drain.c): when the I/O loop may end.  Plain data
 * and one decision; the I/O thread (server.c) owns its b2sd_drain.
 *
 * Committed data always goes to disk first: the loop waits until every
 * accepted buffer is durable (or B2SD_DRAIN_DISK_NS passed, which only a
 * stuck disk reaches).  Replies are a courtesy: a peer whose queue is full
 * (it does not read) gets B2SD_DRAIN_REPLY_NS more, then its replies are
 * abandoned, so no client can hold the stop beyond a few seconds. */
#ifndef B2SD_DRAIN_H
#define B2SD_DRAIN_H

#include <stdbool.h>
#include <stdint.h>

#define B2SD_DRAIN_DISK_NS 60000000000u  /* the disk: 60 s */
#define B2SD_DRAIN_REPLY_NS 1000000000u  /* replies once durable: 1 s */

typedef struct b2sd_drain {
  uint64_t start_ns;             /* first step; 0 before */
  uint64_t durable_ns;           /* first step with everything durable */
} b2sd_drain;

typedef enum b2sd_drain_step {
  B2SD_DRAIN_WAIT,               /* go on turning */
  B2SD_DRAIN_DONE,               /* durable, every reply sent */
  B2SD_DRAIN_ABANDON,            /* durable; replies to slow peers dropped */
  B2SD_DRAIN_STUCK,              /* not durable after B2SD_DRAIN_DISK_NS */
} b2sd_drain_step;

/* One turn of the loop while draining, at now_ns (nonzero): durable says
 * every accepted buffer is on disk, held that replies wait for a peer. */
b2sd_drain_step b2sd_drain_next(b2sd_drain *d, uint64_t now_ns, bool durable,
                                bool held);

#endif

/* When the stop after SIGTERM ends (drain.h). */
#include "drain.h"

b2sd_drain_step b2sd_drain_next(b2sd_drain *d, uint64_t now_ns, bool durable,
                                bool held) {
  if (!d->start_ns)
    d->start_ns = now_ns;
  if (!durable)
    return now_ns - d->start_ns > B2SD_DRAIN_DISK_NS ? B2SD_DRAIN_STUCK
                                                     : B2SD_DRAIN_WAIT;
  if (!held)
    return B2SD_DRAIN_DONE;
  if (!d->durable_ns)
    d->durable_ns = now_ns;
  return now_ns - d->durable_ns >= B2SD_DRAIN_REPLY_NS ? B2SD_DRAIN_ABANDON
                                                       : B2SD_DRAIN_WAIT;
}

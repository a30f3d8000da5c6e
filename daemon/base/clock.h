/* Time for the daemon's own measures: a monotonic clock in nanoseconds
 * (deadlines, latencies, session timeouts).  Any thread. */
#ifndef B2SD_CLOCK_H
#define B2SD_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t b2sd_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wall-clock time for figures shown to people (metrics' timestamps). */
static inline uint64_t b2sd_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif

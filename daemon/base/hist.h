/* Latency histograms (hist.c), plain data of the threads that note them:
 * b2sd_hist, with the buckets the metrics show (relaxed atomics: one
 * thread notes, the I/O thread snapshots it for HTTP), and b2sd_latency,
 * fine buckets for the quantiles STATS reports (one thread notes and
 * reads it). */
#ifndef B2SD_HIST_H
#define B2SD_HIST_H

#include <stdatomic.h>
#include <stdint.h>

/* ---- with Prometheus buckets ---------------------------------------------- */

/* Upper edges of the buckets, 100 us to 1 s (then +Inf). */
#define B2SD_HIST_EDGES 12

/* Counts per bucket (not cumulative) and the sum, relaxed atomics: one
 * thread notes, another may snapshot. */
typedef struct b2sd_hist {
  _Atomic uint64_t bucket[B2SD_HIST_EDGES + 1];
  _Atomic uint64_t sum_ns;
} b2sd_hist;

void b2sd_hist_note(b2sd_hist *h, uint64_t ns);

/* A histogram as read: buckets not cumulative. */
typedef struct b2sd_mhist {
  uint64_t bucket[B2SD_HIST_EDGES + 1];
  uint64_t sum_ns;
} b2sd_mhist;

void b2sd_hist_read(const b2sd_hist *h, b2sd_mhist *out);

/* ---- fine buckets, for quantiles ----------------------------------------- */

/* 10 us buckets up to 5 ms, then one for everything slower; one thread
 * notes and reads it. */
#define B2SD_LAT_BUCKET_NS 10000u
#define B2SD_LAT_BUCKETS 500

typedef struct b2sd_latency {
  uint32_t bucket[B2SD_LAT_BUCKETS + 1];
  uint64_t n, max_ns;
} b2sd_latency;

void b2sd_latency_note(b2sd_latency *l, uint64_t ns);
/* The upper edge of the bucket holding quantile q (0..1], in us; the
 * maximum when that is the last bucket; 0 when nothing was noted. */
double b2sd_latency_quantile_us(const b2sd_latency *l, double q);

#endif

/* Latency histograms (b2sd_latency in b2sd.h): noting a duration and
 * reading a quantile.  Plain data: one thread notes and reads each. */
#include "b2sd.h"

void b2sd_latency_note(b2sd_latency *l, uint64_t ns) {
  uint64_t i = ns / B2SD_LAT_BUCKET_NS;
  l->bucket[i < B2SD_LAT_BUCKETS ? i : B2SD_LAT_BUCKETS]++;
  l->n++;
  if (ns > l->max_ns)
    l->max_ns = ns;
}

double b2sd_latency_quantile_us(const b2sd_latency *l, double q) {
  if (l->n == 0)
    return 0;
  uint64_t want = (uint64_t)(q * (double)l->n + 0.999999), seen = 0;
  if (want < 1)
    want = 1;
  for (int i = 0; i < B2SD_LAT_BUCKETS; i++)
    if ((seen += l->bucket[i]) >= want) {
      double edge = (double)(i + 1) * B2SD_LAT_BUCKET_NS;
      return (edge < (double)l->max_ns ? edge : (double)l->max_ns) / 1e3;
    }
  return (double)l->max_ns / 1e3;
}

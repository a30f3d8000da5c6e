/* Latency histograms (hist.h): noting a duration, reading a histogram
 * and a quantile. */
#include "hist.h"

/* ---- with Prometheus buckets ---------------------------------------------- */

static const uint64_t edge_ns[B2SD_HIST_EDGES] = {
  100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000,
  50000000, 100000000, 250000000, 1000000000};

void b2sd_hist_note(b2sd_hist *h, uint64_t ns) {
  int i = 0;
  while (i < B2SD_HIST_EDGES && ns > edge_ns[i])
    i++;
  /* relaxed: statistics; a reader may see the bucket and the sum a note
   * apart */
  atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

void b2sd_hist_read(const b2sd_hist *h, b2sd_mhist *out) {
  for (int i = 0; i <= B2SD_HIST_EDGES; i++)
    out->bucket[i] = atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
  out->sum_ns = atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
}

/* ---- fine buckets, one thread ---------------------------------------------- */

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

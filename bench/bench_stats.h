/* Figures over rounds, as every benchmark prints them. */
#ifndef B2S_BENCH_STATS_H
#define B2S_BENCH_STATS_H

/* min, median, max of v[0..n) (1 <= n <= 256) into out; for an even n the
 * median is the mean of the middle two.  v is left as it was. */
void bench_spread(const double *v, int n, double out[3]);

#endif

/* What the ingest path pays per buffer to read its stream's settings:
 * the daemon's former way (b2sd_stream_cfg_get: the stream's lock, a copy
 * of the whole b2s_stream_cfg, about 12 KiB, then four fields of it)
 * against the snapshot it reads now (an acquire load of a pointer to the
 * few fields, daemon/b2sd.h b2sd_ingest_cfg), each followed by the same
 * decision on those fields (queue full? which policy? the job's cparams).
 * The copy is made in a function the compiler cannot see through, as
 * stream.c's is for handles.c.  The sides take turns, the order flips
 * every round, a warm-up round comes first; figures are ns per buffer,
 * min / median / max over the rounds, and the ratio old / new per round.
 * Times are the thread's CPU time.
 * Usage: bench_ingestcfg [million reads per side and round, default 4]
 * [rounds, default 8, made even] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b2s_config.h"

/* The fields the daemon's snapshot holds (daemon/b2sd.h). */
typedef struct ingest_cfg {
  b2s_cparams cparams;
  int32_t queue_depth;
  int32_t backpressure;
  bool fills;
} ingest_cfg;

typedef struct fake_stream {
  pthread_mutex_t lock;
  b2s_stream_cfg cfg;
  _Atomic(const ingest_cfg *) ingest;
  ingest_cfg slot;
} fake_stream;

/* b2sd_stream_cfg_get as it was: out escapes, the copy is whole. */
__attribute__((noinline)) static void cfg_get(fake_stream *st,
                                              b2s_stream_cfg *out) {
  pthread_mutex_lock(&st->lock);
  *out = st->cfg;
  pthread_mutex_unlock(&st->lock);
  __asm__ volatile("" : : "r"(out) : "memory");
}

__attribute__((noinline)) static const ingest_cfg *
ingest_get(fake_stream *st) {
  /* acquire: pairs with the release store in main (the daemon's reload) */
  return atomic_load_explicit(&st->ingest, memory_order_acquire);
}

static volatile uint64_t sink;

/* The decision b2sd_buffer_accept makes on the settings. */
static inline uint64_t decide(size_t queued, int32_t depth, int32_t bp,
                              bool fills, const b2s_cparams *cp) {
  bool full = queued >= (size_t)depth;
  return (uint64_t)full * 3u + (uint64_t)bp + (uint64_t)fills +
         (uint64_t)cp->codec + (uint64_t)cp->clevel;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double run_old(fake_stream *st, long n) {
  uint64_t acc = 0;
  double t0 = now();
  for (long i = 0; i < n; i++) {
    b2s_stream_cfg cfg;
    cfg_get(st, &cfg);
    b2s_cparams cp = cfg.cparams;
    acc += decide((size_t)i & 63, cfg.queue_depth, cfg.backpressure,
                  b2s_stream_cfg_fill_gaps(&cfg), &cp);
  }
  double dt = now() - t0;
  sink += acc;
  return dt / (double)n * 1e9;
}

static double run_new(fake_stream *st, long n) {
  uint64_t acc = 0;
  double t0 = now();
  for (long i = 0; i < n; i++) {
    const ingest_cfg *in = ingest_get(st);
    b2s_cparams cp = in->cparams;
    acc += decide((size_t)i & 63, in->queue_depth, in->backpressure,
                  in->fills, &cp);
  }
  double dt = now() - t0;
  sink += acc;
  return dt / (double)n * 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void row(const char *what, double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  printf("%-34s %9.2f %9.2f %9.2f\n", what, v[0], v[n / 2], v[n - 1]);
}

int main(int argc, char **argv) {
  long n = (argc > 1 ? atol(argv[1]) : 4) * 1000000L;
  int rounds = argc > 2 ? atoi(argv[2]) : 8;
  if (n <= 0 || rounds <= 0 || rounds > 1000) {
    fprintf(stderr, "usage: bench_ingestcfg [million reads] [rounds]\n");
    return 2;
  }
  rounds += rounds & 1;
  fake_stream *st = calloc(1, sizeof *st);
  b2s_config *cfg = NULL;
  b2s_errdetail ed;
  const char *yaml = "streams:\n  s: {codec: lz4, queue_depth: 64}\n";
  if (!st || b2s_config_parse(yaml, strlen(yaml), "bench", "/tmp", &cfg,
                              &ed) < 0) {
    fprintf(stderr, "bench_ingestcfg: %s\n", st ? ed.text : "no memory");
    return 1;
  }
  pthread_mutex_init(&st->lock, NULL);
  st->cfg = *b2s_config_stream_find(cfg, "s");
  st->slot = (ingest_cfg){.cparams = st->cfg.cparams,
                          .queue_depth = st->cfg.queue_depth,
                          .backpressure = st->cfg.backpressure,
                          .fills = b2s_stream_cfg_fill_gaps(&st->cfg)};
  /* release: pairs with the acquire load of ingest_get */
  atomic_store_explicit(&st->ingest, &st->slot, memory_order_release);
  printf("settings read per buffer: b2s_stream_cfg %zu bytes, snapshot %zu "
         "bytes; %ld reads per side and round, %d rounds\n",
         sizeof(b2s_stream_cfg), sizeof(ingest_cfg), n, rounds);
  run_old(st, n / 4);            /* warm-up */
  run_new(st, n / 4);
  double *old = calloc((size_t)rounds, sizeof *old);
  double *neu = calloc((size_t)rounds, sizeof *neu);
  double *ratio = calloc((size_t)rounds, sizeof *ratio);
  for (int r = 0; r < rounds; r++) {
    if (r & 1) {
      neu[r] = run_new(st, n);
      old[r] = run_old(st, n);
    } else {
      old[r] = run_old(st, n);
      neu[r] = run_new(st, n);
    }
    ratio[r] = old[r] / neu[r];
  }
  printf("%-34s %9s %9s %9s\n", "", "min", "median", "max");
  row("copy under the lock, ns/buffer", old, rounds);
  row("snapshot pointer, ns/buffer", neu, rounds);
  row("ratio copy / snapshot", ratio, rounds);
  free(ratio);
  free(neu);
  free(old);
  b2s_config_free(cfg);
  pthread_mutex_destroy(&st->lock);
  free(st);
  return 0;
}

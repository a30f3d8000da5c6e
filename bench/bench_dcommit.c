/* Commit cost of a distributed frame against its chunk count.
 *
 * A commit (b2s_dframe_commit) is one key-log batch: the new records plus
 * "committed".  Its cost must not depend on how many chunks the frame
 * already holds.  This measures the mean time of one commit of 64
 * records at 10^3, 10^5 and 10^6 committed chunks: after one untimed
 * round, ROUNDS rounds of COMMITS commits each, printing the min, median and max of the rounds'
 * means and the ratio of the 10^5 and 10^6 medians to the 10^3 one
 * (target: about 1).
 *
 * To reach 10^6 quickly, the chunks in between are committed in batches
 * of 4096 records WITHOUT storing their chunk objects: the commit path
 * never reads chunk objects (it writes the key log only), so what is
 * measured is the same as with the objects there.
 *
 *   bench_dcommit [DIR]
 *
 * Always on the local store (a new directory under DIR, default /tmp,
 * removed at the end; B2S_BENCH_SYNC=full for fsync'ed commits, default
 * none); also on RADOS when B2S_CEPH_CONF names a ceph.conf (pool from
 * B2S_CEPH_POOL, default b2stream; the frame's objects are removed at the
 * end).  On a shared machine, run it when the machine is quiet. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "b2s_dframe.h"
#include "b2s_errors.h"
#include "bench_proc.h"

#define BATCH 64
#define FILL_BATCH 4096
#define ROUNDS 7
#define COMMITS 20

static const int64_t levels[] = {1000, 100000, 1000000};
#define NLEVELS 3

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "bench_dcommit: %s: %s %s\n", what, b2s_strerror(rc),
          b2s_store_last_error());
  exit(1);
}

/* Commit n records for chunks [h, h + n) (no chunk objects). */
static void commit_n(b2s_dframe *df, int64_t h, int64_t n) {
  static b2s_mpbuf m;
  static const uint8_t *recs[FILL_BATCH];
  static size_t lens[FILL_BATCH], offs[FILL_BATCH];
  m.len = 0;
  for (int64_t k = 0; k < n; k++) {
    b2s_record r = {.has_frame = true, .frame = (uint64_t)(h + k),
                    .xxh64 = (uint64_t)(h + k) * 0x9e3779b97f4a7c15ull};
    offs[k] = m.len;
    if (b2s_record_encode(&r, &m) < 0)
      die("record", B2S_E_NOMEM);
    lens[k] = m.len - offs[k];
  }
  for (int64_t k = 0; k < n; k++)
    recs[k] = m.data + offs[k];
  int rc = b2s_dframe_commit(df, n, recs, lens);
  if (rc < 0)
    die("commit", rc);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A follower's refresh (committed and closed) at this size: mean of
 * COMMITS calls, microseconds. */
static double refresh_us(b2s_dframe *df) {
  double t0 = now_s();
  for (int c = 0; c < COMMITS; c++) {
    int64_t h;
    bool closed;
    int rc = b2s_dframe_refresh(df, &h, &closed);
    if (rc < 0)
      die("refresh", rc);
  }
  return (now_s() - t0) / COMMITS * 1e6;
}

/* ROUNDS rounds of COMMITS commits of BATCH records; *h advances.  Returns
 * the median of the rounds' means (microseconds per commit). */
static double measure(b2s_dframe *df, int64_t *h) {
  /* one round untimed: caches and connections warm at every level */
  for (int c = 0; c < COMMITS; c++) {
    commit_n(df, *h, BATCH);
    *h += BATCH;
  }
  int64_t start = *h;
  double mean[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    double t0 = now_s();
    for (int c = 0; c < COMMITS; c++) {
      commit_n(df, *h, BATCH);
      *h += BATCH;
    }
    mean[r] = (now_s() - t0) / COMMITS * 1e6;
  }
  qsort(mean, ROUNDS, sizeof mean[0], cmp_double);
  printf("  %9" PRId64 "  %10.1f  %10.1f  %10.1f  %10.1f\n", start, mean[0],
         mean[ROUNDS / 2], mean[ROUNDS - 1], refresh_us(df));
  fflush(stdout);
  return mean[ROUNDS / 2];
}

static void run(b2s_store *s, const char *what) {
  char name[64];
  snprintf(name, sizeof name, "bench-dcommit-%ld", (long)getpid());
  b2s_dframe_params p = {.cparams = B2S_CPARAMS_DEFAULTS,
                         .chunk_nbytes = 1 << 20, .ranks = 1,
                         .frames_per_block = 1};
  b2s_dframe *df;
  int rc = b2s_dframe_create(s, name, &p, &df);
  if (rc < 0)
    die("create", rc);
  printf("%s, commits of %d records (mean per commit over %d commits, "
         "%d rounds; a reader's refresh, mean)\n"
         "  committed      min us   median us      max us  refresh us\n",
         what, BATCH, COMMITS, ROUNDS);
  int64_t h = 0;
  double med[NLEVELS];
  for (int l = 0; l < NLEVELS; l++) {
    while (h < levels[l]) {
      int64_t n = levels[l] - h < FILL_BATCH ? levels[l] - h : FILL_BATCH;
      commit_n(df, h, n);
      h += n;
    }
    med[l] = measure(df, &h);
  }
  printf("  ratio of medians: 10^5 / 10^3 = %.2f, 10^6 / 10^3 = %.2f\n",
         med[1] / med[0], med[2] / med[0]);
  b2s_dframe_free(df);
  char obj[96];
  snprintf(obj, sizeof obj, "%s.index", name);
  b2s_store_remove(s, obj);
  snprintf(obj, sizeof obj, "%s.meta", name);
  b2s_store_remove(s, obj);
}

static void run_local(const char *base) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/bench_dcommit.XXXXXX", base);
  if (mkdtemp(dir) == NULL) {
    perror("bench_dcommit: mkdtemp");
    exit(1);
  }
  const char *sync = getenv("B2S_BENCH_SYNC");
  bool full = sync != NULL && strcmp(sync, "full") == 0;
  b2s_store_opts o = {.sync = full ? B2S_SYNC_FULL : B2S_SYNC_NONE};
  b2s_store *s;
  int rc = b2s_store_open(dir, &o, &s);
  if (rc < 0)
    die(dir, rc);
  char what[600];
  snprintf(what, sizeof what, "local store %s (sync %s)", dir,
           full ? "full" : "none");
  run(s, what);
  b2s_store_free(s);
  bench_rmtree(dir);
}

static void run_rados(const char *conf) {
  const char *pool = getenv("B2S_CEPH_POOL");
  char url[256];
  snprintf(url, sizeof url, "rados://%s", pool && *pool ? pool : "b2stream");
  b2s_store_opts o = {.ceph_conf = conf};
  b2s_store *s;
  int rc = b2s_store_open(url, &o, &s);
  if (rc < 0)
    die(url, rc);
  char what[400];
  snprintf(what, sizeof what, "RADOS %s (%s)", url, conf);
  run(s, what);
  b2s_store_free(s);
}

int main(int argc, char **argv) {
  run_local(argc > 1 ? argv[1] : "/tmp");
  const char *conf = getenv("B2S_CEPH_CONF");
  if (conf != NULL && *conf != '\0') {
    if (b2s_store_have_rados())
      run_rados(conf);
    else
      printf("RADOS: not in this build\n");
  }
  return 0;
}

/* Distributed frames on the local store (cluster/dframe*.c, b2s_dframe.h):
 * create and open through NAME.meta, chunk objects written once, gaps
 * racing real chunks, commits, what readers see, exports that the core
 * reader opens bit for bit with their records and series metadata.
 * Usage: test_dframe local|rados (the same tests on a RADOS pool when
 * B2S_CEPH_CONF is set). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "b2s_dframe.h"
#include "b2s_errors.h"
#include "dframe_internal.h"
#include "ts.h"

#define NBYTES 4096
#define CHUNK_CAP (NBYTES + B2S_MAX_OVERHEAD)

typedef struct fixture {
  char dir[128];
  char prefix[48];                 /* of every frame name (RADOS: per run) */
  b2s_store *s;
  b2s_ctx *ctx;
} fixture;

static bool g_rados;               /* test_dframe rados: a RADOS pool */

static const char *const g_bases[] = {"run", "bad", "cut", "put", "race",
                                      "commit", "batches", "series", "exp",
                                      "empty"};

/* prefix + base, in one of a few rotating buffers */
static const char *nm(const fixture *fx, const char *base) {
  static char bufs[8][128];
  static int next;
  char *b = bufs[next++ % 8];
  snprintf(b, 128, "%s%s", fx->prefix, base);
  return b;
}

static b2s_dframe_params params(void) {
  b2s_dframe_params p = {.cparams = B2S_CPARAMS_DEFAULTS,
                         .chunk_nbytes = NBYTES, .ranks = 2,
                         .frames_per_block = 4};
  p.cparams.typesize = 2;
  return p;
}

static int setup(void **state) {
  static int runs;
  fixture *fx = calloc(1, sizeof *fx);
  snprintf(fx->dir, sizeof fx->dir, "/tmp/test_dframe.XXXXXX");
  assert_non_null(mkdtemp(fx->dir));
  b2s_store_opts o = {.ceph_conf = getenv("B2S_CEPH_CONF")};
  char url[160];
  if (g_rados) {
    snprintf(url, sizeof url, "rados://b2stream");
    snprintf(fx->prefix, sizeof fx->prefix, "test-dframe-%ld-%d-",
             (long)getpid(), runs++);
  } else {
    snprintf(url, sizeof url, "%s/store", fx->dir);
  }
  assert_int_equal(b2s_store_open(url, &o, &fx->s), 0);
  fx->ctx = b2s_ctx_new();
  *state = fx;
  return 0;
}

/* RADOS: the objects this test may have made (a shared pool) */
static void remove_objects(fixture *fx) {
  char obj[DF_OBJ_MAX];
  for (size_t k = 0; k < sizeof g_bases / sizeof g_bases[0]; k++) {
    static const char *const sfx[] = {"meta", "index"};
    for (int j = 0; j < 2; j++) {
      snprintf(obj, sizeof obj, "%s.%s", nm(fx, g_bases[k]), sfx[j]);
      b2s_store_remove(fx->s, obj);
    }
    for (int64_t i = 0; i < 32; i++) {
      b2s_dframe_chunk_name(nm(fx, g_bases[k]), i, obj, sizeof obj);
      b2s_store_remove(fx->s, obj);
    }
  }
}

static int teardown(void **state) {
  fixture *fx = *state;
  if (g_rados)
    remove_objects(fx);
  b2s_store_free(fx->s);
  b2s_ctx_free(fx->ctx);
  if (ts_rmtree(fx->dir) != 0)
    return -1;
  free(fx);
  return 0;
}

/* Chunk of frame i: a ramp of uint16 values that differs per frame. */
static int make_chunk(fixture *fx, int64_t i, uint8_t *out) {
  uint16_t src[NBYTES / 2];
  for (int k = 0; k < NBYTES / 2; k++)
    src[k] = (uint16_t)(i * 131 + k / 3);
  b2s_cparams cp = params().cparams;
  int n = b2s_compress(fx->ctx, &cp, src, NBYTES, out, CHUNK_CAP);
  assert_true(n > 0);
  return n;
}

static b2s_dframe *create(fixture *fx, const char *name) {
  b2s_dframe_params p = params();
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_create(fx->s, nm(fx, name), &p, &df), 0);
  return df;
}

/* Put chunk i with a record carrying ts = 1000 + i and a user map. */
static void put(fixture *fx, b2s_dframe *df, int64_t i) {
  uint8_t c[CHUNK_CAP];
  int n = make_chunk(fx, i, c);
  static const uint8_t user[] = {0x81, 0xa1, 'k', 0x07};
  b2s_record r = {.has_ts = true, .ts = 1000 + i,
                  .user_kind = B2S_RECORD_USER_MAP, .user = user,
                  .user_len = sizeof user};
  assert_int_equal(b2s_dframe_put_chunk(df, i, c, (size_t)n, &r), 0);
}

/* Commit indices [H, H + n) from their stored records. */
static void commit_stored(b2s_dframe *df, int64_t n) {
  int64_t h = b2s_dframe_committed(df);
  assert_true(h >= 0);
  b2s_mpbuf *b = calloc((size_t)n, sizeof *b);
  const uint8_t **recs = calloc((size_t)n, sizeof *recs);
  size_t *lens = calloc((size_t)n, sizeof *lens);
  for (int64_t k = 0; k < n; k++) {
    assert_int_equal(b2s_dframe_stored_record(df, h + k, &b[k]), 0);
    recs[k] = b[k].data;
    lens[k] = b[k].len;
  }
  assert_int_equal(b2s_dframe_commit(df, n, recs, lens), 0);
  for (int64_t k = 0; k < n; k++)
    b2s_mpbuf_fini(&b[k]);
  free(b);
  free(recs);
  free(lens);
  assert_int_equal(b2s_dframe_committed(df), h + n);
}

/* ---- create and open ------------------------------------------------------ */

static void test_create_open(void **state) {
  fixture *fx = *state;
  b2s_dframe_params p = params();
  p.has_b2nd = true;
  p.b2nd = (b2s_b2nd){.ndim = 2, .shape = {0, 2048}, .chunkshape = {1, 2048},
                      .blockshape = {1, 2048}, .has_dtype = true,
                      .dtype = "<u2", .dtype_len = 3};
  b2s_dframe *a, *b, *c;
  assert_int_equal(b2s_dframe_open(fx->s, nm(fx, "run"), &a), -ENOENT);
  assert_int_equal(b2s_dframe_create(fx->s, nm(fx, "run"), &p, &a), 0);
  /* every rank creates it: the same parameters open it */
  assert_int_equal(b2s_dframe_create(fx->s, nm(fx, "run"), &p, &b), 0);
  assert_int_equal(b2s_dframe_open(fx->s, nm(fx, "run"), &c), 0);
  const b2s_dframe_params *q = b2s_dframe_params_get(c);
  assert_int_equal(q->chunk_nbytes, NBYTES);
  assert_int_equal(q->ranks, 2);
  assert_int_equal(q->frames_per_block, 4);
  assert_int_equal(q->cparams.typesize, 2);
  assert_int_equal(q->cparams.codec, p.cparams.codec);
  assert_memory_equal(q->cparams.filters, p.cparams.filters, 6);
  assert_true(q->has_b2nd);
  assert_int_equal(q->b2nd.ndim, 2);
  assert_int_equal(q->b2nd.shape[1], 2048);
  assert_int_equal(q->b2nd.dtype_len, 3);
  assert_memory_equal(q->b2nd.dtype, "<u2", 3);
  assert_int_equal(b2s_dframe_committed(c), 0);
  b2s_dframe_free(a);
  b2s_dframe_free(b);
  b2s_dframe_free(c);
  /* other parameters conflict */
  b2s_dframe_params p2 = p;
  p2.ranks = 3;
  assert_int_equal(b2s_dframe_create(fx->s, nm(fx, "run"), &p2, &a),
                   B2S_E_OBJ_CONFLICT);
  p2 = p;
  p2.has_b2nd = false;
  assert_int_equal(b2s_dframe_create(fx->s, nm(fx, "run"), &p2, &a),
                   B2S_E_OBJ_CONFLICT);
  /* names and parameters out of range */
  assert_int_equal(b2s_dframe_create(fx->s, ".run", &p, &a), B2S_E_ARG);
  assert_int_equal(b2s_dframe_create(fx->s, "a/b", &p, &a), B2S_E_ARG);
  p2 = p;
  p2.ranks = 1025;
  assert_int_equal(b2s_dframe_create(fx->s, "x", &p2, &a), B2S_E_ARG);
  p2 = p;
  p2.chunk_nbytes = 0;
  assert_int_equal(b2s_dframe_create(fx->s, "x", &p2, &a), B2S_E_ARG);
  p2 = p;
  p2.frames_per_block = 0;
  assert_int_equal(b2s_dframe_create(fx->s, "x", &p2, &a), B2S_E_ARG);
  p2 = p;
  p2.cparams.codec = 3;
  assert_int_equal(b2s_dframe_create(fx->s, "x", &p2, &a), B2S_E_ARG);
  b2s_dframe_free(NULL);
}

/* A damaged NAME.meta is refused on open, and conflicts on create. */
static void test_bad_meta(void **state) {
  fixture *fx = *state;
  static const uint8_t junk[] = {0x81, 0xa6, 'f', 'o', 'r', 'm', 'a', 't', 2};
  assert_int_equal(b2s_store_put(fx->s, nm(fx, "bad.meta"), junk, sizeof junk), 0);
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_open(fx->s, nm(fx, "bad"), &df), B2S_E_META);
  b2s_dframe_params p = params();
  assert_int_equal(b2s_dframe_create(fx->s, nm(fx, "bad"), &p, &df),
                   B2S_E_OBJ_CONFLICT);
  /* a good map, cut anywhere, never opens */
  b2s_mpbuf m;
  b2s_mpbuf_init(&m);
  assert_int_equal(b2s_dframe_meta_encode(&p, &m), 0);
  for (size_t len = 0; len < m.len; len++) {
    assert_int_equal(b2s_store_put(fx->s, nm(fx, "cut.meta"), m.data, len), 0);
    assert_int_equal(b2s_dframe_open(fx->s, nm(fx, "cut"), &df), B2S_E_META);
  }
  assert_int_equal(b2s_store_put(fx->s, nm(fx, "cut.meta"), m.data, m.len), 0);
  assert_int_equal(b2s_dframe_open(fx->s, nm(fx, "cut"), &df), 0);
  b2s_dframe_free(df);
  b2s_mpbuf_fini(&m);
}

static void test_chunk_names(void **state) {
  (void)state;
  char out[DF_OBJ_MAX];
  assert_int_equal(b2s_dframe_chunk_name("run", 0x1a, out, sizeof out), 22);
  assert_string_equal(out, "run.c.000000000000001a");
  assert_int_equal(b2s_dframe_chunk_name("run", -1, out, sizeof out),
                   B2S_E_ARG);
  assert_int_equal(b2s_dframe_chunk_name("run", 1, out, 10), -ENAMETOOLONG);
  assert_int_equal(b2s_dframe_owner(0, 4, 3), 0);
  assert_int_equal(b2s_dframe_owner(5, 4, 3), 1);
  assert_int_equal(b2s_dframe_owner(12, 4, 3), 0);
}

/* ---- chunks -------------------------------------------------------------- */

static void test_put_retry_conflict(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, "put");
  uint8_t c[CHUNK_CAP], c2[CHUNK_CAP];
  int n = make_chunk(fx, 0, c);
  b2s_record r = {.has_ts = true, .ts = 77};
  assert_int_equal(b2s_dframe_put_chunk(df, 0, c, (size_t)n, &r), 0);
  /* a retry with the same bytes is harmless */
  assert_int_equal(b2s_dframe_put_chunk(df, 0, c, (size_t)n, &r), 0);
  /* other bytes, or another record, conflict */
  int n2 = make_chunk(fx, 1, c2);
  assert_int_equal(b2s_dframe_put_chunk(df, 0, c2, (size_t)n2, &r),
                   B2S_E_OBJ_CONFLICT);
  b2s_record r2 = {.has_ts = true, .ts = 78};
  assert_int_equal(b2s_dframe_put_chunk(df, 0, c, (size_t)n, &r2),
                   B2S_E_OBJ_CONFLICT);
  /* the stored record: frame = index, checksum of the bytes */
  b2s_mpbuf m = {0};
  assert_int_equal(b2s_dframe_stored_record(df, 0, &m), 0);
  b2s_record got;
  assert_int_equal(b2s_record_decode(m.data, m.len, &got), 0);
  assert_true(got.has_frame);
  assert_int_equal(got.frame, 0);
  assert_int_equal(got.ts, 77);
  assert_int_equal(got.flags, 0);
  assert_true(got.xxh64 == b2s_chunk_xxh64(c, (size_t)n));
  b2s_mpbuf_fini(&m);
  assert_int_equal(b2s_dframe_stored_record(df, 1, &m), -ENOENT);
  /* chunks of another size or not chunks at all */
  uint8_t small[CHUNK_CAP];
  uint8_t src[100] = {0};
  b2s_cparams cp = params().cparams;
  int ns = b2s_compress(fx->ctx, &cp, src, 100, small, sizeof small);
  assert_int_equal(b2s_dframe_put_chunk(df, 1, small, (size_t)ns, NULL),
                   B2S_E_CHUNK_SIZE);
  memset(small, 0xee, 64);
  assert_true(b2s_dframe_put_chunk(df, 1, small, 64, NULL) < 0);
  assert_int_equal(b2s_dframe_put_chunk(df, 1, c, (size_t)n - 1, NULL),
                   B2S_E_CBYTES);
  assert_int_equal(b2s_dframe_put_chunk(df, -1, c, (size_t)n, NULL),
                   B2S_E_ARG);
  assert_int_equal(b2s_dframe_put_chunk(df, INT64_C(1) << 62, c, (size_t)n,
                                        NULL), B2S_E_ARG);
  b2s_dframe_free(df);
}

/* The committer's gap and a rank's chunk race for index i: whoever comes
 * first stays, in both orders. */
static void test_gap_races(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, "race");
  /* gap first: the rank's late chunk conflicts */
  b2s_mpbuf g = {0};
  assert_int_equal(b2s_dframe_put_gap(df, 5, B2S_RECORD_DROPPED, &g), 0);
  b2s_record r;
  assert_int_equal(b2s_record_decode(g.data, g.len, &r), 0);
  assert_int_equal(r.flags, B2S_RECORD_GAP | B2S_RECORD_DROPPED);
  assert_int_equal(r.frame, 5);
  /* zeros as one repeated item of the frame's typesize (2 here), as
   * c-blosc2 reads a repeated value */
  uint8_t gc[B2S_GAP_CHUNK_MAX];
  b2s_cparams gcp = params().cparams;
  int gn = b2s_gap_chunk(&gcp, NBYTES, gc, sizeof gc);
  assert_int_equal(gn, 32 + 2);
  assert_true(r.xxh64 == b2s_chunk_xxh64(gc, (size_t)gn));
  uint8_t c[CHUNK_CAP];
  int n = make_chunk(fx, 5, c);
  assert_int_equal(b2s_dframe_put_chunk(df, 5, c, (size_t)n, NULL),
                   B2S_E_OBJ_CONFLICT);
  /* a second committer's gap at 5: the same bytes, a harmless retry */
  b2s_mpbuf g2 = {0};
  assert_int_equal(b2s_dframe_put_gap(df, 5, B2S_RECORD_DROPPED, &g2), 0);
  assert_int_equal(g2.len, g.len);
  assert_memory_equal(g2.data, g.data, g.len);
  /* its gap with other flags finds the first one */
  b2s_mpbuf g3 = {0};
  assert_int_equal(b2s_dframe_put_gap(df, 5, 0, &g3), 1);
  assert_int_equal(g3.len, g.len);
  assert_memory_equal(g3.data, g.data, g.len);
  /* the stored chunk is the gap chunk */
  uint8_t *got;
  size_t glen;
  char obj[DF_OBJ_MAX];
  b2s_dframe_chunk_name(nm(fx, "race"), 5, obj, sizeof obj);
  assert_int_equal(b2s_store_get(fx->s, obj, 1 << 20, &got, &glen), 0);
  assert_int_equal(glen, (size_t)gn);
  assert_memory_equal(got, gc, glen);
  free(got);

  /* the rank first: the gap finds its chunk and hands back its record */
  put(fx, df, 6);
  b2s_mpbuf real = {0}, stored = {0};
  assert_int_equal(b2s_dframe_put_gap(df, 6, 0, &real), 1);
  assert_int_equal(b2s_dframe_stored_record(df, 6, &stored), 0);
  assert_int_equal(real.len, stored.len);
  assert_memory_equal(real.data, stored.data, real.len);
  assert_int_equal(b2s_record_decode(real.data, real.len, &r), 0);
  assert_int_equal(r.flags, 0);
  assert_int_equal(r.ts, 1006);
  assert_int_equal(b2s_dframe_put_gap(df, 6, 0, NULL), 1);
  b2s_mpbuf_fini(&g);
  b2s_mpbuf_fini(&g2);
  b2s_mpbuf_fini(&g3);
  b2s_mpbuf_fini(&real);
  b2s_mpbuf_fini(&stored);
  b2s_dframe_free(df);
}

/* ---- commits and readers ------------------------------------------------- */

static void test_commit_and_read(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, "commit");
  b2s_dframe *rd;
  assert_int_equal(b2s_dframe_open(fx->s, nm(fx, "commit"), &rd), 0);
  for (int64_t i = 0; i < 10; i++)
    if (i != 4)
      put(fx, df, i);
  assert_int_equal(b2s_dframe_put_gap(df, 4, 0, NULL), 0);
  commit_stored(df, 3);
  commit_stored(df, 5);
  /* a reader sees nothing before its refresh, and only below H after */
  uint8_t *chunk;
  size_t cb;
  b2s_record r;
  assert_int_equal(b2s_dframe_chunk_get(rd, 0, &chunk, &cb), -ENOENT);
  assert_int_equal(b2s_dframe_record_get(rd, 0, &r), -ENOENT);
  int64_t h;
  bool closed;
  assert_int_equal(b2s_dframe_refresh(rd, &h, &closed), 0);
  assert_int_equal(h, 8);
  assert_false(closed);
  for (int64_t i = 0; i < 8; i++) {
    assert_int_equal(b2s_dframe_record_get(rd, i, &r), 0);
    assert_int_equal(r.frame, i);
    assert_int_equal(b2s_dframe_chunk_get(rd, i, &chunk, &cb), 0);
    assert_true(b2s_chunk_xxh64(chunk, cb) == r.xxh64);
    if (i == 4) {
      assert_int_equal(r.flags, B2S_RECORD_GAP);
    } else {
      uint8_t want[CHUNK_CAP];
      int n = make_chunk(fx, i, want);
      assert_int_equal(cb, (size_t)n);
      assert_memory_equal(chunk, want, cb);
      assert_int_equal(r.ts, 1000 + i);
      assert_int_equal(r.user_len, 4);
      assert_memory_equal(r.user, "\x81\xa1k\x07", 4);
    }
    free(chunk);
  }
  /* stored but not committed: invisible */
  assert_int_equal(b2s_dframe_chunk_get(rd, 8, &chunk, &cb), -ENOENT);
  assert_int_equal(b2s_dframe_record_get(rd, 8, &r), -ENOENT);
  /* a record for another index is refused, H stays */
  b2s_mpbuf m = {0};
  assert_int_equal(b2s_dframe_stored_record(df, 9, &m), 0);
  const uint8_t *recs[1] = {m.data};
  size_t lens[1] = {m.len};
  assert_int_equal(b2s_dframe_commit(df, 1, recs, lens), B2S_E_RECORD);
  static const uint8_t junk[] = {0x90};
  recs[0] = junk;
  lens[0] = 1;
  assert_int_equal(b2s_dframe_commit(df, 1, recs, lens), B2S_E_RECORD);
  assert_int_equal(b2s_dframe_committed(df), 8);
  b2s_mpbuf_fini(&m);
  assert_int_equal(b2s_dframe_commit(df, 0, NULL, NULL), 0);
  commit_stored(df, 2);
  /* the closed mark */
  assert_int_equal(b2s_dframe_close_mark(df), 0);
  assert_int_equal(b2s_dframe_refresh(rd, &h, &closed), 0);
  assert_int_equal(h, 10);
  assert_true(closed);
  /* a new handle reads "committed" from the store */
  b2s_dframe *again;
  assert_int_equal(b2s_dframe_open(fx->s, nm(fx, "commit"), &again), 0);
  assert_int_equal(b2s_dframe_committed(again), 10);
  assert_int_equal(b2s_dframe_record_get(again, 9, &r), 0);
  assert_int_equal(r.frame, 9);
  b2s_dframe_free(again);
  b2s_dframe_free(rd);
  b2s_dframe_free(df);
}

/* Commits of 1, 64 and 4096 records move H by as much each time. */
static void test_commit_batches(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, "batches");
  static const int64_t sizes[] = {1, 64, 4096, 3};
  int64_t h = 0;
  b2s_mpbuf m = {0};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int64_t n = sizes[s];
    /* records only: the commit path does not read chunk objects */
    const uint8_t **recs = calloc((size_t)n, sizeof *recs);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    size_t *offs = calloc((size_t)n, sizeof *offs);
    m.len = 0;
    for (int64_t k = 0; k < n; k++) {
      b2s_record r = {.has_frame = true, .frame = (uint64_t)(h + k),
                      .xxh64 = (uint64_t)k};
      offs[k] = m.len;
      assert_int_equal(b2s_record_encode(&r, &m), 0);
      lens[k] = m.len - offs[k];
    }
    for (int64_t k = 0; k < n; k++)
      recs[k] = m.data + offs[k];
    assert_int_equal(b2s_dframe_commit(df, n, recs, lens), 0);
    h += n;
    assert_int_equal(b2s_dframe_committed(df), h);
    free(recs);
    free(lens);
    free(offs);
  }
  b2s_record r;
  assert_int_equal(b2s_dframe_refresh(df, NULL, NULL), 0);
  assert_int_equal(b2s_dframe_record_get(df, 65, &r), 0);
  assert_int_equal(r.frame, 65);
  assert_int_equal(r.xxh64, 0);
  assert_int_equal(b2s_dframe_record_get(df, h - 1, &r), 0);
  assert_int_equal(r.frame, h - 1);
  b2s_mpbuf_fini(&m);
  b2s_dframe_free(df);
}

static void test_series(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, "series");
  uint8_t *map;
  size_t len;
  assert_int_equal(b2s_dframe_series_get(df, &map, &len), 0);
  assert_int_equal(len, 1);
  assert_int_equal(map[0], 0x80);
  free(map);
  static const uint8_t upd[] = {0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0xa1, 'x'};
  assert_int_equal(b2s_dframe_series_merge(df, upd, sizeof upd), 0);
  static const uint8_t upd2[] = {0x82, 0xa1, 'a', 0xc0, 0xa1, 'c', 0x02};
  assert_int_equal(b2s_dframe_series_merge(df, upd2, sizeof upd2), 0);
  assert_int_equal(b2s_dframe_series_get(df, &map, &len), 0);
  static const uint8_t want[] = {0x82, 0xa1, 'b', 0xa1, 'x', 0xa1, 'c', 0x02};
  assert_int_equal(len, sizeof want);
  assert_memory_equal(map, want, len);
  free(map);
  static const uint8_t bad[] = {0x91, 0x01};
  assert_true(b2s_dframe_series_merge(df, bad, sizeof bad) < 0);
  /* a second writer's merges, interleaved: nothing is lost, the later
   * update of a key wins */
  b2s_dframe *other;
  assert_int_equal(b2s_dframe_open(fx->s, nm(fx, "series"), &other), 0);
  static const uint8_t u1[] = {0x81, 0xa1, 'd', 0x03};
  static const uint8_t u2[] = {0x82, 0xa1, 'e', 0x04, 0xa1, 'b', 0xa1, 'y'};
  assert_int_equal(b2s_dframe_series_merge(other, u1, sizeof u1), 0);
  assert_int_equal(b2s_dframe_series_merge(df, u2, sizeof u2), 0);
  static const uint8_t want2[] = {0x84, 0xa1, 'b', 0xa1, 'y', 0xa1, 'c', 0x02,
                                  0xa1, 'd', 0x03, 0xa1, 'e', 0x04};
  for (int k = 0; k < 2; k++) {
    assert_int_equal(b2s_dframe_series_get(k ? other : df, &map, &len), 0);
    assert_int_equal(len, sizeof want2);
    assert_memory_equal(map, want2, len);
    free(map);
  }
  /* more updates than one listing holds */
  for (int k = 0; k < 300; k++) {
    uint8_t u[] = {0x81, 0xa1, 'n', 0xcd, (uint8_t)(k >> 8), (uint8_t)k};
    assert_int_equal(b2s_dframe_series_merge(k % 2 ? df : other, u, sizeof u),
                     0);
  }
  assert_int_equal(b2s_dframe_series_get(df, &map, &len), 0);
  assert_int_equal(map[0], 0x85);
  assert_memory_equal(map + len - 3, "\xcd\x01\x2b", 3);   /* n = 299 */
  free(map);
  /* an update over 64 KiB is refused */
  size_t big = (64 << 10) + 16;
  uint8_t *u = calloc(1, big);
  u[0] = 0x81;
  u[1] = 0xa1;
  u[2] = 'z';
  u[3] = 0xc5;                          /* bin16 */
  u[4] = (uint8_t)((big - 6) >> 8);
  u[5] = (uint8_t)(big - 6);
  assert_int_equal(b2s_dframe_series_merge(df, u, big), B2S_E_SERIES_SIZE);
  free(u);
  b2s_dframe_free(other);
  b2s_dframe_free(df);
}

/* ---- exports ---------------------------------------------------------------- */

/* Frames 0..n-1 with gaps at every 5th, committed, series and b2nd set. */
static b2s_dframe *filled(fixture *fx, const char *name, int64_t n) {
  b2s_dframe_params p = params();
  p.has_b2nd = true;
  p.b2nd = (b2s_b2nd){.ndim = 2, .shape = {n, 2048}, .chunkshape = {1, 2048},
                      .blockshape = {1, 2048}, .has_dtype = true,
                      .dtype = "<u2", .dtype_len = 3};
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_create(fx->s, nm(fx, name), &p, &df), 0);
  for (int64_t i = 0; i < n; i++) {
    if (i % 5 == 3)
      assert_int_equal(b2s_dframe_put_gap(df, i, B2S_RECORD_DROPPED, NULL), 0);
    else
      put(fx, df, i);
  }
  commit_stored(df, n);
  static const uint8_t series[] = {0x81, 0xa4, 'b', 'e', 'a', 'm', 0xcd, 0x01,
                                   0x00};
  assert_int_equal(b2s_dframe_series_merge(df, series, sizeof series), 0);
  /* stored beyond H: not exported */
  put(fx, df, n);
  return df;
}

static void check_export(fixture *fx, const char *path, int64_t n,
                         bool sparse) {
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_is_sparse(f), sparse);
  assert_int_equal(b2s_frame_nchunks(f), n);
  b2s_b2nd nd;
  assert_int_equal(b2s_frame_b2nd_get(f, &nd), 0);
  assert_int_equal(nd.ndim, 2);
  assert_int_equal(nd.shape[0], n);
  uint8_t *map;
  size_t len;
  assert_int_equal(b2s_frame_series_get(f, &map, &len), 0);
  assert_int_equal(len, 9);
  assert_memory_equal(map, "\x81\xa4" "beam\xcd\x01\x00", 9);
  free(map);
  b2s_records *rs;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  assert_int_equal(b2s_records_count(rs), n);
  /* a gap exported: zeros repeated in a value of the frame's typesize,
   * as c-blosc2's lazy chunk reader wants it */
  uint8_t gc[B2S_GAP_CHUNK_MAX + 8];
  static const uint8_t zeros[8];
  b2s_cparams gcp = B2S_CPARAMS_DEFAULTS;
  gcp.typesize = b2s_frame_header_get(f)->typesize;
  assert_true(gcp.typesize > 1 && gcp.typesize <= 8);
  int gn = b2s_chunk_repeatval(&gcp, NBYTES, gc, (int32_t)sizeof gc, zeros,
                               gcp.typesize);
  assert_int_equal(gn, 32 + gcp.typesize);
  for (int64_t i = 0; i < n; i++) {
    uint8_t want[CHUNK_CAP], got[CHUNK_CAP];
    int wn = i % 5 == 3 ? gn : make_chunk(fx, i, want);
    if (i % 5 == 3)
      memcpy(want, gc, (size_t)gn);
    int cb = b2s_frame_chunk_read(f, i, got, sizeof got);
    assert_int_equal(cb, wn);
    assert_memory_equal(got, want, (size_t)cb);
    uint16_t dec[NBYTES / 2];
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, dec, NBYTES),
                     NBYTES);
    b2s_record r;
    assert_int_equal(b2s_records_get(rs, i, &r), 0);
    assert_int_equal(r.frame, i);
    assert_true(r.xxh64 == b2s_chunk_xxh64(got, (size_t)cb));
    if (i % 5 == 3) {
      assert_int_equal(r.flags, B2S_RECORD_GAP | B2S_RECORD_DROPPED);
      assert_int_equal(dec[7], 0);
    } else {
      assert_int_equal(r.flags, 0);
      assert_int_equal(r.ts, 1000 + i);
      assert_int_equal(r.user_kind, B2S_RECORD_USER_MAP);
      assert_memory_equal(r.user, "\x81\xa1k\x07", 4);
      assert_int_equal(dec[7], (uint16_t)(i * 131 + 7 / 3));
    }
  }
  b2s_records_free(rs);
  b2s_frame_free(f);
}

static void test_export(void **state) {
  fixture *fx = *state;
  const int64_t n = 23;
  b2s_dframe *df = filled(fx, "exp", n);
  char sparse[200], contig[200];
  snprintf(sparse, sizeof sparse, "%s/exp.b2frame", fx->dir);
  snprintf(contig, sizeof contig, "%s/exp.b2f", fx->dir);
  assert_int_equal(b2s_dframe_export(df, sparse, true), n);
  assert_int_equal(b2s_dframe_export(df, contig, false), n);
  check_export(fx, sparse, n, true);
  check_export(fx, contig, n, false);
  /* the target must not exist */
  assert_int_equal(b2s_dframe_export(df, contig, false), -EEXIST);
  /* a chunk whose bytes no longer match its record stops the export
   * (the object replaced behind the frame's back, its record kept) */
  char obj[DF_OBJ_MAX], path[400];
  b2s_dframe_chunk_name(nm(fx, "exp"), 1, obj, sizeof obj);
  uint8_t *data, *attr;
  size_t dlen, alen;
  assert_int_equal(b2s_store_get(fx->s, obj, 1 << 20, &data, &dlen), 0);
  assert_int_equal(b2s_store_get_attr(fx->s, obj, 1 << 20, &attr, &alen), 0);
  data[40] ^= 0x55;
  assert_int_equal(b2s_store_remove(fx->s, obj), 0);
  assert_int_equal(b2s_store_put_once(fx->s, obj, data, dlen, attr, alen), 0);
  free(data);
  free(attr);
  snprintf(path, sizeof path, "%s/bad.b2frame", fx->dir);
  assert_int_equal(b2s_dframe_export(df, path, true), B2S_E_CHECKSUM);
  b2s_dframe_free(df);
}

/* An empty frame exports to an empty frame. */
static void test_export_empty(void **state) {
  fixture *fx = *state;
  b2s_dframe *df = create(fx, "empty");
  char path[200];
  snprintf(path, sizeof path, "%s/empty.b2frame", fx->dir);
  assert_int_equal(b2s_dframe_export(df, path, false), 0);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), 0);
  b2s_frame_free(f);
  b2s_dframe_free(df);
}

static void test_rados_skipped(void **state) {
  (void)state;
  skip();
}

/* test_dframe [local|rados]: rados needs B2S_CEPH_CONF (a test cluster's
 * ceph.conf, scripts/ceph-test-cluster) and a build with librados. */
int main(int argc, char **argv) {
  g_rados = argc > 1 && strcmp(argv[1], "rados") == 0;
  if (g_rados && (!b2s_store_have_rados() || !getenv("B2S_CEPH_CONF"))) {
    printf("rados tests skipped: %s\n", b2s_store_have_rados()
                                            ? "B2S_CEPH_CONF not set"
                                            : "this build has no librados");
    const struct CMUnitTest none[] = {cmocka_unit_test(test_rados_skipped)};
    return ts_run_named("dframe_rados", none, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_create_open, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_meta, setup, teardown),
      cmocka_unit_test(test_chunk_names),
      cmocka_unit_test_setup_teardown(test_put_retry_conflict, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gap_races, setup, teardown),
      cmocka_unit_test_setup_teardown(test_commit_and_read, setup, teardown),
      cmocka_unit_test_setup_teardown(test_commit_batches, setup, teardown),
      cmocka_unit_test_setup_teardown(test_series, setup, teardown),
      cmocka_unit_test_setup_teardown(test_export, setup, teardown),
      cmocka_unit_test_setup_teardown(test_export_empty, setup, teardown),
  };
  return ts_run_named(g_rados ? "dframe_rados" : "dframe_local", tests, NULL,
                      NULL);
}

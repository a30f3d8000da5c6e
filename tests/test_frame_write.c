/* Frame writer: every operation checked against a model of the expected
 * chunk contents, reopening, metadata, and crash safety (writes cut at
 * every byte of a commit; a child killed while appending). */
#define _GNU_SOURCE   /* O_DIRECT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "b2s_frame.h"
#include "b2s_frame_writer.h"
#include "frame_dio.h"
#include "frame_helper.h"
#include "frame_io.h"
#include "ts.h"

/* ---- helpers ------------------------------------------------------------------ */

typedef struct model {
  uint8_t **data;
  int32_t *len;
  int64_t n, cap;
} model;

static void model_insert(model *m, int64_t pos, const uint8_t *d, int32_t len) {
  if (m->n == m->cap) {
    m->cap = m->cap ? 2 * m->cap : 64;
    m->data = realloc(m->data, (size_t)m->cap * sizeof *m->data);
    m->len = realloc(m->len, (size_t)m->cap * sizeof *m->len);
  }
  memmove(m->data + pos + 1, m->data + pos, (size_t)(m->n - pos) * sizeof *m->data);
  memmove(m->len + pos + 1, m->len + pos, (size_t)(m->n - pos) * sizeof *m->len);
  m->data[pos] = malloc((size_t)len);
  memcpy(m->data[pos], d, (size_t)len);
  m->len[pos] = len;
  m->n++;
}

static void model_delete(model *m, int64_t pos) {
  free(m->data[pos]);
  memmove(m->data + pos, m->data + pos + 1, (size_t)(m->n - pos - 1) * sizeof *m->data);
  memmove(m->len + pos, m->len + pos + 1, (size_t)(m->n - pos - 1) * sizeof *m->len);
  m->n--;
}

static void model_free(model *m) {
  for (int64_t i = 0; i < m->n; i++)
    free(m->data[i]);
  free(m->data);
  free(m->len);
  *m = (model){0};
}

/* Deterministic, compressible content for chunk `seed`. */
static void fill(uint8_t *p, int32_t len, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (int32_t i = 0; i < len; i++) {
    if (i % 16 == 0)
      x = x * 1103515245u + 12345u;
    p[i] = (uint8_t)((x >> 16) % 7 + (uint32_t)i / 64);
  }
}

static int32_t compress_buf(const uint8_t *src, int32_t len, uint8_t *dst) {
  b2s_ctx *ctx = b2s_ctx_new();
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  int rc = b2s_compress(ctx, &cp, src, len, dst, len + B2S_MAX_OVERHEAD);
  b2s_ctx_free(ctx);
  assert_true(rc > 0);
  return rc;
}

/* Open path with the reader and compare every chunk with the model. */
static void check_frame(const char *path, const model *m) {
  b2s_frame *f;
  b2s_frame_error err;
  int rc = b2s_frame_open(path, &f, &err);
  if (rc < 0)
    fail_msg("open %s: %s at %lld: %s", path, b2s_strerror(rc),
             (long long)err.offset, err.reason ? err.reason : "");
  assert_int_equal(b2s_frame_nchunks(f), m->n);
  int64_t total = 0;
  for (int64_t i = 0; i < m->n; i++) {
    uint8_t *buf = malloc((size_t)m->len[i] + 64);
    rc = b2s_frame_chunk_decompress(f, i, NULL, buf, (size_t)m->len[i] + 64);
    if (rc != m->len[i])
      fail_msg("%s chunk %lld: got %d want %d (%s)", path, (long long)i, rc,
               m->len[i], rc < 0 ? b2s_strerror(rc) : "");
    assert_memory_equal(buf, m->data[i], (size_t)m->len[i]);
    free(buf);
    total += m->len[i];
  }
  assert_int_equal(b2s_frame_header_get(f)->nbytes, total);
  b2s_frame_free(f);
}

static char tmpdir[256];
/* Direct I/O needs a disk file system (tmpfs has none worth testing): a
 * directory next to the test's working directory, which is the build tree. */
static char diodir[256];

static int setup(void **state) {
  (void)state;
  /* tmpfs when there is one: the crash tests fsync thousands of times */
  struct stat sb;
  const char *root = stat("/dev/shm", &sb) == 0 && access("/dev/shm", W_OK) == 0
                         ? "/dev/shm" : "/tmp";
  snprintf(tmpdir, sizeof tmpdir, "%s/b2s-fw-XXXXXX", root);
  assert_non_null(mkdtemp(tmpdir));
  snprintf(diodir, sizeof diodir, "b2s-fw-dio-XXXXXX");
  assert_non_null(mkdtemp(diodir));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  int rc = ts_rmtree(tmpdir);
  return ts_rmtree(diodir) == 0 ? rc : -1;
}

static void pathf(char *out, const char *name) {
  snprintf(out, 512, "%s/%s", tmpdir, name);
}

/* In-process file operations: the crash tests copy a frame thousands of
 * times. */
static void rmrf(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) < 0)
    return;
  if (S_ISDIR(sb.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *de;
    char p[1024];
    while (d && (de = readdir(d)) != NULL) {
      if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        unlink(p);
      }
    }
    if (d)
      closedir(d);
    assert_int_equal(rmdir(path), 0);
  } else {
    assert_int_equal(unlink(path), 0);
  }
}

static void copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(in >= 0 && out >= 0);
  char buf[65536];
  ssize_t k;
  while ((k = read(in, buf, sizeof buf)) > 0)
    assert_int_equal(write(out, buf, (size_t)k), k);
  close(in);
  close(out);
}

static void copy_path(const char *from, const char *to) {
  rmrf(to);
  struct stat sb;
  assert_int_equal(stat(from, &sb), 0);
  if (!S_ISDIR(sb.st_mode)) {
    copy_file(from, to);
    return;
  }
  assert_int_equal(mkdir(to, 0755), 0);
  DIR *d = opendir(from);
  struct dirent *de;
  char a[1024], b[1024];
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    snprintf(a, sizeof a, "%s/%s", from, de->d_name);
    snprintf(b, sizeof b, "%s/%s", to, de->d_name);
    copy_file(a, b);
  }
  closedir(d);
}

/* Append `count` chunks of seeds from..; commit every `group`. */
static void append_some(b2s_fwriter *w, model *m, int count, uint32_t seed,
                        int32_t fixed_len, int group) {
  uint8_t src[8192], chunk[8192 + 64];
  for (int i = 0; i < count; i++) {
    int32_t len = fixed_len ? fixed_len : 200 + (int32_t)((seed + i) * 37 % 3000);
    fill(src, len, seed + (uint32_t)i);
    int32_t cb = compress_buf(src, len, chunk);
    assert_int_equal(b2s_fwriter_append(w, chunk, (size_t)cb), m->n + 1);
    model_insert(m, m->n, src, len);
    if (group > 0 && (i + 1) % group == 0)
      assert_int_equal(b2s_fwriter_commit(w), 0);
  }
}

/* ---- operations ------------------------------------------------------------------ */

static void ops_for(bool sparse, bool direct) {
  char path[512];
  if (direct)
    snprintf(path, sizeof path, "%s/ops.b2frame", diodir);
  else
    pathf(path, sparse ? "ops.b2frame.d" : "ops.b2frame");
  rmrf(path);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.reserve_min = 4096;   /* small: exercise slot moves */
  o.direct_io = direct;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, sparse, &o, NULL, &w), 0);
  if (direct && !b2s_fwriter_direct_io(w))
    fail_msg("%s takes no O_DIRECT: run the tests on a disk file system", path);
  assert_int_equal(b2s_fwriter_create(path, sparse, &o, NULL, &(b2s_fwriter *){0}), -EEXIST);
  model m = {0};
  check_frame(path, &m);
  append_some(w, &m, 300, 1, 0, 7);
  assert_int_equal(b2s_fwriter_commit(w), 0);
  if (sparse)                   /* no data region: each chunk is a file */
    assert_int_equal(b2s_fwriter_data_end(w), 0);
  check_frame(path, &m);

  uint8_t src[4096], chunk[4200];
  fill(src, 1234, 999);
  int32_t cb = compress_buf(src, 1234, chunk);
  assert_int_equal(b2s_fwriter_insert(w, 5, chunk, (size_t)cb), 0);
  model_insert(&m, 5, src, 1234);
  assert_int_equal(b2s_fwriter_insert(w, 0, chunk, (size_t)cb), 0);
  model_insert(&m, 0, src, 1234);
  fill(src, 777, 4242);
  cb = compress_buf(src, 777, chunk);
  assert_int_equal(b2s_fwriter_update(w, 100, chunk, (size_t)cb), 0);
  free(m.data[100]);
  m.data[100] = malloc(777);
  memcpy(m.data[100], src, 777);
  m.len[100] = 777;
  assert_int_equal(b2s_fwriter_delete(w, 7), 0);
  model_delete(&m, 7);
  assert_int_equal(b2s_fwriter_delete(w, m.n - 1), 0);
  model_delete(&m, m.n - 1);
  assert_int_equal(b2s_fwriter_delete(w, m.n), B2S_E_NCHUNK);
  /* reverse the order */
  int64_t *order = malloc((size_t)m.n * sizeof *order);
  model r = {0};
  for (int64_t i = 0; i < m.n; i++) {
    order[i] = m.n - 1 - i;
    model_insert(&r, i, m.data[m.n - 1 - i], m.len[m.n - 1 - i]);
  }
  assert_int_equal(b2s_fwriter_reorder(w, order, m.n), 0);
  order[0] = order[1];
  assert_int_equal(b2s_fwriter_reorder(w, order, m.n), B2S_E_ARG);
  free(order);
  model_free(&m);
  m = r;
  /* not visible before the commit */
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), 300);
  b2s_frame_free(f);
  assert_int_equal(b2s_fwriter_commit(w), 0);
  check_frame(path, &m);
  assert_int_equal(b2s_fwriter_close(w), 0);
  check_frame(path, &m);

  /* reopen and keep going */
  assert_int_equal(b2s_fwriter_open(path, &o, &w, NULL), 0);
  assert_int_equal(b2s_fwriter_direct_io(w), direct);
  assert_int_equal(b2s_fwriter_stage_bytes(w), direct ? 8u << 20 : 0);
  assert_int_equal(b2s_fwriter_nchunks(w), m.n);
  append_some(w, &m, 50, 5000, 0, 0);
  b2s_fwriter_stats st;
  assert_int_equal(b2s_fwriter_stats_get(w, &st), 0);
  assert_true(st.hole_bytes >= 0);
  assert_int_equal(b2s_fwriter_close(w), 0);
  check_frame(path, &m);
  model_free(&m);
}

static void test_ops_contiguous(void **state) {
  (void)state;
  ops_for(false, false);
}

static void test_ops_sparse(void **state) {
  (void)state;
  ops_for(true, false);
}

static void test_ops_direct(void **state) {
  (void)state;
  ops_for(false, true);
}

/* Direct I/O with chunks larger than its stage and of odd sizes: every
 * commit is visible to a reader at once (the staged tail went out with
 * it), appends after a reopen continue the partly written block, and the
 * closed frame holds every byte. */
static void test_direct_large(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/large.b2frame", diodir);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.direct_io = true;
  o.compact_on_close = false;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  assert_true(b2s_fwriter_direct_io(w));
  enum { MAXLEN = 5 << 20 };
  uint8_t *src = malloc(MAXLEN), *chunk = malloc(MAXLEN + B2S_MAX_OVERHEAD);
  model m = {0};
  static const int32_t lens[] = {3 << 20, 4097, 5 << 20, 1, 4095, 1 << 20,
                                 (4 << 20) - 33, 12345, 2 << 20, 777};
  for (int round = 0; round < 2; round++) {
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
      uint32_t seed = (uint32_t)(round * 100 + (int)i);
      fill(src, lens[i], seed);
      b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
      cp.clevel = (int)(i % 2);   /* stored chunks are as long as the data */
      b2s_ctx *ctx = b2s_ctx_new();
      int cb = b2s_compress(ctx, &cp, src, lens[i], chunk,
                            (size_t)lens[i] + B2S_MAX_OVERHEAD);
      b2s_ctx_free(ctx);
      assert_true(cb > 0);
      assert_int_equal(b2s_fwriter_append(w, chunk, (size_t)cb), m.n + 1);
      model_insert(&m, m.n, src, lens[i]);
      if (i % 3 == 2) {
        assert_int_equal(b2s_fwriter_commit(w), 0);
        check_frame(path, &m);
      }
    }
    assert_int_equal(b2s_fwriter_close(w), 0);
    check_frame(path, &m);
    assert_int_equal(b2s_fwriter_open(path, &o, &w, NULL), 0);
    assert_true(b2s_fwriter_direct_io(w));
  }
  assert_int_equal(b2s_fwriter_close(w), 0);
  check_frame(path, &m);
  model_free(&m);
  free(src);
  free(chunk);
}

/* ---- drop-behind ---------------------------------------------------------- */

/* Threads of this process named name. */
static int threads_named(const char *name) {
  DIR *d = opendir("/proc/self/task");
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    char path[300], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = e->d_name[0] == '.' ? NULL : fopen(path, "r");
    if (f == NULL)
      continue;
    if (fgets(comm, sizeof comm, f) != NULL)
      comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
    n += strcmp(comm, name) == 0;
  }
  closedir(d);
  return n;
}

/* Pages of path's bytes [from, from + len) in the page cache. */
static int64_t resident_pages(const char *path, int64_t from, int64_t len) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  void *p = mmap(NULL, (size_t)(from + len), PROT_READ, MAP_SHARED, fd, 0);
  assert_true(p != MAP_FAILED);
  long page = sysconf(_SC_PAGESIZE);
  size_t npages = (size_t)(len / page);
  unsigned char *vec = malloc(npages);
  assert_int_equal(mincore((uint8_t *)p + from, (size_t)len, vec), 0);
  int64_t n = 0;
  for (size_t i = 0; i < npages; i++)
    n += vec[i] & 1;
  free(vec);
  munmap(p, (size_t)(from + len));
  close(fd);
  return n;
}

/* Append nchunks stored chunks of 4 MiB, committing each; the helper
 * thread runs by the time the data is 73 MiB long only with drop-behind. */
static void append_large(b2s_fwriter *w, int nchunks, bool pacing) {
  enum { LEN = 4 << 20 };
  uint8_t *src = malloc(LEN), *chunk = malloc(LEN + B2S_MAX_OVERHEAD);
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.clevel = 0;
  b2s_ctx *ctx = b2s_ctx_new();
  for (int i = 0; i < nchunks; i++) {
    fill(src, LEN, (uint32_t)i);
    int cb = b2s_compress(ctx, &cp, src, LEN, chunk, LEN + B2S_MAX_OVERHEAD);
    assert_true(cb > LEN);
    assert_int_equal(b2s_fwriter_append(w, chunk, (size_t)cb), i + 1);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    if (b2s_fwriter_data_end(w) < (INT64_C(73) << 20))
      assert_int_equal(threads_named("b2s-fwriter"), 0);
  }
  assert_int_equal(threads_named("b2s-fwriter"), pacing ? 1 : 0);
  b2s_ctx_free(ctx);
  free(src);
  free(chunk);
}

static void check_large(const char *path, int nchunks) {
  enum { LEN = 4 << 20 };
  uint8_t *want = malloc(LEN), *got = malloc(LEN);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  assert_int_equal(b2s_frame_nchunks(f), nchunks);
  for (int i = 0; i < nchunks; i++) {
    fill(want, LEN, (uint32_t)i);
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, got, LEN), LEN);
    assert_memory_equal(got, want, LEN);
  }
  b2s_frame_free(f);
  free(want);
  free(got);
}

/* A buffered contiguous frame with drop-behind: the writer's helper thread
 * starts once the data outgrows the window, hands old data to writeback
 * and drops it from the page cache while the writer goes on, and is joined
 * on close; the frame holds every byte.  Without the option (or with
 * direct I/O, tested above) there is no such thread. */
static void test_drop_behind(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/behind.b2frame", diodir);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.drop_behind = true;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  assert_false(b2s_fwriter_direct_io(w));
  enum { N = 40 };   /* 160 MiB: past the 128 MiB drop distance */
  append_large(w, N, true);
  /* the first 8 MiB past the header's megabyte leave the cache; the
   * helper works on its own time, so give it a while */
  int64_t left = -1;
  for (int t = 0; t < 200 && left != 0; t++) {
    left = resident_pages(path, INT64_C(1) << 20, INT64_C(8) << 20);
    if (left != 0)
      nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
  }
  assert_int_equal(left, 0);
  assert_int_equal(b2s_fwriter_close(w), 0);
  assert_int_equal(threads_named("b2s-fwriter"), 0);
  check_large(path, N);
  assert_int_equal(unlink(path), 0);

  /* free without close joins it too */
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  append_large(w, 20, true);
  b2s_fwriter_free(w);
  assert_int_equal(threads_named("b2s-fwriter"), 0);
  check_large(path, 20);
  assert_int_equal(unlink(path), 0);

  o.drop_behind = false;
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  append_large(w, 20, false);
  assert_int_equal(b2s_fwriter_close(w), 0);
  check_large(path, 20);
  assert_int_equal(unlink(path), 0);
}

/* A direct write that fails in the helper thread (here: past the file size
 * limit, EFBIG) fails a later append, and no commit goes through until the
 * write succeeds; once it can, the next commit writes the pending stage and
 * every chunk appended without error is in the frame, byte for byte. */
static void test_direct_retry(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/retry.b2frame", diodir);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.direct_io = true;
  o.reserve_min = 64 << 20;   /* no slot moves while the limit is low */
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  assert_true(b2s_fwriter_direct_io(w));
  enum { LEN = 1 << 20 };
  uint8_t *src = malloc(LEN), *chunk = malloc(LEN + B2S_MAX_OVERHEAD);
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.clevel = 0;
  b2s_ctx *ctx = b2s_ctx_new();
  model m = {0};
  struct rlimit old, low;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
  int rc = 0;
  for (uint32_t i = 0; i < 16 && rc >= 0; i++) {
    fill(src, LEN, 700 + i);
    int cb = b2s_compress(ctx, &cp, src, LEN, chunk, LEN + B2S_MAX_OVERHEAD);
    assert_true(cb > 0);
    rc = (int)b2s_fwriter_append(w, chunk, (size_t)cb);
    if (rc >= 0)
      model_insert(&m, m.n, src, LEN);
    if (i == 0) {
      assert_int_equal(b2s_fwriter_commit(w), 0);
      low = old;
      low.rlim_cur = 6 << 20;   /* the second stage crosses it */
      assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
    }
  }
  assert_int_equal(rc, -EFBIG);
  assert_int_equal(b2s_fwriter_commit(w), -EFBIG);   /* still pending */
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, old_xfsz);
  assert_true(m.n >= 8);
  assert_int_equal(b2s_fwriter_commit(w), 0);
  check_frame(path, &m);
  assert_int_equal(b2s_fwriter_close(w), 0);
  check_frame(path, &m);
  b2s_ctx_free(ctx);
  model_free(&m);
  free(src);
  free(chunk);
}

/* ---- the writer's parts on their own --------------------------------------- */

/* The whole of path's file. */
static uint8_t *file_bytes(const char *path, int64_t *len) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  struct stat sb;
  assert_int_equal(fstat(fd, &sb), 0);
  uint8_t *p = malloc((size_t)sb.st_size + 1);
  assert_int_equal(pread(fd, p, (size_t)sb.st_size, 0), sb.st_size);
  close(fd);
  *len = (int64_t)sb.st_size;
  return p;
}

static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* The write count and its cut: a write that crosses the limit lands up to
 * it and no further, later writes land nothing, large writes land whole;
 * a cut direct write lands through the buffered descriptor. */
static void test_fio_cut(void **state) {
  (void)state;
  char path[512];
  pathf(path, "fio.bin");
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0666);
  assert_true(fd >= 0);
  enum { BIG = 3 * 65536 + 123 };   /* more than one FW_WRITE_PIECE */
  uint8_t *src = malloc(BIG);
  fill(src, BIG, 1);
  b2s_fio io;
  b2s_fio_init(&io);
  assert_false(b2s_fio_limited(&io));
  assert_int_equal(b2s_fio_write(&io, fd, src, 1000, 0), 0);
  assert_int_equal(b2s_fio_written(&io), 1000);
  b2s_fio_set_limit(&io, 300);
  assert_true(b2s_fio_limited(&io));
  assert_int_equal(b2s_fio_write(&io, fd, src + 1000, 200, 1000), 0);
  assert_int_equal(b2s_fio_write(&io, fd, src + 1200, 500, 1200),
                   B2S_E_IO_LIMIT);
  assert_int_equal(b2s_fio_written(&io), 1300);
  assert_int_equal(b2s_fio_write(&io, fd, src + 1300, 10, 1300),
                   B2S_E_IO_LIMIT);
  int64_t len;
  uint8_t *got = file_bytes(path, &len);
  assert_int_equal(len, 1300);   /* up to the limit, not a byte more */
  assert_memory_equal(got, src, 1300);
  free(got);
  b2s_fio_set_limit(&io, -1);
  assert_int_equal(b2s_fio_write(&io, fd, src, BIG, 0), 0);
  assert_int_equal(b2s_fio_written(&io), 1300 + BIG);
  got = file_bytes(path, &len);
  assert_int_equal(len, BIG);
  assert_memory_equal(got, src, BIG);
  free(got);
  uint8_t back[100];
  assert_int_equal(b2s_fio_pread(fd, back, sizeof back, BIG - 50),
                   B2S_E_TRUNCATED);
  close(fd);

  snprintf(path, sizeof path, "%s/fio-direct.bin", diodir);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0666);
  int dfd = open(path, O_WRONLY | O_DIRECT);
  assert_true(fd >= 0 && dfd >= 0);
  uint8_t *al = NULL;
  assert_int_equal(posix_memalign((void **)&al, 4096, 8192), 0);
  memcpy(al, src, 8192);
  b2s_fio_init(&io);
  assert_int_equal(b2s_fio_write_direct(&io, dfd, fd, al, 4096, 0), 0);
  b2s_fio_set_limit(&io, 1001);   /* mid-block: not a direct write */
  assert_int_equal(b2s_fio_write_direct(&io, dfd, fd, al + 4096, 4096, 4096),
                   B2S_E_IO_LIMIT);
  assert_int_equal(b2s_fio_written(&io), 4096 + 1001);
  got = file_bytes(path, &len);
  assert_int_equal(len, 4096 + 1001);
  assert_memory_equal(got, src, 4096 + 1001);
  free(got);
  free(al);
  close(dfd);
  close(fd);
  free(src);
}

/* The helper on its own: a write handed over lands and its result comes
 * back (an error too); drop-behind starts the thread only once a step is
 * due; free joins the thread. */
static void test_helper_jobs(void **state) {
  (void)state;
  char path[512];
  pathf(path, "helper.bin");
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0666);
  int ro = open(path, O_RDONLY);
  assert_true(fd >= 0 && ro >= 0);
  enum { LEN = 300000 };
  uint8_t *src = malloc(LEN);
  fill(src, LEN, 9);
  b2s_fwhelper *h = b2s_fwhelper_new();
  assert_non_null(h);
  assert_int_equal(b2s_fwhelper_wait(h), 0);   /* nothing handed over */
  assert_int_equal(threads_named("b2s-fwriter"), 0);
  assert_int_equal(b2s_fwhelper_start(h), 0);
  assert_int_equal(b2s_fwhelper_start(h), 0);
  assert_int_equal(threads_named("b2s-fwriter"), 1);
  b2s_fwhelper_write(h, fd, src, LEN, 5);
  assert_int_equal(b2s_fwhelper_wait(h), 0);
  int64_t len;
  uint8_t *got = file_bytes(path, &len);
  assert_int_equal(len, LEN + 5);
  assert_memory_equal(got + 5, src, LEN);
  free(got);
  b2s_fwhelper_write(h, ro, src, LEN, 0);
  assert_int_equal(b2s_fwhelper_wait(h), -EBADF);
  assert_int_equal(b2s_fwhelper_wait(h), 0);   /* reported once */
  b2s_fwhelper_free(h);
  assert_int_equal(threads_named("b2s-fwriter"), 0);

  h = b2s_fwhelper_new();
  assert_non_null(h);
  b2s_fwhelper_pace(h, fd);
  b2s_fwhelper_pace_to(h, INT64_C(64) << 20);   /* inside the window */
  assert_int_equal(threads_named("b2s-fwriter"), 0);
  b2s_fwhelper_pace_to(h, INT64_C(100) << 20);
  assert_int_equal(threads_named("b2s-fwriter"), 1);
  b2s_fwhelper_free(h);
  assert_int_equal(threads_named("b2s-fwriter"), 0);
  b2s_fwhelper_pace_to(NULL, 0);
  b2s_fwhelper_free(NULL);
  close(ro);
  close(fd);
  free(src);
}

/* Append n bytes of ref at *end through the stage. */
static void dio_append(b2s_dio *d, const uint8_t *ref, int64_t *end, size_t n,
                       int64_t floor, int64_t *file_end) {
  assert_int_equal(b2s_dio_write(d, ref + *end, n, *end, floor, file_end), 0);
  *end += (int64_t)n;
}

/* The direct-I/O stage on its own: bytes appended from an unaligned floor
 * (full stages through the helper) are in the file after a flush, with
 * zeros up to the alignment; the file end and the write count say exactly
 * what was written, the block the data ends in being written again by the
 * next flush; after forget, a write inside the data keeps the bytes of its
 * block before it (read back from the file). */
static void test_dio_stage(void **state) {
  (void)state;
  char path[512], other[512];
  snprintf(path, sizeof path, "%s/stage.bin", diodir);
  snprintf(other, sizeof other, "%s/other.bin", diodir);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0666);
  int ofd = open(other, O_RDWR | O_CREAT | O_TRUNC, 0666);
  assert_true(fd >= 0 && ofd >= 0);
  b2s_fio io;
  b2s_fio_init(&io);
  assert_null(b2s_dio_open(path, ofd, &io));   /* not the same file */
  assert_int_equal(b2s_dio_slack(NULL), 0);
  assert_int_equal(b2s_dio_stage_bytes(NULL), 0);
  assert_int_equal(b2s_dio_flush(NULL, NULL), 0);
  b2s_dio_free(NULL);
  b2s_dio *d = b2s_dio_open(path, fd, &io);
  assert_non_null(d);
  int64_t a = b2s_dio_slack(d);
  assert_true(a >= 4096 && (a & (a - 1)) == 0);
  assert_int_equal(b2s_dio_stage_bytes(d), 2 * B2S_FWRITER_STAGE);

  enum { TOTAL = 11 << 20 };   /* past two stages */
  uint8_t *ref = malloc(TOTAL);
  fill(ref, TOTAL, 5);
  const int64_t floor = 1000;
  memset(ref, 0, floor);
  int64_t end = floor, file_end = floor;
  static const size_t sizes[] = {17, 4096, 100000, 1 << 20, 3, 65536 + 7};
  for (int i = 0; end < 9 << 20; i++)
    dio_append(d, ref, &end, sizes[i % 6], floor, &file_end);
  assert_int_equal(threads_named("b2s-fwriter"), 1);   /* stages went out */
  assert_int_equal(b2s_dio_flush(d, &file_end), 0);
  assert_int_equal(file_end, round_up(end, a));
  assert_int_equal(b2s_fio_written(&io), round_up(end, a) - floor);
  int64_t len;
  uint8_t *got = file_bytes(path, &len);
  assert_int_equal(len, round_up(end, a));
  assert_memory_equal(got + floor, ref + floor, (size_t)(end - floor));
  for (int64_t i = end; i < len; i++)
    assert_int_equal(got[i], 0);
  free(got);

  int64_t before = b2s_fio_written(&io), end1 = end;
  dio_append(d, ref, &end, 5000, floor, &file_end);
  assert_int_equal(b2s_dio_flush(d, &file_end), 0);
  assert_int_equal(b2s_fio_written(&io) - before,
                   round_up(end, a) - end1 / a * a);
  got = file_bytes(path, &len);
  assert_memory_equal(got + floor, ref + floor, (size_t)(end - floor));
  free(got);

  /* the data end moved back (as a compaction does) */
  b2s_dio_forget(d);
  int64_t at = (int64_t)(3 << 20) + 123;
  fill(ref + at, 7000, 77);
  end = at;
  dio_append(d, ref, &end, 7000, floor, &file_end);
  assert_int_equal(b2s_dio_flush(d, &file_end), 0);
  got = file_bytes(path, &len);
  assert_memory_equal(got + floor, ref + floor, (size_t)(end - floor));
  free(got);
  b2s_dio_free(d);
  assert_int_equal(threads_named("b2s-fwriter"), 0);
  close(fd);
  close(ofd);
  free(ref);
}

/* Readers opening a frame while its writer commits as fast as it can (a
 * child process appending a chunk per commit): every open succeeds, the
 * chunk count never goes back, and the newest chunk holds its bytes.
 * Index slots alternate, so two commits during one open rewrite the slot
 * being read; the open must notice and read again. */
static void test_open_while_committing(void **state) {
  (void)state;
  for (int sparse = 0; sparse < 2; sparse++) {
    char path[512];
    pathf(path, sparse ? "live.d" : "live.b2frame");
    rmrf(path);
    b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
    b2s_fwriter *w;
    assert_int_equal(b2s_fwriter_create(path, sparse, &o, NULL, &w), 0);
    model m = {0};
    append_some(w, &m, 1, 900, 256, 0);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      uint8_t src[256], chunk[256 + B2S_MAX_OVERHEAD];
      b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
      b2s_ctx *ctx = b2s_ctx_new();
      for (uint32_t i = 1; i < 4000; i++) {
        fill(src, sizeof src, 900 + i);
        int cb = b2s_compress(ctx, &cp, src, sizeof src, chunk, sizeof chunk);
        if (cb < 0 || b2s_fwriter_append(w, chunk, (size_t)cb) < 0 ||
            b2s_fwriter_commit(w) < 0)
          _exit(1);
        if (i % 4 == 0)
          usleep(50);   /* a commit every 10-20 us: faster than any group */
      }
      _exit(0);
    }
    int64_t last = 0;
    int opens = 0, status = 0;
    uint8_t want[256], got[256];
    while (waitpid(pid, &status, WNOHANG) == 0) {
      b2s_frame *f;
      b2s_frame_error err;
      int rc = b2s_frame_open(path, &f, &err);
      if (rc < 0)
        fail_msg("open %d: %s (%s)", opens, b2s_strerror(rc), err.reason);
      int64_t n = b2s_frame_nchunks(f);
      assert_true(n >= last);
      fill(want, sizeof want, 900 + (uint32_t)(n - 1));
      assert_int_equal(b2s_frame_chunk_decompress(f, n - 1, NULL, got,
                                                  sizeof got), sizeof got);
      assert_memory_equal(got, want, sizeof want);
      b2s_frame_free(f);
      last = n;
      opens++;
    }
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(opens > 10);
    b2s_fwriter_free(w);
    model_free(&m);
  }
}

/* Specials: entries while the chunksize is fixed, real chunks once it
 * varies; files for sparse frames only for stored chunks. */
static void test_specials(void **state) {
  (void)state;
  for (int sparse = 0; sparse < 2; sparse++) {
    char path[512];
    pathf(path, sparse ? "spec.d" : "spec.b2frame");
    rmrf(path);
    b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
    o.cparams.typesize = 4;
    b2s_fwriter *w;
    assert_int_equal(b2s_fwriter_create(path, sparse, &o, NULL, &w), 0);
    model m = {0};
    append_some(w, &m, 3, 7, 4096, 0);
    uint8_t z[64], zeros[4096] = {0};
    int zc = b2s_chunk_zeros(&o.cparams, 4096, z, sizeof z);
    assert_true(zc > 0);
    assert_int_equal(b2s_fwriter_append(w, z, (size_t)zc), 4);
    model_insert(&m, 3, zeros, 4096);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    b2s_frame *f;
    assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
    assert_int_equal(b2s_frame_index(f)[3], B2S_FRAME_ENTRY_ZERO);
    assert_int_equal(b2s_frame_header_get(f)->chunksize, 4096);
    b2s_frame_free(f);
    check_frame(path, &m);
    /* a longer chunk makes the size variable: the zero entry is stored */
    append_some(w, &m, 1, 8, 5000, 0);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
    assert_true(b2s_frame_index(f)[3] >= 0);
    assert_int_equal(b2s_frame_header_get(f)->chunksize, 0);
    assert_int_equal(b2s_frame_header_get(f)->general_flags & 0x4f, 0x43);
    b2s_frame_free(f);
    check_frame(path, &m);
    assert_int_equal(b2s_fwriter_close(w), 0);
    model_free(&m);
  }
}

static void test_metadata(void **state) {
  (void)state;
  char path[512];
  pathf(path, "meta.b2frame");
  rmrf(path);
  b2s_frame_metas metas;
  b2s_frame_metas_init(&metas);
  b2s_b2nd nd = {.version = 0, .ndim = 3, .shape = {10, 64, 32},
                 .chunkshape = {1, 64, 32}, .blockshape = {1, 16, 32},
                 .has_dtype = true, .dtype = "<u2", .dtype_len = 3};
  assert_int_equal(b2s_frame_metas_add_b2nd(&metas, &nd), 0);
  assert_true(b2s_frame_metas_add(&metas, "mine", "abcd", 4) >= 0);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, &metas, &w), 0);
  b2s_frame_metas_fini(&metas);
  assert_int_equal(b2s_fwriter_vlmeta_set(w, "attrs", "{\"gain\": 2}", 11), 0);
  assert_int_equal(b2s_fwriter_vlmeta_set(w, "note", "x", 1), 0);
  assert_int_equal(b2s_fwriter_commit(w), 0);
  model m = {0};
  append_some(w, &m, 10, 3, 4096, 0);
  assert_int_equal(b2s_fwriter_vlmeta_set(w, "note", "longer note", 11), 0);
  assert_int_equal(b2s_fwriter_vlmeta_delete(w, "attrs"), 0);
  assert_int_equal(b2s_fwriter_vlmeta_delete(w, "attrs"), B2S_E_NOTFOUND);
  assert_int_equal(b2s_fwriter_meta_update(w, "mine", "wxyz", 4), 0);
  assert_int_equal(b2s_fwriter_meta_update(w, "mine", "toolong", 7), B2S_E_ARG);
  assert_int_equal(b2s_fwriter_close(w), 0);
  check_frame(path, &m);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  b2s_b2nd got;
  assert_int_equal(b2s_frame_b2nd_get(f, &got), 0);
  assert_int_equal(got.ndim, 3);
  assert_int_equal(got.shape[1], 64);
  assert_int_equal(got.blockshape[1], 16);
  assert_memory_equal(got.dtype, "<u2", 3);
  const uint8_t *c;
  int32_t len;
  assert_int_equal(b2s_frame_meta_get(f, "mine", &c, &len), 0);
  assert_memory_equal(c, "wxyz", 4);
  uint8_t *v;
  assert_int_equal(b2s_frame_vlmeta_get(f, "note", NULL, &v, &len), 0);
  assert_int_equal(len, 11);
  assert_memory_equal(v, "longer note", 11);
  free(v);
  assert_int_equal(b2s_frame_vlmeta_get(f, "attrs", NULL, &v, &len), B2S_E_NOTFOUND);
  b2s_frame_free(f);
  model_free(&m);
}

/* A frame written elsewhere (a vector) is rewritten once into our layout
 * and then appended to. */
static void test_adopt_vector(void **state) {
  (void)state;
  const char *vec = getenv("B2S_VECTORS");
  if (vec == NULL)
    skip();
  const char *names[] = {"frames/cframe_lz4_16chunks_short_last.b2frame",
                         "sframes/sframe_blosclz_8chunks.b2frame"};
  for (int k = 0; k < 2; k++) {
    char src[600], path[512];
    snprintf(src, sizeof src, "%s/%s", vec, names[k]);
    pathf(path, k ? "adopt.d" : "adopt.b2frame");
    copy_path(src, path);
    b2s_frame *f;
    assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
    model m = {0};
    for (int64_t i = 0; i < b2s_frame_nchunks(f); i++) {
      int32_t nb;
      assert_int_equal(b2s_frame_chunk_sizes(f, i, NULL, &nb), 0);
      uint8_t *buf = malloc((size_t)nb);
      assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, buf, (size_t)nb), nb);
      model_insert(&m, i, buf, nb);
      free(buf);
    }
    b2s_frame_free(f);
    b2s_fwriter *w;
    assert_int_equal(b2s_fwriter_open(path, NULL, &w, NULL), 0);
    append_some(w, &m, 5, 77, 0, 0);
    assert_int_equal(b2s_fwriter_close(w), 0);
    check_frame(path, &m);
    model_free(&m);
  }
}

/* ---- sparse frames closed for c-blosc2 ----------------------------------------------- */

static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* header_len of dir's chunks.b2frame as stored. */
static int64_t index_header_len(const char *dir) {
  char p[600];
  size_t len;
  snprintf(p, sizeof p, "%s/chunks.b2frame", dir);
  uint8_t *b = ts_read_file(p, &len);
  assert_true(len >= 87);
  int64_t h = (int64_t)be(b + 11, 4);
  free(b);
  return h;
}

/* dir's chunks.b2frame is laid out as c-blosc2 writes a sparse frame
 * (spec 4, 5): the header exactly `base` bytes (fixed part + metalayers,
 * no padding), the index chunk at header_len holding ids, the trailer
 * right after it, frame_len the file size.  And nothing but chunk files
 * beside it. */
static void check_plain_sparse(const char *dir, int64_t base,
                               const int64_t *ids, int64_t n) {
  char p[600];
  size_t len;
  snprintf(p, sizeof p, "%s/chunks.b2frame", dir);
  uint8_t *b = ts_read_file(p, &len);
  assert_true(len >= 87 + 35);
  assert_memory_equal(b, "\x9e\xa8" "b2frame\0" "\xd2", 12);
  assert_int_equal(be(b + 11, 4), base);               /* header_len */
  assert_int_equal(b[15], 0xcf);
  assert_int_equal(be(b + 16, 8), len);                /* frame_len */
  assert_int_equal(b[26], 1);                          /* sparse */
  int64_t tpos = base;
  if (n > 0) {
    const uint8_t *ic = b + base;
    assert_int_equal(ic[2], 8 * n < 32 ? 0x07 : 0x17); /* memcpy'ed index */
    assert_int_equal(ic[3], 8);                        /* typesize 8 */
    assert_int_equal(le32(ic + 4), 8 * n);
    assert_int_equal(le32(ic + 12), 8 * n + 32);
    for (int64_t i = 0; i < n; i++) {
      uint64_t e = 0;
      for (int k = 7; k >= 0; k--)
        e = e << 8 | ic[32 + 8 * i + k];
      assert_int_equal((int64_t)e, ids[i]);
    }
    tpos += 8 * n + 32;
  }
  assert_int_equal(b[len - 23], 0xce);
  uint64_t tlen = be(b + len - 22, 4);
  assert_int_equal(tpos + (int64_t)tlen, len);         /* trailer follows */
  assert_int_equal(b[tpos], 0x94);
  free(b);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(dir, &f, NULL), 0);
  int64_t io, to, tl;
  int32_t ic;
  assert_int_equal(b2s_frame_layout(f, &io, &ic, &to, &tl), 0);
  assert_int_equal(io, base);
  assert_int_equal(to, tpos);
  b2s_frame_free(f);
  DIR *d = opendir(dir);
  for (struct dirent *de; (de = readdir(d)) != NULL;)
    if (de->d_name[0] != '.' && strcmp(de->d_name, "chunks.b2frame"))
      assert_true(strlen(de->d_name) == 14 &&
                  !strcmp(de->d_name + 8, ".chunk"));
  closedir(d);
}

static void ids_0_to(int64_t *ids, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    ids[i] = i;
}

/* Closing a sparse frame leaves chunks.b2frame without padding; reopening
 * lays it out for commits again, and the next close undoes that. */
static void test_sparse_close_plain(void **state) {
  (void)state;
  static const int counts[] = {0, 2, 300};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    char path[512];
    pathf(path, "plain.d");
    rmrf(path);
    b2s_frame_metas metas;
    b2s_frame_metas_init(&metas);
    assert_true(b2s_frame_metas_add(&metas, "mine", "abcd", 4) >= 0);
    int64_t base = b2s_frame_header_size(&metas);
    assert_true(base > 87);
    b2s_fwriter *w;
    assert_int_equal(b2s_fwriter_create(path, true, NULL, &metas, &w), 0);
    b2s_frame_metas_fini(&metas);
    model m = {0};
    append_some(w, &m, counts[c], 40, 0, 7);
    assert_int_equal(b2s_fwriter_vlmeta_set(w, "note", "closed", 6), 0);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    assert_true(index_header_len(path) >= base + 4096);   /* padded */
    assert_int_equal(b2s_fwriter_close(w), 0);
    int64_t ids[400];
    ids_0_to(ids, m.n);
    check_plain_sparse(path, base, ids, m.n);
    check_frame(path, &m);
    b2s_recover_report rep;
    assert_int_equal(b2s_frame_recover(path, true, &rep, NULL), 0);
    assert_true(rep.was_clean);
    assert_int_equal(rep.nchunks, m.n);

    /* reopen, append, close: round trip */
    assert_int_equal(b2s_fwriter_open(path, NULL, &w, NULL), 0);
    assert_int_equal(b2s_fwriter_nchunks(w), m.n);
    assert_true(index_header_len(path) > base);   /* room for commits */
    append_some(w, &m, 5, 900, 0, 2);
    assert_int_equal(b2s_fwriter_delete(w, 0), 0);
    model_delete(&m, 0);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    check_frame(path, &m);
    assert_int_equal(b2s_fwriter_close(w), 0);
    b2s_frame *f;
    assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
    memcpy(ids, b2s_frame_index(f), (size_t)m.n * sizeof *ids);
    b2s_frame_free(f);
    check_plain_sparse(path, base, ids, m.n);
    check_frame(path, &m);
    model_free(&m);
  }
}

/* c-blosc2's own sparse frames, reopened by us (rewritten with padding)
 * and closed, come back byte for byte: the closed layout is c-blosc2's. */
static void test_sparse_close_vectors(void **state) {
  (void)state;
  const char *vec = getenv("B2S_VECTORS");
  if (vec == NULL)
    skip();
  const char *names[] = {"sframe_blosclz_8chunks",
                         "sframe_lz4_insert_delete_reorder",
                         "sframe_blosclz_vlmeta"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    char src[600], path[512], idx[700];
    snprintf(src, sizeof src, "%s/sframes/%s.b2frame", vec, names[k]);
    pathf(path, "vclose.d");
    copy_path(src, path);
    snprintf(idx, sizeof idx, "%s/chunks.b2frame", src);
    size_t want_len, got_len;
    uint8_t *want = ts_read_file(idx, &want_len);
    int64_t base = (int64_t)be(want + 11, 4);
    b2s_fwriter *w;
    assert_int_equal(b2s_fwriter_open(path, NULL, &w, NULL), 0);
    assert_true(index_header_len(path) > base);
    assert_int_equal(b2s_fwriter_close(w), 0);
    snprintf(idx, sizeof idx, "%s/chunks.b2frame", path);
    uint8_t *got = ts_read_file(idx, &got_len);
    if (got_len != want_len || memcmp(got, want, want_len) != 0)
      fail_msg("%s: closed index differs from c-blosc2's (%zu vs %zu bytes)",
               names[k], got_len, want_len);
    free(want);
    free(got);
  }
}

/* A close cut at every byte it writes leaves a frame that opens with every
 * chunk (the old index or the new one, never a mix), reopens for writing,
 * and no leftover of the index being built. */
static void test_sparse_close_cut(void **state) {
  (void)state;
  char base[512], work[512];
  pathf(base, "cclose-base.d");
  pathf(work, "cclose-work.d");
  rmrf(base);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.compact_on_close = false;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(base, true, &o, NULL, &w), 0);
  model m = {0};
  append_some(w, &m, 12, 70, 0, 5);
  assert_int_equal(b2s_fwriter_vlmeta_set(w, "v", "abc", 3), 0);
  assert_int_equal(b2s_fwriter_close(w), 0);
  o.compact_on_close = true;
  int64_t natural = b2s_frame_header_size(&(b2s_frame_metas){0});
  int rc = -1;
  int64_t limit;
  for (limit = 0; rc != 0; limit++) {
    copy_path(base, work);
    assert_int_equal(b2s_fwriter_open(work, &o, &w, NULL), 0);
    b2s_fwriter_set_write_limit(w, limit);
    rc = b2s_fwriter_close(w);
    assert_true(rc == 0 || rc == B2S_E_IO_LIMIT);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s/chunks.b2frame.b2s-new", work);
    assert_int_equal(access(tmp, F_OK), -1);
    if (rc != 0 && b2s_frame_recover(work, false, NULL, NULL) != 0)
      fail_msg("cut after %lld bytes: not recoverable", (long long)limit);
    check_frame(work, &m);
    assert_true(rc != 0 || index_header_len(work) == natural);
    assert_int_equal(b2s_fwriter_open(work, &o, &w, NULL), 0);
    b2s_fwriter_free(w);
  }
  assert_true(limit > 100);
  model_free(&m);
}

/* ---- crash safety ---------------------------------------------------------------- */

/* Cut the writes of one commit at every byte; after recovery the frame must
 * hold the previous commit's chunks (or, once the cut falls after the
 * header write, the new ones), all decoding to their bytes. */
static void cut_every_byte(bool sparse, int append_count, int32_t fixed) {
  char base[512], work[512];
  pathf(base, sparse ? "cut-base.d" : "cut-base.b2frame");
  pathf(work, sparse ? "cut-work.d" : "cut-work.b2frame");
  rmrf(base);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.reserve_min = 4096;
  o.compact_on_close = false;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(base, sparse, &o, NULL, &w), 0);
  model m = {0};
  append_some(w, &m, 20, 11, fixed, 4);
  assert_int_equal(b2s_fwriter_vlmeta_set(w, "v", "abc", 3), 0);
  assert_int_equal(b2s_fwriter_close(w), 0);
  int64_t committed = m.n;

  /* the full commit: how many bytes does it write? */
  copy_path(base, work);
  assert_int_equal(b2s_fwriter_open(work, &o, &w, NULL), 0);
  b2s_fwriter_stats st0, st1;
  b2s_fwriter_stats_get(w, &st0);
  model full = {0};
  for (int64_t i = 0; i < m.n; i++)
    model_insert(&full, i, m.data[i], m.len[i]);
  append_some(w, &full, append_count, 500, fixed, 0);
  assert_int_equal(b2s_fwriter_commit(w), 0);
  b2s_fwriter_stats_get(w, &st1);
  b2s_fwriter_free(w);
  int64_t total = st1.bytes_written - st0.bytes_written;
  assert_true(total > 0);

  int64_t saw_new = 0, saw_old = 0;
  for (int64_t cut = 0; cut <= total; cut++) {
    copy_path(base, work);
    assert_int_equal(b2s_fwriter_open(work, &o, &w, NULL), 0);
    b2s_fwriter_set_write_limit(w, cut);
    model tmp = {0};
    uint8_t src[8192], chunk[8300];
    int rc = 0;
    for (int i = 0; i < append_count && rc >= 0; i++) {
      int32_t len = fixed ? fixed : 200 + (int32_t)((500 + i) * 37 % 3000);
      fill(src, len, 500 + (uint32_t)i);
      int32_t cb = compress_buf(src, len, chunk);
      rc = (int)b2s_fwriter_append(w, chunk, (size_t)cb);
    }
    if (rc >= 0)
      rc = b2s_fwriter_commit(w);
    b2s_fwriter_free(w);   /* the process "dies" here */
    assert_true(cut == total ? rc == 0 : rc == B2S_E_IO_LIMIT);
    b2s_recover_report rep;
    b2s_frame_error err;
    rc = b2s_frame_recover(work, false, &rep, &err);
    if (rc != 0)
      fail_msg("cut %lld/%lld: recover: %s (%s at %lld)", (long long)cut,
               (long long)total, b2s_strerror(rc), err.reason ? err.reason : "",
               (long long)err.offset);
    b2s_frame *f;
    assert_int_equal(b2s_frame_open(work, &f, NULL), 0);
    int64_t n = b2s_frame_nchunks(f);
    b2s_frame_free(f);
    if (n == committed) {
      saw_old++;
      check_frame(work, &m);
    } else {
      assert_int_equal(n, full.n);
      saw_new++;
      check_frame(work, &full);
    }
    /* and it takes writes again */
    assert_int_equal(b2s_fwriter_open(work, &o, &w, NULL), 0);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    b2s_fwriter_free(w);
    model_free(&tmp);
  }
  assert_true(saw_old > 0);
  assert_true(saw_new > 0);
  print_message("%s: %lld cut points, %lld old, %lld new\n",
                sparse ? "sparse" : "contiguous", (long long)total + 1,
                (long long)saw_old, (long long)saw_new);
  model_free(&m);
  model_free(&full);
}

static void test_cut_contiguous(void **state) {
  (void)state;
  cut_every_byte(false, 3, 0);
}

static void test_cut_contiguous_move(void **state) {
  (void)state;
  /* enough data to outgrow the 4 KiB reserve: the commit moves the slots */
  cut_every_byte(false, 6, 2048);
}

static void test_cut_sparse(void **state) {
  (void)state;
  cut_every_byte(true, 3, 0);
}

/* A child appends and commits in a loop, reporting each commit; it is
 * killed at a random moment.  Every reported chunk must survive. */
static void kill_run(bool sparse, int sync, unsigned seed, bool direct) {
  char path[512];
  if (direct)
    snprintf(path, sizeof path, "%s/kill.b2frame", diodir);
  else
    pathf(path, sparse ? "kill.d" : "kill.b2frame");
  rmrf(path);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
    o.sync = sync;
    o.reserve_min = 8192;
    o.direct_io = direct;
    b2s_fwriter *w;
    if (b2s_fwriter_create(path, sparse, &o, NULL, &w) != 0 ||
        b2s_fwriter_direct_io(w) != direct)
      _exit(2);
    uint8_t src[8192], chunk[8300];
    for (uint32_t i = 0;; i++) {
      int32_t len = 300 + (int32_t)(i * 37 % 3000);
      fill(src, len, i);
      int32_t cb = compress_buf(src, len, chunk);
      if (b2s_fwriter_append(w, chunk, (size_t)cb) < 0 ||
          (i % 3 == 2 && b2s_fwriter_commit(w) != 0))
        _exit(3);
      if (i % 3 == 2 && write(fds[1], &i, sizeof i) != sizeof i)
        _exit(4);
    }
  }
  close(fds[1]);
  srand(seed);
  uint32_t want = 30 + (uint32_t)(rand() % 200), last = 0, got;
  while (read(fds[0], &got, sizeof got) == sizeof got) {
    last = got;
    if (got >= want)
      break;
  }
  usleep((useconds_t)(rand() % 3000));
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  while (read(fds[0], &got, sizeof got) == sizeof got)
    last = got;   /* commits reported before the kill */
  close(fds[0]);
  assert_true(WIFSIGNALED(status));
  b2s_recover_report rep;
  assert_int_equal(b2s_frame_recover(path, true, &rep, NULL), 0);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  int64_t n = b2s_frame_nchunks(f);
  assert_true(n >= (int64_t)last + 1);
  uint8_t src[8192], buf[8192];
  for (int64_t i = 0; i < n; i++) {
    int32_t len = 300 + (int32_t)(i * 37 % 3000);
    fill(src, len, (uint32_t)i);
    assert_int_equal(b2s_frame_chunk_decompress(f, i, NULL, buf, sizeof buf), len);
    assert_memory_equal(buf, src, (size_t)len);
  }
  b2s_frame_free(f);
}

static void test_kill_appender(void **state) {
  (void)state;
  unsigned seed = (unsigned)time(NULL);
  print_message("seed %u\n", seed);
  for (int k = 0; k < 8; k++)
    kill_run(k % 2, k == 7 ? B2S_SYNC_FULL : B2S_SYNC_NONE, seed + (unsigned)k,
             false);
  for (int k = 0; k < 3; k++)   /* contiguous, direct I/O */
    kill_run(false, k == 2 ? B2S_SYNC_FULL : B2S_SYNC_NONE,
             seed + 8 + (unsigned)k, true);
}

/* A hostile commit record (bad checksum) is ignored, not trusted. */
static void test_record_checksum(void **state) {
  (void)state;
  char path[512];
  pathf(path, "crc.b2frame");
  rmrf(path);
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, NULL, NULL, &w), 0);
  model m = {0};
  append_some(w, &m, 5, 1, 0, 0);
  assert_int_equal(b2s_fwriter_close(w), 0);
  /* corrupt the header: recovery restores it from the records */
  int fd = open(path, O_RDWR);
  uint8_t junk[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  assert_int_equal(pwrite(fd, junk, 8, 16), 8);
  close(fd);
  b2s_frame *f;
  assert_true(b2s_frame_open(path, &f, NULL) < 0);
  assert_int_equal(b2s_fwriter_open(path, NULL, &w, NULL), B2S_E_RECOVER);
  b2s_recover_report rep;
  assert_int_equal(b2s_frame_recover(path, false, &rep, NULL), 0);
  assert_false(rep.was_clean);
  check_frame(path, &m);
  model_free(&m);
}

/* Empty frames reopen, whether closed or abandoned. */
static void test_reopen_empty(void **state) {
  (void)state;
  for (int sparse = 0; sparse < 2; sparse++)
    for (int closed = 0; closed < 2; closed++) {
      char path[512];
      pathf(path, sparse ? "empty.d" : "empty.b2frame");
      rmrf(path);
      b2s_fwriter *w;
      assert_int_equal(b2s_fwriter_create(path, sparse, NULL, NULL, &w), 0);
      if (closed)
        assert_int_equal(b2s_fwriter_close(w), 0);
      else
        b2s_fwriter_free(w);
      model m = {0};
      check_frame(path, &m);
      assert_int_equal(b2s_fwriter_open(path, NULL, &w, NULL), 0);
      assert_int_equal(b2s_fwriter_nchunks(w), 0);
      append_some(w, &m, 2, 1, 0, 0);
      assert_int_equal(b2s_fwriter_close(w), 0);
      check_frame(path, &m);
      model_free(&m);
    }
}

/* A create cut short leaves only PATH.b2s-new, never a frame without a
 * commit at PATH; the next create removes it. */
static void test_create_leftover(void **state) {
  (void)state;
  for (int sparse = 0; sparse < 2; sparse++) {
    char path[512], tmp[600], junk[700];
    pathf(path, sparse ? "left.d" : "left.b2frame");
    snprintf(tmp, sizeof tmp, "%s.b2s-new", path);
    rmrf(path);
    rmrf(tmp);
    if (sparse)
      assert_int_equal(mkdir(tmp, 0777), 0);
    snprintf(junk, sizeof junk, sparse ? "%s/chunks.b2frame" : "%s", tmp);
    FILE *f = fopen(junk, "w");
    assert_non_null(f);
    fputs("half a header", f);
    fclose(f);
    b2s_fwriter *w;
    assert_int_equal(b2s_fwriter_create(path, sparse, NULL, NULL, &w), 0);
    struct stat sb;
    assert_int_equal(lstat(tmp, &sb), -1);
    model m = {0};
    check_frame(path, &m);
    append_some(w, &m, 3, 1, 0, 0);
    assert_int_equal(b2s_fwriter_close(w), 0);
    check_frame(path, &m);
    /* refused: PATH exists; nothing left behind */
    assert_int_equal(b2s_fwriter_create(path, sparse, NULL, NULL, &w), -EEXIST);
    assert_int_equal(lstat(tmp, &sb), -1);
    model_free(&m);
  }
}

/* Abandoned writer, recovery, reopen, close with compaction and nothing
 * appended: the trailer must be carried over. */
static void test_compact_after_recover(void **state) {
  (void)state;
  for (int sparse = 0; sparse < 2; sparse++) {
    char path[512];
    pathf(path, sparse ? "car.d" : "car.b2frame");
    rmrf(path);
    b2s_fwriter *w;
    assert_int_equal(b2s_fwriter_create(path, sparse, NULL, NULL, &w), 0);
    model m = {0};
    append_some(w, &m, 3, 9, 0, 0);
    assert_int_equal(b2s_fwriter_vlmeta_set(w, "k", "v", 1), 0);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    b2s_fwriter_free(w);
    assert_int_equal(b2s_frame_recover(path, false, NULL, NULL), 0);
    assert_int_equal(b2s_fwriter_open(path, NULL, &w, NULL), 0);
    assert_int_equal(b2s_fwriter_close(w), 0);
    check_frame(path, &m);
    b2s_frame *f;
    uint8_t *v;
    int32_t len;
    assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
    assert_int_equal(b2s_frame_vlmeta_get(f, "k", NULL, &v, &len), 0);
    assert_int_equal(len, 1);
    free(v);
    b2s_frame_free(f);
    model_free(&m);
  }
}

/* Slot moves stay cheap with many tiny chunks: a move for the data sizes
 * slot 0 for the index the new reserve will hold, so the index is not
 * copied a second time when it outgrows slot 0 (bytes written besides the
 * chunks: 57 per append; 90 when slot 0 grew on its own). */
static void test_move_cost(void **state) {
  (void)state;
  char path[512];
  pathf(path, "movecost.b2frame");
  rmrf(path);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.reserve_min = 4096;   /* reserve data/8 from the start */
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, NULL, &w), 0);
  model m = {0};
  uint8_t src[200], chunk[200 + B2S_MAX_OVERHEAD];
  for (int i = 0; i < 40000; i++) {
    memset(src, 1 + i % 200, sizeof src);   /* repeated-value chunks */
    int32_t cb = compress_buf(src, sizeof src, chunk);
    int64_t end = b2s_fwriter_data_end(w);  /* moves leave the data put */
    assert_int_equal(b2s_fwriter_append(w, chunk, (size_t)cb), i + 1);
    assert_int_equal(b2s_fwriter_data_end(w), end + cb);
    model_insert(&m, m.n, src, sizeof src);
    if ((i + 1) % 64 == 0)
      assert_int_equal(b2s_fwriter_commit(w), 0);
  }
  assert_int_equal(b2s_fwriter_commit(w), 0);
  b2s_fwriter_stats st;
  assert_int_equal(b2s_fwriter_stats_get(w, &st), 0);
  assert_true(st.stored_bytes < 40000 * 64);
  assert_true(st.bytes_written - st.stored_bytes < 40000 * 75);
  b2s_fwriter_free(w);
  check_frame(path, &m);
  model_free(&m);
}

/* ---- entries sharing a stored chunk ----------------------------------------- */

static int64_t chunk_files(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int64_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    n += strstr(de->d_name, ".chunk") != NULL;
  closedir(d);
  return n;
}

/* b2s_fwriter_append_again: A, B, B, B, B stores B once; the frame reads
 * back (also after a reopen and recovery); deleting the shared entries
 * from the end keeps B's storage until its last entry goes. */
static void again_run(bool sparse) {
  char path[512];
  pathf(path, sparse ? "again_sp.b2frame" : "again.b2frame");
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, sparse, &o, NULL, &w), 0);
  assert_int_equal(b2s_fwriter_append_again(w), B2S_E_ARG);   /* no chunk */
  model m = {0};
  uint8_t d[2][4000], c[4000 + B2S_MAX_OVERHEAD];
  for (int k = 0; k < 2; k++) {
    fill(d[k], 4000, 7 + (uint32_t)k);
    int32_t cb = compress_buf(d[k], 4000, c);
    assert_int_equal(b2s_fwriter_append(w, c, (size_t)cb), k + 1);
    model_insert(&m, k, d[k], 4000);
  }
  for (int k = 0; k < 3; k++) {
    assert_int_equal(b2s_fwriter_append_again(w), 3 + k);
    model_insert(&m, 2 + k, d[1], 4000);
  }
  assert_int_equal(b2s_fwriter_close(w), 0);
  check_frame(path, &m);
  if (sparse)
    assert_int_equal(chunk_files(path), 2);
  assert_int_equal(b2s_frame_recover(path, true, NULL, NULL), 0);
  check_frame(path, &m);
  assert_int_equal(b2s_fwriter_open(path, &o, &w, NULL), 0);
  for (int k = 0; k < 3; k++) {     /* B's storage stays: B still there */
    assert_int_equal(b2s_fwriter_delete(w, b2s_fwriter_nchunks(w) - 1), 0);
    model_delete(&m, m.n - 1);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    check_frame(path, &m);
  }
  assert_int_equal(b2s_fwriter_delete(w, 1), 0);   /* B's last entry */
  model_delete(&m, 1);
  assert_int_equal(b2s_fwriter_close(w), 0);
  check_frame(path, &m);
  if (sparse)
    assert_int_equal(chunk_files(path), 1);
  model_free(&m);
}

static void test_append_again(void **state) {
  (void)state;
  again_run(false);
  again_run(true);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ops_contiguous),
      cmocka_unit_test(test_ops_sparse),
      cmocka_unit_test(test_ops_direct),
      cmocka_unit_test(test_direct_large),
      cmocka_unit_test(test_direct_retry),
      cmocka_unit_test(test_drop_behind),
      cmocka_unit_test(test_fio_cut),
      cmocka_unit_test(test_helper_jobs),
      cmocka_unit_test(test_dio_stage),
      cmocka_unit_test(test_open_while_committing),
      cmocka_unit_test(test_specials),
      cmocka_unit_test(test_metadata),
      cmocka_unit_test(test_adopt_vector),
      cmocka_unit_test(test_sparse_close_plain),
      cmocka_unit_test(test_sparse_close_vectors),
      cmocka_unit_test(test_sparse_close_cut),
      cmocka_unit_test(test_record_checksum),
      cmocka_unit_test(test_reopen_empty),
      cmocka_unit_test(test_append_again),
      cmocka_unit_test(test_create_leftover),
      cmocka_unit_test(test_compact_after_recover),
      cmocka_unit_test(test_move_cost),
      cmocka_unit_test(test_cut_contiguous),
      cmocka_unit_test(test_cut_contiguous_move),
      cmocka_unit_test(test_cut_sparse),
      cmocka_unit_test(test_kill_appender),
  };
  return ts_run_tests(tests, setup, teardown);
}

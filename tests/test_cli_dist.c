/* The b2stream tool (a real process, $B2S_CLI) on distributed frames: a
 * local store built here with the calls of ranks and committer
 * (support/dframe_fill.h), and a Ceph RADOS pool when $B2S_CEPH_CONF names
 * a test cluster's configuration (scripts/ceph-test-cluster; the pool is
 * $B2S_CEPH_POOL, default "b2stream").
 *
 * Every check compares real bytes: ls against the records and the stored
 * chunk objects, cat against the items the chunks were made of, verify
 * against a chunk object with one flipped byte, convert's output through
 * the core frame reader, and tail against a committer stand-in (a PUB
 * socket here) that moves the committed count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <zmq.h>

#include "b2s_dmsg.h"
#include "b2s_errors.h"
#include "b2s_meta.h"
#include "dframe_fill.h"
#include "venv_python.h"
#include "b2s_frame.h"
#include "ts.h"

static const char *cli_path;
static char tmpdir[256];
static char store_dir[300];
static int seq;

/* ---- running the tool ---------------------------------------------------- */

typedef struct run_result {
  int status;                      /* exit status, or 128 + signal */
  char *out, *err;
  size_t out_len, err_len;
} run_result;

static void run_free(run_result *r) {
  free(r->out);
  free(r->err);
  memset(r, 0, sizeof *r);
}

static int wait_status(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0)
    assert_int_equal(errno, EINTR);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The tool with args (NULL-terminated), stdout and stderr to files. */
static void run_v(run_result *r, char **args) {
  char out[400], err[400];
  snprintf(out, sizeof out, "%s/out-%d", tmpdir, seq);
  snprintf(err, sizeof err, "%s/err-%d", tmpdir, seq++);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
      _exit(127);
    execv(cli_path, args);
    _exit(127);
  }
  r->status = wait_status(pid);
  r->out = ts_read_file(out, &r->out_len);
  r->err = ts_read_file(err, &r->err_len);
  unlink(out);
  unlink(err);
}

#define MAX_ARGS 16

/* The tool with the arguments of ap, then "--ceph-conf FILE" when conf is
 * not NULL (options may follow the operands). */
static void run_ap(run_result *r, const char *conf, va_list ap) {
  char *args[MAX_ARGS + 4] = {(char *)cli_path};
  int n = 1;
  for (char *a; n <= MAX_ARGS && (a = va_arg(ap, char *)) != NULL;)
    args[n++] = a;
  if (conf != NULL) {
    args[n++] = "--ceph-conf";
    args[n++] = (char *)conf;
  }
  args[n] = NULL;
  run_v(r, args);
}

static void run(run_result *r, ...) {
  va_list ap;
  va_start(ap, r);
  run_ap(r, NULL, ap);
  va_end(ap);
}

static void expect_status(const run_result *r, int status, const char *what) {
  if (r->status != status)
    print_message("%s: exit %d, wanted %d\nstdout: %s\nstderr: %s\n", what,
                  r->status, status, r->out, r->err);
  assert_int_equal(r->status, status);
}

static void expect_err(const run_result *r, int status, const char *needle,
                       const char *what) {
  expect_status(r, status, what);
  if (strstr(r->err, needle) == NULL)
    print_message("%s: stderr lacks '%s': %s\n", what, needle, r->err);
  assert_non_null(strstr(r->err, needle));
  assert_true(!strncmp(r->err, "b2stream: ", 10));
}

static json_object *json_out(const run_result *r) {
  json_object *o = json_tokener_parse(r->out);
  if (o == NULL)
    print_message("not JSON: %s\n", r->out);
  assert_non_null(o);
  return o;
}

static json_object *jget(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(o, key, &v))
    print_message("no key '%s'\n", key);
  assert_non_null(v);
  return v;
}

/* ---- frames ------------------------------------------------------------------ */

/* Where a test's frames live: store URL for the library, the Ceph
 * configuration (NULL: local), and the tool's URL of frame name. */
typedef struct where {
  const char *store_url;
  const char *ceph_conf;
  b2s_store *store;
} where;

/* run() on a frame of w: with --ceph-conf for a RADOS pool. */
static void run_w(run_result *r, const where *w, ...) {
  va_list ap;
  va_start(ap, w);
  run_ap(r, w->ceph_conf, ap);
  va_end(ap);
}

static void frame_url(const where *w, const char *name, char *out, size_t n) {
  if (w->ceph_conf)
    snprintf(out, n, "%s/%s", w->store_url, name);
  else
    snprintf(out, n, "dir://%s/%s", w->store_url, name);
}

/* A frame of nchunks stored chunks (chunk `gap` a gap, -1: none), the
 * first `commit` committed; returned open for more. */
static b2s_dframe *make_frame(const where *w, const char *name,
                              int64_t nchunks, int64_t commit, int64_t gap) {
  b2s_dframe_params p;
  dfill_params(&p);
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_create(w->store, name, &p, &df), 0);
  for (int64_t k = 0; k < nchunks; k++) {
    if (k == gap)
      assert_int_equal(b2s_dframe_put_gap(df, k, 0, NULL), 0);
    else
      assert_int_equal(dfill_put(df, k), 0);
  }
  assert_int_equal(dfill_commit_to(df, commit), 0);
  return df;
}

/* A unique frame name (a RADOS pool outlives the test run). */
static void unique_name(const char *stem, char *out, size_t n) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(out, n, "%s-%d-%lld-%d", stem, (int)getpid(),
           (long long)ts.tv_nsec, seq++);
}

/* The items of chunks [0, n) as the tool's cat must print them. */
static uint8_t *items_of(int64_t n, int64_t gap, size_t *len) {
  uint8_t *buf = calloc((size_t)n, DFILL_NBYTES);
  assert_non_null(buf);
  for (int64_t k = 0; k < n; k++)
    if (k != gap)
      dfill_data(k, (uint16_t *)(buf + k * DFILL_NBYTES));
  *len = (size_t)n * DFILL_NBYTES;
  return buf;
}

/* ---- the commands on one store ----------------------------------------------- */

static void check_info(const where *w) {
  char name[96], url[512];
  unique_name("info", name, sizeof name);
  b2s_dframe *df = make_frame(w, name, 5, 4, 2);
  static const uint8_t series[] = {0x81, 0xa6, 's', 'a', 'm', 'p', 'l', 'e',
                                   0xa5, 'F',  'e', '2', 'O', '3'};
  assert_int_equal(b2s_dframe_series_merge(df, series, sizeof series), 0);
  frame_url(w, name, url, sizeof url);
  run_result r;
  run_w(&r, w, "info", url, "--json", NULL);
  expect_status(&r, 0, "info --json");
  json_object *o = json_out(&r);
  assert_string_equal(json_object_get_string(jget(o, "kind")), "dframe");
  assert_string_equal(json_object_get_string(jget(o, "store")),
                      w->ceph_conf ? "rados" : "local");
  assert_int_equal(json_object_get_int64(jget(o, "committed")), 4);
  assert_false(json_object_get_boolean(jget(o, "closed")));
  assert_int_equal(json_object_get_int64(jget(o, "gaps")), 1);
  assert_int_equal(json_object_get_int64(jget(o, "chunk_nbytes")), DFILL_NBYTES);
  assert_int_equal(json_object_get_int64(jget(o, "nbytes")), 4 * DFILL_NBYTES);
  assert_int_equal(json_object_get_int64(jget(o, "typesize")), 2);
  assert_string_equal(json_object_get_string(jget(o, "codec")), "zstd");
  assert_int_equal(json_object_get_int64(jget(o, "ranks")), 1);
  json_object *nd = jget(o, "b2nd");
  assert_int_equal(json_object_get_int64(jget(nd, "ndim")), 3);
  assert_string_equal(json_object_get_string(jget(nd, "dtype")), "<u2");
  assert_string_equal(json_object_get_string(jget(jget(o, "series"), "sample")),
                      "Fe2O3");
  json_object_put(o);
  run_free(&r);

  assert_int_equal(b2s_dframe_close_mark(df), 0);
  run_w(&r, w, "info", url, NULL);
  expect_status(&r, 0, "info");
  assert_non_null(strstr(r.out, "committed:    4 chunks\n"));
  assert_non_null(strstr(r.out, "closed:       yes\n"));
  assert_non_null(strstr(r.out, "gaps:         1\n"));
  assert_non_null(strstr(r.out, "series:       1 keys\n"));
  assert_non_null(strstr(r.out, "b2nd:         shape 0 x 64 x 32, chunks 1 x 64 x 32"));
  run_free(&r);
  b2s_dframe_free(df);
}

/* ls --json: the committed prefix only, each chunk with its record, the
 * checksum that of the chunk object's bytes. */
static void check_ls(const where *w) {
  char name[96], url[512];
  unique_name("ls", name, sizeof name);
  b2s_dframe *df = make_frame(w, name, 6, 3, -1);
  frame_url(w, name, url, sizeof url);
  run_result r;
  run_w(&r, w, "ls", "--json", url, NULL);
  expect_status(&r, 0, "ls --json");
  json_object *o = json_out(&r);
  assert_int_equal(json_object_get_int64(jget(o, "nchunks")), 3);
  assert_true(json_object_get_boolean(jget(o, "records")));
  json_object *chunks = jget(o, "chunks");
  assert_int_equal(json_object_array_length(chunks), 3);
  assert_int_equal(b2s_dframe_refresh(df, &(int64_t){0}, &(bool){0}), 0);
  for (int64_t i = 0; i < 3; i++) {
    json_object *c = json_object_array_get_idx(chunks, (size_t)i);
    uint8_t *bytes;
    size_t cb;
    assert_int_equal(b2s_dframe_chunk_get(df, i, &bytes, &cb), 0);
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, b2s_chunk_xxh64(bytes, cb));
    free(bytes);
    assert_int_equal(json_object_get_int64(jget(c, "index")), i);
    assert_int_equal(json_object_get_int64(jget(c, "nbytes")), DFILL_NBYTES);
    assert_int_equal(json_object_get_int64(jget(c, "cbytes")), (int64_t)cb);
    json_object *rec = jget(c, "record");
    assert_int_equal(json_object_get_int64(jget(rec, "frame")), i);
    assert_int_equal(json_object_get_int64(jget(rec, "ts")), DFILL_TS0 + i);
    assert_string_equal(json_object_get_string(jget(rec, "xxh64")), hex);
    assert_false(json_object_get_boolean(jget(rec, "gap")));
  }
  json_object_put(o);
  run_free(&r);
  run_w(&r, w, "ls", url, NULL);
  expect_status(&r, 0, "ls");
  int lines = 0;
  for (const char *p = r.out; (p = strchr(p, '\n')) != NULL; p++)
    lines++;
  assert_int_equal(lines, 1 + 3);   /* header and the committed chunks */
  run_free(&r);
  b2s_dframe_free(df);
}

/* cat: the items the chunks were made of, bit-exact; --chunk N; a chunk
 * stored but not committed is not there. */
static void check_cat(const where *w) {
  char name[96], url[512];
  unique_name("cat", name, sizeof name);
  b2s_dframe *df = make_frame(w, name, 5, 4, 1);
  frame_url(w, name, url, sizeof url);
  run_result r;
  run_w(&r, w, "cat", url, NULL);
  expect_status(&r, 0, "cat");
  size_t len;
  uint8_t *want = items_of(4, 1, &len);
  assert_int_equal(r.out_len, len);
  assert_memory_equal(r.out, want, len);
  run_free(&r);
  run_w(&r, w, "cat", "--chunk", "2", url, NULL);
  expect_status(&r, 0, "cat --chunk 2");
  assert_int_equal(r.out_len, DFILL_NBYTES);
  assert_memory_equal(r.out, want + 2 * DFILL_NBYTES, DFILL_NBYTES);
  run_free(&r);
  run_w(&r, w, "cat", "--chunk", "4", url, NULL);
  expect_err(&r, 1, "no chunk 4", "cat of an uncommitted chunk");
  run_free(&r);
  free(want);
  b2s_dframe_free(df);
}

/* convert: a local frame c-blosc2 opens, with the committed chunks as
 * stored and their records beside it. */
static void check_convert_one(const where *w, const char *url, bool sparse,
                              const b2s_dframe_params *p) {
  char out[400];
  snprintf(out, sizeof out, "%s/export-%d.b2frame", tmpdir, seq++);
  run_result r;
  run_w(&r, w, "convert", url, out, sparse ? "--sparse" : "--contiguous",
        NULL);
  expect_status(&r, 0, "convert");
  assert_string_equal(r.out, "exported 3 chunks\n");
  run_free(&r);
  b2s_frame *f;
  b2s_frame_error err;
  assert_int_equal(b2s_frame_open(out, &f, &err), 0);
  assert_int_equal(b2s_frame_is_sparse(f), sparse);
  assert_int_equal(b2s_frame_nchunks(f), 3);
  assert_int_equal(b2s_frame_header_get(f)->typesize, p->cparams.typesize);
  b2s_ctx *ctx = b2s_ctx_new();
  uint16_t got[DFILL_ITEMS], want[DFILL_ITEMS];
  for (int64_t k = 0; k < 3; k++) {
    assert_int_equal(b2s_frame_chunk_decompress(f, k, ctx, got, sizeof got),
                     DFILL_NBYTES);
    dfill_data(k, want);
    assert_memory_equal(got, want, sizeof got);
  }
  b2s_ctx_free(ctx);
  b2s_frame_free(f);
  b2s_records *recs;
  assert_int_equal(b2s_records_open(out, &recs, NULL), 0);
  assert_int_equal(b2s_records_count(recs), 3);
  b2s_record rec;
  assert_int_equal(b2s_records_get(recs, 2, &rec), 0);
  assert_true(rec.has_frame && rec.frame == 2 && rec.ts == DFILL_TS0 + 2);
  b2s_records_free(recs);
  /* an existing DST is refused */
  run_w(&r, w, "convert", url, out, NULL);
  expect_err(&r, 1, "already exists", "convert onto an existing frame");
  run_free(&r);
}

static void check_convert(const where *w) {
  char name[96], url[512];
  unique_name("conv", name, sizeof name);
  b2s_dframe *df = make_frame(w, name, 4, 3, -1);
  frame_url(w, name, url, sizeof url);
  check_convert_one(w, url, false, b2s_dframe_params_get(df));
  check_convert_one(w, url, true, b2s_dframe_params_get(df));
  b2s_dframe_free(df);
}

static void verify_ok(const where *w, const char *url, const char *line) {
  run_result r;
  run_w(&r, w, "verify", url, NULL);
  expect_status(&r, 0, "verify");
  assert_string_equal(r.out, line);
  run_free(&r);
}

/* ---- the tests -------------------------------------------------------------- */

static where local_store(void) {
  where w = {.store_url = store_dir};
  assert_int_equal(b2s_store_open(store_dir, &(b2s_store_opts){0}, &w.store), 0);
  return w;
}

static void test_info(void **state) {
  (void)state;
  where w = local_store();
  check_info(&w);
  b2s_store_free(w.store);
}

static void test_ls(void **state) {
  (void)state;
  where w = local_store();
  check_ls(&w);
  b2s_store_free(w.store);
}

static void test_cat(void **state) {
  (void)state;
  where w = local_store();
  check_cat(&w);
  b2s_store_free(w.store);
}

static void test_convert(void **state) {
  (void)state;
  where w = local_store();
  check_convert(&w);
  b2s_store_free(w.store);
}

/* An export whose chunk 0 is a gap (frame 0 never sent) opens in
 * c-blosc2 3.3 (python-blosc2 of $B2S_VENV), contiguous and sparse, every
 * chunk decompressed and compared: zeros for the gap, the items else. */
static void test_convert_gap0_blosc2(void **state) {
  (void)state;
  char py[400];
  if (!ts_venv_python(py, sizeof py))
    skip();
  where w = local_store();
  char name[96], url[512];
  unique_name("gap0", name, sizeof name);
  b2s_dframe *df = make_frame(&w, name, 5, 5, 0);
  frame_url(&w, name, url, sizeof url);
  for (int sparse = 0; sparse < 2; sparse++) {
    char out[400], cmd[2000];
    snprintf(out, sizeof out, "%s/gap0-%d.b2frame", tmpdir, sparse);
    run_result r;
    run_w(&r, &w, "convert", url, out, sparse ? "--sparse" : "--contiguous",
          NULL);
    expect_status(&r, 0, "convert");
    run_free(&r);
    snprintf(cmd, sizeof cmd,
             "'%s' -c 'import sys, numpy as np, blosc2\n"
             "a = blosc2.open(sys.argv[1])\n"
             "s = getattr(a, \"schunk\", a)\n"
             "assert s.nchunks == 5, s.nchunks\n"
             "for k in range(5):\n"
             "    got = np.frombuffer(s.decompress_chunk(k), dtype=\"<u2\")\n"
             "    want = np.zeros(%d, \"<u2\") if k == 0 else "
             "((k * 7 + np.arange(%d)) %% 65536).astype(\"<u2\")\n"
             "    assert (got == want).all(), k\n"
             "print(\"ok\")' '%s'", py, DFILL_ITEMS, DFILL_ITEMS, out);
    if (system(cmd) != 0)
      fail_msg("c-blosc2 does not open the %s export with chunk 0 a gap",
               sparse ? "sparse" : "contiguous");
  }
  b2s_dframe_free(df);
  b2s_store_free(w.store);
}

/* verify passes, then finds one flipped byte in a chunk object, which its
 * checksum catches even where the codec might still decode it. */
static void test_verify(void **state) {
  (void)state;
  where w = local_store();
  char name[96], url[512];
  unique_name("ver", name, sizeof name);
  b2s_dframe *df = make_frame(&w, name, 4, 4, -1);
  frame_url(&w, name, url, sizeof url);
  verify_ok(&w, url, "ok: 4 chunks, 16384 bytes, 4 checksums\n");
  char obj[256], path[600];
  assert_true(b2s_dframe_chunk_name(name, 2, obj, sizeof obj) > 0);
  snprintf(path, sizeof path, "%s/%s", store_dir, obj);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  uint8_t b;
  off_t at = st.st_size - 1;
  assert_int_equal(pread(fd, &b, 1, at), 1);
  b ^= 0x10;
  assert_int_equal(pwrite(fd, &b, 1, at), 1);
  close(fd);
  run_result r;
  run(&r, "verify", url, NULL);
  expect_err(&r, 1, "chunk 2: chunk checksum differs from its record",
             "verify of a flipped byte");
  run_free(&r);
  b2s_dframe_free(df);
  b2s_store_free(w.store);
}

/* One flipped byte in the key log: the batch it hits fails its checksum
 * and is skipped with a warning; the records it held are read from the
 * chunk objects, so info, ls, verify and convert keep working. */
static void test_keylog_flipped_byte(void **state) {
  (void)state;
  where w = local_store();
  char name[96], url[512], path[600], out[400];
  unique_name("klog", name, sizeof name);
  b2s_dframe *df = make_frame(&w, name, 40, 10, -1);
  for (int64_t h = 20; h <= 40; h += 10)
    assert_int_equal(dfill_commit_to(df, h), 0);
  frame_url(&w, name, url, sizeof url);
  snprintf(path, sizeof path, "%s/.k.%s.index", store_dir, name);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  uint8_t b;
  off_t at = st.st_size * 3 / 8;       /* in the second batch of four */
  assert_int_equal(pread(fd, &b, 1, at), 1);
  b ^= 0x10;
  assert_int_equal(pwrite(fd, &b, 1, at), 1);
  close(fd);
  run_result r;
  static const char *const cmds[] = {"info", "ls", "verify"};
  for (size_t k = 0; k < 3; k++) {
    run(&r, cmds[k], url, NULL);
    if (r.status != 0)
      fail_msg("%s after a flipped byte in the key log: %s", cmds[k], r.err);
    assert_non_null(strstr(r.err, "key log"));
    run_free(&r);
  }
  snprintf(out, sizeof out, "%s/klog.b2frame", tmpdir);
  run(&r, "convert", url, out, NULL);
  if (r.status != 0)
    fail_msg("convert after a flipped byte in the key log: %s", r.err);
  assert_string_equal(r.out, "exported 40 chunks\n");
  run_free(&r);
  /* recover: refused while a committer holds the frame's lease */
  char lease[160];
  snprintf(lease, sizeof lease, "%s.lease", name);
  b2s_lease *l;
  char who[256];
  assert_int_equal(b2s_store_lease_take(w.store, lease, "a test committer",
                                        10000, &l, who, sizeof who), 0);
  run(&r, "recover", url, NULL);
  expect_err(&r, 1, "a committer holds the frame (a test committer)",
             "recover under a committer");
  run_free(&r);
  b2s_store_lease_drop(l);
  /* then it rebuilds the key log from the chunk objects */
  run(&r, "recover", url, NULL);
  expect_status(&r, 0, "recover");
  assert_non_null(strstr(r.out, "committed: 40\n"));
  assert_non_null(strstr(r.out, "missing_records: 10 "));
  run_free(&r);
  for (size_t k = 0; k < 3; k++) {
    run(&r, cmds[k], url, NULL);
    expect_status(&r, 0, cmds[k]);
    assert_null(strstr(r.err, "key log"));
    run_free(&r);
  }
  run(&r, "recover", url, NULL);
  expect_status(&r, 0, "recover again");
  assert_non_null(strstr(r.out, "missing_records: 0 "));
  run_free(&r);
  b2s_dframe_free(df);
  b2s_store_free(w.store);
}

static void test_bad_paths(void **state) {
  (void)state;
  run_result r;
  run(&r, "info", "rados://pool-only", NULL);
  expect_err(&r, 2, "rados://POOL/NAME", "pool without frame");
  run_free(&r);
  run(&r, "ls", "dir://relative/f", NULL);
  expect_err(&r, 2, "dir:///ABS/DIR/NAME", "relative store directory");
  run_free(&r);
  run(&r, "cat", "dir:///tmp/.hidden", NULL);
  expect_err(&r, 2, "frame name '.hidden'", "name starting with a dot");
  run_free(&r);
  run(&r, "convert", "rados://p/a/b", "/tmp/never-written", NULL);
  expect_err(&r, 2, "frame name 'a/b'", "a name with a slash");
  run_free(&r);
  char url[512];
  snprintf(url, sizeof url, "dir://%s/absent", store_dir);
  run(&r, "verify", url, NULL);
  expect_err(&r, 1, "no such frame", "absent frame");
  run_free(&r);
  run(&r, "ls", "dir:///nonexistent-b2s-store/f", NULL);
  expect_err(&r, 1, "store directory /nonexistent-b2s-store: No such file",
             "absent store directory");
  assert_int_equal(access("/nonexistent-b2s-store", F_OK), -1);
  run_free(&r);
  run(&r, "info", "--offset", "8", url, NULL);
  expect_err(&r, 2, "--offset goes with a file", "--offset on a URL");
  run_free(&r);
  run(&r, "info", "--ceph-conf", "/nonexistent.conf", tmpdir, NULL);
  expect_err(&r, 2, "--ceph-conf goes with a rados:// PATH", "conf on a file");
  run_free(&r);
  run(&r, "tail", "--endpoint", "ipc:///nonexistent", url, NULL);
  expect_err(&r, 2, "takes --committer-pub", "tail --endpoint on a URL");
  run_free(&r);
  run(&r, "tail", "--committer-pub", "ipc:///x", "somestream", NULL);
  expect_err(&r, 2, "go with a distributed frame", "--committer-pub on a stream");
  run_free(&r);
}

static void test_help(void **state) {
  (void)state;
  run_result r;
  run(&r, "--help", NULL);
  expect_status(&r, 0, "--help");
  assert_non_null(strstr(r.out, "rados://POOL/NAME"));
  assert_non_null(strstr(r.out, "dir:///ABS/DIR/NAME"));
  run_free(&r);
  run(&r, "tail", "--help", NULL);
  expect_status(&r, 0, "tail --help");
  assert_non_null(strstr(r.out, "--committer-pub E"));
  assert_non_null(strstr(r.out, "every 200 ms"));
  run_free(&r);
  static const char *const cmds[] = {"info", "ls", "cat", "verify", "convert"};
  for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
    run(&r, cmds[k], "--help", NULL);
    expect_status(&r, 0, cmds[k]);
    assert_non_null(strstr(r.out, "--ceph-conf FILE"));
    run_free(&r);
  }
}

/* ---- tail -------------------------------------------------------------------- */

typedef struct follower {
  pid_t pid;
  int out;                         /* its stdout */
  char buf[65536];
  size_t len;
} follower;

static void follower_start(follower *f, char **args) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  f->len = 0;
  f->pid = fork();
  assert_true(f->pid >= 0);
  if (f->pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execv(cli_path, args);
    _exit(127);
  }
  close(fds[1]);
  f->out = fds[0];
}

static int lines_of(const follower *f) {
  int n = 0;
  for (size_t k = 0; k < f->len; k++)
    n += f->buf[k] == '\n';
  return n;
}

/* Read the follower's output for up to ms: 1 when bytes came, 0 when
 * none did, -1 at its EOF. */
static int follower_read(follower *f, int ms) {
  struct pollfd p = {.fd = f->out, .events = POLLIN};
  if (poll(&p, 1, ms) <= 0)
    return 0;
  assert_true(f->len < sizeof f->buf - 1);
  ssize_t n = read(f->out, f->buf + f->len, sizeof f->buf - 1 - f->len);
  assert_true(n >= 0);
  f->len += (size_t)n;
  f->buf[f->len] = '\0';
  return n > 0 ? 1 : -1;
}

/* Read until the follower closes its output (it ended), for at most 20 s;
 * then its exit status. */
static int follower_end(follower *f) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = 0;
  do {
    rc = follower_read(f, 100);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while (rc >= 0 && t.tv_sec - t0.tv_sec < 20);
  if (rc >= 0) {
    print_message("the tool did not end: %s\n", f->buf);
    kill(f->pid, SIGKILL);
  }
  close(f->out);
  return wait_status(f->pid);
}

/* COMMITTED(h, closed) every 50 ms, as a committer would announce it,
 * until the follower printed `lines` lines (or ended). */
static void announce_until(void *pub, const char *name, int64_t h, bool closed,
                           follower *f, int lines) {
  uint8_t msg[256];
  b2s_dmsg m = {.type = B2S_DMSG_COMMITTED, .name = name,
                .name_len = (uint16_t)strlen(name), .index = h,
                .closed = closed};
  int len = b2s_dmsg_encode(&m, msg, sizeof msg);
  assert_true(len > 0);
  for (int round = 0; round < 400 && lines_of(f) < lines; round++) {
    assert_int_equal(zmq_send(pub, msg, (size_t)len, 0), len);
    if (follower_read(f, 50) < 0)
      break;
  }
}

static void expect_tail_lines(const follower *f, int n, const char *what) {
  const char *p = f->buf;
  for (int i = 0; i < n; i++) {
    long long idx;
    int nb, cb, used;
    if (sscanf(p, "%lld %d %d%n", &idx, &nb, &cb, &used) != 3 || idx != i ||
        nb != DFILL_NBYTES || cb <= 0) {
      print_message("%s: line %d wrong in:\n%s\n", what, i, f->buf);
      fail();
    }
    p = strchr(p, '\n') + 1;
  }
  assert_int_equal(lines_of(f), n);
}

/* tail with the committer's endpoint: chunks appear as COMMITTED moves the
 * count, and the tool ends once the frame is closed. */
static void test_tail_committer(void **state) {
  (void)state;
  where w = local_store();
  char name[96], url[512], endpoint[400];
  unique_name("tail", name, sizeof name);
  b2s_dframe *df = make_frame(&w, name, 6, 2, -1);
  frame_url(&w, name, url, sizeof url);
  snprintf(endpoint, sizeof endpoint, "ipc://%s/committer-%d.pub", tmpdir,
           seq++);
  void *ctx = zmq_ctx_new();
  void *pub = zmq_socket(ctx, ZMQ_PUB);
  assert_int_equal(zmq_bind(pub, endpoint), 0);
  char *args[] = {(char *)cli_path, "tail", "--from", "0", "--committer-pub",
                  endpoint, url, NULL};
  follower f;
  follower_start(&f, args);
  for (int k = 0; k < 400 && lines_of(&f) < 2; k++)
    follower_read(&f, 50);
  expect_tail_lines(&f, 2, "before any message");
  assert_int_equal(dfill_commit_to(df, 4), 0);
  announce_until(pub, name, 4, false, &f, 4);
  expect_tail_lines(&f, 4, "after COMMITTED 4");
  assert_int_equal(dfill_commit_to(df, 6), 0);
  assert_int_equal(b2s_dframe_close_mark(df), 0);
  announce_until(pub, name, 6, true, &f, 6);
  assert_int_equal(follower_end(&f), 0);   /* it ends at closed */
  expect_tail_lines(&f, 6, "to the end");
  zmq_close(pub);
  zmq_ctx_term(ctx);
  b2s_dframe_free(df);
  b2s_store_free(w.store);
}

/* tail without the endpoint re-reads the count; --data gives the bytes. */
static void test_tail_poll_data(void **state) {
  (void)state;
  where w = local_store();
  char name[96], url[512];
  unique_name("tailp", name, sizeof name);
  b2s_dframe *df = make_frame(&w, name, 3, 1, -1);
  frame_url(&w, name, url, sizeof url);
  char *args[] = {(char *)cli_path, "tail", "--from", "0", "--data", url,
                  NULL};
  follower f;
  follower_start(&f, args);
  for (int k = 0; k < 400 && f.len < DFILL_NBYTES; k++)
    follower_read(&f, 50);
  assert_int_equal(f.len, DFILL_NBYTES);
  assert_int_equal(dfill_commit_to(df, 3), 0);
  assert_int_equal(b2s_dframe_close_mark(df), 0);
  assert_int_equal(follower_end(&f), 0);
  size_t len;
  uint8_t *want = items_of(3, -1, &len);
  assert_int_equal(f.len, len);
  assert_memory_equal(f.buf, want, len);
  free(want);
  b2s_dframe_free(df);
  b2s_store_free(w.store);
}

/* --records adds each chunk's record to its line (a gap's flags), --count
 * and --idle end a follow of a frame that is not closed. */
static void test_tail_records_count_idle(void **state) {
  (void)state;
  where w = local_store();
  char name[96], url[512];
  unique_name("tailr", name, sizeof name);
  b2s_dframe *df = make_frame(&w, name, 3, 3, 1);
  frame_url(&w, name, url, sizeof url);
  run_result r;
  run(&r, "tail", "--from", "0", "--count", "2", "--records", url, NULL);
  expect_status(&r, 0, "tail --count 2 --records");
  b2s_record rec;
  char want[256];
  assert_int_equal(b2s_dframe_refresh(df, &(int64_t){0}, &(bool){0}), 0);
  assert_int_equal(b2s_dframe_record_get(df, 0, &rec), 0);
  snprintf(want, sizeof want, "frame=0 ts=%lld xxh64=%016" PRIx64 " flags=0\n",
           (long long)DFILL_TS0, rec.xxh64);
  assert_non_null(strstr(r.out, want));
  assert_int_equal(b2s_dframe_record_get(df, 1, &rec), 0);
  snprintf(want, sizeof want, "\n1 %d ", DFILL_NBYTES);
  assert_non_null(strstr(r.out, want));
  snprintf(want, sizeof want, "frame=1 ts=- xxh64=%016" PRIx64 " flags=gap\n",
           rec.xxh64);
  assert_non_null(strstr(r.out, want));
  assert_null(strstr(r.out, "\n2 "));
  run_free(&r);
  run(&r, "tail", "--from", "1", "--idle", "300", url, NULL);
  expect_status(&r, 0, "tail --idle 300");
  snprintf(want, sizeof want, "1 %d ", DFILL_NBYTES);
  assert_true(!strncmp(r.out, want, strlen(want)));
  snprintf(want, sizeof want, "\n2 %d ", DFILL_NBYTES);
  assert_non_null(strstr(r.out, want));
  run_free(&r);
  b2s_dframe_free(df);
  b2s_store_free(w.store);
}

/* SIGINT ends a follow cleanly. */
static void test_tail_sigint(void **state) {
  (void)state;
  where w = local_store();
  char name[96], url[512];
  unique_name("tails", name, sizeof name);
  b2s_dframe *df = make_frame(&w, name, 1, 1, -1);
  frame_url(&w, name, url, sizeof url);
  char *args[] = {(char *)cli_path, "tail", "--from", "0", url, NULL};
  follower f;
  follower_start(&f, args);
  for (int k = 0; k < 400 && lines_of(&f) < 1; k++)
    follower_read(&f, 50);
  assert_int_equal(lines_of(&f), 1);
  kill(f.pid, SIGINT);
  assert_int_equal(follower_end(&f), 0);
  b2s_dframe_free(df);
  b2s_store_free(w.store);
}

/* ---- with b2stream-committer ------------------------------------------------- */

/* A rank's WRITTEN (or, rec NULL, END) to the committer's PULL socket. */
static void rank_says(void *push, const char *name, int64_t index,
                      const b2s_mpbuf *rec) {
  uint8_t msg[B2S_DMSG_REC_MAX + 256];
  b2s_dmsg m = {.type = rec ? B2S_DMSG_WRITTEN : B2S_DMSG_END, .name = name,
                .name_len = (uint16_t)strlen(name), .index = index,
                .rank = 0, .rec = rec ? rec->data : NULL,
                .rec_len = rec ? (uint32_t)rec->len : 0};
  int len = b2s_dmsg_encode(&m, msg, sizeof msg);
  assert_true(len > 0);
  assert_int_equal(zmq_send(push, msg, (size_t)len, 0), len);
}

/* Chunks [from, to) stored as rank 0 does, each announced with WRITTEN. */
static void rank_writes(b2s_dframe *df, void *push, const char *name,
                        int64_t from, int64_t to) {
  for (int64_t k = from; k < to; k++) {
    assert_int_equal(dfill_put(df, k), 0);
    b2s_mpbuf rec = {0};
    assert_int_equal(b2s_dframe_stored_record(df, k, &rec), 0);
    rank_says(push, name, k, &rec);
    b2s_mpbuf_fini(&rec);
  }
}

static pid_t start_committer(const char *exe, const char *name,
                             const char *pull, const char *pub) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char log[400];
    snprintf(log, sizeof log, "%s/committer.log", tmpdir);
    if (freopen(log, "a", stderr) == NULL)
      _exit(127);
    execl(exe, exe, "--store", store_dir, "--pull", pull, "--pub", pub,
          "--frame", name, "--sync", "none", "--gap-timeout-ms", "60000",
          (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* tail --committer-pub on the real committer: ranks' chunks appear as it
 * commits them, and the tool ends when END closes the frame. */
static void test_tail_real_committer(void **state) {
  (void)state;
  const char *exe = getenv("B2S_COMMITTER");
  if (exe == NULL || !exe[0]) {
    print_message("skipped: B2S_COMMITTER does not name b2stream-committer\n");
    skip();
  }
  where w = local_store();
  char name[96], url[512], pull[400], pub[400];
  unique_name("live", name, sizeof name);
  b2s_dframe *df = make_frame(&w, name, 0, 0, -1);
  frame_url(&w, name, url, sizeof url);
  snprintf(pull, sizeof pull, "ipc://%s/pull-%d", tmpdir, seq);
  snprintf(pub, sizeof pub, "ipc://%s/pub-%d", tmpdir, seq++);
  pid_t committer = start_committer(exe, name, pull, pub);
  void *ctx = zmq_ctx_new();
  void *push = zmq_socket(ctx, ZMQ_PUSH);
  assert_int_equal(zmq_connect(push, pull), 0);
  rank_writes(df, push, name, 0, 2);
  char *args[] = {(char *)cli_path, "tail", "--from", "0", "--committer-pub",
                  pub, url, NULL};
  follower f;
  follower_start(&f, args);
  for (int k = 0; k < 400 && lines_of(&f) < 2; k++)
    follower_read(&f, 50);
  expect_tail_lines(&f, 2, "first two chunks");
  rank_writes(df, push, name, 2, 5);
  for (int k = 0; k < 400 && lines_of(&f) < 5; k++)
    follower_read(&f, 50);
  expect_tail_lines(&f, 5, "five chunks");
  rank_says(push, name, 5, NULL);   /* END: the committer closes the frame */
  assert_int_equal(follower_end(&f), 0);
  expect_tail_lines(&f, 5, "at the end");
  kill(committer, SIGTERM);
  assert_int_equal(wait_status(committer), 0);
  int linger = 0;
  zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(push);
  zmq_ctx_term(ctx);
  b2s_dframe_free(df);
  b2s_store_free(w.store);
}

/* ---- RADOS -------------------------------------------------------------------- */

static void test_rados(void **state) {
  (void)state;
  const char *conf = getenv("B2S_CEPH_CONF");
  if (conf == NULL || !conf[0]) {
    print_message("skipped: RADOS needs the test cluster: set B2S_CEPH_CONF "
                  "(scripts/ceph-test-cluster start prints it)\n");
    skip();
  }
  if (!b2s_store_have_rados()) {
    print_message("skipped: this build has no librados\n");
    skip();
  }
  const char *pool = getenv("B2S_CEPH_POOL");
  char url[256];
  snprintf(url, sizeof url, "rados://%s", pool && pool[0] ? pool : "b2stream");
  where w = {.store_url = url, .ceph_conf = conf};
  b2s_store_opts o = {.ceph_conf = conf};
  assert_int_equal(b2s_store_open(url, &o, &w.store), 0);
  check_info(&w);
  check_ls(&w);
  check_cat(&w);
  check_convert(&w);
  char name[96], furl[512];
  unique_name("rver", name, sizeof name);
  b2s_dframe *df = make_frame(&w, name, 2, 2, -1);
  frame_url(&w, name, furl, sizeof furl);
  verify_ok(&w, furl, "ok: 2 chunks, 8192 bytes, 2 checksums\n");
  b2s_dframe_free(df);
  b2s_store_free(w.store);
}

/* ---- setup ---------------------------------------------------------------------- */

static int setup(void **state) {
  (void)state;
  cli_path = getenv("B2S_CLI");
  if (cli_path == NULL || access(cli_path, X_OK) != 0) {
    print_message("B2S_CLI does not name the built tool\n");
    return -1;
  }
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/b2s-cli-dist-XXXXXX",
           base && base[0] ? base : "/tmp");
  if (mkdtemp(tmpdir) == NULL)
    return -1;
  snprintf(store_dir, sizeof store_dir, "%s/store", tmpdir);
  return mkdir(store_dir, 0750);
}

static int teardown(void **state) {
  (void)state;
  return ts_rmtree(tmpdir);
}

int main(int argc, char **argv) {
  /* "committer": only the test with b2stream-committer (suite daemon) */
  const struct CMUnitTest with_committer[] = {
      cmocka_unit_test(test_tail_real_committer),
  };
  if (argc > 1 && !strcmp(argv[1], "committer"))
    return ts_run_tests(with_committer, setup, teardown);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help),
      cmocka_unit_test(test_bad_paths),
      cmocka_unit_test(test_info),
      cmocka_unit_test(test_ls),
      cmocka_unit_test(test_cat),
      cmocka_unit_test(test_verify),
      cmocka_unit_test(test_convert),
      cmocka_unit_test(test_convert_gap0_blosc2),
      cmocka_unit_test(test_keylog_flipped_byte),
      cmocka_unit_test(test_tail_committer),
      cmocka_unit_test(test_tail_poll_data),
      cmocka_unit_test(test_tail_records_count_idle),
      cmocka_unit_test(test_tail_sigint),
      cmocka_unit_test(test_rados),
  };
  return ts_run_tests(tests, setup, teardown);
}

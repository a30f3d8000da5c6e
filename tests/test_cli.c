/* The b2stream command-line tool, run as a real process (path in $B2S_CLI)
 * against the c-blosc2 reference vectors ($B2S_VECTORS) and against frames
 * it writes itself.
 *
 * Every check compares real bytes: `cat` output against what the core
 * reader decodes and the manifest's SHA-256 per chunk, `info --json` and
 * `ls --json` (parsed with json-c) against the manifest, pack/unpack and
 * convert round trips against the input and the core reader, and error
 * exits against corrupted copies.  Vector-based tests skip when the vectors
 * are absent; the others always run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "b2s_chunk.h"
#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2s_frame.h"
#include "b2s_frame_writer.h"
#include "manifest.h"
#include "vecdata.h"
#include "ts.h"

static const char *cli_path;
static char tmpdir[512];
static int tmp_seq;
static mf_manifest *manifest;
static json_object *manifest_json;
static bool vectors_missing;
static char load_error[1024];

/* Count mismatches, print each one, fail at the end of the test. */
static int failures;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      failures++;                                                              \
      print_message(__VA_ARGS__);                                              \
      print_message("\n");                                                     \
    }                                                                          \
  } while (0)

/* ---- files --------------------------------------------------------------- */

/* dir/name into out, which must be large enough. */
static void join(char *out, size_t n, const char *dir, const char *name) {
  int w = snprintf(out, n, "%s/%s", dir, name);
  assert_true(w > 0 && (size_t)w < n);
}

static void tmp_path(char *out, size_t n, const char *stem) {
  snprintf(out, n, "%s/%s-%d", tmpdir, stem, tmp_seq++);
}

static void write_file(const char *path, const void *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, len), (ssize_t)len);
  assert_int_equal(close(fd), 0);
}

static void copy_file(const char *src, const char *dst) {
  size_t len;
  uint8_t *p = ts_read_file(src, &len);
  write_file(dst, p, len);
  free(p);
}

/* A sparse frame directory (flat). */
static void copy_dir(const char *src, const char *dst) {
  assert_int_equal(mkdir(dst, 0755), 0);
  DIR *d = opendir(src);
  assert_non_null(d);
  for (struct dirent *de; (de = readdir(d)) != NULL;) {
    if (de->d_name[0] == '.')
      continue;
    char a[4096], b[4096];
    join(a, sizeof a, src, de->d_name);
    join(b, sizeof b, dst, de->d_name);
    copy_file(a, b);
  }
  closedir(d);
}

static void rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) < 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
      if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
        continue;
      char sub[4096];
      join(sub, sizeof sub, path, de->d_name);
      rm_rf(sub);
    }
    if (d)
      closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Deterministic test input: runs, ramps and noise, so it compresses some. */
static uint8_t *make_input(size_t n, uint32_t seed) {
  uint8_t *p = malloc(n ? n : 1);
  assert_non_null(p);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    p[i] = (i / 512) % 3 == 0 ? (uint8_t)(x >> 24)
                              : (i / 512) % 3 == 1 ? (uint8_t)i : (uint8_t)seed;
  }
  return p;
}

/* ---- running the tool ------------------------------------------------------ */

typedef struct run_result {
  int status;                      /* exit code, or 128 + signal */
  uint8_t *out;
  size_t out_len;
  char *err;                       /* NUL-terminated */
  size_t err_len;
} run_result;

static void run_free(run_result *r) {
  free(r->out);
  free(r->err);
  memset(r, 0, sizeof *r);
}

static void cloexec_pipe(int fds[2]) {
  assert_int_equal(pipe(fds), 0);
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  fcntl(fds[1], F_SETFD, FD_CLOEXEC);
}

static pid_t spawn(char **args, const char *in_path, int out_fd, int err_fd) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 ||
        dup2(err_fd, 2) < 0)
      _exit(126);
    execv(cli_path, args);
    _exit(127);
  }
  return pid;
}

static int wait_status(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0)
    assert_int_equal(errno, EINTR);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void drain(int fd, uint8_t **buf, size_t *len, size_t *cap, bool *open_) {
  if (*cap - *len < 65536) {
    *cap = *cap * 2 + 65536;
    *buf = realloc(*buf, *cap + 1);
    assert_non_null(*buf);
  }
  ssize_t r = read(fd, *buf + *len, *cap - *len);
  if (r > 0)
    *len += (size_t)r;
  else if (r == 0 || errno != EINTR)
    *open_ = false;
}

/* Run b2stream with args (NULL-terminated list after "b2stream"), stdin
 * from in_path (NULL: /dev/null), collecting stdout and stderr. */
static void run_argv(run_result *r, const char *in_path, char **args) {
  int out[2], err[2];
  cloexec_pipe(out);
  cloexec_pipe(err);
  pid_t pid = spawn(args, in_path, out[1], err[1]);
  close(out[1]);
  close(err[1]);
  memset(r, 0, sizeof *r);
  size_t ocap = 0, ecap = 0;
  bool oo = true, eo = true;
  uint8_t *ebuf = NULL;
  while (oo || eo) {
    struct pollfd p[2] = {{oo ? out[0] : -1, POLLIN, 0},
                          {eo ? err[0] : -1, POLLIN, 0}};
    if (poll(p, 2, -1) < 0)
      continue;
    if (p[0].revents)
      drain(out[0], &r->out, &r->out_len, &ocap, &oo);
    if (p[1].revents)
      drain(err[0], &ebuf, &r->err_len, &ecap, &eo);
  }
  close(out[0]);
  close(err[0]);
  if (ebuf == NULL)
    ebuf = calloc(1, 1);
  ebuf[r->err_len] = '\0';
  r->err = (char *)ebuf;
  if (r->out == NULL)
    r->out = calloc(1, 1);
  r->out[r->out_len] = 0;   /* text output can be used as a string */
  r->status = wait_status(pid);
}

#define MAX_ARGS 40

static void vrun(run_result *r, const char *in_path, va_list ap) {
  char *args[MAX_ARGS + 2];
  int n = 0;
  args[n++] = (char *)"b2stream";
  for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
    assert_true(n <= MAX_ARGS);
    args[n++] = (char *)a;
  }
  args[n] = NULL;
  run_argv(r, in_path, args);
}

/* run(&r, arg, ..., NULL) */
static void run(run_result *r, ...) {
  va_list ap;
  va_start(ap, r);
  vrun(r, NULL, ap);
  va_end(ap);
}

/* run_in(&r, stdin_path, arg, ..., NULL) */
static void run_in(run_result *r, const char *in_path, ...) {
  va_list ap;
  va_start(ap, in_path);
  vrun(r, in_path, ap);
  va_end(ap);
}

static void expect_ok(const run_result *r, const char *what) {
  if (r->status != 0 || r->err_len != 0)
    fail_msg("%s: exit %d, stderr: %s", what, r->status, r->err);
}

/* Failure: non-zero exit (not a crash), nothing on stdout unless allowed,
 * exactly one line on stderr starting with "b2stream: ". */
static void expect_error_line(const run_result *r, const char *what) {
  if (r->status == 0 || r->status >= 126)
    fail_msg("%s: exit status %d, stderr: %s", what, r->status, r->err);
  const char *nl = strchr(r->err, '\n');
  if (strncmp(r->err, "b2stream: ", 10) != 0 || nl == NULL ||
      nl[1] != '\0' || strlen(r->err) != r->err_len)
    fail_msg("%s: stderr is not one 'b2stream: ' line: [%s]", what, r->err);
}

static json_object *parse_json_out(const run_result *r, const char *what) {
  json_tokener *tok = json_tokener_new();
  json_object *o = json_tokener_parse_ex(tok, (const char *)r->out,
                                         (int)r->out_len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t used = (size_t)json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (o == NULL || jerr != json_tokener_success)
    fail_msg("%s: stdout is not JSON (%s): %.400s", what,
             json_tokener_error_desc(jerr), (const char *)r->out);
  /* one object, then the final newline only */
  while (used < r->out_len && r->out[used] == '\n')
    used++;
  if (used != r->out_len || r->out[r->out_len - 1] != '\n')
    fail_msg("%s: bytes after the JSON object: %zu of %zu", what, used,
             r->out_len);
  return o;
}

/* ---- JSON access ---------------------------------------------------------- */

static json_object *jget(json_object *o, const char *key) {
  json_object *v = NULL;
  return o != NULL && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int64_t jint(json_object *o, const char *key) {
  return json_object_get_int64(jget(o, key));
}

static const char *jstr(json_object *o, const char *key) {
  json_object *v = jget(o, key);
  return v && json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : "(missing)";
}

static bool jbool(json_object *o, const char *key) {
  return json_object_get_boolean(jget(o, key));
}

/* key present, possibly with the value null */
static bool jhas(json_object *o, const char *key) {
  json_object *v;
  return o != NULL && json_object_object_get_ex(o, key, &v);
}

/* Array `key` of o equals v[0..n). */
static bool jints_equal(json_object *o, const char *key, const int64_t *v,
                        size_t n) {
  json_object *a = jget(o, key);
  if (a == NULL || !json_object_is_type(a, json_type_array) ||
      json_object_array_length(a) != n)
    return false;
  for (size_t k = 0; k < n; k++)
    if (json_object_get_int64(json_object_array_get_idx(a, k)) != v[k])
      return false;
  return true;
}

static bool jbytes_equal(json_object *o, const char *key, const uint8_t *v,
                         size_t n) {
  int64_t w[16];
  for (size_t k = 0; k < n; k++)
    w[k] = v[k];
  return jints_equal(o, key, w, n);
}

/* ---- vectors --------------------------------------------------------------- */

static void need_vectors(void) {
  if (manifest != NULL && manifest_json != NULL)
    return;
  static bool told;
  if (vectors_missing) {
    if (!told)
      print_message("SKIPPED: %s\n", load_error);
    told = true;
    skip();
  }
  fail_msg("cannot load the vectors' manifest: %s", load_error);
}

static json_object *json_entry(const char *name) {
  json_object *ents = jget(manifest_json, "entries");
  size_t n = json_object_array_length(ents);
  for (size_t i = 0; i < n; i++) {
    json_object *e = json_object_array_get_idx(ents, i);
    if (!strcmp(json_object_get_string(jget(e, "name")), name))
      return e;
  }
  return NULL;
}

static bool is_frame(const mf_entry *e) {
  return !strcmp(e->kind, "cframe") || !strcmp(e->kind, "sframe");
}

static bool is_chunk(const mf_entry *e) { return !strcmp(e->kind, "chunk"); }

/* Frames at byte 0 of their file, and chunks.  Frames inside larger files
 * (none in the current set) need --offset: test_offset_embedded embeds the
 * contiguous ones itself. */
static bool cli_entry(const mf_entry *e) {
  return (is_frame(e) && e->offset == 0) || is_chunk(e);
}

static void entry_path(const mf_entry *e, char *out, size_t n) {
  snprintf(out, n, "%s/%s", manifest->dir, e->file);
}

static const char *special_name(int kind) {
  static const char *const names[] = {"none", "zeros", "nan", "value",
                                      "uninit"};
  return kind >= 0 && kind <= 4 ? names[kind] : "?";
}

/* ---- core reference ---------------------------------------------------------- */

/* What the core decodes from PATH (frame or chunk file), chunk after chunk
 * into zero-filled buffers; sizes[i] gets chunk i's nbytes. */
static uint8_t *core_decode_all(const char *path, bool chunk_file,
                                size_t *len, int64_t *nchunks,
                                int32_t **sizes) {
  b2s_ctx *ctx = b2s_ctx_new();
  assert_non_null(ctx);
  uint8_t *all = NULL;
  size_t total = 0;
  if (chunk_file) {
    size_t clen;
    uint8_t *c = ts_read_file(path, &clen);
    b2s_chunk_info ci;
    assert_int_equal(b2s_chunk_info_get(c, clen, &ci), 0);
    all = calloc(1, (size_t)ci.nbytes + 1);
    assert_int_equal(b2s_decompress(ctx, c, clen, all, (size_t)ci.nbytes),
                     ci.nbytes);
    *sizes = malloc(sizeof **sizes);
    (*sizes)[0] = ci.nbytes;
    *nchunks = 1;
    total = (size_t)ci.nbytes;
    free(c);
  } else {
    b2s_frame *f;
    b2s_frame_error err;
    assert_int_equal(b2s_frame_open(path, &f, &err), 0);
    *nchunks = b2s_frame_nchunks(f);
    *sizes = malloc((size_t)*nchunks * sizeof **sizes + 1);
    for (int64_t i = 0; i < *nchunks; i++) {
      int32_t nb;
      assert_int_equal(b2s_frame_chunk_sizes(f, i, NULL, &nb), 0);
      all = realloc(all, total + (size_t)nb + 1);
      assert_non_null(all);
      memset(all + total, 0, (size_t)nb);
      assert_int_equal(
          b2s_frame_chunk_decompress(f, i, ctx, all + total, (size_t)nb), nb);
      (*sizes)[i] = nb;
      total += (size_t)nb;
    }
    b2s_frame_free(f);
  }
  b2s_ctx_free(ctx);
  *len = total;
  return all ? all : calloc(1, 1);
}

/* ---- help and arguments ------------------------------------------------------- */

static const char *const subcommands[] = {"info",    "ls",      "cat",
                                          "verify",  "recover", "convert",
                                          "pack",    "unpack"};
#define NSUB (sizeof subcommands / sizeof subcommands[0])

static void test_help(void **state) {
  (void)state;
  run_result r;
  run(&r, "--help", NULL);
  expect_ok(&r, "--help");
  for (size_t k = 0; k < NSUB; k++) {
    char line[64];
    snprintf(line, sizeof line, "\n  %s ", subcommands[k]);
    CHECK(strstr((char *)r.out, line) != NULL, "--help does not list %s",
          subcommands[k]);
  }
  run_free(&r);
  for (size_t k = 0; k < NSUB; k++) {
    for (int form = 0; form < 3; form++) {
      char want[64];
      snprintf(want, sizeof want, "usage: b2stream %s ", subcommands[k]);
      if (form == 0)
        run(&r, subcommands[k], "--help", NULL);
      else if (form == 1)
        run(&r, subcommands[k], "-h", NULL);
      else   /* --help wins over whatever else is there */
        run(&r, subcommands[k], "x", "--bogus", "--help", NULL);
      expect_ok(&r, subcommands[k]);
      CHECK(!strncmp((char *)r.out, want, strlen(want)),
            "%s --help starts with [%.40s]", subcommands[k], (char *)r.out);
      run_free(&r);
    }
  }
  assert_int_equal(failures, 0);
}

static void test_bad_args(void **state) {
  (void)state;
  char in[1024], frame[1024], out[1024], garbage[1024], missing[1024],
      longname[64];
  tmp_path(in, sizeof in, "in");
  tmp_path(frame, sizeof frame, "frame");
  tmp_path(out, sizeof out, "out");
  tmp_path(garbage, sizeof garbage, "garbage");
  tmp_path(missing, sizeof missing, "missing");
  uint8_t *data = make_input(10000, 1);
  write_file(in, data, 10000);
  free(data);
  write_file(garbage, "this is neither a frame nor a chunk, honestly", 45);
  run_result r;
  run(&r, "pack", "--chunk-bytes", "4K", in, frame, NULL);
  expect_ok(&r, "pack");
  run_free(&r);
  memset(longname, 'n', 32);
  strcpy(longname + 32, "=00");

  /* Each case: the arguments after "b2stream". */
  const char *cases[][8] = {
      {NULL},
      {"frobnicate", NULL},
      {"info", NULL},
      {"info", frame, "--bogus", NULL},
      {"info", frame, "extra", NULL},
      {"info", "--json=yes", frame, NULL},
      {"info", missing, NULL},
      {"info", garbage, NULL},
      {"ls", NULL},
      {"ls", frame, "--chunk", NULL},
      {"ls", garbage, NULL},
      {"cat", frame, "--chunk", NULL},
      {"cat", frame, "--chunk", "abc", NULL},
      {"cat", frame, "--chunk", "-1", NULL},
      {"cat", frame, "--chunk", "99", NULL},
      {"cat", missing, NULL},
      {"verify", NULL},
      {"verify", frame, frame, NULL},
      {"verify", "--deep", frame, NULL},
      {"verify", garbage, NULL},
      {"recover", NULL},
      {"recover", frame, "--deep=1", NULL},
      {"recover", missing, NULL},
      {"convert", frame, NULL},
      {"convert", frame, in, NULL},
      {"convert", frame, out, "--sideways", NULL},
      {"convert", garbage, out, NULL},
      {"convert", missing, out, NULL},
      {"pack", in, NULL},
      {"pack", "--clevel", "10", in, out, NULL},
      {"pack", "--clevel", in, out, NULL},
      {"pack", "--codec", "snappy", in, out, NULL},
      {"pack", "--typesize", "0", in, out, NULL},
      {"pack", "--typesize", "256", in, out, NULL},
      {"pack", "--filters", "shuffle,foo", in, out, NULL},
      {"pack", "--filters", "truncprec", in, out, NULL},
      {"pack", "--filters", "shuffle,,delta", in, out, NULL},
      {"pack", "--filters", "delta,delta,delta,delta,delta,delta,delta", in,
       out, NULL},
      {"pack", "--chunk-bytes", "0", in, out, NULL},
      {"pack", "--chunk-bytes", "3X", in, out, NULL},
      {"pack", "--chunk-bytes", "4G", in, out, NULL},
      {"pack", "--chunk-bytes", "-5", in, out, NULL},
      {"pack", "--meta", "novalue", in, out, NULL},
      {"pack", "--meta", "=00", in, out, NULL},
      {"pack", "--meta", "x=abc", in, out, NULL},
      {"pack", "--meta", "x=zz", in, out, NULL},
      {"pack", "--meta", "x=00", "--meta", "x=01", in, out, NULL},
      {"pack", "--meta", longname, in, out, NULL},
      {"pack", "--sparse=1", in, out, NULL},
      {"pack", missing, out, NULL},
      {"pack", in, frame, NULL},
      {"pack", in, out, "third", NULL},
      {"pack", in, "-", NULL},
      {"pack", "-x", in, out, NULL},
      {"convert", frame, "-", NULL},
      {"info", "-json", frame, NULL},
      {"unpack", frame, NULL},
      {"unpack", frame, in, NULL},
      {"unpack", missing, out, NULL},
      {"unpack", garbage, out, NULL},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char *args[10] = {(char *)"b2stream"};
    char what[512] = "b2stream";
    for (int a = 0; cases[k][a] != NULL; a++) {
      args[a + 1] = (char *)cases[k][a];
      snprintf(what + strlen(what), sizeof what - strlen(what), " %s",
               cases[k][a]);
    }
    run_argv(&r, NULL, args);
    expect_error_line(&r, what);
    CHECK(r.out_len == 0, "%s: wrote %zu bytes to stdout", what, r.out_len);
    /* a failed command leaves no output behind */
    CHECK(!exists(out), "%s: left %s behind", what, out);
    rm_rf(out);
    run_free(&r);
  }
  /* and the inputs are untouched */
  size_t len;
  uint8_t *p = ts_read_file(in, &len);
  CHECK(len == 10000, "input changed size");
  free(p);
  run(&r, "verify", frame, NULL);
  expect_ok(&r, "frame still verifies");
  run_free(&r);
  assert_int_equal(failures, 0);
}

/* ---- vectors: cat, info, ls, verify ---------------------------------------- */

static void check_cat_entry(const mf_entry *e) {
  char path[4096];
  entry_path(e, path, sizeof path);
  size_t want_len;
  int64_t n;
  int32_t *sizes;
  uint8_t *want = core_decode_all(path, is_chunk(e), &want_len, &n, &sizes);
  run_result r;
  run(&r, "cat", path, NULL);
  expect_ok(&r, e->name);
  CHECK(r.out_len == want_len && !memcmp(r.out, want, want_len),
        "%s: cat gives %zu bytes, core decodes %zu (or they differ)", e->name,
        r.out_len, want_len);
  CHECK((size_t)n == e->nchunks, "%s: %lld chunks, manifest %zu", e->name,
        (long long)n, e->nchunks);
  size_t pos = 0;
  for (size_t i = 0; i < e->nchunks && i < (size_t)n; i++) {
    const mf_chunk *c = &e->chunks[i];
    CHECK(sizes[i] == c->nbytes, "%s: chunk %zu nbytes", e->name, i);
    if (pos + (size_t)sizes[i] > r.out_len)
      break;
    char sha[65];
    vec_sha256_hex(r.out + pos, (size_t)sizes[i], sha);
    if (c->content_defined) {
      CHECK(!strcmp(sha, c->sha256), "%s: chunk %zu SHA-256 %s, manifest %s",
            e->name, i, sha, c->sha256);
    } else {  /* uninitialised: the tool promises zeros */
      bool zero = true;
      for (int32_t b = 0; b < sizes[i]; b++)
        zero = zero && r.out[pos + (size_t)b] == 0;
      CHECK(zero, "%s: uninit chunk %zu is not zeros", e->name, i);
    }
    pos += (size_t)sizes[i];
  }
  run_free(&r);
  if (n == 0) {
    free(sizes);
    free(want);
    return;
  }
  /* one chunk: the last */
  char num[32];
  snprintf(num, sizeof num, "%lld", (long long)(n - 1));
  run(&r, "cat", "--chunk", num, path, NULL);
  expect_ok(&r, e->name);
  size_t last = (size_t)sizes[n - 1];
  CHECK(r.out_len == last && !memcmp(r.out, want + want_len - last, last),
        "%s: cat --chunk %s differs", e->name, num);
  run_free(&r);
  free(sizes);
  free(want);
}

static void test_vectors_cat(void **state) {
  (void)state;
  need_vectors();
  int seen = 0;
  for (size_t k = 0; k < manifest->nentries; k++) {
    if (!cli_entry(&manifest->entries[k]))
      continue;
    check_cat_entry(&manifest->entries[k]);
    seen++;
  }
  CHECK(seen >= 100, "only %d vectors", seen);
  assert_int_equal(failures, 0);
}

/* Stored bytes the manifest implies: each stored chunk once. */
static int64_t manifest_stored(const mf_entry *e) {
  int64_t sum = 0;
  for (size_t i = 0; i < e->nchunks; i++) {
    const mf_chunk *c = &e->chunks[i];
    bool dup = false;
    for (size_t j = 0; j < i; j++)
      dup = dup || (!e->chunks[j].stored_as_special_index_value &&
                    e->chunks[j].index_value == c->index_value);
    if (!c->stored_as_special_index_value && !dup)
      sum += c->cbytes;
  }
  return sum;
}

/* Sparse frame: size of all files, and of chunk files no index entry names. */
static void manifest_sparse_files(const mf_entry *e, json_object *me,
                                  int64_t *total, int64_t *unref) {
  json_object *files = jget(me, "files");
  *total = *unref = 0;
  for (size_t k = 0; k < json_object_array_length(files); k++) {
    json_object *f = json_object_array_get_idx(files, k);
    const char *name = jstr(f, "name");
    int64_t size = jint(f, "size");
    *total += size;
    unsigned id;
    char tail[16];
    if (strlen(name) != 14 || strspn(name, "0123456789ABCDEF") != 8 ||
        sscanf(name, "%8X%15s", &id, tail) != 2 || strcmp(tail, ".chunk"))
      continue;
    bool ref = false;
    for (size_t i = 0; i < e->nchunks; i++)
      ref = ref || (!e->chunks[i].stored_as_special_index_value &&
                    e->chunks[i].index_value == (int64_t)id);
    if (!ref)
      *unref += size;
  }
}

static void check_info_metas(const mf_entry *e, json_object *me,
                             json_object *o) {
  json_object *want = jget(me, "metalayers"), *got = jget(o, "metalayers");
  size_t n = json_object_array_length(want);
  CHECK(got && json_object_array_length(got) == n, "%s: metalayer count",
        e->name);
  for (size_t k = 0; got && k < n && k < json_object_array_length(got); k++) {
    json_object *w = json_object_array_get_idx(want, k);
    json_object *g = json_object_array_get_idx(got, k);
    CHECK(!strcmp(jstr(w, "name"), jstr(g, "name")) &&
              jint(g, "size") == (int64_t)strlen(jstr(w, "hex")) / 2,
          "%s: metalayer %zu is %s/%lld", e->name, k, jstr(g, "name"),
          (long long)jint(g, "size"));
  }
  want = jget(me, "vlmetalayers");
  got = jget(o, "vlmetalayers");
  n = json_object_array_length(want);
  CHECK(got && json_object_array_length(got) == n, "%s: vlmetalayer count",
        e->name);
  for (size_t k = 0; got && k < n && k < json_object_array_length(got); k++) {
    json_object *w = json_object_array_get_idx(want, k);
    json_object *g = json_object_array_get_idx(got, k);
    CHECK(!strcmp(jstr(w, "name"), jstr(g, "name")) &&
              jint(g, "size") == (int64_t)strlen(jstr(w, "hex")) / 2 &&
              jint(g, "stored_size") == jint(w, "stored_len"),
          "%s: vlmetalayer %zu is %s", e->name, k, jstr(g, "name"));
  }
  json_object *nd = jget(o, "b2nd");
  if (!e->b2nd.present) {
    CHECK(nd == NULL && jhas(o, "b2nd"), "%s: b2nd should be null", e->name);
    return;
  }
  const vec_b2nd *v = &e->b2nd.nd;
  int64_t cs[VEC_B2ND_MAXDIM], bs[VEC_B2ND_MAXDIM];
  for (int d = 0; d < v->ndim; d++)
    cs[d] = v->chunkshape[d], bs[d] = v->blockshape[d];
  CHECK(jint(nd, "ndim") == v->ndim &&
            jints_equal(nd, "shape", v->shape, (size_t)v->ndim) &&
            jints_equal(nd, "chunkshape", cs, (size_t)v->ndim) &&
            jints_equal(nd, "blockshape", bs, (size_t)v->ndim),
        "%s: b2nd layout", e->name);
  CHECK(!strcmp(jstr(nd, "dtype"), jstr(jget(me, "b2nd"), "dtype")),
        "%s: dtype %s", e->name, jstr(nd, "dtype"));
}

static void check_info_frame(const mf_entry *e, json_object *me,
                             json_object *o) {
  json_object *fr = jget(me, "frame");
  const mf_params *p = &e->params;
  bool sparse = !strcmp(e->kind, "sframe");
  CHECK(!strcmp(jstr(o, "kind"), e->kind), "%s: kind %s", e->name,
        jstr(o, "kind"));
  CHECK(jint(o, "nchunks") == jint(me, "nchunks"), "%s: nchunks", e->name);
  CHECK(jint(o, "typesize") == jint(me, "typesize"), "%s: typesize", e->name);
  CHECK(jint(o, "nbytes") == jint(me, "nbytes"), "%s: nbytes", e->name);
  CHECK(jint(o, "chunksize") == jint(me, "chunksize"), "%s: chunksize",
        e->name);
  const char *kind_want = jint(me, "chunksize") > 0 ? "fixed" : "variable";
  json_object *kind_got = jget(o, "chunksize_kind");
  CHECK(kind_got && json_object_is_type(kind_got, json_type_string) &&
            strcmp(json_object_get_string(kind_got), kind_want) == 0,
        "%s: chunksize_kind", e->name);
  CHECK(jint(o, "format_version") == jint(fr, "format_version"),
        "%s: format_version", e->name);
  CHECK(!strcmp(jstr(o, "codec"), p->codec) &&
            jint(o, "compcode") == p->compcode &&
            jint(o, "clevel") == p->clevel,
        "%s: codec %s/%lld clevel %lld", e->name, jstr(o, "codec"),
        (long long)jint(o, "compcode"), (long long)jint(o, "clevel"));
  uint8_t fm[B2S_MAX_FILTERS];
  for (int k = 0; k < B2S_MAX_FILTERS; k++)
    fm[k] = (uint8_t)p->filters_meta[k];
  CHECK(jbytes_equal(o, "filters", p->filters, B2S_MAX_FILTERS) &&
            jbytes_equal(o, "filters_meta", fm, B2S_MAX_FILTERS),
        "%s: filters", e->name);
  CHECK(jint(o, "blocksize") == jint(fr, "blocksize"), "%s: blocksize",
        e->name);
  CHECK(jint(o, "header_len") == jint(fr, "header_len") &&
            jint(o, "frame_len") == jint(fr, "frame_len") &&
            jint(o, "data_bytes") == jint(fr, "cbytes"),
        "%s: header_len/frame_len/data_bytes", e->name);
  CHECK(jint(o, "index_offset") == jint(fr, "index_chunk_offset") &&
            jint(o, "index_cbytes") == jint(fr, "index_chunk_cbytes") &&
            jint(o, "trailer_offset") == jint(fr, "trailer_offset") &&
            jint(o, "trailer_len") == jint(fr, "trailer_len"),
        "%s: layout", e->name);
  int64_t stored = manifest_stored(e), holes, file_size;
  if (sparse) {
    manifest_sparse_files(e, me, &file_size, &holes);
  } else {
    file_size = jint(fr, "file_size");
    holes = jint(fr, "cbytes") - stored;
  }
  CHECK(jint(o, "cbytes") == stored, "%s: cbytes %lld, expected %lld",
        e->name, (long long)jint(o, "cbytes"), (long long)stored);
  CHECK(jint(o, "holes") == holes, "%s: holes %lld, expected %lld", e->name,
        (long long)jint(o, "holes"), (long long)holes);
  CHECK(jint(o, "file_size") == file_size, "%s: file_size %lld, expected %lld",
        e->name, (long long)jint(o, "file_size"), (long long)file_size);
  json_object *ratio = jget(o, "ratio");
  if (stored == 0)
    CHECK(jhas(o, "ratio") && ratio == NULL, "%s: ratio not null", e->name);
  else
    CHECK(fabs(json_object_get_double(ratio) -
               (double)jint(me, "nbytes") / (double)stored) < 0.001,
          "%s: ratio", e->name);
  check_info_metas(e, me, o);
}

static void check_info_chunk(const mf_entry *e, json_object *me,
                             json_object *o) {
  const mf_header *h = &e->header;
  CHECK(!strcmp(jstr(o, "kind"), "chunk"), "%s: kind", e->name);
  CHECK(jint(o, "version") == h->version &&
            jint(o, "versionlz") == h->versionlz &&
            jint(o, "flags") == h->flags && jint(o, "typesize") == h->typesize,
        "%s: version/versionlz/flags/typesize", e->name);
  CHECK(jint(o, "nbytes") == h->nbytes && jint(o, "cbytes") == h->cbytes &&
            jint(o, "blocksize") == h->blocksize,
        "%s: nbytes/cbytes/blocksize", e->name);
  CHECK(jint(o, "header_len") == (h->extended_header ? 32 : 16),
        "%s: header_len", e->name);
  CHECK(jint(o, "compformat") == h->compformat &&
            jbool(o, "dont_split") == h->dont_split,
        "%s: compformat/dont_split", e->name);
  CHECK(jint(o, "file_size") == jint(me, "file_size"), "%s: file_size",
        e->name);
  if (h->special == 0)
    CHECK(jbool(o, "memcpyed") == h->memcpyed, "%s: memcpyed", e->name);
  if (!h->has_ext) {
    CHECK(jint(o, "compcode") == h->compformat, "%s: compcode", e->name);
    return;
  }
  CHECK(jint(o, "compcode") == h->udcompcode, "%s: compcode %lld", e->name,
        (long long)jint(o, "compcode"));
  CHECK(jbytes_equal(o, "filters", h->filters, B2S_MAX_FILTERS) &&
            jbytes_equal(o, "filters_meta", h->filters_meta, B2S_MAX_FILTERS),
        "%s: filters", e->name);
  CHECK(!strcmp(jstr(o, "special"), special_name(h->special)),
        "%s: special %s", e->name, jstr(o, "special"));
  CHECK(jbool(o, "use_dict") == h->use_dict &&
            jbool(o, "vl_blocks") == h->vl_blocks &&
            jint(o, "nblocks") == h->nblocks,
        "%s: use_dict/vl_blocks/nblocks", e->name);
  CHECK(jint(o, "blosc2_flags") == h->blosc2_flags &&
            jint(o, "blosc2_flags2") == h->blosc2_flags2,
        "%s: blosc2 flags", e->name);
}

static void test_vectors_info_json(void **state) {
  (void)state;
  need_vectors();
  for (size_t k = 0; k < manifest->nentries; k++) {
    const mf_entry *e = &manifest->entries[k];
    if (!cli_entry(e))
      continue;
    char path[4096];
    entry_path(e, path, sizeof path);
    run_result r;
    run(&r, "info", "--json", path, NULL);
    expect_ok(&r, e->name);
    json_object *o = parse_json_out(&r, e->name);
    CHECK(!strcmp(jstr(o, "path"), path), "%s: path", e->name);
    if (is_chunk(e))
      check_info_chunk(e, json_entry(e->name), o);
    else
      check_info_frame(e, json_entry(e->name), o);
    json_object_put(o);
    run_free(&r);
    /* the text form works too and names the kind */
    run(&r, "info", path, NULL);
    expect_ok(&r, e->name);
    CHECK(strstr((char *)r.out, is_chunk(e) ? "kind:         chunk"
                                : !strcmp(e->kind, "sframe")
                                    ? "kind:         sparse frame"
                                    : "kind:         contiguous frame") != NULL,
          "%s: text info: %s", e->name, (char *)r.out);
    run_free(&r);
  }
  assert_int_equal(failures, 0);
}

static int special_of_entry(int64_t v) {
  return b2s_frame_entry_kind(v);
}

static void check_ls_chunk(const mf_entry *e, const mf_chunk *c,
                           json_object *g) {
  bool stored = !c->stored_as_special_index_value;
  CHECK(jint(g, "index") == c->index && jint(g, "nbytes") == c->nbytes &&
            jint(g, "cbytes") == c->cbytes && jbool(g, "stored") == stored,
        "%s: chunk %lld sizes/stored", e->name, (long long)c->index);
  if (is_frame(e))
    CHECK(jint(g, "index_value") == c->index_value,
          "%s: chunk %lld index_value", e->name, (long long)c->index);
  json_object *ratio = jget(g, "ratio");
  CHECK(c->nbytes == 0 ? ratio == NULL
                       : fabs(json_object_get_double(ratio) -
                              (double)c->nbytes / (double)c->cbytes) < 0.001,
        "%s: chunk %lld ratio", e->name, (long long)c->index);
  if (!stored) {
    CHECK(!strcmp(jstr(g, "special"),
                  special_name(special_of_entry(c->index_value))) &&
              !jhas(g, "codec"),
          "%s: chunk %lld special entry", e->name, (long long)c->index);
    return;
  }
  const uint8_t *h = is_frame(e) ? c->header : NULL;
  if (h == NULL)
    return;   /* chunk files: the header is checked by the info test */
  CHECK(!strcmp(jstr(g, "special"), special_name((h[31] >> 4) & 7)),
        "%s: chunk %lld special %s", e->name, (long long)c->index,
        jstr(g, "special"));
  CHECK(jint(g, "compcode") == h[22] && jbytes_equal(g, "filters", h + 16, 6) &&
            jbytes_equal(g, "filters_meta", h + 24, 6),
        "%s: chunk %lld codec/filters", e->name, (long long)c->index);
}

static void test_vectors_ls_json(void **state) {
  (void)state;
  need_vectors();
  for (size_t k = 0; k < manifest->nentries; k++) {
    const mf_entry *e = &manifest->entries[k];
    if (!cli_entry(e))
      continue;
    char path[4096];
    entry_path(e, path, sizeof path);
    run_result r;
    run(&r, "ls", "--json", path, NULL);
    expect_ok(&r, e->name);
    json_object *o = parse_json_out(&r, e->name);
    json_object *chunks = jget(o, "chunks");
    CHECK(jint(o, "nchunks") == (int64_t)e->nchunks && chunks &&
              json_object_array_length(chunks) == e->nchunks,
          "%s: ls nchunks", e->name);
    for (size_t i = 0; chunks && i < e->nchunks &&
                       i < json_object_array_length(chunks);
         i++)
      check_ls_chunk(e, &e->chunks[i], json_object_array_get_idx(chunks, i));
    json_object_put(o);
    run_free(&r);
    /* text: a heading and one line per chunk */
    run(&r, "ls", path, NULL);
    expect_ok(&r, e->name);
    size_t lines = 0;
    for (size_t b = 0; b < r.out_len; b++)
      lines += r.out[b] == '\n';
    CHECK(lines == e->nchunks + 1, "%s: ls prints %zu lines", e->name, lines);
    run_free(&r);
  }
  assert_int_equal(failures, 0);
}

static void test_vectors_verify(void **state) {
  (void)state;
  need_vectors();
  for (size_t k = 0; k < manifest->nentries; k++) {
    const mf_entry *e = &manifest->entries[k];
    if (!cli_entry(e))
      continue;
    char path[4096], want[128];
    entry_path(e, path, sizeof path);
    int64_t nbytes = 0;
    for (size_t i = 0; i < e->nchunks; i++)
      nbytes += e->chunks[i].nbytes;
    snprintf(want, sizeof want, "ok: %zu chunks, %lld bytes\n", e->nchunks,
             (long long)nbytes);
    run_result r;
    run(&r, "verify", path, NULL);
    expect_ok(&r, e->name);
    CHECK(r.out_len == strlen(want) && !memcmp(r.out, want, r.out_len),
          "%s: verify says [%s], expected [%s]", e->name, (char *)r.out, want);
    run_free(&r);
  }
  assert_int_equal(failures, 0);
}

/* ---- corrupted copies ------------------------------------------------------- */

/* "at byte N" from an error line, or -1. */
static long long error_offset(const char *err) {
  const char *p = strstr(err, "(at byte ");
  return p ? strtoll(p + 9, NULL, 10) : -1;
}

static void test_verify_corrupt_cframe(void **state) {
  (void)state;
  need_vectors();
  const mf_entry *e = mf_find(manifest, "cframe_lz4_16chunks_short_last");
  assert_non_null(e);
  json_object *fr = jget(json_entry(e->name), "frame");
  char src[4096], bad[1024], cut[1024];
  entry_path(e, src, sizeof src);
  tmp_path(bad, sizeof bad, "bad.b2frame");
  tmp_path(cut, sizeof cut, "cut.b2frame");
  size_t len;
  uint8_t *p = ts_read_file(src, &len);
  /* chunk 3's first block offset (right after its 32-byte header) made to
   * point far outside the chunk: decoding must fail there */
  int64_t start = jint(fr, "header_len") + e->chunks[3].index_value;
  int64_t end = start + e->chunks[3].cbytes;
  static const uint8_t huge[4] = {0xff, 0xff, 0xff, 0x7f};
  memcpy(p + start + 32, huge, 4);
  write_file(bad, p, len);
  run_result r;
  run(&r, "verify", bad, NULL);
  expect_error_line(&r, "verify on a corrupted chunk");
  CHECK(r.out_len == 0, "verify printed on stdout");
  long long at = error_offset(r.err);
  CHECK(at >= start && at < end && strstr(r.err, ", chunk 3)") != NULL,
        "error does not point into chunk 3 [%lld, %lld): %s",
        (long long)start, (long long)end, r.err);
  run_free(&r);
  /* cat writes the three good chunks, then fails on the fourth */
  run(&r, "cat", bad, NULL);
  expect_error_line(&r, "cat on a corrupted chunk");
  CHECK(r.out_len == 3 * 16000, "cat wrote %zu bytes before failing",
        r.out_len);
  run_free(&r);
  /* the other chunks still come out one by one */
  run(&r, "cat", "--chunk", "4", bad, NULL);
  expect_ok(&r, "cat --chunk 4 of the corrupted frame");
  CHECK(r.out_len == 16000, "chunk 4: %zu bytes", r.out_len);
  run_free(&r);

  /* truncated frame: the trailer is gone */
  free(p);
  p = ts_read_file(src, &len);
  write_file(cut, p, len / 2);
  run(&r, "verify", cut, NULL);
  expect_error_line(&r, "verify on a truncated frame");
  at = error_offset(r.err);
  CHECK(at >= 0 && at <= (long long)len, "no byte offset: %s", r.err);
  run_free(&r);
  run(&r, "info", cut, NULL);
  expect_error_line(&r, "info on a truncated frame");
  run_free(&r);
  free(p);
  assert_int_equal(failures, 0);
}

/* A b2nd frame of (2, 10, 30) u2 images in blocks of (1, 3, 30): chunks of
 * `nbytes` (600 unpadded, 720 padded to whole blocks as c-blosc2 stores
 * them) in Blosc2 blocks of `block` bytes. */
static void make_b2nd_frame(const char *path, int32_t nbytes, int32_t block) {
  b2s_b2nd nd = {.ndim = 3, .shape = {2, 10, 30}, .chunkshape = {1, 10, 30},
                 .blockshape = {1, 3, 30}, .has_dtype = true, .dtype = "<u2",
                 .dtype_len = 3};
  b2s_frame_metas metas;
  b2s_frame_metas_init(&metas);
  assert_true(b2s_frame_metas_add_b2nd(&metas, &nd) >= 0);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.cparams.typesize = 2;
  o.cparams.blocksize = block;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, false, &o, &metas, &w), 0);
  b2s_frame_metas_fini(&metas);
  uint8_t img[720] = {0};
  for (int i = 0; i < 600; i++)
    img[i] = (uint8_t)(i * 7);
  for (int i = 0; i < 2; i++)
    assert_true(b2s_fwriter_append_buffer(w, NULL, img, nbytes) > 0);
  assert_int_equal(b2s_fwriter_close(w), 0);
}

/* c-blosc2 reads a b2nd chunk padded to whole blocks, in the array's
 * blocks (python-blosc2 refuses the others: test_export_nxmx.py): verify
 * says so rather than ok. */
static void test_verify_b2nd_layout(void **state) {
  (void)state;
  static const struct { int32_t nbytes, block; bool ok; } C[] = {
    {720, 180, true}, {600, 180, false}, {720, 720, false},
  };
  for (size_t k = 0; k < sizeof C / sizeof C[0]; k++) {
    char path[1024];
    tmp_path(path, sizeof path, "nd.b2frame");
    make_b2nd_frame(path, C[k].nbytes, C[k].block);
    run_result r;
    run(&r, "verify", path, NULL);
    if (C[k].ok) {
      expect_ok(&r, "verify on whole blocks");
    } else {
      expect_error_line(&r, "verify on a chunk c-blosc2 cannot read");
      CHECK(strstr((char *)r.err, "c-blosc2 cannot read it") != NULL,
            "verify says [%s]", (char *)r.err);
    }
    run_free(&r);
  }
}

static void test_verify_corrupt_sframe(void **state) {
  (void)state;
  need_vectors();
  const mf_entry *e = mf_find(manifest, "sframe_blosclz_8chunks");
  assert_non_null(e);
  char src[4096], dir[1024], cf[2048];
  entry_path(e, src, sizeof src);
  tmp_path(dir, sizeof dir, "bad-sframe");
  copy_dir(src, dir);
  /* a chunk file cut short */
  join(cf, sizeof cf, dir, "00000002.chunk");
  assert_int_equal(truncate(cf, 100), 0);
  run_result r;
  run(&r, "verify", dir, NULL);
  expect_error_line(&r, "verify on a truncated chunk file");
  CHECK(strstr(r.err, "of 00000002.chunk, chunk 2)") != NULL &&
            error_offset(r.err) >= 0,
        "error does not name the chunk file: %s", r.err);
  run_free(&r);
  /* a chunk file missing */
  char orig[4096];
  join(orig, sizeof orig, src, "00000002.chunk");
  copy_file(orig, cf);   /* chunk 2 repaired */
  join(cf, sizeof cf, dir, "00000005.chunk");
  assert_int_equal(unlink(cf), 0);
  run(&r, "verify", dir, NULL);
  expect_error_line(&r, "verify with a chunk file missing");
  CHECK(strstr(r.err, "chunk 5)") != NULL, "missing chunk 5 not named: %s",
        r.err);
  run_free(&r);
  assert_int_equal(failures, 0);
}

static void test_verify_corrupt_chunk_file(void **state) {
  (void)state;
  need_vectors();
  const mf_entry *e = mf_find(manifest, "codec_lz4_cl5_shuffle_ts4");
  assert_non_null(e);
  assert_false(e->header.memcpyed);
  char src[4096], bad[1024];
  entry_path(e, src, sizeof src);
  tmp_path(bad, sizeof bad, "bad.chunk");
  size_t len;
  uint8_t *p = ts_read_file(src, &len);
  static const uint8_t huge[4] = {0xff, 0xff, 0xff, 0x7f};
  memcpy(p + 32, huge, 4);
  write_file(bad, p, len);
  run_result r;
  run(&r, "verify", bad, NULL);
  expect_error_line(&r, "verify on a corrupted chunk file");
  run_free(&r);
  run(&r, "cat", bad, NULL);
  expect_error_line(&r, "cat on a corrupted chunk file");
  CHECK(r.out_len == 0, "cat wrote %zu bytes", r.out_len);
  run_free(&r);
  free(p);
  assert_int_equal(failures, 0);
}

/* ---- pack / unpack ------------------------------------------------------------ */

/* The frame at path, read by the core: chunk count, nbytes and content. */
static void core_check_frame(const char *path, const uint8_t *data,
                             size_t len, int64_t nchunks, const char *what) {
  size_t got_len;
  int64_t n;
  int32_t *sizes;
  uint8_t *got = core_decode_all(path, false, &got_len, &n, &sizes);
  CHECK(n == nchunks, "%s: core sees %lld chunks, expected %lld", what,
        (long long)n, (long long)nchunks);
  CHECK(got_len == len && !memcmp(got, data, len),
        "%s: core decodes %zu bytes, input %zu (or they differ)", what,
        got_len, len);
  free(sizes);
  free(got);
}

static void pack_roundtrip(size_t size, bool sparse, bool via_stdin) {
  char in[1024], frame[1024], out[1024], what[128];
  snprintf(what, sizeof what, "%zu bytes %s%s", size,
           sparse ? "sparse" : "contiguous", via_stdin ? " from stdin" : "");
  tmp_path(in, sizeof in, "in");
  tmp_path(frame, sizeof frame, "frame");
  tmp_path(out, sizeof out, "out");
  uint8_t *data = make_input(size, (uint32_t)size);
  write_file(in, data, size);
  run_result r;
  if (via_stdin)
    run_in(&r, in, "pack", "--chunk-bytes", "4K", sparse ? "--sparse" : "--",
           "-", frame, NULL);
  else
    run(&r, "pack", "--chunk-bytes=4096", in, frame,
        sparse ? "--sparse" : NULL, NULL);
  expect_ok(&r, what);
  CHECK(r.out_len == 0, "%s: pack wrote to stdout", what);
  run_free(&r);
  CHECK(is_dir(frame) == sparse, "%s: wrong frame type on disk", what);
  int64_t nchunks = (int64_t)((size + 4095) / 4096);
  core_check_frame(frame, data, size, nchunks, what);

  run(&r, "unpack", frame, out, NULL);
  expect_ok(&r, what);
  run_free(&r);
  size_t got_len;
  uint8_t *got = ts_read_file(out, &got_len);
  CHECK(got_len == size && !memcmp(got, data, size), "%s: unpack differs",
        what);
  free(got);
  run(&r, "unpack", frame, "-", NULL);
  expect_ok(&r, what);
  CHECK(r.out_len == size && !memcmp(r.out, data, size),
        "%s: unpack to stdout differs", what);
  run_free(&r);

  run(&r, "info", "--json", frame, NULL);
  expect_ok(&r, what);
  json_object *o = parse_json_out(&r, what);
  CHECK(jint(o, "nchunks") == nchunks && jint(o, "nbytes") == (int64_t)size &&
            !strcmp(jstr(o, "kind"), sparse ? "sframe" : "cframe"),
        "%s: info says %lld chunks, %lld bytes, %s", what,
        (long long)jint(o, "nchunks"), (long long)jint(o, "nbytes"),
        jstr(o, "kind"));
  if (nchunks > 1)
    CHECK(jint(o, "chunksize") == 4096, "%s: chunksize", what);
  json_object_put(o);
  run_free(&r);
  char want[128];
  snprintf(want, sizeof want, "ok: %lld chunks, %zu bytes\n",
           (long long)nchunks, size);
  run(&r, "verify", frame, NULL);
  expect_ok(&r, what);
  CHECK(!strcmp((char *)r.out, want), "%s: verify says %s", what,
        (char *)r.out);
  run_free(&r);
  free(data);
}

static void test_pack_unpack_roundtrip(void **state) {
  (void)state;
  static const size_t sizes[] = {0, 1, 1000, 4096, 3 * 4096 + 123, 5 * 4096};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (int sparse = 0; sparse < 2; sparse++)
      pack_roundtrip(sizes[k], sparse, (k + (size_t)sparse) % 2 == 1);
  assert_int_equal(failures, 0);
}

static void test_pack_options(void **state) {
  (void)state;
  static const char *const codecs[] = {"blosclz", "lz4", "lz4hc", "zlib",
                                       "zstd"};
  static const int codes[] = {0, 1, 2, 4, 5};
  char in[1024];
  tmp_path(in, sizeof in, "in");
  size_t size = 25000;
  uint8_t *data = make_input(size, 7);
  write_file(in, data, size);
  for (size_t k = 0; k < 5; k++) {
    char frame[1024];
    tmp_path(frame, sizeof frame, "frame");
    run_result r;
    run(&r, "pack", "--codec", codecs[k], "--clevel", "9", "--typesize", "4",
        "--filters", "delta,shuffle", "--chunk-bytes", "10000", in, frame,
        NULL);
    expect_ok(&r, codecs[k]);
    run_free(&r);
    core_check_frame(frame, data, size, 3, codecs[k]);
    run(&r, "info", "--json", frame, NULL);
    json_object *o = parse_json_out(&r, codecs[k]);
    static const int64_t want_filters[6] = {0, 0, 0, 0, 3, 1};
    CHECK(!strcmp(jstr(o, "codec"), codecs[k]) &&
              jint(o, "compcode") == codes[k] && jint(o, "clevel") == 9 &&
              jint(o, "typesize") == 4 &&
              jints_equal(o, "filters", want_filters, 6) &&
              !strcmp(jstr(o, "filters_str"), "delta,shuffle"),
          "%s: header defaults %.300s", codecs[k], (char *)r.out);
    json_object_put(o);
    run_free(&r);
    run(&r, "ls", "--json", frame, NULL);
    o = parse_json_out(&r, codecs[k]);
    json_object *chunks = jget(o, "chunks");
    for (size_t i = 0; i < json_object_array_length(chunks); i++) {
      json_object *c = json_object_array_get_idx(chunks, i);
      CHECK(!strcmp(jstr(c, "codec"), codecs[k]) &&
                jints_equal(c, "filters", want_filters, 6) &&
                jint(c, "nbytes") == (i < 2 ? 10000 : 5000),
            "%s: chunk %zu is %s", codecs[k], i, jstr(c, "codec"));
    }
    json_object_put(o);
    run_free(&r);
  }

  /* truncprec is lossy: the output is the input with the low mantissa
   * bits cleared */
  char frame[1024], fin[1024];
  tmp_path(frame, sizeof frame, "frame");
  tmp_path(fin, sizeof fin, "floats");
  float fl[3000];
  for (int i = 0; i < 3000; i++)
    fl[i] = 1.0f + (float)i * 0.001234f;
  write_file(fin, fl, sizeof fl);
  run_result r;
  run(&r, "pack", "--typesize", "4", "--filters", "truncprec:10,shuffle", fin,
      frame, NULL);
  expect_ok(&r, "truncprec");
  run_free(&r);
  uint8_t want[sizeof fl];
  memcpy(want, fl, sizeof fl);
  assert_int_equal(vec_truncprec(want, sizeof want, 4, 10), 0);
  assert_memory_not_equal(want, fl, sizeof fl);
  core_check_frame(frame, want, sizeof want, 1, "truncprec");
  run(&r, "cat", frame, NULL);
  CHECK(r.out_len == sizeof want && !memcmp(r.out, want, sizeof want),
        "truncprec: cat differs");
  run_free(&r);

  /* size units: 1K = 1024, 2KB = 2000, default 4 MiB */
  static const struct {
    const char *opt;
    size_t size;
    int64_t nchunks;
  } units[] = {{"1K", 3000, 3},   {"1KiB", 2048, 2}, {"2KB", 3000, 2},
               {"1k", 1025, 2},   {"3B", 7, 3},      {"1M", 1048577, 2},
               {NULL, (4u << 20) + 1, 2}};
  for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
    uint8_t *d = make_input(units[k].size, 3);
    write_file(in, d, units[k].size);
    tmp_path(frame, sizeof frame, "frame");
    if (units[k].opt)
      run(&r, "pack", "--chunk-bytes", units[k].opt, in, frame, NULL);
    else
      run(&r, "pack", in, frame, NULL);
    expect_ok(&r, units[k].opt ? units[k].opt : "default chunk size");
    run_free(&r);
    core_check_frame(frame, d, units[k].size, units[k].nchunks,
                     units[k].opt ? units[k].opt : "default chunk size");
    free(d);
  }
  free(data);
  assert_int_equal(failures, 0);
}

static void test_pack_meta(void **state) {
  (void)state;
  char in[1024], frame[1024];
  tmp_path(in, sizeof in, "in");
  tmp_path(frame, sizeof frame, "frame");
  uint8_t *data = make_input(5000, 9);
  write_file(in, data, 5000);
  run_result r;
  run(&r, "pack", "--meta", "alpha=0102fF", "--meta", "empty=", "--sparse",
      "--meta", "zz=00", in, frame, NULL);
  expect_ok(&r, "pack --meta");
  run_free(&r);
  b2s_frame *f;
  b2s_frame_error err;
  assert_int_equal(b2s_frame_open(frame, &f, &err), 0);
  const uint8_t *content;
  int32_t len;
  assert_int_equal(b2s_frame_meta_get(f, "alpha", &content, &len), 0);
  assert_int_equal(len, 3);
  assert_memory_equal(content, "\x01\x02\xff", 3);
  assert_int_equal(b2s_frame_meta_get(f, "empty", &content, &len), 0);
  assert_int_equal(len, 0);
  assert_int_equal(b2s_frame_meta_get(f, "zz", &content, &len), 0);
  assert_int_equal(len, 1);
  assert_int_equal(content[0], 0);
  b2s_frame_free(f);
  run(&r, "info", "--json", frame, NULL);
  json_object *o = parse_json_out(&r, "info of --meta frame");
  json_object *m = jget(o, "metalayers");
  static const char *const names[] = {"alpha", "empty", "zz"};
  static const int sizes[] = {3, 0, 1};
  CHECK(json_object_array_length(m) == 3, "metalayer count");
  for (size_t k = 0; k < 3 && k < json_object_array_length(m); k++) {
    json_object *x = json_object_array_get_idx(m, k);
    CHECK(!strcmp(jstr(x, "name"), names[k]) && jint(x, "size") == sizes[k],
          "metalayer %zu: %s", k, jstr(x, "name"));
  }
  json_object_put(o);
  run_free(&r);
  free(data);
  assert_int_equal(failures, 0);
}

/* Names with quotes, backslashes, control characters, UTF-8 and bytes that
 * are not UTF-8 still give valid JSON that decodes to the right text. */
static void test_json_escaping(void **state) {
  (void)state;
  char in[1024], frame[1024];
  tmp_path(in, sizeof in, "in");
  tmp_path(frame, sizeof frame, "frame");
  write_file(in, "x", 1);
  char m1[] = "q\"b\\s\tc\x01=00";
  char m2[] = "utf8-\xc3\xa9-\xe2\x82\xac=01";
  char m3[] = "bad-\xff\xc3(=02";
  run_result r;
  run(&r, "pack", "--meta", m1, "--meta", m2, "--meta", m3, in, frame, NULL);
  expect_ok(&r, "pack with odd names");
  run_free(&r);
  run(&r, "info", "--json", frame, NULL);
  expect_ok(&r, "info with odd names");
  json_object *o = parse_json_out(&r, "info with odd names");
  json_object *m = jget(o, "metalayers");
  assert_int_equal(json_object_array_length(m), 3);
  CHECK(!strcmp(jstr(json_object_array_get_idx(m, 0), "name"),
                "q\"b\\s\tc\x01"),
        "escaped name: %s", jstr(json_object_array_get_idx(m, 0), "name"));
  CHECK(!strcmp(jstr(json_object_array_get_idx(m, 1), "name"),
                "utf8-\xc3\xa9-\xe2\x82\xac"),
        "UTF-8 name: %s", jstr(json_object_array_get_idx(m, 1), "name"));
  /* invalid bytes read as Latin-1: U+00FF, U+00C3 */
  CHECK(!strcmp(jstr(json_object_array_get_idx(m, 2), "name"),
                "bad-\xc3\xbf\xc3\x83("),
        "non-UTF-8 name: %s", jstr(json_object_array_get_idx(m, 2), "name"));
  json_object_put(o);
  run_free(&r);
  assert_int_equal(failures, 0);
}

/* ---- convert ------------------------------------------------------------------ */

static bool metas_equal(const b2s_frame_metas *a, const b2s_frame_metas *b) {
  if (a->n != b->n)
    return false;
  for (int32_t k = 0; k < a->n; k++)
    if (strcmp(a->items[k].name, b->items[k].name) ||
        a->items[k].len != b->items[k].len ||
        (a->items[k].len &&
         memcmp(a->items[k].content, b->items[k].content,
                (size_t)a->items[k].len)))
      return false;
  return true;
}

/* b is a copy of a: same chunks byte for byte as stored, same metalayers,
 * same vlmetalayer contents, same compression defaults. */
static void compare_frames(const char *pa, const char *pb, const char *what) {
  b2s_frame *a, *b;
  b2s_frame_error err;
  assert_int_equal(b2s_frame_open(pa, &a, &err), 0);
  if (b2s_frame_open(pb, &b, &err) != 0)
    fail_msg("%s: converted frame does not open: %s at %lld", what,
             err.reason, (long long)err.offset);
  const b2s_frame_header *ha = b2s_frame_header_get(a),
                         *hb = b2s_frame_header_get(b);
  CHECK(ha->nbytes == hb->nbytes && ha->typesize == hb->typesize &&
            ha->codec_flags == hb->codec_flags &&
            ha->other_flags == hb->other_flags &&
            ha->blocksize == hb->blocksize &&
            !memcmp(ha->filters, hb->filters, 6) &&
            !memcmp(ha->filters_meta, hb->filters_meta, 6),
        "%s: header defaults differ", what);
  int64_t n = b2s_frame_nchunks(a);
  CHECK(n == b2s_frame_nchunks(b), "%s: %lld vs %lld chunks", what,
        (long long)n, (long long)b2s_frame_nchunks(b));
  for (int64_t i = 0; i < n && i < b2s_frame_nchunks(b); i++) {
    int32_t ca, cb;
    assert_int_equal(b2s_frame_chunk_sizes(a, i, &ca, NULL), 0);
    assert_int_equal(b2s_frame_chunk_sizes(b, i, &cb, NULL), 0);
    uint8_t *xa = malloc((size_t)ca), *xb = malloc((size_t)cb);
    assert_int_equal(b2s_frame_chunk_read(a, i, xa, (size_t)ca), ca);
    assert_int_equal(b2s_frame_chunk_read(b, i, xb, (size_t)cb), cb);
    CHECK(ca == cb && !memcmp(xa, xb, (size_t)ca),
          "%s: chunk %lld bytes differ", what, (long long)i);
    free(xa);
    free(xb);
  }
  CHECK(metas_equal(b2s_frame_metalayers(a), b2s_frame_metalayers(b)),
        "%s: metalayers differ", what);
  const b2s_frame_metas *va = b2s_frame_vlmetalayers(a),
                        *vb = b2s_frame_vlmetalayers(b);
  CHECK(va->n == vb->n, "%s: %d vs %d vlmetalayers", what, va->n, vb->n);
  for (int32_t k = 0; k < va->n && k < vb->n; k++) {
    uint8_t *ca, *cb;
    int32_t la, lb;
    assert_int_equal(b2s_frame_vlmeta_get(a, va->items[k].name, NULL, &ca, &la),
                     0);
    int rc = b2s_frame_vlmeta_get(b, va->items[k].name, NULL, &cb, &lb);
    CHECK(rc == 0 && la == lb && !memcmp(ca, cb, (size_t)la),
          "%s: vlmetalayer %s differs", what, va->items[k].name);
    free(ca);
    if (rc == 0)
      free(cb);
  }
  b2s_frame_free(a);
  b2s_frame_free(b);
}

static void convert_roundtrip(const char *src, const char *what) {
  bool sparse = is_dir(src);
  char one[1024], two[1024];
  tmp_path(one, sizeof one, "conv1");
  tmp_path(two, sizeof two, "conv2");
  run_result r;
  run(&r, "convert", src, one, NULL);
  expect_ok(&r, what);
  run_free(&r);
  CHECK(is_dir(one) == !sparse, "%s: first convert kept the type", what);
  run(&r, "convert", one, two, NULL);
  expect_ok(&r, what);
  run_free(&r);
  CHECK(is_dir(two) == sparse, "%s: second convert has the wrong type", what);
  compare_frames(src, one, what);
  compare_frames(src, two, what);
  run(&r, "verify", two, NULL);
  expect_ok(&r, what);
  run_free(&r);
}

static void test_convert_vectors(void **state) {
  (void)state;
  need_vectors();
  for (size_t k = 0; k < manifest->nentries; k++) {
    const mf_entry *e = &manifest->entries[k];
    if (!is_frame(e) || !cli_entry(e))
      continue;
    char src[4096];
    entry_path(e, src, sizeof src);
    convert_roundtrip(src, e->name);
  }
  assert_int_equal(failures, 0);
}

static void test_convert_options(void **state) {
  (void)state;
  char in[1024], frame[1024], dst[1024], other[1024];
  tmp_path(in, sizeof in, "in");
  tmp_path(frame, sizeof frame, "frame");
  uint8_t *data = make_input(30000, 5);
  write_file(in, data, 30000);
  run_result r;
  run(&r, "pack", "--chunk-bytes", "7000", "--codec", "zstd", "--meta",
      "m=c0ffee", in, frame, NULL);
  expect_ok(&r, "pack");
  run_free(&r);
  convert_roundtrip(frame, "packed frame");

  /* explicit type: same type as the source */
  tmp_path(dst, sizeof dst, "same");
  run(&r, "convert", "--contiguous", frame, dst, NULL);
  expect_ok(&r, "convert --contiguous");
  run_free(&r);
  CHECK(exists(dst) && !is_dir(dst), "--contiguous did not write a file");
  compare_frames(frame, dst, "--contiguous");
  tmp_path(other, sizeof other, "sparse");
  run(&r, "convert", frame, other, "--sparse", NULL);
  expect_ok(&r, "convert --sparse");
  run_free(&r);
  CHECK(is_dir(other), "--sparse did not write a directory");
  compare_frames(frame, other, "--sparse");

  /* an existing DST is refused and left alone */
  size_t before, after;
  free(ts_read_file(in, &before));
  run(&r, "convert", frame, in, NULL);
  expect_error_line(&r, "convert onto an existing file");
  run_free(&r);
  uint8_t *p = ts_read_file(in, &after);
  CHECK(after == before && !memcmp(p, data, after), "DST was modified");
  free(p);
  run(&r, "convert", frame, other, NULL);
  expect_error_line(&r, "convert onto an existing directory");
  run_free(&r);
  free(data);
  assert_int_equal(failures, 0);
}

/* ---- recover ---------------------------------------------------------------- */

/* A frame with 3 committed chunks whose commit of 2 more was cut after
 * `limit` bytes, as a crash would cut it. */
static void make_torn(const char *path, bool sparse, int64_t limit,
                      const uint8_t *data) {
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  b2s_fwriter *w;
  assert_int_equal(b2s_fwriter_create(path, sparse, &o, NULL, &w), 0);
  for (int i = 0; i < 3; i++)
    assert_true(b2s_fwriter_append_buffer(w, NULL, data + 1000 * i, 1000) > 0);
  assert_int_equal(b2s_fwriter_commit(w), 0);
  for (int i = 3; i < 5; i++)
    assert_true(b2s_fwriter_append_buffer(w, NULL, data + 1000 * i, 1000) > 0);
  b2s_fwriter_set_write_limit(w, limit);
  b2s_fwriter_commit(w);   /* may fail: that is the point */
  b2s_fwriter_free(w);
}

static void test_recover(void **state) {
  (void)state;
  uint8_t *data = make_input(5000, 11);
  static const int64_t limits[] = {0, 8, 100, 600, 5000, 9000};
  for (int sparse = 0; sparse < 2; sparse++) {
    for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
      char path[1024], what[96];
      tmp_path(path, sizeof path, "torn");
      snprintf(what, sizeof what, "%s frame cut after %lld bytes",
               sparse ? "sparse" : "contiguous", (long long)limits[k]);
      make_torn(path, sparse, limits[k], data);
      run_result r;
      run(&r, "recover", path, NULL);
      expect_ok(&r, what);
      long long n = -1;
      const char *p = strstr((char *)r.out, "\nnchunks:");
      if (p)
        n = strtoll(p + 9, NULL, 10);
      CHECK(n == 3 || n == 5, "%s: recover report: %s", what, (char *)r.out);
      run_free(&r);
      if (n != 3 && n != 5)
        continue;
      /* what was restored is exactly the first n chunks */
      run(&r, "cat", path, NULL);
      expect_ok(&r, what);
      CHECK(r.out_len == (size_t)n * 1000 &&
                !memcmp(r.out, data, (size_t)n * 1000),
            "%s: cat after recover differs", what);
      run_free(&r);
      char want[64];
      snprintf(want, sizeof want, "ok: %lld chunks, %lld bytes\n", n,
               n * 1000);
      run(&r, "verify", path, NULL);
      expect_ok(&r, what);
      CHECK(!strcmp((char *)r.out, want), "%s: %s", what, (char *)r.out);
      run_free(&r);
      /* a second run has nothing to do */
      run(&r, "recover", "--deep", path, NULL);
      expect_ok(&r, what);
      CHECK(strstr((char *)r.out, "state:          clean") != NULL,
            "%s: second recover: %s", what, (char *)r.out);
      run_free(&r);
    }
  }
  free(data);
  assert_int_equal(failures, 0);
}

static void test_recover_vector(void **state) {
  (void)state;
  need_vectors();
  const mf_entry *e = mf_find(manifest, "cframe_zstd_ops");
  assert_non_null(e);
  char src[4096], copy[1024];
  entry_path(e, src, sizeof src);
  tmp_path(copy, sizeof copy, "vector.b2frame");
  copy_file(src, copy);
  run_result r;
  run(&r, "recover", copy, NULL);
  expect_ok(&r, "recover on a c-blosc2 frame");
  CHECK(strstr((char *)r.out, "state:          clean") != NULL &&
            strstr((char *)r.out, "\nnchunks:        5\n") != NULL,
        "report: %s", (char *)r.out);
  run_free(&r);
  size_t a, b;
  uint8_t *x = ts_read_file(src, &a), *y = ts_read_file(copy, &b);
  CHECK(a == b && !memcmp(x, y, a), "recover changed a clean frame");
  free(x);
  free(y);
  assert_int_equal(failures, 0);
}

/* ---- frames inside larger files (--offset) ----------------------------------------- */

/* path = junk (`before` bytes, with a false frame magic in it) + the frame
 * file bare + `after` bytes of junk. */
static void embed(const char *bare, const char *path, size_t before,
                  size_t after) {
  size_t len;
  uint8_t *f = ts_read_file(bare, &len);
  uint8_t *p = make_input(before + len + after, 77);
  if (before >= 40)
    memcpy(p + 20, "\x9e\xa8" "b2frame\0", 10);   /* magic, then garbage */
  memcpy(p + before, f, len);
  write_file(path, p, before + len + after);
  free(p);
  free(f);
}

/* Run `cmd [--json] PATH [--offset OFF]`. */
static void run_at(run_result *r, const char *cmd, bool json, const char *path,
                   const char *off) {
  if (off == NULL)
    run(r, cmd, path, json ? "--json" : NULL, NULL);
  else if (json)
    run(r, cmd, path, "--json", "--offset", off, NULL);
  else
    run(r, cmd, "--offset", off, path, NULL);
}

/* info's text with the lines naming the file dropped (and file_size,
 * which counts bytes after the frame). */
static void drop_lines(run_result *r, bool size) {
  char *s = (char *)r->out, *w = s;
  for (char *line = s; *line;) {
    char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) + 1 : strlen(line);
    if (strncmp(line, "path:", 5) && strncmp(line, "offset:", 7) &&
        (!size || strncmp(line, "file_size:", 10))) {
      memmove(w, line, n);
      w += n;
    }
    line += n;
  }
  *w = '\0';
  r->out_len = (size_t)(w - s);
}

/* JSON objects equal except for the keys that name the file. */
static bool json_same_frame(json_object *a, json_object *b, int64_t offset,
                            size_t after) {
  if (jint(b, "offset") != offset)
    return false;
  json_object_object_foreach(a, key, va) {
    if (!strcmp(key, "path") || !strcmp(key, "offset"))
      continue;
    if (!strcmp(key, "file_size")) {
      if (jint(b, key) != json_object_get_int64(va) + (int64_t)after)
        return false;
    } else if (!json_object_equal(va, jget(b, key))) {
      return false;
    }
  }
  return json_object_object_length(a) == json_object_object_length(b);
}

/* The frame file `bare` embedded after `before` bytes (and followed by
 * `after`) reads as the bare file does with every command. */
static void check_embedded(const char *bare, size_t before, size_t after,
                           const char *what) {
  char path[1024], off[32];
  tmp_path(path, sizeof path, "embedded");
  embed(bare, path, before, after);
  snprintf(off, sizeof off, "%zu", before);
  static const char *const cmds[] = {"cat", "verify", "ls", "info"};
  for (size_t c = 0; c < 4; c++)
    for (int json = 0; json < (c >= 2 ? 2 : 1); json++) {
      run_result a, b;
      run_at(&a, cmds[c], json, bare, NULL);
      run_at(&b, cmds[c], json, path, off);
      expect_ok(&a, what);
      expect_ok(&b, what);
      if (json) {
        json_object *ja = parse_json_out(&a, what), *jb = parse_json_out(&b, what);
        if (c == 3)
          CHECK(json_same_frame(ja, jb, (int64_t)before, after),
                "%s: info --json differs: %s vs %s", what, (char *)a.out,
                (char *)b.out);
        else
          CHECK(json_object_equal(jget(ja, "chunks"), jget(jb, "chunks")) &&
                    jint(ja, "nchunks") == jint(jb, "nchunks") &&
                    !strcmp(jstr(ja, "kind"), jstr(jb, "kind")),
                "%s: ls --json differs", what);
        json_object_put(ja);
        json_object_put(jb);
      } else {
        if (c == 3) {
          drop_lines(&a, after > 0);
          drop_lines(&b, after > 0);
        }
        CHECK(a.out_len == b.out_len && !memcmp(a.out, b.out, a.out_len),
              "%s: %s differs: [%s] vs [%s]", what, cmds[c],
              c ? (char *)a.out : "", c ? (char *)b.out : "");
      }
      run_free(&a);
      run_free(&b);
    }
  run_result a, b;
  run(&a, "cat", "--chunk", "1", bare, NULL);
  run(&b, "cat", "--chunk=1", path, "--offset=" "0", "--offset", off, NULL);
  expect_ok(&b, what);
  CHECK(a.status == 0 && a.out_len == b.out_len &&
            !memcmp(a.out, b.out, a.out_len),
        "%s: cat --chunk 1 differs", what);
  run_free(&a);
  run_free(&b);
  rm_rf(path);
}

static void test_offset_embedded(void **state) {
  (void)state;
  char in[1024], frame[1024];
  tmp_path(in, sizeof in, "in");
  tmp_path(frame, sizeof frame, "frame");
  uint8_t *data = make_input(10000, 5);
  write_file(in, data, 10000);
  free(data);
  run_result r;
  run(&r, "pack", "--chunk-bytes", "3000", "--meta", "m=0102", in, frame,
      NULL);
  expect_ok(&r, "pack");
  run_free(&r);
  check_embedded(frame, 1000, 0, "packed frame after 1000 bytes");
  check_embedded(frame, 1, 333, "packed frame between junk");
  check_embedded(frame, 0, 10, "packed frame at 0 with junk after");
  char p[1024];
  tmp_path(p, sizeof p, "k");
  embed(frame, p, 1024, 0);
  run(&r, "verify", "--offset", "1K", p, NULL);
  expect_ok(&r, "--offset 1K");
  run_free(&r);
  rm_rf(p);
  if (manifest == NULL) {
    assert_int_equal(failures, 0);
    return;
  }
  for (size_t k = 0; k < manifest->nentries; k++) {
    const mf_entry *e = &manifest->entries[k];
    if (strcmp(e->kind, "cframe") || e->offset != 0)
      continue;
    char path[4096];
    entry_path(e, path, sizeof path);
    check_embedded(path, 4099, 17, e->name);
  }
  assert_int_equal(failures, 0);
}

/* Every offset near the file's start, around the embedded frame's start
 * and near the end; a prime stride elsewhere, which still meets each
 * command at each kind of byte (each try is a process: under the
 * sanitizers a thousand of them took minutes). */
static size_t offset_step(size_t k, size_t before, size_t len) {
  if (k < 64 || (k + 16 >= before && k < before + 64) || k + 40 >= len)
    return 1;
  return k < before + 200 ? 5 : 23;
}

/* Offsets where no frame starts fail with one error line (never a crash);
 * an error inside an embedded frame names its byte in the file. */
static void test_offset_wrong(void **state) {
  (void)state;
  char in[1024], frame[1024], path[1024];
  tmp_path(in, sizeof in, "in");
  tmp_path(frame, sizeof frame, "frame");
  tmp_path(path, sizeof path, "embedded");
  uint8_t *data = make_input(3000, 9);
  write_file(in, data, 3000);
  free(data);
  run_result r;
  run(&r, "pack", "--chunk-bytes", "1000", in, frame, NULL);
  expect_ok(&r, "pack");
  run_free(&r);
  enum { BEFORE = 300 };
  embed(frame, path, BEFORE, 50);
  size_t len;
  free(ts_read_file(path, &len));
  static const char *const cmds[] = {"info", "ls", "cat", "verify"};
  for (size_t k = 0; k <= len + 2; k += offset_step(k, BEFORE, len)) {
    if (k == BEFORE)
      continue;
    char off[32], what[96];
    snprintf(off, sizeof off, "%zu", k);
    snprintf(what, sizeof what, "%s --offset %zu", cmds[k % 4], k);
    run(&r, cmds[k % 4], path, "--offset", off, NULL);
    expect_error_line(&r, what);
    CHECK(r.status == 1, "%s: exit %d", what, r.status);
    CHECK(k != 20 || strstr(r.err, "at byte") != NULL,
          "%s: a false magic gives no offset: %s", what, r.err);
    CHECK(k == 20 || k >= len || strstr(r.err, "magic") != NULL,
          "%s: %s", what, r.err);
    run_free(&r);
  }
  run(&r, "info", path, "--offset", "99999999999", NULL);
  expect_error_line(&r, "offset beyond the file");
  CHECK(strstr(r.err, "no frame at byte 99999999999") != NULL, "%s", r.err);
  run_free(&r);
  static const char *const bad[] = {"-1", "x", "", "1Q", "99999999999999999999"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    run(&r, "verify", path, "--offset", bad[k], NULL);
    expect_error_line(&r, bad[k]);
    CHECK(r.status == 2, "--offset '%s': exit %d", bad[k], r.status);
    run_free(&r);
  }
  run(&r, "verify", tmpdir, "--offset", "0", NULL);
  expect_error_line(&r, "--offset on a directory");
  CHECK(r.status == 1 && strstr(r.err, "directory"), "%s", r.err);
  run_free(&r);
  run(&r, "unpack", frame, "-", "--offset", "0", NULL);
  CHECK(r.status == 2, "unpack takes no --offset: exit %d", r.status);
  run_free(&r);

  /* the trailer's length marker broken: same place, shifted by BEFORE */
  size_t flen;
  uint8_t *f = ts_read_file(frame, &flen);
  f[flen - 23] ^= 0xff;
  write_file(frame, f, flen);
  free(f);
  embed(frame, path, BEFORE, 0);
  run_result a;
  run(&a, "verify", frame, NULL);
  run(&r, "verify", path, "--offset", "300", NULL);
  expect_error_line(&a, "corrupt bare frame");
  expect_error_line(&r, "corrupt embedded frame");
  long long at_bare = error_offset(a.err), at = error_offset(r.err);
  CHECK(at_bare >= 0 && at == at_bare + BEFORE,
        "error offsets: bare %lld, embedded %lld: %s", at_bare, at, r.err);
  run_free(&a);
  run_free(&r);
  assert_int_equal(failures, 0);
}

/* A sparse frame whose middle chunk file is gone (deleted by hand, or by
 * an older recover running beside a writer): recover reports it and keeps
 * every other chunk readable, in order. */
static void test_recover_missing_chunk_file(void **state) {
  (void)state;
  char in[1024], frame[1024], gone[1100];
  tmp_path(in, sizeof in, "in");
  tmp_path(frame, sizeof frame, "holey");
  uint8_t *data = make_input(35000, 13);
  write_file(in, data, 35000);
  run_result r;
  run(&r, "pack", "--sparse", "--chunk-bytes", "7000", in, frame, NULL);
  expect_ok(&r, "pack --sparse");
  run_free(&r);
  join(gone, sizeof gone, frame, "00000002.chunk");
  assert_int_equal(unlink(gone), 0);
  run(&r, "recover", frame, NULL);
  expect_ok(&r, "recover with a missing chunk file");
  CHECK(strstr((char *)r.out, "\nnchunks:        4\n") != NULL &&
            strstr((char *)r.out, "\nmissing_files:  1\n") != NULL &&
            strstr((char *)r.out, "state:          restored") != NULL,
        "report: %s", (char *)r.out);
  run_free(&r);
  /* chunks 0, 1, 3, 4 in order */
  uint8_t *want = malloc(28000);
  memcpy(want, data, 14000);
  memcpy(want + 14000, data + 21000, 14000);
  run(&r, "cat", frame, NULL);
  expect_ok(&r, "cat after recover");
  CHECK(r.out_len == 28000 && !memcmp(r.out, want, 28000),
        "cat after recover: %zu bytes", r.out_len);
  run_free(&r);
  run(&r, "verify", frame, NULL);
  expect_ok(&r, "verify after recover");
  CHECK(!strcmp((char *)r.out, "ok: 4 chunks, 28000 bytes\n"), "%s",
        (char *)r.out);
  run_free(&r);
  run(&r, "recover", frame, NULL);
  expect_ok(&r, "second recover");
  CHECK(strstr((char *)r.out, "state:          clean") != NULL, "%s",
        (char *)r.out);
  run_free(&r);
  free(want);
  free(data);
  assert_int_equal(failures, 0);
}

/* A frame this process writes: recover and convert refuse it, naming this
 * process; the readers read it. */
static void test_locked_frame(void **state) {
  (void)state;
  uint8_t *data = make_input(5000, 17);
  char pid[32];
  snprintf(pid, sizeof pid, "PID %d", (int)getpid());
  for (int sparse = 0; sparse < 2; sparse++) {
    char path[1024], dst[1024];
    tmp_path(path, sizeof path, "held");
    tmp_path(dst, sizeof dst, "held-copy");
    b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
    b2s_fwriter *w;
    assert_int_equal(b2s_fwriter_create(path, sparse, &o, NULL, &w), 0);
    for (int i = 0; i < 5; i++)
      assert_true(b2s_fwriter_append_buffer(w, NULL, data + 1000 * i, 1000) > 0);
    assert_int_equal(b2s_fwriter_commit(w), 0);
    /* a second writer, even in this process, is refused */
    b2s_fwriter *w2 = NULL;
    assert_int_equal(b2s_fwriter_open(path, &o, &w2, NULL), B2S_E_LOCKED);
    assert_null(w2);
    run_result r;
    run(&r, "recover", path, NULL);
    expect_error_line(&r, "recover on a held frame");
    CHECK(strstr(r.err, path) && strstr(r.err, pid), "recover: %s", r.err);
    run_free(&r);
    run(&r, "convert", path, dst, NULL);
    expect_error_line(&r, "convert of a held frame");
    CHECK(strstr(r.err, path) && strstr(r.err, pid), "convert: %s", r.err);
    CHECK(!exists(dst), "convert left %s", dst);
    run_free(&r);
    run(&r, "cat", path, NULL);
    expect_ok(&r, "cat on a held frame");
    CHECK(r.out_len == 5000 && !memcmp(r.out, data, 5000), "cat differs");
    run_free(&r);
    const char *readers[] = {"info", "ls", "verify"};
    for (int k = 0; k < 3; k++) {
      run(&r, readers[k], path, NULL);
      expect_ok(&r, readers[k]);
      run_free(&r);
    }
    assert_int_equal(b2s_fwriter_close(w), 0);
    run(&r, "recover", path, NULL);
    expect_ok(&r, "recover once the writer closed");
    run_free(&r);
    run(&r, "convert", path, dst, NULL);
    expect_ok(&r, "convert once the writer closed");
    run_free(&r);
  }
  free(data);
  assert_int_equal(failures, 0);
}

/* ---- output to a reader that goes away ------------------------------------------ */

static void test_cat_epipe(void **state) {
  (void)state;
  char in[1024], frame[1024];
  tmp_path(in, sizeof in, "in");
  tmp_path(frame, sizeof frame, "frame");
  uint8_t *data = make_input(1 << 20, 2);
  write_file(in, data, 1 << 20);
  free(data);
  run_result r;
  run(&r, "pack", "--chunk-bytes", "64K", in, frame, NULL);
  expect_ok(&r, "pack");
  run_free(&r);
  int out[2], err[2];
  cloexec_pipe(out);
  cloexec_pipe(err);
  close(out[0]);   /* nobody will ever read */
  char *args[] = {(char *)"b2stream", (char *)"cat", frame, NULL};
  pid_t pid = spawn(args, NULL, out[1], err[1]);
  close(out[1]);
  close(err[1]);
  char msg[1024];
  size_t len = 0;
  for (ssize_t got; (got = read(err[0], msg + len, sizeof msg - 1 - len)) > 0;)
    len += (size_t)got;
  msg[len] = '\0';
  close(err[0]);
  int status = wait_status(pid);
  CHECK(status == 1, "cat into a closed pipe: exit status %d", status);
  CHECK(!strncmp(msg, "b2stream: ", 10) && strchr(msg, '\n') == msg + len - 1,
        "cat into a closed pipe: stderr [%s]", msg);
  assert_int_equal(failures, 0);
}

/* ---- produce and tail: options of protocol version 2 --------------------- */

/* Wrong uses of produce --meta / --frame-number / --timestamp and tail
 * --records are usage errors (status 2) found before any daemon is asked:
 * none listens at the endpoint given. */
static void test_live_args(void **state) {
  (void)state;
  char in[1024], ep[1100];
  tmp_path(in, sizeof in, "live-in");
  write_file(in, "abcd", 4);
  snprintf(ep, sizeof ep, "--endpoint=ipc://%s/none.sock", tmpdir);
  const char *cases[][7] = {
      {"produce", ep, "--meta", "novalue", in, NULL, "KEY=VALUE"},
      {"produce", ep, "--meta", "=1", in, NULL, "KEY=VALUE"},
      {"produce", ep, "--meta", "a=1", "--meta", "a=x", "given twice"},
      {"produce", ep, "--frame-number", "x", in, NULL, "--frame-number"},
      {"produce", ep, "--frame-number", "-1", in, NULL, "--frame-number"},
      {"produce", ep, "--timestamp=1", in, NULL, NULL, "takes no value"},
      {"produce", ep, "--ranks", "ipc://a,ipc://b", in, NULL, "exclude"},
      {"produce", "--ranks", "ipc://a,,ipc://b", in, NULL, NULL, "empty"},
      {"produce", "--ranks", "ipc://a", "--ranks", "ipc://b", in, "twice"},
      {"produce", "--frames-per-block", "2", in, NULL, NULL, "needs --ranks"},
      {"produce", "--ranks", "ipc://a", "--frames-per-block", "0", in,
       "--frames-per-block"},
      {"tail", ep, "--records", "--data", "s", NULL, "--records"},
      {"tail", ep, "--records=yes", "s", NULL, NULL, "takes no value"},
  };
  run_result r;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char *args[9] = {(char *)"b2stream"};
    char what[512] = "b2stream";
    int a = 0;
    for (; a < 6 && cases[k][a] != NULL; a++) {
      args[a + 1] = (char *)cases[k][a];
      snprintf(what + strlen(what), sizeof what - strlen(what), " %s",
               cases[k][a]);
    }
    if (a == 6 && strcmp(cases[k][5], in) != 0)  /* six options: the input */
      args[++a] = in;
    run_argv(&r, NULL, args);
    expect_error_line(&r, what);
    CHECK(r.status == 2, "%s: exit status %d", what, r.status);
    CHECK(strstr(r.err, cases[k][6]) != NULL, "%s: stderr [%s]", what, r.err);
    CHECK(strstr(r.err, "daemon") == NULL, "%s: asked a daemon: [%s]", what,
          r.err);
    run_free(&r);
  }
  assert_int_equal(failures, 0);
}

/* ---- main ------------------------------------------------------------------------- */

static int group_setup(void **state) {
  (void)state;
  cli_path = getenv("B2S_CLI");
  if (cli_path == NULL || access(cli_path, X_OK) != 0) {
    fprintf(stderr, "B2S_CLI must name the b2stream executable\n");
    return -1;
  }
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/b2s-cli-XXXXXX", base ? base : "/tmp");
  if (mkdtemp(tmpdir) == NULL)
    return -1;
  manifest = mf_load_env(load_error, sizeof load_error, &vectors_missing);
  if (manifest != NULL) {
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST.json", manifest->dir);
    manifest_json = json_object_from_file(path);
  }
  return 0;
}

/* ---- acquisition metadata: series metadata and records ------------------- */

/* A paired frame: chunk k holds 1000 uint32 (k + 1) * i, frame number
 * 50 + k, timestamp 1e18 + k; chunk `gap` is a gap; chunks are stored
 * memcpy'ed (clevel 0), so a flipped byte still decodes.  Series metadata
 * {"detector": "eiger", "exposure": 0.5, "shape": [2, 3]}. */
static void write_meta_pair(const char *path, int n, int gap) {
  b2s_pair *p;
  assert_int_equal(b2s_pair_create(path, false, NULL, NULL, &p), 0);
  const uint8_t series[] = {
      0x83, 0xa8, 'd', 'e', 't', 'e', 'c', 't', 'o', 'r', 0xa5, 'e', 'i',
      'g', 'e', 'r', 0xa8, 'e', 'x', 'p', 'o', 's', 'u', 'r', 'e', 0xcb,
      0x3f, 0xe0, 0, 0, 0, 0, 0, 0, 0xa5, 's', 'h', 'a', 'p', 'e', 0x92,
      0x02, 0x03};
  assert_int_equal(b2s_fwriter_series_set(b2s_pair_data(p), series,
                                          sizeof series), 0);
  b2s_ctx *ctx = b2s_ctx_new();
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  cp.clevel = 0;
  for (int k = 0; k < n; k++) {
    b2s_record r = {.has_frame = true, .frame = 50 + (uint64_t)k,
                    .has_ts = true, .ts = 1000000000000000000 + k};
    if (k == gap) {
      assert_int_equal(b2s_pair_append_gap(p, 4000, 0, &r), k + 1);
      continue;
    }
    uint32_t data[1000];
    for (int i = 0; i < 1000; i++)
      data[i] = (uint32_t)((k + 1) * i);
    uint8_t chunk[4100];
    int cb = b2s_compress(ctx, &cp, data, sizeof data, chunk, sizeof chunk);
    assert_true(cb > 0);
    assert_int_equal(b2s_pair_append(p, chunk, (size_t)cb, &r), k + 1);
  }
  b2s_ctx_free(ctx);
  assert_int_equal(b2s_pair_close(p), 0);
}

static void test_meta_ls(void **state) {
  (void)state;
  char path[1024];
  tmp_path(path, sizeof path, "meta.b2frame");
  write_meta_pair(path, 4, 2);
  run_result r;
  run(&r, "ls", path, NULL);
  expect_ok(&r, "ls");
  char *text = strndup((const char *)r.out, r.out_len);
  CHECK(strstr(text, "frame") && strstr(text, "xxh64") && strstr(text, "gap"),
        "ls header: %s", text);
  b2s_records *rs;
  assert_int_equal(b2s_records_open(path, &rs, NULL), 0);
  for (int k = 0; k < 4; k++) {
    b2s_record rec;
    assert_int_equal(b2s_records_get(rs, k, &rec), 0);
    char want[128];
    snprintf(want, sizeof want, " %10d %20lld %016llx %s\n", 50 + k,
             1000000000000000000LL + k, (unsigned long long)rec.xxh64,
             k == 2 ? "gap" : "-");
    CHECK(strstr(text, want) != NULL, "ls: no line ending [%s] in %s", want,
          text);
  }
  free(text);
  run_free(&r);
  run(&r, "ls", "--json", path, NULL);
  expect_ok(&r, "ls --json");
  json_object *o = parse_json_out(&r, "ls --json");
  CHECK(jbool(o, "records"), "ls --json: records not true");
  json_object *chunks = jget(o, "chunks");
  assert_int_equal(json_object_array_length(chunks), 4);
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  for (int k = 0; k < 4; k++) {
    json_object *rec = jget(json_object_array_get_idx(chunks, (size_t)k), "record");
    uint8_t chunk[4200];
    int cb = b2s_frame_chunk_read(f, k, chunk, sizeof chunk);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx",
             (unsigned long long)b2s_chunk_xxh64(chunk, (size_t)cb));
    CHECK(jint(rec, "frame") == 50 + k, "chunk %d: frame", k);
    CHECK(jint(rec, "ts") == 1000000000000000000LL + k, "chunk %d: ts", k);
    CHECK(!strcmp(jstr(rec, "xxh64"), hex), "chunk %d: xxh64 %s, want %s", k,
          jstr(rec, "xxh64"), hex);
    CHECK(jbool(rec, "gap") == (k == 2), "chunk %d: gap", k);
    CHECK(jint(rec, "flags") == (k == 2 ? 1 : 0), "chunk %d: flags", k);
  }
  b2s_frame_free(f);
  b2s_records_free(rs);
  json_object_put(o);
  run_free(&r);
  assert_int_equal(failures, 0);
}

static void test_meta_info(void **state) {
  (void)state;
  char path[1024];
  tmp_path(path, sizeof path, "info.b2frame");
  write_meta_pair(path, 2, -1);
  run_result r;
  run(&r, "info", path, NULL);
  expect_ok(&r, "info");
  char *text = strndup((const char *)r.out, r.out_len);
  CHECK(strstr(text, "series:       3 keys\n") != NULL, "info: %s", text);
  CHECK(strstr(text, "  detector                        \"eiger\"\n") != NULL,
        "info: %s", text);
  CHECK(strstr(text, "  exposure                        0.5\n") != NULL,
        "info: %s", text);
  CHECK(strstr(text, "  shape                           [2, 3]\n") != NULL,
        "info: %s", text);
  free(text);
  run_free(&r);
  run(&r, "info", "--json", path, NULL);
  expect_ok(&r, "info --json");
  json_object *o = parse_json_out(&r, "info --json");
  json_object *series = jget(o, "series");
  CHECK(!strcmp(jstr(series, "detector"), "eiger"), "series.detector");
  CHECK(json_object_get_double(jget(series, "exposure")) == 0.5,
        "series.exposure");
  json_object *shape = jget(series, "shape");
  CHECK(shape && json_object_array_length(shape) == 2 &&
            json_object_get_int(json_object_array_get_idx(shape, 1)) == 3,
        "series.shape");
  json_object_put(o);
  run_free(&r);
  assert_int_equal(failures, 0);
}

/* Offset of chunk i's first data byte (after its 32-byte header). */
static int64_t chunk_data_offset(const char *path, int64_t i) {
  b2s_frame *f;
  assert_int_equal(b2s_frame_open(path, &f, NULL), 0);
  int64_t off = b2s_frame_header_get(f)->header_len + b2s_frame_index(f)[i] + 32;
  b2s_frame_free(f);
  return off;
}

static void test_meta_verify(void **state) {
  (void)state;
  char path[1024], alone[1024];
  tmp_path(path, sizeof path, "verify.b2frame");
  write_meta_pair(path, 4, 3);
  run_result r;
  run(&r, "verify", path, NULL);
  expect_ok(&r, "verify");
  CHECK(r.out_len > 0 && strstr((const char *)r.out, "ok: 4 chunks, 16000 bytes, 4 checksums\n"),
        "verify: %.*s", (int)r.out_len, (const char *)r.out);
  run_free(&r);
  /* flip one byte inside chunk 1's data */
  size_t len;
  uint8_t *bytes = ts_read_file(path, &len);
  int64_t off = chunk_data_offset(path, 1) + 100;
  assert_true((size_t)off < len);
  bytes[off] ^= 0x10;
  write_file(path, bytes, len);
  /* the codec still decodes it: without records verify sees nothing */
  tmp_path(alone, sizeof alone, "alone.b2frame");
  write_file(alone, bytes, len);
  free(bytes);
  run(&r, "verify", alone, NULL);
  expect_ok(&r, "verify without records");
  run_free(&r);
  run(&r, "verify", path, NULL);
  expect_error_line(&r, "verify flipped");
  CHECK(strstr(r.err, "chunk 1: chunk checksum differs from its record") != NULL,
        "verify flipped: %s", r.err);
  run_free(&r);
  assert_int_equal(failures, 0);
}

static void test_meta_recover(void **state) {
  (void)state;
  char path[1024], rpath[1100];
  tmp_path(path, sizeof path, "rec.b2frame");
  write_meta_pair(path, 3, -1);
  /* two more chunks whose records are committed, the data not (a crash
   * between the two commits) */
  b2s_pair *p;
  assert_int_equal(b2s_pair_open(path, NULL, &p, NULL), 0);
  uint8_t z[64];
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  int zb = b2s_chunk_zeros(&cp, 4000, z, sizeof z);
  assert_int_equal(b2s_pair_append(p, z, (size_t)zb, NULL), 4);
  assert_int_equal(b2s_pair_append(p, z, (size_t)zb, NULL), 5);
  assert_int_equal(b2s_fwriter_commit(b2s_pair_records(p)), 0);
  b2s_pair_free(p);
  b2s_records_path(path, rpath, sizeof rpath);
  run_result r;
  run(&r, "verify", path, NULL);
  expect_error_line(&r, "verify records ahead");
  CHECK(strstr(r.err, "5 records for 3 chunks") != NULL, "verify: %s", r.err);
  run_free(&r);
  run(&r, "recover", path, NULL);
  expect_ok(&r, "recover");
  char *text = strndup((const char *)r.out, r.out_len);
  CHECK(strstr(text, "records_cut:    2\n") && strstr(text, "records_filled: 0\n") &&
            strstr(text, "nchunks_final:  3\n"),
        "recover: %s", text);
  free(text);
  run_free(&r);
  run(&r, "verify", path, NULL);
  expect_ok(&r, "verify after recover");
  CHECK(strstr((const char *)r.out, ", 3 checksums\n") != NULL, "verify: %.*s",
        (int)r.out_len, (const char *)r.out);
  run_free(&r);
  assert_int_equal(failures, 0);
}

static int group_teardown(void **state) {
  (void)state;
  json_object_put(manifest_json);
  mf_free(manifest);
  manifest = NULL;
  rm_rf(tmpdir);
  return 0;
}

static int test_setup(void **state) {
  (void)state;
  failures = 0;
  return 0;
}

/* ls --json on a damaged frame prints valid JSON with the error in it: a
 * sparse frame missing a chunk file (the chunks before it listed), and a
 * contiguous frame cut to 50 bytes (nothing to list). */
static void test_ls_json_damaged(void **state) {
  (void)state;
  char in[1024], sparse[1024], cont[1024], chunk[1100];
  tmp_path(in, sizeof in, "in");
  tmp_path(sparse, sizeof sparse, "sparse");
  tmp_path(cont, sizeof cont, "cont");
  size_t size = 5 * 4096;
  uint8_t *data = make_input(size, 11);
  write_file(in, data, size);
  free(data);
  run_result r;
  run(&r, "pack", "--chunk-bytes=4096", in, sparse, "--sparse", NULL);
  expect_ok(&r, "pack sparse");
  run_free(&r);
  run(&r, "pack", "--chunk-bytes=4096", in, cont, NULL);
  expect_ok(&r, "pack contiguous");
  run_free(&r);
  snprintf(chunk, sizeof chunk, "%s/00000002.chunk", sparse);
  assert_int_equal(unlink(chunk), 0);
  assert_int_equal(truncate(cont, 50), 0);

  run(&r, "ls", "--json", sparse, NULL);
  assert_int_not_equal(r.status, 0);
  json_object *o = parse_json_out(&r, "ls damaged sparse");
  assert_non_null(o);
  assert_int_equal(json_object_array_length(jget(o, "chunks")), 2);
  json_object *e = jget(o, "error");
  assert_non_null(e);
  assert_int_equal(jint(e, "index"), 2);
  assert_true(jint(e, "code") < 0);
  assert_true(strlen(jstr(e, "message")) > 0);
  json_object_put(o);
  run_free(&r);

  run(&r, "ls", "--json", cont, NULL);
  assert_int_not_equal(r.status, 0);
  o = parse_json_out(&r, "ls damaged contiguous");
  assert_non_null(o);
  assert_string_equal(jstr(o, "path"), cont);
  e = jget(o, "error");
  assert_non_null(e);
  assert_true(jint(e, "code") < 0);
  assert_true(strlen(jstr(e, "message")) > 0);
  json_object_put(o);
  run_free(&r);
  assert_int_equal(failures, 0);
}

/* argv[1] "K/N": run only every N-th test from the K-th (1-based), so
 * meson runs the parts side by side (each test starts many processes,
 * which is slow under the sanitizers). */
int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_help, test_setup),
      cmocka_unit_test_setup(test_bad_args, test_setup),
      cmocka_unit_test_setup(test_live_args, test_setup),
      cmocka_unit_test_setup(test_vectors_cat, test_setup),
      cmocka_unit_test_setup(test_vectors_info_json, test_setup),
      cmocka_unit_test_setup(test_vectors_ls_json, test_setup),
      cmocka_unit_test_setup(test_vectors_verify, test_setup),
      cmocka_unit_test_setup(test_verify_corrupt_cframe, test_setup),
      cmocka_unit_test_setup(test_verify_corrupt_sframe, test_setup),
      cmocka_unit_test_setup(test_verify_corrupt_chunk_file, test_setup),
      cmocka_unit_test_setup(test_pack_unpack_roundtrip, test_setup),
      cmocka_unit_test_setup(test_pack_options, test_setup),
      cmocka_unit_test_setup(test_pack_meta, test_setup),
      cmocka_unit_test_setup(test_json_escaping, test_setup),
      cmocka_unit_test_setup(test_convert_vectors, test_setup),
      cmocka_unit_test_setup(test_convert_options, test_setup),
      cmocka_unit_test_setup(test_recover, test_setup),
      cmocka_unit_test_setup(test_recover_vector, test_setup),
      cmocka_unit_test_setup(test_recover_missing_chunk_file, test_setup),
      cmocka_unit_test_setup(test_locked_frame, test_setup),
      cmocka_unit_test_setup(test_cat_epipe, test_setup),
      cmocka_unit_test_setup(test_offset_embedded, test_setup),
      cmocka_unit_test_setup(test_offset_wrong, test_setup),
      cmocka_unit_test_setup(test_ls_json_damaged, test_setup),
      cmocka_unit_test_setup(test_meta_ls, test_setup),
      cmocka_unit_test_setup(test_meta_info, test_setup),
      cmocka_unit_test_setup(test_meta_verify, test_setup),
      cmocka_unit_test_setup(test_verify_b2nd_layout, test_setup),
      cmocka_unit_test_setup(test_meta_recover, test_setup),
  };
  size_t n = sizeof tests / sizeof tests[0], k = 1, parts = 1, m = 0;
  if (argc > 1 && (sscanf(argv[1], "%zu/%zu", &k, &parts) != 2 || k < 1 ||
                   k > parts)) {
    fprintf(stderr, "usage: test_cli [K/N]\n");
    return 2;
  }
  struct CMUnitTest part[sizeof tests / sizeof tests[0]];
  for (size_t i = k - 1; i < n; i += parts)
    part[m++] = tests[i];
  return ts_run_group("test_cli", part, m, group_setup, group_teardown);
}

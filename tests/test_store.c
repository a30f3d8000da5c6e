/* The object stores of b2s_store.h.  One body of tests runs against the
 * local store (a fresh directory) and, as test_store_rados, against a
 * RADOS pool when B2S_CEPH_CONF names a test cluster's ceph.conf
 * (scripts/ceph-test-cluster).  Usage: test_store local|rados */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "b2s_errors.h"
#include "b2s_store.h"
#include "b2s_frame_writer.h"
#include "ts.h"

#define RADOS_POOL "b2stream"

static int g_rados;            /* the backend under test */
static char g_url[512];        /* its URL */
static char g_dir[256];        /* local: the store's directory */
static b2s_store_opts g_opts;
static b2s_store *g_s;
static char g_prefix[64];      /* object-name prefix unique to this run */

/* prefix + base, in one of a few rotating buffers. */
static const char *nm(const char *base) {
  static char bufs[8][256];
  static int next;
  char *b = bufs[next++ % 8];
  snprintf(b, 256, "%s%s", g_prefix, base);
  return b;
}

static uint8_t *pattern(size_t len, unsigned seed) {
  uint8_t *p = malloc(len ? len : 1);
  assert_non_null(p);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < len; i++) {
    x = x * 1103515245u + 12345u;
    p[i] = (uint8_t)(x >> 16);
  }
  return p;
}

static void expect_object(const char *name, const void *data, size_t len,
                          const void *attr, size_t attrlen) {
  uint8_t *got;
  size_t n;
  uint64_t size;
  assert_int_equal(b2s_store_get(g_s, name, len, &got, &n), 0);
  assert_int_equal(n, len);
  if (len)
    assert_memory_equal(got, data, len);
  free(got);
  assert_int_equal(b2s_store_get_attr(g_s, name, 1 << 20, &got, &n), 0);
  assert_int_equal(n, attrlen);
  if (attrlen)
    assert_memory_equal(got, attr, attrlen);
  free(got);
  assert_int_equal(b2s_store_stat(g_s, name, &size), 0);
  assert_int_equal(size, len);
}

/* ---- objects ------------------------------------------------------------- */

static void test_put_once_retry(void **state) {
  (void)state;
  const char *name = nm("retry");
  uint8_t *data = pattern(100000, 1), *attr = pattern(300, 2);
  assert_int_equal(b2s_store_put_once(g_s, name, data, 100000, attr, 300), 0);
  assert_int_equal(b2s_store_put_once(g_s, name, data, 100000, attr, 300), 0);
  expect_object(name, data, 100000, attr, 300);
  free(data);
  free(attr);
}

static void test_put_once_conflict(void **state) {
  (void)state;
  const char *name = nm("conflict");
  uint8_t *data = pattern(5000, 3), *other = pattern(5000, 4);
  uint8_t attr[3] = {1, 2, 3}, attr2[3] = {1, 2, 4};
  assert_int_equal(b2s_store_put_once(g_s, name, data, 5000, attr, 3), 0);
  /* other data, other length, other attribute, no attribute */
  assert_int_equal(b2s_store_put_once(g_s, name, other, 5000, attr, 3),
                   B2S_E_OBJ_CONFLICT);
  assert_string_not_equal(b2s_store_last_error(), "");
  assert_int_equal(b2s_store_put_once(g_s, name, data, 4999, attr, 3),
                   B2S_E_OBJ_CONFLICT);
  assert_int_equal(b2s_store_put_once(g_s, name, data, 5000, attr2, 3),
                   B2S_E_OBJ_CONFLICT);
  assert_int_equal(b2s_store_put_once(g_s, name, data, 5000, NULL, 0),
                   B2S_E_OBJ_CONFLICT);
  expect_object(name, data, 5000, attr, 3);
  free(data);
  free(other);
}

static void test_attr_round_trip(void **state) {
  (void)state;
  uint8_t *got = (uint8_t *)"x";
  size_t n = 7;
  /* binary attribute with zero bytes */
  uint8_t attr[64] = {0, 0xff, 0, 7};
  assert_int_equal(b2s_store_put_once(g_s, nm("attr"), "d", 1, attr, 64), 0);
  expect_object(nm("attr"), "d", 1, attr, 64);
  /* without attribute: an empty one; empty data */
  assert_int_equal(b2s_store_put_once(g_s, nm("noattr"), NULL, 0, NULL, 0), 0);
  expect_object(nm("noattr"), NULL, 0, NULL, 0);
  assert_int_equal(b2s_store_put_once(g_s, nm("noattr"), NULL, 0, NULL, 0), 0);
  assert_int_equal(b2s_store_get_attr(g_s, nm("absent"), 100, &got, &n),
                   -ENOENT);
  assert_null(got);
  assert_int_equal(n, 0);
}

static void test_bad_names(void **state) {
  (void)state;
  char long_name[202];
  memset(long_name, 'a', 201);
  long_name[201] = '\0';
  const char *bad[] = {"../x", ".x", "", long_name, "a/b", "a b", "x\n",
                       "caf\xc3\xa9", NULL};
  uint8_t *got;
  size_t n;
  uint64_t size;
  b2s_kv kv = {"k", "v", 1};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(b2s_store_put_once(g_s, bad[i], "d", 1, NULL, 0),
                     B2S_E_ARG);
    assert_int_equal(b2s_store_put(g_s, bad[i], "d", 1), B2S_E_ARG);
    assert_int_equal(b2s_store_get(g_s, bad[i], 10, &got, &n), B2S_E_ARG);
    assert_int_equal(b2s_store_get_attr(g_s, bad[i], 10, &got, &n),
                     B2S_E_ARG);
    assert_int_equal(b2s_store_stat(g_s, bad[i], &size), B2S_E_ARG);
    assert_int_equal(b2s_store_remove(g_s, bad[i]), B2S_E_ARG);
    assert_int_equal(b2s_store_kv_set(g_s, bad[i], &kv, 1), B2S_E_ARG);
  }
  if (!g_rados) {   /* nothing left the directory */
    struct stat st;
    char path[512];
    snprintf(path, sizeof path, "%s/../x", g_dir);
    assert_int_equal(stat(path, &st), -1);
  }
  /* 200 bytes is the longest name */
  long_name[200] = '\0';
  memcpy(long_name, g_prefix, strlen(g_prefix));
  assert_int_equal(b2s_store_put_once(g_s, long_name, "d", 1, NULL, 0), 0);
  expect_object(long_name, "d", 1, NULL, 0);
  /* keys: 1..64 bytes, a leading dot is fine; values up to 64 KiB */
  char key65[66];
  memset(key65, 'k', 65);
  key65[65] = '\0';
  uint8_t *big = pattern(65537, 5);
  const b2s_kv badkv[] = {{key65, "v", 1}, {"", "v", 1}, {"a/b", "v", 1},
                          {NULL, "v", 1}, {"k", big, 65537}, {"k", NULL, 1}};
  for (size_t i = 0; i < sizeof badkv / sizeof badkv[0]; i++)
    assert_int_equal(b2s_store_kv_set(g_s, nm("keys"), &badkv[i], 1),
                     B2S_E_ARG);
  key65[64] = '\0';
  const b2s_kv good[] = {{key65, big, 65536}, {".dot", "", 0}};
  assert_int_equal(b2s_store_kv_set(g_s, nm("keys"), good, 2), 0);
  assert_int_equal(b2s_store_kv_get(g_s, nm("keys"), key65, &got, &n), 0);
  assert_int_equal(n, 65536);
  assert_memory_equal(got, big, 65536);
  free(got);
  assert_int_equal(b2s_store_kv_get(g_s, nm("keys"), ".dot", &got, &n), 0);
  assert_int_equal(n, 0);
  free(got);
  assert_int_equal(b2s_store_kv_get(g_s, nm("keys"), "a/b", &got, &n),
                   B2S_E_ARG);
  free(big);
}

static void test_get_limit(void **state) {
  (void)state;
  uint8_t *data = pattern(1000, 6), *got = NULL;
  size_t n = 0;
  assert_int_equal(b2s_store_put_once(g_s, nm("limit"), data, 1000, data, 10),
                   0);
  assert_int_equal(b2s_store_get(g_s, nm("limit"), 999, &got, &n),
                   B2S_E_LIMIT);
  assert_null(got);
  assert_int_equal(b2s_store_get_attr(g_s, nm("limit"), 9, &got, &n),
                   B2S_E_LIMIT);
  assert_int_equal(b2s_store_get(g_s, nm("limit"), 1000, &got, &n), 0);
  assert_int_equal(n, 1000);
  assert_memory_equal(got, data, 1000);
  free(got);
  uint64_t size = 1;
  assert_int_equal(b2s_store_get(g_s, nm("nothing"), 1000, &got, &n),
                   -ENOENT);
  assert_int_equal(b2s_store_stat(g_s, nm("nothing"), &size), -ENOENT);
  free(data);
}

static void test_put_replace(void **state) {
  (void)state;
  uint8_t *a = pattern(3000, 7), *b = pattern(100, 8);
  assert_int_equal(b2s_store_put(g_s, nm("replace"), a, 3000), 0);
  expect_object(nm("replace"), a, 3000, NULL, 0);
  assert_int_equal(b2s_store_put(g_s, nm("replace"), b, 100), 0);
  expect_object(nm("replace"), b, 100, NULL, 0);
  /* a write-once object over it conflicts, and changes nothing */
  assert_int_equal(b2s_store_put_once(g_s, nm("replace"), a, 3000, NULL, 0),
                   B2S_E_OBJ_CONFLICT);
  expect_object(nm("replace"), b, 100, NULL, 0);
  free(a);
  free(b);
}

static void test_remove(void **state) {
  (void)state;
  const char *name = nm("remove");
  uint8_t *got;
  size_t n;
  uint64_t size;
  b2s_kv kv = {"k", "v", 1};
  assert_int_equal(b2s_store_put_once(g_s, name, "old", 3, "attr", 4), 0);
  assert_int_equal(b2s_store_kv_set(g_s, name, &kv, 1), 0);
  assert_int_equal(b2s_store_remove(g_s, name), 0);
  assert_int_equal(b2s_store_get(g_s, name, 10, &got, &n), -ENOENT);
  assert_int_equal(b2s_store_get_attr(g_s, name, 10, &got, &n), -ENOENT);
  assert_int_equal(b2s_store_stat(g_s, name, &size), -ENOENT);
  assert_int_equal(b2s_store_kv_get(g_s, name, "k", &got, &n), -ENOENT);
  assert_int_equal(b2s_store_remove(g_s, name), -ENOENT);
  /* created anew: nothing of the old object survives */
  assert_int_equal(b2s_store_put_once(g_s, name, "new", 3, NULL, 0), 0);
  expect_object(name, "new", 3, NULL, 0);
  assert_int_equal(b2s_store_kv_get(g_s, name, "k", &got, &n), -ENOENT);
  assert_int_equal(b2s_store_remove(g_s, name), 0);
}

/* ---- key logs ------------------------------------------------------------ */

typedef struct seen {
  int n;
  char keys[64][65];
  char vals[64][16];
  int stop_at;   /* return 7 at this visit (1-based), 0 = never */
} seen;

static int seen_cb(void *arg, const char *key, const void *val, size_t len) {
  seen *s = arg;
  assert_true(s->n < 64 && len < 16);
  snprintf(s->keys[s->n], 65, "%s", key);
  memcpy(s->vals[s->n], val, len);
  s->vals[s->n][len] = '\0';
  s->n++;
  return s->n == s->stop_at ? 7 : 0;
}

static int count_cb(void *arg, const char *key, const void *val, size_t len) {
  (void)key;
  (void)val;
  (void)len;
  (*(int *)arg)++;
  return 0;
}

static void set1(const char *obj, const char *key, const char *val) {
  b2s_kv kv = {key, val, strlen(val)};
  assert_int_equal(b2s_store_kv_set(g_s, obj, &kv, 1), 0);
}

static void expect_val(const char *obj, const char *key, const char *want) {
  uint8_t *got;
  size_t n;
  int rc = b2s_store_kv_get(g_s, obj, key, &got, &n);
  if (!want) {
    assert_int_equal(rc, -ENOENT);
    return;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(n, strlen(want));
  assert_memory_equal(got, want, n);
  free(got);
}

static void test_kv_batches(void **state) {
  (void)state;
  const char *obj = nm("kv");
  seen s = {0};
  expect_val(obj, "a", NULL);   /* no object */
  assert_int_equal(b2s_store_kv_list(g_s, obj, NULL, 10, seen_cb, &s),
                   -ENOENT);
  const b2s_kv b1[] = {{"c", "3", 1}, {"a", "1", 1}, {"b", "2", 1}};
  const b2s_kv b2[] = {{"b", "22", 2}, {"d", "4", 1}, {"e", "", 0}};
  assert_int_equal(b2s_store_kv_set(g_s, obj, b1, 3), 0);
  assert_int_equal(b2s_store_kv_set(g_s, obj, b2, 3), 0);
  assert_int_equal(b2s_store_kv_set(g_s, obj, b2, 0), 0);   /* no-op */
  expect_val(obj, "a", "1");
  expect_val(obj, "b", "22");
  expect_val(obj, "e", "");
  expect_val(obj, "f", NULL);
  assert_int_equal(b2s_store_kv_list(g_s, obj, NULL, 100, seen_cb, &s), 5);
  const char *keys[] = {"a", "b", "c", "d", "e"};
  const char *vals[] = {"1", "22", "3", "4", ""};
  for (int i = 0; i < 5; i++) {
    assert_string_equal(s.keys[i], keys[i]);
    assert_string_equal(s.vals[i], vals[i]);
  }
  /* a key log makes its object exist, with no bytes (as on RADOS) */
  uint64_t size = 1;
  assert_int_equal(b2s_store_stat(g_s, obj, &size), 0);
  assert_int_equal(size, 0);
  /* an object without a key log has an empty one */
  assert_int_equal(b2s_store_put_once(g_s, nm("plain"), "x", 1, NULL, 0), 0);
  assert_int_equal(b2s_store_kv_list(g_s, nm("plain"), NULL, 9, seen_cb, &s),
                   0);
  expect_val(nm("plain"), "a", NULL);
}

static void test_kv_list_after_max_stop(void **state) {
  (void)state;
  const char *obj = nm("kvlist");
  /* byte order: '-' < '.' < digits < upper < '_' < lower; a prefix first */
  const char *order[] = {"-", ".a", "0", "A", "Z", "_", "a", "a.", "aa", "b"};
  b2s_kv kv[10];
  for (int i = 0; i < 10; i++)   /* set in reverse order, one batch */
    kv[i] = (b2s_kv){order[9 - i], order[9 - i], strlen(order[9 - i])};
  assert_int_equal(b2s_store_kv_set(g_s, obj, kv, 10), 0);
  seen s = {0};
  assert_int_equal(b2s_store_kv_list(g_s, obj, "", 100, seen_cb, &s), 10);
  for (int i = 0; i < 10; i++) {
    assert_string_equal(s.keys[i], order[i]);
    assert_string_equal(s.vals[i], order[i]);
  }
  memset(&s, 0, sizeof s);
  assert_int_equal(b2s_store_kv_list(g_s, obj, "Z", 3, seen_cb, &s), 3);
  assert_string_equal(s.keys[0], "_");
  assert_string_equal(s.keys[2], "a.");
  memset(&s, 0, sizeof s);   /* after a key that is not stored */
  assert_int_equal(b2s_store_kv_list(g_s, obj, "a-", 100, seen_cb, &s), 3);
  assert_string_equal(s.keys[0], "a.");
  memset(&s, 0, sizeof s);
  assert_int_equal(b2s_store_kv_list(g_s, obj, "b", 100, seen_cb, &s), 0);
  assert_int_equal(b2s_store_kv_list(g_s, obj, NULL, 0, seen_cb, &s), 0);
  assert_int_equal(s.n, 0);
  s.stop_at = 3;
  assert_int_equal(b2s_store_kv_list(g_s, obj, NULL, 100, seen_cb, &s), 7);
  assert_int_equal(s.n, 3);
  /* more keys than one page of a RADOS listing */
  const char *big = nm("kvmany");
  static char names[1500][8];
  b2s_kv many[1500];
  for (int i = 0; i < 1500; i++) {
    snprintf(names[i], 8, "k%05d", i);
    many[i] = (b2s_kv){names[i], names[i], 6};
  }
  assert_int_equal(b2s_store_kv_set(g_s, big, many, 1500), 0);
  memset(&s, 0, sizeof s);
  s.stop_at = 0;
  assert_int_equal(b2s_store_kv_list(g_s, big, "k01000", 10, seen_cb, &s),
                   10);
  assert_string_equal(s.keys[0], "k01001");
  assert_string_equal(s.keys[9], "k01010");
  /* the whole map in one listing, in order */
  int n = 0;   /* 1500 keys do not fit a seen: count them */
  assert_int_equal(b2s_store_kv_list(g_s, big, NULL, SIZE_MAX, count_cb, &n),
                   1500);
  assert_int_equal(n, 1500);
  /* smaller keys set after larger ones, some of them set again */
  const char *late = nm("kvlate");
  for (int i = 19; i >= 0; i--) {
    char k[8], v[8];
    snprintf(k, sizeof k, "k%02d", i);
    snprintf(v, sizeof v, "v%d", i);
    set1(late, k, v);
  }
  set1(late, "k01", "again");
  set1(late, "k15", "again");
  memset(&s, 0, sizeof s);
  assert_int_equal(b2s_store_kv_list(g_s, late, "k00", 3, seen_cb, &s), 3);
  assert_string_equal(s.keys[0], "k01");
  assert_string_equal(s.vals[0], "again");
  assert_string_equal(s.keys[1], "k02");
  assert_string_equal(s.vals[1], "v2");
  assert_string_equal(s.keys[2], "k03");
  memset(&s, 0, sizeof s);
  assert_int_equal(b2s_store_kv_list(g_s, late, "k14", 1, seen_cb, &s), 1);
  assert_string_equal(s.keys[0], "k15");
  assert_string_equal(s.vals[0], "again");
}

static void test_kv_torn_tail(void **state) {
  (void)state;
  if (g_rados)
    skip();   /* a RADOS batch is one write operation: nothing to tear */
  const char *obj = nm("torn");
  char log[512];
  snprintf(log, sizeof log, "%s/.k.%s", g_dir, obj);   /* store_local.h */
  const b2s_kv b1[] = {{"a", "1", 1}, {"b", "2", 1}};
  const b2s_kv b2[] = {{"a", "one", 3}, {"c", "3", 1}};
  assert_int_equal(b2s_store_kv_set(g_s, obj, b1, 2), 0);
  struct stat st1, st2;
  assert_int_equal(stat(log, &st1), 0);
  assert_int_equal(b2s_store_kv_set(g_s, obj, b2, 2), 0);
  assert_int_equal(stat(log, &st2), 0);
  /* cut the second batch anywhere: all of it is gone, the first stays */
  for (off_t cut = st2.st_size - 1; cut > st1.st_size; cut -= 7) {
    assert_int_equal(truncate(log, cut), 0);
    expect_val(obj, "a", "1");
    expect_val(obj, "c", NULL);
    int n = 0;
    assert_int_equal(b2s_store_kv_list(g_s, obj, NULL, 10, count_cb, &n), 2);
  }
  /* the next append replaces the torn tail */
  const b2s_kv b3[] = {{"d", "4", 1}};
  assert_int_equal(b2s_store_kv_set(g_s, obj, b3, 1), 0);
  expect_val(obj, "a", "1");
  expect_val(obj, "d", "4");
  int n = 0;
  assert_int_equal(b2s_store_kv_list(g_s, obj, NULL, 10, count_cb, &n), 3);
  /* garbage at the end is ignored too, and cut by the next append */
  FILE *f = fopen(log, "ab");
  assert_non_null(f);
  fputs("B2KV garbage", f);
  fclose(f);
  expect_val(obj, "d", "4");
  set1(obj, "e", "5");
  expect_val(obj, "e", "5");
  expect_val(obj, "a", "1");
  /* a byte damaged inside the first batch hides that batch only, and
   * appends stay visible */
  int fd = open(log, O_RDWR);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, "X", 1, 12), 1);
  close(fd);
  expect_val(obj, "a", NULL);
  expect_val(obj, "b", NULL);
  expect_val(obj, "d", "4");
  expect_val(obj, "e", "5");
  set1(obj, "f", "6");
  expect_val(obj, "f", "6");
  n = 0;
  assert_int_equal(b2s_store_kv_list(g_s, obj, NULL, 10, count_cb, &n), 3);
}

/* An attribute left by a writer that died before publishing its object
 * is not taken for the new object's. */
static void test_stale_attr(void **state) {
  (void)state;
  if (g_rados)
    skip();   /* the attribute is part of the RADOS write operation */
  char path[512];
  snprintf(path, sizeof path, "%s/.a.%s", g_dir, nm("stale"));
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs("stale", f);
  fclose(f);
  assert_int_equal(b2s_store_put_once(g_s, nm("stale"), "d", 1, NULL, 0), 0);
  expect_object(nm("stale"), "d", 1, NULL, 0);
}

/* ---- several writers ----------------------------------------------------- */

typedef struct racer {
  int start_fd;   /* read end of the start pipe: EOF means go */
  int id;
  const char *name;
  int rc;
} racer;

static void wait_start(int fd) {
  char c;
  while (read(fd, &c, 1) < 0 && errno == EINTR)
    continue;
}

/* Each writer has its own store handle, as a process on another node
 * would. */
static int race_put_once(racer *r) {
  b2s_store *s;
  int rc = b2s_store_open(g_url, &g_opts, &s);
  if (rc)
    return rc;
  uint8_t *data = pattern(20000 + (size_t)r->id, (unsigned)r->id + 100);
  wait_start(r->start_fd);
  rc = b2s_store_put_once(s, r->name, data, 20000 + (size_t)r->id, &r->id,
                          sizeof r->id);
  free(data);
  b2s_store_free(s);
  return rc;
}

static int race_kv(racer *r) {
  b2s_store *s;
  int rc = b2s_store_open(g_url, &g_opts, &s);
  if (rc)
    return rc;
  wait_start(r->start_fd);
  for (int i = 0; i < 50 && !rc; i++) {
    char k1[32], k2[32], v[16];
    snprintf(k1, sizeof k1, "w%d.%03d", r->id, i);
    snprintf(k2, sizeof k2, "last.w%d", r->id);
    snprintf(v, sizeof v, "%d", i);
    const b2s_kv kv[] = {{k1, v, strlen(v)}, {k2, v, strlen(v)}};
    rc = b2s_store_kv_set(s, r->name, kv, 2);
  }
  b2s_store_free(s);
  return rc;
}

static void *racer_thread(void *arg) {
  racer *r = arg;
  r->rc = r->name[strlen(r->name) - 1] == 'k' ? race_kv(r) : race_put_once(r);
  return NULL;
}

/* Two writers of name at once: processes for the local store; threads
 * with handles of their own for RADOS (librados does not survive fork). */
static void race(const char *name, int rcs[2]) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  racer r[2] = {{p[0], 1, name, 0}, {p[0], 2, name, 0}};
  if (g_rados) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
      assert_int_equal(pthread_create(&t[i], NULL, racer_thread, &r[i]), 0);
    usleep(100000);
    close(p[1]);
    for (int i = 0; i < 2; i++) {
      pthread_join(t[i], NULL);
      rcs[i] = r[i].rc;
    }
  } else {
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
      pid[i] = fork();
      assert_true(pid[i] >= 0);
      if (pid[i] == 0) {
        close(p[1]);
        racer_thread(&r[i]);
        _exit(r[i].rc == 0 ? 0 : r[i].rc == B2S_E_OBJ_CONFLICT ? 1 : 2);
      }
    }
    usleep(20000);
    close(p[1]);
    for (int i = 0; i < 2; i++) {
      int st;
      assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
      assert_true(WIFEXITED(st));
      int code = WEXITSTATUS(st);
      rcs[i] = code == 0 ? 0 : code == 1 ? B2S_E_OBJ_CONFLICT : B2S_E_STORE;
    }
  }
  close(p[0]);
}

static void test_race_put_once(void **state) {
  (void)state;
  for (int round = 0; round < 10; round++) {
    char base[32];
    snprintf(base, sizeof base, "race%d", round);
    const char *name = nm(base);
    int rcs[2];
    race(name, rcs);
    /* exactly one wins; the object is all of the winner's bytes */
    int winner = rcs[0] == 0 ? 1 : 2;
    assert_int_equal(rcs[winner - 1], 0);
    assert_int_equal(rcs[2 - winner], B2S_E_OBJ_CONFLICT);
    uint8_t *data = pattern(20000 + (size_t)winner, (unsigned)winner + 100);
    expect_object(name, data, 20000 + (size_t)winner, &winner, sizeof winner);
    free(data);
  }
}

static void test_race_kv(void **state) {
  (void)state;
  const char *obj = nm("racekv.k");   /* ends in 'k': racer_thread's cue */
  int rcs[2], n = 0;
  race(obj, rcs);
  assert_int_equal(rcs[0], 0);
  assert_int_equal(rcs[1], 0);
  /* every batch of both writers is there, whole */
  assert_int_equal(b2s_store_kv_list(g_s, obj, NULL, 1000, count_cb, &n),
                   102);
  expect_val(obj, "last.w1", "49");
  expect_val(obj, "last.w2", "49");
  expect_val(obj, "w1.049", "49");
  expect_val(obj, "w2.000", "0");
}

/* ---- opening ------------------------------------------------------------- */

static void test_urls(void **state) {
  (void)state;
  b2s_store *s = (b2s_store *)&s;
  const char *bad[] = {"", "rados://", "rados://a/b", "file://rel/dir",
                       "http://host/x", NULL};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(b2s_store_open(bad[i], NULL, &s), B2S_E_ARG);
    assert_null(s);
    assert_string_not_equal(b2s_store_last_error(), "");
  }
  if (!b2s_store_have_rados())
    assert_int_equal(b2s_store_open("rados://pool", NULL, &s), B2S_E_STORE);
  if (g_rados)
    return;
  /* file:// and plain paths; missing directories are made, mode 0750 */
  char url[600], path[600];
  struct stat st;
  snprintf(url, sizeof url, "file://%s/u/v", g_dir);
  assert_int_equal(b2s_store_open(url, NULL, &s), 0);
  assert_string_equal(b2s_store_kind(s), "local");
  b2s_store_free(s);
  snprintf(path, sizeof path, "%s/u/v", g_dir);
  assert_int_equal(stat(path, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(st.st_mode & 0777 & ~0750, 0);
  b2s_store_opts o = {.sync = B2S_SYNC_FULL};
  assert_int_equal(b2s_store_open(path, &o, &s), 0);
  assert_int_equal(b2s_store_put_once(s, "synced", "abc", 3, "a", 1), 0);
  assert_int_equal(b2s_store_put(s, "synced2", "abc", 3), 0);
  b2s_kv kv = {"k", "v", 1};
  assert_int_equal(b2s_store_kv_set(s, "synced", &kv, 1), 0);
  b2s_store_free(s);
  b2s_store_free(NULL);
  snprintf(url, sizeof url, "%s/u/v/synced", g_dir);
  assert_int_equal(b2s_store_open(url, NULL, &s), -ENOTDIR);
}

/* A missing pool, and a cluster that does not answer: B2S_E_STORE with
 * the store's words, within the timeout. */
static void test_rados_open_failures(void **state) {
  (void)state;
  if (!g_rados)
    skip();   /* RADOS only */
  b2s_store *s;
  assert_int_equal(b2s_store_open("rados://b2s-no-such-pool", &g_opts, &s),
                   B2S_E_STORE);
  assert_non_null(strstr(b2s_store_last_error(), "b2s-no-such-pool"));
  char conf[300];
  snprintf(conf, sizeof conf, "%s/b2s-deaf-XXXXXX", getenv("TMPDIR") ?
           getenv("TMPDIR") : "/tmp");
  int fd = mkstemp(conf);
  assert_true(fd >= 0);
  /* port 9 (discard) on loopback: nobody listens there */
  const char *text = "[global]\nmon host = [v2:127.0.0.1:9]\n"
                     "auth client required = none\n"
                     "log file = /dev/null\n";
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  b2s_store_opts o = {.ceph_conf = conf, .timeout_ms = 1500};
  time_t t0 = time(NULL);
  assert_int_equal(b2s_store_open("rados://b2stream", &o, &s), B2S_E_STORE);
  assert_true(time(NULL) - t0 <= 10);
  assert_non_null(strstr(b2s_store_last_error(), conf));
  unlink(conf);
}

/* ---- setup --------------------------------------------------------------- */

static int setup(void **state) {
  (void)state;
  snprintf(g_prefix, sizeof g_prefix, "t%ld-%ld-", (long)getpid(),
           (long)time(NULL));
  if (g_rados) {
    snprintf(g_url, sizeof g_url, "rados://%s", RADOS_POOL);
    g_opts.ceph_conf = getenv("B2S_CEPH_CONF");
    g_opts.timeout_ms = 20000;
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/b2s-store-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir))
      return -1;
    snprintf(g_url, sizeof g_url, "%s/s", g_dir);
  }
  int rc = b2s_store_open(g_url, &g_opts, &g_s);
  if (rc)
    fprintf(stderr, "cannot open %s: %s: %s\n", g_url, b2s_strerror(rc),
            b2s_store_last_error());
  if (!g_rados)
    snprintf(g_dir + strlen(g_dir), sizeof g_dir - strlen(g_dir), "/s");
  return rc ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  b2s_store_free(g_s);
  if (!g_rados && g_dir[0]) {
    g_dir[strlen(g_dir) - 2] = '\0';   /* the mkdtemp directory */
    if (ts_rmtree(g_dir) != 0)
      return -1;
  }
  return 0;
}

/* ---- leases ---------------------------------------------------------------- */

/* One holder at a time, the refused one told who; renewal; a lease given
 * up is free at once; a holder gone without giving it up: at once on the
 * local store (flock dies with its descriptor), after its duration on
 * RADOS. */
static void test_lease(void **state) {
  (void)state;
  b2s_store *s2;
  assert_int_equal(b2s_store_open(g_url, &g_opts, &s2), 0);
  const char *name = nm("frame.lease");
  b2s_lease *a = NULL, *b = NULL;
  char who[256];
  assert_int_equal(b2s_store_lease_take(g_s, name, "holder A pid 1", 2000, &a,
                                        who, sizeof who), 0);
  assert_int_equal(b2s_store_lease_take(s2, name, "holder B pid 2", 2000, &b,
                                        who, sizeof who), B2S_E_BUSY);
  assert_null(b);
  assert_non_null(strstr(who, "holder A pid 1"));
  assert_int_equal(b2s_store_lease_renew(a), 0);
  b2s_store_lease_drop(a);
  assert_int_equal(b2s_store_lease_take(s2, name, "holder B pid 2", 2000, &b,
                                        who, sizeof who), 0);
  if (g_rados) {
    /* B's client goes away without giving the lease up (a process
     * killed: the committer's tests kill it for the local store, whose
     * flock goes with the descriptor) */
    b2s_store_free(s2);
    free(b);                      /* the handle only: its state is none */
  } else {
    b2s_store_lease_drop(b);
    b2s_store_free(s2);
  }
  int rc, waited = 0;
  while ((rc = b2s_store_lease_take(g_s, name, "holder A pid 1", 2000, &a,
                                    who, sizeof who)) == B2S_E_BUSY &&
         waited < 5000) {
    usleep(100000);
    waited += 100;
  }
  assert_int_equal(rc, 0);
  if (g_rados)
    assert_true(waited >= 1000);  /* B's lease had to expire */
  else
    assert_int_equal(waited, 0);
  b2s_store_lease_drop(a);
  /* bad arguments */
  assert_int_equal(b2s_store_lease_take(g_s, name, "", 2000, &a, who,
                                        sizeof who), B2S_E_ARG);
  assert_int_equal(b2s_store_lease_take(g_s, ".x", "h", 2000, &a, who,
                                        sizeof who), B2S_E_ARG);
  assert_int_equal(b2s_store_lease_take(g_s, name, "h", 0, &a, who,
                                        sizeof who), B2S_E_ARG);
}

static void test_rados_skipped(void **state) {
  (void)state;
  skip();
}

int main(int argc, char **argv) {
  g_rados = argc > 1 && strcmp(argv[1], "rados") == 0;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_put_once_retry),
      cmocka_unit_test(test_put_once_conflict),
      cmocka_unit_test(test_attr_round_trip),
      cmocka_unit_test(test_bad_names),
      cmocka_unit_test(test_get_limit),
      cmocka_unit_test(test_put_replace),
      cmocka_unit_test(test_remove),
      cmocka_unit_test(test_kv_batches),
      cmocka_unit_test(test_kv_list_after_max_stop),
      cmocka_unit_test(test_kv_torn_tail),
      cmocka_unit_test(test_stale_attr),
      cmocka_unit_test(test_race_put_once),
      cmocka_unit_test(test_race_kv),
      cmocka_unit_test(test_urls),
      cmocka_unit_test(test_rados_open_failures),
      cmocka_unit_test(test_lease),
  };
  if (g_rados && !b2s_store_have_rados()) {
    printf("rados tests skipped: this build has no librados\n");
    const struct CMUnitTest none[] = {cmocka_unit_test(test_rados_skipped)};
    return ts_run_named("store_rados", none, NULL, NULL);
  }
  if (g_rados && !getenv("B2S_CEPH_CONF")) {
    printf("rados tests skipped: B2S_CEPH_CONF not set\n");
    const struct CMUnitTest none[] = {cmocka_unit_test(test_rados_skipped)};
    return ts_run_named("store_rados", none, NULL, NULL);
  }
  return ts_run_named(g_rados ? "store_rados" : "store_local", tests, setup,
                      teardown);
}

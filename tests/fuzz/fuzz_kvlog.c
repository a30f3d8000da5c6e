/* libFuzzer target for the local store's key-log reader: the input is a
 * key-log file (cluster/store_kvlog.h) as found on disk after a crash or on
 * a damaged disk.
 *
 * The parser must stay inside the input and see only whole, valid
 * batches; the store must list no more keys than the parser sees; an
 * append must keep every valid batch byte for byte, cut only the invalid
 * tail, and be readable at once, next to everything seen before. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b2s_store.h"
#include "store_kvlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], log_path[96];
static b2s_store *store;

static int count_entry(void *arg, const uint8_t *key, size_t klen,
                       const uint8_t *val, size_t vlen) {
  (void)key;
  (void)val;
  if (klen < 1 || klen > 64 || vlen > 65536)
    abort();
  (*(size_t *)arg)++;
  return 0;
}

static int count_key(void *arg, const char *key, const void *val,
                     size_t len) {
  (void)val;
  if (strlen(key) < 1 || strlen(key) > 64 || len > 65536)
    abort();
  (*(size_t *)arg)++;
  return 0;
}

static void cleanup(void) {
  b2s_store_remove(store, "f");
  b2s_store_free(store);
  rmdir(dir);
}

/* The first keys of a listing, with their values, as one string. */
typedef struct firsts {
  char text[4 * (64 + 16)];
  size_t len;
} firsts;

static int firsts_cb(void *arg, const char *key, const void *val,
                     size_t len) {
  firsts *f = arg;
  int n = snprintf(f->text + f->len, sizeof f->text - f->len, "%s=%zu:%02x;",
                   key, len, len ? *(const uint8_t *)val : 0);
  f->len += (size_t)n < sizeof f->text - f->len ? (size_t)n : 0;
  return f->len > sizeof f->text / 2;   /* three keys fit: stop after */
}

static void setup_once(void) {
  if (store)
    return;
  snprintf(dir, sizeof dir, "/tmp/fuzz-kvlog-XXXXXX");
  if (!mkdtemp(dir) || b2s_store_open(dir, NULL, &store) != 0)
    abort();
  snprintf(log_path, sizeof log_path, "%s/.k.f", dir);   /* store_local.h */
  atexit(cleanup);
}

static void write_log(const uint8_t *data, size_t size) {
  int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
    abort();
  close(fd);
}

static uint8_t *read_log(size_t *len) {
  int fd = open(log_path, O_RDONLY);
  off_t n = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
  uint8_t *b = n < 0 ? NULL : malloc((size_t)n + 1);
  if (!b || pread(fd, b, (size_t)n, 0) != (ssize_t)n)
    abort();
  close(fd);
  *len = (size_t)n;
  return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup_once();
  /* a copy of exactly `size` bytes, so reading past it is caught */
  uint8_t *in = malloc(size ? size : 1);
  if (!in)
    return 0;
  memcpy(in, data, size);
  size_t entries = 0, valid = 0, keys = 0;
  b2s_kvlog_parse(in, size, count_entry, &entries, &valid);
  if (valid > size)
    abort();

  write_log(in, size);
  int rc = b2s_store_kv_list(store, "f", NULL, SIZE_MAX, count_key, &keys);
  if (rc < 0 || (size_t)rc != keys || keys > entries)
    abort();

  /* a short listing (kept sorted while reading) agrees with the head of
   * the whole one (sorted at the end) */
  firsts shortl = {0}, longl = {0};
  int rs = b2s_store_kv_list(store, "f", NULL, 3, firsts_cb, &shortl);
  int rl = b2s_store_kv_list(store, "f", NULL, SIZE_MAX, firsts_cb, &longl);
  if (rs < 0 || rl < 0 || strncmp(shortl.text, longl.text, shortl.len) != 0)
    abort();

  const b2s_kv kv = {"zz.fuzz", "v", 1};
  if (b2s_store_kv_set(store, "f", &kv, 1) != 0)
    abort();
  size_t len, valid2 = 0, entries2 = 0;
  uint8_t *after = read_log(&len);
  b2s_kvlog_parse(after, len, count_entry, &entries2, &valid2);
  if (len <= valid || memcmp(after, in, valid) != 0 || valid2 != len ||
      entries2 != entries + 1)
    abort();
  uint8_t *v = NULL;
  size_t vlen = 0;
  if (b2s_store_kv_get(store, "f", "zz.fuzz", &v, &vlen) != 0 || vlen != 1 ||
      v[0] != 'v')
    abort();
  free(v);
  /* a key no batch sets: the backward walk reaches the start, or the
   * forward read does */
  if (b2s_store_kv_get(store, "f", "zz.absent", &v, &vlen) != -ENOENT)
    abort();
  free(after);
  free(in);
  return 0;
}

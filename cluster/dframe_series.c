/* Series metadata of a distributed frame: every merge is a key of its own
 * in NAME.index, "s.<ns>.<tag>" (16 hex digits each: wall-clock time of
 * the merge, a random tag) holding the update map, so ranks that merge at
 * the same moment never lose each other's update (a read-modify-write of
 * one key would).  The series map is the fold of the updates in key
 * order, as b2s_series_merge applies them; an update that would break the
 * limits of docs/METADATA.md in that fold is skipped, the same way by
 * every reader.  Concurrent updates of one key from several nodes are
 * ordered by their clocks. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "dframe_internal.h"

#define SERIES_PREFIX "s."
#define SERIES_KEY_LEN 35               /* "s." 16 hex "." 16 hex */
#define SERIES_LIST 256                 /* updates per listing */

typedef struct fold {
  b2s_mpbuf map;                        /* the series so far */
  char last[SERIES_KEY_LEN + 1];        /* the last key seen */
  int64_t seen;
  int rc;
} fold;

static int fold_cb(void *arg, const char *key, const void *val, size_t len) {
  fold *f = arg;
  if (strncmp(key, SERIES_PREFIX, 2) != 0)
    return 1;                           /* past the updates */
  snprintf(f->last, sizeof f->last, "%s", key);
  f->seen++;
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  if (b2s_series_merge(f->map.data, f->map.len, val, len, &out) >= 0) {
    b2s_mpbuf_fini(&f->map);
    f->map = out;
  } else {
    b2s_mpbuf_fini(&out);               /* skipped by every reader alike */
  }
  return 0;
}

/* The fold of every update, listed SERIES_LIST at a time. */
static int fold_all(b2s_dframe *df, fold *f) {
  /* "s" sorts after every record key and before the updates */
  snprintf(f->last, sizeof f->last, "s");
  for (;;) {
    int64_t before = f->seen;
    int rc = b2s_store_kv_list(df->s, df->index_obj, f->last, SERIES_LIST,
                               fold_cb, f);
    if (rc == -ENOENT)
      return 0;                         /* no key log yet */
    if (rc < 0)
      return rc;
    if (rc == 1 || f->seen - before < SERIES_LIST)
      return 0;
  }
}

int b2s_dframe_series_get(b2s_dframe *df, uint8_t **map, size_t *len) {
  if (df == NULL || map == NULL || len == NULL)
    return B2S_E_ARG;
  fold f = {0};
  b2s_mpbuf_init(&f.map);
  int rc = fold_all(df, &f);
  if (rc == 0 && f.map.len == 0)
    rc = b2s_mp_put_map(&f.map, 0);     /* no series: an empty map */
  if (rc < 0) {
    b2s_mpbuf_fini(&f.map);
    return rc;
  }
  *map = f.map.data;
  *len = f.map.len;
  return 0;
}

static void update_key(char out[SERIES_KEY_LEN + 1]) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  uint64_t tag = 0;
  if (getrandom(&tag, sizeof tag, 0) != (ssize_t)sizeof tag)
    tag = ns ^ (uint64_t)clock();       /* still unique enough per node */
  snprintf(out, SERIES_KEY_LEN + 1, SERIES_PREFIX "%016" PRIx64 ".%016" PRIx64,
           ns, tag);
}

int b2s_dframe_series_merge(b2s_dframe *df, const void *upd, size_t len) {
  if (df == NULL || upd == NULL)
    return B2S_E_ARG;
  if (len > DF_SERIES_MAX)
    return B2S_E_SERIES_SIZE;
  /* refused now rather than skipped by readers later */
  uint8_t *base;
  size_t blen;
  int rc = b2s_dframe_series_get(df, &base, &blen);
  if (rc < 0)
    return rc;
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  rc = b2s_series_merge(base, blen, upd, len, &out);
  free(base);
  b2s_mpbuf_fini(&out);
  if (rc < 0)
    return rc;
  char key[SERIES_KEY_LEN + 1];
  update_key(key);
  b2s_kv kv = {key, upd, len};
  return b2s_store_kv_set(df->s, df->index_obj, &kv, 1);
}

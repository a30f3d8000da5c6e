/* The key log NAME.index of a distributed frame: "committed" (decimal H),
 * "r.%016llx" (record of chunk i, set in the batch that moves "committed"
 * past i), "closed" (series updates: dframe_series.c).  Only the committer
 * writes "committed" and the records; a commit is one batch, so its cost
 * does not depend on the number of chunks. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dframe_internal.h"

#define KEY_COMMITTED "committed"
#define KEY_CLOSED "closed"
#define REC_KEY_LEN 18               /* "r." + 16 hex digits */

int b2s_dframe_parse_count(const uint8_t *v, size_t len, int64_t *out) {
  if (len == 0 || len > 19 || (len > 1 && v[0] == '0'))
    return B2S_E_INDEX;
  int64_t n = 0;
  for (size_t k = 0; k < len; k++) {
    if (v[k] < '0' || v[k] > '9')
      return B2S_E_INDEX;
    n = n * 10 + (v[k] - '0');
    if (n >= B2S_DFRAME_INDEX_LIMIT)
      return B2S_E_INDEX;
  }
  *out = n;
  return 0;
}

static void rec_key(int64_t i, char out[REC_KEY_LEN + 1]) {
  snprintf(out, REC_KEY_LEN + 1, "r.%016" PRIx64, (uint64_t)i);
}

/* ---- the committed count and the closed mark ------------------------------ */

typedef struct head {
  int64_t committed;
  bool closed;
} head;

/* One key by kv_get: absent is fine (nothing committed, not closed). */
static int get_key(b2s_dframe *df, const char *key, uint8_t **v,
                   size_t *len) {
  int rc = b2s_store_kv_get(df->s, df->index_obj, key, v, len);
  if (rc == -ENOENT) {
    *v = NULL;
    *len = 0;
    return 0;
  }
  return rc;
}

/* Two kv_gets rather than a listing: every commit batch carries both
 * keys, so each is found in the newest batches (the local store reads its
 * log from the end) and a refresh costs the same at any chunk count. */
static int read_head(b2s_dframe *df, head *h) {
  *h = (head){0};
  uint8_t *v = NULL;
  size_t len = 0;
  int rc = get_key(df, KEY_COMMITTED, &v, &len);
  if (rc == 0 && v != NULL)
    rc = b2s_dframe_parse_count(v, len, &h->committed);
  free(v);
  v = NULL;
  if (rc == 0)
    rc = get_key(df, KEY_CLOSED, &v, &len);
  if (rc == 0)
    h->closed = len == 1 && v[0] == '1';
  free(v);
  return rc;
}

int b2s_dframe_refresh(b2s_dframe *df, int64_t *committed, bool *closed) {
  if (df == NULL)
    return B2S_E_ARG;
  head h;
  int rc = read_head(df, &h);
  if (rc < 0)
    return rc;
  /* "committed" only grows: a stale listing never takes it back */
  if (h.committed > df->committed)
    df->committed = h.committed;
  df->closed = df->closed || h.closed;
  if (committed)
    *committed = df->committed;
  if (closed)
    *closed = df->closed;
  return 0;
}

int64_t b2s_dframe_committed(b2s_dframe *df) {
  if (df == NULL)
    return B2S_E_ARG;
  head h;
  int rc = read_head(df, &h);
  return rc < 0 ? rc : h.committed;
}

int b2s_dframe_close_mark(b2s_dframe *df) {
  if (df == NULL)
    return B2S_E_ARG;
  b2s_kv kv = {KEY_CLOSED, "1", 1};
  int rc = b2s_store_kv_set(df->s, df->index_obj, &kv, 1);
  if (rc == 0)
    df->closed = true;              /* later commit batches repeat it */
  return rc;
}

/* ---- commits ------------------------------------------------------------ */

/* A record to be committed at i must be one (it came over the network). */
static int check_record(int64_t i, const uint8_t *rec, size_t len) {
  b2s_record r;
  if (rec == NULL || len == 0 || len > DF_RECORD_MAX ||
      b2s_record_decode(rec, len, &r) < 0 || !r.has_frame ||
      r.frame != (uint64_t)i)
    return B2S_E_RECORD;
  return 0;
}

/* One batch: n record keys, "committed" and "closed" (repeated so that
 * read_head finds both near the end of the log). */
static int commit_batch(b2s_dframe *df, int64_t h, int64_t n,
                        const uint8_t *const *recs, const size_t *lens) {
  b2s_kv *kv = malloc((size_t)(n + 2) * sizeof *kv);
  char (*keys)[REC_KEY_LEN + 1] = malloc((size_t)n * sizeof *keys);
  if (kv == NULL || keys == NULL) {
    free(kv);
    free(keys);
    return B2S_E_NOMEM;
  }
  int rc = 0;
  for (int64_t k = 0; rc == 0 && k < n; k++) {
    rc = check_record(h + k, recs[k], lens[k]);
    rec_key(h + k, keys[k]);
    kv[k] = (b2s_kv){keys[k], recs[k], lens[k]};
  }
  char count[24];
  snprintf(count, sizeof count, "%" PRId64, h + n);
  kv[n] = (b2s_kv){KEY_COMMITTED, count, strlen(count)};
  kv[n + 1] = (b2s_kv){KEY_CLOSED, df->closed ? "1" : "0", 1};
  if (rc == 0)
    rc = b2s_store_kv_set(df->s, df->index_obj, kv, (size_t)n + 2);
  free(kv);
  free(keys);
  return rc;
}

int b2s_dframe_commit(b2s_dframe *df, int64_t n, const uint8_t *const *recs,
                      const size_t *lens) {
  if (df == NULL || n < 0 || (n > 0 && (recs == NULL || lens == NULL)))
    return B2S_E_ARG;
  if (df->commit_h < 0) {
    int64_t h = b2s_dframe_committed(df);
    if (h < 0)
      return (int)h;
    df->commit_h = h;
  }
  if (n == 0)
    return 0;
  if (n > B2S_DFRAME_INDEX_LIMIT - df->commit_h)
    return B2S_E_ARG;
  int rc = commit_batch(df, df->commit_h, n, recs, lens);
  if (rc < 0)
    return rc;
  df->commit_h += n;
  if (df->commit_h > df->committed)
    df->committed = df->commit_h;
  return 0;
}

/* ---- committed records ----------------------------------------------------- */

int64_t b2s_dframe_records_recovered(const b2s_dframe *df) {
  return df ? df->recs_from_objects : 0;
}

/* The record of committed chunk i as committed, or, when the key log lost
 * it (a batch damaged and skipped), as its chunk object carries it: the
 * committer committed exactly those bytes. */
static int record_raw(b2s_dframe *df, int64_t i, uint8_t **v, size_t *len) {
  char key[REC_KEY_LEN + 1];
  rec_key(i, key);
  int rc = b2s_store_kv_get(df->s, df->index_obj, key, v, len);
  if (rc != -ENOENT)
    return rc;
  b2s_mpbuf m;
  b2s_mpbuf_init(&m);
  rc = b2s_dframe_stored_record(df, i, &m);
  if (rc == 0 && check_record(i, m.data, m.len) < 0)
    rc = B2S_E_RECORD;
  if (rc == 0) {
    df->recs_from_objects++;
    *v = m.data;                   /* handed over */
    *len = m.len;
    return 0;
  }
  b2s_mpbuf_fini(&m);
  return rc == -ENOENT ? B2S_E_INDEX : rc;
}

int b2s_dframe_record_get(b2s_dframe *df, int64_t i, b2s_record *rec) {
  if (df == NULL || rec == NULL || i < 0)
    return B2S_E_ARG;
  if (i >= df->committed)
    return -ENOENT;
  uint8_t *v = NULL;
  size_t len = 0;
  int rc = record_raw(df, i, &v, &len);
  if (rc < 0)
    return rc;
  rc = b2s_record_decode(v, len, rec);
  if (rc < 0) {
    free(v);
    return rc;
  }
  /* rec->user points into v until the next call */
  free(df->rec);
  df->rec = v;
  return 0;
}

typedef struct rec_walk {
  int64_t next;
  b2s_mpbuf *out;
  size_t *lens;
  int64_t got;
} rec_walk;

static int list_cb(void *arg, const char *key, const void *val, size_t len) {
  rec_walk *w = arg;
  char want[REC_KEY_LEN + 1];
  rec_key(w->next, want);
  if (strcmp(key, want) != 0)
    return B2S_E_INDEX;
  int rc = b2s_mp_write_raw(w->out, val, len);
  if (rc < 0)
    return rc;
  w->lens[w->got++] = len;
  w->next++;
  return 0;
}

int b2s_dframe_records_list(b2s_dframe *df, int64_t from, int64_t n,
                            b2s_mpbuf *out, size_t *lens) {
  if (df == NULL || from < 0 || n < 0 || n > DF_LIST_MAX ||
      from + n > df->committed)
    return B2S_E_ARG;
  /* "r" sorts before "r.0000000000000000" and after the other keys */
  char after[REC_KEY_LEN + 1] = "r";
  if (from > 0)
    rec_key(from - 1, after);
  size_t start = out->len;
  rec_walk w = {.next = from, .out = out, .lens = lens};
  int rc = b2s_store_kv_list(df->s, df->index_obj, after, (size_t)n,
                             list_cb, &w);
  if (rc < 0 && rc != B2S_E_INDEX)
    return rc;
  if (rc == 0 && w.got == n)
    return 0;
  /* keys missing (a damaged batch skipped): one by one, with the chunk
   * objects' records where the key log has none */
  out->len = start;
  for (int64_t k = 0; k < n; k++) {
    uint8_t *v = NULL;
    size_t len = 0;
    rc = record_raw(df, from + k, &v, &len);
    if (rc == 0)
      rc = b2s_mp_write_raw(out, v, len);
    free(v);
    if (rc < 0)
      return rc;
    lens[k] = len;
  }
  return 0;
}

/* ---- rebuilding the key log from the chunk objects ---------------------- */

#define REINDEX_BATCH 1024

/* Records [from, from + n) rewritten in one batch with "committed" = h
 * (at or above what is stored, so it never moves back). */
static int reindex_batch(b2s_dframe *df, int64_t from, int64_t n, int64_t h,
                         const b2s_mpbuf *recs, const size_t *lens) {
  b2s_kv *kv = malloc((size_t)(n + 2) * sizeof *kv);
  char (*keys)[REC_KEY_LEN + 1] = malloc((size_t)(n + 1) * sizeof *keys);
  if (kv == NULL || keys == NULL) {
    free(kv);
    free(keys);
    return B2S_E_NOMEM;
  }
  size_t off = 0;
  for (int64_t k = 0; k < n; k++) {
    rec_key(from + k, keys[k]);
    kv[k] = (b2s_kv){keys[k], recs->data + off, lens[k]};
    off += lens[k];
  }
  char count[24];
  snprintf(count, sizeof count, "%" PRId64, h);
  kv[n] = (b2s_kv){KEY_COMMITTED, count, strlen(count)};
  kv[n + 1] = (b2s_kv){KEY_CLOSED, df->closed ? "1" : "0", 1};
  int rc = b2s_store_kv_set(df->s, df->index_obj, kv, (size_t)n + 2);
  free(kv);
  free(keys);
  return rc;
}

/* The stored run's end: H, or past it while chunk objects are there. */
static int64_t stored_end(b2s_dframe *df, int64_t h) {
  if (df->closed)
    return h;
  b2s_mpbuf m;
  b2s_mpbuf_init(&m);
  while (h < B2S_DFRAME_INDEX_LIMIT) {
    m.len = 0;
    if (b2s_dframe_stored_record(df, h, &m) < 0 ||
        check_record(h, m.data, m.len) < 0)
      break;
    h++;
  }
  b2s_mpbuf_fini(&m);
  return h;
}

int b2s_dframe_reindex(b2s_dframe *df, int64_t *missing, int64_t *h) {
  if (df == NULL || missing == NULL || h == NULL)
    return B2S_E_ARG;
  *missing = 0;
  int rc = b2s_dframe_refresh(df, NULL, NULL);
  if (rc < 0)
    return rc;
  int64_t end = stored_end(df, df->committed);
  *h = end;
  b2s_mpbuf recs;
  b2s_mpbuf_init(&recs);
  size_t *lens = calloc(REINDEX_BATCH, sizeof *lens);
  if (lens == NULL)
    return B2S_E_NOMEM;
  for (int64_t from = 0; rc == 0 && from < end; from += REINDEX_BATCH) {
    int64_t n = end - from < REINDEX_BATCH ? end - from : REINDEX_BATCH;
    recs.len = 0;
    for (int64_t k = 0; rc == 0 && k < n; k++) {
      char key[REC_KEY_LEN + 1];
      uint8_t *v = NULL;
      size_t len = 0;
      rec_key(from + k, key);
      if (from + k < df->committed &&
          b2s_store_kv_get(df->s, df->index_obj, key, &v, &len) == -ENOENT)
        ++*missing;
      free(v);
      size_t before = recs.len;
      rc = b2s_dframe_stored_record(df, from + k, &recs);
      if (rc == 0 && check_record(from + k, recs.data + before,
                                  recs.len - before) < 0)
        rc = B2S_E_RECORD;
      if (rc == -ENOENT) {
        *h = from + k;             /* committed, yet no object */
        rc = B2S_E_INDEX;
      }
      lens[k] = recs.len - before;
    }
    if (rc == 0)
      rc = reindex_batch(df, from, n, end, &recs, lens);
  }
  if (rc == 0 && end == 0)         /* nothing stored: the head only */
    rc = reindex_batch(df, 0, 0, 0, &recs, lens);
  b2s_mpbuf_fini(&recs);
  free(lens);
  if (rc == 0 && end > df->committed)
    df->committed = end;
  return rc;
}

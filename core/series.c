/* Series metadata: the msgpack map of the "series" vlmetalayer, checked
 * against the limits of b2s_meta.h and merged key by key. */
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_meta.h"

typedef struct entry {
  const uint8_t *k, *v;            /* key bytes; the value's encoding */
  uint32_t kn;
  size_t vn;
} entry;

typedef struct smap {
  entry *e;                        /* in map order */
  entry **sorted;                  /* by key, for lookups */
  uint32_t n;
} smap;

static void smap_fini(smap *m) {
  free(m->e);
  free(m->sorted);
  memset(m, 0, sizeof *m);
}

static int key_cmp(const entry *a, const entry *b) {
  uint32_t n = a->kn < b->kn ? a->kn : b->kn;
  int c = memcmp(a->k, b->k, n);
  return c != 0 ? c : (a->kn > b->kn) - (a->kn < b->kn);
}

static int sort_cmp(const void *a, const void *b) {
  return key_cmp(*(entry *const *)a, *(entry *const *)b);
}

static bool is_nil(const entry *e) { return e->vn == 1 && e->v[0] == 0xc0; }

static int parse_entry(b2s_mpreader *r, bool allow_nil, entry *e) {
  b2s_mpval key;
  if (b2s_mp_read_any(r, &key) < 0 || key.type != B2S_MPT_STR)
    return B2S_E_SERIES_FORMAT;
  if (key.n == 0 || key.n > B2S_SERIES_KEY_MAX ||
      !b2s_utf8_valid(key.p, key.n))
    return B2S_E_SERIES_KEY;
  size_t start = r->pos;
  if (b2s_mp_skip(r, B2S_MP_MAX_DEPTH) < 0)
    return B2S_E_SERIES_FORMAT;
  *e = (entry){.k = key.p, .kn = key.n, .v = r->buf + start,
               .vn = r->pos - start};
  if (e->vn > B2S_SERIES_VALUE_MAX)
    return B2S_E_SERIES_VALUE;
  return !allow_nil && is_nil(e) ? B2S_E_SERIES_FORMAT : 0;
}

/* Sort the entries by key; a key seen twice is an error. */
static int index_keys(smap *m) {
  if (m->n == 0)
    return 0;
  m->sorted = malloc(m->n * sizeof *m->sorted);
  if (m->sorted == NULL)
    return B2S_E_NOMEM;
  for (uint32_t k = 0; k < m->n; k++)
    m->sorted[k] = &m->e[k];
  qsort(m->sorted, m->n, sizeof *m->sorted, sort_cmp);
  for (uint32_t k = 1; k < m->n; k++)
    if (key_cmp(m->sorted[k - 1], m->sorted[k]) == 0)
      return B2S_E_SERIES_KEY;
  return 0;
}

static int smap_parse(const void *map, size_t len, bool allow_nil, smap *m) {
  memset(m, 0, sizeof *m);
  if (map == NULL || len == 0)
    return 0;                      /* no map: empty */
  if (len > B2S_SERIES_MAP_MAX)
    return B2S_E_SERIES_SIZE;
  b2s_mpreader r;
  b2s_mpval v;
  b2s_mpreader_init(&r, map, len);
  if (b2s_mp_read_any(&r, &v) < 0 || v.type != B2S_MPT_MAP ||
      (uint64_t)v.n * 2 > b2s_mpreader_left(&r))
    return B2S_E_SERIES_FORMAT;
  m->n = v.n;
  m->e = calloc(v.n ? v.n : 1, sizeof *m->e);
  if (m->e == NULL)
    return B2S_E_NOMEM;
  for (uint32_t k = 0; k < v.n; k++) {
    int rc = parse_entry(&r, allow_nil, &m->e[k]);
    if (rc < 0)
      return rc;
  }
  if (b2s_mpreader_left(&r) != 0)
    return B2S_E_SERIES_FORMAT;
  return index_keys(m);
}

int b2s_series_check(const void *map, size_t len, bool allow_nil) {
  if (map == NULL || len == 0)
    return B2S_E_SERIES_FORMAT;
  smap m;
  int rc = smap_parse(map, len, allow_nil, &m);
  if (rc == 0)
    rc = (int)m.n;
  smap_fini(&m);
  return rc;
}

static const entry *smap_find(const smap *m, const entry *key) {
  if (m->n == 0)
    return NULL;
  const entry *kp = key;
  entry **hit = bsearch(&kp, m->sorted, m->n, sizeof *m->sorted, sort_cmp);
  return hit ? *hit : NULL;
}

static int put_entry(b2s_mpbuf *b, const entry *key, const entry *val) {
  int rc = b2s_mp_put_str(b, key->k, key->kn);
  return rc < 0 ? rc : b2s_mp_write_raw(b, val->v, val->vn);
}

/* The merged map: base's keys (updated or deleted), then upd's new ones. */
static int write_merged(const smap *base, const smap *upd, b2s_mpbuf *b) {
  uint32_t n = 0;
  for (int pass = 0; pass < 2; pass++) {
    int rc = pass == 1 ? b2s_mp_put_map(b, n) : 0;
    for (uint32_t k = 0; rc == 0 && k < base->n; k++) {
      const entry *u = smap_find(upd, &base->e[k]);
      const entry *val = u ? u : &base->e[k];
      if (is_nil(val))
        continue;
      rc = pass == 0 ? (n++, 0) : put_entry(b, &base->e[k], val);
    }
    for (uint32_t k = 0; rc == 0 && k < upd->n; k++) {
      if (is_nil(&upd->e[k]) || smap_find(base, &upd->e[k]) != NULL)
        continue;
      rc = pass == 0 ? (n++, 0) : put_entry(b, &upd->e[k], &upd->e[k]);
    }
    if (rc < 0)
      return rc;
  }
  return b->len > B2S_SERIES_MAP_MAX ? B2S_E_SERIES_SIZE : 0;
}

int b2s_series_merge(const void *base, size_t base_len, const void *upd,
                     size_t upd_len, b2s_mpbuf *out) {
  if (out == NULL || upd == NULL || upd_len == 0)
    return B2S_E_ARG;
  smap bm, um;
  b2s_mpbuf tmp;
  b2s_mpbuf_init(&tmp);
  int rc = smap_parse(base, base_len, true, &bm);
  if (rc == 0)
    rc = smap_parse(upd, upd_len, true, &um);
  else
    memset(&um, 0, sizeof um);
  if (rc == 0)
    rc = write_merged(&bm, &um, &tmp);
  smap_fini(&bm);
  smap_fini(&um);
  if (rc < 0) {
    b2s_mpbuf_fini(&tmp);
    return rc;
  }
  b2s_mpbuf_fini(out);
  *out = tmp;
  return 0;
}

/* ---- frames and writers ---------------------------------------------------- */

static int empty_map(uint8_t **map, size_t *len) {
  *map = malloc(1);
  if (*map == NULL)
    return B2S_E_NOMEM;
  (*map)[0] = B2S_MP_FIXMAP;       /* fixmap of 0 entries */
  *len = 1;
  return 0;
}

/* A stored series map must still be a map (nil values tolerated: another
 * writer may have put them there). */
static int checked(uint8_t *content, int32_t n, uint8_t **map, size_t *len) {
  int rc = b2s_series_check(content, (size_t)n, true);
  if (rc < 0) {
    free(content);
    return rc;
  }
  *map = content;
  *len = (size_t)n;
  return 0;
}

int b2s_frame_series_get(b2s_frame *f, uint8_t **map, size_t *len) {
  if (f == NULL || map == NULL || len == NULL)
    return B2S_E_ARG;
  uint8_t *content;
  int32_t n;
  int rc = b2s_frame_vlmeta_get(f, B2S_SERIES_VLMETA, NULL, &content, &n);
  if (rc == B2S_E_NOTFOUND)
    return empty_map(map, len);
  return rc < 0 ? rc : checked(content, n, map, len);
}

int b2s_fwriter_series_get(b2s_fwriter *w, uint8_t **map, size_t *len) {
  if (w == NULL || map == NULL || len == NULL)
    return B2S_E_ARG;
  const b2s_frame_metas *m = b2s_fwriter_vlmetas(w);
  int i = b2s_frame_metas_find(m, B2S_SERIES_VLMETA);
  if (i == B2S_E_NOTFOUND)
    return empty_map(map, len);
  if (i < 0)
    return i;
  const b2s_frame_meta *it = &m->items[i];
  b2s_chunk_info ci;
  int rc = b2s_chunk_info_get(it->content, (size_t)it->len, &ci);
  if (rc < 0)
    return rc;
  if (ci.nbytes > B2S_SERIES_MAP_MAX)
    return B2S_E_SERIES_SIZE;
  uint8_t *content = malloc((size_t)ci.nbytes + 1);
  b2s_ctx *ctx = b2s_ctx_new();
  rc = content && ctx ? b2s_decompress(ctx, it->content, (size_t)it->len,
                                       content, (size_t)ci.nbytes)
                      : B2S_E_NOMEM;
  b2s_ctx_free(ctx);
  if (rc < 0) {
    free(content);
    return rc;
  }
  return checked(content, rc, map, len);
}

/* Store map as the writer's series vlmetalayer (removed when empty). */
static int store(b2s_fwriter *w, const b2s_mpbuf *map) {
  if (map->len == 1 && map->data[0] == B2S_MP_FIXMAP) {
    int rc = b2s_fwriter_vlmeta_delete(w, B2S_SERIES_VLMETA);
    return rc == B2S_E_NOTFOUND ? 0 : rc;
  }
  return b2s_fwriter_vlmeta_set(w, B2S_SERIES_VLMETA, map->data,
                                (int32_t)map->len);
}

static int update(b2s_fwriter *w, const void *upd, size_t len, bool replace) {
  if (w == NULL || upd == NULL || len == 0)
    return B2S_E_ARG;
  uint8_t *cur = NULL;
  size_t cur_len = 0;
  int rc = replace ? 0 : b2s_fwriter_series_get(w, &cur, &cur_len);
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  if (rc == 0)
    rc = b2s_series_merge(cur, cur_len, upd, len, &out);
  if (rc == 0)
    rc = store(w, &out);
  free(cur);
  b2s_mpbuf_fini(&out);
  return rc;
}

int b2s_fwriter_series_merge(b2s_fwriter *w, const void *upd, size_t len) {
  return update(w, upd, len, false);
}

int b2s_fwriter_series_set(b2s_fwriter *w, const void *map, size_t len) {
  return update(w, map, len, true);
}

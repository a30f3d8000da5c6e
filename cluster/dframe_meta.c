/* NAME.meta: the parameters of a distributed frame as one msgpack map
 *   {"format": 1, "chunk_nbytes", "ranks", "frames_per_block", "codec",
 *    "clevel", "typesize", "blocksize", "splitmode",
 *    "filters": [6 uint], "filters_meta": [6 uint], "use_dict": bool,
 *    "b2nd": bin (the b2nd metalayer content, only when there is one)}
 * written in this order, shortest forms, so equal parameters give equal
 * bytes (every rank creates it with the same bytes).  Read back as
 * untrusted input: keys in any order, each once, none unknown, every
 * value in range. */
#include <string.h>

#include "b2s_names.h"
#include "dframe_internal.h"

#define META_FORMAT 1

enum {
  K_FORMAT, K_CHUNK_NBYTES, K_RANKS, K_FPB, K_CODEC, K_CLEVEL, K_TYPESIZE,
  K_BLOCKSIZE, K_SPLITMODE, K_FILTERS, K_FILTERS_META, K_USE_DICT, K_B2ND,
  K_COUNT
};

static const char *const keys[K_COUNT] = {
    "format", "chunk_nbytes", "ranks", "frames_per_block", "codec",
    "clevel", "typesize", "blocksize", "splitmode", "filters",
    "filters_meta", "use_dict", "b2nd"};

static bool b2nd_ok(const b2s_b2nd *nd) {
  b2s_mpbuf b;
  b2s_mpbuf_init(&b);
  b2s_b2nd back;
  bool ok = b2s_b2nd_write(nd, &b) == 0 &&
            b2s_b2nd_parse(b.data, b.len, 0, &back, NULL) == 0;
  b2s_mpbuf_fini(&b);
  return ok;
}

static bool cparams_ok(const b2s_cparams *c) {
  return b2s_cparams_check(c) == 0;
}

int b2s_dframe_params_check(const b2s_dframe_params *p) {
  if (p == NULL || !cparams_ok(&p->cparams) || p->chunk_nbytes < 1 ||
      p->chunk_nbytes > B2S_MAX_BUFFERSIZE || p->ranks < 1 ||
      p->ranks > B2S_DFRAME_RANKS_MAX || p->frames_per_block < 1 ||
      (p->has_b2nd && !b2nd_ok(&p->b2nd)))
    return B2S_E_ARG;
  return 0;
}

/* ---- encoding ----------------------------------------------------------- */

static int put_key(b2s_mpbuf *b, int k) {
  return b2s_mp_put_str(b, keys[k], strlen(keys[k]));
}

static int put_u8s(b2s_mpbuf *b, int k, const uint8_t *v) {
  int rc = put_key(b, k);
  if (rc == 0)
    rc = b2s_mp_put_array(b, B2S_MAX_FILTERS);
  for (int i = 0; rc == 0 && i < B2S_MAX_FILTERS; i++)
    rc = b2s_mp_put_uint(b, v[i]);
  return rc;
}

int b2s_dframe_meta_encode(const b2s_dframe_params *p, b2s_mpbuf *out) {
  int rc = b2s_dframe_params_check(p);
  if (rc < 0)
    return rc;
  const b2s_cparams *c = &p->cparams;
  const uint64_t u[] = {META_FORMAT, (uint64_t)p->chunk_nbytes,
                        (uint64_t)p->ranks, (uint64_t)p->frames_per_block,
                        (uint64_t)c->codec, (uint64_t)c->clevel,
                        (uint64_t)c->typesize, (uint64_t)c->blocksize,
                        (uint64_t)c->splitmode};
  rc = b2s_mp_put_map(out, K_COUNT - !p->has_b2nd);
  for (int k = K_FORMAT; rc == 0 && k <= K_SPLITMODE; k++)
    if ((rc = put_key(out, k)) == 0)
      rc = b2s_mp_put_uint(out, u[k]);
  if (rc == 0)
    rc = put_u8s(out, K_FILTERS, c->filters);
  if (rc == 0)
    rc = put_u8s(out, K_FILTERS_META, c->filters_meta);
  if (rc == 0 && (rc = put_key(out, K_USE_DICT)) == 0)
    rc = b2s_mp_write_bool(out, c->use_dict);
  if (rc == 0 && p->has_b2nd && (rc = put_key(out, K_B2ND)) == 0) {
    b2s_mpbuf nd;
    b2s_mpbuf_init(&nd);
    rc = b2s_b2nd_write(&p->b2nd, &nd);
    if (rc == 0)
      rc = b2s_mp_put_bin(out, nd.data, nd.len);
    b2s_mpbuf_fini(&nd);
  }
  return rc;
}

/* ---- decoding ------------------------------------------------------------ */

static int key_of(const b2s_mpval *v) {
  if (v->type != B2S_MPT_STR)
    return -1;
  for (int k = 0; k < K_COUNT; k++)
    if (strlen(keys[k]) == v->n && memcmp(keys[k], v->p, v->n) == 0)
      return k;
  return -1;
}

static int read_uint(b2s_mpreader *r, uint64_t max, uint64_t *out) {
  b2s_mpval v;
  if (b2s_mp_read_any(r, &v) < 0 || v.type != B2S_MPT_UINT || v.u > max)
    return B2S_E_META;
  *out = v.u;
  return 0;
}

static int read_u8s(b2s_mpreader *r, uint8_t *out) {
  b2s_mpval v;
  if (b2s_mp_read_any(r, &v) < 0 || v.type != B2S_MPT_ARRAY ||
      v.n != B2S_MAX_FILTERS)
    return B2S_E_META;
  for (int i = 0; i < B2S_MAX_FILTERS; i++) {
    uint64_t u;
    if (read_uint(r, UINT8_MAX, &u) < 0)
      return B2S_E_META;
    out[i] = (uint8_t)u;
  }
  return 0;
}

static int read_b2nd(b2s_mpreader *r, b2s_b2nd *nd) {
  b2s_mpval v;
  if (b2s_mp_read_any(r, &v) < 0 || v.type != B2S_MPT_BIN ||
      b2s_b2nd_parse(v.p, v.n, 0, nd, NULL) < 0)
    return B2S_E_META;
  return 0;
}

/* One value of key k into p (integers into u[k], checked later). */
static int read_value(b2s_mpreader *r, int k, uint64_t *u,
                      b2s_dframe_params *p) {
  b2s_mpval v;
  switch (k) {
  case K_FILTERS:
    return read_u8s(r, p->cparams.filters);
  case K_FILTERS_META:
    return read_u8s(r, p->cparams.filters_meta);
  case K_USE_DICT:
    if (b2s_mp_read_any(r, &v) < 0 || v.type != B2S_MPT_BOOL)
      return B2S_E_META;
    p->cparams.use_dict = v.b;
    return 0;
  case K_B2ND:
    p->has_b2nd = true;
    return read_b2nd(r, &p->b2nd);
  default:
    return read_uint(r, INT32_MAX, &u[k]);
  }
}

int b2s_dframe_meta_decode(const uint8_t *buf, size_t len,
                           b2s_dframe_params *p) {
  memset(p, 0, sizeof *p);
  b2s_mpreader r;
  b2s_mpreader_init(&r, buf, len);
  b2s_mpval v;
  if (b2s_mp_read_any(&r, &v) < 0 || v.type != B2S_MPT_MAP ||
      v.n > K_COUNT)
    return B2S_E_META;
  uint64_t u[K_COUNT] = {0};
  uint32_t seen = 0, n = v.n;
  for (uint32_t i = 0; i < n; i++) {
    if (b2s_mp_read_any(&r, &v) < 0)
      return B2S_E_META;
    int k = key_of(&v);
    if (k < 0 || (seen & 1u << k) || read_value(&r, k, u, p) < 0)
      return B2S_E_META;
    seen |= 1u << k;
  }
  uint32_t required = (1u << K_COUNT) - 1 - (1u << K_B2ND);
  if ((seen & required) != required || b2s_mpreader_left(&r) != 0 ||
      u[K_FORMAT] != META_FORMAT)
    return B2S_E_META;
  p->chunk_nbytes = (int32_t)u[K_CHUNK_NBYTES];
  p->ranks = (int32_t)u[K_RANKS];
  p->frames_per_block = (int32_t)u[K_FPB];
  p->cparams.codec = (int)u[K_CODEC];
  p->cparams.clevel = (int)u[K_CLEVEL];
  p->cparams.typesize = (int32_t)u[K_TYPESIZE];
  p->cparams.blocksize = (int32_t)u[K_BLOCKSIZE];
  p->cparams.splitmode = (int)u[K_SPLITMODE];
  return b2s_dframe_params_check(p) < 0 ? B2S_E_META : 0;
}

/* The checks of one stream that span several keys, made once its template
 * and its own keys are merged: the path under data_dir, filter parameters
 * and the b2nd geometry, and what follows from them (resolved path, the
 * cparams filter pipeline, blocksize and dtype from the b2nd shape). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_blockorder.h"
#include "config_internal.h"

#define SI(path) b2s_cfg_schema_index(CFG_STREAM, path)

/* ---- path -------------------------------------------------------------- */

static int subst_name(const char *pat, const char *name, char *out,
                      size_t outlen) {
  size_t o = 0, nl = strlen(name);
  for (const char *p = pat; *p;) {
    bool hit = strncmp(p, "{name}", 6) == 0;
    size_t n = hit ? nl : 1;
    if (o + n >= outlen)
      return -ENAMETOOLONG;
    memcpy(out + o, hit ? name : p, n);
    o += n;
    p += hit ? 6 : 1;
  }
  out[o] = '\0';
  return 0;
}

static int finish_path(cfg_ctx *c, const b2s_daemon_cfg *d, b2s_stream_cfg *s,
                       const cfg_loc *loc) {
  int di = SI("path");
  char sub[B2S_CONFIG_PATH_MAX], rel[B2S_CONFIG_PATH_MAX];
  if (!s->path[0])
    return b2s_cfg_loc_fail(c, loc, di, "must not be empty");
  if (subst_name(s->path, s->name, sub, sizeof sub) < 0)
    return b2s_cfg_loc_fail(c, loc, di, "longer than %d bytes",
                        B2S_CONFIG_PATH_MAX - 1);
  char q[96];
  b2s_cfg_quote(q, sizeof q, sub, strlen(sub));
  int rc = b2s_cfg_stream_rel(d->data_dir, sub, rel, sizeof rel);
  if (rc == B2S_E_CONFIG)
    return b2s_cfg_loc_fail(c, loc, di, "%s is not a path inside data_dir", q);
  if (rc == 0)
    rc = b2s_stream_path_resolve(d->data_dir, rel, s->full_path,
                                 sizeof s->full_path);
  if (rc < 0)
    return b2s_cfg_loc_fail(c, loc, di, "%s makes a path longer than %d bytes", q,
                        B2S_CONFIG_PATH_MAX - 1);
  memcpy(s->path, rel, strlen(rel) + 1);
  return 0;
}

/* ---- filters ----------------------------------------------------------- */

static int check_truncprec(cfg_ctx *c, const b2s_stream_cfg *s,
                           const cfg_loc *loc, int i) {
  int ts = s->cparams.typesize;
  int mant = ts == 4 ? 23 : ts == 8 ? 52 : -1;
  if (mant < 0)
    return b2s_cfg_loc_fail(c, loc, SI("filters"),
                        "truncprec needs typesize 4 or 8 (floats), not %d", ts);
  if (s->nfilters_meta == 0)
    return b2s_cfg_loc_fail(c, loc, SI("filters"), "truncprec needs its "
                        "precision in filters_meta");
  int prec = s->filters_meta[i];
  int zeroed = prec >= 0 ? mant - prec : -prec;
  if (prec < -mant || prec > mant || zeroed >= mant)
    return b2s_cfg_loc_item_fail(c, loc, SI("filters_meta"), i, "truncprec "
                             "keeps 1..%d bits (or drops 1..%d with a "
                             "negative value), not %d", mant, mant - 1, prec);
  return 0;
}

static int finish_filters(cfg_ctx *c, b2s_stream_cfg *s, const cfg_loc *loc) {
  if (s->nfilters_meta && s->nfilters_meta != s->nfilters)
    return b2s_cfg_loc_fail(c, loc, SI("filters_meta"), "has %d items but "
                        "filters has %d", s->nfilters_meta, s->nfilters);
  memset(s->cparams.filters, 0, sizeof s->cparams.filters);
  memset(s->cparams.filters_meta, 0, sizeof s->cparams.filters_meta);
  int off = B2S_MAX_FILTERS - s->nfilters;   /* c-blosc2 fills from the end */
  for (int i = 0; i < s->nfilters; i++) {
    int meta = s->nfilters_meta ? s->filters_meta[i] : 0;
    if (s->filters[i] == B2S_FILTER_TRUNC_PREC) {
      int rc = check_truncprec(c, s, loc, i);
      if (rc < 0)
        return rc;
    } else if (meta < 0) {
      return b2s_cfg_loc_item_fail(c, loc, SI("filters_meta"), i, "negative "
                               "values are for truncprec only");
    }
    s->cparams.filters[off + i] = s->filters[i];
    s->cparams.filters_meta[off + i] = (uint8_t)meta;
  }
  return 0;
}

/* ---- b2nd -------------------------------------------------------------- */

/* Item size of a simple NumPy dtype string ("<u2", "|S10"), or 0 when it
 * is something we do not size (structured dtypes, ...). */
static long dtype_itemsize(const char *dt) {
  const char *p = dt;
  if (*p == '<' || *p == '>' || *p == '|' || *p == '=')
    p++;
  if (!*p || !strchr("biufcSUVmM", *p))
    return 0;
  char kind = *p++;
  char *end;
  long n = strtol(p, &end, 10);
  if (end == p || n <= 0 || (*end && !((kind == 'm' || kind == 'M') && *end == '[')))
    return 0;
  return kind == 'U' ? 4 * n : n;
}

static int check_shapes(cfg_ctx *c, b2s_stream_b2nd *b, const cfg_loc *loc) {
  if (b->nshape == 0)
    return b2s_cfg_loc_fail(c, loc, SI("b2nd.shape"), "required with b2nd");
  if (b->nchunkshape == 0)
    return b2s_cfg_loc_fail(c, loc, SI("b2nd.chunkshape"), "required with b2nd");
  if (b->nchunkshape != b->nshape)
    return b2s_cfg_loc_fail(c, loc, SI("b2nd.chunkshape"), "has %d dimension%s, "
                        "shape has %d", b->nchunkshape,
                        b->nchunkshape == 1 ? "" : "s", b->nshape);
  if (b->nblockshape == 0) {
    memcpy(b->blockshape, b->chunkshape, sizeof b->blockshape);
    b->nblockshape = b->nchunkshape;
  }
  if (b->nblockshape != b->nshape)
    return b2s_cfg_loc_fail(c, loc, SI("b2nd.blockshape"), "has %d dimension%s, "
                        "shape has %d", b->nblockshape,
                        b->nblockshape == 1 ? "" : "s", b->nshape);
  for (int i = 1; i < b->nshape; i++)
    if (b->shape[i] == 0)
      return b2s_cfg_loc_item_fail(c, loc, SI("b2nd.shape"), i, "only the "
                               "first dimension may be 0");
  for (int i = 0; i < b->nshape; i++)
    if (b->blockshape[i] > b->chunkshape[i])
      return b2s_cfg_loc_item_fail(c, loc, SI("b2nd.blockshape"), i, "%d is "
                               "larger than the chunkshape's %d",
                               b->blockshape[i], b->chunkshape[i]);
  b->ndim = (int8_t)b->nshape;
  return 0;
}

static int64_t shape_bytes(const int32_t *dims, int n, int64_t typesize,
                           int64_t limit) {
  int64_t v = typesize;
  for (int i = 0; i < n; i++) {
    if (v > limit / dims[i])
      return -1;
    v *= dims[i];
  }
  return v;
}

static int finish_b2nd(cfg_ctx *c, const b2s_daemon_cfg *d, b2s_stream_cfg *s,
                       const cfg_loc *loc) {
  b2s_stream_b2nd *b = &s->b2nd;
  int rc = check_shapes(c, b, loc);
  if (rc < 0)
    return rc;
  int32_t ts = s->cparams.typesize;
  int64_t chunk = shape_bytes(b->chunkshape, b->ndim, ts, d->max_buffer);
  if (chunk < 0)
    return b2s_cfg_loc_fail(c, loc, SI("b2nd.chunkshape"), "a chunk of these "
                        "items is larger than max_buffer (%lld bytes)",
                        (long long)d->max_buffer);
  /* a buffer's items come in C order and are stored block after block
   * (b2s_blockorder.h): blocks splitting several dimensions must tile the
   * chunk, as c-blosc2 would pad it to whole blocks */
  b2s_blockorder order;
  b2s_errdetail why;
  if (b2s_blockorder_init(&order, b->ndim, b->chunkshape, b->blockshape, ts,
                          &why) < 0)
    return b2s_cfg_loc_fail(c, loc, SI("b2nd.blockshape"), "%s", why.text);
  int64_t block = shape_bytes(b->blockshape, b->ndim, ts, B2S_MAX_BLOCKSIZE);
  if (block < 0)
    return b2s_cfg_loc_fail(c, loc, SI("b2nd.blockshape"), "a block is larger "
                        "than %d bytes", B2S_MAX_BLOCKSIZE);
  if (s->cparams.blocksize == 0)
    s->cparams.blocksize = (int32_t)block;
  else if (s->cparams.blocksize != block)
    return b2s_cfg_loc_fail(c, loc, SI("blocksize"), "%d disagrees with "
                        "b2nd.blockshape (%lld bytes)", s->cparams.blocksize,
                        (long long)block);
  if (!b->dtype[0]) {
    if (ts == 1)
      snprintf(b->dtype, sizeof b->dtype, "|u1");
    else if (ts == 2 || ts == 4 || ts == 8)
      snprintf(b->dtype, sizeof b->dtype, "<u%d", (int)ts);
    else
      snprintf(b->dtype, sizeof b->dtype, "|V%d", (int)ts);
  }
  long isz = dtype_itemsize(b->dtype);
  if (isz && isz != ts)
    return b2s_cfg_loc_fail(c, loc, SI("b2nd.dtype"), "'%s' has %ld-byte items "
                        "but typesize is %d", b->dtype, isz, (int)ts);
  return 0;
}

/* ---- distributed ------------------------------------------------------- */

/* Every rank stores whole chunks of one size (a missing frame becomes a
 * gap of that size), so a distributed stream needs it up front. */
static int finish_distributed(cfg_ctx *c, const b2s_daemon_cfg *d,
                              b2s_stream_cfg *s, const cfg_loc *loc) {
  /* c is NULL for streams made at run time: their template was checked */
  if (c && c->cfg && !c->cfg->cluster.enabled)
    return b2s_cfg_loc_fail(c, loc, SI("format"), "distributed needs a cluster "
                        "section");
  int64_t chunk = 0;
  if (s->b2nd.enabled)
    chunk = shape_bytes(s->b2nd.chunkshape, s->b2nd.ndim,
                        s->cparams.typesize, d->max_buffer);
  if (s->chunk_nbytes && chunk && s->chunk_nbytes != chunk)
    return b2s_cfg_loc_fail(c, loc, SI("chunk_nbytes"), "%lld disagrees with "
                        "b2nd.chunkshape (%lld bytes)",
                        (long long)s->chunk_nbytes, (long long)chunk);
  if (!s->chunk_nbytes)
    s->chunk_nbytes = chunk;
  if (!s->chunk_nbytes)
    return b2s_cfg_loc_fail(c, loc, SI("chunk_nbytes"), "required with format: "
                        "distributed (or b2nd)");
  if (s->chunk_nbytes > d->max_buffer)
    return b2s_cfg_loc_fail(c, loc, SI("chunk_nbytes"), "%lld is larger than "
                        "max_buffer (%lld)", (long long)s->chunk_nbytes,
                        (long long)d->max_buffer);
  return 0;
}

int b2s_cfg_stream_finish(cfg_ctx *c, const b2s_daemon_cfg *d, b2s_stream_cfg *s,
                      const cfg_loc *loc) {
  static const cfg_loc none;
  if (!loc)
    loc = &none;
  int rc = finish_path(c, d, s, loc);
  if (rc == 0)
    rc = finish_filters(c, s, loc);
  if (rc == 0 && s->b2nd.enabled)
    rc = finish_b2nd(c, d, s, loc);
  if (rc == 0 && s->format == B2S_FORMAT_DISTRIBUTED)
    rc = finish_distributed(c, d, s, loc);
  /* what the writers will check, so a stream the configuration accepts
   * can always be written */
  if (rc == 0 && (rc = b2s_cparams_check(&s->cparams)) < 0)
    rc = b2s_cfg_loc_fail(c, loc, SI("codec"), "these compression parameters "
                          "cannot be written: %s", b2s_strerror(rc));
  return rc;
}

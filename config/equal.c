/* Equality of settings, walked from the schema, for reloads; and the core's
 * b2nd description of a stream. */
#include <string.h>

#include "config_internal.h"

static bool item_equal(const cfg_desc *d, const char *a, const char *b) {
  if (d->type == CT_ENDPOINTS || d->type == CT_PATHS)
    return strncmp(a, b, d->size) == 0;
  return b2s_cfg_field_get(a, d->size) == b2s_cfg_field_get(b, d->size);
}

bool b2s_cfg_field_equal(const cfg_desc *d, const void *oa, const void *ob) {
  const char *a = (const char *)oa + d->off, *b = (const char *)ob + d->off;
  switch (d->type) {
  case CT_GROUP:
  case CT_TEMPLATES:
  case CT_STREAMS:
  case CT_CLUSTER:
  case CT_SOURCES:
    return true;
  case CT_INT:
  case CT_SIZE:
  case CT_ENUM:
    return b2s_cfg_field_get(a, d->size) == b2s_cfg_field_get(b, d->size);
  case CT_ENDPOINTS:
  case CT_PATHS:
  case CT_ENUM_LIST:
  case CT_INT_LIST: {
    size_t n = b2s_cfg_list_count(d, oa);
    if (n != b2s_cfg_list_count(d, ob))
      return false;
    for (size_t i = 0; i < n; i++)
      if (!item_equal(d, a + i * d->size, b + i * d->size))
        return false;
    return true;
  }
  case CT_FLOAT:
    return memcmp(a, b, sizeof(double)) == 0;
  case CT_SERIES: {
    uint16_t na, nb;
    memcpy(&na, (const char *)oa + d->aux, sizeof na);
    memcpy(&nb, (const char *)ob + d->aux, sizeof nb);
    return na == nb && memcmp(a, b, na) == 0;
  }
  default:
    return strncmp(a, b, d->size) == 0;
  }
}

static bool scope_equal(int scope, const void *a, const void *b) {
  const char *off = NULL;   /* a switched-off group whose keys do not count */
  size_t offlen = 0;
  for (size_t i = 0; i < b2s_cfg_nschema; i++) {
    const cfg_desc *d = &b2s_cfg_schema[i];
    if (d->scope != scope)
      continue;
    if (off && strncmp(d->path, off, offlen) == 0 && d->path[offlen] == '.')
      continue;
    off = NULL;
    if (d->flags & CF_OPTIONAL) {
      bool pa = *((const bool *)((const char *)a + d->aux));
      bool pb = *((const bool *)((const char *)b + d->aux));
      if (pa != pb)
        return false;
      if (!pa) {
        off = d->path;
        offlen = strlen(off);
      }
      continue;
    }
    if (!b2s_cfg_field_equal(d, a, b))
      return false;
  }
  return true;
}

bool b2s_stream_cfg_equal(const b2s_stream_cfg *a, const b2s_stream_cfg *b) {
  const b2s_cparams *x = &a->cparams, *y = &b->cparams;
  return strcmp(a->name, b->name) == 0 &&
         strcmp(a->full_path, b->full_path) == 0 &&
         x->codec == y->codec && x->clevel == y->clevel &&
         x->typesize == y->typesize && x->blocksize == y->blocksize &&
         x->splitmode == y->splitmode && x->use_dict == y->use_dict &&
         memcmp(x->filters, y->filters, sizeof x->filters) == 0 &&
         memcmp(x->filters_meta, y->filters_meta, sizeof x->filters_meta) == 0 &&
         a->b2nd.ndim == b->b2nd.ndim && scope_equal(CFG_STREAM, a, b);
}

bool b2s_daemon_cfg_equal(const b2s_daemon_cfg *a, const b2s_daemon_cfg *b) {
  return scope_equal(CFG_DAEMON, a, b);
}

bool b2s_cluster_cfg_equal(const b2s_cluster_cfg *a, const b2s_cluster_cfg *b) {
  return a->enabled == b->enabled &&
         (!a->enabled || scope_equal(CFG_CLUSTER, a, b));
}

void b2s_stream_cfg_b2nd(const b2s_stream_cfg *s, b2s_b2nd *nd) {
  memset(nd, 0, sizeof *nd);
  nd->version = 0;
  nd->ndim = s->b2nd.ndim;
  for (int i = 0; i < s->b2nd.ndim && i < B2S_CONFIG_MAX_DIM; i++) {
    nd->shape[i] = s->b2nd.shape[i];
    nd->chunkshape[i] = s->b2nd.chunkshape[i];
    nd->blockshape[i] = s->b2nd.blockshape[i];
  }
  nd->has_dtype = true;
  nd->dtype_format = 0;
  nd->dtype = s->b2nd.dtype;
  nd->dtype_len = (uint32_t)strlen(s->b2nd.dtype);
}

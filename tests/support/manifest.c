/* MANIFEST.json loader (json-c).  Missing optional fields read as 0 / "" so
 * every entry kind shares one struct layout. */
#include "manifest.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b2s_names.h"
#include "textfile.h"

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!o || !json_object_object_get_ex(o, key, &v))
    return NULL;
  return v;
}

/* Integers appear as numbers, and header flag bytes as "0x.." strings. */
static int64_t as_int(json_object *v) {
  if (!v)
    return 0;
  if (json_object_is_type(v, json_type_string))
    return strtoll(json_object_get_string(v), NULL, 0);
  return json_object_get_int64(v);
}

static int64_t get_int(json_object *o, const char *key) {
  return as_int(get(o, key));
}

static bool get_bool(json_object *o, const char *key) {
  json_object *v = get(o, key);
  return v && json_object_get_boolean(v);
}

static const char *get_str(json_object *o, const char *key) {
  json_object *v = get(o, key);
  return v && json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : "";
}

static void copy_str(json_object *o, const char *key, char *dst, size_t size) {
  snprintf(dst, size, "%s", get_str(o, key));
}

static char *dup_str(json_object *o, const char *key) {
  return strdup(get_str(o, key));
}

/* Up to n integers of a JSON array; returns how many were read. */
static size_t get_ints(json_object *o, const char *key, int64_t *out,
                       size_t n) {
  json_object *a = get(o, key);
  if (!a || !json_object_is_type(a, json_type_array))
    return 0;
  size_t len = json_object_array_length(a);
  for (size_t i = 0; i < len && i < n; i++)
    out[i] = as_int(json_object_array_get_idx(a, i));
  return len < n ? len : n;
}

int mf_codec_code(const char *codec) {
  int c = b2s_codec_from_name(codec);
  return c < 0 ? -1 : c;
}

int mf_splitmode_code(const char *splitmode) {
  static const char *const names[] = {"always", "never", "auto",
                                      "forward_compat"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(splitmode, names[i]))
      return i + 1;
  return -1;
}

int mf_special_code(const char *special) {
  static const char *const names[] = {"none", "zeros", "nan", "value",
                                      "uninit"};
  for (int i = 0; i < 5; i++)
    if (!strcmp(special, names[i]))
      return i;
  return -1;
}

static void parse_data(json_object *o, mf_data *d) {
  copy_str(o, "formula", d->formula, sizeof d->formula);
  d->seed = (uint64_t)get_int(o, "seed");
  d->offset = (uint64_t)get_int(o, "offset");
  d->nbytes = (uint64_t)get_int(o, "nbytes");
  json_object *t = get(o, "transform");
  d->has_transform = t != NULL;
  d->trunc_prec_bits = (int)get_int(t, "prec_bits");
  d->trunc_typesize = (int)get_int(t, "typesize");
}

static void parse_hex32(const char *hex, uint8_t out[32]) {
  for (int i = 0; i < 32; i++) {
    char byte[3] = {hex[2 * i], hex[2 * i + 1], 0};
    out[i] = (uint8_t)strtoul(byte, NULL, 16);
  }
}

static void parse_chunk(json_object *o, mf_chunk *c) {
  c->index = get_int(o, "index");
  c->nbytes = get_int(o, "nbytes");
  c->cbytes = get_int(o, "cbytes");
  copy_str(o, "sha256", c->sha256, sizeof c->sha256);
  c->content_defined = get_bool(o, "content_defined");
  parse_data(get(o, "data"), &c->data);
  const char *hex = get_str(o, "chunk_header_hex");
  c->has_header_hex = strlen(hex) == 64;
  if (c->has_header_hex)
    parse_hex32(hex, c->header);
  c->has_index_value = get(o, "index_value") != NULL;
  c->index_value = get_int(o, "index_value");
  c->stored_as_special_index_value =
      get_bool(o, "stored_as_special_index_value");
  copy_str(o, "made_with", c->made_with, sizeof c->made_with);
}

static void parse_params(json_object *o, mf_params *p) {
  int64_t v[B2S_MAX_FILTERS] = {0}, meta[B2S_MAX_FILTERS] = {0};
  copy_str(o, "codec", p->codec, sizeof p->codec);
  p->compcode = (int)get_int(o, "compcode");
  p->clevel = (int)get_int(o, "clevel");
  p->typesize = (int32_t)get_int(o, "typesize");
  p->blocksize = (int32_t)get_int(o, "blocksize");
  get_ints(o, "filters", v, B2S_MAX_FILTERS);
  get_ints(o, "filters_meta", meta, B2S_MAX_FILTERS);
  for (int i = 0; i < B2S_MAX_FILTERS; i++) {
    p->filters[i] = (uint8_t)v[i];
    p->filters_meta[i] = (int8_t)meta[i];
  }
  p->splitmode = mf_splitmode_code(get_str(o, "splitmode"));
  p->use_dict = get_bool(o, "use_dict");
  p->nthreads = (int)get_int(o, "nthreads");
}

static void parse_header(json_object *o, mf_header *h) {
  int64_t v[B2S_MAX_FILTERS] = {0}, meta[B2S_MAX_FILTERS] = {0};
  h->present = o != NULL;
  h->extended_header = get_bool(o, "extended_header");
  h->version = (int)get_int(o, "version");
  h->versionlz = (int)get_int(o, "versionlz");
  h->flags = (int)get_int(o, "flags");
  h->typesize = (int)get_int(o, "typesize");
  h->compformat = (int)get_int(o, "compformat");
  h->nbytes = (int32_t)get_int(o, "nbytes");
  h->blocksize = (int32_t)get_int(o, "blocksize");
  h->cbytes = (int32_t)get_int(o, "cbytes");
  h->memcpyed = get_bool(o, "memcpyed");
  h->dont_split = get_bool(o, "dont_split");
  h->has_ext = get(o, "blosc2_flags") != NULL;
  get_ints(o, "filters", v, B2S_MAX_FILTERS);
  get_ints(o, "filters_meta", meta, B2S_MAX_FILTERS);
  for (int i = 0; i < B2S_MAX_FILTERS; i++) {
    h->filters[i] = (uint8_t)v[i];
    h->filters_meta[i] = (uint8_t)meta[i];
  }
  h->udcompcode = (int)get_int(o, "udcompcode");
  h->compcode_meta = (int)get_int(o, "compcode_meta");
  h->blosc2_flags = (int)get_int(o, "blosc2_flags");
  h->blosc2_flags2 = (int)get_int(o, "blosc2_flags2");
  h->special = h->has_ext ? mf_special_code(get_str(o, "special")) : 0;
  h->use_dict = get_bool(o, "use_dict");
  h->vl_blocks = get_bool(o, "vl_blocks");
  h->nblocks = (int32_t)get_int(o, "nblocks");
}

static void parse_b2nd(json_object *o, mf_b2nd *b) {
  int64_t v[VEC_B2ND_MAXDIM];
  b->present = o != NULL;
  if (!o)
    return;
  int ndim = (int)get_int(o, "ndim");
  b->nd.ndim = ndim < 0 || ndim > VEC_B2ND_MAXDIM ? 0 : ndim;
  b->nd.typesize = (int32_t)get_int(o, "typesize");
  get_ints(o, "shape", b->nd.shape, VEC_B2ND_MAXDIM);
  get_ints(o, "chunkshape", v, VEC_B2ND_MAXDIM);
  for (int i = 0; i < b->nd.ndim; i++)
    b->nd.chunkshape[i] = (int32_t)v[i];
  get_ints(o, "blockshape", v, VEC_B2ND_MAXDIM);
  for (int i = 0; i < b->nd.ndim; i++)
    b->nd.blockshape[i] = (int32_t)v[i];
  parse_data(get(o, "logical_data"), &b->logical);
  copy_str(o, "logical_sha256", b->logical_sha256, sizeof b->logical_sha256);
}

static int parse_entry(json_object *o, mf_entry *e) {
  e->name = dup_str(o, "name");
  e->file = dup_str(o, "file");
  e->kind = dup_str(o, "kind");
  e->api = dup_str(o, "api");
  e->note = dup_str(o, "note");
  if (!e->name || !e->file || !e->kind || !e->api || !e->note)
    return -1;
  e->offset = get_int(o, "offset");
  parse_params(get(o, "params"), &e->params);
  parse_header(get(o, "header"), &e->header);
  parse_b2nd(get(o, "b2nd"), &e->b2nd);
  json_object *chunks = get(o, "chunks");
  size_t n = chunks ? json_object_array_length(chunks) : 0;
  e->chunks = calloc(n ? n : 1, sizeof *e->chunks);
  if (!e->chunks)
    return -1;
  e->nchunks = n;
  for (size_t i = 0; i < n; i++)
    parse_chunk(json_object_array_get_idx(chunks, i), &e->chunks[i]);
  return 0;
}

static char *join_path(const char *dir, const char *rel) {
  size_t len = strlen(dir) + strlen(rel) + 2;
  char *p = malloc(len);
  if (p)
    snprintf(p, len, "%s/%s", dir, rel);
  return p;
}

static int parse_entries(json_object *root, mf_manifest *m) {
  json_object *entries = get(root, "entries");
  if (!entries || !json_object_is_type(entries, json_type_array))
    return -1;
  size_t n = json_object_array_length(entries);
  m->entries = calloc(n ? n : 1, sizeof *m->entries);
  if (!m->entries)
    return -1;
  m->nentries = n;
  for (size_t i = 0; i < n; i++)
    if (parse_entry(json_object_array_get_idx(entries, i), &m->entries[i]))
      return -1;
  return 0;
}

static const char *last_json_error(void) {
  const char *msg = json_util_get_last_err();
  return msg ? msg : "unreadable";
}

mf_manifest *mf_load(const char *dir) {
  char *path = join_path(dir, "MANIFEST.json");
  json_object *root = path ? json_object_from_file(path) : NULL;
  mf_manifest *m = calloc(1, sizeof *m);
  int rc = -1;
  if (root && m && (m->dir = strdup(dir)))
    rc = parse_entries(root, m);
  if (rc)
    fprintf(stderr, "cannot load %s: %s\n", path ? path : dir,
            root ? "bad structure or out of memory" : last_json_error());
  json_object_put(root);
  free(path);
  if (rc) {
    mf_free(m);
    return NULL;
  }
  return m;
}

static const char how_to_set[] =
    "set the meson option with `meson configure <builddir> "
    "-Dvectors=/path/to/vectors` (relative paths are taken from the source "
    "root; default tests/vectors) and run the tests with `meson test`";

mf_manifest *mf_load_env(char *why, size_t whylen, bool *missing) {
  const char *dir = getenv("B2S_VECTORS");
  char *path = dir && *dir ? join_path(dir, "MANIFEST.json") : NULL;
  bool absent = !path || access(path, R_OK) != 0;
  if (missing)
    *missing = absent;
  if (absent && why)
    snprintf(why, whylen,
             dir && *dir ? "reference vectors not found: expected %s; %s"
                         : "reference vectors not found: B2S_VECTORS is "
                           "not set%s; %s",
             path ? path : "", how_to_set);
  free(path);
  if (absent)
    return NULL;
  mf_manifest *m = mf_load(dir);
  if (!m && why)
    snprintf(why, whylen, "%s/MANIFEST.json exists but could not be parsed",
             dir);
  return m;
}

static void free_entry(mf_entry *e) {
  free(e->name);
  free(e->file);
  free(e->kind);
  free(e->api);
  free(e->note);
  free(e->chunks);
}

void mf_free(mf_manifest *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->nentries; i++)
    free_entry(&m->entries[i]);
  free(m->entries);
  free(m->dir);
  free(m);
}

const mf_entry *mf_find(const mf_manifest *m, const char *name) {
  for (size_t i = 0; i < m->nentries; i++)
    if (!strcmp(m->entries[i].name, name))
      return &m->entries[i];
  return NULL;
}

uint8_t *mf_read_path(const mf_manifest *m, const char *relpath, size_t *len) {
  char *path = join_path(m->dir, relpath);
  uint8_t *buf = path ? (uint8_t *)ts_read_text(path, len) : NULL;
  if (buf == NULL)
    *len = 0;
  free(path);
  return buf;
}

uint8_t *mf_read_file(const mf_manifest *m, const mf_entry *e, size_t *len) {
  return mf_read_path(m, e->file, len);
}

static uint8_t *generate(const mf_entry *e, const mf_chunk *c, bool transform) {
  const mf_data *d = &c->data;
  uint8_t *buf = malloc(d->nbytes ? d->nbytes : 1);
  if (!buf)
    return NULL;
  int rc;
  if (!strncmp(d->formula, "b2nd-layout:", 12))
    rc = e->b2nd.present ? vec_fill_b2nd(d->formula, d->seed, d->offset,
                                         &e->b2nd.nd, buf, d->nbytes)
                         : -1;
  else
    rc = vec_fill(d->formula, d->seed, d->offset, buf, d->nbytes);
  if (rc == 0 && transform && d->has_transform)
    rc = vec_truncprec(buf, d->nbytes, d->trunc_typesize, d->trunc_prec_bits);
  if (rc) {
    free(buf);
    return NULL;
  }
  return buf;
}

uint8_t *mf_expected(const mf_entry *e, const mf_chunk *c) {
  return generate(e, c, true);
}

uint8_t *mf_source(const mf_entry *e, const mf_chunk *c) {
  return generate(e, c, false);
}

void mf_cparams(const mf_params *p, b2s_cparams *cp) {
  *cp = B2S_CPARAMS_DEFAULTS;
  cp->codec = mf_codec_code(p->codec);
  cp->clevel = p->clevel;
  cp->typesize = p->typesize;
  cp->blocksize = p->blocksize;
  cp->splitmode = p->splitmode;
  cp->use_dict = p->use_dict;
  for (int i = 0; i < B2S_MAX_FILTERS; i++) {
    cp->filters[i] = p->filters[i];
    cp->filters_meta[i] = (uint8_t)p->filters_meta[i];
  }
}

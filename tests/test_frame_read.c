/* Frame reading (core/msgpack, core/frame_format, core/frame) against the
 * c-blosc2 reference vectors, plus hostile input.
 *
 * The vector tests compare everything the manifest records about each frame
 * (header fields, layout, index values, metalayers, vlmetalayers, chunk
 * sizes, headers and SHA-256 of the decoded chunks) and report every
 * mismatch by name before failing.  The manifest's frame block and
 * metalayers are not part of the shared manifest structs, so they are read
 * here straight from MANIFEST.json with json-c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "b2s_chunk.h"
#include "b2s_errors.h"
#include "b2s_frame.h"
#include "b2s_frame_format.h"
#include "manifest.h"
#include "b2s_msgpack.h"
#include "vecdata.h"
#include "ts.h"

static mf_manifest *manifest;
static json_object *manifest_json;
static bool vectors_missing;
static char load_error[1024];

static int group_setup(void **state) {
  (void)state;
  manifest = mf_load_env(load_error, sizeof load_error, &vectors_missing);
  if (manifest != NULL) {
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST.json", manifest->dir);
    manifest_json = json_object_from_file(path);
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  json_object_put(manifest_json);
  mf_free(manifest);
  manifest = NULL;
  return 0;
}

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

/* ---- small helpers ----------------------------------------------------- */

static json_object *jget(json_object *o, const char *key) {
  json_object *v = NULL;
  return o != NULL && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int64_t jint(json_object *o, const char *key) {
  return json_object_get_int64(jget(o, key));
}

/* "0x12"-style fields. */
static long jhex(json_object *o, const char *key) {
  const char *s = json_object_get_string(jget(o, key));
  return s ? strtol(s, NULL, 16) : -1;
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

static void to_hex(const uint8_t *p, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    sprintf(out + 2 * i, "%02x", p[i]);
  out[2 * n] = '\0';
}

static bool hex_equal(const uint8_t *p, size_t n, const char *hex) {
  if (hex == NULL || strlen(hex) != 2 * n)
    return false;
  char *mine = malloc(2 * n + 1);
  assert_non_null(mine);
  to_hex(p, n, mine);
  bool eq = !strcmp(mine, hex);
  free(mine);
  return eq;
}

static bool is_frame(const mf_entry *e) {
  return !strcmp(e->kind, "cframe") || !strcmp(e->kind, "sframe");
}

static bool is_sparse(const mf_entry *e) { return !strcmp(e->kind, "sframe"); }

static void entry_path(const mf_entry *e, char *out, size_t n) {
  snprintf(out, n, "%s/%s", manifest->dir, e->file);
}

/* Bytes of the frame file itself: the cframe, or an sframe's index file. */
static uint8_t *read_frame_file(const mf_entry *e, size_t *len) {
  char rel[1024];
  if (is_sparse(e))
    snprintf(rel, sizeof rel, "%s/%s", e->file, B2S_SFRAME_INDEX_FILE);
  else
    snprintf(rel, sizeof rel, "%s", e->file);
  uint8_t *p = mf_read_path(manifest, rel, len);
  assert_non_null(p);
  return p;
}

/* An exact-size heap copy, so the sanitizers see any read past the end. */
static uint8_t *dup_exact(const uint8_t *p, size_t n) {
  uint8_t *q = malloc(n ? n : 1);
  assert_non_null(q);
  if (n)
    memcpy(q, p, n);
  return q;
}

static int open_entry(const mf_entry *e, b2s_frame **f, b2s_frame_error *err) {
  char path[4096];
  entry_path(e, path, sizeof path);
  if (is_sparse(e))
    return b2s_frame_open_sparse(path, f, err);
  return b2s_frame_open_file(path, e->offset, f, err);
}

/* ---- msgpack ------------------------------------------------------------ */

static void test_msgpack_roundtrip(void **state) {
  (void)state;
  b2s_mpbuf b;
  b2s_mpbuf_init(&b);
  static const uint8_t ext[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                  14, 15, 16};
  assert_int_equal(b2s_mp_write_fixarray(&b, 14), 0);
  assert_int_equal(b2s_mp_write_fixint(&b, 127), 0);
  assert_int_equal(b2s_mp_write_fixstr(&b, "b2frame", 8), 0);
  assert_int_equal(b2s_mp_write_str8(&b, "abc", 3), 0);
  assert_int_equal(b2s_mp_write_str32(&b, "<i4", 3), 0);
  assert_int_equal(b2s_mp_write_bin32(&b, "\x01\x02", 2), 0);
  assert_int_equal(b2s_mp_write_int16(&b, -2), 0);
  assert_int_equal(b2s_mp_write_int32(&b, INT32_MIN), 0);
  assert_int_equal(b2s_mp_write_int64(&b, -5), 0);
  assert_int_equal(b2s_mp_write_uint16(&b, 0xbeef), 0);
  assert_int_equal(b2s_mp_write_uint32(&b, 0xdeadbeef), 0);
  assert_int_equal(b2s_mp_write_uint64(&b, UINT64_MAX), 0);
  assert_int_equal(b2s_mp_write_map16(&b, 3), 0);
  assert_int_equal(b2s_mp_write_array16(&b, 65535), 0);
  assert_int_equal(b2s_mp_write_fixext16(&b, 6, ext), 0);
  assert_int_equal(b2s_mp_write_bool(&b, true), 0);
  assert_int_equal(b2s_mp_write_bool(&b, false), 0);
  /* values that do not fit their encoding */
  assert_int_equal(b2s_mp_write_fixarray(&b, 16), B2S_E_ARG);
  assert_int_equal(b2s_mp_write_fixint(&b, 128), B2S_E_ARG);
  assert_int_equal(b2s_mp_write_fixstr(&b, "x", 32), B2S_E_ARG);

  b2s_mpreader r;
  b2s_mpreader_init(&r, b.data, b.len);
  uint8_t u8;
  const uint8_t *s;
  uint32_t n32;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  int8_t type;
  bool v;
  assert_int_equal(b2s_mp_read_fixarray(&r, &u8), 0);
  assert_int_equal(u8, 14);
  assert_int_equal(b2s_mp_read_fixint(&r, &u8), 0);
  assert_int_equal(u8, 127);
  assert_int_equal(b2s_mp_read_fixstr(&r, &s, &u8), 0);
  assert_int_equal(u8, 8);
  assert_memory_equal(s, "b2frame", 8);
  assert_int_equal(b2s_mp_read_str8(&r, &s, &u8), 0);
  assert_int_equal(u8, 3);
  assert_int_equal(b2s_mp_read_str32(&r, &s, &n32), 0);
  assert_int_equal(n32, 3);
  assert_memory_equal(s, "<i4", 3);
  assert_int_equal(b2s_mp_read_bin32(&r, &s, &n32), 0);
  assert_int_equal(n32, 2);
  assert_int_equal(b2s_mp_read_int16(&r, &i16), 0);
  assert_int_equal(i16, -2);
  assert_int_equal(b2s_mp_read_int32(&r, &i32), 0);
  assert_true(i32 == INT32_MIN);
  assert_int_equal(b2s_mp_read_int64(&r, &i64), 0);
  assert_true(i64 == -5);
  assert_int_equal(b2s_mp_read_uint16(&r, &u16), 0);
  assert_int_equal(u16, 0xbeef);
  assert_int_equal(b2s_mp_read_uint32(&r, &u32), 0);
  assert_true(u32 == 0xdeadbeef);
  assert_int_equal(b2s_mp_read_uint64(&r, &u64), 0);
  assert_true(u64 == UINT64_MAX);
  assert_int_equal(b2s_mp_read_map16(&r, &u16), 0);
  assert_int_equal(u16, 3);
  assert_int_equal(b2s_mp_read_array16(&r, &u16), 0);
  assert_int_equal(u16, 65535);
  assert_int_equal(b2s_mp_read_fixext16(&r, &type, &s), 0);
  assert_int_equal(type, 6);
  assert_memory_equal(s, ext, 16);
  assert_int_equal(b2s_mp_read_bool(&r, &v), 0);
  assert_true(v);
  assert_int_equal(b2s_mp_read_bool(&r, &v), 0);
  assert_false(v);
  assert_int_equal(b2s_mpreader_left(&r), 0);
  assert_int_equal(b2s_mp_read_bool(&r, &v), B2S_E_TRUNCATED);
  b2s_mpbuf_fini(&b);
}

static void test_msgpack_hostile(void **state) {
  (void)state;
  b2s_mpreader r;
  int32_t i32;
  const uint8_t *s;
  uint32_t n;
  uint8_t u8;
  /* wrong marker: error, cursor unmoved */
  static const uint8_t bad[] = {0xce, 0, 0, 0, 1};
  b2s_mpreader_init(&r, bad, sizeof bad);
  assert_int_equal(b2s_mp_read_int32(&r, &i32), B2S_E_MSGPACK);
  assert_int_equal(r.pos, 0);
  /* value cut short */
  b2s_mpreader_init(&r, (const uint8_t[]){0xd2, 0, 0}, 3);
  assert_int_equal(b2s_mp_read_int32(&r, &i32), B2S_E_TRUNCATED);
  /* lengths beyond the buffer, including ones that would wrap */
  static const uint8_t big[] = {0xc6, 0xff, 0xff, 0xff, 0xff, 0};
  b2s_mpreader_init(&r, big, sizeof big);
  assert_int_equal(b2s_mp_read_bin32(&r, &s, &n), B2S_E_TRUNCATED);
  b2s_mpreader_init(&r, (const uint8_t[]){0xa5, 'a'}, 2);
  assert_int_equal(b2s_mp_read_fixstr(&r, &s, &u8), B2S_E_TRUNCATED);
  b2s_mpreader_init(&r, (const uint8_t[]){0xd9, 9, 'a'}, 3);
  assert_int_equal(b2s_mp_read_str8(&r, &s, &u8), B2S_E_TRUNCATED);
  b2s_mpreader_init(&r, NULL, 0);
  assert_int_equal(b2s_mp_read_fixarray(&r, &u8), B2S_E_TRUNCATED);
  b2s_mpreader_init(&r, (const uint8_t[]){0x80}, 1);
  assert_int_equal(b2s_mp_read_fixint(&r, &u8), B2S_E_MSGPACK);
}

/* ---- the vectors ---------------------------------------------------------- */

static void check_header_fields(const char *name, const b2s_frame_header *h,
                                json_object *fr) {
  CHECK(h->header_len == jint(fr, "header_len"), "%s: header_len %d", name,
        h->header_len);
  CHECK(h->frame_len == jint(fr, "frame_len"), "%s: frame_len", name);
  CHECK(h->general_flags == jhex(fr, "general_flags"), "%s: general_flags",
        name);
  CHECK(h->frame_type == jint(fr, "frame_type"), "%s: frame_type", name);
  CHECK(h->codec_flags == jhex(fr, "codec_flags"), "%s: codec_flags", name);
  CHECK(h->other_flags == jhex(fr, "other_flags"), "%s: other_flags", name);
  CHECK(h->other_flags2 == jhex(fr, "other_flags2"), "%s: other_flags2", name);
  CHECK(h->nbytes == jint(fr, "nbytes"), "%s: nbytes", name);
  CHECK(h->cbytes == jint(fr, "cbytes"), "%s: cbytes", name);
  CHECK(h->typesize == jint(fr, "typesize"), "%s: typesize", name);
  CHECK(h->blocksize == jint(fr, "blocksize"), "%s: blocksize", name);
  CHECK(h->chunksize == jint(fr, "chunksize"), "%s: chunksize", name);
  CHECK(h->nthreads_c == jint(fr, "nthreads_c"), "%s: nthreads_c", name);
  CHECK(h->nthreads_d == jint(fr, "nthreads_d"), "%s: nthreads_d", name);
  CHECK(h->has_vlmeta == json_object_get_boolean(jget(fr, "has_vlmetalayers")),
        "%s: has_vlmetalayers", name);
  CHECK(h->nfilters == jint(fr, "nfilters"), "%s: nfilters", name);
  CHECK(h->udcodec == jint(fr, "udcodec"), "%s: udcodec", name);
  CHECK(h->compcode_meta == jint(fr, "compcode_meta"), "%s: compcode_meta",
        name);
  json_object *fl = jget(fr, "filters"), *fm = jget(fr, "filters_meta");
  for (int i = 0; i < 6; i++) {
    CHECK(h->filters[i] == json_object_get_int(json_object_array_get_idx(fl, i)),
          "%s: filters[%d]", name, i);
    CHECK(h->filters_meta[i] ==
              json_object_get_int(json_object_array_get_idx(fm, i)),
          "%s: filters_meta[%d]", name, i);
  }
}

static void check_layout(const char *name, b2s_frame *f, json_object *fr) {
  int64_t io, to, tl;
  int32_t ic;
  assert_int_equal(b2s_frame_layout(f, &io, &ic, &to, &tl), 0);
  CHECK(io == jint(fr, "index_chunk_offset"), "%s: index offset %lld", name,
        (long long)io);
  CHECK(ic == jint(fr, "index_chunk_cbytes"), "%s: index cbytes %d", name, ic);
  CHECK(to == jint(fr, "trailer_offset"), "%s: trailer offset", name);
  CHECK(tl == jint(fr, "trailer_len"), "%s: trailer_len", name);
  json_object *iv = jget(fr, "index_values");
  int64_t n = b2s_frame_nchunks(f);
  const int64_t *index = b2s_frame_index(f);
  CHECK(n == (int64_t)json_object_array_length(iv), "%s: nchunks %lld", name,
        (long long)n);
  for (int64_t i = 0; i < n && i < (int64_t)json_object_array_length(iv); i++)
    CHECK(index[i] == json_object_get_int64(json_object_array_get_idx(iv, i)),
          "%s: index[%lld] = %lld", name, (long long)i, (long long)index[i]);
}

static void check_metalayers(const char *name, b2s_frame *f, json_object *je) {
  json_object *ml = jget(je, "metalayers");
  const b2s_frame_metas *m = b2s_frame_metalayers(f);
  CHECK(m->n == (int32_t)json_object_array_length(ml), "%s: %d metalayers",
        name, m->n);
  for (int32_t i = 0; i < m->n && i < (int32_t)json_object_array_length(ml);
       i++) {
    json_object *x = json_object_array_get_idx(ml, i);
    const char *mname = json_object_get_string(jget(x, "name"));
    CHECK(!strcmp(m->items[i].name, mname), "%s: metalayer %d name", name, i);
    const uint8_t *content;
    int32_t len;
    int rc = b2s_frame_meta_get(f, mname, &content, &len);
    CHECK(rc == 0 && hex_equal(content, (size_t)len,
                               json_object_get_string(jget(x, "hex"))),
          "%s: metalayer %s content", name, mname);
  }
  const uint8_t *content;
  int32_t len;
  CHECK(b2s_frame_meta_get(f, "no such layer", &content, &len) ==
                B2S_E_NOTFOUND &&
            b2s_frame_last_error(f)->code == B2S_E_NOTFOUND,
        "%s: missing metalayer not reported", name);
}

static void check_vlmetalayers(const char *name, b2s_frame *f,
                               json_object *je) {
  json_object *vl = jget(je, "vlmetalayers");
  const b2s_frame_metas *m = b2s_frame_vlmetalayers(f);
  CHECK(m->n == (int32_t)json_object_array_length(vl), "%s: %d vlmetalayers",
        name, m->n);
  for (int32_t i = 0; i < m->n && i < (int32_t)json_object_array_length(vl);
       i++) {
    json_object *x = json_object_array_get_idx(vl, i);
    const char *vname = json_object_get_string(jget(x, "name"));
    CHECK(!strcmp(m->items[i].name, vname), "%s: vlmetalayer %d name", name,
          i);
    CHECK(m->items[i].len == jint(x, "stored_len"), "%s: vlmeta %s stored len",
          name, vname);
    uint8_t *content = NULL;
    int32_t len = 0;
    int rc = b2s_frame_vlmeta_get(f, vname, NULL, &content, &len);
    CHECK(rc == 0 && hex_equal(content, (size_t)len,
                               json_object_get_string(jget(x, "hex"))),
          "%s: vlmetalayer %s content (rc %d)", name, vname, rc);
    free(content);
  }
  uint8_t *content;
  int32_t len;
  CHECK(b2s_frame_vlmeta_get(f, "nope", NULL, &content, &len) ==
            B2S_E_NOTFOUND,
        "%s: missing vlmetalayer not reported", name);
}

static void check_chunk(const mf_entry *e, b2s_frame *f, const mf_chunk *c,
                        uint8_t *dst, size_t dstsize) {
  const char *name = e->name;
  long long i = (long long)c->index;
  int32_t cbytes = -1, nbytes = -1;
  int rc = b2s_frame_chunk_sizes(f, c->index, &cbytes, &nbytes);
  CHECK(rc == 0 && cbytes == c->cbytes && nbytes == c->nbytes,
        "%s[%lld]: sizes rc %d cbytes %d nbytes %d", name, i, rc, cbytes,
        nbytes);
  /* the chunk as stored (or synthesised): its header must be the
   * manifest's */
  uint8_t *raw = malloc((size_t)c->cbytes);
  assert_non_null(raw);
  rc = b2s_frame_chunk_read(f, c->index, raw, (size_t)c->cbytes);
  CHECK(rc == c->cbytes, "%s[%lld]: chunk_read rc %d (%s)", name, i, rc,
        b2s_strerror(rc));
  if (rc >= 32 && c->has_header_hex)
    CHECK(!memcmp(raw, c->header, 32), "%s[%lld]: chunk header differs", name,
          i);
  if (c->cbytes > 0)
    CHECK(b2s_frame_chunk_read(f, c->index, raw, (size_t)c->cbytes - 1) ==
              B2S_E_DEST_SMALL,
          "%s[%lld]: short destination accepted", name, i);
  free(raw);

  memset(dst, 0, dstsize);
  rc = b2s_frame_chunk_decompress(f, c->index, NULL, dst, dstsize);
  CHECK(rc == c->nbytes, "%s[%lld]: decompress rc %d (%s, %s)", name, i, rc,
        b2s_strerror(rc), b2s_frame_last_error(f)->reason);
  if (rc == c->nbytes && c->content_defined) {
    char sha[65];
    vec_sha256_hex(dst, (size_t)rc, sha);
    CHECK(!strcmp(sha, c->sha256), "%s[%lld]: sha256 differs", name, i);
  }
  if (c->nbytes > 0)
    CHECK(b2s_frame_chunk_decompress(f, c->index, NULL, dst,
                                     (size_t)c->nbytes - 1) ==
              B2S_E_DEST_SMALL,
          "%s[%lld]: short destination accepted", name, i);
}

static void check_b2nd(const mf_entry *e, b2s_frame *f) {
  b2s_b2nd nd;
  int rc = b2s_frame_b2nd_get(f, &nd);
  if (!e->b2nd.present) {
    CHECK(rc == B2S_E_NOTFOUND, "%s: unexpected b2nd (rc %d)", e->name, rc);
    return;
  }
  CHECK(rc == 0, "%s: b2nd_get rc %d", e->name, rc);
  if (rc < 0)
    return;
  const vec_b2nd *want = &e->b2nd.nd;
  CHECK(nd.ndim == want->ndim, "%s: b2nd ndim", e->name);
  for (int d = 0; d < nd.ndim && d < want->ndim; d++)
    CHECK(nd.shape[d] == want->shape[d] &&
              nd.chunkshape[d] == want->chunkshape[d] &&
              nd.blockshape[d] == want->blockshape[d],
          "%s: b2nd dimension %d", e->name, d);
  json_object *jb = jget(json_entry(e->name), "b2nd");
  const char *dtype = json_object_get_string(jget(jb, "dtype"));
  CHECK(nd.has_dtype && dtype && nd.dtype_len == strlen(dtype) &&
            !memcmp(nd.dtype, dtype, nd.dtype_len),
        "%s: b2nd dtype", e->name);
  CHECK(nd.dtype_format == jint(jb, "dtype_format"), "%s: dtype format",
        e->name);
  /* serialising it again gives the stored metalayer */
  const uint8_t *content;
  int32_t len;
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  assert_int_equal(b2s_frame_meta_get(f, "b2nd", &content, &len), 0);
  assert_int_equal(b2s_b2nd_write(&nd, &out), 0);
  CHECK(out.len == (size_t)len && !memcmp(out.data, content, out.len),
        "%s: b2nd metalayer does not re-serialise identically", e->name);
  b2s_mpbuf_fini(&out);
}

static void check_frame(const mf_entry *e, b2s_frame *f) {
  json_object *je = json_entry(e->name);
  json_object *fr = jget(je, "frame");
  assert_non_null(fr);
  CHECK(b2s_frame_is_sparse(f) == is_sparse(e), "%s: kind", e->name);
  check_header_fields(e->name, b2s_frame_header_get(f), fr);
  check_layout(e->name, f, fr);
  check_metalayers(e->name, f, je);
  check_vlmetalayers(e->name, f, je);
  check_b2nd(e, f);
  CHECK(b2s_frame_nchunks(f) == (int64_t)e->nchunks, "%s: nchunks", e->name);
  size_t dstsize = 1;
  for (size_t k = 0; k < e->nchunks; k++)
    if ((size_t)e->chunks[k].nbytes > dstsize)
      dstsize = (size_t)e->chunks[k].nbytes;
  uint8_t *dst = malloc(dstsize);
  assert_non_null(dst);
  for (size_t k = 0; k < e->nchunks; k++)
    check_chunk(e, f, &e->chunks[k], dst, dstsize);
  free(dst);
  uint8_t one;
  int64_t n = b2s_frame_nchunks(f);
  CHECK(b2s_frame_chunk_decompress(f, n, NULL, &one, 1) == B2S_E_NCHUNK &&
            b2s_frame_last_error(f)->nchunk == n,
        "%s: chunk past the end accepted", e->name);
  CHECK(b2s_frame_chunk_decompress(f, -1, NULL, &one, 1) == B2S_E_NCHUNK,
        "%s: chunk -1 accepted", e->name);
}

static void test_vector_frames(void **state) {
  (void)state;
  need_vectors();
  failures = 0;
  int nframes = 0;
  for (size_t k = 0; k < manifest->nentries; k++) {
    const mf_entry *e = &manifest->entries[k];
    if (!is_frame(e))
      continue;
    nframes++;
    b2s_frame *f = NULL;
    b2s_frame_error err;
    int rc = open_entry(e, &f, &err);
    CHECK(rc == 0, "%s: open failed: %s at %lld (%s)", e->name,
          b2s_strerror(rc), (long long)err.offset, err.reason);
    if (rc == 0)
      check_frame(e, f);
    b2s_frame_free(f);

    /* the generic opener picks the right kind */
    char path[4096];
    entry_path(e, path, sizeof path);
    if (e->offset == 0) {
      rc = b2s_frame_open(path, &f, &err);
      CHECK(rc == 0 && b2s_frame_is_sparse(f) == is_sparse(e),
            "%s: b2s_frame_open rc %d", e->name, rc);
      b2s_frame_free(f);
    }
  }
  print_message("checked %d frames\n", nframes);
  assert_true(nframes >= 10);
  assert_int_equal(failures, 0);
}

/* Contiguous frames opened from an exact-size memory copy. */
static void test_vector_frames_memory(void **state) {
  (void)state;
  need_vectors();
  failures = 0;
  for (size_t k = 0; k < manifest->nentries; k++) {
    const mf_entry *e = &manifest->entries[k];
    if (!is_frame(e) || is_sparse(e))
      continue;
    size_t len;
    uint8_t *file = read_frame_file(e, &len);
    uint8_t *buf = dup_exact(file + e->offset, len - (size_t)e->offset);
    b2s_frame *f = NULL;
    b2s_frame_error err;
    int rc = b2s_frame_open_buffer(buf, len - (size_t)e->offset, &f, &err);
    CHECK(rc == 0, "%s: memory open: %s (%s)", e->name, b2s_strerror(rc),
          err.reason);
    if (rc == 0)
      check_frame(e, f);
    b2s_frame_free(f);
    free(buf);
    free(file);
  }
  assert_int_equal(failures, 0);
}

/* A frame inside a bigger file, with bytes before and after it. */
static void test_frame_at_offset(void **state) {
  (void)state;
  need_vectors();
  const mf_entry *e = mf_find(manifest, "cframe_zstd_meta_vlmeta");
  assert_non_null(e);
  size_t len;
  uint8_t *frame = read_frame_file(e, &len);
  char path[] = "/tmp/b2s_frame_offset_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  static const uint8_t junk[100] = {0x9e, 0xa8};
  assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
  assert_int_equal(write(fd, frame, len), (ssize_t)len);
  assert_int_equal(write(fd, junk, 50), 50);
  close(fd);
  b2s_frame *f = NULL;
  b2s_frame_error err;
  failures = 0;
  assert_int_equal(b2s_frame_open_file(path, 100, &f, &err), 0);
  check_frame(e, f);
  b2s_frame_free(f);
  /* not a frame at offset 0, and an offset past the end */
  assert_true(b2s_frame_open_file(path, 0, &f, &err) < 0);
  assert_int_equal(b2s_frame_open_file(path, 1 << 20, &f, &err),
                   B2S_E_TRUNCATED);
  unlink(path);
  free(frame);
  assert_int_equal(failures, 0);
}

/* Header and trailer parse, then serialise byte for byte identically. */
static void test_format_roundtrip(void **state) {
  (void)state;
  need_vectors();
  failures = 0;
  for (size_t k = 0; k < manifest->nentries; k++) {
    const mf_entry *e = &manifest->entries[k];
    if (!is_frame(e))
      continue;
    size_t len;
    uint8_t *file = read_frame_file(e, &len);
    const uint8_t *fp = file + e->offset;
    b2s_frame_header h;
    b2s_frame_metas metas, vl;
    b2s_frame_metas_init(&metas);
    b2s_frame_metas_init(&vl);
    b2s_frame_error err;
    assert_int_equal(b2s_frame_header_parse(fp, len, &h, &err), 0);
    assert_int_equal(b2s_frame_metas_parse(fp, (size_t)h.header_len, &metas,
                                           &err), 0);
    uint32_t tlen;
    assert_int_equal(b2s_frame_tail_parse(fp + h.frame_len - B2S_FRAME_TAIL_LEN, h.frame_len,
                                          h.header_len, &tlen, &err), 0);
    int64_t toff = h.frame_len - tlen;
    assert_int_equal(b2s_frame_trailer_parse(fp + toff, tlen, toff, &vl, &err),
                     0);
    assert_int_equal(b2s_frame_header_size(&metas), h.header_len);
    assert_int_equal(b2s_frame_trailer_size(&vl), tlen);

    b2s_mpbuf out;
    b2s_mpbuf_init(&out);
    int rc = b2s_frame_header_write(&h, &metas, &out);
    CHECK(rc == h.header_len && out.len == (size_t)h.header_len &&
              !memcmp(out.data, fp, out.len),
          "%s: header does not re-serialise identically", e->name);
    uint8_t fixed[B2S_FRAME_HEADER_FIXED];
    b2s_frame_header_encode(&h, fixed);
    CHECK(!memcmp(fixed, fp, sizeof fixed), "%s: fixed header differs",
          e->name);
    out.len = 0;
    rc = b2s_frame_trailer_write(&vl, &out);
    CHECK(rc == (int)tlen && out.len == tlen &&
              !memcmp(out.data, fp + toff, tlen),
          "%s: trailer does not re-serialise identically", e->name);
    b2s_mpbuf_fini(&out);
    b2s_frame_metas_fini(&metas);
    b2s_frame_metas_fini(&vl);
    free(file);
  }
  assert_int_equal(failures, 0);
}

/* Building a frame's structures from scratch, as a writer will. */
static void test_format_build(void **state) {
  (void)state;
  b2s_frame_metas m;
  b2s_frame_metas_init(&m);
  assert_int_equal(b2s_frame_metas_add(&m, "mymeta", "\x93\x01\x02\xa3" "abc",
                                       7), 0);
  assert_int_equal(b2s_frame_metas_add(&m, "empty", NULL, 0), 1);
  assert_int_equal(b2s_frame_metas_add(&m, "mymeta", "x", 1), B2S_E_ARG);
  assert_int_equal(b2s_frame_metas_add(&m, "0123456789012345678901234567890"
                                           "12", "x", 1), B2S_E_ARG);
  assert_int_equal(b2s_frame_metas_find(&m, "empty"), 1);
  assert_int_equal(b2s_frame_metas_find(&m, "nope"), B2S_E_NOTFOUND);
  b2s_frame_header h = {.frame_len = 1000, .general_flags = 0x12,
                        .typesize = 4, .chunksize = -1, .nthreads_c = 1,
                        .nthreads_d = 1, .nfilters = 6};
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  int hl = b2s_frame_header_write(&h, &m, &out);
  assert_true(hl > B2S_FRAME_HEADER_FIXED);
  b2s_frame_header back;
  b2s_frame_metas mb, vl;
  b2s_frame_metas_init(&mb);
  b2s_frame_metas_init(&vl);
  b2s_frame_error err;
  assert_int_equal(b2s_frame_header_parse(out.data, out.len, &back, &err), 0);
  assert_int_equal(back.header_len, hl);
  assert_int_equal(b2s_frame_metas_parse(out.data, out.len, &mb, &err), 0);
  assert_int_equal(mb.n, 2);
  assert_string_equal(mb.items[1].name, "empty");
  assert_int_equal(mb.items[0].len, 7);
  out.len = 0;
  int tl = b2s_frame_trailer_write(&m, &out);
  assert_int_equal(b2s_frame_trailer_parse(out.data, out.len, 0, &vl, &err),
                   0);
  assert_int_equal(tl, (int)out.len);
  assert_int_equal(vl.n, 2);
  assert_memory_equal(vl.items[0].content, "\x93\x01\x02\xa3" "abc", 7);
  b2s_mpbuf_fini(&out);
  b2s_frame_metas_fini(&m);
  b2s_frame_metas_fini(&mb);
  b2s_frame_metas_fini(&vl);
  /* special entries */
  assert_int_equal(b2s_frame_entry_kind(0), 0);
  assert_int_equal(b2s_frame_entry_kind(B2S_FRAME_ENTRY_ZERO),
                   B2S_SPECIAL_ZERO);
  assert_int_equal(b2s_frame_entry_kind(B2S_FRAME_ENTRY_NAN), B2S_SPECIAL_NAN);
  assert_int_equal(b2s_frame_entry_kind(B2S_FRAME_ENTRY_UNINIT),
                   B2S_SPECIAL_UNINIT);
  assert_int_equal(b2s_frame_entry_kind(-1), B2S_E_INDEX);
  assert_int_equal(b2s_frame_entry_kind(INT64_MIN | (INT64_C(3) << 56)),
                   B2S_E_INDEX);
}

/* ---- hostile input: whole frames -------------------------------------------- */

/* Open buf[0..len) (an exact-size copy) and, if it opens, read and decode
 * every chunk.  Checks the error contract; returns the open result. */
static int open_and_drain(const uint8_t *buf, size_t len,
                          b2s_frame_error *err) {
  b2s_frame *f = NULL;
  uint8_t *copy = dup_exact(buf, len);
  int rc = b2s_frame_open_buffer(copy, len, &f, err);
  if (rc < 0) {
    assert_null(f);
    assert_int_equal(err->code, rc);
    assert_non_null(err->reason);
    assert_true(err->offset >= -1 && err->offset <= (int64_t)len);
  } else {
    uint8_t *dst = malloc(1 << 16);
    assert_non_null(dst);
    for (int64_t i = 0; i < b2s_frame_nchunks(f); i++) {
      int32_t cb, nb;
      if (b2s_frame_chunk_sizes(f, i, &cb, &nb) < 0) {
        assert_true(b2s_frame_last_error(f)->code < 0);
        continue;
      }
      int r = b2s_frame_chunk_decompress(f, i, NULL, dst, 1 << 16);
      if (r < 0) {
        assert_int_equal(b2s_frame_last_error(f)->code, r);
        assert_int_equal(b2s_frame_last_error(f)->nchunk, i);
      }
      r = b2s_frame_chunk_read(f, i, dst, 1 << 16);
      assert_true(r < 0 || r <= (1 << 16));
    }
    free(dst);
  }
  b2s_frame_free(f);
  free(copy);
  return rc;
}

static const char *const small_frames[] = {
    "cframe_zstd_meta_vlmeta", "cframe_fill_special_zeros", "b2nd_2d_i4_50x37",
    "cframe_zstd_ops", "cframe_special_chunks"};

static void test_truncated_frames(void **state) {
  (void)state;
  need_vectors();
  for (size_t k = 0; k < sizeof small_frames / sizeof *small_frames; k++) {
    const mf_entry *e = mf_find(manifest, small_frames[k]);
    assert_non_null(e);
    size_t len;
    uint8_t *file = read_frame_file(e, &len);
    b2s_frame_error err;
    for (size_t cut = 0; cut < len; cut++) {
      /* as cut: the file ends early */
      assert_int_equal(open_and_drain(file, cut, &err), B2S_E_TRUNCATED);
      /* cut, and frame_len says so: the structures no longer line up */
      if (cut >= B2S_FRAME_HEADER_FIXED && cut % 7 == 0) {
        uint8_t *p = dup_exact(file, cut);
        b2s_mp_store_be64(p + B2S_FRAME_OFF_FRAME_LEN, cut);
        assert_true(open_and_drain(p, cut, &err) < 0);
        free(p);
      }
    }
    free(file);
  }
}

/* Flip bits of every byte (small frames) and check nothing breaks. */
static void test_flipped_bytes(void **state) {
  (void)state;
  need_vectors();
  static const uint8_t masks[] = {0x01, 0x80, 0xff};
  int opened = 0, rejected = 0;
  for (size_t k = 0; k < sizeof small_frames / sizeof *small_frames; k++) {
    const mf_entry *e = mf_find(manifest, small_frames[k]);
    size_t len;
    uint8_t *file = read_frame_file(e, &len);
    uint8_t *p = dup_exact(file, len);
    b2s_frame_error err;
    for (size_t pos = 0; pos < len; pos++) {
      for (size_t m = 0; m < sizeof masks; m++) {
        p[pos] ^= masks[m];
        if (open_and_drain(p, len, &err) == 0)
          opened++;
        else
          rejected++;
        p[pos] ^= masks[m];
      }
    }
    free(p);
    free(file);
  }
  print_message("flipped bytes: %d opened, %d rejected\n", opened, rejected);
  assert_true(rejected > 0);
}

/* ---- hostile input: targeted corruptions with their exact error ----------------- */

typedef struct patch_case {
  const char *what;
  int64_t pos;                     /* frame offset; negative: from the end */
  int width;                       /* 1, 2, 4 (BE) or 8 (BE), or -8 (LE) */
  uint64_t value;
  int code;                        /* expected open error, 0 = opens */
  int64_t at;                      /* expected error offset (-2 = any) */
} patch_case;

static void put(uint8_t *p, int width, uint64_t v) {
  switch (width) {
  case 1: p[0] = (uint8_t)v; break;
  case 2: b2s_mp_store_be16(p, (uint16_t)v); break;
  case 4: b2s_mp_store_be32(p, (uint32_t)v); break;
  case 8: b2s_mp_store_be64(p, v); break;
  default:
    for (int i = 0; i < 8; i++)
      p[i] = (uint8_t)(v >> (8 * i));
  }
}

static int run_patch(const uint8_t *file, size_t len, const patch_case *pc,
                     b2s_frame_error *err) {
  uint8_t *p = dup_exact(file, len);
  int64_t pos = pc->pos < 0 ? (int64_t)len + pc->pos : pc->pos;
  put(p + pos, pc->width, pc->value);
  int rc = open_and_drain(p, len, err);
  free(p);
  return rc;
}

static void run_patch_table(const char *vector, const patch_case *cases,
                            size_t n) {
  const mf_entry *e = mf_find(manifest, vector);
  assert_non_null(e);
  size_t len;
  uint8_t *file = read_frame_file(e, &len);
  failures = 0;
  for (size_t k = 0; k < n; k++) {
    const patch_case *pc = &cases[k];
    b2s_frame_error err;
    b2s_frame_error_clear(&err);
    int rc = run_patch(file, len, pc, &err);
    int64_t at = pc->at < 0 && pc->at != -2 ? (int64_t)len + pc->at : pc->at;
    CHECK(rc == pc->code && (pc->at == -2 || rc == 0 || err.offset == at),
          "%s / %s: got %d (%s) at %lld (%s), want %d at %lld", vector,
          pc->what, rc, b2s_strerror(rc), (long long)err.offset,
          err.reason ? err.reason : "-", pc->code, (long long)at);
  }
  free(file);
  assert_int_equal(failures, 0);
}

/* cframe_zstd_meta_vlmeta: header_len 356, frame_len 7184, trailer at
 * 1995 (5189 bytes), index chunk (memcpy, 64 bytes) at 1931, entries
 * 0, 395, 782, 1178, cbytes 1575.  Layout in spec 8.4. */
static void test_patched_header(void **state) {
  (void)state;
  need_vectors();
  static const patch_case cases[] = {
      {"array marker", 0, 1, 0x9d, B2S_E_FRAME, 0},
      {"magic", 2, 1, 'x', B2S_E_FRAME, 1},
      {"header_len marker", 10, 1, 0xce, B2S_E_FRAME, 10},
      {"header_len < 87", 11, 4, 86, B2S_E_FRAME, 11},
      {"header_len > frame_len", 11, 4, 7185, B2S_E_FRAME, 11},
      {"frame_len marker", 15, 1, 0xd3, B2S_E_FRAME, 15},
      {"frame_len past the file", 16, 8, 7185, B2S_E_TRUNCATED, 7184},
      {"frame_len huge", 16, 8, UINT64_MAX, B2S_E_FRAME, 15},
      {"frame_len tiny", 16, 8, 356 + 34, B2S_E_FRAME, 16},
      {"flags fixstr length", 24, 1, 0xa5, B2S_E_FRAME, 24},
      {"format version 4", 25, 1, 0x14, B2S_E_FRAME_VERSION, 25},
      {"frame type sparse", 26, 1, 1, B2S_E_FRAME_TYPE, 26},
      {"nbytes marker", 29, 1, 0xcf, B2S_E_FRAME, 29},
      {"nbytes negative", 30, 8, UINT64_MAX, B2S_E_FRAME, 30},
      {"nbytes: too many chunks", 30, 8, INT64_MAX, B2S_E_FRAME, 30},
      {"nbytes: 5 chunks, index has 4", 30, 8, 96001, B2S_E_INDEX, 1935},
      {"cbytes negative", 39, 8, UINT64_MAX, B2S_E_FRAME, 39},
      {"cbytes into the trailer", 39, 8, 1576 + 64, B2S_E_FRAME, 39},
      {"cbytes huge", 39, 8, INT64_MAX, B2S_E_FRAME, 39},
      {"typesize 0", 48, 4, 0, B2S_E_FRAME, 48},
      {"typesize negative", 48, 4, 0xffffffff, B2S_E_FRAME, 48},
      {"chunksize negative", 58, 4, 0xfffffffb, B2S_E_FRAME, 58},
      {"chunksize 1: too many chunks for the index", 58, 4, 1, B2S_E_INDEX,
       1935},
      {"chunksize 0: variable, count from index", 58, 4, 0, 0, 0},
      {"thread marker", 62, 1, 0xd2, B2S_E_FRAME, 62},
      {"bool marker", 68, 1, 0xc0, B2S_E_FRAME, 68},
      {"fixext marker", 69, 1, 0xd7, B2S_E_FRAME, 69},
      {"7 filters", 70, 1, 7, B2S_E_FRAME, 70},
  };
  run_patch_table("cframe_zstd_meta_vlmeta", cases,
                  sizeof cases / sizeof *cases);
}

static void test_patched_metalayers(void **state) {
  (void)state;
  need_vectors();
  static const patch_case cases[] = {
      {"section array", 87, 1, 0x94, B2S_E_META, 87},
      {"size marker", 88, 1, 0xcc, B2S_E_META, 88},
      {"size value (ignored)", 89, 2, 0xffff, 0, 0},
      {"map marker", 91, 1, 0xdf, B2S_E_META, 91},
      {"17 metalayers", 92, 2, 17, B2S_E_META, 91},
      {"4 metalayers, 3 present", 92, 2, 4, B2S_E_META, 131},
      {"name as str8", 94, 1, 0xd9, B2S_E_META, 94},
      {"name with NUL", 95, 1, 0, B2S_E_META, 94},
      {"offset marker", 101, 1, 0xce, B2S_E_META, 101},
      {"offset = header_len", 102, 4, 356, B2S_E_META, 94},
      {"offset into the fixed header", 102, 4, 16, B2S_E_META, 94},
      {"offset negative", 102, 4, 0xffffff00, B2S_E_META, 94},
      {"offset not at c6", 102, 4, 0x87, B2S_E_META, 0x87},
      {"content count", 132, 2, 2, B2S_E_META, 131},
      {"array marker", 131, 1, 0xdd, B2S_E_META, 131},
      {"content marker", 0x86, 1, 0xc5, B2S_E_META, 0x86},
      {"content past header_len", 152, 4, 201, B2S_E_META, 151},
      {"content length huge", 152, 4, 0xffffffff, B2S_E_META, 151},
  };
  run_patch_table("cframe_zstd_meta_vlmeta", cases,
                  sizeof cases / sizeof *cases);
}

static void test_patched_trailer(void **state) {
  (void)state;
  need_vectors();
  /* trailer at 1995; its map16 at 1995 + 6; "info" entry at 1995 + 9,
   * offset field at 1995 + 15; contents from 1995 + 0x24 */
  static const patch_case cases[] = {
      {"trailer_len marker", -23, 1, 0xcd, B2S_E_TRAILER, -23},
      {"trailer_len 34", -22, 4, 34, B2S_E_TRAILER, -22},
      {"trailer_len beyond the header", -22, 4, 7184 - 356 + 1, B2S_E_TRAILER,
       -22},
      {"trailer_len huge", -22, 4, 0xffffffff, B2S_E_TRAILER, -22},
      {"trailer_len points mid-structure", -22, 4, 5000, B2S_E_TRAILER, -2},
      {"fingerprint marker", -18, 1, 0xd7, B2S_E_TRAILER, -18},
      {"fingerprint type (ignored)", -17, 1, 1, 0, 0},
      {"trailer array", 1995, 1, 0x95, B2S_E_TRAILER, 1995},
      {"trailer version (ignored)", 1996, 1, 2, 0, 0},
      {"trailer version marker", 1996, 1, 0xcc, B2S_E_TRAILER, 1996},
      {"vlmeta section array", 1997, 1, 0x92, B2S_E_TRAILER, 1997},
      {"vlmeta size marker", 1998, 1, 0xce, B2S_E_VLMETA, 1998},
      {"vlmeta map marker", 2001, 1, 0xdf, B2S_E_VLMETA, 2001},
      {"8193 vlmetalayers", 2002, 2, 8193, B2S_E_VLMETA, 2001},
      {"3 vlmetalayers, 2 present", 2002, 2, 3, B2S_E_VLMETA, -2},
      {"vlmeta name marker", 2004, 1, 0xc0, B2S_E_VLMETA, 2004},
      {"vlmeta offset negative", 2010, 4, 0x80000000, B2S_E_VLMETA, 2004},
      {"vlmeta offset into the tail", 2010, 4, 5189 - 23, B2S_E_VLMETA, 2004},
      {"vlmeta offset past trailer", 2010, 4, 5189, B2S_E_VLMETA, 2004},
      {"vlmeta content length", 1995 + 0x25, 4, 0x7fffffff, B2S_E_VLMETA,
       1995 + 0x24},
  };
  run_patch_table("cframe_zstd_meta_vlmeta", cases,
                  sizeof cases / sizeof *cases);
}

static void test_patched_index(void **state) {
  (void)state;
  need_vectors();
  /* index chunk at 1931: memcpy'ed, entries at 1963 + 8 i (LE) */
  static const patch_case cases[] = {
      {"index typesize 4", 1934, 1, 4, B2S_E_INDEX, 1934},
      {"index cbytes beyond trailer", 1943, 1, 0x7f, B2S_E_INDEX, 1943},
      {"index cbytes 16", 1943, 4, 0x10000000, B2S_E_INDEX, 1943},
      {"index not a chunk (typesize 0)", 1934, 1, 0, B2S_E_INDEX, 1931},
      {"entry at cbytes", 1963, -8, 1575, B2S_E_CHUNK_BOUNDS, 1931},
      {"entry just past", 1963 + 24, -8, 1575 - 31, B2S_E_CHUNK_BOUNDS, 1931},
      {"entry huge", 1963 + 8, -8, INT64_MAX, B2S_E_CHUNK_BOUNDS, 1931},
      {"entry -1", 1963 + 16, -8, UINT64_MAX, B2S_E_INDEX, 1931},
      {"entry kind 3", 1963, -8, 0x8300000000000000u, B2S_E_INDEX, 1931},
      {"entry kind 1 + low bits", 1963, -8, 0x8100000000000001u, B2S_E_INDEX,
       1931},
      {"entry zeros: valid", 1963, -8, 0x8100000000000000u, 0, 0},
      {"entry uninit: valid", 1963, -8, 0x8400000000000000u, 0, 0},
      /* opens; the chunk read fails (checked by open_and_drain) */
      {"entry mid-chunk", 1963 + 8, -8, 1, 0, 0},
      {"entry duplicate", 1963 + 8, -8, 0, 0, 0},
      {"entry last valid", 1963 + 8, -8, 1575 - 32, 0, 0},
  };
  run_patch_table("cframe_zstd_meta_vlmeta", cases,
                  sizeof cases / sizeof *cases);
}

/* Chunk-level failures after a successful open: exact codes and offsets. */
static void expect_chunk_error(const char *vector, int64_t pos, int width,
                               uint64_t value, int64_t nchunk, int code,
                               int64_t at) {
  const mf_entry *e = mf_find(manifest, vector);
  size_t len;
  uint8_t *p = read_frame_file(e, &len);
  put(p + pos, width, value);
  uint8_t *copy = dup_exact(p, len);
  b2s_frame *f = NULL;
  b2s_frame_error err;
  assert_int_equal(b2s_frame_open_buffer(copy, len, &f, &err), 0);
  uint8_t *dst = malloc(1 << 20);
  assert_non_null(dst);
  int rc = b2s_frame_chunk_decompress(f, nchunk, NULL, dst, 1 << 20);
  const b2s_frame_error *le = b2s_frame_last_error(f);
  if (rc != code || le->code != code || le->nchunk != nchunk ||
      (at != -2 && le->offset != at))
    fail_msg("%s chunk %lld: got %d (%s) at %lld, want %d at %lld", vector,
             (long long)nchunk, rc, le->reason ? le->reason : "-",
             (long long)le->offset, code, (long long)at);
  free(dst);
  b2s_frame_free(f);
  free(copy);
  free(p);
}

static void test_chunk_errors(void **state) {
  (void)state;
  need_vectors();
  const char *v = "cframe_zstd_meta_vlmeta";
  int64_t c2 = 356 + 782;   /* chunk 2 */
  expect_chunk_error(v, c2 + 12, -8, 0x7fffffff, 2, B2S_E_CHUNK_BOUNDS,
                     c2 + 12);
  expect_chunk_error(v, c2 + 12, 4, 0x10000000, 2, B2S_E_CHUNK_BOUNDS,
                     c2 + 12);
  /* entry 1 -> 396: inside chunk 1, reads garbage as a header */
  expect_chunk_error(v, 1963 + 8, -8, 1, 1, B2S_E_CHUNK_BOUNDS, -2);
  /* a valid chunk whose nbytes disagrees with the frame's chunksize */
  expect_chunk_error(v, c2 + 4, 4, 0xb85d0000, 2, B2S_E_CHUNK_SIZE, c2 + 4);
  /* the last chunk of a fixed-chunksize frame must hold the rest */
  expect_chunk_error("cframe_lz4_16chunks_short_last", 30, 8, 247000 - 1, 15,
                     B2S_E_CHUNK_SIZE, -2);
}

/* NaN special entries need typesize 4 or 8. */
static void test_special_entries(void **state) {
  (void)state;
  need_vectors();
  const mf_entry *e = mf_find(manifest, "cframe_special_chunks");
  size_t len;
  uint8_t *p = read_frame_file(e, &len);
  put(p + 48, 4, 2);   /* typesize 2 */
  uint8_t *copy = dup_exact(p, len);
  b2s_frame *f = NULL;
  b2s_frame_error err;
  assert_int_equal(b2s_frame_open_buffer(copy, len, &f, &err), 0);
  uint8_t *dst = malloc(20000);
  assert_int_equal(b2s_frame_chunk_decompress(f, 1, NULL, dst, 20000), 20000);
  assert_int_equal(b2s_frame_chunk_decompress(f, 2, NULL, dst, 20000),
                   B2S_E_SPECIAL);
  assert_int_equal(b2s_frame_last_error(f)->nchunk, 2);
  free(dst);
  b2s_frame_free(f);
  free(copy);
  free(p);
}

/* ---- hostile input: sparse frames ---------------------------------------------- */

static void copy_file(const char *from, const char *to) {
  size_t len;
  FILE *in = fopen(from, "rb");
  assert_non_null(in);
  uint8_t *buf = malloc(1 << 20);
  len = fread(buf, 1, 1 << 20, in);
  fclose(in);
  FILE *out = fopen(to, "wb");
  assert_non_null(out);
  assert_int_equal(fwrite(buf, 1, len, out), len);
  fclose(out);
  free(buf);
}

/* Copy a vector sframe into a fresh temporary directory. */
static void sframe_copy(const mf_entry *e, char *dir) {
  strcpy(dir, "/tmp/b2s_sframe_XXXXXX");
  assert_non_null(mkdtemp(dir));
  static const char *const names[] = {
      "00000000.chunk", "00000001.chunk", "00000002.chunk", "00000004.chunk",
      "00000005.chunk", "00000006.chunk", B2S_SFRAME_INDEX_FILE};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    char from[4096], to[4096];
    snprintf(from, sizeof from, "%s/%s/%s", manifest->dir, e->file, names[k]);
    snprintf(to, sizeof to, "%s/%s", dir, names[k]);
    copy_file(from, to);
  }
}

static void sframe_remove(const char *dir) {
  static const char *const names[] = {
      "00000000.chunk", "00000001.chunk", "00000002.chunk", "00000003.chunk",
      "00000004.chunk", "00000005.chunk", "00000006.chunk",
      B2S_SFRAME_INDEX_FILE};
  char p[4096];
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[k]);
    unlink(p);
  }
  rmdir(dir);
}

static void patch_file(const char *dir, const char *name, long pos, int width,
                       uint64_t v) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_RDWR);
  assert_true(fd >= 0);
  uint8_t b[8];
  put(b, width, v);
  int n = width < 0 ? 8 : width;
  assert_int_equal(pwrite(fd, b, (size_t)n, pos), n);
  close(fd);
}

/* sframe_lz4_insert_delete_reorder: index [5, 0, 2, 1, 4, 6] memcpy'ed at
 * 97, entries at 129 + 8 i. */
static void test_sparse_hostile(void **state) {
  (void)state;
  need_vectors();
  const mf_entry *e = mf_find(manifest, "sframe_lz4_insert_delete_reorder");
  assert_non_null(e);
  char dir[64], p[4096];
  b2s_frame *f = NULL;
  b2s_frame_error err;
  uint8_t *dst = malloc(8000);
  assert_non_null(dst);

  /* chunk id beyond 32 bits */
  sframe_copy(e, dir);
  patch_file(dir, B2S_SFRAME_INDEX_FILE, 129 + 8, -8, UINT64_C(1) << 32);
  assert_int_equal(b2s_frame_open_sparse(dir, &f, &err), B2S_E_CHUNK_ID);
  assert_int_equal(err.nchunk, 1);
  /* largest valid id: opens, the file is missing */
  patch_file(dir, B2S_SFRAME_INDEX_FILE, 129 + 8, -8, UINT32_MAX);
  assert_int_equal(b2s_frame_open_sparse(dir, &f, &err), 0);
  assert_int_equal(b2s_frame_chunk_decompress(f, 1, NULL, dst, 8000), -ENOENT);
  assert_true(b2s_frame_last_error(f)->in_chunk_file);
  b2s_frame_free(f);
  /* id of a deleted chunk (no 00000003.chunk) */
  patch_file(dir, B2S_SFRAME_INDEX_FILE, 129 + 8, -8, 3);
  assert_int_equal(b2s_frame_open_sparse(dir, &f, &err), 0);
  assert_int_equal(b2s_frame_chunk_decompress(f, 1, NULL, dst, 8000), -ENOENT);
  assert_int_equal(b2s_frame_chunk_decompress(f, 2, NULL, dst, 8000), 8000);
  b2s_frame_free(f);
  sframe_remove(dir);

  /* chunk file shorter than its cbytes; a chunk file that is a symlink */
  sframe_copy(e, dir);
  snprintf(p, sizeof p, "%s/00000005.chunk", dir);
  assert_int_equal(truncate(p, 100), 0);
  snprintf(p, sizeof p, "%s/00000001.chunk", dir);
  unlink(p);
  assert_int_equal(symlink("00000002.chunk", p), 0);
  assert_int_equal(b2s_frame_open_sparse(dir, &f, &err), 0);
  assert_int_equal(b2s_frame_chunk_decompress(f, 0, NULL, dst, 8000),
                   B2S_E_TRUNCATED);
  assert_true(b2s_frame_last_error(f)->in_chunk_file);
  assert_int_equal(b2s_frame_last_error(f)->offset, 12);
  assert_int_equal(b2s_frame_chunk_decompress(f, 3, NULL, dst, 8000), -ELOOP);
  snprintf(p, sizeof p, "%s/00000005.chunk", dir);
  assert_int_equal(truncate(p, 10), 0);
  assert_int_equal(b2s_frame_chunk_decompress(f, 0, NULL, dst, 8000),
                   B2S_E_TRUNCATED);
  b2s_frame_free(f);
  sframe_remove(dir);

  /* the index file says contiguous */
  sframe_copy(e, dir);
  patch_file(dir, B2S_SFRAME_INDEX_FILE, 26, 1, 0);
  assert_int_equal(b2s_frame_open_sparse(dir, &f, &err), B2S_E_FRAME_TYPE);
  assert_int_equal(err.offset, 26);
  /* a directory is not a contiguous frame, a file not a sparse one */
  assert_int_equal(b2s_frame_open_file(dir, 0, &f, &err), -EISDIR);
  snprintf(p, sizeof p, "%s/%s", dir, B2S_SFRAME_INDEX_FILE);
  assert_int_equal(b2s_frame_open_sparse(p, &f, &err), -ENOTDIR);
  sframe_remove(dir);
  assert_int_equal(b2s_frame_open_sparse(dir, &f, &err), -ENOENT);
  assert_int_equal(b2s_frame_open("/nonexistent/frame", &f, &err), -ENOENT);
  free(dst);
}

/* ---- b2nd parser ------------------------------------------------------------------ */

static void test_b2nd_hostile(void **state) {
  (void)state;
  static const uint8_t good[] = {
      0x97, 0x00, 0x02, 0x92, 0xd3, 0, 0, 0, 0, 0, 0, 0, 0x32, 0xd3, 0, 0, 0,
      0,    0,    0,    0,    0x25, 0x92, 0xd2, 0, 0, 0, 0x14, 0xd2, 0, 0, 0,
      0x10, 0x92, 0xd2, 0,    0,    0,    8,    0xd2, 0, 0, 0, 8, 0x00, 0xdb,
      0,    0,    0,    3,    '<',  'i',  '4'};
  b2s_b2nd nd;
  b2s_frame_error err;
  assert_int_equal(b2s_b2nd_parse(good, sizeof good, 100, &nd, &err), 0);
  assert_int_equal(nd.ndim, 2);
  assert_true(nd.shape[0] == 50 && nd.shape[1] == 37);
  assert_int_equal(nd.dtype_len, 3);
  /* every truncation fails, except the one that drops the whole dtype */
  for (size_t cut = 0; cut < sizeof good; cut++) {
    uint8_t *p = dup_exact(good, cut);
    int rc = b2s_b2nd_parse(p, cut, 0, &nd, &err);
    if (cut == 44)
      assert_int_equal(rc, 0);
    else
      assert_int_equal(rc, B2S_E_B2ND);
    free(p);
  }
  uint8_t bad[sizeof good];
  memcpy(bad, good, sizeof good);
  bad[2] = 17;   /* ndim */
  assert_int_equal(b2s_b2nd_parse(bad, sizeof bad, 100, &nd, &err), B2S_E_B2ND);
  assert_int_equal(err.offset, 102);
  memcpy(bad, good, sizeof good);
  bad[45] = 0xd9;   /* dtype not str32 */
  assert_int_equal(b2s_b2nd_parse(bad, sizeof bad, 0, &nd, &err), B2S_E_B2ND);
  memcpy(bad, good, sizeof good);
  bad[49] = 4;   /* dtype length past the end */
  assert_int_equal(b2s_b2nd_parse(bad, sizeof bad, 0, &nd, &err), B2S_E_B2ND);
  memcpy(bad, good, sizeof good);
  bad[4] = 0xcf;   /* shape marker */
  assert_int_equal(b2s_b2nd_parse(bad, sizeof bad, 0, &nd, &err), B2S_E_B2ND);
  assert_int_equal(err.offset, 4);
  memcpy(bad, good, sizeof good);
  bad[5] = 0x80;   /* negative shape */
  assert_int_equal(b2s_b2nd_parse(bad, sizeof bad, 0, &nd, &err), B2S_E_B2ND);
  memcpy(bad, good, sizeof good);
  bad[39] = 0;   /* blockshape 0 with chunkshape 16 */
  assert_int_equal(b2s_b2nd_parse(bad, sizeof bad, 0, &nd, &err), B2S_E_B2ND);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_msgpack_roundtrip),
      cmocka_unit_test(test_msgpack_hostile),
      cmocka_unit_test(test_format_build),
      cmocka_unit_test(test_b2nd_hostile),
      cmocka_unit_test(test_vector_frames),
      cmocka_unit_test(test_vector_frames_memory),
      cmocka_unit_test(test_frame_at_offset),
      cmocka_unit_test(test_format_roundtrip),
      cmocka_unit_test(test_truncated_frames),
      cmocka_unit_test(test_flipped_bytes),
      cmocka_unit_test(test_patched_header),
      cmocka_unit_test(test_patched_metalayers),
      cmocka_unit_test(test_patched_trailer),
      cmocka_unit_test(test_patched_index),
      cmocka_unit_test(test_chunk_errors),
      cmocka_unit_test(test_special_entries),
      cmocka_unit_test(test_sparse_hostile),
  };
  return ts_run_tests(tests, group_setup, group_teardown);
}

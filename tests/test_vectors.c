/* Chunk codec against the c-blosc2 reference vectors (tests/vectors).
 *
 * Each test walks every relevant manifest entry and reports all mismatches
 * by name before failing, so one run shows the whole picture. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_chunk.h"
#include "manifest.h"
#include "vecdata.h"
#include "ts.h"

static mf_manifest *manifest;
static bool vectors_missing;
static char load_error[1024];

static int group_setup(void **state) {
  (void)state;
  manifest = mf_load_env(load_error, sizeof load_error, &vectors_missing);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  mf_free(manifest);
  manifest = NULL;
  return 0;
}

/* Without vectors every test skips (with the reason); a broken manifest
 * fails instead. */
static void need_vectors(void) {
  if (manifest)
    return;
  static bool told;
  if (vectors_missing) {
    if (!told)
      print_message("SKIPPED: %s\n", load_error);
    told = true;
    skip();
  }
  fail_msg("%s", load_error);
}

static bool is_chunk(const mf_entry *e) { return !strcmp(e->kind, "chunk"); }

/* Index of the first differing byte over the common length, else the
 * shorter length when sizes differ, else -1. */
static long first_diff(const uint8_t *a, size_t na, const uint8_t *b,
                       size_t nb) {
  size_t n = na < nb ? na : nb;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i])
      return (long)i;
  return na == nb ? -1 : (long)n;
}

static uint8_t *zalloc(size_t n) { return calloc(n ? n : 1, 1); }

/* ---- generator self-check: needs nothing from the codec ---------------- */

static int check_chunk_formula(const mf_entry *e, const mf_chunk *c) {
  char hex[65];
  if (c->data.nbytes != (uint64_t)c->nbytes) {
    print_message("GEN %s[%lld]: data.nbytes %llu != nbytes %lld\n", e->name,
                  (long long)c->index, (unsigned long long)c->data.nbytes,
                  (long long)c->nbytes);
    return -1;
  }
  uint8_t *buf = mf_expected(e, c);
  if (!buf) {
    print_message("GEN %s[%lld]: cannot generate formula '%s'\n", e->name,
                  (long long)c->index, c->data.formula);
    return -1;
  }
  vec_sha256_hex(buf, c->data.nbytes, hex);
  free(buf);
  if (strcmp(hex, c->sha256)) {
    print_message("GEN %s[%lld]: formula %s seed %llu offset %llu: sha256 "
                  "%s, manifest %s\n",
                  e->name, (long long)c->index, c->data.formula,
                  (unsigned long long)c->data.seed,
                  (unsigned long long)c->data.offset, hex, c->sha256);
    return -1;
  }
  return 0;
}

static int check_b2nd_logical(const mf_entry *e) {
  const mf_data *d = &e->b2nd.logical;
  char hex[65];
  uint8_t *buf = zalloc(d->nbytes);
  assert_non_null(buf);
  int rc = vec_fill(d->formula, d->seed, d->offset, buf, d->nbytes);
  vec_sha256_hex(buf, d->nbytes, hex);
  free(buf);
  if (rc || strcmp(hex, e->b2nd.logical_sha256)) {
    print_message("GEN %s: b2nd logical data sha256 %s, manifest %s\n",
                  e->name, hex, e->b2nd.logical_sha256);
    return -1;
  }
  return 0;
}

static void test_generator(void **state) {
  (void)state;
  need_vectors();
  int matched = 0, bad = 0;
  for (size_t i = 0; i < manifest->nentries; i++) {
    const mf_entry *e = &manifest->entries[i];
    for (size_t j = 0; j < e->nchunks; j++) {
      if (!e->chunks[j].content_defined)
        continue;
      if (check_chunk_formula(e, &e->chunks[j]))
        bad++;
      else
        matched++;
    }
    if (e->b2nd.present && check_b2nd_logical(e))
      bad++;
  }
  print_message("generator: %d content-defined chunks match, %d do not\n",
                matched, bad);
  assert_int_equal(bad, 0);
  assert_true(matched > 0);
}

/* Any window of a stream equals the same slice of a longer prefix, so
 * chunks deep inside a stream (frames) are generated right. */
static void test_generator_offsets(void **state) {
  (void)state;
  static const char *const formulas[] = {
      "zeros", "u32mul", "ctr8", "ctr16", "ctr32", "ctr64", "f32ramp",
      "f64ramp", "text", "lcgbytes", "steps", "nan32", "nan64",
      "pattern:00112233445566778899aabb"};
  static const size_t offsets[] = {0, 1, 3, 7, 4095, 4096, 9999, 20001};
  enum { LEN = 30000 };
  uint8_t *full = zalloc(LEN), *part = zalloc(LEN);
  assert_non_null(full);
  assert_non_null(part);
  for (size_t f = 0; f < sizeof formulas / sizeof formulas[0]; f++) {
    assert_int_equal(vec_fill(formulas[f], 99, 0, full, LEN), 0);
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
      size_t n = LEN - offsets[o] < 777 ? LEN - offsets[o] : 777;
      assert_int_equal(vec_fill(formulas[f], 99, offsets[o], part, n), 0);
      if (memcmp(part, full + offsets[o], n))
        fail_msg("%s: window at offset %zu differs", formulas[f], offsets[o]);
    }
  }
  assert_int_equal(vec_fill("no-such-formula", 0, 0, part, 1), -1);
  free(part);
  free(full);
}

/* ---- (a) decode every chunk vector ------------------------------------- */

static int field_errors;

static void check_field(const char *name, const char *field, long long got,
                        long long want) {
  if (got == want)
    return;
  print_message("INFO %s: %s = %lld, manifest %lld\n", name, field, got, want);
  field_errors++;
}

/* Blosc1 headers carry the pipeline in flags bits 0, 2, 3 (spec 1.3). */
static void blosc1_pipeline(const mf_header *h, uint8_t filters[6]) {
  memset(filters, 0, 6);
  if ((h->flags & 0x01) && h->typesize > 1)
    filters[5] = B2S_FILTER_SHUFFLE;
  if (h->flags & 0x04)
    filters[5] = B2S_FILTER_BITSHUFFLE;
  if (h->flags & 0x08)
    filters[4] = B2S_FILTER_DELTA;
}

static int compformat_to_codec(int compformat) {
  static const int map[8] = {0, 1, -1, 4, 5, -1, -1, -1};
  return map[compformat & 7];
}

static void check_ext_fields(const char *n, const b2s_chunk_info *in,
                             const mf_header *h) {
  for (int i = 0; i < B2S_MAX_FILTERS; i++) {
    char f[32];
    snprintf(f, sizeof f, "filters[%d]", i);
    check_field(n, f, in->filters[i], h->filters[i]);
    snprintf(f, sizeof f, "filters_meta[%d]", i);
    check_field(n, f, in->filters_meta[i], h->filters_meta[i]);
  }
  check_field(n, "codec", in->codec, h->udcompcode);
  check_field(n, "blosc2_flags", in->blosc2_flags, h->blosc2_flags);
  check_field(n, "blosc2_flags2", in->blosc2_flags2, h->blosc2_flags2);
  check_field(n, "special", in->special, h->special);
  check_field(n, "use_dict", in->use_dict, h->use_dict);
  check_field(n, "vl_blocks", in->vl_blocks, h->vl_blocks);
  check_field(n, "nblocks", in->nblocks, h->nblocks);
}

static void check_info(const mf_entry *e, const b2s_chunk_info *in) {
  const mf_header *h = &e->header;
  const char *n = e->name;
  check_field(n, "version", in->version, h->version);
  check_field(n, "versionlz", in->versionlz, h->versionlz);
  check_field(n, "flags", in->flags, h->flags);
  check_field(n, "typesize", in->typesize, h->typesize);
  check_field(n, "nbytes", in->nbytes, h->nbytes);
  check_field(n, "blocksize", in->blocksize, h->blocksize);
  check_field(n, "cbytes", in->cbytes, h->cbytes);
  check_field(n, "header_len", in->header_len, h->extended_header ? 32 : 16);
  check_field(n, "compformat", in->compformat, h->compformat);
  check_field(n, "memcpyed", in->memcpyed, h->memcpyed);
  check_field(n, "dont_split", in->dont_split, h->dont_split);
  if (h->has_ext) {
    check_ext_fields(n, in, h);
    return;
  }
  uint8_t filters[6];
  blosc1_pipeline(h, filters);
  for (int i = 0; i < B2S_MAX_FILTERS; i++)
    check_field(n, "filters (from flags)", in->filters[i], filters[i]);
  check_field(n, "codec (from compformat)", in->codec,
              compformat_to_codec(h->compformat));
  check_field(n, "special", in->special, B2S_SPECIAL_NONE);
}

/* Reports why the decoded bytes differ from the generated ones. */
static void explain_decode_mismatch(const mf_entry *e, const uint8_t *got) {
  uint8_t *want = mf_expected(e, &e->chunks[0]);
  if (!want)
    return;
  size_t n = (size_t)e->chunks[0].nbytes;
  long off = first_diff(got, n, want, n);
  if (off >= 0)
    print_message("DECODE %s: first differing byte at offset %ld: got 0x%02x, "
                  "expected 0x%02x\n",
                  e->name, off, got[off], want[off]);
  free(want);
}

static int decode_one(b2s_ctx *ctx, const mf_entry *e) {
  const mf_chunk *c = &e->chunks[0];
  size_t len, n = (size_t)c->nbytes;
  uint8_t *src = mf_read_file(manifest, e, &len);
  if (!src) {
    print_message("DECODE %s: cannot read %s\n", e->name, e->file);
    return -1;
  }
  int bad = 0;
  if ((long long)len != c->cbytes) {
    print_message("DECODE %s: file has %zu bytes, manifest cbytes %lld\n",
                  e->name, len, (long long)c->cbytes);
    bad++;
  }
  b2s_chunk_info info;
  int before = field_errors;
  int rc = b2s_chunk_info_get(src, len, &info);
  if (rc < 0) {
    print_message("DECODE %s: b2s_chunk_info_get: %s\n", e->name,
                  b2s_strerror(rc));
    bad++;
  } else {
    check_info(e, &info);
    bad += field_errors != before;
  }
  uint8_t *dst = zalloc(n);
  assert_non_null(dst);
  rc = b2s_decompress(ctx, src, len, dst, n);
  if (rc != (int)n) {
    print_message("DECODE %s: b2s_decompress returned %d (%s), want %zu\n",
                  e->name, rc, rc < 0 ? b2s_strerror(rc) : "wrong size", n);
    bad++;
  } else if (c->content_defined) {
    char hex[65];
    vec_sha256_hex(dst, n, hex);
    if (strcmp(hex, c->sha256)) {
      print_message("DECODE %s: sha256 %s, manifest %s\n", e->name, hex,
                    c->sha256);
      explain_decode_mismatch(e, dst);
      bad++;
    }
  }
  free(dst);
  free(src);
  return bad ? -1 : 0;
}

/* The decoder must accept a buffer longer than cbytes (spec 1.6) and refuse
 * a destination shorter than nbytes. */
static int decode_edges(b2s_ctx *ctx, const mf_entry *e) {
  size_t len, n = (size_t)e->chunks[0].nbytes;
  uint8_t *src = mf_read_file(manifest, e, &len);
  assert_non_null(src);
  uint8_t *longer = zalloc(len + 64), *dst = zalloc(n);
  assert_non_null(longer);
  assert_non_null(dst);
  memcpy(longer, src, len);
  int bad = 0;
  int rc = b2s_decompress(ctx, longer, len + 64, dst, n);
  if (rc != (int)n) {
    print_message("DECODE %s: with 64 spare source bytes returned %d\n",
                  e->name, rc);
    bad++;
  }
  if (n > 0 && (rc = b2s_decompress(ctx, src, len, dst, n - 1)) !=
                   B2S_E_DEST_SMALL) {
    print_message("DECODE %s: destination nbytes-1 returned %d, want "
                  "B2S_E_DEST_SMALL\n",
                  e->name, rc);
    bad++;
  }
  free(dst);
  free(longer);
  free(src);
  return bad ? -1 : 0;
}

static void test_decode_chunks(void **state) {
  (void)state;
  need_vectors();
  b2s_ctx *ctx = b2s_ctx_new();
  assert_non_null(ctx);
  int total = 0, bad = 0;
  for (size_t i = 0; i < manifest->nentries; i++) {
    const mf_entry *e = &manifest->entries[i];
    if (!is_chunk(e) || e->nchunks != 1)
      continue;
    total++;
    int rc = decode_one(ctx, e);
    if (decode_edges(ctx, e) || rc)
      bad++;
  }
  b2s_ctx_free(ctx);
  print_message("decode: %d of %d chunk vectors ok\n", total - bad, total);
  assert_int_equal(bad, 0);
  assert_true(total > 0);
}

/* ---- blocksize and split rules against what c-blosc2 wrote -------------- */

static bool made_by_compress(const mf_entry *e) {
  return is_chunk(e) && !strcmp(e->api, "blosc2_compress_ctx");
}

static int check_rules(const mf_entry *e) {
  const mf_header *h = &e->header;
  b2s_cparams cp;
  mf_cparams(&e->params, &cp);
  int bad = 0;
  int32_t bs = b2s_compute_blocksize(&cp, h->nbytes);
  if (bs != h->blocksize) {
    print_message("RULES %s: b2s_compute_blocksize = %d, c-blosc2 wrote %d\n",
                  e->name, bs, h->blocksize);
    bad++;
  }
  /* memcpy'ed and special chunks do not record the decision */
  bool split = b2s_split_decision(&cp, h->typesize, h->blocksize);
  if (!h->memcpyed && h->special == B2S_SPECIAL_NONE &&
      split == h->dont_split) {
    print_message("RULES %s: b2s_split_decision = %d, c-blosc2 dont_split %d\n",
                  e->name, split, h->dont_split);
    bad++;
  }
  return bad ? -1 : 0;
}

static void test_blocksize_rules(void **state) {
  (void)state;
  need_vectors();
  int total = 0, bad = 0;
  for (size_t i = 0; i < manifest->nentries; i++) {
    const mf_entry *e = &manifest->entries[i];
    if (!made_by_compress(e))
      continue;
    total++;
    bad += check_rules(e) != 0;
  }
  print_message("rules: %d of %d vectors agree\n", total - bad, total);
  assert_int_equal(bad, 0);
}

/* ---- (c) byte-identical compression ------------------------------------ */

static bool compress_candidate(const mf_entry *e) {
  static const char *const codecs[] = {"lz4", "lz4hc", "zstd", "zlib",
                                       "blosclz"};
  if (!made_by_compress(e) || e->nchunks != 1)
    return false;
  for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
    if (!strcmp(e->params.codec, codecs[i]))
      return true;
  return false;
}

/* c-blosc2 was called with destsize = nbytes + 32 except where the note
 * says otherwise (the big-destination raw-stream vector uses + 96). */
static int32_t vector_destsize(const mf_entry *e) {
  static const char key[] = "destsize = nbytes + ";
  const char *p = strstr(e->note, key);
  int32_t extra = p ? (int32_t)atoi(p + sizeof key - 1) : B2S_MAX_OVERHEAD;
  return (int32_t)e->chunks[0].nbytes + extra;
}

static void report_compress_mismatch(const mf_entry *e, const uint8_t *got,
                                     int gotlen, const uint8_t *want,
                                     size_t wantlen) {
  long off = first_diff(got, (size_t)gotlen, want, wantlen);
  print_message("COMPRESS %s: %d bytes, c-blosc2 %zu; first differing offset "
                "%ld",
                e->name, gotlen, wantlen, off);
  if (off >= 0 && (size_t)off < wantlen && off < gotlen)
    print_message(" (got 0x%02x, want 0x%02x)", got[off], want[off]);
  print_message("\n");
}

/* 1 identical, 0 skipped (blosclz not encodable), -1 mismatch. */
static int compress_one(b2s_ctx *ctx, const mf_entry *e) {
  const mf_chunk *c = &e->chunks[0];
  size_t wantlen;
  uint8_t *want = mf_read_file(manifest, e, &wantlen);
  uint8_t *src = mf_source(e, c);
  int32_t destsize = vector_destsize(e);
  uint8_t *dst = zalloc((size_t)destsize);
  assert_non_null(want);
  assert_non_null(src);
  assert_non_null(dst);
  b2s_cparams cp;
  mf_cparams(&e->params, &cp);
  int rc = b2s_compress(ctx, &cp, src, (int32_t)c->nbytes, dst, destsize);
  int result = 1;
  if (rc == B2S_E_CODEC && cp.codec == B2S_CODEC_BLOSCLZ) {
    result = 0;
  } else if (rc < 0) {
    print_message("COMPRESS %s: b2s_compress failed: %s\n", e->name,
                  b2s_strerror(rc));
    result = -1;
  } else if ((size_t)rc != wantlen || memcmp(dst, want, wantlen)) {
    report_compress_mismatch(e, dst, rc, want, wantlen);
    result = -1;
  }
  free(dst);
  free(src);
  free(want);
  return result;
}

static void test_compress_identical(void **state) {
  (void)state;
  need_vectors();
  b2s_ctx *ctx = b2s_ctx_new();
  assert_non_null(ctx);
  int same = 0, bad = 0, skipped = 0;
  for (size_t i = 0; i < manifest->nentries; i++) {
    const mf_entry *e = &manifest->entries[i];
    if (!compress_candidate(e))
      continue;
    int r = compress_one(ctx, e);
    same += r == 1;
    bad += r < 0;
    skipped += r == 0;
  }
  b2s_ctx_free(ctx);
  print_message("compress: %d identical, %d differ\n", same, bad);
  if (skipped)
    print_message("compress: %d blosclz vectors skipped (b2s_compress "
                  "refuses blosclz)\n",
                  skipped);
  assert_int_equal(bad, 0);
  assert_true(same > 0);
}

/* ---- (d) special-value constructors ------------------------------------ */

static int make_special(const mf_entry *e, uint8_t *dst, int32_t dstsize) {
  const mf_chunk *c = &e->chunks[0];
  int32_t nbytes = (int32_t)c->nbytes;
  b2s_cparams cp;
  mf_cparams(&e->params, &cp);
  if (!strcmp(e->api, "blosc2_chunk_zeros"))
    return b2s_chunk_zeros(&cp, nbytes, dst, dstsize);
  if (!strcmp(e->api, "blosc2_chunk_nans"))
    return b2s_chunk_nans(&cp, nbytes, dst, dstsize);
  if (!strcmp(e->api, "blosc2_chunk_uninit"))
    return b2s_chunk_uninit(&cp, nbytes, dst, dstsize);
  /* repeatval: the item is as long as the body (spec 1.10) */
  uint8_t value[256];
  int32_t valsize = (int32_t)c->cbytes - B2S_HEADER_LEN;
  assert_in_range(valsize, 1, sizeof value);
  assert_int_equal(vec_fill(c->data.formula, c->data.seed, 0, value,
                            (size_t)valsize), 0);
  return b2s_chunk_repeatval(&cp, nbytes, dst, dstsize, value, valsize);
}

static bool is_special_api(const mf_entry *e) {
  return is_chunk(e) && !strncmp(e->api, "blosc2_chunk_", 13);
}

static void test_special_chunks(void **state) {
  (void)state;
  need_vectors();
  int total = 0, bad = 0;
  for (size_t i = 0; i < manifest->nentries; i++) {
    const mf_entry *e = &manifest->entries[i];
    if (!is_special_api(e))
      continue;
    total++;
    size_t wantlen;
    uint8_t *want = mf_read_file(manifest, e, &wantlen);
    uint8_t dst[512];
    assert_non_null(want);
    int rc = make_special(e, dst, (int32_t)sizeof dst);
    if (rc < 0) {
      print_message("SPECIAL %s: %s failed: %s\n", e->name, e->api,
                    b2s_strerror(rc));
      bad++;
    } else if ((size_t)rc != wantlen || memcmp(dst, want, wantlen)) {
      report_compress_mismatch(e, dst, rc, want, wantlen);
      bad++;
    }
    free(want);
  }
  print_message("special: %d of %d identical\n", total - bad, total);
  assert_int_equal(bad, 0);
  assert_true(total > 0);
}

/* ---- (e) getitem -------------------------------------------------------- */

typedef struct range { int32_t start, nitems; } range;

/* Ranges covering the edges: first/last item, whole chunk, around the first
 * block boundary, plus pseudo-random ones. */
static int make_ranges(int32_t total, int32_t per_block, range *r, int max) {
  int n = 0;
  r[n++] = (range){0, 1};
  r[n++] = (range){0, total};
  r[n++] = (range){total - 1, 1};
  r[n++] = (range){total / 2, total - total / 2};
  if (per_block > 1 && per_block < total) {
    r[n++] = (range){per_block - 1, 2};
    r[n++] = (range){per_block, total - per_block};
  }
  uint32_t x = (uint32_t)total * 2654435761u;
  while (n < max) {
    x = x * 1103515245u + 12345u;
    int32_t start = (int32_t)((x >> 8) % (uint32_t)total);
    x = x * 1103515245u + 12345u;
    int32_t len = 1 + (int32_t)((x >> 8) % (uint32_t)(total - start));
    r[n++] = (range){start, len};
  }
  return n;
}

static int getitem_range(b2s_ctx *ctx, const mf_entry *e, const uint8_t *src,
                         size_t len, const uint8_t *full, int32_t itemsize,
                         range r) {
  size_t want = (size_t)r.nitems * (size_t)itemsize;
  uint8_t *dst = zalloc(want);
  assert_non_null(dst);
  int rc = b2s_getitem(ctx, src, len, r.start, r.nitems, dst, want);
  int bad = 0;
  if (rc != (int)want) {
    print_message("GETITEM %s [%d,+%d): returned %d (%s), want %zu\n",
                  e->name, r.start, r.nitems, rc,
                  rc < 0 ? b2s_strerror(rc) : "wrong size", want);
    bad = 1;
  } else if (e->chunks[0].content_defined &&
             memcmp(dst, full + (size_t)r.start * (size_t)itemsize, want)) {
    long off = first_diff(dst, want, full + (size_t)r.start * itemsize, want);
    print_message("GETITEM %s [%d,+%d): differs from the full decode at "
                  "byte %ld of the range\n",
                  e->name, r.start, r.nitems, off);
    bad = 1;
  }
  free(dst);
  return bad;
}

/* Ranges outside the chunk must fail cleanly. */
static int getitem_outside(b2s_ctx *ctx, const mf_entry *e, const uint8_t *src,
                           size_t len, int32_t total) {
  const range cases[] = {{-1, 1}, {0, -1}, {total, 1}, {total - 1, 2}};
  uint8_t dst[2 * 256];
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    range r = cases[i];
    int rc = b2s_getitem(ctx, src, len, r.start, r.nitems, dst, sizeof dst);
    if (rc >= 0) {
      print_message("GETITEM %s [%d,+%d) outside %d items: returned %d\n",
                    e->name, r.start, r.nitems, total, rc);
      bad++;
    }
  }
  return bad;
}

static int32_t item_size(const mf_entry *e) {
  if (e->header.special == B2S_SPECIAL_VALUE)
    return (int32_t)e->chunks[0].cbytes - B2S_HEADER_LEN;
  return e->header.typesize;
}

static int getitem_entry(b2s_ctx *ctx, const mf_entry *e) {
  size_t len, n = (size_t)e->chunks[0].nbytes;
  int32_t itemsize = item_size(e);
  int32_t total = (int32_t)(n / (size_t)itemsize);
  if (total < 1)
    return 0;
  uint8_t *src = mf_read_file(manifest, e, &len), *full = zalloc(n);
  assert_non_null(src);
  assert_non_null(full);
  int rc = b2s_decompress(ctx, src, len, full, n);
  if (rc != (int)n) {
    print_message("GETITEM %s: full decode failed (%d), not tried\n", e->name,
                  rc);
    free(full);
    free(src);
    return 1;
  }
  range r[16];
  int nr = make_ranges(total, e->header.blocksize / itemsize, r, 16);
  int bad = 0;
  for (int i = 0; i < nr; i++)
    bad += getitem_range(ctx, e, src, len, full, itemsize, r[i]);
  bad += getitem_outside(ctx, e, src, len, total);
  free(full);
  free(src);
  return bad;
}

static void test_getitem(void **state) {
  (void)state;
  need_vectors();
  b2s_ctx *ctx = b2s_ctx_new();
  assert_non_null(ctx);
  int total = 0, bad = 0;
  for (size_t i = 0; i < manifest->nentries; i++) {
    const mf_entry *e = &manifest->entries[i];
    if (!is_chunk(e) || e->nchunks != 1)
      continue;
    total++;
    bad += getitem_entry(ctx, e) != 0;
  }
  b2s_ctx_free(ctx);
  print_message("getitem: %d of %d chunk vectors ok\n", total - bad, total);
  assert_int_equal(bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_generator_offsets),
      cmocka_unit_test(test_generator),
      cmocka_unit_test(test_decode_chunks),
      cmocka_unit_test(test_blocksize_rules),
      cmocka_unit_test(test_compress_identical),
      cmocka_unit_test(test_special_chunks),
      cmocka_unit_test(test_getitem),
  };
  return ts_run_tests(tests, group_setup, group_teardown);
}

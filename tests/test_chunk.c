/* Chunk codec round trips over the parameter space, header rules, and
 * robustness against truncated or corrupted input.
 *
 * The grid is sampled rather than crossed in full: the cheap dimensions
 * (codec, clevel, typesize) are crossed on one mid-sized buffer, the
 * expensive sizes only meet a few parameter sets. */
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

#define KIB 1024
#define MIB (1024 * 1024)
#define MAX_REPORTS 30

static b2s_ctx *ctx;
static bool blosclz_encodes;  /* whether b2s_compress accepts BloscLZ */

/* ---- small helpers ------------------------------------------------------ */

static uint8_t *xalloc(size_t n) {
  uint8_t *p = calloc(n ? n : 1, 1);
  assert_non_null(p);
  return p;
}

/* Exact-size copy, so ASan flags any read past the given length. */
static uint8_t *exact_copy(const uint8_t *src, size_t n) {
  uint8_t *p = malloc(n ? n : 1);
  assert_non_null(p);
  memcpy(p, src, n);
  return p;
}

static uint32_t rng_state = 12345;

static uint32_t rng(void) {
  rng_state = rng_state * 1103515245u + 12345u;
  return rng_state >> 8;
}

static b2s_cparams params(int codec, int clevel, int32_t ts) {
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.codec = codec;
  cp.clevel = clevel;
  cp.typesize = ts;
  return cp;
}

static void set_filters(b2s_cparams *cp, const uint8_t f[6],
                        const uint8_t meta[6]) {
  memcpy(cp->filters, f, B2S_MAX_FILTERS);
  memcpy(cp->filters_meta, meta, B2S_MAX_FILTERS);
}

/* Input data kinds; "ramp" follows the typesize so shuffling has structure
 * to find. */
static const char *ramp_formula(int32_t ts) {
  switch (ts) {
  case 1: return "ctr8";
  case 2: return "ctr16";
  case 4: return "f32ramp";
  case 8: return "f64ramp";
  default: return "ctr32";
  }
}

static uint8_t *make_data(const char *kind, int32_t ts, int32_t n) {
  uint8_t *buf = xalloc((size_t)n);
  const char *f = !strcmp(kind, "ramp")       ? ramp_formula(ts)
                  : !strcmp(kind, "random")   ? "lcgbytes"
                  : !strcmp(kind, "constant") ? "pattern:5a"
                                              : kind;
  assert_int_equal(vec_fill(f, 7, 0, buf, (size_t)n), 0);
  return buf;
}

/* ---- the blocksize and split rules of spec 1.7 / 1.13 ------------------- */

static bool has_filter(const b2s_cparams *cp, int id) {
  return memchr(cp->filters, id, B2S_MAX_FILTERS) != NULL;
}

static bool ref_split(const b2s_cparams *cp, int32_t ts, int32_t bs) {
  if (cp->splitmode == B2S_SPLIT_ALWAYS || cp->splitmode == B2S_SPLIT_NEVER)
    return cp->splitmode == B2S_SPLIT_ALWAYS;
  bool codec_ok = cp->codec == B2S_CODEC_BLOSCLZ ||
                  cp->codec == B2S_CODEC_LZ4 ||
                  (cp->codec == B2S_CODEC_ZSTD && cp->clevel <= 5);
  return codec_ok && has_filter(cp, B2S_FILTER_SHUFFLE) && ts <= 16 &&
         bs / ts >= 32;
}

static int32_t ref_auto_blocksize(const b2s_cparams *cp, int32_t nbytes) {
  bool hcr = cp->codec == B2S_CODEC_LZ4HC || cp->codec == B2S_CODEC_ZLIB ||
             cp->codec == B2S_CODEC_ZSTD;
  int64_t bs = nbytes;
  if (nbytes >= 32 * KIB) {
    static const int scale4[10] = {1, 2, 4, 8, 16, 16, 32, 32, 32, 32};
    bs = 32 * KIB * (hcr ? 2 : 1) * scale4[cp->clevel] / 4;
    if (cp->clevel == 9 && hcr)
      bs *= 2;
  }
  if (cp->clevel > 0 && ref_split(cp, cp->typesize, nbytes)) {
    static const int kib[10] = {0, 32, 32, 32, 64, 64, 64, 128, 256, 512};
    bs = (int64_t)kib[cp->clevel] * KIB * cp->typesize;
    bs = bs > 4 * MIB ? 4 * MIB : bs;
    bs = bs < 32 * KIB ? 32 * KIB : bs;
  }
  return (int32_t)bs;
}

static int32_t ref_blocksize(const b2s_cparams *cp, int32_t nbytes) {
  int32_t ts = cp->typesize;
  if (nbytes < ts)
    return 1;
  int32_t bs =
      cp->blocksize > 0 ? cp->blocksize : ref_auto_blocksize(cp, nbytes);
  bs = bs < nbytes ? bs : nbytes;
  if (bs > ts)
    bs = bs / ts * ts;
  return bs;
}

/* ---- one round trip ----------------------------------------------------- */

typedef struct stats {
  int cases, failures;
  int memcpyed, dicts;
} stats;

static void describe(char *buf, size_t size, const b2s_cparams *cp,
                     int32_t nbytes, const char *data) {
  snprintf(buf, size,
           "codec=%d cl=%d ts=%d filters=[%d,%d,%d,%d,%d,%d] "
           "meta=[%d,%d,%d,%d,%d,%d] split=%d bs=%d dict=%d nbytes=%d data=%s",
           cp->codec, cp->clevel, cp->typesize, cp->filters[0],
           cp->filters[1], cp->filters[2], cp->filters[3], cp->filters[4],
           cp->filters[5], (int8_t)cp->filters_meta[0],
           (int8_t)cp->filters_meta[1], (int8_t)cp->filters_meta[2],
           (int8_t)cp->filters_meta[3], (int8_t)cp->filters_meta[4],
           (int8_t)cp->filters_meta[5], cp->splitmode, cp->blocksize,
           cp->use_dict, nbytes, data);
}

static void fail_case(stats *st, const b2s_cparams *cp, int32_t nbytes,
                      const char *data, const char *what) {
  if (st->failures++ < MAX_REPORTS) {
    char d[320];
    describe(d, sizeof d, cp, nbytes, data);
    print_message("FAIL %s: %s\n", d, what);
  }
}

/* What decompression must give back: TRUNC_PREC runs (on whole items) only
 * when the filters ran, i.e. not for memcpy'ed chunks. */
static int32_t expected_output(const b2s_cparams *cp, const b2s_chunk_info *in,
                               uint8_t *buf, int32_t nbytes) {
  if (in->memcpyed || in->special != B2S_SPECIAL_NONE)
    return nbytes;
  for (int i = 0; i < B2S_MAX_FILTERS; i++)
    if (cp->filters[i] == B2S_FILTER_TRUNC_PREC)
      vec_truncprec(buf, (size_t)nbytes, cp->typesize,
                    (int8_t)cp->filters_meta[i]);
  if (has_filter(cp, B2S_FILTER_TRUNC_PREC))  /* partial item is undefined */
    return nbytes - nbytes % cp->typesize;
  return nbytes;
}

static int compformat_of(int codec) {
  static const int map[6] = {0, 1, 1, -1, 3, 4};
  return codec >= 0 && codec < 6 ? map[codec] : -1;
}

static const char *check_header(const b2s_cparams *cp, int32_t nbytes, int rc,
                                const b2s_chunk_info *in) {
  if (in->nbytes != nbytes || in->cbytes != rc)
    return "header nbytes/cbytes";
  if (in->typesize != cp->typesize || in->codec != cp->codec)
    return "header typesize/codec";
  if (memcmp(in->filters, cp->filters, 6) ||
      memcmp(in->filters_meta, cp->filters_meta, 6))
    return "header filters differ from the parameters";
  if (in->blocksize != ref_blocksize(cp, nbytes))
    return "blocksize differs from spec 1.13";
  if (!in->memcpyed &&
      in->dont_split == ref_split(cp, in->typesize, in->blocksize))
    return "split decision differs from spec 1.7";
  if (!in->memcpyed && in->compformat != compformat_of(cp->codec))
    return "compformat (flags bits 5..7) does not match the codec";
  if ((cp->clevel == 0 || nbytes < B2S_MIN_BUFFERSIZE) && !in->memcpyed)
    return "clevel 0 / tiny input must be memcpy'ed";
  return NULL;
}

static const char *check_getitem(const uint8_t *chunk, int rc,
                                 const uint8_t *want, int32_t cmp,
                                 int32_t ts) {
  int32_t total = cmp / ts;
  if (total < 1)
    return NULL;
  int32_t start = total / 3, n = total - start > 100 ? 100 : total - start;
  size_t len = (size_t)n * (size_t)ts;
  uint8_t *part = xalloc(len);
  int got = b2s_getitem(ctx, chunk, (size_t)rc, start, n, part, len);
  bool ok = got == (int)len &&
            !memcmp(part, want + (size_t)start * (size_t)ts, len);
  free(part);
  return ok ? NULL : "getitem differs from the decoded chunk";
}

/* Decompress and compare; returns a failure description or NULL. */
static const char *verify_chunk(const b2s_cparams *cp, const uint8_t *src,
                                int32_t nbytes, const uint8_t *chunk, int rc,
                                stats *st) {
  b2s_chunk_info in;
  if (b2s_chunk_info_get(chunk, (size_t)rc, &in) < 0)
    return "b2s_chunk_info_get rejects the chunk";
  const char *bad = check_header(cp, nbytes, rc, &in);
  if (bad)
    return bad;
  st->memcpyed += in.memcpyed;
  st->dicts += in.use_dict;
  uint8_t *want = exact_copy(src, (size_t)nbytes);
  int32_t cmp = expected_output(cp, &in, want, nbytes);
  uint8_t *out = xalloc((size_t)nbytes);
  int got = b2s_decompress(ctx, chunk, (size_t)rc, out, (size_t)nbytes);
  if (got != nbytes)
    bad = "b2s_decompress failed";
  else if (memcmp(out, want, (size_t)cmp))
    bad = "decompressed data differ";
  else if (!(rng() & 7) || nbytes < 100 * KIB)
    bad = check_getitem(chunk, rc, want, cmp, in.typesize);
  free(out);
  free(want);
  return bad;
}

/* Compress src with cp into an exact nbytes + 32 destination and check
 * everything about the result; true when all passed.  Fills *info (if
 * given) so callers can add checks of their own. */
static bool roundtrip_info(const b2s_cparams *cp, const uint8_t *src,
                           int32_t nbytes, const char *data, stats *st,
                           b2s_chunk_info *info) {
  int32_t dstsize = nbytes + B2S_MAX_OVERHEAD;
  uint8_t *dst = xalloc((size_t)dstsize);
  st->cases++;
  int rc = b2s_compress(ctx, cp, src, nbytes, dst, dstsize);
  const char *bad = NULL;
  char msg[96];
  if (rc <= 0 || rc > dstsize) {
    snprintf(msg, sizeof msg, "b2s_compress returned %d (%s)", rc,
             rc < 0 ? b2s_strerror(rc) : "size");
    bad = msg;
  } else {
    bad = verify_chunk(cp, src, nbytes, dst, rc, st);
  }
  if (!bad && info)
    b2s_chunk_info_get(dst, (size_t)rc, info);
  if (bad)
    fail_case(st, cp, nbytes, data, bad);
  free(dst);
  return bad == NULL;
}

static bool roundtrip(const b2s_cparams *cp, const uint8_t *src,
                      int32_t nbytes, const char *data, stats *st) {
  return roundtrip_info(cp, src, nbytes, data, st, NULL);
}

static void finish(const char *name, const stats *st) {
  print_message("%s: %d cases, %d failed (%d memcpy'ed, %d with dict)\n",
                name, st->cases, st->failures, st->memcpyed, st->dicts);
  assert_int_equal(st->failures, 0);
}

/* Codecs b2s_compress accepts; BloscLZ only if the setup found it does. */
static int codecs(int out[5]) {
  int n = 0;
  out[n++] = B2S_CODEC_LZ4;
  out[n++] = B2S_CODEC_LZ4HC;
  out[n++] = B2S_CODEC_ZSTD;
  out[n++] = B2S_CODEC_ZLIB;
  if (blosclz_encodes)
    out[n++] = B2S_CODEC_BLOSCLZ;
  return n;
}

static const int32_t typesizes[] = {1, 2, 3, 4, 7, 8, 16, 17, 32, 255};
#define NTYPESIZES ((int)(sizeof typesizes / sizeof typesizes[0]))

/* ---- grid tests --------------------------------------------------------- */

static void test_codec_clevel_typesize(void **state) {
  (void)state;
  stats st = {0};
  int cs[5], nc = codecs(cs);
  const int32_t nbytes = 40013;  /* odd: leaves a short last block */
  for (int t = 0; t < NTYPESIZES; t++) {
    uint8_t *src = make_data("ramp", typesizes[t], nbytes);
    for (int c = 0; c < nc; c++)
      for (int cl = 0; cl <= 9; cl++) {
        b2s_cparams cp = params(cs[c], cl, typesizes[t]);
        roundtrip(&cp, src, nbytes, "ramp", &st);
      }
    free(src);
  }
  finish("codec x clevel x typesize", &st);
}

typedef struct pipeline {
  const char *name;
  uint8_t filters[6], meta[6];
  int32_t only_ts;                 /* 0: any typesize */
} pipeline;

static const pipeline pipelines[] = {
    {"none", {0, 0, 0, 0, 0, 0}, {0}, 0},
    {"shuffle", {0, 0, 0, 0, 0, 1}, {0}, 0},
    {"bitshuffle", {0, 0, 0, 0, 0, 2}, {0}, 0},
    {"delta+shuffle", {0, 0, 0, 0, 3, 1}, {0}, 0},
    {"delta+bitshuffle", {0, 0, 0, 0, 3, 2}, {0}, 0},
    {"delta", {0, 0, 0, 0, 0, 3}, {0}, 0},
    {"shuffle meta 2", {0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 2}, 0},
    {"shuffle slot 0", {1, 0, 0, 0, 0, 0}, {0}, 0},
    {"shuffle+bitshuffle", {0, 0, 0, 0, 1, 2}, {0}, 0},
    {"truncprec 10", {0, 0, 0, 0, 4, 1}, {0, 0, 0, 0, 10, 0}, 4},
    {"truncprec -7", {0, 0, 0, 0, 4, 2}, {0, 0, 0, 0, (uint8_t)-7, 0}, 4},
    {"truncprec 20", {0, 0, 0, 0, 4, 1}, {0, 0, 0, 0, 20, 0}, 8},
    {"truncprec -20", {0, 0, 0, 0, 4, 1}, {0, 0, 0, 0, (uint8_t)-20, 0}, 8},
};
#define NPIPELINES ((int)(sizeof pipelines / sizeof pipelines[0]))

static void filter_case(const pipeline *p, int codec, int32_t ts,
                        int32_t nbytes, const char *data, stats *st) {
  uint8_t *src = make_data(data, ts, nbytes);
  b2s_cparams cp = params(codec, 5, ts);
  set_filters(&cp, p->filters, p->meta);
  roundtrip(&cp, src, nbytes, data, st);
  free(src);
}

static void test_filters(void **state) {
  (void)state;
  static const int32_t ts_list[] = {1, 2, 3, 4, 8, 16, 17};
  static const int32_t sizes[] = {1000, 65536 + 7, 40000};
  static const char *const data[] = {"ramp", "random", "text"};
  stats st = {0};
  int cs[5], nc = codecs(cs);
  for (int p = 0; p < NPIPELINES; p++)
    for (int c = 0; c < nc; c++)
      for (size_t t = 0; t < sizeof ts_list / sizeof ts_list[0]; t++) {
        if (pipelines[p].only_ts && pipelines[p].only_ts != ts_list[t])
          continue;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
          filter_case(&pipelines[p], cs[c], ts_list[t], sizes[s],
                      data[(p + c + t + s) % 3], &st);
      }
  finish("filter pipelines", &st);
}

static void test_splitmodes(void **state) {
  (void)state;
  static const int32_t ts_list[] = {1, 2, 4, 8, 16, 17, 32};
  static const int clevels[] = {1, 5, 9};
  stats st = {0};
  int cs[5], nc = codecs(cs);
  const int32_t nbytes = 70001;
  for (size_t t = 0; t < sizeof ts_list / sizeof ts_list[0]; t++) {
    uint8_t *src = make_data("ramp", ts_list[t], nbytes);
    for (int mode = 1; mode <= 4; mode++)
      for (int c = 0; c < nc; c++)
        for (int l = 0; l < 3; l++) {
          b2s_cparams cp = params(cs[c], clevels[l], ts_list[t]);
          cp.splitmode = mode;
          roundtrip(&cp, src, nbytes, "ramp", &st);
        }
    free(src);
  }
  finish("split modes", &st);
}

static void test_blocksizes(void **state) {
  (void)state;
  static const int32_t bsizes[] = {0,  4096, 1000,  4097,  1,
                                   7,  33,   65536, 100000};
  static const int32_t ts_list[] = {1, 4, 7, 8};
  static const int32_t sizes[] = {1000, 65536 + 7};
  static const int cl[] = {B2S_CODEC_LZ4, B2S_CODEC_ZSTD, B2S_CODEC_ZLIB};
  stats st = {0};
  for (size_t t = 0; t < sizeof ts_list / sizeof ts_list[0]; t++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      uint8_t *src = make_data("ramp", ts_list[t], sizes[s]);
      for (size_t b = 0; b < sizeof bsizes / sizeof bsizes[0]; b++)
        for (size_t c = 0; c < sizeof cl / sizeof cl[0]; c++) {
          b2s_cparams cp = params(cl[c], 5, ts_list[t]);
          cp.blocksize = bsizes[b];
          if (b & 1)  /* also with DELTA: blocks after the first use block 0 */
            cp.filters[4] = B2S_FILTER_DELTA;
          roundtrip(&cp, src, sizes[s], "ramp", &st);
        }
      free(src);
    }
  finish("blocksizes", &st);
}

static void dict_case(int codec, int clevel, int32_t nbytes, const char *data,
                      stats *st) {
  uint8_t *src = make_data(data, 4, nbytes);
  b2s_cparams cp = params(codec, clevel, 4);
  cp.use_dict = true;
  b2s_chunk_info in = {0};
  bool ok = roundtrip_info(&cp, src, nbytes, data, st, &in);
  /* lz4 dictionaries are a plain sample prefix, so with enough data one is
   * always stored (spec 1.8) */
  if (ok && codec != B2S_CODEC_ZSTD && nbytes >= 64 * KIB && !in.memcpyed &&
      in.special == B2S_SPECIAL_NONE && !in.use_dict)
    fail_case(st, &cp, nbytes, data, "no dictionary stored");
  free(src);
}

static void test_dicts(void **state) {
  (void)state;
  static const int cl[] = {B2S_CODEC_ZSTD, B2S_CODEC_LZ4, B2S_CODEC_LZ4HC};
  static const int32_t sizes[] = {1000, 6000, 65536 + 7, MIB};
  static const char *const data[] = {"text", "ramp", "random"};
  stats st = {0};
  for (size_t c = 0; c < 3; c++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (size_t d = 0; d < 3; d++)
        for (int clevel = 1; clevel <= 9; clevel += 4) {
          if (sizes[s] == MIB && clevel != 5)
            continue;
          dict_case(cl[c], clevel, sizes[s], data[d], &st);
        }
  /* without the flag nothing may be stored */
  uint8_t *src = make_data("text", 1, 65536);
  b2s_chunk_info in = {0};
  b2s_cparams cp = params(B2S_CODEC_ZSTD, 5, 1);
  if (roundtrip_info(&cp, src, 65536, "text", &st, &in) && in.use_dict)
    fail_case(&st, &cp, 65536, "text", "dictionary without use_dict");
  free(src);
  print_message("dicts: %d chunks carry a dictionary\n", st.dicts);
  assert_true(st.dicts > 0);
  finish("dictionaries", &st);
}

/* Data-dependent outcomes the spec pins down: all-zero input becomes a
 * 32-byte zeros chunk, incompressible input a memcpy chunk. */
static void check_outcome(const b2s_cparams *cp, int32_t nbytes,
                          const char *data, const b2s_chunk_info *in,
                          stats *st) {
  if (nbytes < B2S_MIN_BUFFERSIZE)
    return;
  if (!strcmp(data, "zeros") && !in->memcpyed &&
      (in->special != B2S_SPECIAL_ZERO || in->cbytes != B2S_HEADER_LEN))
    fail_case(st, cp, nbytes, data, "zeros not stored as a zeros chunk");
  if (!strcmp(data, "random") && !in->memcpyed)
    fail_case(st, cp, nbytes, data, "random data not memcpy'ed");
}

static void test_sizes(void **state) {
  (void)state;
  static const int32_t sizes[] = {0, 1, 31, 32, 33, 1000, 65536 + 7, MIB};
  static const char *const data[] = {"ramp", "random", "zeros", "constant",
                                     "text"};
  stats st = {0};
  int cs[5], nc = codecs(cs);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t d = 0; d < 5; d++)
      for (int c = 0; c < nc; c++) {
        int32_t ts = (c & 1) ? 8 : 4;
        uint8_t *src = make_data(data[d], ts, sizes[s]);
        b2s_cparams cp = params(cs[c], sizes[s] == MIB ? 3 : 5, ts);
        b2s_chunk_info in = {0};
        if (roundtrip_info(&cp, src, sizes[s], data[d], &st, &in))
          check_outcome(&cp, sizes[s], data[d], &in, &st);
        free(src);
      }
  finish("sizes x data", &st);
}

/* Random points of the full cartesian grid, so combinations the structured
 * tests leave out (dict + odd blocksize + split mode ...) still get hit. */
static b2s_cparams random_params(int32_t *nbytes, const char **data) {
  static const int32_t sizes[] = {0, 31, 33, 1000, 4099, 20000, 65536 + 7,
                                  65536 + 7};
  static const int32_t bsizes[] = {0, 0, 0, 4096, 1000, 777, 65536, 24};
  static const char *const kinds[] = {"ramp", "random", "zeros", "constant",
                                      "text"};
  int cs[5], nc = codecs(cs);
  const pipeline *p;
  int32_t ts;
  do {
    p = &pipelines[rng() % NPIPELINES];
    ts = typesizes[rng() % NTYPESIZES];
  } while (p->only_ts && p->only_ts != ts);
  b2s_cparams cp = params(cs[rng() % (unsigned)nc], (int)(rng() % 10), ts);
  set_filters(&cp, p->filters, p->meta);
  cp.splitmode = 1 + (int)(rng() % 4);
  cp.blocksize = bsizes[rng() % 8];
  cp.use_dict = cp.codec != B2S_CODEC_ZLIB && cp.codec != B2S_CODEC_BLOSCLZ &&
                (rng() & 3) == 0;
  *nbytes = sizes[rng() % 8];
  *data = kinds[rng() % 5];
  return cp;
}

static void test_random_grid(void **state) {
  (void)state;
  stats st = {0};
  rng_state = 777;
  for (int i = 0; i < 2000; i++) {
    int32_t nbytes;
    const char *data;
    b2s_cparams cp = random_params(&nbytes, &data);
    uint8_t *src = make_data(data, cp.typesize, nbytes);
    roundtrip(&cp, src, nbytes, data, &st);
    free(src);
  }
  finish("random grid points", &st);
}

static void test_blosclz(void **state) {
  (void)state;
  uint8_t src[4000], dst[4000 + B2S_MAX_OVERHEAD];
  vec_fill("ctr32", 1, 0, src, sizeof src);
  b2s_cparams cp = params(B2S_CODEC_BLOSCLZ, 5, 4);
  int rc = b2s_compress(ctx, &cp, src, sizeof src, dst, sizeof dst);
  if (blosclz_encodes) {
    print_message("blosclz: b2s_compress accepts it; included in the grids\n");
    assert_true(rc > 0);
    return;
  }
  print_message("blosclz: b2s_compress refuses it (%s)\n", b2s_strerror(rc));
  assert_int_equal(rc, B2S_E_CODEC);
}

/* ---- robustness: chunks to damage --------------------------------------- */

typedef struct sample {
  char name[64];
  uint8_t *chunk;
  size_t len;
  int32_t nbytes;
} sample;

#define MAX_SAMPLES 12
static sample samples[MAX_SAMPLES];
static int nsamples;

static void add_sample(const char *name, const uint8_t *chunk, size_t len,
                       int32_t nbytes) {
  assert_true(nsamples < MAX_SAMPLES);
  sample *s = &samples[nsamples++];
  snprintf(s->name, sizeof s->name, "%s", name);
  s->chunk = exact_copy(chunk, len);
  s->len = len;
  s->nbytes = nbytes;
}

static void add_compressed(const char *name, b2s_cparams cp, const char *data,
                           int32_t nbytes) {
  uint8_t *src = make_data(data, cp.typesize, nbytes);
  uint8_t *dst = xalloc((size_t)nbytes + B2S_MAX_OVERHEAD);
  int rc = b2s_compress(ctx, &cp, src, nbytes, dst, nbytes + B2S_MAX_OVERHEAD);
  if (rc > 0)
    add_sample(name, dst, (size_t)rc, nbytes);
  else
    print_message("sample %s: b2s_compress failed: %d\n", name, rc);
  free(dst);
  free(src);
}

static void add_vector(const mf_manifest *m, const char *name) {
  const mf_entry *e = mf_find(m, name);
  size_t len;
  uint8_t *buf = e ? mf_read_file(m, e, &len) : NULL;
  if (buf)
    add_sample(e->name, buf, len, (int32_t)e->chunks[0].nbytes);
  free(buf);
}

/* Vector chunks add decoders our own encoder never exercises (Blosc1
 * header, BloscLZ, run streams); they are optional here. */
static void add_vector_samples(void) {
  mf_manifest *m = mf_load_env(NULL, 0, NULL);
  if (!m)
    return;
  add_vector(m, "blosc1_header_lz4_shuffle_ts4");
  add_vector(m, "blosclz_cl9_ctr32_shuffle");
  add_vector(m, "runs_steps_lz4_ts1_bs4096");
  add_vector(m, "blocks8192_zstd_delta_shuffle_ts4");
  mf_free(m);
}

static void make_samples(void) {
  b2s_cparams cp = params(B2S_CODEC_LZ4, 5, 4);
  add_compressed("lz4 shuffle", cp, "ramp", 4000);
  cp = params(B2S_CODEC_ZSTD, 3, 4);
  cp.blocksize = 1024;
  cp.filters[4] = B2S_FILTER_DELTA;
  add_compressed("zstd delta multiblock", cp, "ramp", 5003);
  cp = params(B2S_CODEC_LZ4, 5, 1);
  cp.use_dict = true;
  add_compressed("lz4 dict text", cp, "text", 12000);
  cp = params(B2S_CODEC_ZLIB, 5, 8);
  cp.filters[5] = B2S_FILTER_BITSHUFFLE;
  add_compressed("zlib bitshuffle", cp, "ramp", 3000);
  cp = params(B2S_CODEC_LZ4, 0, 4);
  add_compressed("memcpy", cp, "ramp", 500);
  uint8_t buf[64];
  static const uint8_t value[3] = {1, 2, 3};
  cp = params(B2S_CODEC_LZ4, 5, 3);
  int rc = b2s_chunk_repeatval(&cp, 3000, buf, sizeof buf, value, 3);
  if (rc > 0)
    add_sample("repeatval", buf, (size_t)rc, 3000);
  add_vector_samples();
}

static void free_samples(void) {
  for (int i = 0; i < nsamples; i++)
    free(samples[i].chunk);
  nsamples = 0;
}

/* Every call on a damaged chunk: must not crash or overrun (ASan); when
 * must_fail, must return an error. */
static int probe(const uint8_t *buf, size_t len, int32_t nbytes,
                 bool must_fail) {
  b2s_chunk_info in;
  uint8_t *dst = xalloc((size_t)nbytes), part[64];
  int bad = 0;
  int rc = b2s_chunk_info_get(buf, len, &in);
  bad += must_fail && rc >= 0;
  rc = b2s_decompress(ctx, buf, len, dst, (size_t)nbytes);
  bad += must_fail ? rc >= 0 : rc > nbytes;
  rc = b2s_getitem(ctx, buf, len, 1, 2, part, sizeof part);
  bad += must_fail ? rc >= 0 : rc > (int)sizeof part;
  free(dst);
  return bad;
}

static void test_truncated(void **state) {
  (void)state;
  assert_true(nsamples > 0);
  int bad = 0, tried = 0;
  for (int s = 0; s < nsamples; s++)
    for (size_t len = 0; len < samples[s].len; len++) {
      uint8_t *cut = exact_copy(samples[s].chunk, len);
      int b = probe(cut, len, samples[s].nbytes, true);
      if (b && bad < MAX_REPORTS)
        print_message("FAIL %s truncated to %zu of %zu bytes: accepted\n",
                      samples[s].name, len, samples[s].len);
      bad += b != 0;
      tried++;
      free(cut);
    }
  print_message("truncations: %d tried on %d chunks, %d accepted\n", tried,
                nsamples, bad);
  assert_int_equal(bad, 0);
}

static void corrupt(uint8_t *buf, size_t len) {
  int flips = 1 + (int)(rng() % 4);
  for (int i = 0; i < flips; i++) {
    /* half the hits go to the header and bstarts, where damage matters */
    size_t lim = (rng() & 1) && len > 64 ? 64 : len;
    size_t pos = rng() % lim;
    if (rng() & 1)
      buf[pos] = (uint8_t)rng();
    else
      buf[pos] ^= (uint8_t)(1u << (rng() & 7));
  }
}

static void test_corrupted(void **state) {
  (void)state;
  assert_true(nsamples > 0);
  int bad = 0, rejected = 0, tried = 0;
  rng_state = 4242;
  for (int s = 0; s < nsamples; s++)
    for (int i = 0; i < 1500; i++) {
      uint8_t *buf = exact_copy(samples[s].chunk, samples[s].len);
      corrupt(buf, samples[s].len);
      uint8_t *dst = xalloc((size_t)samples[s].nbytes);
      int rc = b2s_decompress(ctx, buf, samples[s].len, dst,
                              (size_t)samples[s].nbytes);
      rejected += rc < 0;
      bad += probe(buf, samples[s].len, samples[s].nbytes, false) != 0;
      tried++;
      free(dst);
      free(buf);
    }
  print_message("corruptions: %d tried, %d rejected, %d misbehaved\n", tried,
                rejected, bad);
  assert_int_equal(bad, 0);
}

/* ---- specific invalid headers (spec 1.15) ------------------------------- */

static void put32(uint8_t *p, int32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)((uint32_t)v >> (8 * i));
}

typedef struct header_case {
  const char *what;
  const char *sample;              /* name of the damaged sample */
  int offset;                      /* byte to change, or -1 for put32 */
  int value;
  int field32;                     /* offset of an int32 to overwrite */
  bool info_must_fail;             /* detectable from the header alone */
} header_case;

#define LZ4 "lz4 shuffle"
#define ZSTD_DELTA "zstd delta multiblock"
#define MEMCPY "memcpy"
#define REPEAT "repeatval"

static const header_case header_cases[] = {
    {"typesize 0", LZ4, 3, 0, -1, true},
    {"special kind 5", LZ4, 31, 0x50, -1, true},
    {"special kind 7", LZ4, 31, 0x70, -1, true},
    {"blocksize 0", LZ4, -1, 0, 8, true},
    {"blocksize negative", LZ4, -1, -5, 8, true},
    {"cbytes beyond the buffer", LZ4, -1, 1 << 20, 12, true},
    {"cbytes below the header", LZ4, -1, 20, 12, true},
    {"unknown filter id 7", LZ4, 21, 7, -1, true},
    {"plugin filter id 32", LZ4, 21, 32, -1, true},
    {"version 7 with flags2 bit 1", LZ4, 30, 0x02, -1, true},
    {"bstarts[0] = 0", ZSTD_DELTA, -1, 0, 32, false},
    {"bstarts[1] beyond the chunk", ZSTD_DELTA, -1, 1 << 24, 36, false},
    {"memcpy with cbytes != nbytes + 32", MEMCPY, -1, 400, 4, true},
    {"VL flag on a special chunk", REPEAT, 30, 0x01, -1, true},
    {"repeat value: nbytes not a multiple", REPEAT, -1, 3001, 4, true},
};

static void apply_case(uint8_t *buf, const header_case *hc) {
  if (hc->offset >= 0)
    buf[hc->offset] = (uint8_t)hc->value;
  else
    put32(buf + hc->field32, hc->value);
  if (!strncmp(hc->what, "version 7", 9))
    buf[0] = 7;
}

static const sample *find_sample(const char *name) {
  for (int i = 0; i < nsamples; i++)
    if (!strcmp(samples[i].name, name))
      return &samples[i];
  fail_msg("sample chunk '%s' could not be made", name);
  return NULL;
}

static void test_bad_headers(void **state) {
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < sizeof header_cases / sizeof header_cases[0]; i++) {
    const header_case *hc = &header_cases[i];
    const sample *s = find_sample(hc->sample);
    uint8_t *buf = exact_copy(s->chunk, s->len);
    apply_case(buf, hc);
    b2s_chunk_info in;
    int info_rc = b2s_chunk_info_get(buf, s->len, &in);
    uint8_t *dst = xalloc((size_t)s->nbytes + 4096);
    int rc = b2s_decompress(ctx, buf, s->len, dst, (size_t)s->nbytes + 4096);
    if (rc >= 0 || (hc->info_must_fail && info_rc >= 0)) {
      print_message("FAIL %s (%s): info %d, decompress %d\n", hc->what,
                    s->name, info_rc, rc);
      bad++;
    }
    free(dst);
    free(buf);
  }
  assert_int_equal(bad, 0);
}

/* ---- destination too small ---------------------------------------------- */

static int dest_small_decode(void) {
  int bad = 0;
  for (int s = 0; s < nsamples; s++) {
    size_t n = (size_t)samples[s].nbytes;
    if (n == 0)
      continue;
    uint8_t *dst = xalloc(n - 1), part[8];
    int rc = b2s_decompress(ctx, samples[s].chunk, samples[s].len, dst, n - 1);
    int rc2 = b2s_getitem(ctx, samples[s].chunk, samples[s].len, 0, 100, part,
                          sizeof part);
    if (rc != B2S_E_DEST_SMALL || rc2 != B2S_E_DEST_SMALL) {
      print_message("FAIL %s: decompress into nbytes-1 gave %d, getitem of "
                    "100 items into 8 bytes gave %d (want B2S_E_DEST_SMALL)\n",
                    samples[s].name, rc, rc2);
      bad++;
    }
    free(dst);
  }
  return bad;
}

static int expect_code(const char *what, int rc, int want) {
  if (rc == want)
    return 0;
  print_message("FAIL %s: returned %d (%s), want %d (%s)\n", what, rc,
                b2s_strerror(rc), want, b2s_strerror(want));
  return 1;
}

/* With a destination that cannot hold the chunk the encoder must either
 * refuse or produce a valid smaller chunk, never overrun (dst is exact). */
static int tight_dest(const b2s_cparams *cp, const uint8_t *src, int32_t n,
                      int32_t dstsize) {
  uint8_t *dst = xalloc((size_t)dstsize);
  int rc = b2s_compress(ctx, cp, src, n, dst, dstsize);
  int bad = 0;
  if (rc > dstsize || (rc < 0 && rc != B2S_E_DEST_SMALL) || rc == 0) {
    bad = 1;
  } else if (rc > 0) {
    uint8_t *out = xalloc((size_t)n);
    bad = b2s_decompress(ctx, dst, (size_t)rc, out, (size_t)n) != n ||
          memcmp(out, src, (size_t)n);
    free(out);
  }
  if (bad)
    print_message("FAIL compress into %d bytes: returned %d\n", dstsize, rc);
  free(dst);
  return bad;
}

static int dest_small_encode(void) {
  uint8_t *rnd = make_data("random", 4, 10000);
  uint8_t *ramp = make_data("ramp", 4, 10000);
  uint8_t dst[64];
  b2s_cparams cp = params(B2S_CODEC_LZ4, 5, 4);
  int bad = 0;
  uint8_t *half = xalloc(5000);
  bad += expect_code("incompressible into nbytes/2",
                     b2s_compress(ctx, &cp, rnd, 10000, half, 5000),
                     B2S_E_DEST_SMALL);
  bad += expect_code("compress into 31 bytes",
                     b2s_compress(ctx, &cp, ramp, 16, dst, 31),
                     B2S_E_DEST_SMALL);
  int32_t full = 10000 + B2S_MAX_OVERHEAD;
  uint8_t *big = xalloc((size_t)full);
  int c = b2s_compress(ctx, &cp, ramp, 10000, big, full);
  assert_true(c > 0);
  bad += tight_dest(&cp, ramp, 10000, c);
  bad += tight_dest(&cp, ramp, 10000, c - 1);
  bad += tight_dest(&cp, ramp, 10000, c / 2);
  free(big);
  free(half);
  free(ramp);
  free(rnd);
  return bad;
}

static int dest_small_special(void) {
  uint8_t dst[64];
  static const uint8_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  b2s_cparams cp = params(B2S_CODEC_LZ4, 5, 8);
  int bad = 0;
  bad += expect_code("zeros into 31", b2s_chunk_zeros(&cp, 800, dst, 31),
                     B2S_E_DEST_SMALL);
  bad += expect_code("nans into 31", b2s_chunk_nans(&cp, 800, dst, 31),
                     B2S_E_DEST_SMALL);
  bad += expect_code("uninit into 31", b2s_chunk_uninit(&cp, 800, dst, 31),
                     B2S_E_DEST_SMALL);
  bad += expect_code("repeatval into 39",
                     b2s_chunk_repeatval(&cp, 800, dst, 39, v, 8),
                     B2S_E_DEST_SMALL);
  return bad;
}

static void test_dest_small(void **state) {
  (void)state;
  int bad = dest_small_decode() + dest_small_encode() + dest_small_special();
  assert_int_equal(bad, 0);
}

/* ---- invalid parameters ------------------------------------------------- */

static int try_params(const char *what, const b2s_cparams *cp, int want,
                      int alt) {
  static uint8_t src[4000], dst[4000 + B2S_MAX_OVERHEAD];
  vec_fill("f32ramp", 3, 0, src, sizeof src);
  int rc = b2s_compress(ctx, cp, src, sizeof src, dst, sizeof dst);
  if (rc == want || rc == alt)
    return 0;
  print_message("FAIL %s: returned %d (%s), want %s\n", what, rc,
                b2s_strerror(rc), b2s_strerror(want));
  return 1;
}

static int bad_scalar_params(void) {
  int bad = 0;
  b2s_cparams cp = params(B2S_CODEC_LZ4, 10, 4);
  bad += try_params("clevel 10", &cp, B2S_E_ARG, B2S_E_ARG);
  cp.clevel = -1;
  bad += try_params("clevel -1", &cp, B2S_E_ARG, B2S_E_ARG);
  static const int32_t ts[] = {0, 256, -1};
  for (int i = 0; i < 3; i++) {
    char what[32];
    cp = params(B2S_CODEC_LZ4, 5, ts[i]);
    snprintf(what, sizeof what, "typesize %d", ts[i]);
    bad += try_params(what, &cp, B2S_E_ARG, B2S_E_TYPESIZE);
  }
  static const int codes[] = {3, 6, 7, 32, 99, -1};
  for (int i = 0; i < 6; i++) {
    char what[32];
    cp = params(codes[i], 5, 4);
    snprintf(what, sizeof what, "codec %d", codes[i]);
    bad += try_params(what, &cp, B2S_E_CODEC, B2S_E_CODEC);
  }
  cp = params(B2S_CODEC_LZ4, 5, 4);
  cp.splitmode = 0;
  bad += try_params("splitmode 0", &cp, B2S_E_ARG, B2S_E_ARG);
  cp.splitmode = 5;
  bad += try_params("splitmode 5", &cp, B2S_E_ARG, B2S_E_ARG);
  cp = params(B2S_CODEC_LZ4, 5, 4);
  cp.blocksize = -1;
  bad += try_params("blocksize -1", &cp, B2S_E_ARG, B2S_E_BLOCKSIZE);
  cp = params(B2S_CODEC_ZLIB, 5, 4);
  cp.use_dict = true;
  bad += try_params("use_dict with zlib", &cp, B2S_E_NODICT_CODEC,
                    B2S_E_NODICT_CODEC);
  return bad;
}

static int bad_filter_params(void) {
  int bad = 0;
  static const uint8_t ids[] = {5, 7, 31, 32, 255};
  for (int i = 0; i < 5; i++)
    for (int slot = 0; slot < B2S_MAX_FILTERS; slot += 5) {
      char what[48];
      b2s_cparams cp = params(B2S_CODEC_LZ4, 5, 4);
      cp.filters[slot] = ids[i];
      snprintf(what, sizeof what, "filter id %d in slot %d", ids[i], slot);
      bad += try_params(what, &cp, B2S_E_FILTER, B2S_E_FILTER);
    }
  static const struct { int32_t ts; int8_t meta; } tp[] = {
      {2, 5}, {1, 5}, {4, 24}, {4, -23}, {8, 53}, {8, -52}};
  for (size_t i = 0; i < sizeof tp / sizeof tp[0]; i++) {
    char what[48];
    b2s_cparams cp = params(B2S_CODEC_LZ4, 5, tp[i].ts);
    cp.filters[4] = B2S_FILTER_TRUNC_PREC;
    cp.filters_meta[4] = (uint8_t)tp[i].meta;
    snprintf(what, sizeof what, "truncprec ts %d meta %d", tp[i].ts,
             tp[i].meta);
    bad += try_params(what, &cp, B2S_E_FILTER, B2S_E_FILTER);
  }
  return bad;
}

static int bad_sizes(void) {
  uint8_t src[64] = {0}, dst[128];
  b2s_cparams cp = params(B2S_CODEC_LZ4, 5, 4);
  int bad = 0;
  int rc = b2s_compress(ctx, &cp, src, -1, dst, sizeof dst);
  bad += expect_code("nbytes -1", rc, B2S_E_ARG);
  rc = b2s_compress(ctx, &cp, src, B2S_MAX_BUFFERSIZE + 1, dst, sizeof dst);
  if (rc != B2S_E_ARG && rc != B2S_E_NBYTES)
    bad += expect_code("nbytes above B2S_MAX_BUFFERSIZE", rc, B2S_E_NBYTES);
  static const uint8_t v[3] = {1, 2, 3};
  if (b2s_chunk_repeatval(&cp, 1000, dst, sizeof dst, v, 3) >= 0) {
    print_message("FAIL repeatval: nbytes 1000 not a multiple of 3 accepted\n");
    bad++;
  }
  cp.typesize = 3;
  if (b2s_chunk_nans(&cp, 999, dst, sizeof dst) >= 0) {
    print_message("FAIL nans with typesize 3 accepted\n");
    bad++;
  }
  return bad;
}

static void test_invalid_params(void **state) {
  (void)state;
  int bad = bad_scalar_params() + bad_filter_params() + bad_sizes();
  assert_int_equal(bad, 0);
}

/* ---- setup -------------------------------------------------------------- */

/* Run streams: a stream of one byte value is stored as a run (csize 0 or
 * -value plus one token), one differing byte anywhere, at every offset
 * around the run check's word and step boundaries, makes it a codec
 * stream.  The run is the smallest chunk there is, so the size tells. */
static void test_run_streams(void **state) {
  (void)state;
  uint8_t src[200], dst[200 + B2S_MAX_OVERHEAD], out[200];
  b2s_cparams cp = params(B2S_CODEC_LZ4, 5, 1);
  cp.filters[5] = B2S_FILTER_NONE;
  const int run_max = B2S_HEADER_LEN + 4 + 4 + 1; /* bstarts, csize, token */
  for (int n = 1; n <= 200; n += n < 100 ? 1 : 17)
    for (int k = -1; k < n; k++) {
      for (int value = 0; value < 2; value++) {
        memset(src, value ? 0x5a : 0, (size_t)n);
        if (k >= 0)
          src[k] ^= 1;
        int c = b2s_compress(ctx, &cp, src, (size_t)n, dst, sizeof dst);
        assert_true(c > 0);
        if (n >= 32) /* smaller buffers are stored as copies */
          assert_true(k < 0 ? c <= run_max : c > run_max);
        assert_int_equal(b2s_decompress(ctx, dst, (size_t)c, out, (size_t)n), n);
        assert_memory_equal(out, src, (size_t)n);
      }
    }
}

/* The decoder leaves a run stream in its scratch when the block before left
 * the same run there; every way that can go wrong is here: a run after a
 * codec stream of the same place, a run of another byte, a block of other
 * streams (the short last one, at a size that lays its one stream where
 * stream 0 is) and a second chunk decoded with the same context.  Stream s
 * of block b is a run of runs[b][s] or, for -1, codec data. */
static const int stream_runs[][4] = {
    {-1, 0, 7, 0},  {-1, 0, -1, 0}, {-1, -1, 7, 0}, {-1, 0, 7, 0},
    {-1, 7, 7, 0},  {-1, 7, 0, 0},  {0, 0, 0, 0},   {-1, 0, 7, 0},
    {0, 7, -1, 0},
};
#define RUN_BLOCKS (int)(sizeof stream_runs / sizeof stream_runs[0])

/* 16 blocks of 4096 bytes as the table says, then a short block: 1024
 * bytes as the table says, or 2048 zeros. */
static void fill_runs(uint8_t *p, int32_t nbytes, int shift) {
  for (int32_t i = 0; i < nbytes; i++) {
    int b = (i / 4096) % RUN_BLOCKS, v = stream_runs[(b + shift) % RUN_BLOCKS][i % 4];
    p[i] = v < 0 ? (uint8_t)(rng() | 1) : (uint8_t)v;
    if (nbytes % 4096 == 2048 && i >= 16 * 4096)
      p[i] = 0;
  }
}

/* Whether stream s of block b of a chunk is stored as a run (csize <= 0). */
static bool stream_is_run(const uint8_t *c, int b, int s) {
  int32_t pos, csize;
  memcpy(&pos, c + B2S_HEADER_LEN + 4 * b, 4);
  for (int k = 0;; k++) {
    memcpy(&csize, c + pos, 4);
    if (k == s)
      return csize <= 0;
    pos += 4 + (csize > 0 ? csize : csize < 0);
  }
}

static void test_run_streams_across_blocks(void **state) {
  (void)state;
  /* The short last block's single stream has the size of a full block's
   * streams (1024 bytes), or twice that, over streams 0 and 1 of the block
   * before (2048). */
  const int32_t big = 16 * 4096 + 2048;
  uint8_t *src = xalloc(big), *dst = xalloc(big + B2S_MAX_OVERHEAD), *out = xalloc(big);
  b2s_cparams cp = params(B2S_CODEC_LZ4, 5, 4);
  cp.blocksize = 4096;
  cp.splitmode = B2S_SPLIT_ALWAYS;
  for (int shift = 0; shift < 2 * RUN_BLOCKS; shift++) {
    int32_t n = shift < RUN_BLOCKS ? 16 * 4096 + 1024 : big;
    fill_runs(src, n, shift);
    int c = b2s_compress(ctx, &cp, src, n, dst, n + B2S_MAX_OVERHEAD);
    assert_true(c > 0);
    for (int b = 0; b < 16; b++)
      for (int s = 0; s < 4; s++)
        assert_int_equal(stream_is_run(dst, b, s),
                         stream_runs[(b + shift) % RUN_BLOCKS][s] >= 0);
    memset(out, 0xee, (size_t)n);
    assert_int_equal(b2s_decompress(ctx, dst, (size_t)c, out, (size_t)n), n);
    assert_memory_equal(out, src, (size_t)n);
    /* Ranges starting inside blocks go through the same scratch. */
    for (int32_t start = 0; start < n / 4; start += 700) {
      int32_t items = (n / 4 - start) < 3000 ? n / 4 - start : 3000;
      assert_int_equal(b2s_getitem(ctx, dst, (size_t)c, start, items, out, (size_t)n),
                       4 * items);
      assert_memory_equal(out, src + 4 * start, (size_t)(4 * items));
    }
  }
  free(src);
  free(dst);
  free(out);
}

static int group_setup(void **state) {
  (void)state;
  ctx = b2s_ctx_new();
  if (!ctx)
    return -1;
  uint8_t src[4000], dst[4000 + B2S_MAX_OVERHEAD];
  vec_fill("ctr32", 1, 0, src, sizeof src);
  b2s_cparams cp = params(B2S_CODEC_BLOSCLZ, 5, 4);
  int rc = b2s_compress(ctx, &cp, src, sizeof src, dst, sizeof dst);
  blosclz_encodes = rc > 0;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  free_samples();
  b2s_ctx_free(ctx);
  ctx = NULL;
  return 0;
}

static int samples_setup(void **state) {
  (void)state;
  if (nsamples == 0)
    make_samples();
  return 0;
}

/* The one parameter check every writer uses: each field out of range
 * gets its own code, and b2s_compress refuses the same. */
static void test_cparams_check(void **state) {
  (void)state;
  b2s_cparams ok = B2S_CPARAMS_DEFAULTS;
  assert_int_equal(b2s_cparams_check(&ok), 0);
  assert_int_equal(b2s_cparams_check(NULL), B2S_E_ARG);
  struct { b2s_cparams cp; int code; } bad[] = {
    {ok, B2S_E_ARG}, {ok, B2S_E_ARG}, {ok, B2S_E_ARG}, {ok, B2S_E_TYPESIZE},
    {ok, B2S_E_TYPESIZE}, {ok, B2S_E_CODEC}, {ok, B2S_E_NODICT_CODEC},
    {ok, B2S_E_FILTER},
  };
  bad[0].cp.clevel = 10;
  bad[1].cp.blocksize = -1;
  bad[2].cp.splitmode = 0;
  bad[3].cp.typesize = 0;
  bad[4].cp.typesize = 256;
  bad[5].cp.codec = 200;
  bad[6].cp.codec = B2S_CODEC_ZLIB;
  bad[6].cp.use_dict = true;
  bad[7].cp.filters[0] = 99;
  uint8_t src[64] = {0}, dst[256];
  b2s_ctx *ctx = b2s_ctx_new();
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(b2s_cparams_check(&bad[i].cp), bad[i].code);
    assert_int_equal(b2s_compress(ctx, &bad[i].cp, src, sizeof src, dst,
                                  sizeof dst), bad[i].code);
  }
  b2s_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cparams_check),
      cmocka_unit_test(test_codec_clevel_typesize),
      cmocka_unit_test(test_filters),
      cmocka_unit_test(test_splitmodes),
      cmocka_unit_test(test_blocksizes),
      cmocka_unit_test(test_dicts),
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_random_grid),
      cmocka_unit_test(test_blosclz),
      cmocka_unit_test(test_run_streams),
      cmocka_unit_test(test_run_streams_across_blocks),
      cmocka_unit_test_setup(test_truncated, samples_setup),
      cmocka_unit_test_setup(test_corrupted, samples_setup),
      cmocka_unit_test_setup(test_bad_headers, samples_setup),
      cmocka_unit_test_setup(test_dest_small, samples_setup),
      cmocka_unit_test(test_invalid_params),
  };
  return ts_run_tests(tests, group_setup, group_teardown);
}

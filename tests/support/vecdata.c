/* Data formulas of the reference vectors (spec section 10).
 *
 * The float ramps must round exactly like the generator did: plain IEEE
 * double operations, each rounded, never fused.  meson compiles this file
 * with -ffp-contract=off for that reason. */
#include "vecdata.h"

#include <nettle/sha2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LCG32_A UINT64_C(1103515245)
#define LCG32_C UINT64_C(12345)
#define LCG64_A UINT64_C(6364136223846793005)
#define LCG64_C UINT64_C(1442695040888963407)

/* x_n of x_{k+1} = a*x_k + c (mod 2^64) in O(log n), so a chunk deep inside
 * a stream costs no more than the first one.  A 32-bit LCG is the same
 * computation truncated: the low 32 bits only depend on low 32 bits. */
static uint64_t lcg_skip(uint64_t a, uint64_t c, uint64_t x, uint64_t n) {
  uint64_t acc_a = 1, acc_c = 0;
  while (n) {
    if (n & 1) {
      acc_a *= a;
      acc_c = acc_c * a + c;
    }
    c *= a + 1;
    a *= a;
    n >>= 1;
  }
  return acc_a * x + acc_c;
}

static uint32_t lcg32_step(uint32_t x) {
  return (uint32_t)(x * LCG32_A + LCG32_C);
}

static void put_le(uint8_t *out, uint64_t v, int width) {
  for (int i = 0; i < width; i++)
    out[i] = (uint8_t)(v >> (8 * i));
}

/* A fixed-width word stream: start() positions it at word w, next() emits
 * that word and advances. */
typedef struct gen {
  uint64_t seed, w, x;
  int width;
  void (*start)(struct gen *g);
  void (*next)(struct gen *g, uint8_t *out);
} gen;

static void start_plain(gen *g) { (void)g; }

static void next_u32mul(gen *g, uint8_t *out) {
  uint32_t v = (uint32_t)(g->w * UINT64_C(2654435761)) ^ (uint32_t)g->seed;
  put_le(out, v, 4);
  g->w++;
}

static void next_ctr(gen *g, uint8_t *out) {
  put_le(out, g->seed + g->w, g->width);
  g->w++;
}

/* Word w of the ramps uses x_{w+1}. */
static void start_lcg32(gen *g) {
  g->x = (uint32_t)lcg_skip(LCG32_A, LCG32_C, (uint32_t)g->seed, g->w + 1);
}

static double ramp_noise(gen *g) {
  return (double)((g->x >> 16) & 0x7fff);
}

static void next_f32ramp(gen *g, uint8_t *out) {
  float f = (float)((double)g->w * 0.01 + ramp_noise(g) * (0.001 / 32768.0));
  uint32_t bits;
  memcpy(&bits, &f, 4);
  put_le(out, bits, 4);
  g->w++;
  g->x = lcg32_step((uint32_t)g->x);
}

static void next_f64ramp(gen *g, uint8_t *out) {
  double d = (double)g->w * 0.001 + ramp_noise(g) * (1e-6 / 32768.0);
  uint64_t bits;
  memcpy(&bits, &d, 8);
  put_le(out, bits, 8);
  g->w++;
  g->x = lcg32_step((uint32_t)g->x);
}

static void start_lcg64(gen *g) {
  g->x = lcg_skip(LCG64_A, LCG64_C, g->seed, g->w + 1);
}

static void next_lcgbytes(gen *g, uint8_t *out) {
  out[0] = (uint8_t)(g->x >> 56);
  g->x = g->x * LCG64_A + LCG64_C;
}

static void next_steps(gen *g, uint8_t *out) {
  out[0] = (uint8_t)((g->w >> 12) * 37 + g->seed);
  g->w++;
}

static void gen_run(gen *g, uint64_t offset, uint8_t *dst, size_t n) {
  uint8_t word[8];
  size_t skip = (size_t)(offset % (uint64_t)g->width);
  g->w = offset / (uint64_t)g->width;
  g->start(g);
  while (n) {
    size_t take = (size_t)g->width - skip;
    if (take > n)
      take = n;
    g->next(g, word);
    memcpy(dst, word + skip, take);
    dst += take;
    n -= take;
    skip = 0;
  }
}

static const struct {
  const char *name;
  int width;
  void (*start)(gen *g);
  void (*next)(gen *g, uint8_t *out);
} word_formulas[] = {
    {"u32mul", 4, start_plain, next_u32mul},
    {"ctr8", 1, start_plain, next_ctr},
    {"ctr16", 2, start_plain, next_ctr},
    {"ctr32", 4, start_plain, next_ctr},
    {"ctr64", 8, start_plain, next_ctr},
    {"f32ramp", 4, start_lcg32, next_f32ramp},
    {"f64ramp", 8, start_lcg32, next_f64ramp},
    {"lcgbytes", 1, start_lcg64, next_lcgbytes},
    {"steps", 1, start_plain, next_steps},
};

static void fill_pattern(const uint8_t *pat, size_t len, uint64_t offset,
                         uint8_t *dst, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = pat[(offset + i) % len];
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static int fill_hex_pattern(const char *hex, uint64_t offset, uint8_t *dst,
                            size_t n) {
  uint8_t pat[256];
  size_t len = strlen(hex);
  if (len == 0 || len % 2 || len / 2 > sizeof pat)
    return -1;
  for (size_t i = 0; i < len / 2; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return -1;
    pat[i] = (uint8_t)(hi << 4 | lo);
  }
  fill_pattern(pat, len / 2, offset, dst, n);
  return 0;
}

static const char *const vocab[16] = {
    "blosc", "chunk",  "frame", "shuffle", "the",  "of",  "data",  "compress",
    "block", "stream", "and",   "a",       "zstd", "lz4", "index", "metalayer"};

/* Words have different lengths, so walk the stream from its start. */
static void fill_text(uint64_t seed, uint64_t offset, uint8_t *dst, size_t n) {
  uint64_t pos = 0, end = offset + n;
  uint32_t x = (uint32_t)seed;
  for (uint64_t k = 0; pos < end; k++) {
    char word[16];
    x = lcg32_step(x);
    size_t len = strlen(vocab[(x >> 16) & 15]);
    memcpy(word, vocab[(x >> 16) & 15], len);
    word[len++] = k % 10 == 9 ? '\n' : ' ';
    for (size_t i = 0; i < len; i++, pos++)
      if (pos >= offset && pos < end)
        dst[pos - offset] = (uint8_t)word[i];
  }
}

int vec_fill(const char *formula, uint64_t seed, uint64_t offset, uint8_t *dst,
             size_t n) {
  static const uint8_t nan32[4] = {0x00, 0x00, 0xc0, 0x7f};
  static const uint8_t nan64[8] = {0, 0, 0, 0, 0, 0, 0xf8, 0x7f};
  if (!strcmp(formula, "zeros") || !strcmp(formula, "uninit")) {
    memset(dst, 0, n);
    return 0;
  }
  if (!strcmp(formula, "nan32") || !strcmp(formula, "nan64")) {
    bool is32 = formula[3] == '3';
    fill_pattern(is32 ? nan32 : nan64, is32 ? 4 : 8, offset, dst, n);
    return 0;
  }
  if (!strncmp(formula, "pattern:", 8))
    return fill_hex_pattern(formula + 8, offset, dst, n);
  if (!strcmp(formula, "text")) {
    fill_text(seed, offset, dst, n);
    return 0;
  }
  for (size_t i = 0; i < sizeof word_formulas / sizeof word_formulas[0]; i++) {
    if (strcmp(formula, word_formulas[i].name))
      continue;
    gen g = {.seed = seed, .width = word_formulas[i].width,
             .start = word_formulas[i].start, .next = word_formulas[i].next};
    gen_run(&g, offset, dst, n);
    return 0;
  }
  return -1;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static bool b2nd_valid(const vec_b2nd *nd) {
  if (nd->ndim < 1 || nd->ndim > VEC_B2ND_MAXDIM || nd->typesize < 1)
    return false;
  for (int i = 0; i < nd->ndim; i++)
    if (nd->shape[i] < 1 || nd->chunkshape[i] < 1 || nd->blockshape[i] < 1)
      return false;
  return true;
}

uint64_t vec_b2nd_chunk_nbytes(const vec_b2nd *nd) {
  if (!b2nd_valid(nd))
    return 0;
  uint64_t items = 1;
  for (int i = 0; i < nd->ndim; i++)
    items *= (uint64_t)(ceil_div(nd->chunkshape[i], nd->blockshape[i]) *
                        nd->blockshape[i]);
  return items * (uint64_t)nd->typesize;
}

/* C-order (last dimension fastest) multi-index of lin within dims. */
static void unravel(uint64_t lin, const int64_t *dims, int ndim, int64_t *idx) {
  for (int i = ndim - 1; i >= 0; i--) {
    idx[i] = (int64_t)(lin % (uint64_t)dims[i]);
    lin /= (uint64_t)dims[i];
  }
}

/* Logical item number of chunk item q, or -1 for padding. */
static int64_t b2nd_item(const vec_b2nd *nd, const int64_t *chunk_idx,
                         uint64_t q) {
  int64_t bgrid[VEC_B2ND_MAXDIM], bshape[VEC_B2ND_MAXDIM];
  int64_t blk[VEC_B2ND_MAXDIM], inb[VEC_B2ND_MAXDIM];
  uint64_t bitems = 1;
  for (int i = 0; i < nd->ndim; i++) {
    bshape[i] = nd->blockshape[i];
    bgrid[i] = ceil_div(nd->chunkshape[i], nd->blockshape[i]);
    bitems *= (uint64_t)bshape[i];
  }
  unravel(q / bitems, bgrid, nd->ndim, blk);
  unravel(q % bitems, bshape, nd->ndim, inb);
  int64_t lin = 0;
  for (int i = 0; i < nd->ndim; i++) {
    int64_t c = blk[i] * bshape[i] + inb[i];
    int64_t g = chunk_idx[i] * nd->chunkshape[i] + c;
    if (c >= nd->chunkshape[i] || g >= nd->shape[i])
      return -1;
    lin = lin * nd->shape[i] + g;
  }
  return lin;
}

static uint8_t *b2nd_logical(const char *formula, uint64_t seed,
                             const vec_b2nd *nd) {
  uint64_t size = (uint64_t)nd->typesize;
  for (int i = 0; i < nd->ndim; i++)
    size *= (uint64_t)nd->shape[i];
  if (size > (UINT64_C(1) << 31))
    return NULL;
  uint8_t *buf = malloc(size ? size : 1);
  if (buf && vec_fill(formula, seed, 0, buf, (size_t)size) < 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

int vec_fill_b2nd(const char *formula, uint64_t seed, uint64_t chunk_no,
                  const vec_b2nd *nd, uint8_t *dst, size_t n) {
  static const char prefix[] = "b2nd-layout:";
  if (!strncmp(formula, prefix, sizeof prefix - 1))
    formula += sizeof prefix - 1;
  if (!b2nd_valid(nd) || n > vec_b2nd_chunk_nbytes(nd))
    return -1;
  int64_t cgrid[VEC_B2ND_MAXDIM], cidx[VEC_B2ND_MAXDIM];
  uint64_t nchunks = 1;
  for (int i = 0; i < nd->ndim; i++) {
    cgrid[i] = ceil_div(nd->shape[i], nd->chunkshape[i]);
    nchunks *= (uint64_t)cgrid[i];
  }
  if (chunk_no >= nchunks)
    return -1;
  unravel(chunk_no, cgrid, nd->ndim, cidx);
  uint8_t *logical = b2nd_logical(formula, seed, nd);
  if (!logical)
    return -1;
  size_t ts = (size_t)nd->typesize;
  for (size_t pos = 0; pos < n; pos += ts) {
    size_t take = n - pos < ts ? n - pos : ts;
    int64_t item = b2nd_item(nd, cidx, pos / ts);
    if (item < 0)
      memset(dst + pos, 0, take);
    else
      memcpy(dst + pos, logical + (size_t)item * ts, take);
  }
  free(logical);
  return 0;
}

int vec_truncprec(uint8_t *buf, size_t n, int typesize, int prec_bits) {
  int mant = typesize == 4 ? 23 : typesize == 8 ? 52 : -1;
  if (mant < 0 || prec_bits > mant || -prec_bits > mant)
    return -1;
  int zeroed = prec_bits > 0 ? mant - prec_bits : -prec_bits;
  if (zeroed >= mant)
    return -1;
  uint64_t mask = ~((UINT64_C(1) << zeroed) - 1);
  for (size_t pos = 0; pos + (size_t)typesize <= n; pos += (size_t)typesize) {
    uint64_t v = 0;
    for (int i = 0; i < typesize; i++)
      v |= (uint64_t)buf[pos + (size_t)i] << (8 * i);
    put_le(buf + pos, v & mask, typesize);
  }
  return 0;
}

void vec_sha256_hex(const void *data, size_t n, char out[65]) {
  static const char digits[] = "0123456789abcdef";
  struct sha256_ctx ctx;
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_init(&ctx);
  sha256_update(&ctx, n, data);
  sha256_digest(&ctx, SHA256_DIGEST_SIZE, digest);
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
    out[2 * i] = digits[digest[i] >> 4];
    out[2 * i + 1] = digits[digest[i] & 15];
  }
  out[64] = '\0';
}

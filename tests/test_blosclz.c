/* BloscLZ codec: hand-built streams, hostile input, round trips, and the
 * streams of c-blosc2's reference chunks (decoded and re-encoded). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "b2s_blosclz.h"
#include "b2s_errors.h"
#include "ts.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */

/* Decode into a guarded buffer so writes past dstlen are caught. */
static int decode(const uint8_t *src, int32_t srclen, uint8_t *dst,
                  int32_t dstlen)
{
  uint8_t *buf = malloc((size_t)dstlen + 64);
  assert_non_null(buf);
  memset(buf, 0xA5, (size_t)dstlen + 64);
  int r = b2s_blosclz_decompress(src, srclen, buf, dstlen);
  for (int i = 0; i < 64; i++)
    assert_int_equal(buf[dstlen + i], 0xA5);
  if (dst)
    memcpy(dst, buf, (size_t)dstlen);
  free(buf);
  return r;
}

static void expect_decode(const uint8_t *src, int32_t srclen,
                          const uint8_t *want, int32_t n)
{
  uint8_t *got = malloc((size_t)n + 1);
  assert_non_null(got);
  assert_int_equal(decode(src, srclen, got, n), n);
  assert_memory_equal(got, want, (size_t)n);
  /* the size must be exact in both directions */
  assert_int_equal(decode(src, srclen, NULL, n + 1), B2S_E_DECODE);
  if (n > 0)
    assert_int_equal(decode(src, srclen, NULL, n - 1), B2S_E_DECODE);
  free(got);
}

static void expect_reject(const uint8_t *src, int32_t srclen, int32_t n)
{
  assert_int_equal(decode(src, srclen, NULL, n), B2S_E_DECODE);
}

/* Appends literal runs of up to 32 bytes (first control byte gets bit 5). */
static size_t put_literals(uint8_t *s, size_t pos, const uint8_t *lit,
                           size_t n)
{
  while (n) {
    size_t k = n < 32 ? n : 32;
    s[pos] = (uint8_t)(k - 1) | (pos == 0 ? 0x20 : 0);
    memcpy(s + pos + 1, lit, k);
    pos += 1 + k;
    lit += k;
    n -= k;
  }
  return pos;
}

/* ------------------------------------------------------------------------ */
/* Data formulas of the reference vectors (MANIFEST.json "formulas")        */

static const char *const vocab[16] = {
    "blosc", "chunk",    "frame",  "shuffle", "the",  "of",
    "data",  "compress", "block",  "stream",  "and",  "a",
    "zstd",  "lz4",      "index",  "metalayer"};

static void gen_text(uint8_t *b, size_t n, uint32_t seed)
{
  uint32_t x = seed;
  size_t p = 0;
  for (uint32_t k = 0; p < n; k++) {
    x = x * 1103515245u + 12345u;
    const char *w = vocab[(x >> 16) & 15];
    for (; *w && p < n; w++)
      b[p++] = (uint8_t)*w;
    if (p < n)
      b[p++] = k % 10 == 9 ? '\n' : ' ';
  }
}

static void gen_ctr32(uint8_t *b, size_t n, uint32_t seed)
{
  for (size_t p = 0; p < n; p++) {
    uint32_t w = seed + (uint32_t)(p / 4);
    b[p] = (uint8_t)(w >> (8 * (p % 4)));
  }
}

static void put_le(uint8_t *b, uint64_t v, size_t size)
{
  for (size_t i = 0; i < size; i++)
    b[i] = (uint8_t)(v >> (8 * i));
}

static void gen_ramp(uint8_t *b, size_t n, uint32_t seed, int f64)
{
  uint32_t x = seed;
  size_t ts = f64 ? 8 : 4;
  for (size_t w = 0; w < n / ts; w++) {
    x = x * 1103515245u + 12345u;
    double r = (double)((x >> 16) & 0x7fff);
    if (f64) {
      double v = (double)w * 0.001 + r * (1e-6 / 32768.0);
      uint64_t u;
      memcpy(&u, &v, 8);
      put_le(b + w * 8, u, 8);
    } else {
      float v = (float)((double)w * 0.01 + r * (0.001 / 32768.0));
      uint32_t u;
      memcpy(&u, &v, 4);
      put_le(b + w * 4, u, 4);
    }
  }
}

/* Byte shuffle of whole items (leftover bytes stay in place). */
static void shuffle(uint8_t *dst, const uint8_t *src, size_t n, size_t ts)
{
  size_t items = n / ts;
  for (size_t j = 0; j < ts; j++)
    for (size_t i = 0; i < items; i++)
      dst[j * items + i] = src[i * ts + j];
  memcpy(dst + items * ts, src + items * ts, n - items * ts);
}

/* Round-trip data kinds, deterministic per seed. */
enum { KIND_RAMP, KIND_TEXT, KIND_RANDOM, KIND_ZEROS, KIND_PATTERN,
       KIND_FLOATS, KIND_FAR, KIND_COUNT };

static void gen_kind(int kind, uint8_t *b, size_t n, uint32_t seed)
{
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  switch (kind) {
  case KIND_RAMP:
    for (size_t i = 0; i < n; i++)
      b[i] = (uint8_t)(i + seed);
    break;
  case KIND_TEXT:
    gen_text(b, n, seed);
    break;
  case KIND_RANDOM:
    for (size_t i = 0; i < n; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      b[i] = (uint8_t)(s >> 56);
    }
    break;
  case KIND_ZEROS:
    memset(b, 0, n);
    break;
  case KIND_PATTERN:
    for (size_t i = 0; i < n; i++)
      b[i] = (uint8_t)("abcdefg"[i % (1 + seed % 7)] + (i >> 12));
    break;
  case KIND_FLOATS: {
    uint8_t *tmp = malloc(n);
    assert_non_null(tmp);
    memset(tmp, 0, n);
    gen_ramp(tmp, n, seed, 0);
    shuffle(b, tmp, n, 4);
    free(tmp);
    break;
  }
  case KIND_FAR: /* low-entropy block repeated ~20 KB later, lightly noisy */
    for (size_t i = 0; i < n; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      b[i] = i < 20000 ? (uint8_t)("ab\n "[s >> 62])
                       : (uint8_t)(b[i - 20000] ^ ((s >> 56) == 0));
    }
    break;
  default:
    fail();
  }
}

/* ------------------------------------------------------------------------ */
/* Hand-built streams                                                       */

static void test_literal_run(void **state)
{
  (void)state;
  const uint8_t s[] = {0x22, 'a', 'b', 'c'};
  expect_decode(s, sizeof s, (const uint8_t *)"abc", 3);
  /* only the low 5 bits of the first byte count */
  const uint8_t t[] = {0xE2, 'a', 'b', 'c'};
  expect_decode(t, sizeof t, (const uint8_t *)"abc", 3);
  /* a maximal run of 32 bytes followed by another run */
  uint8_t lit[40], u[64];
  for (int i = 0; i < 40; i++)
    lit[i] = (uint8_t)(i * 7);
  size_t len = put_literals(u, 0, lit, 40);
  assert_int_equal(len, 42);
  expect_decode(u, (int32_t)len, lit, 40);
}

static void test_near_match(void **state)
{
  (void)state;
  /* "abcd", copy 3 from 4 back, literal "Z" */
  const uint8_t s[] = {0x23, 'a', 'b', 'c', 'd', 0x20, 0x03, 0x00, 'Z'};
  expect_decode(s, sizeof s, (const uint8_t *)"abcdabcZ", 8);
  /* L = 6 -> length 8, from 5 back (overlapping) */
  const uint8_t t[] = {0x24, '1', '2', '3', '4', '5', 0xC0, 0x04, 0x00, '!'};
  expect_decode(t, sizeof t, (const uint8_t *)"1234512345123!", 14);
}

static void test_overlapping_copies(void **state)
{
  (void)state;
  /* distance 1 repeats the previous byte */
  const uint8_t s[] = {0x20, 'x', 0x80, 0x00, 0x00, 'y'};
  expect_decode(s, sizeof s, (const uint8_t *)"xxxxxxxy", 8);
  /* distance 2, length 9 + 40 */
  uint8_t t[] = {0x21, 'a', 'b', 0xE0, 40, 0x01, 0x00, '.'};
  uint8_t want[2 + 49 + 1];
  for (int i = 0; i < 51; i++)
    want[i] = i % 2 ? 'b' : 'a';
  want[51] = '.';
  expect_decode(t, sizeof t, want, sizeof want);
  /* every short distance 1..17 with lengths around the wide-copy sizes */
  for (int dist = 1; dist <= 17; dist++) {
    for (int mlen = 3; mlen <= 80; mlen++) {
      uint8_t st[64], out[200];
      uint8_t lit[17];
      for (int i = 0; i < dist; i++)
        lit[i] = (uint8_t)(100 + i);
      size_t p = put_literals(st, 0, lit, (size_t)dist);
      if (mlen <= 8) {
        st[p++] = (uint8_t)((mlen - 2) << 5);
      } else {
        st[p++] = 0xE0;
        st[p++] = (uint8_t)(mlen - 9);
      }
      st[p++] = (uint8_t)(dist - 1);
      for (int i = 0; i < dist + mlen; i++)
        out[i] = lit[i % dist];
      expect_decode(st, (int32_t)p, out, dist + mlen);
      /* and with trailing literals after the match */
      st[p++] = 1;
      st[p++] = 'q';
      st[p++] = 'r';
      out[dist + mlen] = 'q';
      out[dist + mlen + 1] = 'r';
      expect_decode(st, (int32_t)p, out, dist + mlen + 2);
    }
  }
}

static void test_long_match_extension(void **state)
{
  (void)state;
  /* length 9 + 255 + 10 = 274 at distance 1 */
  const uint8_t s[] = {0x20, 'x', 0xE0, 255, 10, 0x00, 0x00, 'y'};
  uint8_t want[1 + 274 + 1];
  memset(want, 'x', 275);
  want[275] = 'y';
  expect_decode(s, sizeof s, want, sizeof want);
  /* three 255 bytes: 9 + 765 + 0 */
  const uint8_t t[] = {0x20, 'x', 0xE0, 255, 255, 255, 0, 0x00};
  uint8_t want2[1 + 774];
  memset(want2, 'x', sizeof want2);
  expect_decode(t, sizeof t, want2, sizeof want2);
}

/* 9000 literal bytes, then a match reaching back dist bytes. */
static void check_far(uint32_t dist, const uint8_t *tail, size_t tlen)
{
  enum { PRE = 9000 };
  uint8_t *lit = malloc(PRE), *s = malloc(PRE + PRE / 32 + 32);
  uint8_t *want = malloc(PRE + 16);
  assert_true(lit && s && want);
  for (int i = 0; i < PRE; i++)
    lit[i] = (uint8_t)(i * 31 + (i >> 8));
  size_t p = put_literals(s, 0, lit, PRE);
  memcpy(s + p, tail, tlen);
  p += tlen;
  memcpy(want, lit, PRE);
  for (int i = 0; i < 3; i++)
    want[PRE + i] = want[PRE + i - dist];
  expect_decode(s, (int32_t)p, want, PRE + 3);
  free(lit);
  free(s);
  free(want);
}

static void test_far_match(void **state)
{
  (void)state;
  /* far form: 8192 + 0x0328 = 9000 (the very first byte) */
  const uint8_t far[] = {0x3F, 0xFF, 0x03, 0x28};
  check_far(9000, far, sizeof far);
  /* far form with the smallest distance 8192 */
  const uint8_t far0[] = {0x3F, 0xFF, 0x00, 0x00};
  check_far(8192, far0, sizeof far0);
  /* largest near distance: H = 31, D = 254 -> 8191 */
  const uint8_t near[] = {0x3F, 0xFE};
  check_far(8191, near, sizeof near);
  /* D = 255 with H < 31 is an ordinary near distance */
  const uint8_t near2[] = {0x3E, 0xFF};
  check_far(30 * 256 + 256, near2, sizeof near2);
  /* far distance beyond the output start */
  uint8_t s[64];
  uint8_t lit[32] = {0};
  size_t p = put_literals(s, 0, lit, 32);
  s[p++] = 0x3F;
  s[p++] = 0xFF;
  s[p++] = 0x00;
  s[p++] = 0x00;
  expect_reject(s, (int32_t)p, 35);
}

/* ------------------------------------------------------------------------ */
/* Malformed streams                                                        */

static void test_malformed(void **state)
{
  (void)state;
  /* truncated literal run */
  const uint8_t a[] = {0x25, 'a', 'b'};
  expect_reject(a, sizeof a, 6);
  expect_reject(a, sizeof a, 2);
  /* match without its distance byte */
  const uint8_t b[] = {0x21, 'a', 'b', 0x20};
  expect_reject(b, sizeof b, 5);
  /* extension bytes run out */
  const uint8_t c[] = {0x21, 'a', 'b', 0xE0, 255};
  expect_reject(c, sizeof c, 300);
  const uint8_t c2[] = {0x21, 'a', 'b', 0xE0, 3};
  expect_reject(c2, sizeof c2, 14);
  /* far match with one of its two distance bytes */
  const uint8_t d[] = {0x21, 'a', 'b', 0x3F, 0xFF, 0x00};
  expect_reject(d, sizeof d, 5);
  /* distance before the output start (3 back with 2 bytes written) */
  const uint8_t e[] = {0x21, 'a', 'b', 0x20, 0x02, 0x00, 'z'};
  expect_reject(e, sizeof e, 6);
  /* first instruction can never be a match: 0x20 is a 1-byte literal */
  const uint8_t f[] = {0x20};
  expect_reject(f, sizeof f, 1);
  /* output overrun: literal and match longer than dstlen */
  const uint8_t g[] = {0x23, 'a', 'b', 'c', 'd'};
  expect_reject(g, sizeof g, 3);
  const uint8_t h[] = {0x20, 'x', 0xE0, 200, 0x00, 0x00, 'y'};
  expect_reject(h, sizeof h, 100);
  /* hostile chain of 255s stops at the output size */
  uint8_t big[4096];
  big[0] = 0x20;
  big[1] = 'x';
  big[2] = 0xE0;
  memset(big + 3, 255, sizeof big - 3);
  expect_reject(big, sizeof big, 1000);
  /* output short */
  const uint8_t k[] = {0x21, 'a', 'b'};
  expect_reject(k, sizeof k, 3);
  /* empty stream decodes only to nothing */
  assert_int_equal(b2s_blosclz_decompress(k, 0, NULL, 0), 0);
  expect_reject(k, 0, 1);
  /* bad arguments */
  uint8_t out[4];
  assert_true(b2s_blosclz_decompress(k, -1, out, 4) < 0);
  assert_true(b2s_blosclz_decompress(k, 3, out, -4) < 0);
  assert_true(b2s_blosclz_decompress(NULL, 3, out, 4) < 0);
}

/* Truncating or corrupting a valid stream must fail cleanly or decode
 * something of the right size, never read or write out of bounds. */
static void test_mutations(void **state)
{
  (void)state;
  enum { N = 20000 };
  uint8_t *in = malloc(N), *c = malloc(N), *out = malloc(N);
  assert_true(in && c && out);
  gen_kind(KIND_TEXT, in, N, 5);
  int len = b2s_blosclz_compress(5, in, N, c, N);
  assert_true(len > 0);
  for (int cut = 0; cut < len; cut += 1 + cut / 50) {
    uint8_t *copy = malloc((size_t)cut + 1);
    memcpy(copy, c, (size_t)cut);
    assert_int_equal(decode(copy, cut, NULL, N), B2S_E_DECODE);
    free(copy);
  }
  uint32_t x = 1;
  for (int i = 0; i < 2000; i++) {
    uint8_t *m = malloc((size_t)len);
    memcpy(m, c, (size_t)len);
    for (int j = 0; j < 3; j++) {
      x = x * 1103515245u + 12345u;
      m[(x >> 8) % (unsigned)len] = (uint8_t)(x >> 24);
    }
    int r = decode(m, len, NULL, N);
    assert_true(r == N || r == B2S_E_DECODE);
    free(m);
  }
  free(in);
  free(c);
  free(out);
}

/* ------------------------------------------------------------------------ */
/* Encoder                                                                  */

static void test_encoder_known_output(void **state)
{
  (void)state;
  /* streams written by c-blosc2 3.3 for the same inputs */
  uint8_t in[120], out[200];
  memset(in, 'A', 100);
  const uint8_t want_a[] = {0x23, 0x41, 0x41, 0x41, 0x41, 0xe0,
                            0x54, 0x03, 0x02, 0x41, 0x41, 0x41};
  assert_int_equal(b2s_blosclz_compress(9, in, 100, out, 100),
                   sizeof want_a);
  assert_memory_equal(out, want_a, sizeof want_a);

  for (int i = 0; i < 120; i++)
    in[i] = (uint8_t)"0123456789abcdef"[(i % 16) ^ (i / 48)];
  const uint8_t want_h[] = {
      0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61,
      0x62, 0x63, 0x64, 0x65, 0x66, 0xe0, 0x16, 0x0f, 0x10, 0x66, 0x31, 0x30,
      0x33, 0x32, 0x35, 0x34, 0x37, 0x36, 0x39, 0x38, 0x62, 0x61, 0x64, 0x63,
      0x66, 0x65, 0xe0, 0x16, 0x0f, 0x18, 0x65, 0x32, 0x33, 0x30, 0x31, 0x36,
      0x37, 0x34, 0x35, 0x61, 0x62, 0x38, 0x39, 0x65, 0x66, 0x63, 0x64, 0x32,
      0x33, 0x30, 0x31, 0x36, 0x37, 0x34, 0x35};
  assert_int_equal(b2s_blosclz_compress(5, in, 120, out, 120),
                   sizeof want_h);
  assert_memory_equal(out, want_h, sizeof want_h);
}

static void test_encoder_gives_up(void **state)
{
  (void)state;
  uint8_t in[4096], out[8192];
  memset(in, 0, sizeof in);
  /* too small an input or output */
  assert_int_equal(b2s_blosclz_compress(5, in, 15, out, 100), 0);
  assert_int_equal(b2s_blosclz_compress(5, in, 4096, out, 65), 0);
  assert_int_equal(b2s_blosclz_compress(5, in, 0, out, 100), 0);
  /* incompressible data fails the entropy probe */
  gen_kind(KIND_RANDOM, in, sizeof in, 3);
  for (int cl = 1; cl <= 9; cl++)
    assert_int_equal(b2s_blosclz_compress(cl, in, 4096, out, 8192), 0);
  /* running out of room gives up; one spare byte is always enough */
  gen_kind(KIND_TEXT, in, sizeof in, 3);
  int full = b2s_blosclz_compress(5, in, 4096, out, 4096);
  assert_true(full > 66);
  uint8_t again[4096];
  assert_int_equal(b2s_blosclz_compress(5, in, 4096, again, full + 1), full);
  assert_memory_equal(again, out, (size_t)full);
  assert_int_equal(b2s_blosclz_compress(5, in, 4096, again, full - 1), 0);
  /* bad arguments */
  assert_true(b2s_blosclz_compress(0, in, 100, out, 100) < 0);
  assert_true(b2s_blosclz_compress(10, in, 100, out, 100) < 0);
  assert_true(b2s_blosclz_compress(5, in, -1, out, 100) < 0);
}

static void test_round_trips(void **state)
{
  (void)state;
  static const int32_t sizes[] = {16,   17,    31,    64,    100,   1000,
                                  4099, 16384, 20000, 65536, 100003};
  uint8_t *in = malloc(100003), *c = malloc(100003), *d = malloc(100003);
  assert_true(in && c && d);
  int compressed = 0;
  for (int kind = 0; kind < KIND_COUNT; kind++) {
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
      int32_t n = sizes[si];
      gen_kind(kind, in, (size_t)n, (uint32_t)(si + 1));
      for (int cl = 1; cl <= 9; cl++) {
        int r = b2s_blosclz_compress(cl, in, n, c, n);
        assert_true(r >= 0 && r <= n);
        if (r == 0)
          continue;
        compressed++;
        assert_true(c[0] & 0x20);
        assert_int_equal(b2s_blosclz_decompress(c, r, d, n), n);
        assert_memory_equal(d, in, (size_t)n);
      }
    }
  }
  assert_true(compressed > 250);
  free(in);
  free(c);
  free(d);
}

/* ------------------------------------------------------------------------ */
/* Streams of c-blosc2's reference chunks                                   */

enum { F_TEXT, F_CTR32, F_F32RAMP, F_F64RAMP };

struct vector {
  const char *file;
  int formula;
  uint32_t seed;
  int clevel;
  int shuffled;
};

static const struct vector vectors[] = {
    {"blosclz_text_ts1_noshuffle.chunk", F_TEXT, 21, 5, 0},
    {"blosclz_text_128k_farmatches.chunk", F_TEXT, 23, 5, 0},
    {"blosclz_cl9_ctr32_shuffle.chunk", F_CTR32, 123456, 9, 1},
    {"codec_blosclz_cl1_shuffle_ts4.chunk", F_F32RAMP, 11, 1, 1},
    {"codec_blosclz_cl5_shuffle_ts4.chunk", F_F32RAMP, 11, 5, 1},
    {"codec_blosclz_cl9_shuffle_ts4.chunk", F_F32RAMP, 11, 9, 1},
    {"split_always_blosclz_cl5.chunk", F_F32RAMP, 14, 5, 1},
    {"split_never_blosclz_cl5.chunk", F_F32RAMP, 14, 5, 1},
    {"blosclz_defaults_f64.chunk", F_F64RAMP, 22, 5, 1},
};

static int32_t rd32le(const uint8_t *p)
{
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                   (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static void gen_vector(const struct vector *v, uint8_t *b, size_t n)
{
  memset(b, 0, n);
  switch (v->formula) {
  case F_TEXT: gen_text(b, n, v->seed); break;
  case F_CTR32: gen_ctr32(b, n, v->seed); break;
  case F_F32RAMP: gen_ramp(b, n, v->seed, 0); break;
  case F_F64RAMP: gen_ramp(b, n, v->seed, 1); break;
  default: fail();
  }
}

/* Check one compressed stream: it decodes to want, and our encoder writes
 * the same bytes from want.  Returns 1 when the stream was codec output. */
static int check_stream(const struct vector *v, const uint8_t *payload,
                        int32_t csize, const uint8_t *want, int32_t neblock)
{
  uint8_t *buf = malloc((size_t)neblock);
  assert_non_null(buf);
  int coded = csize > 0 && csize != neblock;
  if (coded) {
    assert_int_equal(decode(payload, csize, buf, neblock), neblock);
    assert_memory_equal(buf, want, (size_t)neblock);
  }
  int r = b2s_blosclz_compress(v->clevel, want, neblock, buf, neblock);
  if (coded) {
    assert_int_equal(r, csize);
    assert_memory_equal(buf, payload, (size_t)csize);
  } else if (csize == neblock) {
    /* stored raw: c-blosc2 gave up or could not shrink it */
    assert_true(r == 0 || r == neblock);
    assert_memory_equal(payload, want, (size_t)neblock);
  }
  free(buf);
  return coded;
}

static void check_vector(const char *dir, const struct vector *v)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/chunks/%s", dir, v->file);
  size_t size = 0;
  uint8_t *ch = (uint8_t *)ts_read_text(path, &size);
  if (!ch) {
    print_message("vector %s missing\n", path);
    skip();
  }
  assert_true(size >= 36);
  uint8_t flags = ch[2];
  int32_t ts = ch[3], nbytes = rd32le(ch + 4), bsize = rd32le(ch + 8);
  assert_int_equal(rd32le(ch + 12), (int32_t)size);
  assert_int_equal(flags >> 5, 0); /* compformat BloscLZ */
  assert_int_equal(flags & 0x02, 0); /* not memcpy'ed */

  uint8_t *data = malloc((size_t)nbytes), *filt = malloc((size_t)bsize);
  assert_true(data && filt);
  gen_vector(v, data, (size_t)nbytes);
  int32_t nblocks = (nbytes + bsize - 1) / bsize;
  int coded = 0;
  for (int32_t b = 0; b < nblocks; b++) {
    int32_t bs = b == nblocks - 1 ? nbytes - b * bsize : bsize;
    if (v->shuffled)
      shuffle(filt, data + (size_t)b * bsize, (size_t)bs, (size_t)ts);
    else
      memcpy(filt, data + (size_t)b * bsize, (size_t)bs);
    int32_t ns = (flags & 0x10) || bs != bsize ? 1 : ts;
    int32_t neblock = bs / ns;
    size_t pos = (size_t)rd32le(ch + 32 + 4 * b);
    for (int32_t j = 0; j < ns; j++) {
      assert_true(pos + 4 <= size);
      int32_t csize = rd32le(ch + pos);
      pos += 4;
      size_t plen = csize > 0 ? (size_t)csize : (size_t)(csize < 0);
      assert_true(pos + plen <= size);
      coded += check_stream(v, ch + pos, csize, filt + (size_t)j * neblock,
                            neblock);
      pos += plen;
    }
  }
  assert_true(coded > 0);
  free(data);
  free(filt);
  free(ch);
}

static void test_reference_vectors(void **state)
{
  (void)state;
  const char *dir = getenv("B2S_VECTORS");
  if (!dir || !*dir) {
    print_message("B2S_VECTORS not set: reference vectors skipped\n");
    skip();
  }
  for (size_t i = 0; i < sizeof vectors / sizeof *vectors; i++)
    check_vector(dir, &vectors[i]);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_literal_run),
      cmocka_unit_test(test_near_match),
      cmocka_unit_test(test_overlapping_copies),
      cmocka_unit_test(test_long_match_extension),
      cmocka_unit_test(test_far_match),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_encoder_known_output),
      cmocka_unit_test(test_encoder_gives_up),
      cmocka_unit_test(test_round_trips),
      cmocka_unit_test(test_reference_vectors),
  };
  return ts_run_tests(tests, NULL, NULL);
}

/* Shuffle / bit shuffle kernels: exact layouts (spec 3.2, 3.3, 3.6), SIMD
 * levels against the scalar reference, round trips, and the blocks of
 * chunks written by c-blosc2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "b2s_shuffle.h"
#include "ts.h"

typedef void (*kernel_fn)(size_t, size_t, const uint8_t *, uint8_t *);

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

/* Straight transcriptions of the spec formulas, independent of the library
 * code, to pin the scalar reference. */
static void naive_shuffle(size_t ts, size_t size, const uint8_t *in, uint8_t *out)
{
    size_t n = size / ts;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < ts; j++)
            out[j * n + i] = in[i * ts + j];
    for (size_t p = n * ts; p < size; p++)
        out[p] = in[p];
}

static void naive_bitshuffle(size_t ts, size_t size, const uint8_t *in, uint8_t *out)
{
    size_t m8 = (size / ts) / 8 * 8;
    size_t rowlen = m8 / 8;
    memset(out, 0, size);
    for (size_t j = 0; j < ts; j++)
        for (size_t b = 0; b < 8; b++)
            for (size_t q = 0; q < rowlen; q++)
                for (size_t k = 0; k < 8; k++) {
                    unsigned bit = (in[(8 * q + k) * ts + j] >> b) & 1u;
                    out[(8 * j + b) * rowlen + q] |= (uint8_t)(bit << k);
                }
    for (size_t p = m8 * ts; p < size; p++)
        out[p] = in[p];
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint8_t rng_byte(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint8_t)(rng_state >> 24);
}

/* A buffer that ends exactly at the end of its allocation and starts at an
 * odd address, so that sanitizers see any overrun and kernels cannot rely
 * on alignment. */
struct buf {
    uint8_t *base;
    uint8_t *p;
};

static struct buf buf_new(size_t size)
{
    struct buf b;
    b.base = malloc(size + 1);
    assert_non_null(b.base);
    b.p = b.base + 1;
    return b;
}

static struct buf buf_random(size_t size)
{
    struct buf b = buf_new(size);
    for (size_t i = 0; i < size; i++)
        b.p[i] = rng_byte();
    return b;
}

static void buf_free(struct buf b)
{
    free(b.base);
}

static const size_t typesizes[] = {
    1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
    20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 64, 100, 255,
};
#define N_TYPESIZES (sizeof typesizes / sizeof typesizes[0])

static const size_t fixed_sizes[] = { 0, 1, 7, 31, 33, 100, 1000, 4097, 65536 + 13 };
#define N_FIXED (sizeof fixed_sizes / sizeof fixed_sizes[0])

/* Sizes tied to the typesize: exact vector multiples, one item more or
 * less, several bit-shuffle tiles, odd tails. */
static const size_t item_counts[] = { 8, 15, 16, 17, 32, 33, 64, 127, 256, 2049, 6000 };
#define N_ITEM_COUNTS (sizeof item_counts / sizeof item_counts[0])

static size_t case_size(size_t ts, size_t idx)
{
    if (idx < N_FIXED)
        return fixed_sizes[idx];
    idx -= N_FIXED;
    return item_counts[idx] * ts + idx % ts;
}
#define N_CASES (N_FIXED + N_ITEM_COUNTS)

/* Runs `fn` and `ref` on the same random input and compares. */
static void check_same(kernel_fn fn, kernel_fn ref, size_t ts, size_t size)
{
    struct buf in = buf_random(size);
    struct buf a = buf_new(size);
    struct buf b = buf_new(size);
    fn(ts, size, in.p, a.p);
    ref(ts, size, in.p, b.p);
    if (size > 0 && memcmp(a.p, b.p, size) != 0)
        fail_msg("mismatch: typesize %zu size %zu level %d", ts, size, b2s_simd_level());
    buf_free(in);
    buf_free(a);
    buf_free(b);
}

static void check_round_trip(kernel_fn fwd, kernel_fn inv, size_t ts, size_t size)
{
    struct buf in = buf_random(size);
    struct buf mid = buf_new(size);
    struct buf out = buf_new(size);
    fwd(ts, size, in.p, mid.p);
    inv(ts, size, mid.p, out.p);
    if (size > 0 && memcmp(in.p, out.p, size) != 0)
        fail_msg("round trip: typesize %zu size %zu level %d", ts, size, b2s_simd_level());
    buf_free(in);
    buf_free(mid);
    buf_free(out);
}

/* ------------------------------------------------------------------------ */
/* Exact layouts, worked by hand                                             */

static void test_shuffle_ts4_tail(void **state)
{
    (void)state;
    uint8_t in[14], out[14];
    for (uint8_t i = 0; i < 14; i++)
        in[i] = i;
    /* 3 items of 4 bytes, then 2 tail bytes copied as they are. */
    const uint8_t want[14] = { 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 13 };
    b2s_shuffle_scalar(4, sizeof in, in, out);
    assert_memory_equal(out, want, sizeof want);
    b2s_shuffle(4, sizeof in, in, out);
    assert_memory_equal(out, want, sizeof want);
    b2s_unshuffle_scalar(4, sizeof out, want, out);
    assert_memory_equal(out, in, sizeof in);
}

static void test_shuffle_ts1_and_single_item(void **state)
{
    (void)state;
    const uint8_t in[5] = { 1, 2, 3, 4, 5 };
    uint8_t out[5];
    b2s_shuffle_scalar(1, 5, in, out);
    assert_memory_equal(out, in, 5);
    b2s_shuffle_scalar(3, 5, in, out); /* one item + 2 tail bytes */
    assert_memory_equal(out, in, 5);
    b2s_shuffle_scalar(8, 5, in, out); /* no complete item */
    assert_memory_equal(out, in, 5);
}

static void test_bitshuffle_ts1_pattern(void **state)
{
    (void)state;
    /* Item 0 has every bit, item 7 bit 0 only; items 8, 9 are the tail. */
    const uint8_t in[10] = { 0xff, 0, 0, 0, 0, 0, 0, 0x01, 0x5a, 0xa5 };
    /* Row b, bit k = bit b of item k: row 0 = items 0 and 7, others item 0. */
    const uint8_t want[10] = { 0x81, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x5a, 0xa5 };
    uint8_t out[10], back[10];
    b2s_bitshuffle_scalar(1, sizeof in, in, out);
    assert_memory_equal(out, want, sizeof want);
    b2s_bitshuffle(1, sizeof in, in, out);
    assert_memory_equal(out, want, sizeof want);
    b2s_bitunshuffle_scalar(1, sizeof out, want, back);
    assert_memory_equal(back, in, sizeof in);
}

static void test_bitshuffle_ts2_rows(void **state)
{
    (void)state;
    /* 9 items of 2 bytes + 1 tail byte: 8 items are transposed, item 8 and
     * the tail byte are copied.  Item i = (low i, high 0x80 for item 3). */
    uint8_t in[19];
    for (uint8_t i = 0; i < 8; i++) {
        in[2 * i] = i;
        in[2 * i + 1] = i == 3 ? 0x80 : 0;
    }
    in[16] = 0xab;
    in[17] = 0xcd;
    in[18] = 0xef;
    /* Rows 0..7: bits of the low bytes (bit k = item k); rows 8..15: high
     * bytes, only row 15 (bit 7) with item 3. */
    const uint8_t want[19] = {
        0xaa, 0xcc, 0xf0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0x08,
        0xab, 0xcd, 0xef,
    };
    uint8_t out[19], back[19];
    b2s_bitshuffle_scalar(2, sizeof in, in, out);
    assert_memory_equal(out, want, sizeof want);
    b2s_bitunshuffle_scalar(2, sizeof out, want, back);
    assert_memory_equal(back, in, sizeof in);
}

static void test_bitshuffle_ts1_two_bytes_per_row(void **state)
{
    (void)state;
    /* 16 items: each row has 2 bytes; item 9 (byte 1, bit 1) = 0x04. */
    uint8_t in[16] = { 0 }, out[16];
    in[9] = 0x04;
    uint8_t want[16] = { 0 };
    want[2 * 2 + 1] = 0x02; /* row 2, byte 1, bit 1 */
    b2s_bitshuffle_scalar(1, sizeof in, in, out);
    assert_memory_equal(out, want, sizeof want);
}

/* ------------------------------------------------------------------------ */
/* Scalar reference against the naive spec formulas                          */

static void test_scalar_matches_spec(void **state)
{
    (void)state;
    for (size_t t = 0; t < N_TYPESIZES; t++)
        for (size_t c = 0; c < N_CASES; c++) {
            size_t ts = typesizes[t], size = case_size(ts, c);
            check_same(b2s_shuffle_scalar, naive_shuffle, ts, size);
            check_same(b2s_bitshuffle_scalar, naive_bitshuffle, ts, size);
            check_round_trip(b2s_shuffle_scalar, b2s_unshuffle_scalar, ts, size);
            check_round_trip(b2s_bitshuffle_scalar, b2s_bitunshuffle_scalar, ts, size);
        }
}

/* Beyond the one-byte typesize of Blosc2 headers, the API still works (the
 * bit shuffle then bypasses its scratch tiles). */
static void test_huge_typesize(void **state)
{
    (void)state;
    const size_t ts = 1500;
    const size_t sizes[] = { 0, 1499, 1500 * 9 + 3, 1500 * 17 + 1499 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        check_same(b2s_shuffle_scalar, naive_shuffle, ts, sizes[s]);
        check_same(b2s_bitshuffle_scalar, naive_bitshuffle, ts, sizes[s]);
        check_same(b2s_shuffle, naive_shuffle, ts, sizes[s]);
        check_same(b2s_bitshuffle, naive_bitshuffle, ts, sizes[s]);
        check_round_trip(b2s_shuffle, b2s_unshuffle, ts, sizes[s]);
        check_round_trip(b2s_bitshuffle, b2s_bitunshuffle, ts, sizes[s]);
    }
}

/* ------------------------------------------------------------------------ */
/* Every SIMD level against the scalar reference                             */

static int restore_level(void **state)
{
    (void)state;
    b2s_simd_force(99);
    return 0;
}

static void check_level(int level)
{
    if (b2s_simd_force(99) < level)
        skip();
    assert_int_equal(b2s_simd_force(level), level);
    assert_int_equal(b2s_simd_level(), level);
    for (size_t t = 0; t < N_TYPESIZES; t++)
        for (size_t c = 0; c < N_CASES; c++) {
            size_t ts = typesizes[t], size = case_size(ts, c);
            check_same(b2s_shuffle, b2s_shuffle_scalar, ts, size);
            check_same(b2s_unshuffle, b2s_unshuffle_scalar, ts, size);
            check_same(b2s_bitshuffle, b2s_bitshuffle_scalar, ts, size);
            check_same(b2s_bitunshuffle, b2s_bitunshuffle_scalar, ts, size);
            check_round_trip(b2s_shuffle, b2s_unshuffle, ts, size);
            check_round_trip(b2s_bitshuffle, b2s_bitunshuffle, ts, size);
        }
}

static void test_level_scalar(void **state)
{
    (void)state;
    check_level(0);
}

static void test_level_sse2(void **state)
{
    (void)state;
    check_level(1);
}

static void test_level_avx2(void **state)
{
    (void)state;
    check_level(2);
}

/* Item counts around the one-pass kernels' steps (256 items) and stage
 * tiles (4 KiB of items), at every level, for the small typesizes those
 * kernels take and their neighbours. */
static void test_bitshuffle_tile_edges(void **state)
{
    (void)state;
    static const size_t counts[] = { 248, 255, 256, 264, 2040, 2047, 2048, 2056,
                                     2303, 4096 + 256, 3 * 2048 + 255, 16384 + 7 };
    static const size_t sizes[] = { 1, 2, 3, 4, 8 };
    for (int level = b2s_simd_force(99); level >= 0; level--) {
        b2s_simd_force(level);
        for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++)
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                size_t ts = sizes[t], size = counts[c] * ts + c % ts;
                check_same(b2s_bitshuffle, b2s_bitshuffle_scalar, ts, size);
                check_round_trip(b2s_bitshuffle, b2s_bitunshuffle, ts, size);
            }
    }
}

/* Item counts around where the byte shuffles stop asking for the items a
 * page ahead (one group of 32 items before the end of the last 4096 bytes),
 * and the typesize-16 stage tiles (256 items), at every level. */
static void test_shuffle_prefetch_edges(void **state)
{
    (void)state;
    static const size_t sizes[] = { 2, 4, 8, 16 };
    static const long deltas[] = { -33, -32, -31, -1, 0, 1, 31, 32, 33, 256, 257 };
    for (int level = b2s_simd_force(99); level >= 0; level--) {
        b2s_simd_force(level);
        for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++)
            for (size_t d = 0; d < sizeof deltas / sizeof deltas[0]; d++) {
                size_t ts = sizes[t];
                size_t n = (size_t)((long)(4096 / ts + 32 + 256) + deltas[d]);
                for (size_t tail = 0; tail < ts; tail += ts - 1) {
                    size_t size = n * ts + tail;
                    check_same(b2s_shuffle, b2s_shuffle_scalar, ts, size);
                    check_same(b2s_unshuffle, b2s_unshuffle_scalar, ts, size);
                    check_round_trip(b2s_shuffle, b2s_unshuffle, ts, size);
                }
            }
    }
}

/* Skipped where the CPU (or the compiler) has no GFNI. */
static void test_level_gfni(void **state)
{
    (void)state;
    check_level(3);
}

static void test_force_clamps(void **state)
{
    (void)state;
    int best = b2s_simd_force(99);
    assert_in_range(best, 0, 3);
    assert_int_equal(b2s_simd_level(), best);
    assert_int_equal(b2s_simd_force(-5), 0);
    assert_int_equal(b2s_simd_level(), 0);
    assert_int_equal(b2s_simd_force(best), best);
}

/* ------------------------------------------------------------------------ */
/* Blocks of chunks written by c-blosc2 (spec 1.6, 1.7, 10)                  */

struct vector_case {
    const char *name;
    const char *formula;
    uint32_t seed;
};

static const struct vector_case vector_cases[] = {
    { "ts4_shuffle_lz4", "ctr32", 7 },
    { "ts4_bitshuffle_lz4", "ctr32", 7 },
    { "ts1_shuffle_lz4", "ctr8", 5 },
    { "ts1_bitshuffle_lz4", "ctr8", 5 },
    { "ts2_shuffle_lz4", "ctr16", 6 },
    { "ts2_bitshuffle_lz4", "ctr16", 6 },
    { "ts8_shuffle_lz4", "ctr64", 8 },
    { "ts8_bitshuffle_lz4", "ctr64", 8 },
    { "ts16_shuffle_lz4", "ctr64", 9 },
    { "ts16_bitshuffle_lz4", "ctr64", 9 },
    { "split_always_lz4_ts32", "ctr64", 15 },
    { "tail_bitshuffle_ts4_1002bytes", "u32mul", 3 },
    { "tail_bitshuffle_ts8_blocks2048", "ctr64", 9 },
    { "filter_shuffle_zstd_ts4", "f32ramp", 12 },
    { "filter_bitshuffle_lz4_ts4", "f32ramp", 12 },
    { "blocks8192_lz4_shuffle_ts4", "f32ramp", 18 },
    { "blocks8192_lz4_bitshuffle_ts4", "f32ramp", 18 },
};

static void put_le(uint8_t *p, uint64_t v, size_t width)
{
    for (size_t i = 0; i < width; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void gen_ctr(uint8_t *out, size_t nbytes, size_t width, uint64_t seed)
{
    for (size_t w = 0; w * width < nbytes; w++)
        put_le(out + w * width, seed + w, width); /* truncation = mod 2^(8w) */
}

static void gen_u32mul(uint8_t *out, size_t nbytes, uint32_t seed)
{
    for (size_t w = 0; w * 4 < nbytes; w++)
        put_le(out + w * 4, ((uint32_t)w * 2654435761u) ^ seed, 4);
}

static void gen_f32ramp(uint8_t *out, size_t nbytes, uint32_t seed)
{
    uint32_t x = seed;
    for (size_t w = 0; w * 4 < nbytes; w++) {
        x = x * 1103515245u + 12345u;
        uint32_t r = (x >> 16) & 0x7fff;
        double a = (double)w * 0.01;
        double b = (double)r * (0.001 / 32768.0);
        float f = (float)(a + b);
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        put_le(out + w * 4, bits, 4);
    }
}

/* The expected data; sizes are multiples of the word width in every case. */
static uint8_t *gen_data(const struct vector_case *vc, size_t nbytes)
{
    uint8_t *out = calloc(nbytes + 8, 1);
    assert_non_null(out);
    if (strcmp(vc->formula, "ctr8") == 0)
        gen_ctr(out, nbytes, 1, vc->seed);
    else if (strcmp(vc->formula, "ctr16") == 0)
        gen_ctr(out, nbytes, 2, vc->seed);
    else if (strcmp(vc->formula, "ctr32") == 0)
        gen_ctr(out, nbytes, 4, vc->seed);
    else if (strcmp(vc->formula, "ctr64") == 0)
        gen_ctr(out, nbytes, 8, vc->seed);
    else if (strcmp(vc->formula, "u32mul") == 0)
        gen_u32mul(out, nbytes, vc->seed);
    else if (strcmp(vc->formula, "f32ramp") == 0)
        gen_f32ramp(out, nbytes, vc->seed);
    else
        fail_msg("unknown formula %s", vc->formula);
    return out;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
           | (uint32_t)p[3] << 24;
}

struct chunk_view {
    const uint8_t *data;
    size_t len;
    unsigned compformat, typesize, filter;
    int split;
    size_t nbytes, blocksize, nblocks;
};

static void parse_chunk(struct chunk_view *cv, const uint8_t *data, size_t len)
{
    assert_true(len >= 32);
    cv->data = data;
    cv->len = len;
    cv->compformat = data[2] >> 5;
    cv->split = (data[2] & 0x10) == 0;
    cv->typesize = data[3];
    cv->nbytes = rd32(data + 4);
    cv->blocksize = rd32(data + 8);
    for (int s = 0; s < 5; s++)
        assert_int_equal(data[16 + s], 0); /* only slot 5 is used here */
    cv->filter = data[21];
    assert_true(cv->filter == 1 || cv->filter == 2);
    cv->nblocks = (cv->nbytes + cv->blocksize - 1) / cv->blocksize;
}

static void decode_stream(const struct chunk_view *cv, size_t *pos, uint8_t *out,
                          size_t neblock)
{
    assert_true(*pos + 4 <= cv->len);
    int32_t csize = (int32_t)rd32(cv->data + *pos);
    *pos += 4;
    if (csize <= 0) { /* zero run, or a run of one byte value */
        memset(out, csize == 0 ? 0 : (-csize) & 0xff, neblock);
        *pos += csize == 0 ? 0 : 1;
        return;
    }
    const uint8_t *in = cv->data + *pos;
    assert_true(*pos + (size_t)csize <= cv->len);
    *pos += (size_t)csize;
    if ((size_t)csize == neblock) {
        memcpy(out, in, neblock);
    } else if (cv->compformat == 1) {
        int got = LZ4_decompress_safe((const char *)in, (char *)out, csize, (int)neblock);
        assert_int_equal(got, (int)neblock);
    } else {
        assert_int_equal(cv->compformat, 4);
        size_t got = ZSTD_decompress(out, neblock, in, (size_t)csize);
        assert_int_equal(got, neblock);
    }
}

/* Concatenated decoded streams of block b = the filtered block. */
static size_t decode_block(const struct chunk_view *cv, size_t b, uint8_t *out)
{
    size_t bsize = cv->blocksize;
    int leftover = b + 1 == cv->nblocks && cv->nbytes % cv->blocksize != 0;
    if (leftover)
        bsize = cv->nbytes % cv->blocksize;
    size_t nstreams = leftover || !cv->split ? 1 : cv->typesize;
    size_t neblock = bsize / nstreams;
    size_t pos = rd32(cv->data + 32 + 4 * b);
    for (size_t s = 0; s < nstreams; s++)
        decode_stream(cv, &pos, out + s * neblock, neblock);
    return bsize;
}

static void check_vector_block(const struct chunk_view *cv, const uint8_t *filtered,
                               const uint8_t *plain, size_t bsize)
{
    uint8_t *tmp = malloc(bsize + 1);
    assert_non_null(tmp);
    kernel_fn fwd = cv->filter == 1 ? b2s_shuffle : b2s_bitshuffle;
    kernel_fn inv = cv->filter == 1 ? b2s_unshuffle : b2s_bitunshuffle;
    inv(cv->typesize, bsize, filtered, tmp);
    assert_memory_equal(tmp, plain, bsize);
    fwd(cv->typesize, bsize, plain, tmp);
    assert_memory_equal(tmp, filtered, bsize);
    free(tmp);
}

static void check_vector(const struct vector_case *vc, const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/chunks/%s.chunk", dir, vc->name);
    size_t len = 0;
    uint8_t *file = ts_read_file(path, &len);
    struct chunk_view cv;
    parse_chunk(&cv, file, len);
    uint8_t *plain = gen_data(vc, cv.nbytes);
    uint8_t *filtered = malloc(cv.blocksize);
    assert_non_null(filtered);
    for (size_t b = 0; b < cv.nblocks; b++) {
        size_t bsize = decode_block(&cv, b, filtered);
        for (int level = b2s_simd_force(99); level >= 0; level--) {
            b2s_simd_force(level);
            check_vector_block(&cv, filtered, plain + b * cv.blocksize, bsize);
        }
    }
    b2s_simd_force(99);
    free(filtered);
    free(plain);
    free(file);
}

static void test_reference_vectors(void **state)
{
    (void)state;
    const char *dir = getenv("B2S_VECTORS");
    if (dir == NULL || *dir == '\0')
        skip();
    for (size_t i = 0; i < sizeof vector_cases / sizeof vector_cases[0]; i++)
        check_vector(&vector_cases[i], dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shuffle_ts4_tail),
        cmocka_unit_test(test_shuffle_ts1_and_single_item),
        cmocka_unit_test(test_bitshuffle_ts1_pattern),
        cmocka_unit_test(test_bitshuffle_ts2_rows),
        cmocka_unit_test(test_bitshuffle_ts1_two_bytes_per_row),
        cmocka_unit_test(test_scalar_matches_spec),
        cmocka_unit_test(test_huge_typesize),
        cmocka_unit_test_teardown(test_level_scalar, restore_level),
        cmocka_unit_test_teardown(test_level_sse2, restore_level),
        cmocka_unit_test_teardown(test_level_avx2, restore_level),
        cmocka_unit_test_teardown(test_level_gfni, restore_level),
        cmocka_unit_test_teardown(test_bitshuffle_tile_edges, restore_level),
        cmocka_unit_test_teardown(test_shuffle_prefetch_edges, restore_level),
        cmocka_unit_test_teardown(test_force_clamps, restore_level),
        cmocka_unit_test_teardown(test_reference_vectors, restore_level),
    };
    return ts_run_tests(tests, NULL, NULL);
}

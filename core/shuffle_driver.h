/* The byte-shuffle driver shared by the SIMD kernels, written once and
 * included by each kernel file (it is compiled with that file's -m flags).
 * Before including it, a kernel defines:
 *   SHUF_ITEMS       items per vector group (16 for SSE2, 32 for AVX2);
 *   SHUF_ALIGN       alignment of the staging buffer;
 *   SHUF_NAME(x)     the public name of entry point x (b2s_x_sse2, ...);
 *   shuffle_group(ts, src, dst, stride), unshuffle_group(ts, src, stride,
 *   dst) and copy64(dst, src), the kernel's own vector steps.
 * It defines the kernel's b2s_shuffle_* and b2s_unshuffle_* entry points. */
#ifndef SHUF_ITEMS
#error "define SHUF_ITEMS, SHUF_ALIGN and SHUF_NAME before including this"
#endif

/* The items side of a block is the one rarely in cache (the chunk being
 * compressed, the caller's buffer being decompressed into), and the hardware
 * prefetchers stop at each 4 KiB page, so each group asks for the items one
 * page ahead of it: for reading in shuffle, for writing in unshuffle (a line
 * written in full is still read first).  The rows are in the filter's
 * scratch, in cache.  Loops run in two parts, so that the requests never go
 * past the end of the items and cost no test per group. */
enum { PREFETCH_AHEAD = 4096 };

ALWAYS_INLINE void prefetch_read(const uint8_t *p, size_t bytes) {
  for (size_t c = 0; c < bytes; c += 64)
    __builtin_prefetch(p + PREFETCH_AHEAD + c, 0, 3);
}

ALWAYS_INLINE void prefetch_write(uint8_t *p, size_t bytes) {
  for (size_t c = 0; c < bytes; c += 64)
    __builtin_prefetch(p + PREFETCH_AHEAD + c, 1, 3);
}

/* With 16 rows a power-of-two row stride (the usual block sizes) puts every
 * row in the same L1 sets, and rows accessed a vector at a time are evicted
 * before their cache lines are complete.  Going through a 4 KiB stage makes
 * each row access a run of whole lines (256 items was fastest measured). */
enum { STAGE_ITEMS = 256 };

static size_t shuffle16_staged(size_t n, const uint8_t *src, uint8_t *dst) {
  _Alignas(SHUF_ALIGN) uint8_t stage[16 * STAGE_ITEMS];
  size_t i = 0;
  for (; i + STAGE_ITEMS <= n; i += STAGE_ITEMS) {
    int ahead = i + STAGE_ITEMS + PREFETCH_AHEAD / 16 <= n;
    for (size_t g = 0; g < STAGE_ITEMS; g += SHUF_ITEMS) {
      if (ahead)
        prefetch_read(src + (i + g) * 16, SHUF_ITEMS * 16);
      shuffle_group(16, src + (i + g) * 16, stage + g, STAGE_ITEMS);
    }
    for (size_t j = 0; j < 16; j++)
      for (size_t c = 0; c < STAGE_ITEMS; c += 64)
        copy64(dst + j * n + i + c, stage + j * STAGE_ITEMS + c);
  }
  return i;
}

static size_t unshuffle16_staged(size_t n, const uint8_t *src, uint8_t *dst) {
  _Alignas(SHUF_ALIGN) uint8_t stage[16 * STAGE_ITEMS];
  size_t i = 0;
  for (; i + STAGE_ITEMS <= n; i += STAGE_ITEMS) {
    for (size_t j = 0; j < 16; j++)
      for (size_t c = 0; c < STAGE_ITEMS; c += 64)
        copy64(stage + j * STAGE_ITEMS + c, src + j * n + i + c);
    int ahead = i + STAGE_ITEMS + PREFETCH_AHEAD / 16 <= n;
    for (size_t g = 0; g < STAGE_ITEMS; g += SHUF_ITEMS) {
      if (ahead)
        prefetch_write(dst + (i + g) * 16, SHUF_ITEMS * 16);
      unshuffle_group(16, stage + g, STAGE_ITEMS, dst + (i + g) * 16);
    }
  }
  return i;
}

/* Returns the number of items done (a multiple of SHUF_ITEMS). */
ALWAYS_INLINE size_t shuffle_pow2(size_t ts, size_t n, const uint8_t *src,
                                  uint8_t *dst) {
  size_t i = ts == 16 ? shuffle16_staged(n, src, dst) : 0;
  for (; i + SHUF_ITEMS + PREFETCH_AHEAD / ts <= n; i += SHUF_ITEMS) {
    prefetch_read(src + i * ts, SHUF_ITEMS * ts);
    shuffle_group(ts, src + i * ts, dst + i, n);
  }
  for (; i + SHUF_ITEMS <= n; i += SHUF_ITEMS)
    shuffle_group(ts, src + i * ts, dst + i, n);
  return i;
}

ALWAYS_INLINE size_t unshuffle_pow2(size_t ts, size_t n, const uint8_t *src,
                                    uint8_t *dst) {
  size_t i = ts == 16 ? unshuffle16_staged(n, src, dst) : 0;
  for (; i + SHUF_ITEMS + PREFETCH_AHEAD / ts <= n; i += SHUF_ITEMS) {
    prefetch_write(dst + i * ts, SHUF_ITEMS * ts);
    unshuffle_group(ts, src + i, n, dst + i * ts);
  }
  for (; i + SHUF_ITEMS <= n; i += SHUF_ITEMS)
    unshuffle_group(ts, src + i, n, dst + i * ts);
  return i;
}

/* The constant typesizes let each case keep its vectors in registers. */
static size_t shuffle_vec(size_t ts, size_t n, const uint8_t *src,
                          uint8_t *dst) {
  switch (ts) {
  case 2: return shuffle_pow2(2, n, src, dst);
  case 4: return shuffle_pow2(4, n, src, dst);
  case 8: return shuffle_pow2(8, n, src, dst);
  case 16: return shuffle_pow2(16, n, src, dst);
  default: return 0;
  }
}

static size_t unshuffle_vec(size_t ts, size_t n, const uint8_t *src,
                            uint8_t *dst) {
  switch (ts) {
  case 2: return unshuffle_pow2(2, n, src, dst);
  case 4: return unshuffle_pow2(4, n, src, dst);
  case 8: return unshuffle_pow2(8, n, src, dst);
  case 16: return unshuffle_pow2(16, n, src, dst);
  default: return 0;
  }
}

static void copy_tail(size_t ts, size_t size, const uint8_t *src,
                      uint8_t *dst) {
  size_t done = size - size % ts;
  if (done < size)
    memcpy(dst + done, src + done, size - done);
}

void SHUF_NAME(shuffle)(size_t ts, size_t size, const uint8_t *src,
                        uint8_t *dst) {
  if (ts <= 1 || size / ts < SHUF_ITEMS) {
    b2s_shuffle_scalar(ts, size, src, dst);
    return;
  }
  size_t n = size / ts;
  size_t done = shuffle_vec(ts, n, src, dst);
  b2s_shuffle_items_scalar(ts, n, done, src, dst);
  copy_tail(ts, size, src, dst);
}

void SHUF_NAME(unshuffle)(size_t ts, size_t size, const uint8_t *src,
                          uint8_t *dst) {
  if (ts <= 1 || size / ts < SHUF_ITEMS) {
    b2s_unshuffle_scalar(ts, size, src, dst);
    return;
  }
  size_t n = size / ts;
  size_t done = unshuffle_vec(ts, n, src, dst);
  b2s_unshuffle_items_scalar(ts, n, done, src, dst);
  copy_tail(ts, size, src, dst);
}

/* The byte-interleave rounds shared by the SIMD kernels, written once and
 * included by each kernel file (compiled with that file's -m flags).
 * Before including it, a kernel defines SHUF_VEC (its vector type) and
 * SHUF_UNPACKLO / SHUF_UNPACKHI (its byte unpack intrinsics), and
 * ALWAYS_INLINE. */
#ifndef SHUF_VEC
#error "define SHUF_VEC, SHUF_UNPACKLO and SHUF_UNPACKHI before including this"
#endif

/* Output vector 2m+h holds half h of inputs m and m + count/2, interleaved. */
ALWAYS_INLINE void interleave_round(SHUF_VEC *v, size_t count) {
  SHUF_VEC t[16];
  size_t h = count / 2;
#pragma GCC unroll 16
  for (size_t m = 0; m < h; m++) {
    t[2 * m] = SHUF_UNPACKLO(v[m], v[m + h]);
    t[2 * m + 1] = SHUF_UNPACKHI(v[m], v[m + h]);
  }
#pragma GCC unroll 16
  for (size_t i = 0; i < count; i++)
    v[i] = t[i];
}

ALWAYS_INLINE void interleave_rounds(SHUF_VEC *v, size_t count,
                                     unsigned rounds) {
#pragma GCC unroll 4
  for (unsigned r = 0; r < rounds; r++)
    interleave_round(v, count);
}

static inline unsigned log2_pow2(size_t ts) {
  return ts == 2 ? 1 : ts == 4 ? 2 : ts == 8 ? 3 : 4;
}

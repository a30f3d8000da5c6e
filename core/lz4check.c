/* Whether an LZ4 block decodes to exactly n bytes, found by walking its
 * sequences without writing them out (see b2s_h5lz4.h).
 *
 * Checking a detector's stream by decoding it writes every pixel
 * (bitshuffled) once more: for the sparse images of photon-counting
 * detectors that was half the daemon's CPU, while the walk costs one step
 * per sequence.  The walk accepts only what every LZ4 decoder we know
 * (liblz4 1.9 and 1.10, the one inside c-blosc2) accepts and decodes to n
 * bytes: LZ4_decompress_safe's rules, taken at their strictest where
 * versions differ (length bytes ending within the limits of both, offset
 * 0 refused).  It may refuse a block a decoder would take; callers then
 * decode it to decide. */
#include "b2s_h5lz4.h"

#define MINMATCH 4
#define LASTLITERALS 5    /* the last 5 bytes of a block are literals */
#define MFLIMIT 12        /* the last match starts 12 bytes before the end */

/* A length's extension bytes: 255 + 255 + ... + last.  Each byte read
 * must leave p at or below lim; false otherwise. */
static bool ext_len(const uint8_t **p, const uint8_t *lim, uint64_t *len) {
  uint8_t b;
  do {
    if (*p >= lim)
      return false;
    b = *(*p)++;
    *len += b;
  } while (b == 255 && *len < ((uint64_t)1 << 32));
  return *p <= lim && b != 255;
}

bool b2s_lz4_block_ok(const void *src, size_t csize, size_t n) {
  if (!src || csize == 0 || n == 0 || n > INT32_MAX || csize > INT32_MAX)
    return false;
  const uint8_t *ip = src, *iend = ip + csize;
  int64_t op = 0, oend = (int64_t)n;
  for (;;) {
    if (ip >= iend)
      return false;
    unsigned token = *ip++;
    uint64_t lit = token >> 4;
    /* literal length bytes end below iend - 15 (liblz4's limit for them) */
    if (lit == 15 && (iend - ip <= 15 || !ext_len(&ip, iend - 15, &lit)))
      return false;
    if (lit > (uint64_t)(iend - ip))
      return false;
    /* Past these limits a decoder takes the sequence as the last one: its
     * literals must end the input and the output, exactly. */
    if (op + (int64_t)lit > oend - MFLIMIT ||
        (int64_t)lit > (iend - ip) - (2 + 1 + LASTLITERALS))
      return ip + lit == iend && op + (int64_t)lit == oend;
    ip += lit;
    op += (int64_t)lit;
    unsigned offset = (unsigned)ip[0] | (unsigned)ip[1] << 8;
    ip += 2;
    if (offset == 0 || offset > op)
      return false;
    uint64_t ml = token & 15;
    if (ml == 15 && !ext_len(&ip, iend - LASTLITERALS, &ml))
      return false;
    ml += MINMATCH;
    if (ml > (uint64_t)(oend - LASTLITERALS - op))
      return false;          /* the last 5 bytes must be literals */
    op += (int64_t)ml;
  }
}

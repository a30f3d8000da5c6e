/* The HDF5 bitshuffle+LZ4 framing (bslz4.h).  Blocks hold block_items
 * items (a multiple of 8); the last one holds the rest rounded down to a
 * multiple of 8.  The bit transposition of a block of a multiple of 8
 * items is the one Blosc2's bitshuffle filter applies to each of its
 * blocks (b2s_bitshuffle). */
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_shuffle.h"
#include "cli_bslz4.h"

enum { BSHUF_TARGET_BLOCK = 8192, BSHUF_MIN_BLOCK = 128, BSHUF_MULT = 8 };

/* bitshuffle's default block (items) for an item size: fixed by its
 * format, since the block size is also written in every chunk. */
static int32_t default_block(int32_t typesize) {
  int32_t b = BSHUF_TARGET_BLOCK / typesize / BSHUF_MULT * BSHUF_MULT;
  return b > BSHUF_MIN_BLOCK ? b : BSHUF_MIN_BLOCK;
}

void cli_bslz4_put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int cli_bslz4_frame_header(b2s_mpbuf *out, uint64_t nbytes, uint32_t block_bytes) {
  uint8_t h[12];
  for (int k = 0; k < 8; k++)
    h[k] = (uint8_t)(nbytes >> (56 - 8 * k));
  cli_bslz4_put_be32(h + 8, block_bytes);
  return b2s_mp_write_raw(out, h, sizeof h);
}

int cli_bslz4_encode(const uint8_t *src, size_t nbytes, int32_t typesize,
                     int32_t block_items, b2s_mpbuf *out) {
  if (block_items <= 0)
    block_items = default_block(typesize);
  size_t bbytes = (size_t)block_items * (size_t)typesize;
  size_t items = nbytes / (size_t)typesize;
  uint8_t *shuf = malloc(bbytes);
  int bound = LZ4_compressBound((int)bbytes);
  int rc = shuf ? cli_bslz4_frame_header(out, nbytes, (uint32_t)bbytes) : B2S_E_NOMEM;
  size_t done = 0;
  while (rc >= 0 && items - done >= BSHUF_MULT) {
    size_t k = items - done >= (size_t)block_items
                   ? (size_t)block_items
                   : (items - done) / BSHUF_MULT * BSHUF_MULT;
    size_t kb = k * (size_t)typesize;
    b2s_bitshuffle((size_t)typesize, kb, src + done * (size_t)typesize, shuf);
    rc = b2s_mpbuf_reserve(out, 4 + (size_t)bound);
    if (rc < 0)
      break;
    int c = LZ4_compress_default((const char *)shuf,
                                 (char *)out->data + out->len + 4, (int)kb, bound);
    if (c <= 0) {
      rc = B2S_E_COMPRESS;
      break;
    }
    cli_bslz4_put_be32(out->data + out->len, (uint32_t)c);
    out->len += 4 + (size_t)c;
    done += k;
  }
  if (rc >= 0)
    rc = b2s_mp_write_raw(out, src + done * (size_t)typesize,
                          nbytes - done * (size_t)typesize);
  free(shuf);
  return rc < 0 ? rc : 0;
}

int64_t cli_bslz4_decode(const uint8_t *src, size_t len, int32_t typesize,
                         uint8_t *dst, size_t cap) {
  if (len < 12 || typesize <= 0)
    return B2S_E_TRUNCATED;
  uint64_t nbytes = 0;
  for (int k = 0; k < 8; k++)
    nbytes = nbytes << 8 | src[k];
  uint32_t bbytes = get_be32(src + 8);
  if (nbytes > cap || nbytes % (uint64_t)typesize || bbytes == 0 ||
      bbytes % ((uint32_t)typesize * BSHUF_MULT))
    return B2S_E_FRAME;
  if (typesize > 4096)
    return B2S_E_TYPESIZE;
  /* no block decodes to more than the whole chunk */
  uint8_t *tmp = malloc(bbytes < nbytes ? bbytes : (size_t)nbytes + 1);
  if (tmp == NULL)
    return B2S_E_NOMEM;
  size_t items = nbytes / (size_t)typesize, done = 0, pos = 12;
  size_t block_items = bbytes / (size_t)typesize;
  int64_t rc = 0;
  while (items - done >= BSHUF_MULT) {
    size_t k = items - done >= block_items ? block_items
                                           : (items - done) / BSHUF_MULT * BSHUF_MULT;
    size_t kb = k * (size_t)typesize;
    if (len - pos < 4 || get_be32(src + pos) > len - pos - 4) {
      rc = B2S_E_TRUNCATED;
      break;
    }
    int c = (int)get_be32(src + pos);
    if (LZ4_decompress_safe((const char *)src + pos + 4, (char *)tmp, c,
                            (int)kb) != (int)kb) {
      rc = B2S_E_DECODE;
      break;
    }
    b2s_bitunshuffle((size_t)typesize, kb, tmp, dst + done * (size_t)typesize);
    pos += 4 + (size_t)c;
    done += k;
  }
  size_t rest = nbytes - done * (size_t)typesize;
  if (rc == 0 && len - pos != rest)
    rc = B2S_E_FRAME;
  if (rc == 0)
    memcpy(dst + done * (size_t)typesize, src + pos, rest);
  free(tmp);
  return rc < 0 ? rc : (int64_t)nbytes;
}


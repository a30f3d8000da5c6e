/* Chunk header parsing and validation (spec 1.1-1.4, 1.10, 1.15).  Everything
 * that can be rejected from the header alone is rejected here, so the decoder
 * works from trusted geometry. */
#include "chunk_internal.h"

static void read_pipeline(const uint8_t *p, b2s_chunk_info *ci) {
  if (ci->header_len == B2S_HEADER_LEN) {
    memcpy(ci->filters, p + B2S_OFF_FILTERS, B2S_MAX_FILTERS);
    memcpy(ci->filters_meta, p + B2S_OFF_FILTERS_META, B2S_MAX_FILTERS);
    if (ci->version == 3) {        /* "alpha" chunks: slot 5 is not a filter */
      ci->filters[5] = 0;
      ci->filters_meta[5] = 0;
    }
    return;
  }
  /* Blosc1: the pipeline comes from the flag bits. */
  memset(ci->filters, 0, sizeof(ci->filters));
  memset(ci->filters_meta, 0, sizeof(ci->filters_meta));
  if ((ci->flags & B2S_FLAG_SHUFFLE) && ci->typesize > 1)
    ci->filters[5] = B2S_FILTER_SHUFFLE;
  if (ci->flags & B2S_FLAG_BITSHUFFLE)
    ci->filters[5] = B2S_FILTER_BITSHUFFLE;
  if (ci->flags & B2S_FLAG_DELTA)
    ci->filters[4] = B2S_FILTER_DELTA;
}

static int check_special(const b2s_chunk_info *ci) {
  if (ci->special > B2S_SPECIAL_UNINIT || ci->vl_blocks)
    return B2S_E_SPECIAL;
  switch (ci->special) {
  case B2S_SPECIAL_NAN:
    if (ci->typesize != 4 && ci->typesize != 8)
      return B2S_E_SPECIAL;
    /* fall through */
  case B2S_SPECIAL_UNINIT:
    return ci->nbytes % ci->typesize ? B2S_E_SPECIAL : 0;
  case B2S_SPECIAL_VALUE: {
    int32_t vsize = ci->cbytes - ci->header_len;
    return vsize <= 0 || ci->nbytes % vsize ? B2S_E_SPECIAL : 0;
  }
  default:
    return 0;
  }
}

static int check_geometry(b2s_chunk_info *ci) {
  if (ci->vl_blocks) {
    /* VL chunks store the number of blocks in the blocksize field. */
    if (ci->blocksize <= 0 || ci->memcpyed)
      return ci->memcpyed ? B2S_E_VERSION : B2S_E_BLOCKSIZE;
    ci->nblocks = ci->blocksize;
    return 0;
  }
  if (ci->blocksize <= 0 || ci->blocksize > B2S_MAX_BLOCKSIZE)
    return B2S_E_BLOCKSIZE;
  if (ci->nbytes > 0 && ci->blocksize > ci->nbytes)
    ci->blocksize = ci->nbytes;    /* c-blosc2 clamps on read */
  ci->nblocks = ci->nbytes / ci->blocksize + (ci->nbytes % ci->blocksize != 0);
  if (ci->memcpyed && ci->cbytes != ci->nbytes + ci->header_len)
    return B2S_E_CBYTES;
  return 0;
}

int b2s_chunk_info_get(const void *src, size_t srcsize, b2s_chunk_info *ci) {
  const uint8_t *p = src;
  if (!p || !ci)
    return B2S_E_ARG;
  memset(ci, 0, sizeof(*ci));
  if (srcsize < B2S_HEADER1_LEN)
    return B2S_E_SHORT;
  ci->version = p[B2S_OFF_VERSION];
  ci->versionlz = p[B2S_OFF_VERSIONLZ];
  ci->flags = p[B2S_OFF_FLAGS];
  ci->typesize = p[B2S_OFF_TYPESIZE];
  ci->nbytes = b2s_rd32(p + B2S_OFF_NBYTES);
  ci->blocksize = b2s_rd32(p + B2S_OFF_BLOCKSIZE);
  ci->cbytes = b2s_rd32(p + B2S_OFF_CBYTES);
  bool extended = (ci->flags & 0x05) == 0x05;
  ci->header_len = extended ? B2S_HEADER_LEN : B2S_HEADER1_LEN;
  if (srcsize < (size_t)ci->header_len)
    return B2S_E_SHORT;
  if (extended && ci->version > B2S_CHUNK_VERSION_VL &&
      (p[B2S_OFF_FLAGS2] & ~B2S_FLAGS2_VLBLOCKS))
    return B2S_E_VERSION;          /* a future format we cannot know */
  if (ci->typesize == 0)
    return B2S_E_TYPESIZE;
  if (ci->nbytes < 0 || ci->nbytes > B2S_MAX_BUFFERSIZE)
    return B2S_E_NBYTES;
  if (ci->cbytes < ci->header_len || (size_t)ci->cbytes > srcsize)
    return B2S_E_CBYTES;
  ci->memcpyed = ci->flags & B2S_FLAG_MEMCPY;
  ci->dont_split = ci->flags & B2S_FLAG_DONT_SPLIT;
  ci->compformat = ci->flags >> 5;
  ci->codec = ci->compformat;
  if (extended) {
    ci->blosc2_flags = p[B2S_OFF_BLOSC2_FLAGS];
    ci->blosc2_flags2 = p[B2S_OFF_FLAGS2];
    ci->vl_blocks = ci->blosc2_flags2 & B2S_FLAGS2_VLBLOCKS;
    ci->use_dict = ci->blosc2_flags & B2S_B2FLAG_DICT;
    ci->special = (ci->blosc2_flags >> 4) & 0x07;
    ci->codec = p[B2S_OFF_UDCODEC];
    if (ci->blosc2_flags & (B2S_B2FLAG_LAZY | B2S_B2FLAG_INSTR))
      return B2S_E_VERSION;        /* in-memory / development markers */
  }
  read_pipeline(p, ci);
  if (ci->special) {
    /* Special chunks ignore the memcpy bit and the codec; the blocksize
     * still drives how c-blosc2 fills them. */
    ci->memcpyed = false;
    int rc = check_special(ci);
    return rc < 0 ? rc : check_geometry(ci);
  }
  int rc = check_geometry(ci);
  if (rc < 0)
    return rc;
  if (!ci->memcpyed && ci->compformat != 0 && ci->compformat != 1 &&
      ci->compformat != 3 && ci->compformat != 4)
    return B2S_E_CODEC;             /* user codecs (6) are not available */
  return b2s_filters_validate(ci->filters, ci->filters_meta, ci->typesize, 0);
}

/* Block size and split decisions, exactly as c-blosc2 3.3 makes them
 * (spec 1.7 and 1.13): byte-identical chunks need the same block layout. */
#include "chunk_internal.h"

static bool has_filter(const b2s_cparams *cp, int id) {
  for (int i = 0; i < B2S_MAX_FILTERS; i++)
    if (cp->filters[i] == id)
      return true;
  return false;
}

bool b2s_split_decision(const b2s_cparams *cp, int32_t typesize,
                        int32_t blocksize) {
  if (cp->splitmode == B2S_SPLIT_ALWAYS)
    return true;
  if (cp->splitmode == B2S_SPLIT_NEVER)
    return false;
  /* AUTO and FORWARD_COMPAT share one rule in 3.3. */
  bool codec_ok = cp->codec == B2S_CODEC_BLOSCLZ || cp->codec == B2S_CODEC_LZ4 ||
                  (cp->codec == B2S_CODEC_ZSTD && cp->clevel <= 5);
  return codec_ok && has_filter(cp, B2S_FILTER_SHUFFLE) && typesize <= 16 &&
         typesize > 0 && blocksize / typesize >= 32;
}

/* The clevel-dependent base size when the user gave no blocksize. */
static int32_t auto_base(const b2s_cparams *cp, int32_t nbytes, bool split) {
  static const int32_t split_kib[10] = {0, 32, 32, 32, 64, 64, 64, 128, 256, 512};
  bool hcr = cp->codec == B2S_CODEC_LZ4HC || cp->codec == B2S_CODEC_ZLIB ||
             cp->codec == B2S_CODEC_ZSTD;
  int64_t bs = nbytes;
  if (nbytes >= 32768) {
    bs = 32768 * (hcr ? 2 : 1);
    switch (cp->clevel) {
    case 0: bs /= 4; break;
    case 1: bs /= 2; break;
    case 2: break;
    case 3: bs *= 2; break;
    case 4: case 5: bs *= 4; break;
    case 6: case 7: case 8: bs *= 8; break;
    default: bs *= hcr ? 16 : 8; break;
    }
  }
  if (cp->clevel > 0 && split) {
    bs = (int64_t)split_kib[cp->clevel] * 1024 * cp->typesize;
    if (bs > 4 * 1024 * 1024)
      bs = 4 * 1024 * 1024;
    if (bs < 32 * 1024)
      bs = 32 * 1024;
  }
  return (int32_t)bs;
}

int32_t b2s_compute_blocksize(const b2s_cparams *cp, int32_t nbytes) {
  int32_t ts = cp->typesize;
  if (nbytes < ts)
    return 1;
  int32_t bs;
  if (cp->blocksize > 0) {
    bs = cp->blocksize;
  } else {
    bool split = b2s_split_decision(cp, ts, nbytes);
    bs = auto_base(cp, nbytes, split);
  }
  if (bs > nbytes)
    bs = nbytes;
  if (bs > ts)
    bs = bs / ts * ts;
  return bs;
}

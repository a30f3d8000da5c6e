/* Blosc2 chunks: compression context, encoder, decoder, partial reads.
 *
 * The format is the one c-blosc2 3.x writes (see BLOSC2_FORMAT.md in the
 * shared spec); chunks made here decode in c-blosc2 and vice versa.
 *
 * Ownership: a b2s_ctx belongs to one thread at a time.  It owns the codec
 * states (zstd CCtx/DCtx, LZ4 and LZ4HC states, zlib streams) and scratch
 * buffers, grown on demand and reused for every call, so a worker creates one
 * context for its lifetime and never allocates on the hot path once warm.
 * Source and destination buffers always belong to the caller. */
#ifndef B2S_CHUNK_H
#define B2S_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_errors.h"

#define B2S_HEADER_LEN 32          /* extended header, always written */
#define B2S_HEADER1_LEN 16         /* Blosc1 header, read only */
#define B2S_MAX_OVERHEAD 32        /* a chunk is never larger than nbytes + 32 */
#define B2S_MIN_BUFFERSIZE 32      /* smaller inputs are stored memcpy'ed */
#define B2S_MAX_BUFFERSIZE (INT32_MAX - B2S_MAX_OVERHEAD)
#define B2S_MAX_BLOCKSIZE 536866816
#define B2S_MAX_TYPESIZE 255
#define B2S_MAX_FILTERS 6
#define B2S_MAX_DICT 32768

enum b2s_codec {
  B2S_CODEC_BLOSCLZ = 0, /* encoded as c-blosc2 does, byte for byte */
  B2S_CODEC_LZ4 = 1,
  B2S_CODEC_LZ4HC = 2,
  B2S_CODEC_ZLIB = 4,
  B2S_CODEC_ZSTD = 5,
};

enum b2s_filter {
  B2S_FILTER_NONE = 0,
  B2S_FILTER_SHUFFLE = 1,
  B2S_FILTER_BITSHUFFLE = 2,
  B2S_FILTER_DELTA = 3,
  B2S_FILTER_TRUNC_PREC = 4,
};

enum b2s_split {
  B2S_SPLIT_ALWAYS = 1,
  B2S_SPLIT_NEVER = 2,
  B2S_SPLIT_AUTO = 3,
  B2S_SPLIT_FORWARD_COMPAT = 4,
};

enum b2s_special {
  B2S_SPECIAL_NONE = 0,
  B2S_SPECIAL_ZERO = 1,
  B2S_SPECIAL_NAN = 2,
  B2S_SPECIAL_VALUE = 3,
  B2S_SPECIAL_UNINIT = 4,
};

typedef struct b2s_cparams {
  int codec;                       /* enum b2s_codec */
  int clevel;                      /* 0..9; 0 stores the data memcpy'ed */
  int32_t typesize;                /* 1..255 */
  int32_t blocksize;               /* 0 = automatic, as c-blosc2 chooses */
  int splitmode;                   /* enum b2s_split */
  uint8_t filters[B2S_MAX_FILTERS];
  uint8_t filters_meta[B2S_MAX_FILTERS];
  bool use_dict;                   /* zstd, lz4, lz4hc only */
} b2s_cparams;

/* c-blosc2's defaults except the codec: lz4 rather than BloscLZ (both are
 * encoded and decoded here). */
#define B2S_CPARAMS_DEFAULTS                                                    \
  ((b2s_cparams){.codec = B2S_CODEC_LZ4, .clevel = 5, .typesize = 8,           \
                 .blocksize = 0, .splitmode = B2S_SPLIT_FORWARD_COMPAT,        \
                 .filters = {0, 0, 0, 0, 0, B2S_FILTER_SHUFFLE},               \
                 .filters_meta = {0}, .use_dict = false})

/* Parsed and validated chunk header. */
typedef struct b2s_chunk_info {
  uint8_t version, versionlz, flags, typesize;
  int32_t nbytes, blocksize, cbytes;
  int32_t nblocks;                 /* blocks in the chunk (VL: from the header) */
  int header_len;                  /* 32, or 16 for a Blosc1 header */
  int compformat;                  /* flags bits 5..7 */
  int codec;                       /* compcode from byte 22 (or compformat) */
  bool memcpyed, dont_split, vl_blocks, use_dict;
  int special;                     /* enum b2s_special */
  uint8_t filters[B2S_MAX_FILTERS];
  uint8_t filters_meta[B2S_MAX_FILTERS];
  uint8_t blosc2_flags, blosc2_flags2;
} b2s_chunk_info;

typedef struct b2s_ctx b2s_ctx;

b2s_ctx *b2s_ctx_new(void);
void b2s_ctx_free(b2s_ctx *ctx);

/* Parse and validate the header of the chunk in src[0..srcsize).  Checks
 * everything that can be checked without decoding streams. */
int b2s_chunk_info_get(const void *src, size_t srcsize, b2s_chunk_info *info);

/* The one check of compression parameters, used by every writer (chunks,
 * local frames, distributed frames) and by the configuration: 0, or
 * B2S_E_ARG (clevel, blocksize, split mode), B2S_E_TYPESIZE, B2S_E_CODEC,
 * B2S_E_NODICT_CODEC or B2S_E_FILTER. */
int b2s_cparams_check(const b2s_cparams *cp);

/* Compress src[0..nbytes) into one chunk in dst[0..dstsize).  Returns the
 * chunk size (cbytes > 0).  With dstsize >= nbytes + B2S_MAX_OVERHEAD it
 * always succeeds for valid parameters (memcpy fallback). */
int b2s_compress(b2s_ctx *ctx, const b2s_cparams *cp, const void *src,
                 int32_t nbytes, void *dst, int32_t dstsize);

/* b2s_compress of a b2nd chunk whose items src holds in C order of its
 * chunkshape, order being that chunk's b2s_blockorder (order->gather set,
 * order->nbytes == nbytes, cp->blocksize the bytes of one block): each
 * block is gathered (b2s_blockorder_gather_block) as it is taken, while it
 * stays in the cache, and the chunk is exactly the one b2s_compress makes
 * of the items in block order.  B2S_E_ARG when order does not fit. */
struct b2s_blockorder;
int b2s_compress_blocks(b2s_ctx *ctx, const b2s_cparams *cp,
                        const struct b2s_blockorder *order, const void *src,
                        int32_t nbytes, void *dst, int32_t dstsize);

/* Decompress the whole chunk in src[0..srcsize) into dst; returns nbytes. */
int b2s_decompress(b2s_ctx *ctx, const void *src, size_t srcsize, void *dst,
                   size_t dstsize);

/* Decompress items [start, start + nitems) (item = header typesize bytes, or
 * the value size of a repeated-value chunk) into dst, decoding only the
 * blocks that hold them.  Returns the number of bytes written. */
int b2s_getitem(b2s_ctx *ctx, const void *src, size_t srcsize, int32_t start,
                int32_t nitems, void *dst, size_t dstsize);

/* Special-value chunks, as blosc2_chunk_zeros/_nans/_uninit/_repeatval make
 * them (cp supplies typesize and what the automatic blocksize depends on).
 * repeatval: value[0..valsize) is the item; nbytes % valsize must be 0.
 * Return the chunk size. */
int b2s_chunk_zeros(const b2s_cparams *cp, int32_t nbytes, void *dst,
                    int32_t dstsize);
int b2s_chunk_nans(const b2s_cparams *cp, int32_t nbytes, void *dst,
                   int32_t dstsize);
int b2s_chunk_uninit(const b2s_cparams *cp, int32_t nbytes, void *dst,
                     int32_t dstsize);
/* The repeated-value chunk that stands for a special chunk of `kind`
 * (B2S_SPECIAL_ZERO, _NAN, _UNINIT) of nbytes in a frame of typesize
 * cp->typesize: zeros (and uninitialised bytes) as a zero value of that
 * typesize, NaN as the float32/float64 NaN.  c-blosc2 sizes a frame's
 * repeated value by the frame's typesize, so a one-byte value would not
 * read back in a frame of wider items.  At most B2S_REPEAT_CHUNK_MAX
 * bytes. */
#define B2S_REPEAT_CHUNK_MAX (B2S_HEADER_LEN + B2S_MAX_TYPESIZE)
int b2s_chunk_special_as_repeat(const b2s_cparams *cp, int kind,
                                int32_t nbytes, void *dst, int32_t dstsize);
int b2s_chunk_repeatval(const b2s_cparams *cp, int32_t nbytes, void *dst,
                        int32_t dstsize, const void *value, int32_t valsize);

/* The blocksize c-blosc2 picks for these parameters (spec 1.13). */
int32_t b2s_compute_blocksize(const b2s_cparams *cp, int32_t nbytes);

/* Whether blocks of this size are split into typesize streams (spec 1.7). */
bool b2s_split_decision(const b2s_cparams *cp, int32_t typesize,
                        int32_t blocksize);

#endif

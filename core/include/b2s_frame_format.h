/* Byte layout of Blosc2 frames: the fixed header, the metalayer section, the
 * trailer with its vlmetalayers, special index entries and the b2nd
 * metalayer (BLOSC2_FORMAT.md sections 4, 5 and 6).
 *
 * This module only converts between bytes and the in-memory model below; it
 * does no I/O and does not decode chunks.  The same model is what a frame
 * writer edits and serialises back, and the serialisers reproduce what
 * c-blosc2 writes byte for byte.
 *
 * Parsers take the bytes of one structure plus its absolute position in the
 * frame (for error offsets), fill the model and report problems through a
 * b2s_frame_error.  They never read outside the bytes given, and everything
 * they allocate is bounded by the size of those bytes.
 *
 * Ownership: a b2s_frame_metas owns its entries and their contents (freed by
 * b2s_frame_metas_fini).  b2s_b2nd.dtype borrows from the bytes it was parsed
 * from. */
#ifndef B2S_FRAME_FORMAT_H
#define B2S_FRAME_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_chunk.h"

#include "b2s_msgpack.h"

#define B2S_FRAME_MAGIC "b2frame"          /* + NUL: 8 bytes */
#define B2S_FRAME_HEADER_FIXED 87          /* bytes before the metalayers */
#define B2S_FRAME_TAIL_LEN 23              /* ce len32 + fixext16 fingerprint */
#define B2S_FRAME_TRAILER_MIN 35           /* trailer with no vlmetalayer */
#define B2S_FRAME_NAME_MAX 31              /* fixstr limit */
#define B2S_FRAME_MAX_METALAYERS 16
#define B2S_FRAME_MAX_VLMETALAYERS 8192    /* c-blosc2 reads that many */
#define B2S_FRAME_VERSION_MAX 3            /* format version nibble */
#define B2S_FRAME_NFILTERS 6

/* Offsets of the fixed-header values (the byte after each msgpack marker),
 * for writers that patch a header in place. */
enum {
  B2S_FRAME_OFF_HEADER_LEN = 11,   /* int32 */
  B2S_FRAME_OFF_FRAME_LEN = 16,    /* uint64 */
  B2S_FRAME_OFF_GENERAL_FLAGS = 25,
  B2S_FRAME_OFF_FRAME_TYPE = 26,
  B2S_FRAME_OFF_CODEC_FLAGS = 27,
  B2S_FRAME_OFF_OTHER_FLAGS = 28,
  B2S_FRAME_OFF_NBYTES = 30,       /* int64 */
  B2S_FRAME_OFF_CBYTES = 39,       /* int64 */
  B2S_FRAME_OFF_TYPESIZE = 48,     /* int32 */
  B2S_FRAME_OFF_BLOCKSIZE = 53,    /* int32 */
  B2S_FRAME_OFF_CHUNKSIZE = 58,    /* int32 */
  B2S_FRAME_OFF_HAS_VLMETA = 68,   /* the bool marker itself */
  B2S_FRAME_OFF_NFILTERS = 70,     /* fixext16 type byte */
  B2S_FRAME_OFF_FILTERS = 71,
};

enum {
  B2S_FRAME_TYPE_CONTIGUOUS = 0,
  B2S_FRAME_TYPE_SPARSE = 1,
};

/* general_flags bits (spec 4.2). */
enum {
  B2S_FRAME_GF_VERSION_MASK = 0x0f,
  B2S_FRAME_GF_OFFSETS64 = 0x10,
  B2S_FRAME_GF_VARLEN = 0x40,
  B2S_FRAME_GF_VLBLOCKS = 0x80,
};

/* Where a problem in untrusted bytes was found.  Filled by every parser and
 * by the frame reader; `reason` is a short static string. */
typedef struct b2s_frame_error {
  int code;                        /* negative error, 0 when none */
  int64_t offset;                  /* byte offset, -1 when unknown */
  int64_t nchunk;                  /* logical chunk concerned, -1 when none */
  bool in_chunk_file;              /* sparse frame: offset is in that chunk's
                                      own file, not in chunks.b2frame */
  const char *reason;
} b2s_frame_error;

/* Record a problem (err may be NULL); returns code. */
int b2s_frame_error_set(b2s_frame_error *err, int code, int64_t offset,
                        const char *reason);
void b2s_frame_error_clear(b2s_frame_error *err);

/* The 87-byte fixed header.  Fields keep the values found in the file, also
 * ones this reader does not use (they are c-blosc2's compression defaults
 * for new data), so a re-serialised header is identical. */
typedef struct b2s_frame_header {
  int32_t header_len;              /* fixed part + metalayer section */
  int64_t frame_len;               /* whole frame, trailer included */
  uint8_t general_flags;           /* version nibble | B2S_FRAME_GF_* */
  uint8_t frame_type;              /* B2S_FRAME_TYPE_* */
  uint8_t codec_flags;             /* compcode | clevel << 4 */
  uint8_t other_flags;             /* split mode - 1 */
  int64_t nbytes;                  /* sum of the chunks' nbytes */
  int64_t cbytes;                  /* cframe: data section length */
  int32_t typesize;
  int32_t blocksize;               /* requested default, 0 = automatic */
  int32_t chunksize;               /* 0 variable, -1 no chunk yet */
  int16_t nthreads_c, nthreads_d;
  bool has_vlmeta;
  uint8_t nfilters;                /* fixext16 type byte, <= 6 */
  uint8_t filters[B2S_FRAME_NFILTERS];
  uint8_t udcodec;
  uint8_t compcode_meta;
  uint8_t filters_meta[B2S_FRAME_NFILTERS];
  uint8_t other_flags2;            /* bit 0: use_dict */
  uint8_t reserved;
} b2s_frame_header;

/* One metalayer or vlmetalayer.  For metalayers `content` is the raw
 * content; for vlmetalayers it is the stored Blosc2 chunk. */
typedef struct b2s_frame_meta {
  char name[B2S_FRAME_NAME_MAX + 1];   /* NUL-terminated */
  uint8_t *content;                    /* owned; NULL when len is 0 */
  int32_t len;
  int64_t offset;                      /* where the content was found (frame
                                          offset of its c6 marker), -1 if new */
} b2s_frame_meta;

typedef struct b2s_frame_metas {
  b2s_frame_meta *items;
  int32_t n, cap;
} b2s_frame_metas;

void b2s_frame_metas_init(b2s_frame_metas *m);
void b2s_frame_metas_fini(b2s_frame_metas *m);
/* Index of the entry called name, or B2S_E_NOTFOUND. */
int b2s_frame_metas_find(const b2s_frame_metas *m, const char *name);
/* Append a copy of (name, content[0..len)).  B2S_E_ARG for a name longer
 * than 31 bytes or a duplicate name; returns the new index. */
int b2s_frame_metas_add(b2s_frame_metas *m, const char *name,
                        const void *content, int32_t len);

/* ---- fixed header ---------------------------------------------------- */

/* Parse and check the fixed header in buf[0..len), len >= 87.  Checks the
 * markers, the magic, header_len >= 87, header_len <= frame_len, the version
 * nibble, typesize > 0, nfilters <= 6, nbytes and cbytes >= 0 and the
 * chunksize/nbytes combination.  Not checked here: the frame type (the
 * opener knows which one it expects) and frame_len against the file. */
int b2s_frame_header_parse(const uint8_t *buf, size_t len,
                           b2s_frame_header *h, b2s_frame_error *err);

/* The compression parameters a header records (codec, clevel, typesize,
 * blocksize, split mode, filters, dictionary), as a writer of the frame
 * uses them: 0, or B2S_E_TYPESIZE for a typesize beyond Blosc2's (then 1
 * in *cp). */
int b2s_frame_header_cparams(const b2s_frame_header *h, b2s_cparams *cp);

/* Write the 87 fixed bytes for h (header_len and frame_len as in h). */
void b2s_frame_header_encode(const b2s_frame_header *h,
                             uint8_t out[B2S_FRAME_HEADER_FIXED]);

/* Parse the metalayer section hdr[87..header_len) into m (which must be
 * empty).  Offsets inside are frame offsets, so hdr must be the frame's
 * first header_len bytes. */
int b2s_frame_metas_parse(const uint8_t *hdr, size_t header_len,
                          b2s_frame_metas *m, b2s_frame_error *err);

/* Length of the header (fixed part + metalayer section) for these
 * metalayers, or B2S_E_ARG when it would exceed INT32_MAX. */
int64_t b2s_frame_header_size(const b2s_frame_metas *m);

/* Append the whole header to out: the fixed part of h, with header_len
 * replaced by the computed length, then the metalayer section.  Returns
 * the header length. */
int b2s_frame_header_write(const b2s_frame_header *h,
                           const b2s_frame_metas *m, b2s_mpbuf *out);

/* ---- trailer ----------------------------------------------------------- */

/* Read trailer_len from the last 23 bytes of a frame of frame_len bytes
 * whose header is header_len long; checks the markers and
 * 35 <= trailer_len <= frame_len - header_len. */
int b2s_frame_tail_parse(const uint8_t tail[B2S_FRAME_TAIL_LEN],
                         int64_t frame_len, int64_t header_len,
                         uint32_t *trailer_len, b2s_frame_error *err);

/* Parse the trailer tr[0..trailer_len), which starts at frame offset
 * trailer_offset, into vl (which must be empty). */
int b2s_frame_trailer_parse(const uint8_t *tr, size_t trailer_len,
                            int64_t trailer_offset, b2s_frame_metas *vl,
                            b2s_frame_error *err);

/* Length of the trailer for these vlmetalayers, or B2S_E_ARG when too big. */
int64_t b2s_frame_trailer_size(const b2s_frame_metas *vl);

/* Append the trailer (version 1, vlmetalayers, length, empty fingerprint).
 * Returns the trailer length. */
int b2s_frame_trailer_write(const b2s_frame_metas *vl, b2s_mpbuf *out);

/* ---- index entries ----------------------------------------------------- */

/* Special index values (spec 4.6): bit 63 set, kind in the top byte. */
#define B2S_FRAME_ENTRY_ZERO (INT64_MIN | (INT64_C(1) << 56))
#define B2S_FRAME_ENTRY_NAN (INT64_MIN | (INT64_C(2) << 56))
#define B2S_FRAME_ENTRY_UNINIT (INT64_MIN | (INT64_C(4) << 56))

/* Kind of an index entry: 0 for a stored chunk (entry >= 0),
 * B2S_SPECIAL_ZERO / _NAN / _UNINIT for the three special values, or
 * B2S_E_INDEX for any other negative value. */
int b2s_frame_entry_kind(int64_t entry);

/* Number of logical chunks for a header: nbytes = 0 gives 0; a fixed
 * chunksize gives ceil(nbytes / chunksize); chunksize 0 needs the index
 * (index_nbytes = decompressed size of the index chunk, must be a multiple
 * of 8).  B2S_E_FRAME / B2S_E_INDEX on inconsistency. */
int b2s_frame_header_nchunks(const b2s_frame_header *h, int64_t index_nbytes,
                             int64_t *nchunks);

/* ---- b2nd metalayer ----------------------------------------------------- */

#define B2S_B2ND_MAX_DIM 16

typedef struct b2s_b2nd {
  uint8_t version;
  int8_t ndim;
  int64_t shape[B2S_B2ND_MAX_DIM];
  int32_t chunkshape[B2S_B2ND_MAX_DIM];
  int32_t blockshape[B2S_B2ND_MAX_DIM];
  bool has_dtype;
  uint8_t dtype_format;            /* 0 = NumPy dtype string */
  const char *dtype;               /* borrowed, dtype_len bytes, no NUL */
  uint32_t dtype_len;
} b2s_b2nd;

/* Parse the content of a "b2nd" (or legacy "caterva") metalayer; base is
 * the frame offset of content[0] for error offsets. */
int b2s_b2nd_parse(const uint8_t *content, size_t len, int64_t base,
                   b2s_b2nd *nd, b2s_frame_error *err);

/* Serialise nd as c-blosc2 does. */
int b2s_b2nd_write(const b2s_b2nd *nd, b2s_mpbuf *out);

#endif

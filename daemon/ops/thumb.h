/* Thumbnails of 2-D streams (thumb.c): the latest committed chunk of a b2nd
 * frame, read from the frame file (never a writer's buffer), its first
 * image (the last two dimensions) scaled to at most B2SD_THUMB_MAX pixels
 * a side, grey levels stretched from its minimum to its maximum, as a PNG
 * (libpng).  Runs on the HTTP thread with its own frame handle. */
#ifndef B2SD_THUMB_H
#define B2SD_THUMB_H

#include <stddef.h>
#include <stdint.h>

#include "b2s_errors.h"

#define B2SD_THUMB_MAX 256
/* Largest chunk decompressed for a thumbnail: bounds the listener's
 * memory whatever the stream's chunks are. */
#define B2SD_THUMB_CHUNK_MAX (64u << 20)

typedef struct b2sd_thumb_req {
  char path[4096];               /* the data frame */
  int ndim;                      /* as configured (0: not b2nd) */
  int64_t chunkshape[8];
  char dtype[16];
  int64_t committed;             /* chunks committed when asked */
} b2sd_thumb_req;

/* One chunk of a b2nd frame of 2 or more dimensions, decompressed, its
 * items in C order (the live view's frames and the thumbnails). */
typedef struct b2sd_image {
  void *bytes;                   /* malloc'ed, nbytes */
  size_t nbytes;
  char dtype[16];                /* NumPy's form, "<u2" */
  int ndim;
  int64_t shape[8];              /* the chunk's shape */
} b2sd_image;

/* Chunk `index` of the frame at path, read with a handle of its own.
 * 0, or B2S_E_ARG (not an image: no b2nd, a dtype not shown, a chunk
 * that is not the chunkshape), B2S_E_OVERSIZE (over max_bytes), another
 * code when it cannot be read; the reason in ed. */
int b2sd_image_read(const char *path, int64_t index, size_t max_bytes,
                    b2sd_image *im, b2s_errdetail *ed);
void b2sd_image_fini(b2sd_image *im);
/* The PNG of im's first image (its last two dimensions), scaled to at
 * most max_side pixels a side, in *png (malloc'ed). */
int b2sd_image_png(const b2sd_image *im, int max_side, void **png,
                   size_t *len);

/* The PNG of q's latest committed image in *png (malloc'ed, *len bytes).
 * 0, or a negative error with the reason in ed. */
int b2sd_thumb_png(const b2sd_thumb_req *q, void **png, size_t *len,
                   b2s_errdetail *ed);

/* The pure parts, for tests.  Scale an h x w image of NumPy dtype `dtype`
 * (little or big endian u/i of 1, 2, 4, 8 bytes, f of 4 or 8) into
 * out[*oh * *ow] grey levels (out holds B2SD_THUMB_MAX^2 bytes): nearest
 * pixel, stretched min..max (all one value: 0).  0, or B2S_E_ARG for a
 * dtype it does not know. */
int b2sd_thumb_scale(const void *pixels, const char *dtype, int64_t h,
                     int64_t w, uint8_t *out, int *oh, int *ow);
/* The same to at most max_side pixels a side (out holds max_side^2). */
int b2sd_thumb_scale_to(const void *pixels, const char *dtype, int64_t h,
                        int64_t w, int max_side, uint8_t *out, int *oh,
                        int *ow);
/* An 8-bit grey-scale PNG of gray[h * w] in *png (malloc'ed). */
int b2sd_png_gray(const uint8_t *gray, int h, int w, void **png,
                  size_t *len);

#endif

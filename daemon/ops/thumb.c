/* Thumbnails (thumb.h). */
#include "thumb.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_blockorder.h"
#include "b2s_errors.h"
#include "b2s_frame.h"

/* ---- pixels ------------------------------------------------------------------- */

typedef struct pixfmt {
  char kind;                     /* 'u', 'i', 'f' */
  int size;
  bool big;
} pixfmt;

static int parse_dtype(const char *d, pixfmt *f) {
  if (!d || strlen(d) != 3)
    return B2S_E_ARG;
  f->big = d[0] == '>';
  if (d[0] != '<' && d[0] != '>' && d[0] != '|' && d[0] != '=')
    return B2S_E_ARG;
  f->kind = d[1];
  f->size = d[2] - '0';
  bool ok = ((f->kind == 'u' || f->kind == 'i') &&
             (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8)) ||
            (f->kind == 'f' && (f->size == 4 || f->size == 8));
  return ok ? 0 : B2S_E_ARG;
}

static double pixel(const uint8_t *p, const pixfmt *f) {
  uint64_t v = 0;
  for (int i = 0; i < f->size; i++)
    v |= (uint64_t)p[f->big ? f->size - 1 - i : i] << (8 * i);
  if (f->kind == 'f') {
    if (f->size == 4) {
      uint32_t u = (uint32_t)v;
      float x;
      memcpy(&x, &u, 4);
      return x;
    }
    double x;
    memcpy(&x, &v, 8);
    return x;
  }
  if (f->kind == 'u')
    return (double)v;
  int sh = 64 - 8 * f->size;     /* sign-extend */
  return (double)((int64_t)(v << sh) >> sh);
}

int b2sd_thumb_scale(const void *pixels, const char *dtype, int64_t h,
                     int64_t w, uint8_t *out, int *oh, int *ow) {
  pixfmt f;
  if (parse_dtype(dtype, &f) < 0 || h <= 0 || w <= 0)
    return B2S_E_ARG;
  int64_t big = h > w ? h : w;
  int64_t step = (big + B2SD_THUMB_MAX - 1) / B2SD_THUMB_MAX;
  *oh = (int)((h + step - 1) / step);
  *ow = (int)((w + step - 1) / step);
  const uint8_t *px = pixels;
  double lo = INFINITY, hi = -INFINITY;
  for (int y = 0; y < *oh; y++)
    for (int x = 0; x < *ow; x++) {
      double v = pixel(px + ((y * step) * w + x * step) * f.size, &f);
      if (isfinite(v)) {
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
    }
  for (int y = 0; y < *oh; y++)
    for (int x = 0; x < *ow; x++) {
      double v = pixel(px + ((y * step) * w + x * step) * f.size, &f);
      /* halves first: hi - lo of float64 extremes would overflow */
      double g = isfinite(v) && hi > lo
                     ? (v / 2 - lo / 2) / (hi / 2 - lo / 2) * 255.0
                     : 0;
      g = isfinite(g) ? (g < 0 ? 0 : g > 255 ? 255 : g) : 0;
      out[y * *ow + x] = (uint8_t)(g + 0.5);
    }
  return 0;
}

/* ---- PNG -------------------------------------------------------------------------- */

typedef struct membuf {
  uint8_t *p;
  size_t len, cap;
  bool oom;
} membuf;

static void mem_write(png_structp png, png_bytep data, size_t n) {
  membuf *m = png_get_io_ptr(png);
  if (m->oom)
    return;
  if (m->len + n > m->cap) {
    size_t cap = (m->len + n) * 2;
    uint8_t *np = realloc(m->p, cap);
    if (!np) {
      m->oom = true;
      return;
    }
    m->p = np;
    m->cap = cap;
  }
  memcpy(m->p + m->len, data, n);
  m->len += n;
}

static void mem_flush(png_structp png) { (void)png; }

int b2sd_png_gray(const uint8_t *gray, int h, int w, void **out, size_t *len) {
  membuf m = {0};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
                                            NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info) {
    png_destroy_write_struct(&png, NULL);
    return B2S_E_NOMEM;
  }
  /* libpng reports errors by longjmp; m and the rows stay valid */
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    free(m.p);
    return B2S_E_NOMEM;
  }
  png_set_write_fn(png, &m, mem_write, mem_flush);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
               PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < h; y++)
    png_write_row(png, (png_const_bytep)(gray + (size_t)y * (size_t)w));
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  if (m.oom) {
    free(m.p);
    return B2S_E_NOMEM;
  }
  *out = m.p;
  *len = m.len;
  return 0;
}

/* ---- the frame -------------------------------------------------------------------- */

/* The image's height and width, the last two dimensions of the chunk,
 * the dtype and the order of the chunk's items: from the frame's b2nd
 * metalayer (the file says what it holds). */
static int image_shape(b2s_frame *f, int64_t *h, int64_t *w, char *dtype,
                       size_t dn, b2s_blockorder *order) {
  b2s_b2nd nd;
  int rc = b2s_frame_b2nd_get(f, &nd);
  if (rc < 0)
    return rc;
  if (nd.ndim < 2 || !nd.has_dtype || nd.dtype_format != 0 ||
      nd.dtype_len >= dn)
    return B2S_E_ARG;
  int32_t ts = b2s_frame_header_get(f)->typesize;
  rc = b2s_blockorder_init(order, nd.ndim, nd.chunkshape, nd.blockshape,
                           ts > 0 ? ts : 1, NULL);
  if (rc < 0)
    return rc;
  *h = nd.chunkshape[nd.ndim - 2];
  *w = nd.chunkshape[nd.ndim - 1];
  memcpy(dtype, nd.dtype, nd.dtype_len);
  dtype[nd.dtype_len] = '\0';
  return 0;
}

/* No thumbnail, and why (the answer's text). */
#define WHY(...) b2s_errdetail_set(ed, B2S_E_NOTFOUND, __VA_ARGS__)

int b2sd_thumb_png(const b2sd_thumb_req *q, void **png, size_t *len,
                   b2s_errdetail *ed) {
  if (q->ndim < 2 || q->committed <= 0)
    return WHY("not a 2-D stream with a committed image");
  b2s_frame *f = NULL;
  b2s_frame_error err;
  if (b2s_frame_open(q->path, &f, &err) < 0)
    return WHY("cannot open the frame");
  int64_t n = b2s_frame_nchunks(f), h = 0, w = 0;
  if (n > q->committed)
    n = q->committed;            /* what the metrics call committed */
  char dtype[16];
  int32_t nbytes = 0;
  uint8_t *buf = NULL, gray[B2SD_THUMB_MAX * B2SD_THUMB_MAX];
  int oh, ow, rc = B2S_E_NOTFOUND;
  b2s_blockorder order;
  if (n <= 0 || image_shape(f, &h, &w, dtype, sizeof dtype, &order) < 0) {
    (void)WHY("no b2nd image in the frame");
    goto out;
  }
  b2s_frame_chunk_sizes(f, n - 1, NULL, &nbytes);
  pixfmt pf;
  if (parse_dtype(dtype, &pf) < 0) {
    (void)WHY("dtype %s is not shown", dtype);
    goto out;
  }
  if (nbytes <= 0 || (uint32_t)nbytes > B2SD_THUMB_CHUNK_MAX ||
      h * w * pf.size > nbytes) {
    (void)WHY("chunk of %d bytes is not shown", (int)nbytes);
    goto out;
  }
  buf = malloc((size_t)nbytes);
  if (!buf || b2s_frame_chunk_decompress(f, n - 1, NULL, buf,
                                         (size_t)nbytes) < 0) {
    (void)WHY("cannot read chunk %lld", (long long)(n - 1));
    goto out;
  }
  /* stored block after block: the image's items back in C order */
  if (order.gather && order.nbytes == nbytes) {
    uint8_t *c_order = malloc((size_t)nbytes);
    if (!c_order) {
      (void)WHY("out of memory");
      goto out;
    }
    b2s_blockorder_scatter(&order, buf, c_order);
    free(buf);
    buf = c_order;
  }
  if (b2sd_thumb_scale(buf, dtype, h, w, gray, &oh, &ow) < 0 ||
      b2sd_png_gray(gray, oh, ow, png, len) < 0) {
    (void)WHY("cannot make the image");
    goto out;
  }
  rc = 0;
out:
  free(buf);
  b2s_frame_free(f);
  return rc;
}

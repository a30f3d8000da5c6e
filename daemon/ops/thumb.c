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
  return b2sd_thumb_scale_to(pixels, dtype, h, w, B2SD_THUMB_MAX, out, oh, ow);
}

int b2sd_thumb_scale_to(const void *pixels, const char *dtype, int64_t h,
                        int64_t w, int max_side, uint8_t *out, int *oh,
                        int *ow) {
  pixfmt f;
  if (parse_dtype(dtype, &f) < 0 || h <= 0 || w <= 0 || max_side < 1)
    return B2S_E_ARG;
  int64_t big = h > w ? h : w;
  int64_t step = (big + max_side - 1) / max_side;
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

/* Why an image cannot be read (the answer's text), with its code. */
#define WHY(code, ...) b2s_errdetail_set(ed, code, __VA_ARGS__)

/* Chunk `index` of f decompressed into im->bytes, in C order. */
static int read_chunk(b2s_frame *f, int64_t index, const b2s_blockorder *order,
                      b2sd_image *im, b2s_errdetail *ed) {
  uint8_t *buf = malloc(im->nbytes);
  if (!buf || b2s_frame_chunk_decompress(f, index, NULL, buf, im->nbytes) < 0) {
    free(buf);
    return WHY(B2S_E_NOTFOUND, "cannot read chunk %lld", (long long)index);
  }
  /* stored block after block: the items back in C order */
  if (order->gather && (size_t)order->nbytes == im->nbytes) {
    uint8_t *c_order = malloc(im->nbytes);
    if (!c_order) {
      free(buf);
      return WHY(B2S_E_NOMEM, "out of memory");
    }
    b2s_blockorder_scatter(order, buf, c_order);
    free(buf);
    buf = c_order;
  }
  im->bytes = buf;
  return 0;
}

/* The chunk's shape and dtype from the frame's b2nd metalayer (the file
 * says what it holds), and the order of its items. */
static int image_meta(b2s_frame *f, b2sd_image *im, b2s_blockorder *order,
                      b2s_errdetail *ed) {
  b2s_b2nd nd;
  if (b2s_frame_b2nd_get(f, &nd) < 0 || nd.ndim < 2 || nd.ndim > 8 ||
      !nd.has_dtype || nd.dtype_format != 0 ||
      nd.dtype_len >= sizeof im->dtype)
    return WHY(B2S_E_ARG, "no b2nd image in the frame");
  memcpy(im->dtype, nd.dtype, nd.dtype_len);
  im->dtype[nd.dtype_len] = '\0';
  pixfmt pf;
  if (parse_dtype(im->dtype, &pf) < 0)
    return WHY(B2S_E_ARG, "dtype %s is not shown", im->dtype);
  im->ndim = nd.ndim;
  uint64_t items = 1;
  for (int i = 0; i < nd.ndim; i++) {
    im->shape[i] = nd.chunkshape[i];
    items *= (uint64_t)nd.chunkshape[i];
  }
  im->nbytes = (size_t)(items * (uint64_t)pf.size);
  int32_t ts = b2s_frame_header_get(f)->typesize;
  if (b2s_blockorder_init(order, nd.ndim, nd.chunkshape, nd.blockshape,
                          ts > 0 ? ts : 1, NULL) < 0)
    return WHY(B2S_E_ARG, "no b2nd image in the frame");
  return 0;
}

int b2sd_image_read(const char *path, int64_t index, size_t max_bytes,
                    b2sd_image *im, b2s_errdetail *ed) {
  memset(im, 0, sizeof *im);
  b2s_frame *f = NULL;
  b2s_frame_error err;
  if (b2s_frame_open(path, &f, &err) < 0)
    return WHY(B2S_E_NOTFOUND, "cannot open the frame");
  b2s_blockorder order;
  int32_t nbytes = 0;
  int rc = image_meta(f, im, &order, ed);
  if (rc == 0 && (index < 0 || index >= b2s_frame_nchunks(f)))
    rc = WHY(B2S_E_NOTFOUND, "no chunk %lld", (long long)index);
  if (rc == 0) {
    b2s_frame_chunk_sizes(f, index, NULL, &nbytes);
    if (nbytes <= 0 || (size_t)nbytes != im->nbytes)
      rc = WHY(B2S_E_ARG, "chunk of %d bytes is not one image", (int)nbytes);
    else if (im->nbytes > max_bytes)
      rc = WHY(B2S_E_OVERSIZE, "chunk of %d bytes is over %zu", (int)nbytes,
               max_bytes);
  }
  if (rc == 0)
    rc = read_chunk(f, index, &order, im, ed);
  b2s_frame_free(f);
  if (rc < 0)
    b2sd_image_fini(im);
  return rc;
}

void b2sd_image_fini(b2sd_image *im) {
  if (!im)
    return;
  free(im->bytes);
  im->bytes = NULL;
}

int b2sd_image_png(const b2sd_image *im, int max_side, void **png,
                   size_t *len) {
  int64_t h = im->shape[im->ndim - 2], w = im->shape[im->ndim - 1];
  uint8_t *gray = malloc((size_t)max_side * (size_t)max_side);
  if (!gray)
    return B2S_E_NOMEM;
  int oh, ow;
  int rc = b2sd_thumb_scale_to(im->bytes, im->dtype, h, w, max_side, gray,
                               &oh, &ow);
  if (rc == 0)
    rc = b2sd_png_gray(gray, oh, ow, png, len);
  free(gray);
  return rc;
}

int b2sd_thumb_png(const b2sd_thumb_req *q, void **png, size_t *len,
                   b2s_errdetail *ed) {
  if (q->ndim < 2 || q->committed <= 0)
    return WHY(B2S_E_NOTFOUND, "not a 2-D stream with a committed image");
  b2sd_image im;
  int rc = b2sd_image_read(q->path, q->committed - 1, B2SD_THUMB_CHUNK_MAX,
                           &im, ed);
  if (rc < 0)
    return B2S_E_NOTFOUND;
  rc = b2sd_image_png(&im, B2SD_THUMB_MAX, png, len);
  b2sd_image_fini(&im);
  if (rc < 0)
    return WHY(B2S_E_NOTFOUND, "cannot make the image");
  return 0;
}

/* The HDF5 side of b2stream export: the image dataset, declared with the
 * Blosc2 or bitshuffle filter and written chunk by chunk with
 * H5Dwrite_chunk, and the small helpers for NeXus attributes and fields. */
#include <stdlib.h>
#include <string.h>

#include "cmd_export.h"
#include "b2s_h5lz4.h"
#include "b2s_msgpack.h"

/* A filter function that always fails: the export writes every chunk
 * encoded already, so HDF5 must never run one through the filter. */
static size_t no_filter(unsigned flags, size_t cd_nelmts,
                        const unsigned cd_values[], size_t nbytes,
                        size_t *buf_size, void **buf) {
  (void)flags, (void)cd_nelmts, (void)cd_values, (void)nbytes;
  (void)buf_size, (void)buf;
  return 0;
}

/* Registered even when a plugin for the id is installed (Debian ships
 * bitshuffle's): its set_local would rewrite the cd_values, and they must
 * be exactly those the chunks were written for. */
static int register_one(H5Z_filter_t id, const char *name) {
  H5Z_class2_t c = {H5Z_CLASS_T_VERS, id, 1, 1, name, NULL, NULL, no_filter};
  return H5Zregister(&c) < 0 ? -1 : 0;
}

int cli_exp_h5_register(void) {
  if (register_one(EXP_FILTER_BLOSC2, "blosc2") < 0 ||
      register_one(EXP_FILTER_BSLZ4, "bitshuffle; see https://github.com/kiyo-masui/bitshuffle") < 0) {
    cli_err("cannot register the HDF5 filter ids");
    return -1;
  }
  return 0;
}

/* HDF5 type of a NumPy dtype string ("<u2", "|u1", ">f8", "|b1"). */
static hid_t dtype_of(const char *s, uint32_t n, int32_t typesize) {
  if (n < 3 || n > 4)
    return -1;
  char order = s[0], kind = s[1];
  int size = atoi((char[8]){s[2], n > 3 ? s[3] : 0, 0});
  if (size != typesize || (order != '<' && order != '>' && order != '|'))
    return -1;
  bool be = order == '>';
  if (kind == 'u' || kind == 'b') {
    switch (size) {
    case 1: return H5T_STD_U8LE;
    case 2: return be ? H5T_STD_U16BE : H5T_STD_U16LE;
    case 4: return be ? H5T_STD_U32BE : H5T_STD_U32LE;
    case 8: return be ? H5T_STD_U64BE : H5T_STD_U64LE;
    }
  } else if (kind == 'i') {
    switch (size) {
    case 1: return H5T_STD_I8LE;
    case 2: return be ? H5T_STD_I16BE : H5T_STD_I16LE;
    case 4: return be ? H5T_STD_I32BE : H5T_STD_I32LE;
    case 8: return be ? H5T_STD_I64BE : H5T_STD_I64LE;
    }
  } else if (kind == 'f') {
    if (size == 4)
      return be ? H5T_IEEE_F32BE : H5T_IEEE_F32LE;
    if (size == 8)
      return be ? H5T_IEEE_F64BE : H5T_IEEE_F64LE;
  }
  return -1;
}

int cli_exp_series_open(cli_src *src, uint8_t **map, b2s_mpreader *r,
                        uint32_t *n) {
  size_t len = 0;
  *map = NULL;
  if (b2s_frame_series_get(src->frame, map, &len) < 0 || *map == NULL)
    return 0;
  b2s_mpreader_init(r, *map, len);
  b2s_mpval m;
  if (b2s_mp_read_any(r, &m) < 0 || m.type != B2S_MPT_MAP)
    return -1;
  *n = m.n;
  return 1;
}

/* Unsigned integer value of key `name` in the frame's series map, or 0. */
static uint64_t series_uint(cli_src *src, const char *name) {
  uint8_t *map;
  b2s_mpreader r;
  uint32_t n = 0;
  b2s_mpval key, v;
  uint64_t out = 0;
  bool ok = cli_exp_series_open(src, &map, &r, &n) > 0;
  for (uint32_t k = 0; ok && k < n; k++) {
    ok = b2s_mp_read_any(&r, &key) == 0 && key.type == B2S_MPT_STR;
    if (ok && key.n == strlen(name) && memcmp(key.p, name, key.n) == 0) {
      b2s_mpreader at = r;
      if (b2s_mp_read_any(&at, &v) == 0 && v.type == B2S_MPT_UINT)
        out = v.u;
      break;
    }
    ok = ok && b2s_mp_skip(&r, B2S_MP_MAX_DEPTH) == 0;
  }
  free(map);
  return out;
}

/* A detector's frame of flattened images, b2nd (images, pixels) of one
 * image per chunk (docs/SOURCES.md, layout flat), whose series map says
 * image_size_y x image_size_x == pixels: the dataset is (images, y, x),
 * which the field's readers (DIALS, XDS, NeXus viewers) want.  The HDF5
 * chunk's bytes are the same: the image's pixels in C order. */
static void unflatten(cli_src *src, cli_exp_shape *sh) {
  const b2s_b2nd *nd = &sh->nd;
  if (nd->ndim != 2 || nd->chunkshape[0] != 1 ||
      nd->chunkshape[1] != nd->shape[1])
    return;
  uint64_t y = series_uint(src, "image_size_y");
  uint64_t x = series_uint(src, "image_size_x");
  uint64_t pixels = (uint64_t)nd->shape[1];
  if (y == 0 || x == 0 || x > pixels || y > pixels || y * x != pixels)
    return;
  sh->unflat = true;
  sh->ndim = 3;
  sh->chunk[1] = (hsize_t)y;
  sh->chunk[2] = (hsize_t)x;
  sh->grid[1] = sh->grid[2] = 1;
  /* blocks of whole rows, as a detector source's layout: images */
  uint64_t row = x * (uint64_t)sh->typesize;
  b2s_b2nd *img = &sh->img;
  *img = *nd;
  img->ndim = 3;
  img->shape[0] = img->chunkshape[0] = img->blockshape[0] = 1;
  img->shape[1] = img->chunkshape[1] = (int32_t)y;
  img->shape[2] = img->chunkshape[2] = (int32_t)x;
  img->blockshape[1] = (int32_t)b2s_rows_per_block((int64_t)row, (int64_t)y);
  img->blockshape[2] = (int32_t)x;
  uint64_t rows = (y + (uint64_t)img->blockshape[1] - 1) /
                  (uint64_t)img->blockshape[1] * (uint64_t)img->blockshape[1];
  sh->img_nbytes = (int64_t)(rows * row);   /* as c-blosc2 pads b2nd chunks */
}

int cli_exp_shape_from(cli_src *src, cli_exp_shape *sh) {
  memset(sh, 0, sizeof *sh);
  const b2s_frame_header *h = b2s_frame_header_get(src->frame);
  sh->typesize = h->typesize;
  int rc = b2s_frame_b2nd_get(src->frame, &sh->nd);
  if (rc > 0 || (rc == 0 && sh->nd.ndim > 0)) {
    sh->b2nd = true;
    sh->ndim = sh->nd.ndim;
    if (sh->nd.has_dtype && sh->nd.dtype_len < sizeof sh->dtype_text) {
      memcpy(sh->dtype_text, sh->nd.dtype, sh->nd.dtype_len);
      sh->nd.dtype = sh->dtype_text;
    }
    sh->dtype = sh->nd.has_dtype
                    ? dtype_of(sh->nd.dtype, sh->nd.dtype_len, h->typesize)
                    : -1;
    if (sh->dtype < 0) {
      cli_err("%s: dtype '%.*s' has no HDF5 type here (unsigned, signed "
              "and float items of 1-8 bytes)", src->path,
              sh->nd.has_dtype ? (int)sh->nd.dtype_len : 4,
              sh->nd.has_dtype ? sh->nd.dtype : "none");
      return -1;
    }
    sh->chunk_nbytes = h->typesize;
    for (int d = 0; d < sh->ndim; d++) {
      sh->chunk[d] = (hsize_t)sh->nd.chunkshape[d];
      sh->chunk_nbytes *= sh->nd.chunkshape[d];
      sh->grid[d] = sh->nd.shape[d] ? (sh->nd.shape[d] + sh->nd.chunkshape[d] - 1) /
                                          sh->nd.chunkshape[d]
                                    : 0;
    }
    unflatten(src, sh);
    return 0;
  }
  /* no b2nd: one dimension of items, one HDF5 chunk per frame chunk */
  int32_t ts = h->typesize;
  sh->dtype = ts == 1 ? H5T_STD_U8LE : ts == 2 ? H5T_STD_U16LE
            : ts == 4 ? H5T_STD_U32LE : ts == 8 ? H5T_STD_U64LE : H5T_STD_U8LE;
  if (ts != 1 && ts != 2 && ts != 4 && ts != 8)
    sh->typesize = 1;
  int64_t n = cli_src_nchunks(src);
  int32_t nb = h->chunksize > 0 ? h->chunksize : 0;
  if (nb <= 0 && n > 0) {
    cli_chunk d;
    if (cli_src_chunk(src, 0, &d) < 0)
      return -1;
    nb = d.nbytes;
  }
  if (nb <= 0 || nb % sh->typesize) {
    cli_err("%s: chunks of %d bytes do not make a dataset of %d-byte items",
            src->path, (int)nb, (int)sh->typesize);
    return -1;
  }
  sh->ndim = 1;
  sh->chunk_nbytes = nb;
  sh->chunk[0] = (hsize_t)(nb / sh->typesize);
  return 0;
}

void cli_exp_shape_extent(cli_exp_shape *sh, int64_t n) {
  int64_t per = 1;
  for (int d = 1; d < sh->ndim; d++)
    per *= sh->grid[d] ? sh->grid[d] : 1;
  int64_t rows = (n + per - 1) / per;
  if (sh->b2nd && sh->nd.shape[0] > 0 && rows <= sh->grid[0])
    rows = sh->grid[0];
  sh->dims[0] = (hsize_t)rows * sh->chunk[0];
  if (sh->b2nd && sh->nd.shape[0] > 0 && rows == sh->grid[0])
    sh->dims[0] = (hsize_t)sh->nd.shape[0];
  for (int d = 1; d < sh->ndim; d++)
    sh->dims[d] = sh->unflat ? sh->chunk[d] : (hsize_t)sh->nd.shape[d];
}

void cli_exp_shape_offset(const cli_exp_shape *sh, int64_t i, hsize_t *off) {
  for (int d = sh->ndim - 1; d >= 1; d--) {
    int64_t g = sh->grid[d] ? sh->grid[d] : 1;
    off[d] = (hsize_t)(i % g) * sh->chunk[d];
    i /= g;
  }
  off[0] = (hsize_t)i * sh->chunk[0];
}

/* cd_values as the filters' set_local would store them. */
static size_t cd_values(const cli_exp_shape *sh, int codec, const cli_chunk *c,
                        unsigned cd[8 + B2S_B2ND_MAX_DIM]) {
  if (codec == EXP_CODEC_BSLZ4) {
    /* bitshuffle's set_local: its version (0.4, whose framing every
     * release reads), the item size, block size 0 (the default, the real
     * one is in each chunk) and compression 2 (LZ4) */
    cd[0] = 0, cd[1] = 4, cd[2] = (unsigned)sh->typesize;
    cd[3] = 0, cd[4] = 2;
    return 5;
  }
  int shuffle = 0;
  for (int k = 0; c && k < B2S_MAX_FILTERS; k++)
    if (c->info.filters[k] == B2S_FILTER_SHUFFLE ||
        c->info.filters[k] == B2S_FILTER_BITSHUFFLE)
      shuffle = c->info.filters[k];
  cd[0] = 1;   /* FILTER_BLOSC2_VERSION */
  cd[1] = c ? (unsigned)c->info.blocksize : 0;
  cd[2] = (unsigned)sh->typesize;
  cd[3] = (unsigned)sh->chunk_nbytes;
  cd[4] = 5, cd[5] = (unsigned)shuffle, cd[6] = c ? (unsigned)c->info.codec : 0;
  if (sh->ndim < 2)
    return 7;
  cd[7] = (unsigned)sh->ndim;
  for (int d = 0; d < sh->ndim; d++)
    cd[8 + d] = (unsigned)sh->chunk[d];
  return 8 + (size_t)sh->ndim;
}

hid_t cli_exp_h5_dataset(hid_t loc, const char *name, const cli_exp_shape *sh,
                         int codec, const cli_chunk *first, bool growing) {
  hsize_t maxdims[B2S_B2ND_MAX_DIM];
  bool single = !growing;
  for (int d = 0; d < sh->ndim; d++) {
    maxdims[d] = d == 0 && growing ? H5S_UNLIMITED : sh->dims[d];
    single = single && sh->dims[d] == sh->chunk[d];
  }
  /* A fixed shape: HDF5 then indexes the chunks with a fixed array, which
   * neggia reads (an unlimited first dimension gives an extensible array,
   * of which it reads only the first entries).  A dataset of one chunk
   * (or none) would get the single-chunk index neggia does not read at
   * all: one more row of room gives it the fixed array. */
  if (single || (!growing && sh->dims[0] == 0))
    maxdims[0] = sh->dims[0] + sh->chunk[0];
  unsigned cd[8 + B2S_B2ND_MAX_DIM];
  size_t ncd = cd_values(sh, codec, first, cd);
  hid_t space = H5Screate_simple(sh->ndim, sh->dims, maxdims);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hid_t ds = -1;
  if (space >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, sh->ndim, sh->chunk) >= 0 &&
      H5Pset_filter(dcpl, codec == EXP_CODEC_BSLZ4 ? EXP_FILTER_BSLZ4
                                                   : EXP_FILTER_BLOSC2,
                    H5Z_FLAG_MANDATORY, ncd, cd) >= 0)
    ds = H5Dcreate2(loc, name, sh->dtype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dcpl >= 0)
    H5Pclose(dcpl);
  if (space >= 0)
    H5Sclose(space);
  return ds;
}

/* A fixed-length string type for v: ASCII when v is, which every reader
 * converts to (Durin, cnxvalidate and h5py's C callers ask HDF5 for
 * H5T_C_S1, and HDF5 converts no UTF-8 string to ASCII), UTF-8
 * otherwise; null-terminated, the terminator counted in the size. */
static hid_t str_type(const char *v) {
  bool ascii = true;
  for (const unsigned char *p = (const unsigned char *)v; *p && ascii; p++)
    ascii = *p < 0x80;
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t >= 0 && (H5Tset_size(t, strlen(v) + 1) < 0 ||
                 H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
                 H5Tset_cset(t, ascii ? H5T_CSET_ASCII : H5T_CSET_UTF8) < 0)) {
    H5Tclose(t);
    t = -1;
  }
  return t;
}

int cli_exp_h5_attr_str(hid_t obj, const char *name, const char *value) {
  hid_t t = str_type(value);
  hid_t s = H5Screate(H5S_SCALAR);
  hid_t a = t >= 0 ? H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int rc = a >= 0 && H5Awrite(a, t, value) >= 0 ? 0 : -1;
  if (a >= 0)
    H5Aclose(a);
  H5Sclose(s);
  if (t >= 0)
    H5Tclose(t);
  return rc;
}

int cli_exp_h5_attr_vec(hid_t obj, const char *name, const double *v, hsize_t n) {
  hid_t s = H5Screate_simple(1, &n, NULL);
  hid_t a = H5Acreate2(obj, name, H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT);
  int rc = a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, v) >= 0 ? 0 : -1;
  if (a >= 0)
    H5Aclose(a);
  H5Sclose(s);
  return rc;
}

static int attr_num(hid_t obj, const char *name, hid_t type, const void *v) {
  hid_t s = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, type, s, H5P_DEFAULT, H5P_DEFAULT);
  int rc = a >= 0 && H5Awrite(a, type, v) >= 0 ? 0 : -1;
  if (a >= 0)
    H5Aclose(a);
  H5Sclose(s);
  return rc;
}

int cli_exp_h5_attr_double(hid_t obj, const char *name, double v) {
  return attr_num(obj, name, H5T_NATIVE_DOUBLE, &v);
}

int cli_exp_h5_attr_int(hid_t obj, const char *name, int64_t v) {
  return attr_num(obj, name, H5T_NATIVE_INT64, &v);
}

hid_t cli_exp_h5_group(hid_t loc, const char *name, const char *nx_class) {
  hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g >= 0 && cli_exp_h5_attr_str(g, "NX_class", nx_class) < 0) {
    H5Gclose(g);
    return -1;
  }
  return g;
}

int cli_exp_h5_vector(hid_t loc, const char *name, hid_t type, const void *v,
                  hsize_t n, const char *units) {
  hid_t s = n ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
  hid_t d = H5Dcreate2(loc, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = d >= 0 && H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0 ? 0 : -1;
  if (rc == 0 && units)
    rc = cli_exp_h5_attr_str(d, "units", units);
  if (d >= 0)
    H5Dclose(d);
  H5Sclose(s);
  return rc;
}

int cli_exp_h5_scalar_double(hid_t loc, const char *name, double v,
                         const char *units) {
  return cli_exp_h5_vector(loc, name, H5T_NATIVE_DOUBLE, &v, 0, units);
}

int cli_exp_h5_scalar_str(hid_t loc, const char *name, const char *v) {
  hid_t t = str_type(v);
  int rc = t >= 0 ? cli_exp_h5_vector(loc, name, t, v, 0, NULL) : -1;
  if (t >= 0)
    H5Tclose(t);
  return rc;
}

int cli_exp_h5_scalar_int(hid_t loc, const char *name, int64_t v,
                          const char *units) {
  return cli_exp_h5_vector(loc, name, H5T_NATIVE_INT64, &v, 0, units);
}

int cli_exp_h5_scalar_bool(hid_t loc, const char *name, bool v) {
  /* NX_BOOLEAN: an integer of one byte (h5py's enum is no integer to
   * cnxvalidate) */
  uint8_t b = v;
  return cli_exp_h5_vector(loc, name, H5T_NATIVE_UINT8, &b, 0, NULL);
}

int cli_exp_h5_strings(hid_t loc, const char *name, char **v, hsize_t n) {
  bool ascii = true;
  for (hsize_t k = 0; k < n && ascii; k++)
    for (const unsigned char *p = (const unsigned char *)v[k]; *p && ascii; p++)
      ascii = *p < 0x80;
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, ascii ? H5T_CSET_ASCII : H5T_CSET_UTF8);
  int rc = cli_exp_h5_vector(loc, name, t, v, n, NULL);
  H5Tclose(t);
  return rc;
}

int cli_exp_h5_attr_bytes(hid_t obj, const char *name, const void *v, size_t n) {
  hsize_t len = n;
  hid_t s = H5Screate_simple(1, &len, NULL);
  hid_t a = H5Acreate2(obj, name, H5T_STD_U8LE, s, H5P_DEFAULT, H5P_DEFAULT);
  int rc = a >= 0 && H5Awrite(a, H5T_NATIVE_UINT8, v) >= 0 ? 0 : -1;
  if (a >= 0)
    H5Aclose(a);
  H5Sclose(s);
  return rc;
}

int cli_exp_h5_keep_meta(hid_t ds, cli_src *src, const cli_exp_shape *sh) {
  uint8_t *map = NULL;
  size_t len = 0;
  int rc = 0;
  if (b2s_frame_series_get(src->frame, &map, &len) == 0 && map && len)
    rc = cli_exp_h5_attr_bytes(ds, EXP_ATTR_SERIES, map, len);
  free(map);
  if (rc == 0 && sh->unflat) {
    /* the dataset's images, as import makes the frame from its chunks */
    b2s_b2nd nd = sh->img;
    nd.shape[0] = sh->nd.shape[0];
    b2s_mpbuf b = {0};
    rc = b2s_b2nd_write(&nd, &b) < 0 ? -1
         : cli_exp_h5_attr_bytes(ds, EXP_ATTR_B2ND, b.data, b.len);
    b2s_mpbuf_fini(&b);
    return rc;
  }
  const b2s_frame_metas *m = b2s_frame_metalayers(src->frame);
  int k = b2s_frame_metas_find(m, "b2nd");
  if (rc == 0 && k >= 0 && m->items[k].len > 0)
    rc = cli_exp_h5_attr_bytes(ds, EXP_ATTR_B2ND, m->items[k].content,
                           (size_t)m->items[k].len);
  return rc;
}

/* The series map as JSON (plain layout: an attribute of the dataset). */
char *cli_exp_series_json(cli_src *src) {
  uint8_t *map = NULL;
  size_t len = 0;
  if (b2s_frame_series_get(src->frame, &map, &len) < 0 || map == NULL)
    return NULL;
  char *text = NULL;
  size_t tlen = 0;
  FILE *f = open_memstream(&text, &tlen);
  b2s_mpreader r;
  b2s_mpreader_init(&r, map, len);
  if (f && cli_mp_json(f, &r, B2S_MP_MAX_DEPTH) < 0)
    fputs("null", f);
  if (f)
    fclose(f);
  free(map);
  return text;
}

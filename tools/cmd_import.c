/* b2stream import: an HDF5 dataset as a new frame (docs/EXPORT.md).  A
 * dataset filtered with Blosc2 (id 32026) is read chunk by chunk with
 * H5Dread_chunk and each HDF5 chunk's inner Blosc2 chunk is appended as
 * it is; any other dataset is read through HDF5 (its filters decoded by
 * the library and its plugins, bitshuffle+LZ4 by ours) and compressed. */
#include <stdlib.h>
#include <string.h>

#include "b2s_h5lz4.h"
#include "cmd_export.h"
#include "b2s_frame_writer.h"

static const char help[] =
    "usage: b2stream import IN.h5 FRAME [--dataset PATH] [--sparse]\n"
    "\n"
    "Write the HDF5 dataset PATH (default /entry/data/data, else /data) of\n"
    "IN.h5 into the new frame FRAME (which must not exist), one HDF5 chunk\n"
    "per frame chunk, with a b2nd metalayer of the dataset's shape.  Blosc2-\n"
    "filtered chunks (id 32026) are copied as stored, without decompression;\n"
    "other datasets are read through HDF5 and compressed with lz4 and\n"
    "shuffle.  A file written by b2stream export gets its series metadata\n"
    "back.  Prints 'imported N chunks'.\n"
    "\n"
    "  --dataset PATH  the dataset to import\n"
    "  --sparse        write a sparse frame (a directory)\n";

typedef struct imp {
  const char *in, *out, *dsname;
  bool sparse;
  hid_t file, ds, type;
  int rank;
  hsize_t dims[B2S_B2ND_MAX_DIM], chunk[B2S_B2ND_MAX_DIM];
  int64_t grid[B2S_B2ND_MAX_DIM], nchunks;
  int32_t typesize;
  size_t chunk_nbytes;             /* items of one chunk, C order */
  size_t ext_nbytes;               /* the chunk as b2nd stores it: padded to
                                      whole blocks (docs/BLOSC2_FORMAT.md) */
  bool blosc2;
  char dtype[8];
  b2s_b2nd nd;                     /* of the new frame */
  uint8_t *nd_raw;                 /* exported b2nd metalayer, if any */
  size_t nd_raw_len;
  b2s_fwriter *w;
  bool created;                    /* FRAME is ours to remove on failure */
  b2s_ctx *ctx;
  uint8_t *buf, *raw;              /* chunk bytes as read, decoded items */
  uint8_t *lay;                    /* the items in b2nd block order */
  size_t cap;
} imp;

/* NumPy dtype string of an HDF5 numeric type. */
static int dtype_str(hid_t t, char out[8]) {
  H5T_class_t c = H5Tget_class(t);
  size_t size = H5Tget_size(t);
  char order = size == 1 ? '|' : H5Tget_order(t) == H5T_ORDER_BE ? '>' : '<';
  char kind = c == H5T_FLOAT ? 'f'
            : c == H5T_INTEGER ? (H5Tget_sign(t) == H5T_SGN_NONE ? 'u' : 'i') : 0;
  if (!kind || size == 0 || size > 8)
    return -1;
  snprintf(out, 8, "%c%c%zu", order, kind, size);
  return 0;
}

static bool has_blosc2(hid_t ds) {
  hid_t dcpl = H5Dget_create_plist(ds);
  int n = H5Pget_nfilters(dcpl);
  bool only = n == 1;
  for (int k = 0; only && k < n; k++) {
    unsigned flags, cd[32];
    size_t ncd = 32;
    only = H5Pget_filter2(dcpl, (unsigned)k, &flags, &ncd, cd, 0, NULL, NULL) ==
           EXP_FILTER_BLOSC2;
  }
  H5Pclose(dcpl);
  return only;
}

/* A filter that decodes bitshuffle+LZ4 chunks (id 32008) for H5Dread. */
static size_t bslz4_filter(unsigned flags, size_t ncd, const unsigned cd[],
                           size_t nbytes, size_t *buf_size, void **buf) {
  if (!(flags & H5Z_FLAG_REVERSE) || ncd < 3 || (ncd > 4 && cd[4] != 2) || nbytes < 12)
    return 0;
  uint64_t n = 0;
  for (int k = 0; k < 8; k++)
    n = n << 8 | ((uint8_t *)*buf)[k];
  if (n > ((uint64_t)1 << 31))
    return 0;
  uint8_t *out = malloc(n ? n : 1);
  if (out == NULL)
    return 0;
  b2s_h5_params hp = {.kind = B2S_H5_BSLZ4, .elem_size = (int32_t)cd[2]};
  int got = cd[2] >= 1 && cd[2] <= B2S_MAX_TYPESIZE
                ? b2s_h5_decompress(&hp, *buf, nbytes, out, (size_t)n)
                : B2S_E_TYPESIZE;
  if (got < 0) {
    free(out);
    return 0;
  }
  free(*buf);
  *buf = out;
  *buf_size = n;
  return (size_t)got;
}

static int open_in(imp *m) {
  H5Z_class2_t c = {H5Z_CLASS_T_VERS, EXP_FILTER_BSLZ4, 1, 1, "bitshuffle+lz4",
                    NULL, NULL, bslz4_filter};
  if (H5Zregister(&c) < 0)
    return -1;
  m->file = H5Fopen(m->in, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (m->file < 0) {
    cli_err("%s: cannot open as HDF5", m->in);
    return -1;
  }
  const char *names[] = {"/entry/data/data", "/data"};
  for (int k = 0; !m->dsname && k < 2; k++)
    /* a missing group on the way is an error (< 0), not a "no" */
    if (H5Lexists(m->file, names[k], H5P_DEFAULT) > 0)
      m->dsname = names[k];
  if (!m->dsname) {
    cli_err("%s: no /entry/data/data or /data (name one with --dataset)", m->in);
    return -1;
  }
  m->ds = H5Dopen2(m->file, m->dsname, H5P_DEFAULT);
  if (m->ds < 0) {
    cli_err("%s: %s: no such dataset", m->in, m->dsname);
    return -1;
  }
  m->type = H5Dget_type(m->ds);
  if (dtype_str(m->type, m->dtype) < 0) {
    cli_err("%s: %s: only integer and float items of 1-8 bytes are imported",
            m->in, m->dsname);
    return -1;
  }
  m->typesize = (int32_t)H5Tget_size(m->type);
  hid_t sp = H5Dget_space(m->ds);
  m->rank = H5Sget_simple_extent_ndims(sp);
  if (m->rank < 1 || m->rank > B2S_B2ND_MAX_DIM) {
    H5Sclose(sp);
    cli_err("%s: %s: rank %d is not imported", m->in, m->dsname, m->rank);
    return -1;
  }
  H5Sget_simple_extent_dims(sp, m->dims, NULL);
  H5Sclose(sp);
  return 0;
}

/* HDF5 chunk shape (a contiguous dataset: one row of dimension 0, or 1 Mi
 * items of a vector). */
static int shape(imp *m) {
  hid_t dcpl = H5Dget_create_plist(m->ds);
  bool chunked = H5Pget_layout(dcpl) == H5D_CHUNKED;
  if (chunked)
    H5Pget_chunk(dcpl, m->rank, m->chunk);
  H5Pclose(dcpl);
  if (!chunked) {
    for (int d = 0; d < m->rank; d++)
      m->chunk[d] = d == 0 ? 1 : m->dims[d];
    if (m->rank == 1)
      m->chunk[0] = m->dims[0] < (1 << 20) ? (m->dims[0] ? m->dims[0] : 1) : (1 << 20);
  }
  m->blosc2 = chunked && has_blosc2(m->ds);
  m->chunk_nbytes = (size_t)m->typesize;
  m->nchunks = 1;
  for (int d = 0; d < m->rank; d++) {
    m->chunk_nbytes *= m->chunk[d];
    m->grid[d] = (int64_t)((m->dims[d] + m->chunk[d] - 1) / m->chunk[d]);
    m->nchunks *= m->grid[d];
  }
  if (m->chunk_nbytes > (size_t)B2S_MAX_BUFFERSIZE / 2) {
    cli_err("%s: %s: chunks of %zu bytes are too large", m->in, m->dsname,
            m->chunk_nbytes);
    return -1;
  }
  return 0;
}

/* Blocks of at most 256 KiB in C order of the chunk: the chunk's shape
 * with its first dimensions cut down to divisors. */
static void blockshape(imp *m) {
  b2s_b2nd *nd = &m->nd;
  nd->version = 0, nd->ndim = (int8_t)m->rank;
  for (int d = 0; d < m->rank; d++) {
    nd->shape[d] = (int64_t)m->dims[d];
    nd->chunkshape[d] = (int32_t)m->chunk[d];
    nd->blockshape[d] = (int32_t)m->chunk[d];
  }
  size_t bytes = m->chunk_nbytes;
  for (int d = 0; d < m->rank && bytes > (256 << 10); d++) {
    int32_t c = nd->chunkshape[d];
    size_t per = bytes / (size_t)c;   /* bytes of one index along d */
    int32_t b = c;
    while (b > 1 && (size_t)b * per > (256 << 10))
      for (b--; b > 1 && c % b; b--)
        ;
    nd->blockshape[d] = b;
    bytes = per * (size_t)b;
    if (b > 1 || per <= (256 << 10))
      break;
  }
  nd->has_dtype = true, nd->dtype_format = 0;
  nd->dtype = m->dtype, nd->dtype_len = (uint32_t)strlen(m->dtype);
}

static void grid_offset(const imp *m, int64_t i, hsize_t *off) {
  for (int d = m->rank - 1; d >= 0; d--) {
    off[d] = (hsize_t)(i % m->grid[d]) * m->chunk[d];
    i /= m->grid[d];
  }
}

/* Read attribute name of the dataset into a malloc'ed buffer. */
static uint8_t *attr_bytes(hid_t ds, const char *name, size_t *len) {
  if (H5Aexists(ds, name) <= 0)
    return NULL;
  hid_t a = H5Aopen(ds, name, H5P_DEFAULT);
  hid_t s = H5Aget_space(a);
  hssize_t n = H5Sget_simple_extent_npoints(s);
  uint8_t *v = n > 0 && n < (1 << 20) ? malloc((size_t)n) : NULL;
  if (v && H5Aread(a, H5T_NATIVE_UINT8, v) < 0) {
    free(v);
    v = NULL;
  }
  H5Sclose(s);
  H5Aclose(a);
  *len = v ? (size_t)n : 0;
  return v;
}

static int grow(imp *m, size_t n) {
  if (n <= m->cap)
    return 0;
  uint8_t *b = realloc(m->buf, n), *r = b ? realloc(m->raw, n) : NULL;
  if (b)
    m->buf = b;
  if (r)
    m->raw = r;
  if (!b || !r)
    return -1;
  m->cap = n;
  return 0;
}

/* The inner Blosc2 chunk of HDF5 chunk i into m->buf; its size, 0 for a
 * chunk never written (the dataset's fill value, zeros), < 0 on error.
 * *nd gets the inner frame's b2nd metalayer when it has one. */
static int64_t inner_chunk(imp *m, int64_t i, b2s_b2nd *nd, bool *has_nd,
                           uint8_t **frame_bytes) {
  hsize_t off[B2S_B2ND_MAX_DIM], size = 0;
  grid_offset(m, i, off);
  if (H5Dget_chunk_storage_size(m->ds, off, &size) < 0 || size == 0)
    return 0;
  uint8_t *fb = malloc((size_t)size);
  uint32_t mask = 0;
  if (fb == NULL || H5Dread_chunk(m->ds, H5P_DEFAULT, off, &mask, fb) < 0 || mask) {
    free(fb);
    cli_err("%s: %s: chunk %lld cannot be read%s", m->in, m->dsname,
            (long long)i, mask ? " (stored without its filter)" : "");
    return -1;
  }
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  int32_t cb = 0;
  int rc = b2s_frame_open_buffer(fb, (size_t)size, &f, &err);
  if (rc == 0 && b2s_frame_nchunks(f) != 1)
    rc = B2S_E_NCHUNK;
  if (rc == 0)
    rc = b2s_frame_chunk_sizes(f, 0, &cb, NULL);
  if (rc == 0 && grow(m, (size_t)cb + m->chunk_nbytes + B2S_MAX_OVERHEAD) < 0)
    rc = B2S_E_NOMEM;
  if (rc == 0)
    rc = b2s_frame_chunk_read(f, 0, m->buf, m->cap);
  if (rc >= 0)
    *has_nd = b2s_frame_b2nd_get(f, nd) == 0;
  if (f)
    b2s_frame_free(f);
  if (rc < 0) {
    free(fb);
    cli_err("%s: %s: chunk %lld is not a one-chunk Blosc2 frame: %s", m->in,
            m->dsname, (long long)i, b2s_strerror(rc));
    return -1;
  }
  *frame_bytes = fb;   /* nd->dtype borrows from it */
  return rc;
}

/* A chunk's bytes as b2nd stores it, from the frame's blocks. */
static void set_ext(imp *m) {
  m->ext_nbytes = (size_t)m->typesize;
  for (int d = 0; d < m->rank; d++)
    m->ext_nbytes *= (size_t)((m->nd.chunkshape[d] + m->nd.blockshape[d] - 1) /
                              m->nd.blockshape[d] * m->nd.blockshape[d]);
}

/* Bytes of one block of the new frame's b2nd. */
static int32_t block_bytes(const imp *m) {
  int64_t b = m->typesize;
  for (int d = 0; d < m->rank; d++)
    b *= m->nd.blockshape[d];
  return b <= B2S_MAX_BLOCKSIZE ? (int32_t)b : 0;
}

static int create(imp *m, const b2s_chunk_info *ci) {
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.cparams.typesize = m->typesize;
  if (ci) {
    o.cparams.codec = ci->codec;
    memcpy(o.cparams.filters, ci->filters, B2S_MAX_FILTERS);
    memcpy(o.cparams.filters_meta, ci->filters_meta, B2S_MAX_FILTERS);
  }
  b2s_frame_metas metas;
  b2s_frame_metas_init(&metas);
  int rc = m->nd_raw ? b2s_frame_metas_add(&metas, "b2nd", m->nd_raw, (int32_t)m->nd_raw_len)
                     : b2s_frame_metas_add_b2nd(&metas, &m->nd);
  if (rc >= 0)
    rc = b2s_fwriter_create(m->out, m->sparse, &o, &metas, &m->w);
  b2s_frame_metas_fini(&metas);
  m->created = rc >= 0;
  if (rc < 0)
    cli_err("%s: cannot create the frame: %s", m->out, b2s_strerror(rc));
  return rc < 0 ? -1 : 0;
}

static int append(imp *m, const void *chunk, int32_t cbytes, int64_t i) {
  int64_t rc = b2s_fwriter_append(m->w, chunk, (size_t)cbytes);
  if (rc < 0)
    cli_err("%s: cannot append chunk %lld: %s", m->out, (long long)i,
            b2s_strerror((int)rc));
  return rc < 0 ? -1 : 0;
}

/* A chunk never written: zeros in the frame's blocks (c-blosc2 reads b2nd
 * slices with a mask of the array's blocks and refuses a chunk of others). */
static int zeros(imp *m, int64_t i) {
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.typesize = m->typesize;
  cp.blocksize = block_bytes(m);
  uint8_t z[B2S_MAX_OVERHEAD + 16];
  int cb = b2s_chunk_zeros(&cp, (int32_t)m->ext_nbytes, z, sizeof z);
  return cb < 0 ? -1 : append(m, z, cb, i);
}

/* A chunk copied as stored must have the frame's blocks and padding, as
 * c-blosc2 reads a b2nd chunk through a mask of the array's blocks. */
static int check_blocks(imp *m, int64_t i, size_t cb) {
  b2s_chunk_info ci;
  if (m->rank < 2 || (b2s_chunk_info_get(m->buf, cb, &ci) == 0 &&
                      (size_t)ci.nbytes == m->ext_nbytes &&
                      ci.blocksize == block_bytes(m)))
    return 0;
  cli_err("%s: %s: chunk %lld is not in the blocks of chunk 0's b2nd layout",
          m->in, m->dsname, (long long)i);
  return -1;
}

/* Blosc2-filtered: every inner chunk as stored. */
static int copy_blosc2(imp *m) {
  for (int64_t i = 0; i < m->nchunks; i++) {
    b2s_b2nd nd;
    bool has_nd = false;
    uint8_t *fb = NULL;
    int64_t cb = inner_chunk(m, i, &nd, &has_nd, &fb);
    int rc = cb < 0 ? -1 : 0;
    if (rc == 0 && m->w == NULL) {
      b2s_chunk_info ci;
      bool ok = cb > 0 && b2s_chunk_info_get(m->buf, (size_t)cb, &ci) == 0;
      if (has_nd && nd.ndim == m->rank) {
        memcpy(m->nd.blockshape, nd.blockshape, sizeof nd.blockshape);
        set_ext(m);
      }
      else if (m->rank > 1) {
        cli_err("%s: %s: chunk without a b2nd layout in a rank-%d dataset",
                m->in, m->dsname, m->rank);
        rc = -1;
      }
      if (rc == 0)
        rc = create(m, ok ? &ci : NULL);
    }
    if (rc == 0 && cb > 0)
      rc = check_blocks(m, i, (size_t)cb);
    if (rc == 0)
      rc = cb > 0 ? append(m, m->buf, (int32_t)cb, i) : zeros(m, i);
    free(fb);
    if (rc < 0)
      return -1;
  }
  return m->w ? 0 : create(m, NULL);
}

/* Whether a chunk in b2nd block order is its items in C order: the
 * blocks divide the chunk, and the first dimension they split has only
 * dimensions of size 1 before it and whole ones after it. */
static bool c_order_blocks(const b2s_b2nd *nd) {
  int d = 0;
  while (d < nd->ndim && nd->blockshape[d] == nd->chunkshape[d] &&
         nd->chunkshape[d] == 1)
    d++;
  if (d < nd->ndim && nd->chunkshape[d] % nd->blockshape[d])
    return false;
  for (d++; d < nd->ndim; d++)
    if (nd->blockshape[d] != nd->chunkshape[d])
      return false;
  return true;
}

/* A chunk's items in C order -> b2nd block order: the chunk padded to
 * whole blocks, each block's items in C order, blocks in C order of their
 * grid, padding zero (out holds ext_nbytes, zeroed once: the padding
 * never changes). */
static void to_blocks(const imp *m, const uint8_t *in, uint8_t *out) {
  const b2s_b2nd *nd = &m->nd;
  int n = nd->ndim;
  size_t ts = (size_t)m->typesize;
  int64_t grid[B2S_B2ND_MAX_DIM], g[B2S_B2ND_MAX_DIM] = {0};
  int64_t nblocks = 1, rows_per_block = 1;
  for (int d = 0; d < n; d++) {
    grid[d] = (nd->chunkshape[d] + nd->blockshape[d] - 1) / nd->blockshape[d];
    nblocks *= grid[d];
    if (d < n - 1)
      rows_per_block *= nd->blockshape[d];
  }
  size_t row_bytes = (size_t)nd->blockshape[n - 1] * ts;
  for (int64_t b = 0; b < nblocks; b++) {
    for (int64_t r = 0; r < rows_per_block; r++, out += row_bytes) {
      int64_t pos = 0, rr = r, p[B2S_B2ND_MAX_DIM];
      bool inside = true;
      for (int d = n - 2; d >= 0; d--) {
        p[d] = g[d] * nd->blockshape[d] + rr % nd->blockshape[d];
        rr /= nd->blockshape[d];
        inside = inside && p[d] < nd->chunkshape[d];
      }
      int64_t x0 = g[n - 1] * nd->blockshape[n - 1];
      int64_t w = nd->chunkshape[n - 1] - x0;
      if (!inside || w <= 0)
        continue;
      if (w > nd->blockshape[n - 1])
        w = nd->blockshape[n - 1];
      for (int d = 0; d < n - 1; d++)
        pos = pos * nd->chunkshape[d] + p[d];
      pos = pos * nd->chunkshape[n - 1] + x0;
      memcpy(out, in + (size_t)pos * ts, (size_t)w * ts);
    }
    for (int d = n - 1; d >= 0 && ++g[d] == grid[d]; d--)
      g[d] = 0;
  }
}

/* Any other dataset: HDF5 reads each chunk's items, we compress them. */
static int through_hdf5(imp *m) {
  if (create(m, NULL) < 0 || grow(m, m->ext_nbytes + B2S_MAX_OVERHEAD) < 0 ||
      (m->lay = calloc(1, m->ext_nbytes)) == NULL)
    return -1;
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.typesize = m->typesize;
  cp.blocksize = block_bytes(m);
  hid_t fs = H5Dget_space(m->ds);
  for (int64_t i = 0; i < m->nchunks; i++) {
    hsize_t off[B2S_B2ND_MAX_DIM], cnt[B2S_B2ND_MAX_DIM];
    grid_offset(m, i, off);
    for (int d = 0; d < m->rank; d++)
      cnt[d] = off[d] + m->chunk[d] <= m->dims[d] ? m->chunk[d] : m->dims[d] - off[d];
    /* an edge chunk keeps the full chunk shape, zero-padded, as b2nd does */
    memset(m->raw, 0, m->chunk_nbytes);
    hid_t ms = H5Screate_simple(m->rank, m->chunk, NULL);
    hsize_t zero[B2S_B2ND_MAX_DIM] = {0};
    int rc = H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0 &&
                     H5Sselect_hyperslab(ms, H5S_SELECT_SET, zero, NULL, cnt, NULL) >= 0 &&
                     H5Dread(m->ds, m->type, ms, fs, H5P_DEFAULT, m->raw) >= 0
                 ? 0 : -1;
    H5Sclose(ms);
    if (rc < 0) {
      cli_err("%s: %s: chunk %lld cannot be read (a filter missing?)", m->in,
              m->dsname, (long long)i);
      H5Sclose(fs);
      return -1;
    }
    const uint8_t *items = m->raw;
    if (!c_order_blocks(&m->nd)) {
      to_blocks(m, m->raw, m->lay);
      items = m->lay;
    }
    int cb = b2s_compress(m->ctx, &cp, items, (int32_t)m->ext_nbytes, m->buf,
                          (int32_t)(m->ext_nbytes + B2S_MAX_OVERHEAD));
    if (cb < 0 || append(m, m->buf, cb, i) < 0) {
      H5Sclose(fs);
      return -1;
    }
  }
  H5Sclose(fs);
  return 0;
}

/* The exported frame's b2nd metalayer (attribute) goes back in with its
 * blocks when its chunk shape is the dataset's: copied chunks have them
 * (export wraps each with that b2nd), chunks compressed here are laid out
 * in them.  Else the new frame gets a b2nd of its own. */
static void adopt_exported_b2nd(imp *m) {
  if (!m->nd_raw)
    return;
  b2s_b2nd nd;
  bool ok = b2s_b2nd_parse(m->nd_raw, m->nd_raw_len, 0, &nd, NULL) == 0 &&
            nd.ndim == m->rank;
  for (int d = 0; ok && d < m->rank; d++)
    ok = nd.chunkshape[d] == (int32_t)m->chunk[d];
  if (ok) {
    memcpy(m->nd.blockshape, nd.blockshape, sizeof nd.blockshape);
    return;
  }
  free(m->nd_raw);
  m->nd_raw = NULL;
}

static int run(imp *m) {
  if (open_in(m) < 0 || shape(m) < 0)
    return -1;
  blockshape(m);
  m->ctx = b2s_ctx_new();
  if (m->ctx == NULL)
    return -1;
  m->nd_raw = attr_bytes(m->ds, EXP_ATTR_B2ND, &m->nd_raw_len);
  adopt_exported_b2nd(m);
  set_ext(m);
  int rc = m->blosc2 ? copy_blosc2(m) : through_hdf5(m);
  size_t slen = 0;
  uint8_t *series = rc == 0 ? attr_bytes(m->ds, EXP_ATTR_SERIES, &slen) : NULL;
  if (series && b2s_fwriter_series_set(m->w, series, slen) < 0) {
    cli_err("%s: the series metadata of %s is not valid", m->out, m->in);
    rc = -1;
  }
  free(series);
  if (rc == 0) {
    int crc = b2s_fwriter_close(m->w);
    m->w = NULL;
    if (crc < 0) {
      cli_err("%s: cannot close the frame: %s", m->out, b2s_strerror(crc));
      rc = -1;
    }
  }
  if (rc == 0)
    printf("imported %lld chunks\n", (long long)m->nchunks);
  return rc;
}

static int cmd_import(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(help, stdout);
    return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
  }
  imp m;
  memset(&m, 0, sizeof m);
  m.file = m.ds = m.type = -1;
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *op, *ops[2] = {NULL, NULL};
  int nops = 0, k;
  while ((k = cli_args_next(&a, &op)) > 0) {
    if (k == 2) {
      if (nops == 2)
        return cli_usage(&a, "too many operands");
      ops[nops++] = op;
    } else if (!strcmp(a.opt, "dataset")) {
      if (!(m.dsname = cli_args_value(&a)))
        return CLI_EXIT_USAGE;
    } else if (!strcmp(a.opt, "sparse")) {
      if (!cli_args_no_value(&a))
        return CLI_EXIT_USAGE;
      m.sparse = true;
    } else {
      return cli_unknown_option(&a);
    }
  }
  if (k < 0)
    return CLI_EXIT_USAGE;
  if (nops != 2)
    return cli_usage(&a, "needs IN.h5 and FRAME");
  m.in = ops[0], m.out = ops[1];
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  int rc = run(&m);
  if (m.w)
    b2s_fwriter_free(m.w);
  if (rc < 0 && m.created)
    cli_remove_frame(m.out);   /* no partial output */
  if (m.type >= 0)
    H5Tclose(m.type);
  if (m.ds >= 0)
    H5Dclose(m.ds);
  if (m.file >= 0)
    H5Fclose(m.file);
  b2s_ctx_free(m.ctx);
  free(m.buf), free(m.raw), free(m.lay), free(m.nd_raw);
  return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

const cli_cmd cli_cmd_import = {"import", "HDF5 dataset -> frame (Blosc2 chunks copied as stored)",
                                help, cmd_import};

/* Frame writer: the in-memory model (header, metalayers, index; this file
 * owns the writer's w->m) and the chunk operations.  Chunk bytes are
 * written when an operation is called (at the end of a contiguous frame's
 * data through frame_commit.c, or to a new chunk file of a sparse frame
 * through frame_sparse.c), always to space no committed state references;
 * the index and header only change on disk at commit (frame_commit.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_frame_lock.h"
#include "fwriter_internal.h"

/* ---- the model ------------------------------------------------------------------ */

int b2s_fw_model_init(fw_model *m) {
  b2s_frame_metas_init(&m->metas);
  b2s_frame_metas_init(&m->vlmetas);
  m->ctx = b2s_ctx_new();
  return m->ctx != NULL ? 0 : B2S_E_NOMEM;
}

void b2s_fw_model_fini(fw_model *m) {
  b2s_frame_metas_fini(&m->metas);
  b2s_frame_metas_fini(&m->vlmetas);
  b2s_ctx_free(m->ctx);
  free(m->index);
  m->ctx = NULL;
  m->index = NULL;
}

static void header_defaults(b2s_frame_header *h, const b2s_cparams *cp,
                            bool sparse) {
  memset(h, 0, sizeof *h);
  h->general_flags = 2 | B2S_FRAME_GF_OFFSETS64;
  h->frame_type = sparse ? B2S_FRAME_TYPE_SPARSE : B2S_FRAME_TYPE_CONTIGUOUS;
  h->codec_flags = (uint8_t)(cp->codec | cp->clevel << 4);
  h->other_flags = (uint8_t)(cp->splitmode - 1);
  h->typesize = cp->typesize;
  h->blocksize = cp->blocksize;
  h->chunksize = -1;
  h->nthreads_c = h->nthreads_d = 1;
  h->nfilters = B2S_FRAME_NFILTERS;
  memcpy(h->filters, cp->filters, B2S_FRAME_NFILTERS);
  h->udcodec = (uint8_t)cp->codec;
  memcpy(h->filters_meta, cp->filters_meta, B2S_FRAME_NFILTERS);
  h->other_flags2 = cp->use_dict ? 1 : 0;
}

/* Compression defaults recorded in a header. */
static b2s_cparams header_cparams(const b2s_frame_header *h) {
  b2s_cparams cp;
  b2s_frame_header_cparams(h, &cp);   /* a wild typesize reads as 1 */
  return cp;
}

static int copy_metas(b2s_frame_metas *dst, const b2s_frame_metas *src) {
  for (int32_t i = 0; src != NULL && i < src->n; i++) {
    int rc = b2s_frame_metas_add(dst, src->items[i].name, src->items[i].content,
                                 src->items[i].len);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* A b2nd frame made without a block size gets its array's: c-blosc2 makes
 * a zeros chunk kept in the index with the frame's block size, and reads
 * b2nd slices with a mask of the array's blocks, which a chunk of other
 * blocks fails.  (python-blosc2's arrays have it so.) */
static void b2nd_blocksize(fw_model *m) {
  int k = b2s_frame_metas_find(&m->metas, "b2nd");
  b2s_b2nd nd;
  if (m->hdr.blocksize != 0 || k < 0 ||
      b2s_b2nd_parse(m->metas.items[k].content, (size_t)m->metas.items[k].len,
                     0, &nd, NULL) < 0 || nd.ndim < 1)
    return;
  int64_t b = m->hdr.typesize > 0 ? m->hdr.typesize : 1;
  for (int d = 0; d < nd.ndim && b <= B2S_MAX_BLOCKSIZE; d++)
    b *= nd.blockshape[d] > 0 ? nd.blockshape[d] : 1;
  if (b <= B2S_MAX_BLOCKSIZE)
    m->hdr.blocksize = (int32_t)b;
}

int b2s_fw_model_new(b2s_fwriter *w, const b2s_frame_metas *metas) {
  fw_model *m = &w->m;
  header_defaults(&m->hdr, &w->opts.cparams, w->f.sparse);
  int rc = copy_metas(&m->metas, metas);
  if (rc < 0)
    return rc;
  b2nd_blocksize(m);
  /* negative when the metalayers do not fit: the header write says so */
  m->base = b2s_frame_header_size(&m->metas);
  return 0;
}

int b2s_fw_model_load(b2s_fwriter *w, b2s_frame *f, bool empty) {
  fw_model *m = &w->m;
  m->hdr = *b2s_frame_header_get(f);
  int rc = copy_metas(&m->metas, b2s_frame_metalayers(f));
  if (rc == 0)
    rc = copy_metas(&m->vlmetas, b2s_frame_vlmetalayers(f));
  int64_t n = b2s_frame_nchunks(f);
  m->index = malloc((size_t)(n > 0 ? n : 1) * sizeof *m->index);
  if (rc == 0 && m->index == NULL)
    rc = B2S_E_NOMEM;
  if (rc < 0)
    return rc;
  if (n > 0 && !empty)
    memcpy(m->index, b2s_frame_index(f), (size_t)n * sizeof *m->index);
  m->cap = n;
  m->n = empty ? 0 : n;
  if (empty)
    m->hdr.nbytes = 0;
  m->base = b2s_frame_header_size(&m->metas);
  return m->base < 0 ? (int)m->base : 0;
}

static int mark_ids(b2s_fwriter *w) {
  return b2s_fw_chunkfiles_mark(&w->cf, w->m.index, w->m.n);
}

int b2s_fw_model_resume(b2s_fwriter *w, int64_t stored_bytes) {
  fw_model *m = &w->m;
  m->stored_bytes = stored_bytes;
  int rc = w->f.sparse ? mark_ids(w) : 0;
  if (rc < 0 || m->n == 0)
    return rc;
  /* last chunk's size for the chunksize rules; a lost chunk file (which
   * recovery is about to drop) counts as a full chunk */
  int32_t cb;
  rc = b2s_fw_entry_sizes(w, m->n - 1, &m->last_nbytes, &cb);
  if (rc == -ENOENT && w->f.sparse) {
    m->last_nbytes = m->hdr.chunksize;
    rc = 0;
  }
  return rc;
}

static int index_reserve(b2s_fwriter *w, int64_t n) {
  if (n <= w->m.cap)
    return 0;
  if (n > (int64_t)(INT32_MAX - B2S_HEADER_LEN) / 8)
    return B2S_E_TOO_BIG;   /* the index chunk is limited like any chunk */
  int64_t cap = w->m.cap ? w->m.cap * 2 : 1024;
  while (cap < n)
    cap *= 2;
  int64_t *p = realloc(w->m.index, (size_t)cap * sizeof *p);
  if (p == NULL)
    return B2S_E_NOMEM;
  w->m.index = p;
  w->m.cap = cap;
  return 0;
}

/* ---- storing chunks ------------------------------------------------------------ */

/* Write a stored chunk where no committed state looks; *entry gets its
 * index value. */
static int store_chunk(b2s_fwriter *w, const void *chunk, int32_t cbytes,
                       int64_t *entry) {
  int rc;
  if (w->f.sparse) {
    rc = b2s_fw_chunkfiles_store(&w->cf, &w->io, w->f.dirfd,
                                 w->opts.sync == B2S_SYNC_FULL, chunk,
                                 (size_t)cbytes, entry);
  } else {
    rc = b2s_fw_make_room(w, cbytes);
    if (rc == 0)
      rc = b2s_fw_data_append(w, chunk, (size_t)cbytes, entry);
  }
  if (rc < 0)
    return rc;
  w->m.stored_bytes += cbytes;
  return 0;
}

/* Chunk i of f into w (see b2s_fw_adopt_chunks). */
static int adopt_chunk(b2s_fwriter *w, b2s_frame *f, int64_t i,
                       bool lost_ok) {
  int64_t e = b2s_frame_index(f)[i];
  int32_t cb = 0;
  int rc = e >= 0 ? b2s_frame_chunk_sizes(f, i, &cb, NULL) : 0;
  if (rc == -ENOENT && w->f.sparse && lost_ok)
    rc = 0;
  if (rc == 0 && e >= 0 && !w->f.sparse) {
    rc = b2s_fw_make_room(w, cb);
    uint8_t *buf = rc == 0 ? b2s_fw_scratch(w, (size_t)cb) : NULL;
    if (rc == 0 && buf == NULL)
      rc = B2S_E_NOMEM;
    if (rc == 0)
      rc = b2s_frame_chunk_read(f, i, buf, (size_t)cb);
    if (rc >= 0)
      rc = b2s_fw_data_append(w, buf, (size_t)cb, &e);
  }
  if (rc < 0)
    return rc;
  w->m.index[i] = e;
  w->m.n = i + 1;
  w->m.stored_bytes += cb;
  return 0;
}

int b2s_fw_adopt_chunks(b2s_fwriter *w, b2s_frame *f, bool lost_ok) {
  int64_t n = b2s_frame_nchunks(f);
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < n; i++)
    rc = adopt_chunk(w, f, i, lost_ok);
  if (rc < 0)
    return rc;
  w->m.hdr = *b2s_frame_header_get(f);   /* nbytes too, now */
  b2s_fw_touch(w, 0);
  return w->f.sparse ? mark_ids(w) : 0;
}

/* nbytes and cbytes (0 for special entries) of chunk i as stored now. */
int b2s_fw_entry_sizes(b2s_fwriter *w, int64_t i, int32_t *nbytes,
                       int32_t *cbytes) {
  int64_t e = w->m.index[i];
  if (e < 0) {
    int64_t cs = w->m.hdr.chunksize;
    *cbytes = 0;
    *nbytes = (int32_t)cs;
    if (i == w->m.n - 1 && cs > 0 && w->m.hdr.nbytes % cs != 0)
      *nbytes = (int32_t)(w->m.hdr.nbytes % cs);
    return 0;
  }
  uint8_t h[B2S_HEADER_LEN];
  int rc;
  if (w->f.sparse) {
    char name[32];
    snprintf(name, sizeof name, "%08X.chunk", (unsigned)e);
    int fd = openat(w->f.dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return -errno;
    rc = b2s_fio_pread(fd, h, sizeof h, 0);
    close(fd);
  } else {
    rc = b2s_fw_data_flush(w);
    if (rc == 0)
      rc = b2s_fio_pread(w->f.fd, h, sizeof h, w->m.base + e);
  }
  if (rc < 0)
    return rc;
  b2s_chunk_info ci;
  rc = b2s_chunk_info_get(h, sizeof h, &ci);
  if (rc == B2S_E_CBYTES || rc == B2S_E_SHORT || rc == 0) {
    /* only the header was read: take its sizes */
    *nbytes = (int32_t)(h[4] | h[5] << 8 | h[6] << 16 | (uint32_t)h[7] << 24);
    *cbytes = (int32_t)(h[12] | h[13] << 8 | h[14] << 16 | (uint32_t)h[15] << 24);
    return 0;
  }
  return rc;
}

/* Whether chunk i's storage is also a neighbour's (b2s_fwriter_append_again
 * puts the entries of one stored chunk next to each other). */
static bool entry_shared(const b2s_fwriter *w, int64_t i) {
  int64_t e = w->m.index[i];
  const fw_model *m = &w->m;
  return (i > 0 && m->index[i - 1] == e) ||
         (i + 1 < m->n && m->index[i + 1] == e);
}

/* Forget chunk i's storage: its bytes become a hole (cframe) or its file
 * is removed after the next commit (sparse); storage another entry still
 * uses stays. */
static int release_entry(b2s_fwriter *w, int64_t i, int32_t *old_nbytes) {
  int32_t cb = 0;
  int rc = b2s_fw_entry_sizes(w, i, old_nbytes, &cb);
  if (rc < 0)
    return rc;
  if (w->m.index[i] >= 0 && !entry_shared(w, i)) {
    w->m.stored_bytes -= cb;
    if (w->f.sparse)
      rc = b2s_fw_chunkfiles_release(&w->cf, w->m.index[i]);
  }
  return rc;
}

/* ---- chunksize bookkeeping (spec 4.9) ------------------------------------------ */

/* A repeated-value chunk standing for a special chunk of nbytes (c-blosc2
 * misreads special index entries once chunks vary in size). */
static int special_as_chunk(b2s_fwriter *w, int kind, int32_t nbytes,
                            int32_t typesize, uint8_t *out) {
  b2s_cparams cp = header_cparams(&w->m.hdr);
  cp.typesize = typesize;
  return b2s_chunk_special_as_repeat(&cp, kind, nbytes, out,
                                     B2S_REPEAT_CHUNK_MAX);
}

static int go_variable(b2s_fwriter *w) {
  if (w->m.hdr.chunksize == 0)
    return 0;
  for (int64_t i = 0; i < w->m.n; i++) {
    int64_t e = w->m.index[i];
    if (e >= 0)
      continue;
    int32_t nb = 0, cb = 0;
    uint8_t chunk[B2S_REPEAT_CHUNK_MAX];
    int rc = b2s_fw_entry_sizes(w, i, &nb, &cb);
    if (rc >= 0)
      rc = special_as_chunk(w, b2s_frame_entry_kind(e), nb, w->m.hdr.typesize,
                            chunk);
    if (rc >= 0)
      rc = store_chunk(w, chunk, rc, &w->m.index[i]);
    if (rc < 0)
      return rc;
    b2s_fw_touch(w, i);
  }
  w->m.hdr.chunksize = 0;
  w->m.hdr.general_flags =
      (uint8_t)((w->m.hdr.general_flags & ~0x0f) | 3 | B2S_FRAME_GF_VARLEN);
  return 0;
}

/* Apply c-blosc2's rules for a chunk of nbytes placed at pos (n = before). */
static int chunksize_rules(b2s_fwriter *w, int64_t pos, int32_t nbytes,
                           bool update) {
  int32_t cs = w->m.hdr.chunksize;
  if (w->m.n == 0 || (update && w->m.n == 1)) {
    if (cs != 0)
      w->m.hdr.chunksize = nbytes;
    return 0;
  }
  if (cs <= 0)
    return 0;
  bool at_end = update ? pos == w->m.n - 1 : pos == w->m.n;
  if (nbytes > cs || (!update && w->m.last_nbytes < cs) ||
      (!at_end && nbytes != cs))
    return go_variable(w);
  return 0;
}

/* ---- operations ------------------------------------------------------------------ */

typedef struct incoming {
  b2s_chunk_info ci;
  const void *chunk;
  int32_t cbytes;
  uint8_t repl[B2S_REPEAT_CHUNK_MAX];
} incoming;

static int check_chunk(b2s_fwriter *w, const void *chunk, size_t cbytes,
                       incoming *in) {
  if (w == NULL || chunk == NULL || cbytes > INT32_MAX)
    return B2S_E_ARG;
  int rc = b2s_chunk_info_get(chunk, cbytes, &in->ci);
  if (rc < 0)
    return rc;
  if (in->ci.cbytes != (int32_t)cbytes || in->ci.nbytes == 0 || in->ci.vl_blocks)
    return B2S_E_ARG;   /* VL-block chunks and empty chunks are not written */
  in->chunk = chunk;
  in->cbytes = (int32_t)cbytes;
  return 0;
}

/* Store `in` for position pos: a special entry when the frame can hold
 * one, else the chunk (a repeated-value chunk for specials). */
static int place(b2s_fwriter *w, incoming *in, int64_t *entry) {
  int kind = in->ci.special;
  bool special = kind == B2S_SPECIAL_ZERO || kind == B2S_SPECIAL_NAN ||
                 kind == B2S_SPECIAL_UNINIT;
  if (special && w->m.hdr.chunksize > 0 &&
      (kind != B2S_SPECIAL_NAN || w->m.hdr.typesize == in->ci.typesize)) {
    *entry = kind == B2S_SPECIAL_ZERO ? B2S_FRAME_ENTRY_ZERO
             : kind == B2S_SPECIAL_NAN ? B2S_FRAME_ENTRY_NAN
                                       : B2S_FRAME_ENTRY_UNINIT;
    return 0;
  }
  if (special) {
    int rc = special_as_chunk(w, kind, in->ci.nbytes, w->m.hdr.typesize,
                              in->repl);
    if (rc < 0)
      return rc;
    in->chunk = in->repl;
    in->cbytes = rc;
  }
  return store_chunk(w, in->chunk, in->cbytes, entry);
}

int b2s_fwriter_insert(b2s_fwriter *w, int64_t pos, const void *chunk,
                       size_t cbytes) {
  incoming in;
  int rc = check_chunk(w, chunk, cbytes, &in);
  if (rc < 0)
    return rc;
  if (pos < 0 || pos > w->m.n)
    return B2S_E_NCHUNK;
  rc = index_reserve(w, w->m.n + 1);
  if (rc == 0)
    rc = chunksize_rules(w, pos, in.ci.nbytes, false);
  int64_t entry;
  if (rc == 0)
    rc = place(w, &in, &entry);
  if (rc < 0)
    return rc;
  memmove(w->m.index + pos + 1, w->m.index + pos,
          (size_t)(w->m.n - pos) * sizeof *w->m.index);
  w->m.index[pos] = entry;
  if (pos == w->m.n)
    w->m.last_nbytes = in.ci.nbytes;
  w->m.n++;
  w->m.hdr.nbytes += in.ci.nbytes;
  b2s_fw_touch(w, pos);
  return 0;
}

int64_t b2s_fwriter_append(b2s_fwriter *w, const void *chunk, size_t cbytes) {
  if (w == NULL)
    return B2S_E_ARG;
  int rc = b2s_fwriter_insert(w, w->m.n, chunk, cbytes);
  return rc < 0 ? rc : w->m.n;
}

int64_t b2s_fwriter_append_again(b2s_fwriter *w) {
  if (w == NULL || w->m.n == 0 || w->m.index[w->m.n - 1] < 0)
    return B2S_E_ARG;
  int32_t nb = w->m.last_nbytes;
  int rc = index_reserve(w, w->m.n + 1);
  if (rc == 0)
    rc = chunksize_rules(w, w->m.n, nb, false);
  if (rc < 0)
    return rc;
  /* chunksize_rules may store special entries, never the stored last one */
  w->m.index[w->m.n] = w->m.index[w->m.n - 1];
  w->m.n++;
  w->m.hdr.nbytes += nb;
  b2s_fw_touch(w, w->m.n - 1);
  return w->m.n;
}

int64_t b2s_fwriter_append_buffer(b2s_fwriter *w, b2s_ctx *ctx,
                                  const void *src, int32_t nbytes) {
  if (w == NULL || nbytes <= 0 || nbytes > B2S_MAX_BUFFERSIZE)
    return B2S_E_ARG;
  b2s_cparams cp = header_cparams(&w->m.hdr);
  int32_t cap = nbytes + B2S_MAX_OVERHEAD;
  uint8_t *buf = b2s_fw_scratch(w, (size_t)cap);
  if (buf == NULL)
    return B2S_E_NOMEM;
  int rc = b2s_compress(ctx ? ctx : w->m.ctx, &cp, src, nbytes, buf, cap);
  if (rc < 0)
    return rc;
  /* store_chunk may reuse the scratch buffer (moves): hand over a copy. */
  uint8_t *chunk = malloc((size_t)rc);
  if (chunk == NULL)
    return B2S_E_NOMEM;
  memcpy(chunk, buf, (size_t)rc);
  int64_t r = b2s_fwriter_append(w, chunk, (size_t)rc);
  free(chunk);
  return r;
}

int b2s_fwriter_update(b2s_fwriter *w, int64_t pos, const void *chunk,
                       size_t cbytes) {
  incoming in;
  int rc = check_chunk(w, chunk, cbytes, &in);
  if (rc < 0)
    return rc;
  if (pos < 0 || pos >= w->m.n)
    return B2S_E_NCHUNK;
  int32_t old_nb = 0;
  rc = release_entry(w, pos, &old_nb);
  if (rc == 0)
    rc = chunksize_rules(w, pos, in.ci.nbytes, true);
  int64_t entry;
  if (rc == 0)
    rc = place(w, &in, &entry);
  if (rc < 0)
    return rc;
  w->m.index[pos] = entry;
  w->m.hdr.nbytes += in.ci.nbytes - old_nb;
  if (pos == w->m.n - 1)
    w->m.last_nbytes = in.ci.nbytes;
  b2s_fw_touch(w, pos);
  return 0;
}

static int refresh_last(b2s_fwriter *w) {
  int32_t nb = 0, cb;
  int rc = w->m.n > 0 ? b2s_fw_entry_sizes(w, w->m.n - 1, &nb, &cb) : 0;
  if (rc == 0)
    w->m.last_nbytes = nb;
  return rc;
}

int b2s_fwriter_delete(b2s_fwriter *w, int64_t pos) {
  if (w == NULL)
    return B2S_E_ARG;
  if (pos < 0 || pos >= w->m.n)
    return B2S_E_NCHUNK;
  int32_t old_nb = 0;
  int rc = release_entry(w, pos, &old_nb);
  if (rc < 0)
    return rc;
  memmove(w->m.index + pos, w->m.index + pos + 1,
          (size_t)(w->m.n - pos - 1) * sizeof *w->m.index);
  w->m.n--;
  w->m.hdr.nbytes -= old_nb;
  b2s_fw_touch(w, pos);
  return refresh_last(w);
}

int b2s_fw_drop(b2s_fwriter *w, const bool *gone) {
  fw_model *m = &w->m;
  int32_t *nb = malloc((size_t)(m->n > 0 ? m->n : 1) * sizeof *nb);
  if (nb == NULL)
    return B2S_E_NOMEM;
  /* sizes before the index changes: a special entry's size depends on
   * its position */
  int64_t nbytes = 0, stored = 0, first = -1, k = 0;
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < m->n; i++) {
    int32_t cb = 0;
    if (!gone[i] && (rc = b2s_fw_entry_sizes(w, i, &nb[i], &cb)) == 0) {
      nbytes += nb[i];
      stored += cb;
    }
  }
  for (int64_t i = 0; rc == 0 && i < m->n; i++) {
    if (gone[i] && first < 0)
      first = i;
    if (!gone[i]) {
      m->index[k] = m->index[i];
      m->last_nbytes = nb[i];
      k++;
    }
  }
  free(nb);
  if (rc < 0 || first < 0)
    return rc;
  m->n = k;
  m->hdr.nbytes = nbytes;
  m->stored_bytes = stored;
  b2s_fw_touch(w, first);
  return 0;
}

int b2s_fwriter_reorder(b2s_fwriter *w, const int64_t *order, int64_t n) {
  if (w == NULL || (order == NULL && n > 0) || n != w->m.n)
    return B2S_E_ARG;
  uint8_t *seen = calloc((size_t)n + 1, 1);
  int64_t *next = malloc(((size_t)n + 1) * sizeof *next);
  int rc = seen && next ? 0 : B2S_E_NOMEM;
  for (int64_t i = 0; rc == 0 && i < n; i++) {
    if (order[i] < 0 || order[i] >= n || seen[order[i]])
      rc = B2S_E_ARG;
    else
      seen[order[i]] = 1;
  }
  /* A short last chunk moved inside the frame breaks a fixed chunksize. */
  if (rc == 0 && n > 0 && order[n - 1] != n - 1 && w->m.hdr.chunksize > 0 &&
      w->m.last_nbytes < w->m.hdr.chunksize)
    rc = go_variable(w);
  if (rc == 0) {
    int64_t first = 0;
    while (first < n && order[first] == first)
      first++;
    for (int64_t i = 0; i < n; i++)
      next[i] = w->m.index[order[i]];
    memcpy(w->m.index, next, (size_t)n * sizeof *next);
    b2s_fw_touch(w, first);
    rc = refresh_last(w);
  }
  free(seen);
  free(next);
  return rc;
}

/* ---- metadata ------------------------------------------------------------------ */

int b2s_fwriter_meta_update(b2s_fwriter *w, const char *name,
                            const void *content, int32_t len) {
  if (w == NULL || name == NULL || (content == NULL && len > 0))
    return B2S_E_ARG;
  int i = b2s_frame_metas_find(&w->m.metas, name);
  if (i < 0)
    return i;
  if (w->m.metas.items[i].len != len)
    return B2S_E_ARG;
  if (len > 0)
    memcpy(w->m.metas.items[i].content, content, (size_t)len);
  b2s_fw_touch_metas(w);
  return 0;
}

static int vlmeta_put(b2s_fwriter *w, const char *name, const void *chunk,
                      int32_t cbytes) {
  int i = b2s_frame_metas_find(&w->m.vlmetas, name);
  if (i == B2S_E_NOTFOUND) {
    if (w->m.vlmetas.n >= 16)
      return B2S_E_TOO_BIG;   /* c-blosc2 cannot write beyond 16 */
    i = b2s_frame_metas_add(&w->m.vlmetas, name, chunk, cbytes);
    return i < 0 ? i : 0;
  }
  if (i < 0)
    return i;
  uint8_t *p = malloc((size_t)cbytes);
  if (p == NULL)
    return B2S_E_NOMEM;
  memcpy(p, chunk, (size_t)cbytes);
  free(w->m.vlmetas.items[i].content);
  w->m.vlmetas.items[i].content = p;
  w->m.vlmetas.items[i].len = cbytes;
  return 0;
}

int b2s_fwriter_vlmeta_set(b2s_fwriter *w, const char *name,
                           const void *content, int32_t len) {
  if (w == NULL || name == NULL || len < 0 || (content == NULL && len > 0) ||
      len > B2S_MAX_BUFFERSIZE)
    return B2S_E_ARG;
  /* c-blosc2's vlmetalayer defaults: blosclz, clevel 5, typesize 8, shuffle. */
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.codec = B2S_CODEC_BLOSCLZ;
  int32_t cap = len + B2S_MAX_OVERHEAD;
  uint8_t *chunk = malloc((size_t)cap);
  if (chunk == NULL)
    return B2S_E_NOMEM;
  int rc = b2s_compress(w->m.ctx, &cp, content ? content : "", len, chunk, cap);
  if (rc > 0)
    rc = vlmeta_put(w, name, chunk, rc);
  free(chunk);
  if (rc == 0)
    b2s_fw_touch_trailer(w);
  return rc;
}

int b2s_fwriter_vlmeta_delete(b2s_fwriter *w, const char *name) {
  if (w == NULL || name == NULL)
    return B2S_E_ARG;
  int i = b2s_frame_metas_find(&w->m.vlmetas, name);
  if (i < 0)
    return i;
  free(w->m.vlmetas.items[i].content);
  memmove(w->m.vlmetas.items + i, w->m.vlmetas.items + i + 1,
          (size_t)(w->m.vlmetas.n - i - 1) * sizeof *w->m.vlmetas.items);
  w->m.vlmetas.n--;
  b2s_fw_touch_trailer(w);
  return 0;
}

const b2s_frame_metas *b2s_fwriter_vlmetas(const b2s_fwriter *w) {
  return w ? &w->m.vlmetas : NULL;
}

int b2s_frame_metas_add_b2nd(b2s_frame_metas *metas, const b2s_b2nd *nd) {
  if (metas == NULL || nd == NULL)
    return B2S_E_ARG;
  b2s_mpbuf b = {0};
  int rc = b2s_b2nd_write(nd, &b);
  if (rc >= 0)
    rc = b2s_frame_metas_add(metas, "b2nd", b.data, (int32_t)b.len);
  b2s_mpbuf_fini(&b);
  return rc < 0 ? rc : 0;
}

/* ---- state ------------------------------------------------------------------- */

int64_t b2s_fwriter_nchunks(const b2s_fwriter *w) { return w ? w->m.n : 0; }

const b2s_frame_header *b2s_fwriter_header(const b2s_fwriter *w) {
  return w ? &w->m.hdr : NULL;
}

int64_t b2s_fwriter_data_end(const b2s_fwriter *w) {
  return w && !w->f.sparse ? w->m.base + w->lay.data_end : 0;
}

bool b2s_fwriter_locked(const b2s_fwriter *w) {
  return w != NULL && b2s_lock_held(w->f.lockfd);
}

bool b2s_fwriter_direct_io(const b2s_fwriter *w) {
  return w != NULL && w->dio != NULL;
}

size_t b2s_fwriter_stage_bytes(const b2s_fwriter *w) {
  return w != NULL ? b2s_dio_stage_bytes(w->dio) : 0;
}

void b2s_fwriter_set_write_limit(b2s_fwriter *w, int64_t bytes) {
  if (w == NULL)
    return;
  b2s_fio_set_limit(&w->io, bytes);
}

int b2s_fwriter_stats_get(const b2s_fwriter *w, b2s_fwriter_stats *st) {
  if (w == NULL || st == NULL)
    return B2S_E_ARG;
  struct stat sb;
  if (fstat(w->f.fd, &sb) < 0)
    return -errno;
  int64_t index_file = (int64_t)sb.st_size;
  int64_t slot = w->lay.active >= 0 ? w->lay.slot_len[w->lay.active]
                                    : (int64_t)w->c.trailer.len;
  *st = (b2s_fwriter_stats){.nchunks = w->m.n,
                            .nbytes = w->m.hdr.nbytes,
                            .stored_bytes = w->m.stored_bytes,
                            .commits = (int64_t)w->c.seq,
                            .bytes_written = b2s_fio_written(&w->io)};
  if (w->f.sparse) {
    st->file_bytes = index_file + w->m.stored_bytes;
    st->hole_bytes = index_file - w->m.base - slot;
  } else {
    st->file_bytes = index_file;
    st->hole_bytes = index_file - w->m.base - w->m.stored_bytes - slot;
  }
  return 0;
}

/* Frame writer: the in-memory model (header, metalayers, index) and the
 * chunk operations.  Chunk bytes are written when an operation is called
 * (at the end of a contiguous frame's data, or to a new chunk file of a
 * sparse frame), always to space no committed state references; the index
 * and header only change on disk at commit (frame_commit.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frame_helper.h"
#include "frame_io.h"
#include "fwriter_internal.h"

/* ---- model helpers ------------------------------------------------------------ */

int64_t b2s_fw_natural_base(const b2s_frame_metas *metas) {
  return b2s_frame_header_size(metas);
}

/* The index changed at position pos: slots must rewrite from there. */
void b2s_fw_touch(b2s_fwriter *w, int64_t pos) {
  for (int s = 0; s < 2; s++)
    if (w->valid[s] > pos)
      w->valid[s] = pos;
  w->dirty = true;
}

void b2s_fw_header_defaults(b2s_frame_header *h, const b2s_cparams *cp,
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

b2s_fwriter *b2s_fw_alloc(bool sparse, const b2s_fwriter_opts *opts) {
  b2s_fwriter *w = calloc(1, sizeof *w);
  if (w == NULL)
    return NULL;
  w->sparse = sparse;
  w->fd = w->dirfd = w->dfd = w->lockfd = -1;
  w->opts = opts ? *opts : B2S_FWRITER_OPTS_DEFAULTS;
  b2s_frame_metas_init(&w->metas);
  b2s_frame_metas_init(&w->vlmetas);
  w->active = -1;
  w->write_limit = -1;
  w->trailer_dirty = true;
  w->ctx = b2s_ctx_new();
  if (w->ctx == NULL) {
    free(w);
    return NULL;
  }
  return w;
}

void b2s_fwriter_free(b2s_fwriter *w) {
  if (w == NULL)
    return;
  for (int i = 0; i < w->nsync; i++)
    close(w->sync_fds[i]);
  b2s_fw_helper_free(w->helper);   /* first: it may be writing with dfd */
  w->helper = NULL;
  b2s_fw_dio_close(w);
  if (w->fd >= 0)
    close(w->fd);
  if (w->dirfd >= 0)
    close(w->dirfd);
  if (w->lockfd >= 0)      /* last: the frame stays ours until all is closed */
    close(w->lockfd);
  b2s_frame_metas_fini(&w->metas);
  b2s_frame_metas_fini(&w->vlmetas);
  b2s_mpbuf_fini(&w->trailer);
  b2s_ctx_free(w->ctx);
  free(w->index);
  free(w->ids);
  free(w->unlink_ids);
  free(w->sync_fds);
  free(w->buf);
  free(w);
}

int b2s_fw_copy_metas(b2s_frame_metas *dst, const b2s_frame_metas *src) {
  for (int32_t i = 0; src != NULL && i < src->n; i++) {
    int rc = b2s_frame_metas_add(dst, src->items[i].name, src->items[i].content,
                                 src->items[i].len);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int index_reserve(b2s_fwriter *w, int64_t n) {
  if (n <= w->cap)
    return 0;
  if (n > (int64_t)(INT32_MAX - B2S_HEADER_LEN) / 8)
    return B2S_E_TOO_BIG;   /* the index chunk is limited like any chunk */
  int64_t cap = w->cap ? w->cap * 2 : 1024;
  while (cap < n)
    cap *= 2;
  int64_t *p = realloc(w->index, (size_t)cap * sizeof *p);
  if (p == NULL)
    return B2S_E_NOMEM;
  w->index = p;
  w->cap = cap;
  return 0;
}

/* ---- sparse chunk ids --------------------------------------------------------- */

int b2s_fw_id_mark(b2s_fwriter *w, int64_t id) {
  int64_t word = id / 64;
  if (word >= w->ids_words) {
    int64_t nw = w->ids_words ? w->ids_words * 2 : 64;
    while (nw <= word)
      nw *= 2;
    uint64_t *p = realloc(w->ids, (size_t)nw * sizeof *p);
    if (p == NULL)
      return B2S_E_NOMEM;
    memset(p + w->ids_words, 0, (size_t)(nw - w->ids_words) * sizeof *p);
    w->ids = p;
    w->ids_words = nw;
  }
  w->ids[word] |= UINT64_C(1) << (id % 64);
  return 0;
}

/* The lowest id not in use keeps ids small, so c-blosc2's check
 * id <= cbytes - 32 holds (spec 5.4). */
static int64_t id_alloc(b2s_fwriter *w) {
  int64_t id = w->id_hint;
  while (id / 64 < w->ids_words && (w->ids[id / 64] >> (id % 64) & 1))
    id++;
  if (id > (int64_t)UINT32_MAX)
    return B2S_E_CHUNK_ID;
  int rc = b2s_fw_id_mark(w, id);
  if (rc < 0)
    return rc;
  w->id_hint = id + 1;
  return id;
}

static int queue_unlink(b2s_fwriter *w, int64_t id) {
  if (w->nunlink == w->unlink_cap) {
    int64_t cap = w->unlink_cap ? w->unlink_cap * 2 : 16;
    int64_t *p = realloc(w->unlink_ids, (size_t)cap * sizeof *p);
    if (p == NULL)
      return B2S_E_NOMEM;
    w->unlink_ids = p;
    w->unlink_cap = cap;
  }
  w->unlink_ids[w->nunlink++] = id;
  return 0;
}

static int keep_for_sync(b2s_fwriter *w, int fd) {
  if (w->opts.sync != B2S_SYNC_FULL)
    return close(fd) < 0 ? -errno : 0;
  if (w->nsync == w->sync_cap) {
    int cap = w->sync_cap ? w->sync_cap * 2 : 16;
    int *p = realloc(w->sync_fds, (size_t)cap * sizeof *p);
    if (p == NULL) {
      close(fd);
      return B2S_E_NOMEM;
    }
    w->sync_fds = p;
    w->sync_cap = cap;
  }
  w->sync_fds[w->nsync++] = fd;
  return 0;
}

static int write_chunk_file(b2s_fwriter *w, int64_t id, const void *chunk,
                            size_t cbytes) {
  char name[32];
  snprintf(name, sizeof name, "%08X.chunk", (unsigned)id);
  int fd = openat(w->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  0666);
  if (fd < 0)
    return -errno;
  int rc = b2s_fw_pwrite(w, fd, chunk, cbytes, 0);
  if (rc < 0) {
    close(fd);
    return rc;
  }
  return keep_for_sync(w, fd);
}

/* ---- storing chunks ------------------------------------------------------------ */

/* Write a stored chunk where no committed state looks; *entry gets its
 * index value. */
static int store_chunk(b2s_fwriter *w, const void *chunk, int32_t cbytes,
                       int64_t *entry) {
  int rc;
  if (w->sparse) {
    int64_t id = id_alloc(w);
    if (id < 0)
      return (int)id;
    rc = write_chunk_file(w, id, chunk, (size_t)cbytes);
    if (rc < 0) {
      w->ids[id / 64] &= ~(UINT64_C(1) << (id % 64));
      w->id_hint = id < w->id_hint ? id : w->id_hint;
      return rc;
    }
    *entry = id;
  } else {
    rc = b2s_fw_make_room(w, cbytes + b2s_fw_dio_slack(w));
    if (rc == 0)
      rc = b2s_fw_data_write(w, chunk, (size_t)cbytes, w->base + w->data_end);
    if (rc < 0)
      return rc;
    *entry = w->data_end;
    w->data_end += cbytes;
    if (w->base + w->data_end > w->file_end)
      w->file_end = w->base + w->data_end;
  }
  w->stored_bytes += cbytes;
  return 0;
}

/* nbytes and cbytes (0 for special entries) of chunk i as stored now. */
int b2s_fw_entry_sizes(b2s_fwriter *w, int64_t i, int32_t *nbytes,
                   int32_t *cbytes) {
  int64_t e = w->index[i];
  if (e < 0) {
    int64_t cs = w->hdr.chunksize;
    *cbytes = 0;
    *nbytes = (int32_t)cs;
    if (i == w->n - 1 && cs > 0 && w->hdr.nbytes % cs != 0)
      *nbytes = (int32_t)(w->hdr.nbytes % cs);
    return 0;
  }
  uint8_t h[B2S_HEADER_LEN];
  int rc;
  if (w->sparse) {
    char name[32];
    snprintf(name, sizeof name, "%08X.chunk", (unsigned)e);
    int fd = openat(w->dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return -errno;
    rc = b2s_fw_pread(fd, h, sizeof h, 0);
    close(fd);
  } else {
    rc = b2s_fw_dio_flush(w);
    if (rc == 0)
      rc = b2s_fw_pread(w->fd, h, sizeof h, w->base + e);
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
  int64_t e = w->index[i];
  return (i > 0 && w->index[i - 1] == e) || (i + 1 < w->n && w->index[i + 1] == e);
}

/* Forget chunk i's storage: its bytes become a hole (cframe) or its file
 * is removed after the next commit (sparse); storage another entry still
 * uses stays. */
static int release_entry(b2s_fwriter *w, int64_t i, int32_t *old_nbytes) {
  int32_t cb = 0;
  int rc = b2s_fw_entry_sizes(w, i, old_nbytes, &cb);
  if (rc < 0)
    return rc;
  if (w->index[i] >= 0 && !entry_shared(w, i)) {
    w->stored_bytes -= cb;
    if (w->sparse)
      rc = queue_unlink(w, w->index[i]);
  }
  return rc;
}

/* ---- chunksize bookkeeping (spec 4.9) ------------------------------------------ */

/* A repeated-value chunk standing for a special chunk of nbytes (c-blosc2
 * misreads special index entries once chunks vary in size). */
static int special_as_chunk(b2s_fwriter *w, int kind, int32_t nbytes,
                            int32_t typesize, uint8_t *out) {
  b2s_cparams cp = header_cparams(&w->hdr);
  cp.typesize = typesize;
  return b2s_chunk_special_as_repeat(&cp, kind, nbytes, out,
                                     B2S_REPEAT_CHUNK_MAX);
}

static int go_variable(b2s_fwriter *w) {
  if (w->hdr.chunksize == 0)
    return 0;
  for (int64_t i = 0; i < w->n; i++) {
    int64_t e = w->index[i];
    if (e >= 0)
      continue;
    int32_t nb = 0, cb = 0;
    uint8_t chunk[B2S_REPEAT_CHUNK_MAX];
    int rc = b2s_fw_entry_sizes(w, i, &nb, &cb);
    if (rc >= 0)
      rc = special_as_chunk(w, b2s_frame_entry_kind(e), nb, w->hdr.typesize,
                            chunk);
    if (rc >= 0)
      rc = store_chunk(w, chunk, rc, &w->index[i]);
    if (rc < 0)
      return rc;
    b2s_fw_touch(w, i);
  }
  w->hdr.chunksize = 0;
  w->hdr.general_flags = (uint8_t)((w->hdr.general_flags & ~0x0f) | 3 |
                                   B2S_FRAME_GF_VARLEN);
  return 0;
}

/* Apply c-blosc2's rules for a chunk of nbytes placed at pos (n = before). */
static int chunksize_rules(b2s_fwriter *w, int64_t pos, int32_t nbytes,
                           bool update) {
  int32_t cs = w->hdr.chunksize;
  if (w->n == 0 || (update && w->n == 1)) {
    if (cs != 0)
      w->hdr.chunksize = nbytes;
    return 0;
  }
  if (cs <= 0)
    return 0;
  bool at_end = update ? pos == w->n - 1 : pos == w->n;
  if (nbytes > cs || (!update && w->last_nbytes < cs) ||
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
  if (special && w->hdr.chunksize > 0 &&
      (kind != B2S_SPECIAL_NAN || w->hdr.typesize == in->ci.typesize)) {
    *entry = kind == B2S_SPECIAL_ZERO ? B2S_FRAME_ENTRY_ZERO
             : kind == B2S_SPECIAL_NAN ? B2S_FRAME_ENTRY_NAN
                                       : B2S_FRAME_ENTRY_UNINIT;
    return 0;
  }
  if (special) {
    int rc = special_as_chunk(w, kind, in->ci.nbytes, w->hdr.typesize,
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
  if (pos < 0 || pos > w->n)
    return B2S_E_NCHUNK;
  rc = index_reserve(w, w->n + 1);
  if (rc == 0)
    rc = chunksize_rules(w, pos, in.ci.nbytes, false);
  int64_t entry;
  if (rc == 0)
    rc = place(w, &in, &entry);
  if (rc < 0)
    return rc;
  memmove(w->index + pos + 1, w->index + pos,
          (size_t)(w->n - pos) * sizeof *w->index);
  w->index[pos] = entry;
  if (pos == w->n)
    w->last_nbytes = in.ci.nbytes;
  w->n++;
  w->hdr.nbytes += in.ci.nbytes;
  b2s_fw_touch(w, pos);
  return 0;
}

int64_t b2s_fwriter_append(b2s_fwriter *w, const void *chunk, size_t cbytes) {
  if (w == NULL)
    return B2S_E_ARG;
  int rc = b2s_fwriter_insert(w, w->n, chunk, cbytes);
  return rc < 0 ? rc : w->n;
}

int64_t b2s_fwriter_append_again(b2s_fwriter *w) {
  if (w == NULL || w->n == 0 || w->index[w->n - 1] < 0)
    return B2S_E_ARG;
  int32_t nb = w->last_nbytes;
  int rc = index_reserve(w, w->n + 1);
  if (rc == 0)
    rc = chunksize_rules(w, w->n, nb, false);
  if (rc < 0)
    return rc;
  /* chunksize_rules may store special entries, never the stored last one */
  w->index[w->n] = w->index[w->n - 1];
  w->n++;
  w->hdr.nbytes += nb;
  b2s_fw_touch(w, w->n - 1);
  return w->n;
}

int64_t b2s_fwriter_append_buffer(b2s_fwriter *w, b2s_ctx *ctx,
                                  const void *src, int32_t nbytes) {
  if (w == NULL || nbytes <= 0 || nbytes > B2S_MAX_BUFFERSIZE)
    return B2S_E_ARG;
  b2s_cparams cp = header_cparams(&w->hdr);
  int32_t cap = nbytes + B2S_MAX_OVERHEAD;
  int rc = b2s_fw_buf(w, (size_t)cap);
  if (rc < 0)
    return rc;
  rc = b2s_compress(ctx ? ctx : w->ctx, &cp, src, nbytes, w->buf, cap);
  if (rc < 0)
    return rc;
  /* store_chunk may reuse w->buf (moves), so hand over a copy. */
  uint8_t *chunk = malloc((size_t)rc);
  if (chunk == NULL)
    return B2S_E_NOMEM;
  memcpy(chunk, w->buf, (size_t)rc);
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
  if (pos < 0 || pos >= w->n)
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
  w->index[pos] = entry;
  w->hdr.nbytes += in.ci.nbytes - old_nb;
  if (pos == w->n - 1)
    w->last_nbytes = in.ci.nbytes;
  b2s_fw_touch(w, pos);
  return 0;
}

static int refresh_last(b2s_fwriter *w) {
  int32_t nb = 0, cb;
  int rc = w->n > 0 ? b2s_fw_entry_sizes(w, w->n - 1, &nb, &cb) : 0;
  if (rc == 0)
    w->last_nbytes = nb;
  return rc;
}

int b2s_fwriter_delete(b2s_fwriter *w, int64_t pos) {
  if (w == NULL)
    return B2S_E_ARG;
  if (pos < 0 || pos >= w->n)
    return B2S_E_NCHUNK;
  int32_t old_nb = 0;
  int rc = release_entry(w, pos, &old_nb);
  if (rc < 0)
    return rc;
  memmove(w->index + pos, w->index + pos + 1,
          (size_t)(w->n - pos - 1) * sizeof *w->index);
  w->n--;
  w->hdr.nbytes -= old_nb;
  b2s_fw_touch(w, pos);
  return refresh_last(w);
}

int b2s_fwriter_reorder(b2s_fwriter *w, const int64_t *order, int64_t n) {
  if (w == NULL || (order == NULL && n > 0) || n != w->n)
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
  if (rc == 0 && n > 0 && order[n - 1] != n - 1 && w->hdr.chunksize > 0 &&
      w->last_nbytes < w->hdr.chunksize)
    rc = go_variable(w);
  if (rc == 0) {
    int64_t first = 0;
    while (first < n && order[first] == first)
      first++;
    for (int64_t i = 0; i < n; i++)
      next[i] = w->index[order[i]];
    memcpy(w->index, next, (size_t)n * sizeof *next);
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
  int i = b2s_frame_metas_find(&w->metas, name);
  if (i < 0)
    return i;
  if (w->metas.items[i].len != len)
    return B2S_E_ARG;
  if (len > 0)
    memcpy(w->metas.items[i].content, content, (size_t)len);
  w->metas_dirty = w->dirty = true;
  return 0;
}

static int vlmeta_put(b2s_fwriter *w, const char *name, const void *chunk,
                      int32_t cbytes) {
  int i = b2s_frame_metas_find(&w->vlmetas, name);
  if (i == B2S_E_NOTFOUND) {
    if (w->vlmetas.n >= 16)
      return B2S_E_TOO_BIG;   /* c-blosc2 cannot write beyond 16 */
    i = b2s_frame_metas_add(&w->vlmetas, name, chunk, cbytes);
    return i < 0 ? i : 0;
  }
  if (i < 0)
    return i;
  uint8_t *p = malloc((size_t)cbytes);
  if (p == NULL)
    return B2S_E_NOMEM;
  memcpy(p, chunk, (size_t)cbytes);
  free(w->vlmetas.items[i].content);
  w->vlmetas.items[i].content = p;
  w->vlmetas.items[i].len = cbytes;
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
  int rc = b2s_compress(w->ctx, &cp, content ? content : "", len, chunk, cap);
  if (rc > 0)
    rc = vlmeta_put(w, name, chunk, rc);
  free(chunk);
  if (rc == 0)
    w->trailer_dirty = w->dirty = true;
  return rc;
}

int b2s_fwriter_vlmeta_delete(b2s_fwriter *w, const char *name) {
  if (w == NULL || name == NULL)
    return B2S_E_ARG;
  int i = b2s_frame_metas_find(&w->vlmetas, name);
  if (i < 0)
    return i;
  free(w->vlmetas.items[i].content);
  memmove(w->vlmetas.items + i, w->vlmetas.items + i + 1,
          (size_t)(w->vlmetas.n - i - 1) * sizeof *w->vlmetas.items);
  w->vlmetas.n--;
  w->trailer_dirty = w->dirty = true;
  return 0;
}

const b2s_frame_metas *b2s_fwriter_vlmetas(const b2s_fwriter *w) {
  return w ? &w->vlmetas : NULL;
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

int64_t b2s_fwriter_nchunks(const b2s_fwriter *w) { return w ? w->n : 0; }

const b2s_frame_header *b2s_fwriter_header(const b2s_fwriter *w) {
  return w ? &w->hdr : NULL;
}

int64_t b2s_fwriter_data_end(const b2s_fwriter *w) {
  return w && !w->sparse ? w->base + w->data_end : 0;
}

bool b2s_fwriter_locked(const b2s_fwriter *w) {
  return w != NULL && b2s_lock_held(w->lockfd);
}

bool b2s_fwriter_direct_io(const b2s_fwriter *w) {
  return w != NULL && w->dfd >= 0;
}

size_t b2s_fwriter_stage_bytes(const b2s_fwriter *w) {
  return b2s_fwriter_direct_io(w) ? 2 * w->stage_cap : 0;
}

void b2s_fwriter_set_write_limit(b2s_fwriter *w, int64_t bytes) {
  if (w == NULL)
    return;
  w->write_limit = bytes < 0 ? -1 : w->written + bytes;
}

int b2s_fwriter_stats_get(const b2s_fwriter *w, b2s_fwriter_stats *st) {
  if (w == NULL || st == NULL)
    return B2S_E_ARG;
  struct stat sb;
  if (fstat(w->fd, &sb) < 0)
    return -errno;
  int64_t index_file = (int64_t)sb.st_size;
  int64_t slot = w->active >= 0 ? w->slot_len[w->active]
                                : (int64_t)w->trailer.len;
  *st = (b2s_fwriter_stats){
      .nchunks = w->n, .nbytes = w->hdr.nbytes, .stored_bytes = w->stored_bytes,
      .commits = (int64_t)w->seq, .bytes_written = w->written};
  if (w->sparse) {
    st->file_bytes = index_file + w->stored_bytes;
    st->hole_bytes = index_file - w->base - slot;
  } else {
    st->file_bytes = index_file;
    st->hole_bytes = index_file - w->base - w->stored_bytes - slot;
  }
  return 0;
}

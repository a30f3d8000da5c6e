/* Frame reader (see b2s_frame.h).
 *
 * Opening runs the reader algorithm of BLOSC2_FORMAT.md 4.8 with every
 * bound checked: fixed header, metalayer section, trailer (located from the
 * last 23 bytes), vlmetalayers, then the index chunk, which is decoded in
 * full and validated entry by entry.  Contiguous and sparse frames share all
 * of it; they differ only in where the index starts (after the data section
 * or right after the header) and in where a chunk is read from (an offset
 * in the data section or a file named after the chunk id). */
#include "b2s_frame.h"
#include "frame_io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_errors.h"

struct b2s_frame {
  bool sparse;
  int fd;                          /* cframe file / chunks.b2frame, or -1 */
  int dirfd;                       /* sparse frame directory, or -1 */
  const uint8_t *mem;              /* memory frame (borrowed), or NULL */
  int64_t base;                    /* frame start inside the file */
  int64_t avail;                   /* bytes from base to the end of the source */

  b2s_frame_header hdr;
  b2s_frame_metas metas, vlmetas;
  int64_t nchunks;
  int64_t *index;
  int64_t index_offset;            /* frame offset of the index chunk */
  int32_t index_cbytes;
  int64_t trailer_offset, trailer_len;

  uint8_t *scratch;                /* chunk and structure reads */
  size_t scratch_cap;
  b2s_ctx *ctx;                    /* created on first use */
  b2s_frame_error err;
};

/* A stored chunk located and loaded. */
typedef struct stored_chunk {
  const uint8_t *p;                /* cbytes bytes (or only the header) */
  int32_t cbytes, nbytes;
  int64_t pos;                     /* offset of the chunk for errors */
} stored_chunk;

static int ferr(b2s_frame *f, int code, int64_t offset, int64_t nchunk,
                const char *why) {
  f->err.code = code;
  f->err.offset = offset;
  f->err.nchunk = nchunk;
  f->err.in_chunk_file = false;
  f->err.reason = why;
  return code;
}

static int32_t load_le32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                   (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* ---- byte access ---------------------------------------------------------- */


static int scratch_reserve(b2s_frame *f, size_t n) {
  if (n <= f->scratch_cap)
    return 0;
  uint8_t *p = realloc(f->scratch, n);
  if (p == NULL)
    return B2S_E_NOMEM;
  f->scratch = p;
  f->scratch_cap = n;
  return 0;
}

/* Point *p at n bytes of the frame at frame offset pos: into the buffer of
 * a memory frame, else read into the scratch buffer (valid until the next
 * view).  Errors are recorded with `pos`. */
static int frame_view(b2s_frame *f, int64_t pos, size_t n, const uint8_t **p) {
  if (pos < 0 || pos > f->avail || (uint64_t)n > (uint64_t)(f->avail - pos))
    return ferr(f, B2S_E_TRUNCATED, f->avail, -1,
                "data runs past the end of the file");
  if (f->mem != NULL) {
    *p = f->mem + pos;
    return 0;
  }
  int rc = scratch_reserve(f, n ? n : 1);
  if (rc == 0)
    rc = b2s_fio_pread(f->fd, f->scratch, n, f->base + pos);
  if (rc < 0)
    return ferr(f, rc, pos, -1, "cannot read the frame");
  *p = f->scratch;
  return 0;
}

static b2s_ctx *frame_ctx(b2s_frame *f) {
  if (f->ctx == NULL)
    f->ctx = b2s_ctx_new();
  return f->ctx;
}

/* ---- open: header, metalayers, trailer -------------------------------------- */

static int load_header(b2s_frame *f) {
  const uint8_t *p;
  if (f->avail < B2S_FRAME_HEADER_FIXED)
    return ferr(f, B2S_E_TRUNCATED, f->avail,
                -1, "shorter than the 87-byte frame header");
  int rc = frame_view(f, 0, B2S_FRAME_HEADER_FIXED, &p);
  if (rc == 0)
    rc = b2s_frame_header_parse(p, B2S_FRAME_HEADER_FIXED, &f->hdr, &f->err);
  if (rc < 0)
    return rc;
  const b2s_frame_header *h = &f->hdr;
  uint8_t want = f->sparse ? B2S_FRAME_TYPE_SPARSE : B2S_FRAME_TYPE_CONTIGUOUS;
  if (h->frame_type != want)
    return ferr(f, B2S_E_FRAME_TYPE, B2S_FRAME_OFF_FRAME_TYPE, -1,
                f->sparse ? "sparse frame index file is not of type 1"
                          : "not a contiguous frame (type byte is not 0)");
  if (h->frame_len > f->avail)
    return ferr(f, B2S_E_TRUNCATED, f->avail, -1,
                "file ends before frame_len");
  if (h->frame_len - h->header_len < B2S_FRAME_TRAILER_MIN)
    return ferr(f, B2S_E_FRAME, B2S_FRAME_OFF_FRAME_LEN, -1,
                "frame_len leaves no room for a trailer");
  rc = frame_view(f, 0, (size_t)h->header_len, &p);
  if (rc == 0)
    rc = b2s_frame_metas_parse(p, (size_t)h->header_len, &f->metas, &f->err);
  return rc;
}

static int load_trailer(b2s_frame *f) {
  const b2s_frame_header *h = &f->hdr;
  const uint8_t *p;
  uint32_t tlen;
  int rc = frame_view(f, h->frame_len - B2S_FRAME_TAIL_LEN, B2S_FRAME_TAIL_LEN,
                      &p);
  if (rc == 0)
    rc = b2s_frame_tail_parse(p, h->frame_len, h->header_len, &tlen, &f->err);
  if (rc < 0)
    return rc;
  f->trailer_len = tlen;
  f->trailer_offset = h->frame_len - tlen;
  rc = frame_view(f, f->trailer_offset, tlen, &p);
  if (rc == 0)
    rc = b2s_frame_trailer_parse(p, tlen, f->trailer_offset, &f->vlmetas,
                                 &f->err);
  return rc;
}

/* ---- open: index ------------------------------------------------------------ */

/* Header of the chunk at frame offset pos with at most `room` bytes
 * available to it: its cbytes, checked to be >= 32 and to fit. */
static int chunk_cbytes_at(b2s_frame *f, int64_t pos, int64_t room,
                           int32_t *cbytes) {
  const uint8_t *p;
  if (room < B2S_HEADER_LEN)
    return ferr(f, B2S_E_CHUNK_BOUNDS, pos, -1, "no room for a chunk header");
  int rc = frame_view(f, pos, B2S_HEADER_LEN, &p);
  if (rc < 0)
    return rc;
  int32_t cb = load_le32(p + 12);
  if (cb < B2S_HEADER_LEN || cb > room)
    return ferr(f, B2S_E_CHUNK_BOUNDS, pos + 12, -1,
                "chunk cbytes does not fit its place in the frame");
  *cbytes = cb;
  return 0;
}

/* Every entry must be a valid special value, or a stored chunk whose header
 * fits in the data section (cframe), or a 32-bit chunk id (sframe). */
static int check_index(b2s_frame *f) {
  const b2s_frame_header *h = &f->hdr;
  for (int64_t i = 0; i < f->nchunks; i++) {
    int64_t e = f->index[i];
    if (b2s_frame_entry_kind(e) < 0)
      return ferr(f, B2S_E_INDEX, f->index_offset, i,
                  "invalid special index value");
    if (e < 0)
      continue;
    if (f->sparse && e > (int64_t)UINT32_MAX)
      return ferr(f, B2S_E_CHUNK_ID, f->index_offset, i,
                  "chunk id does not fit 32 bits");
    if (!f->sparse && e > h->cbytes - B2S_HEADER_LEN)
      return ferr(f, B2S_E_CHUNK_BOUNDS, f->index_offset, i,
                  "index entry points past the data section");
  }
  return 0;
}

/* Decode the index chunk at f->index_offset (already sized) into f->index. */
static int decode_index(b2s_frame *f, const uint8_t *p, int32_t cbytes) {
  b2s_chunk_info info;
  int rc = b2s_chunk_info_get(p, (size_t)cbytes, &info);
  if (rc < 0)
    return ferr(f, B2S_E_INDEX, f->index_offset, -1,
                "index chunk header is invalid");
  if (info.typesize != 8)
    return ferr(f, B2S_E_INDEX, f->index_offset + 3, -1,
                "index chunk typesize is not 8");
  rc = b2s_frame_header_nchunks(&f->hdr, info.nbytes, &f->nchunks);
  if (rc == B2S_E_FRAME)
    return ferr(f, rc, B2S_FRAME_OFF_NBYTES, -1,
                "nbytes and chunksize imply too many chunks");
  if (rc < 0 || (int64_t)info.nbytes != 8 * f->nchunks)
    return ferr(f, B2S_E_INDEX, f->index_offset + 4, -1,
                "index size disagrees with nbytes and chunksize");
  if (info.nbytes > B2S_FRAME_DECODED_CAP(f->hdr.frame_len))
    return ferr(f, B2S_E_INDEX, f->index_offset + 4, -1,
                "index far larger than the frame can hold");
  f->index = malloc(info.nbytes ? (size_t)info.nbytes : 1);
  b2s_ctx *ctx = frame_ctx(f);
  if (f->index == NULL || ctx == NULL)
    return ferr(f, B2S_E_NOMEM, -1, -1, "out of memory for the index");
  rc = b2s_decompress(ctx, p, (size_t)cbytes, f->index, (size_t)info.nbytes);
  if (rc != info.nbytes)
    return ferr(f, B2S_E_INDEX, f->index_offset, -1,
                "index chunk does not decompress");
  /* Entries are little endian on disk. */
  uint8_t *b = (uint8_t *)f->index;
  for (int64_t i = 0; i < f->nchunks; i++, b += 8) {
    uint64_t v = (uint64_t)(uint32_t)load_le32(b) |
                 (uint64_t)(uint32_t)load_le32(b + 4) << 32;
    f->index[i] = (int64_t)v;
  }
  return check_index(f);
}

static int load_index(b2s_frame *f) {
  const b2s_frame_header *h = &f->hdr;
  f->index_offset = h->header_len;
  if (!f->sparse) {
    if (h->cbytes > f->trailer_offset - h->header_len)
      return ferr(f, B2S_E_FRAME, B2S_FRAME_OFF_CBYTES, -1,
                  "data section (cbytes) runs into the trailer");
    f->index_offset += h->cbytes;
  }
  if (h->nbytes == 0)
    return 0;   /* no chunk: whatever lies before the trailer is unused */
  int64_t room = f->trailer_offset - f->index_offset;
  int32_t cbytes;
  const uint8_t *p;
  int rc = chunk_cbytes_at(f, f->index_offset, room, &cbytes);
  if (rc == B2S_E_CHUNK_BOUNDS)
    return ferr(f, B2S_E_INDEX, f->err.offset, -1,
                "index chunk does not fit before the trailer");
  if (rc < 0)
    return rc;
  f->index_cbytes = cbytes;
  rc = frame_view(f, f->index_offset, (size_t)cbytes, &p);
  return rc < 0 ? rc : decode_index(f, p, cbytes);
}

/* ---- open ------------------------------------------------------------------ */

static b2s_frame *frame_alloc(bool sparse) {
  b2s_frame *f = calloc(1, sizeof *f);
  if (f == NULL)
    return NULL;
  f->sparse = sparse;
  f->fd = f->dirfd = -1;
  b2s_frame_metas_init(&f->metas);
  b2s_frame_metas_init(&f->vlmetas);
  b2s_frame_error_clear(&f->err);
  return f;
}

/* Parse everything; on failure hand the error out and free f. */
static int frame_finish_open(b2s_frame *f, b2s_frame **out,
                             b2s_frame_error *err) {
  int rc = load_header(f);
  if (rc == 0)
    rc = load_trailer(f);
  if (rc == 0)
    rc = load_index(f);
  if (rc < 0) {
    if (err != NULL)
      *err = f->err;
    b2s_frame_free(f);
    return rc;
  }
  b2s_frame_error_clear(&f->err);
  *out = f;
  return 0;
}

static int open_error(b2s_frame_error *err, int code, int64_t offset,
                      const char *why) {
  b2s_frame_error_clear(err);
  return b2s_frame_error_set(err, code, offset, why);
}

int b2s_frame_open_buffer(const void *buf, size_t len, b2s_frame **out,
                          b2s_frame_error *err) {
  if (out == NULL || (buf == NULL && len > 0) || len > INT64_MAX)
    return open_error(err, B2S_E_ARG, -1, "bad arguments");
  *out = NULL;
  b2s_frame *f = frame_alloc(false);
  if (f == NULL)
    return open_error(err, B2S_E_NOMEM, -1, "out of memory");
  f->mem = buf;
  f->avail = (int64_t)len;
  return frame_finish_open(f, out, err);
}

/* Size of the regular file fd, or a negative error. */
static int64_t regular_size(int fd) {
  struct stat st;
  if (fstat(fd, &st) < 0)
    return -errno;
  if (S_ISDIR(st.st_mode))
    return -EISDIR;
  if (!S_ISREG(st.st_mode))
    return -EINVAL;
  return (int64_t)st.st_size;
}

int b2s_frame_open_file(const char *path, int64_t offset, b2s_frame **out,
                        b2s_frame_error *err) {
  if (path == NULL || out == NULL || offset < 0)
    return open_error(err, B2S_E_ARG, -1, "bad arguments");
  *out = NULL;
  b2s_frame *f = frame_alloc(false);
  if (f == NULL)
    return open_error(err, B2S_E_NOMEM, -1, "out of memory");
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  int64_t size = f->fd < 0 ? -errno : regular_size(f->fd);
  if (size < 0) {
    b2s_frame_free(f);
    return open_error(err, (int)size, -1, size == -EISDIR
                                          ? "a directory (sparse frame?)"
                                          : "cannot open the frame file");
  }
  if (offset > size) {
    b2s_frame_free(f);
    return open_error(err, B2S_E_TRUNCATED, 0,
                      "frame offset beyond the end of the file");
  }
  f->base = offset;
  f->avail = size - offset;
  return frame_finish_open(f, out, err);
}

int b2s_frame_open_sparse(const char *dir, b2s_frame **out,
                          b2s_frame_error *err) {
  if (dir == NULL || out == NULL)
    return open_error(err, B2S_E_ARG, -1, "bad arguments");
  *out = NULL;
  b2s_frame *f = frame_alloc(true);
  if (f == NULL)
    return open_error(err, B2S_E_NOMEM, -1, "out of memory");
  int64_t size;
  f->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (f->dirfd >= 0)
    f->fd = openat(f->dirfd, B2S_SFRAME_INDEX_FILE,
                   O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  size = f->fd < 0 ? -errno : regular_size(f->fd);
  if (size < 0) {
    const char *why = f->dirfd < 0 ? "cannot open the sparse frame directory"
                                   : "cannot open " B2S_SFRAME_INDEX_FILE;
    b2s_frame_free(f);
    return open_error(err, (int)size, -1, why);
  }
  f->avail = size;
  return frame_finish_open(f, out, err);
}

/* The fixed header of the frame at path (of its index file when sparse):
 * what a commit rewrites last.  Returns the bytes read, or -errno. */
static int header_peek(const char *path, bool sparse,
                       uint8_t h[B2S_FRAME_HEADER_FIXED]) {
  char buf[PATH_MAX];
  if (sparse && snprintf(buf, sizeof buf, "%s/%s", path,
                         B2S_SFRAME_INDEX_FILE) >= (int)sizeof buf)
    return -ENAMETOOLONG;
  int fd = open(sparse ? buf : path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n = pread(fd, h, B2S_FRAME_HEADER_FIXED, 0);
  int e = errno;
  close(fd);
  return n < 0 ? -e : (int)n;
}

/* Index slots alternate, so a writer that commits twice while we read
 * rewrites the slot our header pointed at, and a sound frame can fail to
 * parse.  Such a failure is retried while the header keeps changing; one
 * with the header unchanged throughout is the frame's own. */
#define OPEN_TRIES 64

int b2s_frame_open(const char *path, b2s_frame **out, b2s_frame_error *err) {
  struct stat st;
  if (path == NULL || out == NULL)
    return open_error(err, B2S_E_ARG, -1, "bad arguments");
  if (stat(path, &st) < 0)
    return open_error(err, -errno, -1, "cannot stat the frame path");
  bool sparse = S_ISDIR(st.st_mode);
  for (int tries = 1;; tries++) {
    uint8_t before[B2S_FRAME_HEADER_FIXED], after[B2S_FRAME_HEADER_FIXED];
    int nb = header_peek(path, sparse, before);
    int rc = sparse ? b2s_frame_open_sparse(path, out, err)
                    : b2s_frame_open_file(path, 0, out, err);
    if (rc >= 0 || nb < 0 || tries == OPEN_TRIES)
      return rc;
    int na = header_peek(path, sparse, after);
    if (na < 0 || (na == nb && memcmp(before, after, (size_t)nb) == 0))
      return rc;
  }
}

void b2s_frame_free(b2s_frame *f) {
  if (f == NULL)
    return;
  if (f->fd >= 0)
    close(f->fd);
  if (f->dirfd >= 0)
    close(f->dirfd);
  b2s_frame_metas_fini(&f->metas);
  b2s_frame_metas_fini(&f->vlmetas);
  free(f->index);
  free(f->scratch);
  b2s_ctx_free(f->ctx);
  free(f);
}

/* ---- accessors -------------------------------------------------------------- */

const b2s_frame_error *b2s_frame_last_error(const b2s_frame *f) {
  return f ? &f->err : NULL;
}

const b2s_frame_header *b2s_frame_header_get(const b2s_frame *f) {
  return f ? &f->hdr : NULL;
}

bool b2s_frame_is_sparse(const b2s_frame *f) { return f && f->sparse; }

int64_t b2s_frame_nchunks(const b2s_frame *f) { return f ? f->nchunks : 0; }

const int64_t *b2s_frame_index(const b2s_frame *f) {
  return f && f->nchunks > 0 ? f->index : NULL;
}

int b2s_frame_layout(const b2s_frame *f, int64_t *index_offset,
                     int32_t *index_cbytes, int64_t *trailer_offset,
                     int64_t *trailer_len) {
  if (f == NULL)
    return B2S_E_ARG;
  if (index_offset)
    *index_offset = f->index_offset;
  if (index_cbytes)
    *index_cbytes = f->index_cbytes;
  if (trailer_offset)
    *trailer_offset = f->trailer_offset;
  if (trailer_len)
    *trailer_len = f->trailer_len;
  return 0;
}

const b2s_frame_metas *b2s_frame_metalayers(const b2s_frame *f) {
  return f ? &f->metas : NULL;
}

const b2s_frame_metas *b2s_frame_vlmetalayers(const b2s_frame *f) {
  return f ? &f->vlmetas : NULL;
}

/* ---- chunks ------------------------------------------------------------------ */

static int chunk_entry(b2s_frame *f, int64_t i, int64_t *entry) {
  b2s_frame_error_clear(&f->err);
  if (i < 0 || i >= f->nchunks)
    return ferr(f, B2S_E_NCHUNK, -1, i, "no such chunk");
  *entry = f->index[i];
  return 0;
}

/* nbytes chunk i must have in a fixed-chunksize frame; -1 when the frame
 * has variable chunk sizes. */
static int64_t expected_nbytes(const b2s_frame *f, int64_t i) {
  const b2s_frame_header *h = &f->hdr;
  if (h->chunksize <= 0)
    return -1;
  if (i < f->nchunks - 1)
    return h->chunksize;
  return h->nbytes - (f->nchunks - 1) * (int64_t)h->chunksize;
}

/* nbytes of a special entry: c-blosc2 uses the chunksize (0 in a frame
 * with variable chunk sizes, where such entries have no defined size). */
static int32_t special_nbytes(const b2s_frame *f, int64_t i) {
  int64_t n = expected_nbytes(f, i);
  return n < 0 ? 0 : (int32_t)n;
}

static int sparse_fail(b2s_frame *f, int64_t i, int rc, int64_t at,
                       const char *why) {
  ferr(f, rc, at, i, why);
  f->err.in_chunk_file = true;
  return rc;
}

/* Read (the header of) a sparse frame's chunk from its open file. */
static int read_chunk_file(b2s_frame *f, int64_t i, int fd, int64_t size,
                           bool header_only, stored_chunk *c) {
  uint8_t head[B2S_HEADER_LEN];
  if (size < B2S_HEADER_LEN)
    return sparse_fail(f, i, B2S_E_TRUNCATED, size,
                       "chunk file shorter than a chunk header");
  int rc = b2s_fio_pread(fd, head, sizeof head, 0);
  if (rc < 0)
    return sparse_fail(f, i, rc, 0, "cannot read the chunk file");
  c->cbytes = load_le32(head + 12);
  c->nbytes = load_le32(head + 4);
  c->p = NULL;
  c->pos = 0;
  if (c->cbytes < B2S_HEADER_LEN || c->cbytes > size)
    return sparse_fail(f, i, B2S_E_TRUNCATED, 12,
                       "chunk cbytes exceeds its file");
  if (header_only)
    return 0;
  rc = scratch_reserve(f, (size_t)c->cbytes);
  if (rc == 0)
    rc = b2s_fio_pread(fd, f->scratch, (size_t)c->cbytes, 0);
  if (rc < 0)
    return sparse_fail(f, i, rc, 0, "cannot read the chunk file");
  c->p = f->scratch;
  return 0;
}

/* Sparse frame: load (the header of) the file of chunk id `id`.  The name
 * is only ever made from the id, which was checked to fit 32 bits; links
 * are not followed (c-blosc2 never writes them). */
static int load_sparse(b2s_frame *f, int64_t i, int64_t id, bool header_only,
                       stored_chunk *c) {
  char name[32];
  snprintf(name, sizeof name, "%08X.chunk", (unsigned)(uint32_t)id);
  int fd = openat(f->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  int64_t size = fd < 0 ? -errno : regular_size(fd);
  int rc = size < 0 ? sparse_fail(f, i, (int)size, -1,
                                  "cannot open the chunk file")
                    : read_chunk_file(f, i, fd, size, header_only, c);
  if (fd >= 0)
    close(fd);
  return rc;
}

/* Contiguous frame: load (the header of) the chunk at data offset e. */
static int load_contiguous(b2s_frame *f, int64_t i, int64_t e,
                           bool header_only, stored_chunk *c) {
  const b2s_frame_header *h = &f->hdr;
  c->pos = h->header_len + e;   /* e <= cbytes - 32: checked at open */
  int rc = chunk_cbytes_at(f, c->pos, h->cbytes - e, &c->cbytes);
  if (rc < 0) {
    f->err.nchunk = i;
    return rc;
  }
  const uint8_t *p;
  rc = frame_view(f, c->pos, header_only ? B2S_HEADER_LEN : (size_t)c->cbytes,
                  &p);
  if (rc < 0) {
    f->err.nchunk = i;
    return rc;
  }
  c->nbytes = load_le32(p + 4);
  c->p = header_only ? NULL : p;
  return 0;
}

/* Load stored chunk i (entry e >= 0) and check its header. */
static int load_stored(b2s_frame *f, int64_t i, int64_t e, bool header_only,
                       stored_chunk *c) {
  int rc = f->sparse ? load_sparse(f, i, e, header_only, c)
                     : load_contiguous(f, i, e, header_only, c);
  if (rc < 0)
    return rc;
  b2s_chunk_info info;
  /* Only the sizes when the header alone was read; the whole header when
   * the chunk is there. */
  rc = header_only ? (c->nbytes < 0 || c->nbytes > B2S_MAX_BUFFERSIZE
                          ? B2S_E_NBYTES
                          : 0)
                   : b2s_chunk_info_get(c->p, (size_t)c->cbytes, &info);
  if (rc < 0) {
    ferr(f, rc, c->pos, i, "invalid chunk header");
    f->err.in_chunk_file = f->sparse;
    return rc;
  }
  int64_t want = expected_nbytes(f, i);
  if (want >= 0 && c->nbytes != want) {
    ferr(f, B2S_E_CHUNK_SIZE, c->pos + 4, i,
         "chunk nbytes differs from the frame's chunksize");
    f->err.in_chunk_file = f->sparse;
    return B2S_E_CHUNK_SIZE;
  }
  return 0;
}

int b2s_frame_chunk_sizes(b2s_frame *f, int64_t i, int32_t *cbytes,
                          int32_t *nbytes) {
  int64_t e;
  if (f == NULL)
    return B2S_E_ARG;
  int rc = chunk_entry(f, i, &e);
  if (rc < 0)
    return rc;
  stored_chunk c = {NULL, B2S_HEADER_LEN, special_nbytes(f, i), -1};
  if (e >= 0 && (rc = load_stored(f, i, e, true, &c)) < 0)
    return rc;
  if (cbytes)
    *cbytes = c.cbytes;
  if (nbytes)
    *nbytes = c.nbytes;
  return 0;
}

/* The special chunk c-blosc2 synthesises for a special entry: default
 * cparams with the frame's typesize and blocksize (spec 4.6). */
static int synthesise_special(b2s_frame *f, int64_t i, int kind, void *dst,
                              size_t dstsize) {
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.codec = B2S_CODEC_BLOSCLZ;
  /* chunks store typesizes above 255 as 1 */
  cp.typesize = f->hdr.typesize > B2S_MAX_TYPESIZE ? 1 : f->hdr.typesize;
  cp.blocksize = f->hdr.blocksize;
  int32_t nb = special_nbytes(f, i);
  int32_t cap = dstsize > INT32_MAX ? INT32_MAX : (int32_t)dstsize;
  if (dstsize < B2S_HEADER_LEN)
    return ferr(f, B2S_E_DEST_SMALL, -1, i, "destination too small");
  int rc = kind == B2S_SPECIAL_ZERO  ? b2s_chunk_zeros(&cp, nb, dst, cap)
           : kind == B2S_SPECIAL_NAN ? b2s_chunk_nans(&cp, nb, dst, cap)
                                     : b2s_chunk_uninit(&cp, nb, dst, cap);
  if (rc < 0)
    return ferr(f, rc, f->index_offset, i, "cannot build the special chunk");
  return rc;
}

int b2s_frame_chunk_read(b2s_frame *f, int64_t i, void *dst, size_t dstsize) {
  int64_t e;
  if (f == NULL || (dst == NULL && dstsize > 0))
    return B2S_E_ARG;
  int rc = chunk_entry(f, i, &e);
  if (rc < 0)
    return rc;
  if (e < 0)
    return synthesise_special(f, i, b2s_frame_entry_kind(e), dst, dstsize);
  stored_chunk c;
  if ((rc = load_stored(f, i, e, false, &c)) < 0)
    return rc;
  if ((size_t)c.cbytes > dstsize)
    return ferr(f, B2S_E_DEST_SMALL, -1, i, "destination too small");
  memcpy(dst, c.p, (size_t)c.cbytes);
  return c.cbytes;
}

/* Expand a special entry into dst through the chunk decoder, from the same
 * header b2s_frame_chunk_read() returns, so special contents are defined in
 * one place. */
static int expand_special(b2s_frame *f, int64_t i, int kind, b2s_ctx *ctx,
                          uint8_t *dst, size_t dstsize) {
  int32_t nb = special_nbytes(f, i);
  if ((size_t)nb > dstsize)
    return ferr(f, B2S_E_DEST_SMALL, -1, i, "destination too small");
  int32_t ts = f->hdr.typesize;
  if (kind == B2S_SPECIAL_NAN && ((ts != 4 && ts != 8) || nb % ts != 0))
    return ferr(f, B2S_E_SPECIAL, B2S_FRAME_OFF_TYPESIZE, i,
                "NaN chunk needs typesize 4 or 8 and whole items");
  uint8_t hdr[B2S_HEADER_LEN];
  int rc = synthesise_special(f, i, kind, hdr, sizeof(hdr));
  if (rc < 0)
    return rc;
  rc = b2s_decompress(ctx, hdr, sizeof(hdr), dst, dstsize);
  return rc < 0 ? ferr(f, rc, f->index_offset, i, "cannot expand the special chunk") : rc;
}

int b2s_frame_chunk_decompress(b2s_frame *f, int64_t i, b2s_ctx *ctx,
                               void *dst, size_t dstsize) {
  int64_t e;
  if (f == NULL || (dst == NULL && dstsize > 0))
    return B2S_E_ARG;
  int rc = chunk_entry(f, i, &e);
  if (rc < 0)
    return rc;
  if (ctx == NULL && (ctx = frame_ctx(f)) == NULL)
    return ferr(f, B2S_E_NOMEM, -1, i, "out of memory");
  if (e < 0)
    return expand_special(f, i, b2s_frame_entry_kind(e), ctx, dst, dstsize);
  stored_chunk c;
  if ((rc = load_stored(f, i, e, false, &c)) < 0)
    return rc;
  if ((size_t)c.nbytes > dstsize)
    return ferr(f, B2S_E_DEST_SMALL, -1, i, "destination too small");
  rc = b2s_decompress(ctx, c.p, (size_t)c.cbytes, dst, dstsize);
  if (rc < 0) {
    ferr(f, rc, c.pos, i, "chunk does not decompress");
    f->err.in_chunk_file = f->sparse;
  }
  return rc;
}

/* ---- metalayers ---------------------------------------------------------------- */

int b2s_frame_meta_get(b2s_frame *f, const char *name,
                       const uint8_t **content, int32_t *len) {
  if (f == NULL || name == NULL || content == NULL || len == NULL)
    return B2S_E_ARG;
  b2s_frame_error_clear(&f->err);
  int k = b2s_frame_metas_find(&f->metas, name);
  if (k < 0)
    return ferr(f, k, -1, -1, "no such metalayer");
  *content = f->metas.items[k].content;
  *len = f->metas.items[k].len;
  return 0;
}

int b2s_frame_vlmeta_get(b2s_frame *f, const char *name, b2s_ctx *ctx,
                         uint8_t **content, int32_t *len) {
  if (f == NULL || name == NULL || content == NULL || len == NULL)
    return B2S_E_ARG;
  b2s_frame_error_clear(&f->err);
  int k = b2s_frame_metas_find(&f->vlmetas, name);
  if (k < 0)
    return ferr(f, k, -1, -1, "no such vlmetalayer");
  const b2s_frame_meta *m = &f->vlmetas.items[k];
  b2s_chunk_info info;
  if (b2s_chunk_info_get(m->content, (size_t)m->len, &info) < 0)
    return ferr(f, B2S_E_VLMETA, m->offset, -1,
                "vlmetalayer content is not a valid chunk");
  if (info.nbytes > B2S_FRAME_DECODED_CAP(m->len))
    return ferr(f, B2S_E_VLMETA, m->offset, -1,
                "vlmetalayer far larger than its stored size");
  uint8_t *buf = malloc(info.nbytes ? (size_t)info.nbytes : 1);
  if (ctx == NULL)
    ctx = frame_ctx(f);
  if (buf == NULL || ctx == NULL) {
    free(buf);
    return ferr(f, B2S_E_NOMEM, -1, -1, "out of memory");
  }
  int rc = b2s_decompress(ctx, m->content, (size_t)m->len, buf,
                          (size_t)info.nbytes);
  if (rc != info.nbytes) {
    free(buf);
    return ferr(f, B2S_E_VLMETA, m->offset, -1,
                "vlmetalayer content does not decompress");
  }
  *content = buf;
  *len = info.nbytes;
  return 0;
}

int b2s_frame_b2nd_get(b2s_frame *f, b2s_b2nd *nd) {
  if (f == NULL || nd == NULL)
    return B2S_E_ARG;
  b2s_frame_error_clear(&f->err);
  int k = b2s_frame_metas_find(&f->metas, "b2nd");
  if (k < 0)
    k = b2s_frame_metas_find(&f->metas, "caterva");
  if (k < 0)
    return ferr(f, k, -1, -1, "no b2nd metalayer");
  const b2s_frame_meta *m = &f->metas.items[k];
  /* the content follows the c6 marker and its 4-byte length */
  return b2s_b2nd_parse(m->content, (size_t)m->len, m->offset + 5, nd, &f->err);
}

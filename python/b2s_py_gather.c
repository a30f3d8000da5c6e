/* The reads of an N-d selection of a local frame (python/b2stream
 * /_ndarray.py) in one call: bytes [start, start + nbytes) of many chunks,
 * decoding only the blocks that hold them, on up to nthreads threads (as
 * c-blosc2 decodes with its nthreads).
 *
 * A stored chunk of a contiguous frame is read lazily, as c-blosc2 reads
 * its "lazy chunks": its header and block starts, then only the compressed
 * blocks wanted, with pread on a descriptor of our own (the frame reader's
 * scratch buffer is not shared between threads).  Special entries and
 * sparse frames go through the frame reader, one thread at a time. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2s_py_gather.h"
#include "b2s_frame.h"

#define B2SPY_API __attribute__((visibility("default")))
#define MAX_THREADS 16

int b2spy_gather_one(b2s_ctx *ctx, const uint8_t *src, size_t len,
                     int64_t start, size_t nbytes, uint8_t *dst) {
  b2s_chunk_info ci;
  int rc = b2s_chunk_info_get(src, len, &ci);
  if (rc < 0)
    return rc;
  /* a repeated-value chunk's item may be one byte of a wider type */
  int64_t isz = ci.special == B2S_SPECIAL_VALUE ? ci.cbytes - ci.header_len
                                                : ci.typesize;
  if (start < 0 || start + (int64_t)nbytes > ci.nbytes)
    return B2S_E_RANGE;
  if (isz > 0 && start % isz == 0 && (int64_t)nbytes % isz == 0 &&
      !ci.vl_blocks) {
    rc = b2s_getitem(ctx, src, len, (int32_t)(start / isz),
                     (int32_t)((int64_t)nbytes / isz), dst, nbytes);
    return rc < 0 ? rc : (size_t)rc == nbytes ? 0 : B2S_E_RANGE;
  }
  uint8_t *all = calloc(1, ci.nbytes ? (size_t)ci.nbytes : 1);
  if (all == NULL)
    return B2S_E_NOMEM;
  rc = b2s_decompress(ctx, src, len, all, (size_t)ci.nbytes);
  if (rc >= 0)
    memcpy(dst, all + start, nbytes);
  free(all);
  return rc < 0 ? rc : 0;
}

static int32_t load_le32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                   (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static int pread_all(int fd, uint8_t *p, size_t n, int64_t off) {
  while (n > 0) {
    ssize_t r = pread(fd, p, n, (off_t)off);
    if (r <= 0)
      return -1;
    p += r;
    n -= (size_t)r;
    off += r;
  }
  return 0;
}

/* One piece of work: bytes [start, start + nbytes) of chunk i into dst. */
typedef struct piece {
  int64_t i, start;
  size_t nbytes;
  uint8_t *dst;
} piece;

typedef struct job {
  b2s_frame *f;
  int fd;                          /* the frame file, or -1: no lazy reads */
  int64_t size, header_len, nindex;
  const int64_t *index;
  pthread_mutex_t lock;            /* the frame reader, one at a time */
  const piece *pieces;
  int64_t npieces, next;           /* next under lock */
  int rc;                          /* first failure, under lock */
  int64_t bad;                     /* its piece */
} job;

typedef struct worker {
  job *j;
  b2s_ctx *ctx;
  uint8_t *buf;
  size_t cap;
} worker;

static int grow(worker *w, size_t n) {
  if (n <= w->cap)
    return 0;
  uint8_t *p = realloc(w->buf, n);
  if (p == NULL)
    return B2S_E_NOMEM;
  w->buf = p;
  w->cap = n;
  return 0;
}

/* Chunk i into w->buf at its offsets, the blocks holding bytes [start,
 * start + nbytes) readable: its cbytes, or -1 to go through the reader. */
static int64_t lazy_read(worker *w, int64_t i, int64_t start, size_t nbytes) {
  const job *j = w->j;
  if (j->fd < 0 || j->index == NULL || i < 0 || i >= j->nindex ||
      j->index[i] < 0 || nbytes == 0)
    return -1;                     /* special entries are synthesised */
  int64_t pos = j->header_len + j->index[i];
  uint8_t hdr[32];
  if (pos + 32 > j->size || pread_all(j->fd, hdr, 32, pos) < 0)
    return -1;
  int32_t nb = load_le32(hdr + 4), bs = load_le32(hdr + 8);
  int32_t cbytes = load_le32(hdr + 12);
  int64_t nblocks = bs > 0 ? ((int64_t)nb + bs - 1) / bs : 0;
  int64_t starts_end = 32 + 4 * nblocks;
  if (cbytes < 32 || pos + cbytes > j->size || nblocks <= 0 ||
      starts_end > cbytes || grow(w, (size_t)cbytes) < 0)
    return -1;
  memcpy(w->buf, hdr, 32);
  if (pread_all(j->fd, w->buf + 32, (size_t)(starts_end - 32), pos + 32) < 0)
    return -1;
  b2s_chunk_info ci;
  if (b2s_chunk_info_get(w->buf, (size_t)cbytes, &ci) < 0 || ci.special ||
      ci.memcpyed || ci.vl_blocks || ci.use_dict || ci.header_len != 32 ||
      ci.nblocks != nblocks || ci.blocksize != bs)
    return -1;
  /* the span of the blocks wanted, each from its start to the next start
   * above it (blocks need not be stored in order), read at once */
  const uint8_t *bst = w->buf + 32;
  int64_t lo = cbytes, hi = 0;
  for (int64_t b = start / bs; b <= (start + (int64_t)nbytes - 1) / bs; b++) {
    int64_t from = load_le32(bst + 4 * b), to = cbytes;
    for (int64_t o = 0; o < nblocks; o++) {
      int64_t x = load_le32(bst + 4 * o);
      if (x > from && x < to)
        to = x;
    }
    if (from < starts_end || from >= to)
      return -1;
    lo = from < lo ? from : lo;
    hi = to > hi ? to : hi;
  }
  if (lo >= hi || pread_all(j->fd, w->buf + lo, (size_t)(hi - lo), pos + lo) < 0)
    return -1;
  return cbytes;
}

/* Chunk i whole through the frame reader. */
static int64_t reader_read(worker *w, int64_t i) {
  job *j = w->j;
  pthread_mutex_lock(&j->lock);
  int32_t cbytes = 0;
  int rc = b2s_frame_chunk_sizes(j->f, i, &cbytes, NULL);
  if (rc >= 0)
    rc = grow(w, (size_t)cbytes);
  if (rc >= 0)
    rc = b2s_frame_chunk_read(j->f, i, w->buf, w->cap);
  pthread_mutex_unlock(&j->lock);
  return rc;
}

static void *work(void *arg) {
  worker *w = arg;
  job *j = w->j;
  for (;;) {
    pthread_mutex_lock(&j->lock);
    int64_t k = j->rc < 0 ? j->npieces : j->next++;
    pthread_mutex_unlock(&j->lock);
    if (k >= j->npieces)
      return NULL;
    const piece *p = &j->pieces[k];
    int64_t len = lazy_read(w, p->i, p->start, p->nbytes);
    if (len < 0)
      len = reader_read(w, p->i);
    int rc = len < 0 ? (int)len
                     : b2spy_gather_one(w->ctx, w->buf, (size_t)len, p->start,
                                        p->nbytes, p->dst);
    if (rc < 0) {
      pthread_mutex_lock(&j->lock);
      if (j->rc == 0 || k < j->bad) {
        j->rc = rc;
        j->bad = k;
      }
      pthread_mutex_unlock(&j->lock);
    }
  }
}

/* The pieces: one a chunk, or a lone chunk's range cut at block-sized
 * steps into one piece a thread (its blocks are decoded side by side). */
static piece *make_pieces(const int64_t *chunks, int64_t n, int64_t start,
                          size_t nbytes, uint8_t *dst, int nthreads,
                          int32_t blocksize, int64_t *npieces) {
  int64_t parts = 1;
  if (n == 1 && nthreads > 1 && blocksize > 0 &&
      (int64_t)nbytes >= 2 * (int64_t)blocksize)
    parts = nthreads;
  piece *p = calloc((size_t)(n * parts), sizeof *p);
  if (p == NULL)
    return NULL;
  if (parts == 1) {
    for (int64_t k = 0; k < n; k++)
      p[k] = (piece){chunks[k], start, nbytes, dst + (size_t)k * nbytes};
    *npieces = n;
    return p;
  }
  /* cut at multiples of the block size, counted from the chunk's start */
  int64_t end = start + (int64_t)nbytes, at = start, m = 0;
  int64_t nblk = (end - 1) / blocksize - start / blocksize + 1;
  for (int64_t t = 1; t <= parts && at < end; t++) {
    int64_t cut = t == parts ? end
                             : (start / blocksize + nblk * t / parts) * blocksize;
    if (cut > end)
      cut = end;
    if (cut <= at)
      continue;
    p[m++] = (piece){chunks[0], at, (size_t)(cut - at), dst + (at - start)};
    at = cut;
  }
  *npieces = m;
  return p;
}

/* Bytes [start, start + nbytes) of each chunk chunks[0..n) of the frame f
 * (opened from path) into dst, one after the other; nthreads threads at
 * most.  0, or a negative code with *bad the position in chunks of the
 * chunk that failed. */
B2SPY_API int b2spy_frame_gather(void *f, const char *path,
                                 const int64_t *chunks, int64_t n,
                                 int64_t start, void *dst, size_t nbytes,
                                 int nthreads, int64_t *bad) {
  *bad = -1;
  if (n <= 0)
    return 0;
  memset(dst, 0, (size_t)n * nbytes);  /* uninitialised chunks write nothing */
  job j = {.f = f, .fd = -1, .rc = 0};
  struct stat st;
  if (path && !b2s_frame_is_sparse(f) &&
      (j.fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
    if (fstat(j.fd, &st) == 0 && S_ISREG(st.st_mode)) {
      j.size = st.st_size;
      j.header_len = b2s_frame_header_get(f)->header_len;
      j.index = b2s_frame_index(f);
      j.nindex = b2s_frame_nchunks(f);
    } else {
      close(j.fd);
      j.fd = -1;
    }
  }
  if (nthreads < 1)
    nthreads = 1;
  if (nthreads > MAX_THREADS)
    nthreads = MAX_THREADS;
  const b2s_frame_header *h = b2s_frame_header_get(f);
  piece *pieces = make_pieces(chunks, n, start, nbytes, dst, nthreads,
                              h ? h->blocksize : 0, &j.npieces);
  int rc = pieces ? 0 : B2S_E_NOMEM;
  if (nthreads > j.npieces)
    nthreads = (int)j.npieces;
  worker w[MAX_THREADS] = {{0}};
  pthread_t tid[MAX_THREADS];
  int started = 0;
  pthread_mutex_init(&j.lock, NULL);
  j.pieces = pieces;
  for (int t = 0; rc == 0 && t < nthreads; t++) {
    w[t].j = &j;
    w[t].ctx = b2s_ctx_new();
    if (w[t].ctx == NULL)
      rc = B2S_E_NOMEM;
  }
  /* the calling thread works too: threads only beyond one */
  for (int t = 1; rc == 0 && t < nthreads; t++) {
    if (pthread_create(&tid[t], NULL, work, &w[t]) != 0)
      break;
    started = t;
  }
  if (rc == 0)
    work(&w[0]);
  for (int t = 1; t <= started; t++)
    pthread_join(tid[t], NULL);
  if (rc == 0 && j.rc < 0) {
    rc = j.rc;
    int64_t k = pieces[j.bad].i;
    for (int64_t q = 0; q < n; q++)
      if (chunks[q] == k) {
        *bad = q;
        break;
      }
  }
  for (int t = 0; t < MAX_THREADS; t++) {
    b2s_ctx_free(w[t].ctx);
    free(w[t].buf);
  }
  pthread_mutex_destroy(&j.lock);
  free(pieces);
  if (j.fd >= 0)
    close(j.fd);
  return rc;
}

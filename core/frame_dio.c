/* Direct I/O for the chunk data of a contiguous frame (opts.direct_io;
 * the API and who owns what: frame_dio.h).
 *
 * Buffered writes copy every byte into the page cache, whose pages must be
 * allocated and later written back and reclaimed; at the rates a detector
 * produces, that costs about as much CPU as compressing the data (0.7-2
 * core-seconds per GB written on a VM, measured with dd).  O_DIRECT sends
 * the bytes from our own memory to the device instead.
 *
 * Direct writes must start, end and sit in memory on the device's
 * alignment, chunks do not, so appended bytes are gathered in an aligned
 * stage that covers the file from an aligned position up to the end of the
 * chunk data.  A full stage is written out whole; a flush (before a
 * commit, or before the writer reads its own data) writes the pending
 * bytes rounded up to the alignment, and the block they end in stays in
 * the stage to be written again with the bytes that follow.  The padding
 * lands in the reserve, which the writer keeps one alignment unit ahead
 * of the data (b2s_dio_slack).  Bytes before the first aligned position of
 * the data region share a block with the commit records and go through the
 * page cache like everything else the writer writes (slots, records,
 * header): those are small and are read back by readers at once.
 *
 * A full stage goes to the stage's helper thread (frame_helper.h) and the
 * writer fills a second one meanwhile.  Written in the writer's own
 * thread, the device sat idle while the writer copied chunks into the
 * stage and the writer idle while the device worked (the daemon's writer
 * spent 57% of its time blocked in direct writes, 30% copying).  At most
 * one stage is in the helper's hands; every flush, and so every commit and
 * every read of the data, waits for it, after sending its own pending
 * bytes beside it (a busy daemon stream commits every group_interval_ms,
 * a few stages apart, so each commit waited for two writes in a row).  A
 * write that failed there is tried again by the writer, and its stage is
 * not reused until its bytes are out.  Under fault injection (a limit on
 * the writer's b2s_fio) stages are written in the writer's thread, so the
 * cut falls where the test put it.
 *
 * Only bytes no committed state points at are ever written here, so the
 * commit protocol and its crash guarantees are unchanged; the fdatasync of
 * a B2S_SYNC_FULL commit covers direct writes too. */
#define _GNU_SOURCE
#include "frame_dio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2s_frame_writer.h"
#include "frame_helper.h"

#define DIO_ALIGN_MIN 4096
#define STAGE_HUGE ((size_t)2 << 20)   /* x86-64's huge page */

/* Where the stage handed to the helper is. */
enum { OUT_NONE, OUT_QUEUED, OUT_FAILED };

struct b2s_dio {
  int dfd;                         /* the file opened with O_DIRECT */
  int fd;                          /* borrowed: the writer's descriptor */
  b2s_fio *io;                     /* borrowed: the writer's count and cut */
  int64_t align;
  size_t cap;                      /* bytes of each stage */

  /* The stage filling: file bytes from pos, len of them; ok says that
   * pos and len describe the file. */
  uint8_t *stage;
  size_t len;
  int64_t pos;
  bool ok;

  /* The other stage: handed to the helper (OUT_QUEUED), written by it
   * and failed (OUT_FAILED: the writer tries again), or free.  Allocated
   * at the first hand-over.  helper NULL: stages are written in the
   * writer's thread. */
  b2s_fwhelper *helper;
  uint8_t *spare;
  int out;                         /* OUT_* */
  size_t out_len;
  int64_t out_pos;
};

static int64_t align_down(int64_t v, int64_t a) { return v - v % a; }
static int64_t align_up(int64_t v, int64_t a) { return align_down(v + a - 1, a); }

static void raise_end(int64_t *file_end, int64_t end) {
  if (end > *file_end)
    *file_end = end;
}

/* The device's offset alignment, or 0 when the file takes no direct I/O. */
static int64_t dio_alignment(int fd) {
#ifdef STATX_DIOALIGN
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
      (sx.stx_mask & STATX_DIOALIGN)) {
    int64_t a = sx.stx_dio_offset_align > sx.stx_dio_mem_align
                    ? sx.stx_dio_offset_align
                    : sx.stx_dio_mem_align;
    if (a == 0)
      return 0;
    return a < DIO_ALIGN_MIN ? DIO_ALIGN_MIN : a;
  }
#else
  (void)fd;
#endif
  return DIO_ALIGN_MIN;   /* the open with O_DIRECT already succeeded */
}

/* A stage: aligned for the device and, where the kernel offers huge pages
 * on request, backed by them.  Every direct write pins its buffer's pages
 * first; with 4 KiB pages that was 30% of the daemon's writer thread (the
 * flush's write) and splits each stage into a thousand segments. */
static void *stage_alloc(int64_t align, size_t cap) {
  size_t a = (size_t)align < STAGE_HUGE ? STAGE_HUGE : (size_t)align;
  void *p = NULL;
  if (posix_memalign(&p, a, cap) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, cap, MADV_HUGEPAGE);   /* a hint: failure leaves small pages */
#endif
  return p;
}

/* ---- open and free --------------------------------------------------------- */

b2s_dio *b2s_dio_open(const char *path, int fd, b2s_fio *io) {
  int dfd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
  struct stat a, b;
  if (dfd < 0)
    return NULL;   /* e.g. EINVAL: the file system has no direct I/O */
  int64_t align = dio_alignment(dfd);
  size_t cap = B2S_FWRITER_STAGE;
  if (align > 0 && (size_t)align > cap / 4)
    cap = (size_t)align * 4;
  void *stage = NULL;
  b2s_dio *d = NULL;
  if (align == 0 || fstat(dfd, &a) < 0 || fstat(fd, &b) < 0 ||
      a.st_dev != b.st_dev || a.st_ino != b.st_ino ||
      (stage = stage_alloc(align, cap)) == NULL ||
      (d = calloc(1, sizeof *d)) == NULL) {
    free(stage);
    close(dfd);
    return NULL;
  }
  *d = (b2s_dio){.dfd = dfd, .fd = fd, .io = io, .align = align, .cap = cap,
                 .stage = stage, .out = OUT_NONE};
  d->helper = b2s_fwhelper_new();   /* NULL: stages are written here */
  return d;
}

void b2s_dio_free(b2s_dio *d) {
  if (d == NULL)
    return;
  b2s_fwhelper_free(d->helper);   /* first: it may be writing with dfd */
  close(d->dfd);
  free(d->stage);
  free(d->spare);
  free(d);
}

int64_t b2s_dio_slack(const b2s_dio *d) { return d != NULL ? d->align : 0; }

size_t b2s_dio_stage_bytes(const b2s_dio *d) {
  return d != NULL ? 2 * d->cap : 0;
}

/* ---- the stage handed over ------------------------------------------------- */

/* The spare stage and the helper's thread, at the first hand-over. */
static int out_start(b2s_dio *d) {
  if (d->spare == NULL && (d->spare = stage_alloc(d->align, d->cap)) == NULL)
    return B2S_E_NOMEM;
  return b2s_fwhelper_start(d->helper);
}

/* Wait until the stage handed over is on the device.  A failed write is
 * tried again here; until it succeeds the stage stays pending and every
 * later wait tries it again. */
static int out_wait(b2s_dio *d, int64_t *file_end) {
  if (d->out == OUT_NONE)
    return 0;
  int rc = d->out == OUT_QUEUED ? b2s_fwhelper_wait(d->helper) : -1;
  if (rc < 0)
    rc = b2s_fio_write_direct(d->io, d->dfd, d->fd, d->spare, d->out_len,
                              d->out_pos);
  else
    b2s_fio_count(d->io, (int64_t)d->out_len);
  d->out = rc == 0 ? OUT_NONE : OUT_FAILED;
  if (rc == 0)
    raise_end(file_end, d->out_pos + (int64_t)d->out_len);
  return rc;
}

/* ---- the stage filling ----------------------------------------------------- */

static int stage_pwrite(b2s_dio *d, size_t n, int64_t *file_end) {
  int rc = b2s_fio_write_direct(d->io, d->dfd, d->fd, d->stage, n, d->pos);
  if (rc == 0)
    raise_end(file_end, d->pos + (int64_t)n);
  return rc;
}

/* The pending bytes go out while the helper's stage, which ends where they
 * begin, may still be in flight: two writes reach the device at once
 * instead of one after the other, and both are done before this returns
 * (a commit record must never name bytes still on their way). */
int b2s_dio_flush(b2s_dio *d, int64_t *file_end) {
  if (d == NULL)
    return 0;
  if (!d->ok || d->len == 0)
    return out_wait(d, file_end);
  size_t len = (size_t)align_up((int64_t)d->len, d->align);
  memset(d->stage + d->len, 0, len - d->len);
  int rc = stage_pwrite(d, len, file_end);
  int rc2 = out_wait(d, file_end);
  if (rc < 0 || rc2 < 0)
    return rc < 0 ? rc : rc2;
  /* the block the data ends in is written again when it fills */
  size_t keep = (size_t)align_down((int64_t)d->len, d->align);
  memmove(d->stage, d->stage + keep, d->len - keep);
  d->pos += (int64_t)keep;
  d->len -= keep;
  return 0;
}

void b2s_dio_forget(b2s_dio *d) {
  if (d != NULL)
    d->ok = false;
}

/* Make the stage end at pos.  Inside the stage this only drops bytes of a
 * failed append; elsewhere the stage starts over at the block holding pos,
 * with that block's bytes before pos read back from the file. */
static int stage_seek(b2s_dio *d, int64_t pos, int64_t *file_end) {
  if (d->ok && pos >= d->pos && pos <= d->pos + (int64_t)d->len) {
    d->len = (size_t)(pos - d->pos);
    return 0;
  }
  int rc = b2s_dio_flush(d, file_end);
  if (rc < 0)
    return rc;
  d->pos = align_down(pos, d->align);
  d->len = (size_t)(pos - d->pos);
  memset(d->stage, 0, d->len);
  if (d->len > 0 && d->pos < *file_end) {
    ssize_t k = pread(d->fd, d->stage, d->len, (off_t)d->pos);
    if (k < 0)
      return -errno;
  }
  d->ok = true;
  return 0;
}

/* Send the full stage on its way: to the helper, taking the spare in its
 * place, or, without one, straight to the device. */
static int stage_out(b2s_dio *d, int64_t *file_end) {
  if (d->helper == NULL || b2s_fio_limited(d->io) || out_start(d) < 0)
    return stage_pwrite(d, d->cap, file_end);
  int rc = out_wait(d, file_end);
  if (rc < 0)
    return rc;
  uint8_t *full = d->stage;
  d->stage = d->spare;
  d->spare = full;
  d->out_len = d->cap;
  d->out_pos = d->pos;
  d->out = OUT_QUEUED;
  b2s_fwhelper_write(d->helper, d->dfd, full, d->cap, d->pos);
  return 0;
}

int b2s_dio_write(b2s_dio *d, const void *p, size_t n, int64_t pos,
                  int64_t floor, int64_t *file_end) {
  /* the block holding the commit records stays in the page cache */
  int64_t lo = align_up(floor, d->align);
  if (pos < lo) {
    size_t head = (size_t)(lo - pos) < n ? (size_t)(lo - pos) : n;
    int rc = b2s_fio_write(d->io, d->fd, p, head, pos);
    if (rc < 0 || head == n)
      return rc;
    p = (const uint8_t *)p + head;
    n -= head;
    pos += (int64_t)head;
  }
  int rc = stage_seek(d, pos, file_end);
  while (rc == 0 && n > 0) {
    size_t k = d->cap - d->len;
    k = k < n ? k : n;
    memcpy(d->stage + d->len, p, k);
    d->len += k;
    p = (const uint8_t *)p + k;
    n -= k;
    if (d->len == d->cap) {
      rc = stage_out(d, file_end);
      if (rc == 0) {
        d->pos += (int64_t)d->cap;
        d->len = 0;
      }
    }
  }
  return rc;
}

/* Direct I/O for the chunk data of a contiguous frame (opts.direct_io).
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
 * lands in the reserve, which b2s_fw_make_room keeps one alignment unit ahead
 * of the data (b2s_fw_dio_slack).  Bytes before the first aligned position of
 * the data region share a block with the commit records and go through the
 * page cache like everything else the writer writes (slots, records,
 * header): those are small and are read back by readers at once.
 *
 * A full stage goes to the writer's helper thread (frame_helper.c) and the
 * writer fills a second one meanwhile.  Written in the writer's own
 * thread, the device sat idle while the writer copied chunks into the
 * stage and the writer idle while the device worked (the daemon's writer
 * spent 57% of its time blocked in direct writes, 30% copying).  At most
 * one stage is in the helper's hands; every flush, and so every commit and
 * every read of the data, waits for it, after sending its own pending
 * bytes beside it (a busy daemon stream commits every group_interval_ms,
 * a few stages apart, so each commit waited for two writes in a row).  A write that failed there is tried again by
 * the writer, and its stage is not reused until its bytes are out.  Under fault injection
 * (write_limit) stages are written in the writer's thread, so the cut falls
 * where the test put it.
 *
 * Only bytes no committed state points at are ever written here, so the
 * commit protocol and its crash guarantees are unchanged; the fdatasync of
 * a B2S_SYNC_FULL commit covers direct writes too. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frame_helper.h"
#include "frame_io.h"
#include "fwriter_internal.h"

#define DIO_ALIGN_MIN 4096
#define STAGE_HUGE ((size_t)2 << 20)   /* x86-64's huge page */

static int64_t align_down(int64_t v, int64_t a) { return v - v % a; }
static int64_t align_up(int64_t v, int64_t a) { return align_down(v + a - 1, a); }

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

/* ---- the helper's stage ------------------------------------------------ */

/* The helper's spare stage and its thread, at the first hand-over. */
static int out_start(fw_helper *h, int64_t align) {
  if (h->started)
    return 0;
  if (h->buf == NULL && (h->buf = stage_alloc(align, h->cap)) == NULL)
    return B2S_E_NOMEM;
  return b2s_fw_helper_start(h);
}

/* Wait until the stage handed over is on the device.  A failed write is
 * tried again here; until it succeeds the stage stays pending and every
 * later wait tries it again. */
static int out_wait(b2s_fwriter *w) {
  fw_helper *o = w->helper;
  if (o == NULL)
    return 0;
  pthread_mutex_lock(&o->mu);
  while (o->state == FW_STAGE_QUEUED)
    pthread_cond_wait(&o->cv, &o->mu);
  int state = o->state, rc = o->rc;
  pthread_mutex_unlock(&o->mu);
  if (state == FW_STAGE_IDLE)
    return 0;
  if (rc < 0)
    rc = b2s_fw_pwrite(w, w->dfd, o->buf, o->len, o->pos);
  else
    w->written += (int64_t)o->len;
  pthread_mutex_lock(&o->mu);
  o->rc = rc;
  if (rc == 0)
    o->state = FW_STAGE_IDLE;
  pthread_mutex_unlock(&o->mu);
  if (rc == 0 && o->pos + (int64_t)o->len > w->file_end)
    w->file_end = o->pos + (int64_t)o->len;
  return rc;
}

/* ---- the stage ------------------------------------------------------------ */

void b2s_fw_dio_open(b2s_fwriter *w, const char *path) {
  int fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
  struct stat a, b;
  if (fd < 0)
    return;   /* e.g. EINVAL: the file system has no direct I/O */
  int64_t align = dio_alignment(fd);
  size_t cap = B2S_FWRITER_STAGE;
  if (align > 0 && (size_t)align > cap / 4)
    cap = (size_t)align * 4;
  void *stage = NULL;
  if (align == 0 || fstat(fd, &a) < 0 || fstat(w->fd, &b) < 0 ||
      a.st_dev != b.st_dev || a.st_ino != b.st_ino ||
      (stage = stage_alloc(align, cap)) == NULL) {
    close(fd);
    return;
  }
  w->dfd = fd;
  w->dio_align = align;
  w->stage = stage;
  w->stage_cap = cap;
  w->stage_ok = false;
  w->helper = b2s_fw_helper_new();   /* NULL: stages are written synchronously */
  if (w->helper != NULL) {
    w->helper->dfd = fd;
    w->helper->cap = cap;
  }
}

void b2s_fw_dio_close(b2s_fwriter *w) {
  if (w->dfd >= 0)
    close(w->dfd);
  w->dfd = -1;
  free(w->stage);
  w->stage = NULL;
  w->stage_ok = false;
}

int64_t b2s_fw_dio_slack(const b2s_fwriter *w) {
  return w->dfd >= 0 ? w->dio_align : 0;
}

static int dio_pwrite(b2s_fwriter *w, size_t n, int64_t pos) {
  int rc = b2s_fw_pwrite(w, w->dfd, w->stage, n, pos);
  if (rc == 0 && pos + (int64_t)n > w->file_end)
    w->file_end = pos + (int64_t)n;
  return rc;
}

/* The pending bytes go out while the helper's stage, which ends where they
 * begin, may still be in flight: two writes reach the device at once
 * instead of one after the other, and both are done before this returns
 * (a commit record must never name bytes still on their way). */
int b2s_fw_dio_flush(b2s_fwriter *w) {
  if (w->dfd < 0)
    return 0;
  if (!w->stage_ok || w->stage_len == 0)
    return out_wait(w);
  int64_t a = w->dio_align;
  size_t len = (size_t)align_up((int64_t)w->stage_len, a);
  memset(w->stage + w->stage_len, 0, len - w->stage_len);
  int rc = dio_pwrite(w, len, w->stage_pos);
  int rc2 = out_wait(w);
  if (rc < 0 || rc2 < 0)
    return rc < 0 ? rc : rc2;
  /* the block the data ends in is written again when it fills */
  size_t keep = (size_t)align_down((int64_t)w->stage_len, a);
  memmove(w->stage, w->stage + keep, w->stage_len - keep);
  w->stage_pos += (int64_t)keep;
  w->stage_len -= keep;
  return 0;
}

void b2s_fw_dio_forget(b2s_fwriter *w) { w->stage_ok = false; }

/* Make the stage end at pos.  Inside the stage this only drops bytes of a
 * failed append; elsewhere the stage starts over at the block holding pos,
 * with that block's bytes before pos read back from the file. */
static int stage_seek(b2s_fwriter *w, int64_t pos) {
  if (w->stage_ok && pos >= w->stage_pos &&
      pos <= w->stage_pos + (int64_t)w->stage_len) {
    w->stage_len = (size_t)(pos - w->stage_pos);
    return 0;
  }
  int rc = b2s_fw_dio_flush(w);
  if (rc < 0)
    return rc;
  w->stage_pos = align_down(pos, w->dio_align);
  w->stage_len = (size_t)(pos - w->stage_pos);
  memset(w->stage, 0, w->stage_len);
  if (w->stage_len > 0 && w->stage_pos < w->file_end) {
    ssize_t k = pread(w->fd, w->stage, w->stage_len, (off_t)w->stage_pos);
    if (k < 0)
      return -errno;
  }
  w->stage_ok = true;
  return 0;
}

/* Send the full stage on its way: to the helper, taking the spare in its
 * place, or, without one, straight to the device. */
static int stage_out(b2s_fwriter *w) {
  fw_helper *o = w->helper;
  if (o == NULL || w->write_limit >= 0 || out_start(o, w->dio_align) < 0)
    return dio_pwrite(w, w->stage_cap, w->stage_pos);
  int rc = out_wait(w);
  if (rc < 0)
    return rc;
  pthread_mutex_lock(&o->mu);
  uint8_t *full = w->stage;
  w->stage = o->buf;
  o->buf = full;
  o->len = w->stage_cap;
  o->pos = w->stage_pos;
  o->state = FW_STAGE_QUEUED;
  pthread_cond_broadcast(&o->cv);
  pthread_mutex_unlock(&o->mu);
  return 0;
}

int b2s_fw_data_write(b2s_fwriter *w, const void *p, size_t n, int64_t pos) {
  if (w->dfd < 0)
    return b2s_fw_pwrite(w, w->fd, p, n, pos);
  /* the block holding the commit records stays in the page cache */
  int64_t lo = align_up(w->base + FW_AREA, w->dio_align);
  if (pos < lo) {
    size_t head = (size_t)(lo - pos) < n ? (size_t)(lo - pos) : n;
    int rc = b2s_fw_pwrite(w, w->fd, p, head, pos);
    if (rc < 0 || head == n)
      return rc;
    p = (const uint8_t *)p + head;
    n -= head;
    pos += (int64_t)head;
  }
  int rc = stage_seek(w, pos);
  while (rc == 0 && n > 0) {
    size_t k = w->stage_cap - w->stage_len;
    k = k < n ? k : n;
    memcpy(w->stage + w->stage_len, p, k);
    w->stage_len += k;
    p = (const uint8_t *)p + k;
    n -= k;
    if (w->stage_len == w->stage_cap) {
      rc = stage_out(w);
      if (rc == 0) {
        w->stage_pos += (int64_t)w->stage_cap;
        w->stage_len = 0;
      }
    }
  }
  return rc;
}

/* The frame writer's raw file I/O: whole writes and reads at a position,
 * the fault-injection cut, and the data sync of a B2S_SYNC_FULL commit. */
#include <errno.h>
#include <unistd.h>

#include "frame_io.h"
#include "fwriter_internal.h"

int b2s_fw_pwrite(b2s_fwriter *w, int fd, const void *p, size_t n, int64_t pos) {
  const uint8_t *s = p;
  /* direct writes go whole (see frame_dio.c): pieces only add round trips */
  bool direct = w->dfd >= 0 && fd == w->dfd;
  if (w->write_limit >= 0) {
    /* Fault injection: the cut write lands partially, then nothing more.
     * A cut direct write lands through the page cache: it is unaligned. */
    int64_t left = w->write_limit - w->written;
    if (left < (int64_t)n) {
      if (left > 0) {
        int rc = b2s_fw_pwrite(&(b2s_fwriter){.write_limit = -1, .dfd = -1},
                           direct ? w->fd : fd, p, (size_t)left, pos);
        if (rc < 0)
          return rc;
        w->written += left;
      }
      return B2S_E_IO_LIMIT;
    }
  }
  while (n > 0) {
    size_t piece = direct || n < FW_WRITE_PIECE ? n : FW_WRITE_PIECE;
    ssize_t k = pwrite(fd, s, piece, (off_t)pos);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return k < 0 ? -errno : -EIO;
    s += k;
    pos += k;
    n -= (size_t)k;
    w->written += k;
  }
  return 0;
}

int b2s_fw_pread(int fd, void *p, size_t n, int64_t pos) {
  uint8_t *d = p;
  while (n > 0) {
    ssize_t k = pread(fd, d, n, (off_t)pos);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return -errno;
    if (k == 0)
      return B2S_E_TRUNCATED;
    d += k;
    pos += k;
    n -= (size_t)k;
  }
  return 0;
}

int b2s_fw_sync(b2s_fwriter *w) {
  if (w->opts.sync != B2S_SYNC_FULL)
    return 0;
  return fdatasync(w->fd) < 0 ? -errno : 0;
}


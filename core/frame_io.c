/* The frame writer's raw file I/O: whole writes and reads at a position,
 * the count of bytes written and the fault-injection cut (frame_io.h). */
#include "frame_io.h"

#include <errno.h>
#include <unistd.h>

#include "b2s_errors.h"

void b2s_fio_init(b2s_fio *io) { *io = (b2s_fio){.written = 0, .limit = -1}; }

/* Write everything, in pieces unless `whole`. */
static int write_all(b2s_fio *io, int fd, const uint8_t *s, size_t n,
                     int64_t pos, bool whole) {
  while (n > 0) {
    size_t piece = whole || n < FW_WRITE_PIECE ? n : FW_WRITE_PIECE;
    ssize_t k = pwrite(fd, s, piece, (off_t)pos);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return k < 0 ? -errno : -EIO;
    s += k;
    pos += k;
    n -= (size_t)k;
    io->written += k;
  }
  return 0;
}

/* Fault injection: a write that crosses the limit lands partially
 * (through fd, in pieces), then nothing more.  1: the write goes ahead. */
static int cut(b2s_fio *io, int fd, const void *p, size_t n, int64_t pos) {
  if (io->limit < 0)
    return 1;
  int64_t left = io->limit - io->written;
  if (left >= (int64_t)n)
    return 1;
  if (left > 0) {
    b2s_fio raw;
    b2s_fio_init(&raw);
    int rc = write_all(&raw, fd, p, (size_t)left, pos, false);
    if (rc < 0)
      return rc;
    io->written += left;
  }
  return B2S_E_IO_LIMIT;
}

int b2s_fio_write(b2s_fio *io, int fd, const void *p, size_t n, int64_t pos) {
  int rc = cut(io, fd, p, n, pos);
  return rc <= 0 ? rc : write_all(io, fd, p, n, pos, false);
}

int b2s_fio_write_direct(b2s_fio *io, int dfd, int fd, const void *p, size_t n,
                         int64_t pos) {
  int rc = cut(io, fd, p, n, pos);
  return rc <= 0 ? rc : write_all(io, dfd, p, n, pos, true);
}

int b2s_fio_pread(int fd, void *p, size_t n, int64_t pos) {
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

void b2s_fio_count(b2s_fio *io, int64_t n) { io->written += n; }

int64_t b2s_fio_written(const b2s_fio *io) { return io->written; }

void b2s_fio_set_limit(b2s_fio *io, int64_t bytes) {
  io->limit = bytes < 0 ? -1 : io->written + bytes;
}

bool b2s_fio_limited(const b2s_fio *io) { return io->limit >= 0; }

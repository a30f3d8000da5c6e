/* Raw frame file I/O (frame_io.c): whole writes and reads at a position,
 * the count of bytes written, and the fault-injection cut.  The bottom of
 * the frame files: every other one may call it, it calls nothing of
 * theirs and knows no writer.  Internal to core.
 *
 * Ownership: a b2s_fio belongs to whoever embeds it (the writer's is its
 * `io`, which its direct-I/O stage borrows; recovery and the helper
 * thread keep their own, uncut).  Its fields are frame_io.c's alone:
 * everyone else goes through the functions below.  Buffers and
 * descriptors stay the caller's. */
#ifndef B2S_FRAME_IO_H
#define B2S_FRAME_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes go out in pieces: one large write makes the page cache use large
 * folios there, and every later small write into such a folio (the index
 * entries of a slot) costs time proportional to the folio (seen on ext4);
 * writing into a hole in pieces of 256 KiB and more is also ten times
 * slower than in 64 KiB pieces, and 16 KiB pieces take half as long again
 * (ext4, kernel 6.18). */
#define FW_WRITE_PIECE ((size_t)65536)

typedef struct b2s_fio {
  int64_t written;                 /* bytes written through it */
  int64_t limit;                   /* fault injection: writes stop at this
                                      count of written bytes; -1: never */
} b2s_fio;

/* Nothing written, no limit. */
void b2s_fio_init(b2s_fio *io);

/* Write n bytes at pos of fd, all of them or an error, in pieces of
 * FW_WRITE_PIECE; counts them and honours the limit (a write that crosses
 * it lands partially, then B2S_E_IO_LIMIT). */
int b2s_fio_write(b2s_fio *io, int fd, const void *p, size_t n, int64_t pos);
/* The same on dfd, a descriptor opened with O_DIRECT, in one piece
 * (pieces only add round trips there).  A cut write lands through fd, the
 * same file without O_DIRECT: it is unaligned. */
int b2s_fio_write_direct(b2s_fio *io, int dfd, int fd, const void *p, size_t n,
                         int64_t pos);
/* Read n bytes at pos; B2S_E_TRUNCATED when the file ends first. */
int b2s_fio_pread(int fd, void *p, size_t n, int64_t pos);

/* n bytes written on io's behalf elsewhere (the helper thread) count as
 * written through it. */
void b2s_fio_count(b2s_fio *io, int64_t n);
int64_t b2s_fio_written(const b2s_fio *io);
/* Fail every write after `bytes` more bytes; -1: no limit. */
void b2s_fio_set_limit(b2s_fio *io, int64_t bytes);
/* Whether a limit is set (fault injection is on). */
bool b2s_fio_limited(const b2s_fio *io);

#endif

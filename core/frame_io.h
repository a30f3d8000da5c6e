/* Raw frame file I/O (frame_io.c), under everything else the writer does:
 * frame_commit.c, frame_dio.c, frame_wopen.c, frame_writer.c and
 * frame_recover.c call it, and the reader (frame.c) its b2s_fw_pread; it calls
 * nothing of theirs.  Internal to core.
 *
 * Ownership: buffers stay the caller's; the descriptors are the writer's
 * (or the caller's, for the throwaway writers that recovery and the
 * direct-I/O helper pass in). */
#ifndef B2S_FRAME_IO_H
#define B2S_FRAME_IO_H

#include <stddef.h>
#include <stdint.h>

#include "b2s_frame_writer.h"

/* Writes go out in pieces: one large write makes the page cache use large
 * folios there, and every later small write into such a folio (the index
 * entries of a slot) costs time proportional to the folio (seen on ext4);
 * writing into a hole in pieces of 256 KiB and more is also ten times
 * slower than in 64 KiB pieces, and 16 KiB pieces take half as long again
 * (ext4, kernel 6.18). */
#define FW_WRITE_PIECE ((size_t)65536)

/* Write n bytes at pos of fd, all of them or an error; counts them in
 * w->written and honours w->write_limit (the fault-injection hook).  A
 * write on w->dfd goes whole, others in pieces. */
int b2s_fw_pwrite(b2s_fwriter *w, int fd, const void *p, size_t n, int64_t pos);
/* Read n bytes at pos; B2S_E_TRUNCATED when the file ends first. */
int b2s_fw_pread(int fd, void *p, size_t n, int64_t pos);
/* fdatasync of the writer's file under B2S_SYNC_FULL, else nothing. */
int b2s_fw_sync(b2s_fwriter *w);

#endif

/* The direct-I/O stage of a contiguous frame's chunk data (frame_dio.c;
 * the writer's opts.direct_io).  Internal to core.
 *
 * The stage decides whether the file takes O_DIRECT at all (b2s_dio_open
 * gives NULL when not: the writer then writes its chunk data through the
 * page cache itself), and then which bytes go out direct: it gathers the
 * chunk bytes appended at the end of the data in aligned stages, writes
 * full ones (on its helper thread, frame_helper.h, while the next one
 * fills), and writes what is pending, rounded up to the alignment, when
 * flushed.  Bytes before the first aligned position at or after the
 * writer's `floor` go through the page cache.  Only bytes no committed
 * state points at are ever given to it.
 *
 * The writer's file end: the calls that may write take the writer's idea
 * of where its file ends (*file_end), read it (bytes before it are read
 * back to start a stage mid-block) and raise it past what they write,
 * padding included.
 *
 * Ownership: the writer owns its stage (b2s_dio_open, b2s_dio_free) and
 * calls it from its own thread only.  The stage owns its O_DIRECT
 * descriptor, both stage buffers and its helper; fd (the writer's buffered
 * descriptor of the same file) and io (the writer's count and
 * fault-injection cut) are borrowed from the writer, which keeps them
 * until b2s_dio_free. */
#ifndef B2S_FRAME_DIO_H
#define B2S_FRAME_DIO_H

#include <stddef.h>
#include <stdint.h>

#include "frame_io.h"

typedef struct b2s_dio b2s_dio;

/* The stage of the file at path, open as fd; NULL when the file system
 * takes no direct I/O there (or without memory). */
b2s_dio *b2s_dio_open(const char *path, int fd, b2s_fio *io);
/* Stop its helper (a stage handed over is written first), close, free.
 * Pending bytes are dropped, as a crash would.  Accepts NULL. */
void b2s_dio_free(b2s_dio *d);

/* Bytes the reserve must keep past the chunk data for a flush's padding:
 * the alignment; 0 for NULL. */
int64_t b2s_dio_slack(const b2s_dio *d);
/* The most memory its stages take (two: one filling, one being written);
 * 0 for NULL. */
size_t b2s_dio_stage_bytes(const b2s_dio *d);

/* Chunk bytes at pos, the end of the chunk data. */
int b2s_dio_write(b2s_dio *d, const void *p, size_t n, int64_t pos,
                  int64_t floor, int64_t *file_end);
/* Write the staged bytes and wait for the stage being written, if any
 * (before a commit, or a read of the data).  0 for NULL. */
int b2s_dio_flush(b2s_dio *d, int64_t *file_end);
/* The data end moved other than by appending: the stage starts over. */
void b2s_dio_forget(b2s_dio *d);

#endif

/* A frame file opened for recovery (frame_rfile.c): the contiguous frame
 * file or a sparse frame's chunks.b2frame, at its natural header length
 * (`base`, from the metalayer section, which no commit rewrites), with
 * its commit records.  Below both the writer's open (which asks whether a
 * frame that does not open has records to recover from) and recovery
 * (which restores from them), so neither calls the other for it.
 * Internal to core.
 *
 * Ownership: the caller owns the fw_rfile and closes it with
 * b2s_fw_rfile_close (also after a failed open). */
#ifndef B2S_FRAME_RFILE_H
#define B2S_FRAME_RFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "frame_record.h"

typedef struct fw_rfile {
  bool sparse;
  int fd, dirfd;
  int lockfd;                      /* the frame's lock, or -1 */
  int64_t size, base;
} fw_rfile;

/* Open path's frame file; with `lock`, the frame's lock (b2s_frame_lock.h)
 * is taken first: recovery rewrites the header and removes files, which
 * must never happen beside a writer. */
int b2s_fw_rfile_open(const char *path, bool lock, fw_rfile *r);
/* b2s_fw_rfile_open, then the commit records (*nvalid of them valid). */
int b2s_fw_rfile_records(const char *path, bool lock, fw_rfile *r,
                         fw_record rec[2], int *nvalid);
void b2s_fw_rfile_close(fw_rfile *r);
/* 1 when path has valid commit records, 0 when not. */
int b2s_fw_has_records(const char *path);

#endif

/* A sparse frame's chunk files (frame_sparse.c): which ids are in use,
 * the new files a B2S_SYNC_FULL commit syncs first, and the files of
 * deleted or replaced chunks, removed once the commit no longer needs
 * them.  Internal to core.
 *
 * Ownership: the writer embeds one (its `cf`), which only the functions
 * below touch: frame_writer.c stores and releases chunks through them,
 * frame_commit.c syncs and removes files at commit, and free closes what
 * is left.  The directory descriptor stays the writer's. */
#ifndef B2S_FRAME_SPARSE_H
#define B2S_FRAME_SPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame_io.h"

typedef struct fw_chunkfiles {
  uint64_t *ids;                   /* bit per id in use (referenced, or
                                      awaiting removal) */
  int64_t ids_words, id_hint;      /* id_hint: no free id below it */
  int64_t *unlink_ids;             /* to remove after the next commit */
  int64_t nunlink, unlink_cap;
  int *sync_fds;                   /* new files to fdatasync at the commit */
  int nsync, sync_cap;
} fw_chunkfiles;

/* Close the files awaiting sync, free.  The struct starts zeroed. */
void b2s_fw_chunkfiles_fini(fw_chunkfiles *cf);

/* Mark the ids an index names (entries >= 0) as in use; allocation then
 * restarts from the lowest free id. */
int b2s_fw_chunkfiles_mark(fw_chunkfiles *cf, const int64_t *index,
                           int64_t n);
/* Write a chunk to a new file of the lowest free id in dirfd; *id gets
 * it.  With `keep` (B2S_SYNC_FULL) the file stays open for the commit's
 * sync. */
int b2s_fw_chunkfiles_store(fw_chunkfiles *cf, b2s_fio *io, int dirfd,
                            bool keep, const void *chunk, size_t cbytes,
                            int64_t *id);
/* id's file is no longer referenced once the next commit is out. */
int b2s_fw_chunkfiles_release(fw_chunkfiles *cf, int64_t id);
/* Before the commit: with `full`, fdatasync the new files and the
 * directory; their descriptors are closed either way. */
int b2s_fw_chunkfiles_sync(fw_chunkfiles *cf, int dirfd, bool full);
/* After the commit: remove the released files (a leftover is only an
 * orphan file, which recovery removes) and free their ids. */
void b2s_fw_chunkfiles_unlink(fw_chunkfiles *cf, int dirfd);

#endif

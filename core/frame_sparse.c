/* A sparse frame's chunk files: ids, files to sync, files to remove
 * (frame_sparse.h). */
#include "frame_sparse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b2s_errors.h"

void b2s_fw_chunkfiles_fini(fw_chunkfiles *cf) {
  for (int i = 0; i < cf->nsync; i++)
    close(cf->sync_fds[i]);
  free(cf->ids);
  free(cf->unlink_ids);
  free(cf->sync_fds);
  *cf = (fw_chunkfiles){0};
}

static int id_mark(fw_chunkfiles *cf, int64_t id) {
  int64_t word = id / 64;
  if (word >= cf->ids_words) {
    int64_t nw = cf->ids_words ? cf->ids_words * 2 : 64;
    while (nw <= word)
      nw *= 2;
    uint64_t *p = realloc(cf->ids, (size_t)nw * sizeof *p);
    if (p == NULL)
      return B2S_E_NOMEM;
    memset(p + cf->ids_words, 0, (size_t)(nw - cf->ids_words) * sizeof *p);
    cf->ids = p;
    cf->ids_words = nw;
  }
  cf->ids[word] |= UINT64_C(1) << (id % 64);
  return 0;
}

static void id_free(fw_chunkfiles *cf, int64_t id) {
  cf->ids[id / 64] &= ~(UINT64_C(1) << (id % 64));
  if (id < cf->id_hint)
    cf->id_hint = id;
}

int b2s_fw_chunkfiles_mark(fw_chunkfiles *cf, const int64_t *index,
                           int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    int rc = index[i] >= 0 ? id_mark(cf, index[i]) : 0;
    if (rc < 0)
      return rc;
  }
  /* allocation restarts from the lowest free id */
  cf->id_hint = 0;
  return 0;
}

/* The lowest id not in use keeps ids small, so c-blosc2's check
 * id <= cbytes - 32 holds (spec 5.4). */
static int64_t id_alloc(fw_chunkfiles *cf) {
  int64_t id = cf->id_hint;
  while (id / 64 < cf->ids_words && (cf->ids[id / 64] >> (id % 64) & 1))
    id++;
  if (id > (int64_t)UINT32_MAX)
    return B2S_E_CHUNK_ID;
  int rc = id_mark(cf, id);
  if (rc < 0)
    return rc;
  cf->id_hint = id + 1;
  return id;
}

static int keep_for_sync(fw_chunkfiles *cf, int fd, bool keep) {
  if (!keep)
    return close(fd) < 0 ? -errno : 0;
  if (cf->nsync == cf->sync_cap) {
    int cap = cf->sync_cap ? cf->sync_cap * 2 : 16;
    int *p = realloc(cf->sync_fds, (size_t)cap * sizeof *p);
    if (p == NULL) {
      close(fd);
      return B2S_E_NOMEM;
    }
    cf->sync_fds = p;
    cf->sync_cap = cap;
  }
  cf->sync_fds[cf->nsync++] = fd;
  return 0;
}

static int write_file(fw_chunkfiles *cf, b2s_fio *io, int dirfd, bool keep,
                      int64_t id, const void *chunk, size_t cbytes) {
  char name[32];
  snprintf(name, sizeof name, "%08X.chunk", (unsigned)id);
  int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  0666);
  if (fd < 0)
    return -errno;
  int rc = b2s_fio_write(io, fd, chunk, cbytes, 0);
  if (rc < 0) {
    close(fd);
    return rc;
  }
  return keep_for_sync(cf, fd, keep);
}

int b2s_fw_chunkfiles_store(fw_chunkfiles *cf, b2s_fio *io, int dirfd,
                            bool keep, const void *chunk, size_t cbytes,
                            int64_t *id) {
  int64_t k = id_alloc(cf);
  if (k < 0)
    return (int)k;
  int rc = write_file(cf, io, dirfd, keep, k, chunk, cbytes);
  if (rc < 0) {
    id_free(cf, k);
    return rc;
  }
  *id = k;
  return 0;
}

int b2s_fw_chunkfiles_release(fw_chunkfiles *cf, int64_t id) {
  if (cf->nunlink == cf->unlink_cap) {
    int64_t cap = cf->unlink_cap ? cf->unlink_cap * 2 : 16;
    int64_t *p = realloc(cf->unlink_ids, (size_t)cap * sizeof *p);
    if (p == NULL)
      return B2S_E_NOMEM;
    cf->unlink_ids = p;
    cf->unlink_cap = cap;
  }
  cf->unlink_ids[cf->nunlink++] = id;
  return 0;
}

int b2s_fw_chunkfiles_sync(fw_chunkfiles *cf, int dirfd, bool full) {
  int rc = 0;
  for (int i = 0; i < cf->nsync; i++) {
    if (rc == 0 && full && fdatasync(cf->sync_fds[i]) < 0)
      rc = -errno;
    close(cf->sync_fds[i]);
  }
  cf->nsync = 0;
  if (rc == 0 && full && fsync(dirfd) < 0)
    rc = -errno;
  return rc;
}

void b2s_fw_chunkfiles_unlink(fw_chunkfiles *cf, int dirfd) {
  char name[32];
  for (int64_t i = 0; i < cf->nunlink; i++) {
    int64_t id = cf->unlink_ids[i];
    snprintf(name, sizeof name, "%08X.chunk", (unsigned)id);
    unlinkat(dirfd, name, 0);   /* a leftover is only an orphan file */
    id_free(cf, id);
  }
  cf->nunlink = 0;
}

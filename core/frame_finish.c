/* Compaction on close, and a sparse frame's index file rewritten without
 * padding.
 *
 * While a sparse frame is written, its chunks.b2frame carries the commit
 * area and the slots as header padding (header_len points at the active
 * slot).  c-blosc2 reads that but cannot append to it, so a clean close
 * replaces the file with the layout c-blosc2 writes itself: the natural
 * header, the index chunk at header_len, the trailer, nothing after.  The
 * new file is written beside the old one, synced, renamed over it and the
 * directory synced: a crash at any point leaves the old index or the new
 * one, both complete.  The file then has no commit records, so the next
 * b2s_fwriter_open rewrites it into the padded layout again (as it does
 * for a frame written elsewhere). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fwriter_internal.h"

/* The header of the unpadded file, with its metalayers, into out. */
static int plain_header(const b2s_fwriter *w, int64_t frame_len,
                        b2s_mpbuf *out) {
  /* the state b2s_fw_compact published */
  b2s_frame_header h = w->c.committed;
  h.frame_len = frame_len;
  int rc = b2s_frame_header_write(&h, &w->m.metas, out);
  if (rc >= 0 && (int64_t)out->len != w->m.base)
    rc = B2S_E_FRAME;
  return rc < 0 ? rc : 0;
}

/* The index chunk header as c-blosc2 writes an index it stores
 * memcpy'ed: flags 0x07 under 32 bytes of entries (its path for tiny
 * buffers), 0x17 otherwise, and the blocksize cut to the entries. */
static void plain_index_header(uint8_t ih[B2S_HEADER_LEN], int64_t n) {
  b2s_fw_index_header(ih, n);
  if (8 * n < B2S_HEADER_LEN)
    ih[2] = 0x07;
  if (8 * n < FW_INDEX_BLOCKSIZE)
    memcpy(ih + 8, ih + 4, 4);   /* blocksize = nbytes */
}

/* Header, index chunk and trailer of the current state into fd. */
static int write_plain(b2s_fwriter *w, int fd, int64_t frame_len) {
  b2s_mpbuf hb = {0};
  int rc = plain_header(w, frame_len, &hb);
  if (rc == 0)
    rc = b2s_fio_write(&w->io, fd, hb.data, hb.len, 0);
  b2s_mpbuf_fini(&hb);
  int64_t pos = w->m.base;
  if (rc == 0 && w->m.n > 0) {
    uint8_t ih[B2S_HEADER_LEN];
    plain_index_header(ih, w->m.n);
    rc = b2s_fio_write(&w->io, fd, ih, sizeof ih, pos);
    pos += B2S_HEADER_LEN;
  }
  enum { PER = 8192 };   /* entries per write */
  uint8_t *buf = rc == 0 ? b2s_fw_scratch(w, 8 * PER) : NULL;
  if (rc == 0 && buf == NULL)
    rc = B2S_E_NOMEM;
  for (int64_t i = 0; rc == 0 && i < w->m.n; i += PER) {
    int64_t k = w->m.n - i < PER ? w->m.n - i : PER;
    for (int64_t j = 0; j < k; j++)
      b2s_fw_st64(buf + 8 * j, (uint64_t)w->m.index[i + j]);
    rc = b2s_fio_write(&w->io, fd, buf, (size_t)(8 * k), pos);
    pos += 8 * k;
  }
  if (rc == 0)
    rc = b2s_fio_write(&w->io, fd, w->c.trailer.data, w->c.trailer.len, pos);
  return rc;
}

#define PLAIN_NAME B2S_SFRAME_INDEX_FILE FW_NEW_SUFFIX

/* Replace chunks.b2frame by its unpadded form (see the top). */
static int sparse_unpad(b2s_fwriter *w) {
  int64_t frame_len = w->m.base + b2s_fw_slot_need(w, w->m.n);
  int fd = openat(w->f.dirfd, PLAIN_NAME,
                  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    return -errno;
  int rc = write_plain(w, fd, frame_len);
  /* the new file is complete on disk before its name replaces the old */
  if (rc == 0 && fsync(fd) < 0)
    rc = -errno;
  if (close(fd) < 0 && rc == 0)
    rc = -errno;
  if (rc == 0 && renameat(w->f.dirfd, PLAIN_NAME, w->f.dirfd,
                          B2S_SFRAME_INDEX_FILE) < 0)
    rc = -errno;
  if (rc < 0) {
    unlinkat(w->f.dirfd, PLAIN_NAME, 0);   /* the old index stays current */
    return rc;
  }
  return fsync(w->f.dirfd) < 0 ? -errno : 0;
}

int b2s_fw_finish(b2s_fwriter *w) {
  int rc = b2s_fw_compact(w);
  if (rc == 0 && w->f.sparse)
    rc = sparse_unpad(w);
  return rc;
}

/* Frame writer: create, open (our own frames, or a one-time rewrite of a
 * frame written elsewhere into our layout) and close.  A writer holds its
 * frame's lock (b2s_frame_lock.h) from before it reads anything until it is
 * freed. */
#define _GNU_SOURCE   /* renameat2 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frame_helper.h"
#include "frame_io.h"
#include "fwriter_internal.h"

#define ADOPT_SUFFIX FW_NEW_SUFFIX

static int fail(b2s_fwriter *w, int rc) {
  b2s_fwriter_free(w);
  return rc;
}

/* Files of a frame: the cframe file, or a sparse frame's index file. */
static int open_files(b2s_fwriter *w, const char *path, const char *index_name,
                      int oflags) {
  if (w->sparse) {
    w->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->dirfd < 0)
      return -errno;
    w->fd = openat(w->dirfd, index_name, O_RDWR | O_CLOEXEC | oflags, 0666);
  } else {
    w->fd = open(path, O_RDWR | O_CLOEXEC | oflags, 0666);
    if (w->fd >= 0 && w->opts.direct_io)
      b2s_fw_dio_open(w, path);
    if (w->fd >= 0)
      b2s_fw_pace_open(w);   /* only when the data goes through the cache */
  }
  return w->fd < 0 ? -errno : 0;
}

/* Header with its metalayers at the start of a new file, then the empty
 * state committed. */
static int start_new(b2s_fwriter *w) {
  b2s_mpbuf hb = {0};
  int rc = b2s_frame_header_write(&w->hdr, &w->metas, &hb);
  if (rc >= 0) {
    w->base = (int64_t)hb.len;
    rc = b2s_fw_pwrite(w, w->fd, hb.data, hb.len, 0);
  }
  b2s_mpbuf_fini(&hb);
  if (rc == 0)
    rc = b2s_fw_layout_init(w);
  w->file_end = w->base;
  w->dirty = true;
  return rc < 0 ? rc : b2s_fwriter_commit(w);
}

/* ---- create ------------------------------------------------------------------- */

/* A new frame is built under a temporary name next to path (PATH.b2s-new,
 * a file or a directory) and takes its name only once its empty state is
 * committed: a crash while creating leaves no frame without a commit
 * record at path, which recovery could not tell from a damaged frame,
 * only a temporary that the next create removes. */

/* Remove what an interrupted create left at tmp: a sparse frame's
 * directory holds only its index file then. */
static void remove_leftover(const char *tmp, bool sparse) {
  if (!sparse) {
    unlink(tmp);
    return;
  }
  int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd >= 0) {
    unlinkat(dfd, B2S_SFRAME_INDEX_FILE, 0);
    close(dfd);
  }
  rmdir(tmp);
}

/* fsync the directory holding path: its new entry survives power loss. */
static int sync_parent(const char *path) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = fsync(fd) < 0 ? -errno : 0;
  close(fd);
  return rc;
}

/* Give the committed new frame its name, never replacing what is there. */
static int publish(const char *tmp, const char *path, bool sync) {
  if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
    if (errno != EINVAL && errno != ENOSYS)
      return -errno;
    /* no RENAME_NOREPLACE on this file system: check, then rename */
    struct stat sb;
    if (lstat(path, &sb) == 0)
      return -EEXIST;
    if (rename(tmp, path) < 0)
      return -errno;
  }
  return sync ? sync_parent(path) : 0;
}

/* A b2nd frame made without a block size gets its array's: c-blosc2 makes
 * a zeros chunk kept in the index with the frame's block size, and reads
 * b2nd slices with a mask of the array's blocks, which a chunk of other
 * blocks fails.  (python-blosc2's arrays have it so.) */
static void b2nd_blocksize(b2s_fwriter *w) {
  int k = b2s_frame_metas_find(&w->metas, "b2nd");
  b2s_b2nd nd;
  if (w->hdr.blocksize != 0 || k < 0 ||
      b2s_b2nd_parse(w->metas.items[k].content, (size_t)w->metas.items[k].len,
                     0, &nd, NULL) < 0 || nd.ndim < 1)
    return;
  int64_t b = w->hdr.typesize > 0 ? w->hdr.typesize : 1;
  for (int d = 0; d < nd.ndim && b <= B2S_MAX_BLOCKSIZE; d++)
    b *= nd.blockshape[d] > 0 ? nd.blockshape[d] : 1;
  if (b <= B2S_MAX_BLOCKSIZE)
    w->hdr.blocksize = w->opts.cparams.blocksize = (int32_t)b;
}

int b2s_fwriter_create(const char *path, bool sparse,
                       const b2s_fwriter_opts *opts,
                       const b2s_frame_metas *metas, b2s_fwriter **out) {
  if (path == NULL || out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s" ADOPT_SUFFIX, path) >= PATH_MAX)
    return B2S_E_ARG;
  b2s_fwriter *w = b2s_fw_alloc(sparse, opts);
  if (w == NULL)
    return B2S_E_NOMEM;
  const b2s_cparams *cp = &w->opts.cparams;
  int rc = b2s_cparams_check(cp);
  if (rc < 0)
    return fail(w, rc);
  b2s_fw_header_defaults(&w->hdr, cp, sparse);
  rc = b2s_fw_copy_metas(&w->metas, metas);
  if (rc < 0)
    return fail(w, rc);
  b2nd_blocksize(w);
  struct stat sb;
  if (lstat(path, &sb) == 0)
    return fail(w, -EEXIST);
  remove_leftover(tmp, sparse);
  if (sparse && mkdir(tmp, 0777) < 0)
    return fail(w, -errno);
  rc = open_files(w, tmp, B2S_SFRAME_INDEX_FILE, O_CREAT | O_EXCL);
  /* the lock goes with the file (or directory) when it takes its name */
  if (rc == 0)
    rc = b2s_frame_lock(tmp, &w->lockfd);
  if (rc == 0)
    rc = start_new(w);
  if (rc == 0)
    rc = publish(tmp, path, w->opts.sync == B2S_SYNC_FULL);
  if (rc < 0) {
    b2s_fwriter_free(w);
    remove_leftover(tmp, sparse);
    return rc;
  }
  *out = w;
  return 0;
}

/* ---- open ---------------------------------------------------------------------- */

/* Take header, metalayers, vlmetalayers and index from a reader. */
static int load_model(b2s_fwriter *w, b2s_frame *f) {
  w->hdr = *b2s_frame_header_get(f);
  int rc = b2s_fw_copy_metas(&w->metas, b2s_frame_metalayers(f));
  if (rc == 0)
    rc = b2s_fw_copy_metas(&w->vlmetas, b2s_frame_vlmetalayers(f));
  int64_t n = b2s_frame_nchunks(f);
  w->index = malloc((size_t)(n > 0 ? n : 1) * sizeof *w->index);
  if (rc == 0 && w->index == NULL)
    rc = B2S_E_NOMEM;
  if (rc < 0)
    return rc;
  if (n > 0)
    memcpy(w->index, b2s_frame_index(f), (size_t)n * sizeof *w->index);
  w->n = w->cap = n;
  w->base = b2s_fw_natural_base(&w->metas);
  w->trailer_dirty = true;
  return w->base < 0 ? (int)w->base : 0;
}

static int mark_ids(b2s_fwriter *w) {
  for (int64_t i = 0; i < w->n; i++) {
    int rc = w->index[i] >= 0 ? b2s_fw_id_mark(w, w->index[i]) : 0;
    if (rc < 0)
      return rc;
  }
  /* allocation restarts from the lowest free id */
  w->id_hint = 0;
  return 0;
}

static int64_t align4k(int64_t v) { return (v + 4095) & ~INT64_C(4095); }

/* Our frame, current per record r. */
static int resume(b2s_fwriter *w, const fw_record *r) {
  struct stat sb;
  if (fstat(w->fd, &sb) < 0)
    return -errno;
  w->file_end = (int64_t)sb.st_size;
  w->seq = r->seq;
  w->committed = w->hdr;
  w->committed_n = w->n;
  w->data_region = r->data_region;
  w->data_end = w->fresh_from = r->data_end;
  w->stored_bytes = r->stored_bytes;
  w->pos[0] = r->pos0;
  w->pos[1] = r->pos1;
  w->cap0 = r->cap0;
  w->active = r->slot_pos == r->pos0 ? 0 : r->slot_pos == r->pos1 ? 1 : -1;
  if (w->active == 0) {
    /* slot 1 may start anywhere after slot 0 and the file's end */
    int64_t p1 = r->pos0 + r->slot_len;
    w->pos[1] = align4k(p1 > w->file_end ? p1 : w->file_end);
    w->cap0 = w->pos[1] - w->pos[0];
  }
  if (w->active >= 0) {
    w->slot_len[w->active] = r->slot_len;
    w->valid[w->active] = w->n;
  }
  int rc = w->sparse ? mark_ids(w) : 0;
  if (rc < 0 || w->n == 0)
    return rc;
  /* last chunk's size for the chunksize rules; a lost chunk file (which
   * recovery is about to drop) counts as a full chunk */
  int32_t cb;
  rc = b2s_fw_entry_sizes(w, w->n - 1, &w->last_nbytes, &cb);
  if (rc == -ENOENT && w->sparse) {
    w->last_nbytes = w->hdr.chunksize;
    rc = 0;
  }
  return rc;
}

/* Copy chunk i of f into w: a contiguous frame gets the bytes at the end
 * of its data; a sparse frame keeps the chunk file and its id.  With
 * lost_ok, a sparse chunk file that is gone keeps its entry (0 bytes
 * stored) for recovery to drop. */
static int adopt_chunk(b2s_fwriter *w, b2s_frame *f, int64_t i,
                       bool lost_ok) {
  int64_t e = b2s_frame_index(f)[i];
  int32_t cb = 0;
  int rc = e >= 0 ? b2s_frame_chunk_sizes(f, i, &cb, NULL) : 0;
  if (rc == -ENOENT && w->sparse && lost_ok)
    rc = 0;
  if (rc == 0 && e >= 0 && !w->sparse) {
    rc = b2s_fw_make_room(w, cb);
    if (rc == 0)
      rc = b2s_fw_buf(w, (size_t)cb);
    if (rc == 0)
      rc = b2s_frame_chunk_read(f, i, w->buf, (size_t)cb);
    if (rc >= 0)
      rc = b2s_fw_pwrite(w, w->fd, w->buf, (size_t)cb, w->base + w->data_end);
    if (rc == 0) {
      e = w->data_end;
      w->data_end += cb;
      if (w->base + w->data_end > w->file_end)
        w->file_end = w->base + w->data_end;
    }
  }
  if (rc < 0)
    return rc;
  w->index[i] = e;
  w->n = i + 1;
  w->stored_bytes += cb;
  return 0;
}

/* A frame written elsewhere: build our layout in a new file next to it
 * (a sparse frame keeps its chunk files), then rename it over. */
static int adopt(const char *path, bool sparse, b2s_frame *f,
                 const b2s_fwriter_opts *opts, int *lockfd, bool lost_ok) {
  char tmp[PATH_MAX];
  const char *name = B2S_SFRAME_INDEX_FILE ADOPT_SUFFIX;
  if (snprintf(tmp, sizeof tmp, "%s" ADOPT_SUFFIX, path) >= PATH_MAX)
    return B2S_E_ARG;
  b2s_fwriter *w = b2s_fw_alloc(sparse, opts);
  if (w == NULL)
    return B2S_E_NOMEM;
  int rc = load_model(w, f);
  int64_t n = w->n;
  w->n = 0;
  if (rc == 0 && sparse) {
    w->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->dirfd < 0)
      rc = -errno;
    else
      unlinkat(w->dirfd, name, 0);   /* left by an interrupted adoption */
  } else if (rc == 0) {
    unlink(tmp);
  }
  if (rc == 0) {
    w->fd = sparse ? openat(w->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666)
                   : open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    rc = w->fd < 0 ? -errno : 0;
  }
  /* the new contiguous file is locked before it takes the frame's name,
   * so the frame is never without its lock */
  if (rc == 0 && !sparse)
    rc = b2s_lock_fd(w->fd);
  b2s_frame_header keep = w->hdr;
  w->hdr.nbytes = 0;
  if (rc == 0)
    rc = start_new(w);
  for (int64_t i = 0; rc == 0 && i < n; i++)
    rc = adopt_chunk(w, f, i, lost_ok);
  if (rc == 0) {
    w->hdr = keep;
    b2s_fw_touch(w, 0);
    rc = sparse ? mark_ids(w) : 0;
  }
  if (rc == 0)
    rc = b2s_fw_compact(w);
  if (rc == 0 && fsync(w->fd) < 0)
    rc = -errno;
  if (rc == 0 && (sparse ? renameat(w->dirfd, name, w->dirfd,
                                    B2S_SFRAME_INDEX_FILE)
                         : rename(tmp, path)) < 0)
    rc = -errno;
  if (rc == 0 && !sparse) {   /* the old file's lock guards nothing now */
    close(*lockfd);
    *lockfd = w->fd;
    w->fd = -1;
  }
  b2s_fwriter_free(w);
  return rc;
}

/* Which state the frame is in, from its records and its current header. */
static int classify(b2s_fwriter *w, b2s_frame *f, fw_record *cur,
                    bool *ours) {
  fw_record rec[2];
  int nvalid;
  int rc = b2s_fw_records_read(w->fd, w->base, rec, &nvalid);
  if (rc < 0)
    return rc;
  uint8_t hdr[B2S_FRAME_HEADER_FIXED];
  b2s_frame_header_encode(b2s_frame_header_get(f), hdr);
  *ours = false;
  if (nvalid > 0 && memcmp(rec[0].header, hdr, sizeof hdr) == 0) {
    *cur = rec[0];
    *ours = true;
  } else if (nvalid == 2 && memcmp(rec[1].header, hdr, sizeof hdr) == 0) {
    return B2S_E_RECOVER;   /* the newest commit did not publish its header */
  }
  return 0;
}

static int open_existing(const char *path, bool sparse,
                         const b2s_fwriter_opts *opts, b2s_frame *f,
                         int *lockfd, b2s_fwriter **out) {
  b2s_fwriter *w = b2s_fw_alloc(sparse, opts);
  if (w == NULL)
    return B2S_E_NOMEM;
  int rc = load_model(w, f);
  if (rc == 0)
    rc = open_files(w, path, B2S_SFRAME_INDEX_FILE, 0);
  fw_record cur;
  bool ours = false;
  if (rc == 0)
    rc = classify(w, f, &cur, &ours);
  if (rc == 0 && !ours)
    rc = 1;   /* not ours: caller adopts */
  if (rc == 0)
    rc = resume(w, &cur);
  if (rc != 0)
    return fail(w, rc);
  w->dirty = false;
  w->lockfd = *lockfd;
  *lockfd = -1;
  *out = w;
  return 0;
}

int b2s_fw_open_locked(const char *path, const b2s_fwriter_opts *opts,
                   int *lockfd, b2s_fwriter **out, b2s_frame_error *err,
                   bool lost_ok) {
  struct stat sb;
  if (stat(path, &sb) < 0)
    return -errno;
  bool sparse = S_ISDIR(sb.st_mode);
  b2s_frame *f = NULL;
  int rc = b2s_frame_open(path, &f, err);
  if (rc < 0)   /* with commit records, recovery may restore it */
    return b2s_fw_has_records(path) > 0 ? B2S_E_RECOVER : rc;
  rc = open_existing(path, sparse, opts, f, lockfd, out);
  if (rc == 1) {
    rc = adopt(path, sparse, f, opts, lockfd, lost_ok);
    b2s_frame_free(f);
    f = NULL;
    if (rc == 0)
      rc = b2s_frame_open(path, &f, err);
    if (rc == 0)
      rc = open_existing(path, sparse, opts, f, lockfd, out);
    if (rc == 1)
      rc = B2S_E_FRAME;
  }
  b2s_frame_free(f);
  return rc;
}

int b2s_fwriter_open(const char *path, const b2s_fwriter_opts *opts,
                     b2s_fwriter **out, b2s_frame_error *err) {
  if (path == NULL || out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  /* before anything is read: another writer may be in the middle of a
   * commit */
  int lockfd;
  int rc = b2s_frame_lock(path, &lockfd);
  if (rc == 0)
    rc = b2s_fw_open_locked(path, opts, &lockfd, out, err, false);
  if (lockfd >= 0)
    close(lockfd);
  return rc;
}

int b2s_fwriter_close(b2s_fwriter *w) {
  if (w == NULL)
    return B2S_E_ARG;
  int rc = b2s_fwriter_commit(w);
  b2s_fw_pace_stop(w);   /* before compaction moves the data's end */
  if (rc == 0 && w->opts.compact_on_close)
    rc = b2s_fw_finish(w);
  b2s_fwriter_free(w);
  return rc;
}

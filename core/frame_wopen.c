/* Frame writer: its life.  Create, open (our own frames, or a one-time
 * rewrite of a frame written elsewhere into our layout), close and free;
 * this file owns the writer's files (w->f) and makes and frees its
 * direct-I/O stage and drop-behind helper.  A writer holds its frame's
 * lock (b2s_frame_lock.h) from before it reads anything until it is
 * freed.
 *
 * Opening reads top down: lock (frame_lock.c); the reader opens the frame
 * (frame.c); the model is loaded from it (frame_writer.c); the files are
 * opened, with the stage and the helper (frame_dio.c, frame_helper.c);
 * the records say whether the frame is ours (frame_record.c); the layout
 * and commit state resume from the newest (frame_commit.c), then the
 * model's own (frame_writer.c).  A frame that is not ours is first
 * adopted: the same steps on a new file, into which every chunk is copied
 * (frame_writer.c) and which then takes the frame's place. */
#define _GNU_SOURCE   /* renameat2 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_frame_lock.h"
#include "frame_rfile.h"
#include "fwriter_internal.h"

#define ADOPT_SUFFIX FW_NEW_SUFFIX

/* ---- the writer object ------------------------------------------------------ */

static b2s_fwriter *writer_alloc(bool sparse, const b2s_fwriter_opts *opts) {
  b2s_fwriter *w = calloc(1, sizeof *w);
  if (w == NULL)
    return NULL;
  w->f = (fw_files){.sparse = sparse, .fd = -1, .dirfd = -1, .lockfd = -1};
  w->opts = opts ? *opts : B2S_FWRITER_OPTS_DEFAULTS;
  b2s_fio_init(&w->io);
  b2s_fw_commit_init(w);
  if (b2s_fw_model_init(&w->m) < 0) {
    b2s_fw_model_fini(&w->m);
    free(w);
    return NULL;
  }
  return w;
}

void b2s_fwriter_free(b2s_fwriter *w) {
  if (w == NULL)
    return;
  b2s_fw_chunkfiles_fini(&w->cf);
  b2s_fwhelper_free(w->pacer);
  b2s_dio_free(w->dio);   /* before its file: it may be writing */
  if (w->f.fd >= 0)
    close(w->f.fd);
  if (w->f.dirfd >= 0)
    close(w->f.dirfd);
  if (w->f.lockfd >= 0)   /* last: the frame stays ours until all is closed */
    close(w->f.lockfd);
  b2s_fw_model_fini(&w->m);
  b2s_fw_commit_fini(w);
  free(w);
}

static int fail(b2s_fwriter *w, int rc) {
  b2s_fwriter_free(w);
  return rc;
}

/* A contiguous frame's chunk data goes out with direct I/O when asked and
 * the file system takes it; through the page cache, drop-behind paces it
 * when asked (a hint: without memory there is none). */
static void data_path(b2s_fwriter *w, const char *path) {
  if (w->opts.direct_io)
    w->dio = b2s_dio_open(path, w->f.fd, &w->io);
  if (w->dio == NULL && w->opts.drop_behind &&
      (w->pacer = b2s_fwhelper_new()) != NULL)
    b2s_fwhelper_pace(w->pacer, w->f.fd);
}

/* Files of a frame: the cframe file, or a sparse frame's index file. */
static int open_files(b2s_fwriter *w, const char *path, const char *index_name,
                      int oflags) {
  if (w->f.sparse) {
    w->f.dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->f.dirfd < 0)
      return -errno;
    w->f.fd = openat(w->f.dirfd, index_name, O_RDWR | O_CLOEXEC | oflags, 0666);
  } else {
    w->f.fd = open(path, O_RDWR | O_CLOEXEC | oflags, 0666);
    if (w->f.fd >= 0)
      data_path(w, path);
  }
  return w->f.fd < 0 ? -errno : 0;
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

int b2s_fwriter_create(const char *path, bool sparse,
                       const b2s_fwriter_opts *opts,
                       const b2s_frame_metas *metas, b2s_fwriter **out) {
  if (path == NULL || out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s" ADOPT_SUFFIX, path) >= PATH_MAX)
    return B2S_E_ARG;
  b2s_fwriter *w = writer_alloc(sparse, opts);
  if (w == NULL)
    return B2S_E_NOMEM;
  int rc = b2s_cparams_check(&w->opts.cparams);
  if (rc == 0)
    rc = b2s_fw_model_new(w, metas);
  if (rc < 0)
    return fail(w, rc);
  struct stat sb;
  if (lstat(path, &sb) == 0)
    return fail(w, -EEXIST);
  remove_leftover(tmp, sparse);
  if (sparse && mkdir(tmp, 0777) < 0)
    return fail(w, -errno);
  rc = open_files(w, tmp, B2S_SFRAME_INDEX_FILE, O_CREAT | O_EXCL);
  /* the lock goes with the file (or directory) when it takes its name */
  if (rc == 0)
    rc = b2s_frame_lock(tmp, &w->f.lockfd);
  if (rc == 0)
    rc = b2s_fw_start(w);
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

/* A frame written elsewhere: build our layout in a new file next to it
 * (a sparse frame keeps its chunk files), then rename it over. */
static int adopt(const char *path, bool sparse, b2s_frame *f,
                 const b2s_fwriter_opts *opts, int *lockfd, bool lost_ok) {
  char tmp[PATH_MAX];
  const char *name = B2S_SFRAME_INDEX_FILE ADOPT_SUFFIX;
  if (snprintf(tmp, sizeof tmp, "%s" ADOPT_SUFFIX, path) >= PATH_MAX)
    return B2S_E_ARG;
  b2s_fwriter *w = writer_alloc(sparse, opts);
  if (w == NULL)
    return B2S_E_NOMEM;
  int rc = b2s_fw_model_load(w, f, true);
  if (rc == 0 && sparse) {
    w->f.dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->f.dirfd < 0)
      rc = -errno;
    else
      unlinkat(w->f.dirfd, name, 0);   /* left by an interrupted adoption */
  } else if (rc == 0) {
    unlink(tmp);
  }
  if (rc == 0) {
    int oflags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
    w->f.fd = sparse ? openat(w->f.dirfd, name, oflags, 0666)
                     : open(tmp, oflags, 0666);
    rc = w->f.fd < 0 ? -errno : 0;
  }
  /* the new contiguous file is locked before it takes the frame's name,
   * so the frame is never without its lock */
  if (rc == 0 && !sparse)
    rc = b2s_lock_fd(w->f.fd);
  if (rc == 0)
    rc = b2s_fw_start(w);   /* the empty state, then every chunk */
  if (rc == 0)
    rc = b2s_fw_adopt_chunks(w, f, lost_ok);
  if (rc == 0)
    rc = b2s_fw_compact(w);
  if (rc == 0 && fsync(w->f.fd) < 0)
    rc = -errno;
  if (rc == 0 && (sparse ? renameat(w->f.dirfd, name, w->f.dirfd,
                                    B2S_SFRAME_INDEX_FILE)
                         : rename(tmp, path)) < 0)
    rc = -errno;
  if (rc == 0 && !sparse) {   /* the old file's lock guards nothing now */
    close(*lockfd);
    *lockfd = w->f.fd;
    w->f.fd = -1;
  }
  b2s_fwriter_free(w);
  return rc;
}

/* Which state the frame is in, from its records and its current header. */
static int classify(b2s_fwriter *w, b2s_frame *f, fw_record *cur,
                    bool *ours) {
  fw_record rec[2];
  int nvalid;
  int rc = b2s_fw_records_read(w->f.fd, w->m.base, rec, &nvalid);
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
  b2s_fwriter *w = writer_alloc(sparse, opts);
  if (w == NULL)
    return B2S_E_NOMEM;
  int rc = b2s_fw_model_load(w, f, false);
  if (rc == 0)
    rc = open_files(w, path, B2S_SFRAME_INDEX_FILE, 0);
  fw_record cur;
  bool ours = false;
  if (rc == 0)
    rc = classify(w, f, &cur, &ours);
  if (rc == 0 && !ours)
    rc = 1;   /* not ours: caller adopts */
  if (rc == 0)
    rc = b2s_fw_resume(w, &cur);
  if (rc == 0)
    rc = b2s_fw_model_resume(w, cur.stored_bytes);
  if (rc != 0)
    return fail(w, rc);
  w->f.lockfd = *lockfd;
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
  b2s_fwhelper_free(w->pacer);   /* before compaction moves the data's end */
  w->pacer = NULL;
  if (rc == 0 && w->opts.compact_on_close)
    rc = b2s_fw_finish(w);
  b2s_fwriter_free(w);
  return rc;
}

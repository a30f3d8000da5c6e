/* A records frame for a data frame that has none, built under a temporary
 * name and published whole (docs/METADATA.md section 3): a crash while it
 * is built leaves no records frame, never a short one that recovery would
 * take as the truth. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "pair_internal.h"

#define BUILD_SUFFIX ".b2s-build"

/* Remove what an interrupted build left: a file, or a sparse frame's
 * directory of plain files. */
static void remove_build(const char *path) {
  if (unlink(path) == 0 || errno != EISDIR)
    return;
  DIR *d = opendir(path);
  if (d != NULL) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
      if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, ".."))
        unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
  }
  rmdir(path);
}

static int fsync_path(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = fsync(fd) < 0 ? -errno : 0;
  close(fd);
  return rc;
}

static int fsync_parent(const char *path) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  return fsync_path(dir);
}

/* Build the records frame at tmp: marked, a "no record" record per data
 * chunk, committed and closed durably. */
static int build(const char *data_path, const char *tmp, bool sparse,
                 const b2s_fwriter_opts *opts) {
  b2s_fwriter_opts o = *opts;
  o.sync = B2S_SYNC_FULL;          /* once per frame: always durable */
  b2s_fwriter *w;
  int rc = b2s_pair_records_create(data_path, tmp, sparse, &o, &w);
  if (rc < 0)
    return rc;
  rc = b2s_pair_records_fill(w, data_path, 0);
  if (rc < 0) {
    b2s_fwriter_free(w);
    return rc;
  }
  rc = b2s_fwriter_close(w);
  return rc < 0 ? rc : fsync_path(tmp);
}

int b2s_pair_records_publish(const char *data_path, const char *rpath,
                             bool sparse, const b2s_fwriter_opts *opts) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s" BUILD_SUFFIX, rpath) >= (int)sizeof tmp)
    return -ENAMETOOLONG;
  remove_build(tmp);
  int rc = build(data_path, tmp, sparse, opts);
  if (rc == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, rpath, RENAME_NOREPLACE) < 0) {
    rc = -errno;
    struct stat sb;   /* no RENAME_NOREPLACE on this file system */
    if ((rc == -EINVAL || rc == -ENOSYS) && lstat(rpath, &sb) < 0)
      rc = rename(tmp, rpath) < 0 ? -errno : 0;
  }
  if (rc < 0) {
    remove_build(tmp);
    return rc;
  }
  return fsync_parent(rpath);
}

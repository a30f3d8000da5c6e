/* Checks 8, 9 and 11 of an arm (docs/ACQUISITIONS.md 6.1), against the
 * file system: nothing here changes it but b2sd_acq_make_dir, which runs
 * only once every check passed. */
#define _GNU_SOURCE
#include "acqint.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Whether path is root or below it (both resolved). */
static bool inside(const char *path, const char *root) {
  size_t n = strlen(root);
  if (strncmp(path, root, n) != 0)
    return false;
  return path[n] == '\0' || path[n] == '/' || (n == 1 && root[0] == '/');
}

/* The deepest existing ancestor of dir (dir itself when it exists),
 * resolved into real; *rest: what follows it in dir ("" when none). */
static int resolve_existing(const char *dir, char *real, const char **rest) {
  char buf[B2S_CONFIG_PATH_MAX];
  snprintf(buf, sizeof buf, "%s", dir);
  size_t n = strlen(buf);
  for (;;) {
    if (realpath(buf, real)) {
      *rest = dir + n;
      return 0;
    }
    if (errno != ENOENT)
      return -errno;
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf)
      return -ENOENT;
    *slash = '\0';
    n = (size_t)(slash - buf);
  }
}

int b2sd_acq_check_dir(const b2s_daemon_cfg *d, b2sd_acq *a, bool *missing,
                       b2s_acq_err *e) {
  char real[PATH_MAX];
  const char *rest = "";
  *missing = false;
  int rc = resolve_existing(a->req.directory, real, &rest);
  if (rc < 0)
    return b2s_acq_err_set(e, B2S_ACQ_E_NO_SUCH_DIRECTORY, "directory",
                           "%s cannot be resolved: %s", a->req.directory,
                           strerror(-rc));
  bool in = false;
  for (int i = 0; i < d->acq.nroots && !in; i++) {
    char root[PATH_MAX];
    if (realpath(d->acq.roots[i], root))
      in = inside(real, root);
  }
  if (!in)
    return b2s_acq_err_set(e, B2S_ACQ_E_OUTSIDE_ROOTS, "directory",
                           "%s resolves to %s, outside acquisitions.roots",
                           a->req.directory, real);
  if (rest[0] && !a->req.create_directory)
    return b2s_acq_err_set(e, B2S_ACQ_E_NO_SUCH_DIRECTORY, "directory",
                           "%s does not exist and create_directory is false",
                           a->req.directory);
  struct stat sb;
  if (stat(real, &sb) < 0 || !S_ISDIR(sb.st_mode))
    return b2s_acq_err_set(e, B2S_ACQ_E_NOT_A_DIRECTORY, "directory",
                           "%s is not a directory", real);
  if (access(real, W_OK | X_OK) < 0)
    return b2s_acq_err_set(e, B2S_ACQ_E_PERMISSION_DENIED, "directory",
                           "the daemon may not write in %s: %s", real,
                           strerror(errno));
  int m = snprintf(a->resolved, sizeof a->resolved, "%s%s", real, rest);
  if (m < 0 || (size_t)m >= sizeof a->resolved)
    return b2s_acq_err_set(e, B2S_ACQ_E_BAD_DIRECTORY, "directory",
                           "the resolved directory is too long");
  *missing = rest[0] != '\0';
  return 0;
}

int b2sd_acq_check_names(const b2sd_acq *a, b2s_acq_err *e) {
  DIR *dp = opendir(a->resolved);
  if (!dp)
    return errno == ENOENT ? 0 : b2s_acq_err_set(e, B2S_ACQ_E_PERMISSION_DENIED,
                                                 "directory", "cannot list "
                                                 "%s: %s", a->resolved,
                                                 strerror(errno));
  b2s_acq_namevals v = {.id = a->req.id, .stream = a->req.input_name,
                        .channel = "data"};
  int rc = 0;
  for (struct dirent *de; rc == 0 && (de = readdir(dp));)
    if (b2s_acq_template_match(&a->req.tmpl, &v, de->d_name))
      rc = b2s_acq_err_set(e, B2S_ACQ_E_FILES_EXIST, "file_template",
                           "%s/%s exists; overwrite is refuse", a->resolved,
                           de->d_name);
  closedir(dp);
  return rc;
}

/* The mean size of the input's buffers and its ratio, from its counts
 * since it opened (the contract's last 1,000: a window the stream does not
 * keep; its whole life is the estimate here). */
static void input_figures(b2sd_acq *a) {
  b2sd_stream *st = a->st;
  /* relaxed: statistics */
  uint64_t n = atomic_load_explicit(&st->st_buffers_in, memory_order_relaxed);
  uint64_t in = atomic_load_explicit(&st->st_bytes_in, memory_order_relaxed);
  uint64_t out = atomic_load_explicit(&st->st_bytes_out, memory_order_relaxed);
  a->frame_bytes = n ? (int64_t)(in / n) : -1;
  if (a->frame_bytes < 0 && st->cfg.b2nd.enabled) {
    int64_t b = st->cfg.cparams.typesize;
    for (int i = 0; i < st->cfg.b2nd.ndim; i++)
      b *= st->cfg.b2nd.chunkshape[i];
    a->frame_bytes = b;
  }
  a->ratio = out > 0 && in > 0 ? (double)in / (double)out : 1.0;
}

int b2sd_acq_check_disk(const b2s_daemon_cfg *d, b2sd_acq *a, b2s_acq_err *e) {
  input_figures(a);
  char probe[B2S_CONFIG_PATH_MAX];
  const char *rest;
  struct statvfs v;
  if (resolve_existing(a->resolved, probe, &rest) < 0 || statvfs(probe, &v) < 0)
    return b2s_acq_err_set(e, B2S_ACQ_E_INTERNAL, "directory",
                           "cannot read the free space of %s: %s",
                           a->resolved, strerror(errno));
  double est = 0;
  uint64_t f = a->req.frames;
  if (f > 0 && a->frame_bytes > 0)
    est = (double)f * (double)a->frame_bytes / a->ratio + (double)f * 64.0;
  est *= 1.0 + d->acq.disk_margin / 100.0;
  a->disk_free = (int64_t)v.f_bavail * (int64_t)v.f_frsize;
  a->disk_floor = d->acq.disk_floor;
  a->disk_needed = est > 9e18 ? INT64_MAX : (int64_t)est;
  if ((double)a->disk_free < est + (double)a->disk_floor)
    return b2s_acq_err_set(e, B2S_ACQ_E_DISK_SHORT, "frames",
                           "%s has %lld bytes free; the acquisition needs "
                           "%lld and the floor is %lld", a->resolved,
                           (long long)a->disk_free, (long long)a->disk_needed,
                           (long long)a->disk_floor);
  return 0;
}

int b2sd_acq_make_dir(const b2sd_acq *a) {
  char buf[B2S_CONFIG_PATH_MAX + 1];
  snprintf(buf, sizeof buf, "%s/", a->resolved);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0750) < 0 && errno != EEXIST)
      return -errno;
    *p = '/';
  }
  return 0;
}

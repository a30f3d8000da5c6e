/* Checks of the file system before the daemon uses a path: that a file it
 * is about to read is a regular file (a FIFO or a device could block it
 * forever), and whether a frame's file system takes more data.
 *
 * The space probe runs before a failed stream is re-opened: a full disk
 * (ENOSPC), a quota (EDQUOT) or a file-size limit (EFBIG) is reported to whoever opens the stream instead of failing the
 * writer again at its first append.  The probe is a file beside the frame,
 * given the blocks one more region of the frame would need at the frame's
 * size, then removed; the frame itself is not touched. */
#define _GNU_SOURCE
#include "b2sd.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int b2sd_regular_file(const char *path) {
  struct stat sb;
  if (stat(path, &sb) < 0)
    return -errno;
  if (S_ISDIR(sb.st_mode))
    return -EISDIR;
  return S_ISREG(sb.st_mode) ? 0 : -EINVAL;
}

/* A contiguous frame grows by regions of at least this (its data reserve). */
#define ROOM_BYTES (1 << 20)

int b2sd_space_probe(const char *frame_path, bool sparse) {
  char dir[B2S_CONFIG_PATH_MAX], base[B2S_CONFIG_PATH_MAX];
  char probe[B2S_CONFIG_PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s", frame_path);
  snprintf(base, sizeof base, "%s", frame_path);
  snprintf(probe, sizeof probe, "%s/.%s.room", dirname(dir), basename(base));
  struct stat sb;
  /* the frame's size: a file-size limit counts the offset written */
  off_t at = !sparse && stat(frame_path, &sb) == 0 ? sb.st_size : 0;
  unlink(probe);                 /* one a crash left */
  int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)                    /* no directory: opening the frame says */
    return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
  int rc = 0;
  if (fallocate(fd, 0, at, ROOM_BYTES) < 0) {
    rc = -errno;
    if (rc == -EOPNOTSUPP) {     /* no fallocate: the limit at least */
      char z = 0;
      rc = pwrite(fd, &z, 1, at + ROOM_BYTES - 1) == 1 ? 0 : -errno;
    }
  }
  close(fd);
  unlink(probe);
  return rc;
}

/* A frame's commit records as found on disk: opening the frame file (the
 * sparse frame's index file) at its natural header length and reading
 * the records (frame_rfile.h). */
#include "frame_rfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b2s_errors.h"
#include "b2s_frame.h"
#include "b2s_frame_lock.h"
#include "frame_io.h"

#define BASE_SCAN_MAX (INT64_C(64) << 20)

void b2s_fw_rfile_close(fw_rfile *r) {
  if (r->lockfd >= 0)
    close(r->lockfd);
  if (r->fd >= 0)
    close(r->fd);
  if (r->dirfd >= 0)
    close(r->dirfd);
}

/* The natural header length, from the metalayer section, which no commit
 * rewrites. */
static int find_base(fw_rfile *r) {
  int64_t len = r->size < BASE_SCAN_MAX ? r->size : BASE_SCAN_MAX;
  if (len < B2S_FRAME_HEADER_FIXED)
    return B2S_E_TRUNCATED;
  uint8_t *buf = malloc((size_t)len);
  if (buf == NULL)
    return B2S_E_NOMEM;
  b2s_frame_metas m;
  b2s_frame_metas_init(&m);
  int rc = b2s_fio_pread(r->fd, buf, (size_t)len, 0);
  if (rc == 0)
    rc = b2s_frame_metas_parse(buf, (size_t)len, &m, NULL);
  if (rc == 0) {
    r->base = b2s_frame_header_size(&m);
    rc = r->base < 0 ? (int)r->base : 0;
  }
  b2s_frame_metas_fini(&m);
  free(buf);
  return rc;
}

int b2s_fw_rfile_open(const char *path, bool lock, fw_rfile *r) {
  *r = (fw_rfile){.fd = -1, .dirfd = -1, .lockfd = -1};
  struct stat sb;
  int rc = lock ? b2s_frame_lock(path, &r->lockfd) : 0;
  if (rc < 0)
    return rc;
  if (stat(path, &sb) < 0)
    return -errno;
  r->sparse = S_ISDIR(sb.st_mode);
  if (r->sparse) {
    r->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (r->dirfd < 0)
      return -errno;
    r->fd = openat(r->dirfd, B2S_SFRAME_INDEX_FILE, O_RDWR | O_CLOEXEC);
  } else {
    r->fd = open(path, O_RDWR | O_CLOEXEC);
  }
  if (r->fd < 0 || fstat(r->fd, &sb) < 0)
    return -errno;
  r->size = (int64_t)sb.st_size;
  return find_base(r);
}

int b2s_fw_rfile_records(const char *path, bool lock, fw_rfile *r,
                        fw_record rec[2], int *nvalid) {
  *nvalid = 0;
  int rc = b2s_fw_rfile_open(path, lock, r);
  if (rc == 0)
    rc = b2s_fw_records_read(r->fd, r->base, rec, nvalid);
  return rc;
}

int b2s_fw_has_records(const char *path) {
  fw_rfile r;
  fw_record rec[2];
  int nvalid;
  /* a writer asks, holding the lock already */
  int rc = b2s_fw_rfile_records(path, false, &r, rec, &nvalid);
  b2s_fw_rfile_close(&r);
  return rc < 0 ? rc : nvalid > 0;
}


/* Temporary directories of the tests removed without a shell. */
#define _XOPEN_SOURCE 700
#include "ts.h"

#include <errno.h>
#include <ftw.h>
#include <unistd.h>

static int first_errno;

static int remove_one(const char *path, const struct stat *sb, int type,
                      struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  /* FTW_DEPTH: a directory comes after what it holds; FTW_PHYS: a link
   * is FTW_SL, unlinked itself */
  int rc = type == FTW_DP ? rmdir(path) : unlink(path);
  if (rc != 0 && first_errno == 0)
    first_errno = errno;
  return 0;
}

int ts_rmtree(const char *dir) {
  first_errno = 0;
  if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0 &&
      errno != ENOENT && first_errno == 0)
    first_errno = errno;
  if (first_errno != 0) {
    errno = first_errno;
    return -1;
  }
  return 0;
}

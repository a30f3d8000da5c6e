/* File system checks (fscheck.c): whether a frame's file system takes more
 * data, and whether a path is a file that can be read without blocking. */
#ifndef B2SD_FSCHECK_H
#define B2SD_FSCHECK_H

#include <stdbool.h>

/* Whether the file system of a frame takes more data: a probe file
 * beside it.  0, or -errno (ENOSPC, EFBIG, EDQUOT...). */
int b2sd_space_probe(const char *frame_path, bool sparse);
/* 0 when path is a regular file; -EISDIR, -EINVAL (a FIFO, socket or
 * device: reading it could block forever) or -errno. */
int b2sd_regular_file(const char *path);

#endif

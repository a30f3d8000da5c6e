/* A whole file as a NUL-terminated string, for tests that read documents
 * and logs.  Returns NULL when it cannot be read; *len (may be NULL) gets
 * its length.  The caller frees it. */
#ifndef TS_TEXTFILE_H
#define TS_TEXTFILE_H

#include <stddef.h>

char *ts_read_text(const char *path, size_t *len);

#endif

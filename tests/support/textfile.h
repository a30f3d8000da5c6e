/* A whole file as a NUL-terminated buffer (text or bytes: *len counts
 * them all), read to its end, so logs, pipes and /proc files come whole
 * too.  ts_read_text returns NULL when path cannot be read; ts_read_file
 * fails the test (cmocka) instead.  *len may be NULL.  The caller frees
 * it. */
#ifndef TS_TEXTFILE_H
#define TS_TEXTFILE_H

#include <stddef.h>

char *ts_read_text(const char *path, size_t *len);
void *ts_read_file(const char *path, size_t *len);

#endif

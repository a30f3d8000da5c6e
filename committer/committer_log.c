/* The committer's log lines (committer.h): stderr, sd-daemon priority
 * prefix, one write per line. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "committer.h"

void cm_log(int prio, const char *fmt, ...) {
  char line[1024];
  int n = snprintf(line, sizeof line, "<%d>b2stream-committer: ", prio);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2)
    len = sizeof line - 2;
  line[len++] = '\n';
  /* one write per line: lines never interleave */
  if (write(STDERR_FILENO, line, len) < 0)
    return;
}

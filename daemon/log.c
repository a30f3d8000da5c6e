/* Logging to stderr with sd-daemon priorities: see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int log_level = B2S_LOG_INFO;

void b2sd_log_set_level(int level) {
  /* relaxed: pairs with the relaxed load in b2sd_log; a stale level for
   * a line or two is harmless */
  atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

/* The sd-daemon priority of a configured level (enum b2s_log_level). */
static int priority_of(int level) {
  switch (level) {
  case B2S_LOG_ERROR:
    return 3;
  case B2S_LOG_WARNING:
    return 4;
  case B2S_LOG_INFO:
    return 6;
  case B2S_LOG_DEBUG:
  default:
    return 7;
  }
}

void b2sd_log(int level, const char *fmt, ...) {
  /* relaxed: pairs with the store in b2sd_log_set_level */
  if (level > atomic_load_explicit(&log_level, memory_order_relaxed))
    return;
  char line[1024];
  int n = snprintf(line, sizeof line, "<%d>", priority_of(level));
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (m < 0)
    m = 0;
  size_t len = (size_t)n + (size_t)m;
  if (len > sizeof line - 2)
    len = sizeof line - 2;
  line[len++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, len);
  (void)w;
}

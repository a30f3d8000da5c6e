/* Logging to stderr with sd-daemon priorities: see log.h.
 *
 * Lines carry strings from clients (names from HELLO and OPEN, paths,
 * peer addresses).  So that no such string can start a line of its own or
 * pass for another priority, the formatted text is escaped here, once, for
 * every call site: control characters and bytes that are not well-formed
 * UTF-8 become \xNN. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "b2s_msgpack.h"

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


size_t b2sd_log_escape(char *dst, size_t cap, const char *src, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)src;
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    size_t k = b2s_utf8_seq(s + i, len - i);   /* 1 for ASCII */
    bool plain = k > 1 || (k == 1 && s[i] >= 0x20 && s[i] != 0x7f);
    if (o + (plain ? k : 4) >= cap)  /* room for the NUL, nothing cut */
      break;
    if (plain) {
      memcpy(dst + o, s + i, k);
      o += k;
      i += k;
      continue;
    }
    dst[o++] = '\\';
    dst[o++] = 'x';
    dst[o++] = hex[s[i] >> 4];
    dst[o++] = hex[s[i] & 15];
    i++;
  }
  if (cap)
    dst[o] = '\0';
  return o;
}

void b2sd_log(int level, const char *fmt, ...) {
  /* relaxed: pairs with the store in b2sd_log_set_level */
  if (level > atomic_load_explicit(&log_level, memory_order_relaxed))
    return;
  char text[1024], line[1024];
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (m < 0)
    m = 0;
  if ((size_t)m >= sizeof text)
    m = (int)sizeof text - 1;
  int n = snprintf(line, sizeof line, "<%d>", priority_of(level));
  size_t len = (size_t)n + b2sd_log_escape(line + n, sizeof line - (size_t)n - 1,
                                           text, (size_t)m);
  line[len++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, len);
  (void)w;
}

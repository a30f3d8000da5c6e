/* Logging to stderr for the journal: every line starts with the sd-daemon
 * priority prefix ("<3>" error ... "<7>" debug), so journald records the
 * level; on a terminal the prefix is still readable.  One write(2) per line,
 * so lines of different threads do not interleave. */
#ifndef B2SD_LOG_H
#define B2SD_LOG_H

#include "b2s_config.h"

#include <stddef.h>

/* Lines above this level (enum b2s_log_level) are not written. */
void b2sd_log_set_level(int level);

/* Copy len bytes of src to dst (cap bytes, NUL-terminated) with control
 * characters and bytes that are not well-formed UTF-8 as \xNN; cut short
 * when dst is full.  Returns the length written.  b2sd_log applies it to
 * every line. */
size_t b2sd_log_escape(char *dst, size_t cap, const char *src, size_t len);

void b2sd_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define LOG_E(...) b2sd_log(B2S_LOG_ERROR, __VA_ARGS__)
#define LOG_W(...) b2sd_log(B2S_LOG_WARNING, __VA_ARGS__)
#define LOG_I(...) b2sd_log(B2S_LOG_INFO, __VA_ARGS__)
#define LOG_D(...) b2sd_log(B2S_LOG_DEBUG, __VA_ARGS__)

#endif

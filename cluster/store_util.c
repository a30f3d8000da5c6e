/* Helpers every object store uses (store_impl.h): the per-thread last
 * error, name checks, buffer copies. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "store_impl.h"

static _Thread_local char store_last_err[256];

int b2s_store_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(store_last_err, sizeof store_last_err, fmt, ap);
  va_end(ap);
  return code;
}

const char *b2s_store_last_error(void) { return store_last_err; }

void b2s_store_clear_error(void) { store_last_err[0] = '\0'; }

int b2s_store_name_ok(const char *name, size_t max, int dot_ok) {
  if (!name || !name[0] || (!dot_ok && name[0] == '.'))
    return 0;
  size_t i = 0;
  for (; name[i] && i <= max; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return i <= max;
}

int b2s_store_dup(const void *src, size_t len, uint8_t **out) {
  uint8_t *p = malloc(len ? len : 1);
  if (!p)
    return b2s_store_fail(B2S_E_NOMEM, "out of memory (%zu bytes)", len);
  if (len)
    memcpy(p, src, len);
  *out = p;
  return 0;
}

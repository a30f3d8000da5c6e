#include "textfile.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

char *ts_read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  char *text = NULL;
  size_t n = 0, cap = 0;
  int failed = 0;
  for (;;) {
    if (cap - n < 4096 + 1) {   /* room for a read and the NUL */
      cap = cap ? 2 * cap : 65536;
      char *grown = realloc(text, cap);
      if (grown == NULL) {
        failed = 1;
        break;
      }
      text = grown;
    }
    size_t got = fread(text + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0)
      break;
  }
  failed |= ferror(f);
  fclose(f);
  if (failed) {
    free(text);
    return NULL;
  }
  text[n] = '\0';
  if (len != NULL)
    *len = n;
  return text;
}

void *ts_read_file(const char *path, size_t *len) {
  char *text = ts_read_text(path, len);
  if (text == NULL)
    fail_msg("cannot read %s", path);
  return text;
}

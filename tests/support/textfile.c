#include "textfile.h"

#include <stdio.h>
#include <stdlib.h>

char *ts_read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  char *text = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0)
    text = malloc((size_t)n + 1);
  if (text != NULL && fread(text, 1, (size_t)n, f) != (size_t)n) {
    free(text);
    text = NULL;
  }
  fclose(f);
  if (text != NULL) {
    text[n] = '\0';
    if (len != NULL)
      *len = (size_t)n;
  }
  return text;
}

/* See curve_key.h. */
#include "curve_key.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <zmq.h>

#include "b2s_errors.h"

int b2s_curve_key_read(const char *path, char z85[B2S_CURVE_KEY_Z85_LEN + 1]) {
  if (path == NULL || z85 == NULL)
    return B2S_E_ARG;
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return -errno;
  char line[1024];
  int rc = B2S_E_ARG;
  while (fgets(line, sizeof line, f)) {
    char *p = line + strspn(line, " \t\r\n");
    size_t n = strcspn(p, " \t\r\n");
    p[n] = '\0';
    uint8_t bin[32];
    if (n == B2S_CURVE_KEY_Z85_LEN && zmq_z85_decode(bin, p) != NULL) {
      memcpy(z85, p, n + 1);
      rc = 0;
      break;
    }
    if (n > 0 && p[0] != '#')
      break;                 /* neither a key, a comment nor blank */
  }
  fclose(f);
  return rc;
}

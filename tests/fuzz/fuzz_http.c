/* libFuzzer target for what the daemon's HTTP listener decides from a
 * client's bytes (daemon/ops/httproute.h, thumb.h): the route of a method and
 * a path, and the scaling of an image whose dtype and shape come from the
 * input.  Whatever the bytes: no crash, no read outside the input; a
 * route names a stream only for /thumb/, with a name of the safe set that
 * occurs in the path; a scaled image fits B2SD_THUMB_MAX a side.
 *
 * Input: method, NUL, path, NUL, then 3 dtype bytes, height and width
 * (one byte each, 1..256) and the pixels. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httproute.h"
#include "thumb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_route(const char *method, const char *path) {
  b2sd_route r;
  b2sd_http_route(method, path, &r);
  size_t n = strlen(r.stream);
  if (n > B2SD_ROUTE_NAME_MAX)
    abort();
  if ((r.kind == B2SD_ROUTE_THUMB) != (n > 0))
    abort();
  if (n && (strncmp(path, "/thumb/", 7) != 0 || !strstr(path, r.stream) ||
            strspn(r.stream, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                             "TUVWXYZ0123456789_-.") != n))
    abort();
}

static void check_scale(const uint8_t *d, size_t size) {
  if (size < 5)
    return;
  char dtype[4] = {(char)d[0], (char)d[1], (char)d[2], 0};
  int64_t h = d[3] + 1, w = d[4] + 1;
  d += 5;
  size -= 5;
  /* the caller (thumb.c) always has h * w pixels of 8 bytes at most */
  if ((size_t)(h * w * 8) > size)
    return;
  static uint8_t out[B2SD_THUMB_MAX * B2SD_THUMB_MAX];
  int oh = 0, ow = 0;
  if (b2sd_thumb_scale(d, dtype, h, w, out, &oh, &ow) == 0 &&
      (oh < 1 || ow < 1 || oh > B2SD_THUMB_MAX || ow > B2SD_THUMB_MAX))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul1 = memchr(data, 0, size);
  if (!nul1)
    return 0;
  const uint8_t *nul2 = memchr(nul1 + 1, 0, size - (size_t)(nul1 + 1 - data));
  if (!nul2)
    return 0;
  check_route((const char *)data, (const char *)nul1 + 1);
  check_scale(nul2 + 1, size - (size_t)(nul2 + 1 - data));
  return 0;
}

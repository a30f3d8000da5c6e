/* Routing of HTTP requests (httproute.h).  The listener is read-only:
 * GET and HEAD only, a fixed set of paths, stream names of a safe set of
 * characters (they only select a stream of the snapshot). */
#include "httproute.h"

#include <string.h>

static bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/* "NAME.png" into out->stream; false when it is not one. */
static bool thumb_name(const char *p, size_t n, b2sd_route *out) {
  if (n <= 4 || memcmp(p + n - 4, ".png", 4) != 0)
    return false;
  n -= 4;
  if (n > B2SD_ROUTE_NAME_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!name_char(p[i]))
      return false;
  memcpy(out->stream, p, n);
  out->stream[n] = '\0';
  return true;
}

void b2sd_http_route(const char *method, const char *url, b2sd_route *out) {
  memset(out, 0, sizeof *out);
  out->kind = B2SD_ROUTE_NOT_FOUND;
  if (!method || !url)
    return;
  size_t n = strcspn(url, "?#");
  const char *thumb = "/thumb/";
  size_t tl = strlen(thumb);
  b2sd_route_kind k = B2SD_ROUTE_NOT_FOUND;
  if (n == 1 && url[0] == '/')
    k = B2SD_ROUTE_PAGE;
  else if (n == 8 && memcmp(url, "/metrics", 8) == 0)
    k = B2SD_ROUTE_METRICS;
  else if (n == 12 && memcmp(url, "/status.json", 12) == 0)
    k = B2SD_ROUTE_STATUS;
  else if (n > tl && memcmp(url, thumb, tl) == 0 &&
           thumb_name(url + tl, n - tl, out))
    k = B2SD_ROUTE_THUMB;
  if (k != B2SD_ROUTE_NOT_FOUND && strcmp(method, "GET") != 0 &&
      strcmp(method, "HEAD") != 0)
    k = B2SD_ROUTE_METHOD;
  if (k != B2SD_ROUTE_THUMB)
    out->stream[0] = '\0';
  out->kind = k;
}

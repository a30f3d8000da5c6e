/* http.listen: a numeric address and a port.  Numeric only, so that what
 * the file says is what the daemon binds (no resolver at start) and the
 * loopback check below cannot be fooled by a name. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

/* Split "A.B.C.D:PORT" / "[V6]:PORT" into host (without brackets) and
 * port; the family in *v6. */
static const char *split(const char *s, char *host, size_t hn, long *port,
                         bool *v6) {
  const char *colon;
  *v6 = s[0] == '[';
  if (*v6) {
    const char *close = strchr(s, ']');
    if (!close || close[1] != ':')
      return "expected [IPv6]:PORT";
    if ((size_t)(close - s - 1) >= hn)
      return "address too long";
    memcpy(host, s + 1, (size_t)(close - s - 1));
    host[close - s - 1] = '\0';
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon)
      return "expected ADDRESS:PORT";
    if ((size_t)(colon - s) >= hn)
      return "address too long";
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
  }
  char *end;
  if (!colon[1] || colon[1] < '0' || colon[1] > '9')
    return "expected a port number after ':'";
  *port = strtol(colon + 1, &end, 10);
  if (*end || *port < 1 || *port > 65535)
    return "the port is 1..65535";
  return NULL;
}

const char *b2s_cfg_hostport_check(const char *s) {
  char host[64];
  long port;
  bool v6;
  const char *why = split(s, host, sizeof host, &port, &v6);
  if (why)
    return why;
  unsigned char a[16];
  if (inet_pton(v6 ? AF_INET6 : AF_INET, host, a) != 1)
    return v6 ? "not a numeric IPv6 address"
              : "not a numeric IPv4 address (names are not resolved)";
  return NULL;
}

bool b2s_config_hostport_loopback(const char *s) {
  char host[64];
  long port;
  bool v6;
  unsigned char a[16];
  if (split(s, host, sizeof host, &port, &v6) ||
      inet_pton(v6 ? AF_INET6 : AF_INET, host, a) != 1)
    return false;
  if (!v6)
    return a[0] == 127;
  static const unsigned char lo[16] = {[15] = 1};
  return memcmp(a, lo, 16) == 0;
}

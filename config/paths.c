/* Stream names, lexical path normalisation and ZeroMQ endpoint syntax.
 *
 * Everything here is lexical: names and paths come from producers at run
 * time as well as from the file, and must be judged without touching the
 * filesystem. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config_internal.h"

int b2s_stream_name_check(const char *name) {
  if (!name)
    return B2S_E_STREAM_NAME;
  size_t len = strnlen(name, B2S_STREAM_NAME_MAX + 1);
  if (len == 0 || len > B2S_STREAM_NAME_MAX || name[0] == '.')
    return B2S_E_STREAM_NAME;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)name[i];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (!ok)
      return B2S_E_STREAM_NAME;
  }
  return 0;
}

static int put(char *out, size_t outlen, size_t *o, const char *s, size_t n) {
  if (*o + n >= outlen)
    return -ENAMETOOLONG;
  memcpy(out + *o, s, n);
  *o += n;
  return 0;
}

int b2s_cfg_path_normalize(const char *in, char *out, size_t outlen, int *up) {
  bool abs = in[0] == '/';
  size_t o = 0, floor = 0;
  int ups = 0;
  if (outlen < 2)
    return -ENAMETOOLONG;
  if (abs) {
    out[o++] = '/';
    floor = 1;
  }
  const char *p = in;
  for (;;) {
    while (*p == '/')
      p++;
    if (!*p)
      break;
    const char *s = p;
    while (*p && *p != '/')
      p++;
    size_t n = (size_t)(p - s);
    if (n == 1 && s[0] == '.')
      continue;
    if (n == 2 && s[0] == '.' && s[1] == '.') {
      if (o > floor) {        /* drop the previous component */
        while (o > floor && out[o - 1] != '/')
          o--;
        if (o > floor)
          o--;
        continue;
      }
      if (abs)                /* "/.." is "/" */
        continue;
      ups++;
    }
    if (o > 0 && out[o - 1] != '/' && put(out, outlen, &o, "/", 1) < 0)
      return -ENAMETOOLONG;
    if (put(out, outlen, &o, s, n) < 0)
      return -ENAMETOOLONG;
    if (n == 2 && s[0] == '.' && s[1] == '.')
      floor = o;              /* a kept ".." is never dropped again */
  }
  if (o == 0)
    out[o++] = '.';
  out[o] = '\0';
  if (up)
    *up = ups;
  return 0;
}

int b2s_cfg_path_join(const char *base, const char *rel, char *out,
                  size_t outlen) {
  if (rel[0] == '/')
    return b2s_cfg_path_normalize(rel, out, outlen, NULL);
  char tmp[2 * B2S_CONFIG_PATH_MAX + 2];
  int n = snprintf(tmp, sizeof tmp, "%s/%s", base, rel);
  if (n < 0 || (size_t)n >= sizeof tmp)
    return -ENAMETOOLONG;
  return b2s_cfg_path_normalize(tmp, out, outlen, NULL);
}

int b2s_cfg_stream_rel(const char *data_dir, const char *path, char *out,
                   size_t outlen) {
  if (!path[0])
    return B2S_E_CONFIG;
  char norm[B2S_CONFIG_PATH_MAX];
  int up = 0;
  int rc = b2s_cfg_path_normalize(path, norm, sizeof norm, &up);
  if (rc < 0)
    return rc;
  const char *rel = norm;
  if (norm[0] == '/') {
    size_t dl = strlen(data_dir);
    if (strcmp(data_dir, "/") == 0)
      rel = norm + 1;
    else if (strncmp(norm, data_dir, dl) == 0 && norm[dl] == '/')
      rel = norm + dl + 1;
    else
      return B2S_E_CONFIG;
  } else if (up > 0) {
    return B2S_E_CONFIG;
  }
  if (!rel[0] || strcmp(rel, ".") == 0)
    return B2S_E_CONFIG;
  if (strlen(rel) >= outlen)
    return -ENAMETOOLONG;
  memmove(out, rel, strlen(rel) + 1);
  return 0;
}

int b2s_stream_path_resolve(const char *data_dir, const char *path, char *out,
                            size_t outlen) {
  if (!data_dir || !path || data_dir[0] != '/')
    return B2S_E_ARG;
  char rel[B2S_CONFIG_PATH_MAX];
  int rc = b2s_cfg_stream_rel(data_dir, path, rel, sizeof rel);
  if (rc < 0)
    return rc;
  bool root = strcmp(data_dir, "/") == 0;
  int n = snprintf(out, outlen, "%s/%s", root ? "" : data_dir, rel);
  return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static bool host_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || strchr(".-_*:%[]", ch) != NULL;
}

static const char *tcp_check(const char *hp) {
  const char *colon = strrchr(hp, ':');
  if (!colon || colon == hp)
    return "expected tcp://HOST:PORT";
  for (const char *p = hp; p < colon; p++)
    if (!host_char(*p))
      return "invalid character in the host";
  const char *port = colon + 1;
  if (strcmp(port, "*") == 0)
    return NULL;
  int64_t v;
  if (b2s_cfg_parse_int(port, &v) < 0 || port[0] == '+' || port[0] == '-' ||
      v < 1 || v > 65535)
    return "the port must be 1..65535 or *";
  return NULL;
}

const char *b2s_cfg_endpoint_check(const char *ep) {
  if (strncmp(ep, "ipc://", 6) == 0)
    return ep[6] ? NULL : "empty ipc:// path";
  if (strncmp(ep, "tcp://", 6) == 0)
    return tcp_check(ep + 6);
  return "expected an ipc:// or tcp:// endpoint";
}

int b2s_cfg_endpoint_resolve(const char *ep, const char *run_dir, char *out,
                         size_t outlen) {
  const char *path = ep + 6;
  if (strncmp(ep, "ipc://", 6) != 0 || path[0] == '@') {
    /* tcp, or a Linux abstract socket: nothing on disk to resolve */
    int n = snprintf(out, outlen, "%s", ep);
    return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
  }
  char full[B2S_CONFIG_PATH_MAX];
  int rc = b2s_cfg_path_join(run_dir, path, full, sizeof full);
  if (rc < 0)
    return rc;
  if (strlen(full) > B2S_IPC_PATH_MAX)
    return -ENAMETOOLONG;
  int n = snprintf(out, outlen, "ipc://%s", full);
  return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

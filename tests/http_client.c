/* See http_client.h. */
#define _GNU_SOURCE
#include "http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "ts.h"

static struct sockaddr_in loopback(int port) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int http_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = loopback(0);
  socklen_t n = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
      getsockname(fd, (struct sockaddr *)&a, &n) < 0) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  close(fd);
  return ntohs(a.sin_port);
}

int http_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = loopback(port);
  if (fd < 0)
    return -1;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int http_connect_nowait(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = loopback(port);
  if (fd < 0)
    return -1;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 &&
      errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

void http_request(int port, const char *method, const char *path,
                  const char *extra, int timeout_ms, http_reply *r) {
  memset(r, 0, sizeof *r);
  int fd = http_connect(port);
  if (fd < 0)
    return;
  char req[8192];
  int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Connection: close\r\n%s\r\n", method, path, extra);
  if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
    close(fd);
    return;
  }
  size_t cap = 65536, len = 0;
  char *buf = malloc(cap);
  long long end = ts_now_ms() + timeout_ms;
  for (;;) {
    long long left = end - ts_now_ms();
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (left <= 0 || poll(&p, 1, (int)left) <= 0)
      break;
    if (len + 4096 > cap)
      buf = realloc(buf, cap *= 2);
    ssize_t k = recv(fd, buf + len, cap - len - 1, 0);
    if (k <= 0)
      break;
    len += (size_t)k;
  }
  close(fd);
  buf[len] = '\0';
  char *sep = strstr(buf, "\r\n\r\n");
  if (!sep || sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1) {
    r->status = 0;
    free(buf);
    return;
  }
  size_t hl = (size_t)(sep - buf);
  snprintf(r->head, sizeof r->head, "%.*s", (int)hl, buf);
  r->len = len - hl - 4;
  r->body = malloc(r->len + 1);
  memcpy(r->body, sep + 4, r->len);
  r->body[r->len] = '\0';
  free(buf);
}

void http_reply_free(http_reply *r) {
  free(r->body);
  r->body = NULL;
}

char *http_get_ok(int port, const char *path, size_t *len) {
  http_reply r;
  http_request(port, "GET", path, "", 10000, &r);
  if (r.status != 200) {
    fprintf(stderr, "GET %s: status %d\n%s\n", path, r.status, r.head);
    http_reply_free(&r);
    return NULL;
  }
  if (len)
    *len = r.len;
  return r.body;
}

double prom_value(const char *text, const char *series) {
  size_t n = strlen(series);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
    if (strncmp(p, series, n) == 0 && p[n] == ' ')
      return strtod(p + n + 1, NULL);
  return -1;
}

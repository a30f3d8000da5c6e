/* A minimal HTTP/1.1 client for the tests of the daemon's HTTP listener:
 * plain sockets, one request per connection, every wait bounded. */
#ifndef HTTP_CLIENT_H
#define HTTP_CLIENT_H

#include <stddef.h>

/* A TCP port on 127.0.0.1 that was free a moment ago. */
int http_free_port(void);

typedef struct http_reply {
  int status;                    /* 0: no answer (refused, closed, timeout) */
  char head[4096];               /* status line and headers */
  char *body;                    /* malloc'ed, NUL-terminated */
  size_t len;
} http_reply;

/* Send `method path` (with extra header lines, "" for none) to
 * 127.0.0.1:port, read the whole answer (the server closes), within
 * timeout_ms. */
void http_request(int port, const char *method, const char *path,
                  const char *extra, int timeout_ms, http_reply *r);
void http_reply_free(http_reply *r);
/* GET path, 200 expected: the body (caller frees). */
char *http_get_ok(int port, const char *path, size_t *len);
/* A connected socket to 127.0.0.1:port, or -1. */
int http_connect(int port);
/* The same without waiting for the handshake (non-blocking): a server
 * that no longer accepts leaves it pending. */
int http_connect_nowait(int port);
/* The value of the first sample of `series` (a line starting with it,
 * then a space) in a Prometheus text; -1 when absent. */
double prom_value(const char *text, const char *series);

#endif

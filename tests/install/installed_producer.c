/* Producer of the package install test, built against the installed
 * headers and library (pkg-config b2stream-client): sends COUNT buffers of
 * 64 Ki uint32 to STREAM, buffer b holding (START + b) * 1000 + i % 4096 at
 * item i (consume.py checks exactly these bytes), and makes them durable.
 *
 *   install-producer ENDPOINT STREAM START COUNT
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <b2stream_client.h>

#define NITEMS (64 * 1024)

static int fail(const char *what, int rc, b2sc_session *s) {
  fprintf(stderr, "install-producer: %s: %s%s%s\n", what, b2sc_strerror(rc),
          s && *b2sc_last_error(s) ? ": " : "", s ? b2sc_last_error(s) : "");
  return 1;
}

static int send_all(b2sc_producer *p, long start, long count) {
  static uint32_t buf[NITEMS];
  int rc = 0;
  for (long b = start; b < start + count && rc >= 0; b++) {
    for (uint32_t i = 0; i < NITEMS; i++)
      buf[i] = (uint32_t)b * 1000 + i % 4096;
    rc = b2sc_send(p, buf, sizeof buf, 5000);
  }
  return rc < 0 ? rc : b2sc_flush(p, 30000);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fputs("usage: install-producer ENDPOINT STREAM START COUNT\n", stderr);
    return 2;
  }
  b2sc_session *s;
  b2sc_producer *p;
  int rc = b2sc_connect(argv[1], "install-test", &s);
  if (rc < 0)
    return fail("connect", rc, NULL);
  if ((rc = b2sc_producer_open(s, argv[2], NULL, &p)) < 0) {
    fail("open", rc, s);
    b2sc_close(s);
    return 1;
  }
  rc = send_all(p, atol(argv[3]), atol(argv[4]));
  if (rc < 0)
    fail("send/flush", rc, s);
  int rc2 = b2sc_producer_close(p);
  b2sc_close(s);
  if (rc >= 0 && rc2 < 0)
    fail("close", rc2, NULL);
  return rc < 0 || rc2 < 0;
}

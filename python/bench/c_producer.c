/* The C side of bench_producer.py: send the buffers of a raw file with
 * b2sc_send (which copies, as Producer.send does for a writable array) and
 * flush, timed from connect to the end of the flush, so both sides are
 * measured the same way.  Prints the seconds.
 *
 *   bench_c_producer ENDPOINT STREAM TEMPLATE FILE BUFFER_BYTES */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <b2stream_client.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned char *load(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  unsigned char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    rewind(f);
    buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
      free(buf);
      buf = NULL;
    }
    *len = buf ? (size_t)n : 0;
  }
  fclose(f);
  return buf;
}

static int run(const char **argv, const unsigned char *data, size_t len,
               size_t size) {
  b2sc_session *s;
  b2sc_producer *p;
  double t0 = now_s();
  int rc = b2sc_connect(argv[1], "bench-c", &s);
  if (rc < 0)
    return rc;
  if ((rc = b2sc_producer_open(s, argv[2], argv[3], &p)) == 0) {
    for (size_t off = 0; off < len && rc == 0; off += size)
      rc = b2sc_send(p, data + off, len - off < size ? len - off : size, 60000);
    if (rc == 0)
      rc = b2sc_flush(p, 120000);
    int rc2 = b2sc_producer_close(p);
    rc = rc ? rc : rc2;
  }
  b2sc_close(s);
  if (rc == 0)
    printf("%.6f\n", now_s() - t0);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: bench_c_producer ENDPOINT STREAM TEMPLATE FILE BUFFER_BYTES\n");
    return 2;
  }
  size_t len, size = strtoul(argv[5], NULL, 10);
  unsigned char *data = load(argv[4], &len);
  if (data == NULL || size == 0) {
    fprintf(stderr, "bench_c_producer: cannot read %s\n", argv[4]);
    return 2;
  }
  int rc = run((const char **)argv, data, len, size);
  free(data);
  if (rc < 0)
    fprintf(stderr, "bench_c_producer: %s\n", b2sc_strerror(rc));
  return rc < 0;
}

/* Example producer: sends 16 synthetic 1 MiB images to a stream, each with
 * a record (its frame number and a timestamp) and with the series'
 * settings as metadata when the daemon speaks protocol version 2, makes
 * them durable and prints what the daemon acknowledged.
 *
 *   producer [STREAM [ENDPOINT]]        default: demo, b2sc_default_endpoint
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <b2stream_client.h>

#define NBUFFERS 16
#define NITEMS (256 * 1024)              /* uint32 items: 1 MiB per buffer */

static int fail(const char *what, int rc, b2sc_session *s) {
  fprintf(stderr, "producer: %s: %s%s%s\n", what, b2sc_strerror(rc),
          s && *b2sc_last_error(s) ? ": " : "", s ? b2sc_last_error(s) : "");
  return 1;
}

int main(int argc, char **argv) {
  const char *stream = argc > 1 ? argv[1] : "demo";
  const char *endpoint = argc > 2 ? argv[2] : NULL;
  b2sc_session *s;
  b2sc_producer *p;
  int rc = b2sc_connect(endpoint, "example-producer", &s);
  if (rc < 0)
    return fail("connect", rc, NULL);
  if ((rc = b2sc_producer_open(s, stream, NULL, &p)) < 0) {
    fail("open", rc, s);
    b2sc_close(s);
    return 1;
  }

  bool v2 = b2sc_protocol_version(s) >= 2;
  if (v2 && (rc = b2sc_producer_set_meta_str(p, "sample", "example")) < 0)
    fail("series metadata", rc, s);   /* not fatal: the images still go */

  uint32_t *image = malloc(NITEMS * sizeof *image);
  for (int b = 0; b < NBUFFERS && rc >= 0; b++) {
    for (uint32_t i = 0; i < NITEMS; i++)
      image[i] = (uint32_t)b * 1000 + i % 4096;   /* compressible ramp */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    b2sc_record rec = {.present = B2SC_REC_FRAME | B2SC_REC_TS,
                       .frame = (uint64_t)b,
                       .ts_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec};
    /* Copies the image; waits up to 5 s when the daemon withholds credit. */
    rc = b2sc_send_rec(p, image, NITEMS * sizeof *image, v2 ? &rec : NULL,
                       5000);
  }
  free(image);
  if (rc >= 0)
    rc = b2sc_flush(p, 30000);   /* 0: every buffer is on disk, fsynced */

  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  printf("sent %llu buffers (%llu bytes): %llu durable, %llu dropped, "
         "%llu rejected\n", (unsigned long long)st.sent,
         (unsigned long long)st.bytes, (unsigned long long)st.durable,
         (unsigned long long)st.dropped, (unsigned long long)st.rejected);
  if (rc < 0)
    fail("send/flush", rc, s);
  int rc2 = b2sc_producer_close(p);
  b2sc_close(s);
  return rc < 0 || rc2 < 0;
}

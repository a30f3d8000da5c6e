/* Example shared-memory producer: the daemon maps a segment of slots for
 * this producer; each image is written straight into a slot and handed
 * over without a copy through the socket.  Same images as producer.c.
 *
 *   shm_producer [STREAM [ENDPOINT]]    default: demo, b2sc_default_endpoint
 */
#include <stdint.h>
#include <stdio.h>

#include <b2stream_client.h>

#define NBUFFERS 16
#define NITEMS (256 * 1024)              /* uint32 items: 1 MiB per buffer */

static int fail(const char *what, int rc, b2sc_session *s) {
  fprintf(stderr, "shm_producer: %s: %s%s%s\n", what, b2sc_strerror(rc),
          s && *b2sc_last_error(s) ? ": " : "", s ? b2sc_last_error(s) : "");
  return 1;
}

/* Fill the slots; the daemon frees each one once it compressed it. */
static int produce(b2sc_producer *p) {
  int rc = 0;
  for (int b = 0; b < NBUFFERS && rc >= 0; b++) {
    uint32_t slot;
    void *ptr;
    size_t cap;
    if ((rc = b2sc_shm_acquire(p, 5000, &slot, &ptr, &cap)) < 0)
      break;
    uint32_t *image = ptr;    /* the readout would write here directly */
    for (uint32_t i = 0; i < NITEMS; i++)
      image[i] = (uint32_t)b * 1000 + i % 4096;
    rc = b2sc_shm_submit(p, slot, NITEMS * sizeof *image);
  }
  return rc < 0 ? rc : b2sc_flush(p, 30000);
}

int main(int argc, char **argv) {
  const char *stream = argc > 1 ? argv[1] : "demo";
  const char *endpoint = argc > 2 ? argv[2] : NULL;
  b2sc_session *s;
  b2sc_producer *p;
  int rc = b2sc_connect(endpoint, "example-shm-producer", &s);
  if (rc < 0)
    return fail("connect", rc, NULL);
  if ((rc = b2sc_producer_open(s, stream, NULL, &p)) < 0 ||
      (rc = b2sc_shm_attach(p, 4, NITEMS * sizeof(uint32_t))) < 0) {
    fail("open", rc, s);
    b2sc_close(s);
    return 1;
  }
  if ((rc = produce(p)) < 0)
    fail("produce", rc, s);
  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  printf("sent %llu buffers through shared memory: %llu durable, "
         "%llu dropped, %llu rejected\n", (unsigned long long)st.sent,
         (unsigned long long)st.durable, (unsigned long long)st.dropped,
         (unsigned long long)st.rejected);
  int rc2 = b2sc_producer_close(p);
  b2sc_close(s);
  return rc < 0 || rc2 < 0;
}

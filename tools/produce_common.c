/* What both paths of b2stream produce share (cli_produce.h): reading the
 * input, each buffer's record, the --meta map. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_produce.h"

/* A --meta value: an integer or a float when all of it reads as one (and
 * it starts like a number: no "inf" or "nan"), else the string. */
static int put_value(b2s_mpbuf *b, const char *v) {
  char *end;
  bool numeric = *v && strchr("+-.0123456789", *v);
  if (numeric) {
    errno = 0;
    long long i = strtoll(v, &end, 10);
    if (!*end && !errno)
      return b2s_mp_put_int(b, i);
    errno = 0;
    unsigned long long u = strtoull(v, &end, 10);
    if (!*end && !errno && *v != '-')
      return b2s_mp_put_uint(b, u);
    double f = strtod(v, &end);
    if (!*end && isfinite(f))
      return b2s_mp_put_float64(b, f);
  }
  return b2s_mp_put_str(b, v, strlen(v));
}

/* The --meta options as one msgpack map (checked KEY=VALUE by parse). */
int produce_meta_map(const produce_opts *o, b2s_mpbuf *b) {
  int rc = b2s_mp_put_map(b, (uint32_t)o->nmeta);
  for (int k = 0; k < o->nmeta && rc == 0; k++) {
    const char *eq = strchr(o->meta[k], '=');
    rc = b2s_mp_put_str(b, o->meta[k], (size_t)(eq - o->meta[k]));
    if (rc == 0)
      rc = put_value(b, eq + 1);
  }
  return rc;
}

ssize_t produce_read_full(int fd, uint8_t *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0)
      break;
    got += (size_t)n;
  }
  return (ssize_t)got;
}

const b2sc_record *produce_record(const produce_opts *o, uint64_t i,
                                  b2sc_record *rec) {
  *rec = (b2sc_record){0};
  if (o->frame >= 0) {
    rec->present |= B2SC_REC_FRAME;
    rec->frame = (uint64_t)o->frame + i;
  }
  if (o->timestamp) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    rec->present |= B2SC_REC_TS;
    rec->ts_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  }
  return rec->present ? rec : NULL;
}

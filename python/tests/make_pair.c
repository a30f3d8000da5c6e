/* Test helper of the Python suite: writes a data frame and its records
 * frame through core's paired writer, as the daemon does, so that
 * Frame.series and Frame.record are tested on frames core wrote.
 *
 *   make_pair PATH SERIES_FILE [sparse]
 *
 * SERIES_FILE holds the series map (msgpack).  Four chunks of 1000 uint32
 * i * (k + 1); chunk k has frame number 100 + k and timestamp
 * 1700000000000000000 + k; chunk 1 a user map {"e": 1.0}, chunk 3 raw user
 * bytes "raw"; chunk 2 is a gap of a dropped buffer.  Prints chunk 0 as
 * compressed (hex), whose checksum the records must hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_meta.h"
#include "b2s_chunk.h"
#include "b2s_errors.h"

static int make_chunk(int k, uint8_t *dst, int32_t cap) {
  uint32_t data[1000];
  for (int i = 0; i < 1000; i++)
    data[i] = (uint32_t)(i * (k + 1));
  b2s_cparams cp = B2S_CPARAMS_DEFAULTS;
  cp.typesize = 4;
  b2s_ctx *ctx = b2s_ctx_new();
  int rc = b2s_compress(ctx, &cp, data, sizeof data, dst, cap);
  b2s_ctx_free(ctx);
  return rc;
}

static int append(b2s_pair *p, int k) {
  static const uint8_t map[] = {0x81, 0xa1, 'e',  0xcb, 0x3f, 0xf0,
                                0,    0,    0,    0,    0,    0};
  b2s_record r = {.has_frame = true, .frame = 100 + (uint64_t)k,
                  .has_ts = true, .ts = 1700000000000000000 + k};
  if (k == 1)
    r.user_kind = B2S_RECORD_USER_MAP, r.user = map, r.user_len = sizeof map;
  if (k == 3)
    r.user_kind = B2S_RECORD_USER_BIN, r.user = (const uint8_t *)"raw",
    r.user_len = 3;
  if (k == 2)
    return (int)b2s_pair_append_gap(p, 4000, B2S_RECORD_DROPPED, &r);
  uint8_t chunk[4200];
  int cb = make_chunk(k, chunk, sizeof chunk);
  for (int i = 0; k == 0 && i < cb; i++)
    printf("%02x%s", chunk[i], i + 1 == cb ? "\n" : "");
  return cb < 0 ? cb : (int)b2s_pair_append(p, chunk, (size_t)cb, &r);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: make_pair PATH SERIES_FILE [sparse]\n");
    return 2;
  }
  uint8_t series[1 << 16];
  FILE *f = fopen(argv[2], "rb");
  size_t n = f ? fread(series, 1, sizeof series, f) : 0;
  if (f)
    fclose(f);
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.cparams.typesize = 4;
  b2s_pair *p;
  int rc = b2s_pair_create(argv[1], argc > 3 && !strcmp(argv[3], "sparse"), &o,
                           NULL, &p);
  if (rc == 0 && n)
    rc = b2s_fwriter_series_set(b2s_pair_data(p), series, n);
  for (int k = 0; rc >= 0 && k < 4; k++)
    rc = append(p, k);
  if (rc >= 0)
    rc = b2s_pair_close(p);
  if (rc < 0) {
    fprintf(stderr, "make_pair: %s\n", b2s_strerror(rc));
    return 1;
  }
  return 0;
}

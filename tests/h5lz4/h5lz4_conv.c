/* Test helper: convert one HDF5 LZ4 framed buffer (bslz4 or lz4) into a
 * Blosc2 chunk, or frame raw pixels first with our own encoder.
 *   h5lz4_conv bslz4|lz4 ELEM_SIZE TYPESIZE NBYTES IN OUT [frame] [pad]
 * frame: IN holds raw pixels, framed here first; pad: pad_blocks.
 * Prints the path taken (verbatim, patched, recompressed). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_h5lz4.h"

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc(n > 0 ? (size_t)n : 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return p;
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: %s bslz4|lz4 ELEM TYPESIZE NBYTES IN OUT [frame]\n", argv[0]);
    return 2;
  }
  b2s_h5_params p = {.kind = strcmp(argv[1], "lz4") ? B2S_H5_BSLZ4 : B2S_H5_LZ4,
                     .elem_size = atoi(argv[2]), .typesize = atoi(argv[3]),
                     .clevel = 5, .verify = true};
  int64_t nbytes = atoll(argv[4]);
  size_t len;
  unsigned char *in = slurp(argv[5], &len);
  if (!in)
    return 2;
  bool frame = false;
  for (int i = 7; i < argc; i++) {
    frame |= !strcmp(argv[i], "frame");
    p.pad_blocks |= !strcmp(argv[i], "pad");
  }
  if (frame) {
    size_t cap = b2s_h5_compress_bound(&p, 0, len);
    unsigned char *f = malloc(cap);
    int64_t fl = b2s_h5_compress(&p, 0, in, len, f, cap);
    if (fl < 0)
      return 1;
    free(in);
    in = f;
    len = (size_t)fl;
  }
  int64_t bound = b2s_h5_chunk_bound(&p, in, len);
  if (bound < 0) {
    fprintf(stderr, "bad header: %s\n", b2s_strerror((int)bound));
    return 1;
  }
  unsigned char *out = malloc((size_t)bound);
  b2s_ctx *ctx = b2s_ctx_new();
  b2s_h5_result res;
  int rc = b2s_h5_to_chunk(ctx, &p, in, len, nbytes, out, (size_t)bound, &res);
  if (rc < 0) {
    fprintf(stderr, "convert: %s\n", b2s_strerror(rc));
    return 1;
  }
  FILE *f = fopen(argv[6], "wb");
  if (!f || fwrite(out, 1, (size_t)rc, f) != (size_t)rc || fclose(f))
    return 2;
  static const char *names[] = {"verbatim", "patched", "recompressed"};
  printf("%s %d %d\n", names[res.path], res.nblocks, res.reencoded);
  /* the block size in the chunk header, for a b2nd blockshape */
  int32_t bs;
  memcpy(&bs, out + 8, 4);
  printf("%d\n", bs);
  b2s_ctx_free(ctx);
  free(in);
  free(out);
  return 0;
}

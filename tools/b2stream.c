/* b2stream: the command-line tool.  This first version inspects single
 * Blosc2 chunk files; frames come with the frame layer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_chunk.h"

static const char *const special_names[] = {"none", "zeros", "nan", "value", "uninit"};

static int usage(FILE *to) {
  fprintf(to, "usage: b2stream COMMAND [--help] PATH\n"
              "  info PATH     header fields of a chunk file\n"
              "  cat PATH      decompressed bytes of a chunk file to stdout\n"
              "  verify PATH   decode the chunk fully; report the first problem\n");
  return to == stdout ? 0 : 2;
}

/* Whole file in memory; chunks are at most 2 GiB by format. */
static uint8_t *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "b2stream: %s: %s\n", path, strerror(errno));
    return NULL;
  }
  uint8_t *buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
    *size = (size_t)n;
  } else {
    fprintf(stderr, "b2stream: %s: cannot read\n", path);
    free(buf);
    buf = NULL;
  }
  fclose(f);
  return buf;
}

static int cmd_info(const uint8_t *b, size_t n, const char *path) {
  b2s_chunk_info ci;
  int rc = b2s_chunk_info_get(b, n, &ci);
  if (rc < 0) {
    fprintf(stderr, "b2stream: %s: %s\n", path, b2s_strerror(rc));
    return 1;
  }
  printf("path:       %s\nkind:       chunk (format version %d, %d-byte header)\n"
         "nbytes:     %d\ncbytes:     %d\nratio:      %.2f\ntypesize:   %d\n"
         "blocksize:  %d (%d blocks)\ncodec:      %d\nsplit:      %s\n"
         "memcpy:     %s\nspecial:    %s\ndictionary: %s\nfilters:   ",
         path, ci.version, ci.header_len, ci.nbytes, ci.cbytes,
         ci.cbytes ? (double)ci.nbytes / ci.cbytes : 0.0, ci.typesize, ci.blocksize,
         ci.nblocks, ci.codec, ci.dont_split ? "no" : "yes", ci.memcpyed ? "yes" : "no",
         special_names[ci.special], ci.use_dict ? "yes" : "no");
  for (int i = 0; i < B2S_MAX_FILTERS; i++)
    printf(" %d:%d", ci.filters[i], ci.filters_meta[i]);
  printf("\n");
  return 0;
}

static int decode(const uint8_t *b, size_t n, const char *path, uint8_t **out) {
  b2s_chunk_info ci;
  int rc = b2s_chunk_info_get(b, n, &ci);
  b2s_ctx *ctx = b2s_ctx_new();
  *out = rc < 0 ? NULL : malloc((size_t)ci.nbytes + 1);
  if (rc >= 0)
    rc = ctx && *out ? b2s_decompress(ctx, b, n, *out, (size_t)ci.nbytes) : B2S_E_NOMEM;
  b2s_ctx_free(ctx);
  if (rc < 0)
    fprintf(stderr, "b2stream: %s: %s\n", path, b2s_strerror(rc));
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return usage(stderr);
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
    return usage(stdout);
  if (strcmp(cmd, "info") && strcmp(cmd, "cat") && strcmp(cmd, "verify")) {
    fprintf(stderr, "b2stream: unknown command '%s'\n", cmd);
    return usage(stderr);
  }
  if (argc == 3 && !strcmp(argv[2], "--help"))
    return usage(stdout);
  if (argc != 3)
    return usage(stderr);
  size_t n;
  uint8_t *b = slurp(argv[2], &n), *out = NULL;
  if (!b)
    return 1;
  int rc;
  if (!strcmp(cmd, "info")) {
    rc = cmd_info(b, n, argv[2]);
  } else {
    int got = decode(b, n, argv[2], &out);
    rc = got < 0;
    if (got >= 0 && !strcmp(cmd, "cat"))
      rc = fwrite(out, 1, (size_t)got, stdout) != (size_t)got;
    else if (got >= 0)
      printf("%s: ok, %d bytes\n", argv[2], got);
  }
  free(out);
  free(b);
  return rc;
}

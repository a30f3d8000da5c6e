/* libFuzzer target for the frame reader.
 *
 * Input: a whole contiguous frame.  It is opened from memory (libFuzzer's
 * buffer has the exact input size, so any read past it is caught), then
 * every metalayer, vlmetalayer and the b2nd description are fetched and the
 * chunks are read and decompressed.  Errors are fine; the checks are that
 * nothing reads out of bounds, that every failure carries its error record,
 * and that sizes reported agree with what the calls return.
 *
 * The fuzz build compiles the core with a 1 MiB B2S_FRAME_DECODED_FLOOR
 * (core/meson.build).  With the default 64 MiB floor every input that claims a
 * huge all-special index costs a 64 MiB decode, and such inputs soon
 * dominate the corpus (about 10x fewer executions per second). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Chunks can claim up to 2 GiB (special entries) from a few bytes; larger
 * ones are asked for with a small buffer and must fail cleanly. */
#define DST_MAX (1u << 20)
/* Frames can hold millions of special entries; decode a sample. */
#define CHUNKS_MAX 64

static void check_failure(const b2s_frame *f, int rc, int64_t nchunk) {
  const b2s_frame_error *e = b2s_frame_last_error(f);
  if (e->code != rc || e->reason == NULL ||
      (nchunk >= 0 && e->nchunk != nchunk))
    abort();
}

static void drain_chunk(b2s_frame *f, int64_t i, uint8_t *dst) {
  int32_t cbytes, nbytes;
  int rc = b2s_frame_chunk_sizes(f, i, &cbytes, &nbytes);
  if (rc < 0) {
    check_failure(f, rc, i);
    return;
  }
  if (cbytes < 32 || nbytes < 0)
    abort();
  rc = b2s_frame_chunk_read(f, i, dst, DST_MAX);
  if (rc < 0)
    check_failure(f, rc, i);
  else if (rc != cbytes)
    abort();
  rc = b2s_frame_chunk_decompress(f, i, NULL, dst, DST_MAX);
  if (rc < 0)
    check_failure(f, rc, i);
  else if (rc != nbytes || (uint32_t)rc > DST_MAX)
    abort();
}

static void drain_metas(b2s_frame *f) {
  const b2s_frame_metas *m = b2s_frame_metalayers(f);
  for (int32_t k = 0; k < m->n; k++) {
    const uint8_t *content;
    int32_t len;
    if (b2s_frame_meta_get(f, m->items[k].name, &content, &len) < 0)
      abort();   /* names come from the list: always found */
  }
  const b2s_frame_metas *vl = b2s_frame_vlmetalayers(f);
  for (int32_t k = 0; k < vl->n; k++) {
    uint8_t *content = NULL;
    int32_t len;
    int rc = b2s_frame_vlmeta_get(f, vl->items[k].name, NULL, &content, &len);
    if (rc < 0)
      check_failure(f, rc, -1);
    free(content);
  }
  b2s_b2nd nd;
  int rc = b2s_frame_b2nd_get(f, &nd);
  if (rc < 0 && rc != B2S_E_NOTFOUND && rc != B2S_E_B2ND)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  b2s_frame *f = NULL;
  b2s_frame_error err;
  int rc = b2s_frame_open_buffer(data, size, &f, &err);
  if (rc < 0) {
    if (f != NULL || err.code != rc || err.reason == NULL ||
        err.offset < -1 || err.offset > (int64_t)size)
      abort();
    return 0;
  }
  uint8_t *dst = malloc(DST_MAX);
  if (dst == NULL)
    abort();
  drain_metas(f);
  int64_t n = b2s_frame_nchunks(f);
  for (int64_t i = 0; i < n && i < CHUNKS_MAX; i++)
    drain_chunk(f, i, dst);
  if (n > CHUNKS_MAX)
    drain_chunk(f, n - 1, dst);
  if (b2s_frame_chunk_decompress(f, n, NULL, dst, DST_MAX) != B2S_E_NCHUNK)
    abort();
  free(dst);
  b2s_frame_free(f);
  return 0;
}

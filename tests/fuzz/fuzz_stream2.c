/* libFuzzer target for the DECTRIS Stream V2 decoder (b2s_s2_decode) and,
 * on what decodes, the array parsers and the bslz4/lz4 -> Blosc2 conversion
 * of every image channel.
 *
 * Invariants: no read outside the input; a decoded array's sizes agree with
 * its shape; a converted chunk decodes to exactly the declared size and to
 * the same bytes as decoding the framing directly; every field the daemon
 * keeps as series metadata converts to one whole msgpack value. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_chunk.h"
#include "b2s_h5lz4.h"
#include "b2s_msgpack.h"
#include "b2s_stream2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_IMAGE (1 << 20)   /* keep allocations small while fuzzing */

static void convert(b2s_ctx *ctx, const b2s_s2_array *a) {
  if (a->comp == B2S_S2_RAW) {
    if ((int64_t)a->data.len != a->nbytes)
      abort();
    return;
  }
  if (a->nbytes > MAX_IMAGE || a->elem_size > 255)
    return;
  b2s_h5_params p = {.kind = a->comp == B2S_S2_BSLZ4 ? B2S_H5_BSLZ4 : B2S_H5_LZ4,
                     .elem_size = (int32_t)(a->comp_elem ? a->comp_elem : a->elem_size),
                     .typesize = (int32_t)a->elem_size, .clevel = 5, .verify = true};
  int64_t bound = b2s_h5_chunk_bound(&p, a->data.p, a->data.len);
  if (bound < 0 || bound > 4 * MAX_IMAGE)
    return;
  uint8_t *chunk = malloc((size_t)bound), *x = malloc((size_t)a->nbytes + 1),
          *y = malloc((size_t)a->nbytes + 1);
  b2s_h5_result res;
  int n = b2s_h5_to_chunk(ctx, &p, a->data.p, a->data.len, a->nbytes, chunk,
                          (size_t)bound, &res);
  if (n > 0) {
    if (b2s_decompress(ctx, chunk, (size_t)n, x, (size_t)a->nbytes + 1) != a->nbytes)
      abort();
    if (b2s_h5_decompress(&p, a->data.p, a->data.len, y, (size_t)a->nbytes) !=
            (int)a->nbytes ||
        memcmp(x, y, (size_t)a->nbytes) != 0)
      abort();
  }
  free(chunk);
  free(x);
  free(y);
}

static void check_shape(const b2s_s2_array *a) {
  uint64_t n = a->elem_size;
  for (uint32_t i = 0; i < a->ndim; i++)
    n *= a->dim[i];
  if (a->ndim < 1 || a->ndim > B2S_S2_MAX_DIMS || n != (uint64_t)a->nbytes)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *in = malloc(size ? size : 1);
  b2s_s2_msg *m = malloc(sizeof *m);
  b2s_ctx *ctx = b2s_ctx_new();
  if (!in || !m || !ctx)
    abort();
  memcpy(in, data, size);
  if (b2s_s2_decode(in, size, m) == 0) {
    for (uint32_t i = 0; i < m->ndata; i++) {
      check_shape(&m->data[i].a);
      convert(ctx, &m->data[i].a);
    }
    static const char *const maps[] = {"flatfield", "pixel_mask"};
    b2s_s2_named named[B2S_S2_MAX_CHANNELS];
    uint32_t n;
    for (int k = 0; k < 2; k++) {
      const b2s_s2_field *f = b2s_s2_field_get(m, maps[k]);
      if (f && b2s_s2_array_map(f->value, named, B2S_S2_MAX_CHANNELS, &n) == 0)
        for (uint32_t i = 0; i < n; i++)
          check_shape(&named[i].a);
    }
    int64_t ns;
    (void)b2s_s2_rational_ns(m->start_time, &ns);
    /* every field as the daemon keeps it: series metadata (msgpack), and
     * the text ones it names streams by; a field kept is a whole value */
    b2s_mpbuf mp;
    b2s_mpbuf_init(&mp);
    for (uint32_t i = 0; i < m->nfields; i++) {
      b2s_s2_str t;
      if (b2s_s2_text(m->fields[i].value, &t) == 0 &&
          (t.p < (const char *)in || t.p + t.len > (const char *)in + size))
        abort();
      mp.len = 0;
      if (b2s_s2_to_msgpack(m->fields[i].value, &mp, 1 << 16) == 0) {
        b2s_mpreader r;
        b2s_mpreader_init(&r, mp.data, mp.len);
        if (b2s_mp_skip(&r, 40) < 0 || b2s_mpreader_left(&r) != 0)
          abort();
      }
    }
    b2s_mpbuf_fini(&mp);
  }
  b2s_ctx_free(ctx);
  free(m);
  free(in);
  return 0;
}

/* libFuzzer target for the frame structure parsers alone (no chunk codec).
 *
 * The input is treated as a frame: fixed header and metalayer section from
 * the start, trailer from the end (as the reader locates it), and the whole
 * input as a b2nd metalayer.  Whatever parses must serialise to bytes that
 * parse back to the same model; the serialisers' own output must be
 * accepted by the parsers. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_frame_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_metas(const b2s_frame_metas *a, const b2s_frame_metas *b) {
  if (a->n != b->n)
    abort();
  for (int32_t i = 0; i < a->n; i++) {
    const b2s_frame_meta *x = &a->items[i], *y = &b->items[i];
    if (strcmp(x->name, y->name) != 0 || x->len != y->len ||
        (x->len > 0 && memcmp(x->content, y->content, (size_t)x->len) != 0))
      abort();
  }
}

static void header_roundtrip(const uint8_t *data, size_t size) {
  b2s_frame_header h, h2;
  b2s_frame_metas m, m2;
  b2s_frame_error err;
  b2s_frame_metas_init(&m);
  b2s_frame_metas_init(&m2);
  if (b2s_frame_header_parse(data, size, &h, &err) < 0)
    return;
  if ((size_t)h.header_len > size ||
      b2s_frame_metas_parse(data, (size_t)h.header_len, &m, &err) < 0)
    return;
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  int len = b2s_frame_header_write(&h, &m, &out);
  /* Contents may not add up to more than their section, so the canonical
   * form is never longer than what it was parsed from. */
  if (len < 0 || (size_t)len != out.len || len > h.header_len)
    abort();
  if (b2s_frame_header_parse(out.data, out.len, &h2, &err) < 0 ||
      b2s_frame_metas_parse(out.data, out.len, &m2, &err) < 0)
    abort();
  h2.header_len = h.header_len;
  if (memcmp(&h, &h2, sizeof h) != 0)
    abort();
  same_metas(&m, &m2);
  b2s_mpbuf_fini(&out);
  b2s_frame_metas_fini(&m);
  b2s_frame_metas_fini(&m2);
}

static void trailer_roundtrip(const uint8_t *data, size_t size) {
  b2s_frame_metas vl, vl2;
  b2s_frame_error err;
  uint32_t tlen;
  if (size < B2S_FRAME_TAIL_LEN)
    return;
  /* as the reader: trailer_len from the end, header length unknown (0) */
  if (b2s_frame_tail_parse(data + size - B2S_FRAME_TAIL_LEN, (int64_t)size, 0,
                           &tlen, &err) < 0)
    return;
  b2s_frame_metas_init(&vl);
  b2s_frame_metas_init(&vl2);
  int64_t off = (int64_t)size - tlen;
  if (b2s_frame_trailer_parse(data + off, tlen, off, &vl, &err) < 0)
    return;
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  int len = b2s_frame_trailer_write(&vl, &out);
  if (len < 0 || (size_t)len != out.len || (uint32_t)len > tlen ||
      b2s_frame_trailer_parse(out.data, out.len, 0, &vl2, &err) < 0)
    abort();
  same_metas(&vl, &vl2);
  b2s_mpbuf_fini(&out);
  b2s_frame_metas_fini(&vl);
  b2s_frame_metas_fini(&vl2);
}

static void b2nd_roundtrip(const uint8_t *data, size_t size) {
  b2s_b2nd nd, nd2;
  b2s_frame_error err;
  if (b2s_b2nd_parse(data, size, 0, &nd, &err) < 0)
    return;
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  if (b2s_b2nd_write(&nd, &out) < 0 ||
      b2s_b2nd_parse(out.data, out.len, 0, &nd2, &err) < 0)
    abort();
  if (nd.ndim != nd2.ndim || nd.has_dtype != nd2.has_dtype ||
      nd.dtype_len != nd2.dtype_len ||
      (nd.dtype_len && memcmp(nd.dtype, nd2.dtype, nd.dtype_len) != 0))
    abort();
  for (int i = 0; i < nd.ndim; i++)
    if (nd.shape[i] != nd2.shape[i] || nd.chunkshape[i] != nd2.chunkshape[i] ||
        nd.blockshape[i] != nd2.blockshape[i])
      abort();
  b2s_mpbuf_fini(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  header_roundtrip(data, size);
  trailer_roundtrip(data, size);
  b2nd_roundtrip(data, size);
  return 0;
}

/* A frame that grows along the first dimension of its b2nd array keeps the
 * metalayer's shape in step with its chunks, so that c-blosc2 (and
 * python-blosc2) see every image and not the empty array of the stream's
 * template. */
#include <stdint.h>
#include <string.h>

#include "b2s_errors.h"
#include "fwriter_internal.h"

/* Chunks in one slab of the array along dimension 0 (the product of the
 * chunk grid over the other dimensions); 0 when a dimension is empty. */
static int64_t chunks_per_row(const b2s_b2nd *nd) {
  int64_t per = 1;
  for (int d = 1; d < nd->ndim; d++) {
    if (nd->shape[d] <= 0 || nd->chunkshape[d] <= 0)
      return 0;
    int64_t g = (nd->shape[d] + nd->chunkshape[d] - 1) / nd->chunkshape[d];
    if (per > INT64_MAX / g)
      return 0;
    per *= g;
  }
  return per;
}

int b2s_fwriter_b2nd_grow(b2s_fwriter *w) {
  if (w == NULL)
    return B2S_E_ARG;
  int i = b2s_frame_metas_find(&w->m.metas, "b2nd");
  if (i == B2S_E_NOTFOUND)
    return 0;
  if (i < 0)
    return i;
  const b2s_frame_meta *m = &w->m.metas.items[i];
  b2s_b2nd nd;
  int rc = b2s_b2nd_parse(m->content, (size_t)m->len, 0, &nd, NULL);
  if (rc < 0)
    return rc;
  int64_t per = nd.ndim >= 1 ? chunks_per_row(&nd) : 0;
  if (per <= 0 || nd.chunkshape[0] <= 0)
    return 0;
  /* whole slabs only: a partly filled one is not part of the array yet */
  int64_t rows = w->m.n / per;
  if (rows > INT64_MAX / nd.chunkshape[0])
    return B2S_E_TOO_BIG;
  int64_t want = rows * nd.chunkshape[0];
  if (want <= nd.shape[0])
    return 0;
  nd.shape[0] = want;
  b2s_mpbuf b = {0};
  rc = b2s_b2nd_write(&nd, &b);   /* nd.dtype still points into m->content */
  if (rc >= 0)
    rc = b2s_fwriter_meta_update(w, "b2nd", b.data, (int32_t)b.len);
  b2s_mpbuf_fini(&b);
  return rc < 0 ? rc : 1;
}

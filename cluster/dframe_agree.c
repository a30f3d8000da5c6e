/* NAME.meta written only once a majority of the ranks propose the same
 * parameters (b2s_dframe.h, b2s_dframe_create_agreed): a rank configured
 * with another N or frames_per_block cannot be the first writer that
 * every other rank must then follow. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dframe_internal.h"

#define PROPOSAL_MAX 65536

static void describe(const b2s_dframe_params *p, char *out, size_t cap) {
  snprintf(out, cap, "ranks %d, frames_per_block %d, chunk_nbytes %d, "
           "typesize %d", (int)p->ranks, (int)p->frames_per_block,
           (int)p->chunk_nbytes, (int)p->cparams.typesize);
}

/* NAME.meta exists: the frame if it holds p, else B2S_E_OBJ_CONFLICT
 * with both sides in why. */
static int open_existing(b2s_store *s, const char *name,
                         const b2s_dframe_params *p, b2s_dframe **out,
                         b2s_errdetail *ed) {
  int rc = b2s_dframe_create(s, name, p, out);
  if (rc != B2S_E_OBJ_CONFLICT)
    return rc;
  b2s_dframe *df;
  char theirs[160] = "unreadable", ours[160];
  if (b2s_dframe_open(s, name, &df) == 0) {
    describe(b2s_dframe_params_get(df), theirs, sizeof theirs);
    b2s_dframe_free(df);
  }
  describe(p, ours, sizeof ours);
  return b2s_errdetail_set(ed, rc, "%s.meta in the store has %s; this rank "
                           "has %s", name, theirs, ours);
}

/* How many ranks 0..N-1 propose exactly m; one that differs in other. */
static int count_agreeing(b2s_store *s, const char *name, int32_t n,
                          const b2s_mpbuf *m, int32_t *other, char *what,
                          size_t cap) {
  int agree = 0;
  *other = -1;
  for (int32_t k = 0; k < n; k++) {
    char obj[256];
    snprintf(obj, sizeof obj, "%s.p.%d", name, (int)k);
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = b2s_store_get(s, obj, PROPOSAL_MAX, &buf, &len);
    if (rc == -ENOENT)
      continue;
    if (rc < 0)
      return rc;
    if (len == m->len && memcmp(buf, m->data, len) == 0) {
      agree++;
    } else if (*other < 0) {
      b2s_dframe_params q;
      *other = k;
      if (b2s_dframe_meta_decode(buf, len, &q) == 0)
        describe(&q, what, cap);
      else
        snprintf(what, cap, "unreadable parameters");
    }
    free(buf);
  }
  return agree;
}

int b2s_dframe_create_agreed(b2s_store *s, const char *name, int32_t rank,
                             const b2s_dframe_params *p, b2s_dframe **out,
                             b2s_errdetail *ed) {
  b2s_errdetail_clear(ed);
  if (!s || !name || !p || !out || rank < 0 ||
      b2s_dframe_params_check(p) < 0 || rank >= p->ranks)
    return B2S_E_ARG;
  *out = NULL;
  b2s_dframe *df;
  int rc = b2s_dframe_open(s, name, &df);
  if (rc == 0) {
    b2s_dframe_free(df);
    return open_existing(s, name, p, out, ed);
  }
  if (rc != -ENOENT)
    return rc;
  b2s_mpbuf m;
  b2s_mpbuf_init(&m);
  char obj[256], what[160] = "";
  snprintf(obj, sizeof obj, "%s.p.%d", name, (int)rank);
  rc = b2s_dframe_meta_encode(p, &m);
  if (rc == 0)
    rc = b2s_store_put(s, obj, m.data, m.len);   /* this rank's alone */
  int32_t other = -1;
  int agree = rc < 0 ? rc : count_agreeing(s, name, p->ranks, &m, &other,
                                           what, sizeof what);
  b2s_mpbuf_fini(&m);
  if (agree < 0)
    return agree;
  if (agree * 2 > p->ranks)
    return open_existing(s, name, p, out, ed);
  char ours[160];
  describe(p, ours, sizeof ours);
  if (other >= 0)
    return b2s_errdetail_set(ed, B2S_E_BUSY, "%d of %d ranks propose %s for "
                             "%s; rank %d proposes %s", agree, (int)p->ranks,
                             ours, name, (int)other, what);
  return b2s_errdetail_set(ed, B2S_E_BUSY, "%d of %d ranks propose %s for %s "
                           "so far", agree, (int)p->ranks, ours, name);
}

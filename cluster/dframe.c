/* A distributed frame's handle: names of its objects, create and open
 * through NAME.meta (b2s_dframe.h).  The chunk objects (and their names)
 * are in dframe_chunk.c, the key log in dframe_index.c, exports in
 * dframe_export.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dframe_internal.h"

static int obj_name(const char *name, const char *suffix, char *out) {
  int n = snprintf(out, DF_OBJ_MAX, "%s.%s", name, suffix);
  return n < 0 || n >= DF_OBJ_MAX ? -ENAMETOOLONG : 0;
}

static int df_new(b2s_store *s, const char *name, b2s_dframe **out) {
  if (s == NULL || name == NULL || out == NULL ||
      !b2s_dname_valid(name, strlen(name)))
    return B2S_E_ARG;
  *out = NULL;
  b2s_dframe *df = calloc(1, sizeof *df);
  if (df == NULL)
    return B2S_E_NOMEM;
  df->s = s;
  strcpy(df->name, name);
  df->commit_h = -1;
  b2s_mpbuf_init(&df->mp);
  int rc = obj_name(name, "index", df->index_obj);
  if (rc < 0) {
    b2s_dframe_free(df);
    return rc;
  }
  *out = df;
  return 0;
}

void b2s_dframe_free(b2s_dframe *df) {
  if (df == NULL)
    return;
  free(df->meta);
  free(df->rec);
  b2s_mpbuf_fini(&df->mp);
  free(df);
}

const b2s_dframe_params *b2s_dframe_params_get(const b2s_dframe *df) {
  return df ? &df->p : NULL;
}

/* Take meta (malloc'ed NAME.meta bytes) into df once they decode. */
static int take_meta(b2s_dframe *df, uint8_t *meta, size_t len) {
  int rc = b2s_dframe_meta_decode(meta, len, &df->p);
  if (rc < 0) {
    free(meta);
    return rc;
  }
  df->meta = meta;
  df->meta_len = len;
  return 0;
}

static int read_meta(b2s_dframe *df) {
  char obj[DF_OBJ_MAX];
  int rc = obj_name(df->name, "meta", obj);
  uint8_t *meta = NULL;
  size_t len = 0;
  if (rc == 0)
    rc = b2s_store_get(df->s, obj, DF_META_MAX, &meta, &len);
  return rc < 0 ? rc : take_meta(df, meta, len);
}

int b2s_dframe_open(b2s_store *s, const char *name, b2s_dframe **out) {
  b2s_dframe *df;
  int rc = df_new(s, name, &df);
  if (rc < 0)
    return rc;
  rc = read_meta(df);
  if (rc == 0)
    rc = b2s_dframe_refresh(df, NULL, NULL);
  if (rc < 0) {
    b2s_dframe_free(df);
    return rc;
  }
  *out = df;
  return 0;
}

/* NAME.meta exists with other bytes: the same parameters written another
 * way are accepted (they encode to our bytes), others conflict. */
static int same_params(b2s_dframe *df, const b2s_mpbuf *ours) {
  int rc = read_meta(df);
  if (rc < 0)
    return rc == B2S_E_META ? B2S_E_OBJ_CONFLICT : rc;
  b2s_mpbuf theirs;
  b2s_mpbuf_init(&theirs);
  rc = b2s_dframe_meta_encode(&df->p, &theirs);
  if (rc == 0 && (theirs.len != ours->len ||
                  memcmp(theirs.data, ours->data, ours->len) != 0))
    rc = B2S_E_OBJ_CONFLICT;
  b2s_mpbuf_fini(&theirs);
  return rc;
}

static int create_meta(b2s_dframe *df, const b2s_dframe_params *p) {
  b2s_mpbuf m;
  b2s_mpbuf_init(&m);
  char obj[DF_OBJ_MAX];
  int rc = b2s_dframe_meta_encode(p, &m);
  if (rc == 0)
    rc = obj_name(df->name, "meta", obj);
  if (rc == 0)
    rc = b2s_store_put_once(df->s, obj, m.data, m.len, NULL, 0);
  if (rc == 0) {
    /* ours: hand the buffer over (b2nd's dtype will point into it) */
    rc = take_meta(df, m.data, m.len);
    m.data = NULL;
  } else if (rc == B2S_E_OBJ_CONFLICT) {
    rc = same_params(df, &m);
  }
  b2s_mpbuf_fini(&m);
  return rc;
}

int b2s_dframe_create(b2s_store *s, const char *name,
                      const b2s_dframe_params *p, b2s_dframe **out) {
  if (b2s_dframe_params_check(p) < 0)
    return B2S_E_ARG;
  b2s_dframe *df;
  int rc = df_new(s, name, &df);
  if (rc < 0)
    return rc;
  rc = create_meta(df, p);
  if (rc == 0)
    rc = b2s_dframe_refresh(df, NULL, NULL);
  if (rc < 0) {
    b2s_dframe_free(df);
    return rc;
  }
  *out = df;
  return 0;
}

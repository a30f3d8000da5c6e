/* Chunk records: the msgpack map of one record, the companion frame's
 * path, and reading records by chunk number (b2s_meta.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "b2s_errors.h"
#include "b2s_meta.h"

uint64_t b2s_chunk_xxh64(const void *chunk, size_t cbytes) {
  return (uint64_t)XXH64(chunk, cbytes, 0);
}

/* ---- encoding ------------------------------------------------------------- */

static int user_ok(const b2s_record *rec) {
  if (rec->user_kind == B2S_RECORD_USER_NONE)
    return 0;
  if (rec->user_len > B2S_RECORD_USER_MAX || (rec->user == NULL && rec->user_len))
    return B2S_E_RECORD_USER;
  if (rec->user_kind == B2S_RECORD_USER_BIN)
    return 0;
  if (rec->user_kind != B2S_RECORD_USER_MAP)
    return B2S_E_RECORD_USER;
  /* one whole map and nothing after it */
  b2s_mpreader r;
  b2s_mpval v;
  b2s_mpreader_init(&r, rec->user, rec->user_len);
  if (b2s_mp_read_any(&r, &v) < 0 || v.type != B2S_MPT_MAP)
    return B2S_E_RECORD_USER;
  r.pos = 0;
  if (b2s_mp_skip(&r, B2S_MP_MAX_DEPTH) < 0 || b2s_mpreader_left(&r) != 0)
    return B2S_E_RECORD_USER;
  return 0;
}

static int put_key(b2s_mpbuf *b, const char *k) {
  return b2s_mp_put_str(b, k, strlen(k));
}

int b2s_record_encode(const b2s_record *rec, b2s_mpbuf *out) {
  if (rec == NULL || out == NULL)
    return B2S_E_ARG;
  int rc = user_ok(rec);
  if (rc < 0)
    return rc;
  bool user = rec->user_kind != B2S_RECORD_USER_NONE;
  uint32_t n = 2u + rec->has_frame + rec->has_ts + user;
  rc = b2s_mp_put_map(out, n);
  if (rc == 0 && rec->has_frame && (rc = put_key(out, "frame")) == 0)
    rc = b2s_mp_put_uint(out, rec->frame);
  if (rc == 0 && rec->has_ts && (rc = put_key(out, "ts")) == 0)
    rc = b2s_mp_put_int(out, rec->ts);
  if (rc == 0 && (rc = put_key(out, "xxh64")) == 0)
    rc = b2s_mp_put_uint(out, rec->xxh64);
  if (rc == 0 && (rc = put_key(out, "flags")) == 0)
    rc = b2s_mp_put_uint(out, rec->flags);
  if (rc == 0 && user && (rc = put_key(out, "user")) == 0)
    rc = rec->user_kind == B2S_RECORD_USER_BIN
             ? b2s_mp_put_bin(out, rec->user, rec->user_len)
             : b2s_mp_write_raw(out, rec->user, rec->user_len);
  return rc;
}

/* ---- decoding ------------------------------------------------------------- */

enum { K_FRAME = 1, K_TS = 2, K_XXH = 4, K_FLAGS = 8, K_USER = 16 };

static int key_id(const b2s_mpval *k) {
  static const char *names[] = {"frame", "ts", "xxh64", "flags", "user"};
  for (int i = 0; i < 5; i++)
    if (k->n == strlen(names[i]) && memcmp(k->p, names[i], k->n) == 0)
      return 1 << i;
  return 0;
}

static int read_user(b2s_mpreader *r, b2s_record *rec) {
  size_t start = r->pos;
  b2s_mpval v;
  if (b2s_mp_read_any(r, &v) < 0)
    return B2S_E_RECORD;
  if (v.type == B2S_MPT_BIN) {
    rec->user_kind = B2S_RECORD_USER_BIN;
    rec->user = v.p;
    rec->user_len = v.n;
  } else if (v.type == B2S_MPT_MAP) {
    r->pos = start;
    if (b2s_mp_skip(r, B2S_MP_MAX_DEPTH) < 0)
      return B2S_E_RECORD;
    rec->user_kind = B2S_RECORD_USER_MAP;
    rec->user = r->buf + start;
    rec->user_len = (uint32_t)(r->pos - start);
  } else {
    return B2S_E_RECORD_USER;
  }
  return rec->user_len > B2S_RECORD_USER_MAX ? B2S_E_RECORD_USER : 0;
}

/* The value of a known key; unknown keys are skipped. */
static int read_field(b2s_mpreader *r, int id, b2s_record *rec) {
  if (id == 0)
    return b2s_mp_skip(r, B2S_MP_MAX_DEPTH) < 0 ? B2S_E_RECORD : 0;
  if (id == K_USER)
    return read_user(r, rec);
  b2s_mpval v;
  if (b2s_mp_read_any(r, &v) < 0)
    return B2S_E_RECORD;
  if (id == K_TS) {
    if (v.type == B2S_MPT_INT)
      rec->ts = v.i;
    else if (v.type == B2S_MPT_UINT && v.u <= INT64_MAX)
      rec->ts = (int64_t)v.u;
    else
      return B2S_E_RECORD;
    rec->has_ts = true;
    return 0;
  }
  if (v.type != B2S_MPT_UINT)
    return B2S_E_RECORD;
  if (id == K_FLAGS && v.u > UINT32_MAX)
    return B2S_E_RECORD;
  if (id == K_FRAME)
    rec->frame = v.u, rec->has_frame = true;
  else if (id == K_XXH)
    rec->xxh64 = v.u;
  else
    rec->flags = (uint32_t)v.u;
  return 0;
}

int b2s_record_decode(const void *buf, size_t len, b2s_record *rec) {
  if (buf == NULL || rec == NULL)
    return B2S_E_ARG;
  memset(rec, 0, sizeof *rec);
  b2s_mpreader r;
  b2s_mpval v;
  b2s_mpreader_init(&r, buf, len);
  if (b2s_mp_read_any(&r, &v) < 0 || v.type != B2S_MPT_MAP)
    return B2S_E_RECORD;
  int seen = 0;
  for (uint32_t k = 0; k < v.n; k++) {
    b2s_mpval key;
    if (b2s_mp_read_any(&r, &key) < 0 || key.type != B2S_MPT_STR)
      return B2S_E_RECORD;
    int id = key_id(&key);
    if (id & seen)
      return B2S_E_RECORD;         /* a known key twice */
    seen |= id;
    int rc = read_field(&r, id, rec);
    if (rc < 0)
      return rc;
  }
  if (b2s_mpreader_left(&r) != 0 || (seen & (K_XXH | K_FLAGS)) != (K_XXH | K_FLAGS))
    return B2S_E_RECORD;
  return 0;
}

/* ---- the companion frame's path ------------------------------------------- */

int b2s_records_path(const char *data_path, char *out, size_t outlen) {
  static const char ext[] = ".b2frame", rec[] = ".records.b2frame";
  if (data_path == NULL || out == NULL)
    return B2S_E_ARG;
  size_t n = strlen(data_path);
  while (n > 1 && data_path[n - 1] == '/')
    n--;
  if (n == 0)
    return B2S_E_ARG;
  size_t el = sizeof ext - 1;
  size_t base = n >= el && memcmp(data_path + n - el, ext, el) == 0 ? n - el : n;
  size_t total = base + sizeof rec - 1;
  if (total + 1 > outlen)
    return -ENAMETOOLONG;
  memcpy(out, data_path, base);
  memcpy(out + base, rec, sizeof rec);
  return (int)total;
}

/* ---- reading ------------------------------------------------------------- */

struct b2s_records {
  b2s_frame *f;
  uint8_t *buf;
  size_t cap;
};

int b2s_records_open(const char *data_path, b2s_records **out,
                     b2s_frame_error *err) {
  if (out == NULL)
    return B2S_E_ARG;
  *out = NULL;
  char path[4096];
  int rc = b2s_records_path(data_path, path, sizeof path);
  if (rc < 0)
    return rc;
  struct stat st;
  if (stat(path, &st) != 0)
    return -errno;
  b2s_records *r = calloc(1, sizeof *r);
  if (r == NULL)
    return B2S_E_NOMEM;
  rc = b2s_frame_open(path, &r->f, err);
  if (rc < 0) {
    free(r);
    return rc;
  }
  *out = r;
  return 0;
}

void b2s_records_free(b2s_records *r) {
  if (r == NULL)
    return;
  b2s_frame_free(r->f);
  free(r->buf);
  free(r);
}

int64_t b2s_records_count(const b2s_records *r) {
  return r ? b2s_frame_nchunks(r->f) : 0;
}

b2s_frame *b2s_records_frame(b2s_records *r) { return r ? r->f : NULL; }

int b2s_records_get(b2s_records *r, int64_t i, b2s_record *rec) {
  if (r == NULL || rec == NULL)
    return B2S_E_ARG;
  if (i < 0 || i >= b2s_frame_nchunks(r->f))
    return B2S_E_NCHUNK;
  int32_t nbytes = 0;
  int rc = b2s_frame_chunk_sizes(r->f, i, NULL, &nbytes);
  if (rc < 0)
    return rc;
  /* a record is small; a records chunk claiming more is damage */
  if (nbytes <= 0 || nbytes > 2 * B2S_RECORD_USER_MAX + 256)
    return B2S_E_RECORD;
  if ((size_t)nbytes > r->cap) {
    uint8_t *p = realloc(r->buf, (size_t)nbytes);
    if (p == NULL)
      return B2S_E_NOMEM;
    r->buf = p;
    r->cap = (size_t)nbytes;
  }
  rc = b2s_frame_chunk_decompress(r->f, i, NULL, r->buf, r->cap);
  if (rc < 0)
    return rc;
  return b2s_record_decode(r->buf, (size_t)rc, rec);
}

/* A small flat C API for the Python package (python/b2stream/_native.py
 * loads it with ctypes): local frame reading over core/include/b2s_frame.h (with
 * the series metadata and records of core/include/b2s_meta.h), reading
 * distributed frames over cluster/include/b2s_dframe.h, and the producer side
 * of the shared-memory slot protocol over proto/b2s_shm.h, whose
 * compare-and-swap transitions Python cannot do itself.
 *
 * Only plain integers, pointers and NUL-terminated strings cross this
 * boundary, so the ctypes declarations stay trivial and no C structure
 * layout has to be mirrored in Python.
 *
 * Ownership: b2spy_frame_open, b2spy_records_open, b2spy_dframe_open and
 * b2spy_shm_attach return heap handles released by b2spy_frame_close,
 * b2spy_records_close, b2spy_dframe_close and b2spy_shm_detach (all accept
 * NULL).
 * Buffers passed in belong to the caller.  Threads: a handle is used by one
 * thread at a time (ctypes releases the GIL around every call). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_chunk.h"
#include "b2s_dframe.h"
#include "b2s_py_gather.h"
#include "b2s_errors.h"
#include "b2s_meta.h"
#include "b2s_curve_key.h"
#include "b2s_frame.h"
#include "b2s_shm.h"

#define B2SPY_API __attribute__((visibility("default")))

B2SPY_API const char *b2spy_strerror(int code) { return b2s_strerror(code); }

/* ---- frames -------------------------------------------------------------- */

/* Describe a failed open in msg (cap bytes). */
static void open_msg(int rc, const b2s_frame_error *err, char *msg,
                     size_t cap) {
  if (!msg || !cap)
    return;
  if (err->reason)
    snprintf(msg, cap, "%s (offset %lld)", err->reason, (long long)err->offset);
  else
    snprintf(msg, cap, "%s", b2s_strerror(rc));
}

/* Open the frame at path (file: contiguous, directory: sparse).  On failure
 * returns NULL with the code in *code and a description in msg. */
B2SPY_API void *b2spy_frame_open(const char *path, int *code, char *msg,
                                 size_t cap) {
  b2s_frame *f = NULL;
  b2s_frame_error err = {0};
  int rc = b2s_frame_open(path, &f, &err);
  *code = rc < 0 ? rc : 0;
  if (rc < 0)
    open_msg(rc, &err, msg, cap);
  return rc < 0 ? NULL : f;
}

B2SPY_API void b2spy_frame_close(void *f) { b2s_frame_free(f); }

B2SPY_API int64_t b2spy_frame_nchunks(void *f) { return b2s_frame_nchunks(f); }

B2SPY_API int32_t b2spy_frame_typesize(void *f) {
  return b2s_frame_header_get(f)->typesize;
}

B2SPY_API int b2spy_frame_is_sparse(void *f) { return b2s_frame_is_sparse(f); }

/* Uncompressed size of chunk i, or a negative code. */
B2SPY_API int64_t b2spy_frame_chunk_nbytes(void *f, int64_t i) {
  if (i < 0 || i >= b2s_frame_nchunks(f))
    return B2S_E_NCHUNK;
  int32_t nbytes = 0;
  int rc = b2s_frame_chunk_sizes(f, i, NULL, &nbytes);
  return rc < 0 ? rc : nbytes;
}

/* Decompress chunk i into dst (cap bytes): its nbytes or a negative code. */
B2SPY_API int b2spy_frame_chunk_decompress(void *f, int64_t i, void *dst,
                                           size_t cap) {
  if (i < 0 || i >= b2s_frame_nchunks(f))
    return B2S_E_NCHUNK;
  return b2s_frame_chunk_decompress(f, i, NULL, dst, cap);
}

/* Chunk i as stored (a special entry as its 32-byte special chunk): its
 * cbytes, copied into dst when it fits (else call again with room), or a
 * negative code. */
B2SPY_API int64_t b2spy_frame_chunk_raw(void *f, int64_t i, void *dst,
                                       size_t cap) {
  int32_t cbytes = 0;
  int rc = b2s_frame_chunk_sizes(f, i, &cbytes, NULL);
  if (rc < 0)
    return rc;
  if ((size_t)cbytes > cap)
    return cbytes;
  return b2s_frame_chunk_read(f, i, dst, cap);
}

/* Reason of the last failed chunk or metalayer call on f ("" when none). */
B2SPY_API const char *b2spy_frame_last_reason(void *f) {
  const b2s_frame_error *e = b2s_frame_last_error(f);
  return e && e->code && e->reason ? e->reason : "";
}

/* The b2nd metalayer: ndim (0 when the frame has none), or a negative code
 * for a malformed one.  shape, chunkshape and blockshape receive ndim values
 * each (room for 16, B2S_B2ND_MAX_DIM); dtype the NumPy dtype string ("" when unset). */
B2SPY_API int b2spy_frame_b2nd(void *f, int64_t *shape, int32_t *chunkshape,
                               int32_t *blockshape, char *dtype, size_t cap) {
  b2s_b2nd nd;
  int rc = b2s_frame_b2nd_get(f, &nd);
  if (rc == B2S_E_NOTFOUND)
    return 0;
  if (rc < 0)
    return rc;
  if (nd.ndim < 0 || nd.ndim > B2S_B2ND_MAX_DIM)
    return B2S_E_B2ND;
  for (int d = 0; d < nd.ndim; d++) {
    shape[d] = nd.shape[d];
    chunkshape[d] = nd.chunkshape[d];
    blockshape[d] = nd.blockshape[d];
  }
  size_t n = nd.has_dtype && nd.dtype_len < cap ? nd.dtype_len : 0;
  if (n)
    memcpy(dtype, nd.dtype, n);
  dtype[n] = '\0';
  return nd.ndim;
}

/* The series metadata map (msgpack; 0x80 when none) copied into dst: its
 * length, which may exceed cap (then nothing is copied: call again with
 * room), or a negative code. */
B2SPY_API int64_t b2spy_frame_series(void *f, void *dst, size_t cap) {
  uint8_t *map = NULL;
  size_t len = 0;
  int rc = b2s_frame_series_get(f, &map, &len);
  if (rc < 0)
    return rc;
  if (len <= cap)
    memcpy(dst, map, len);
  free(map);
  return (int64_t)len;
}

/* Record rec, flat, as b2spy_records_get gives it. */
static void record_flat(const b2s_record *rec, uint64_t *frame, int64_t *ts,
                        uint64_t *xxh64, int *present, uint32_t *flags,
                        int *user_kind, const uint8_t **user,
                        uint32_t *user_len) {
  *frame = rec->frame;
  *ts = rec->ts;
  *xxh64 = rec->xxh64;
  *present = (rec->has_frame ? 1 : 0) | (rec->has_ts ? 2 : 0);
  *flags = rec->flags;
  *user_kind = rec->user_kind;
  *user = rec->user;
  *user_len = rec->user_len;
}

/* ---- records (the companion frame of a data frame) ---------------------- */

/* Open the records frame of the data frame at data_path: NULL with *code
 * -ENOENT when it has none, or another code and msg when it does not open. */
B2SPY_API void *b2spy_records_open(const char *data_path, int *code, char *msg,
                                   size_t cap) {
  b2s_records *r = NULL;
  b2s_frame_error err = {0};
  int rc = b2s_records_open(data_path, &r, &err);
  *code = rc < 0 ? rc : 0;
  if (rc < 0)
    open_msg(rc, &err, msg, cap);
  return rc < 0 ? NULL : r;
}

B2SPY_API void b2spy_records_close(void *r) { b2s_records_free(r); }

B2SPY_API int64_t b2spy_records_count(void *r) { return b2s_records_count(r); }

/* Record i, flat: present bit 1 frame, bit 2 ts; user_kind as enum
 * b2s_record_user; *user points at user_len bytes valid until the next
 * call on r.  0 or a negative code. */
B2SPY_API int b2spy_records_get(void *r, int64_t i, uint64_t *frame,
                                int64_t *ts, uint64_t *xxh64, int *present,
                                uint32_t *flags, int *user_kind,
                                const uint8_t **user, uint32_t *user_len) {
  if (i < 0 || i >= b2s_records_count(r))
    return B2S_E_NCHUNK;
  b2s_record rec;
  int rc = b2s_records_get(r, i, &rec);
  if (rc < 0)
    return rc;
  record_flat(&rec, frame, ts, xxh64, present, flags, user_kind, user,
              user_len);
  return 0;
}

/* ---- distributed frames (readers) ------------------------------------------- */

/* A reader's handle: the store, the frame on it, a codec context and the
 * last chunk read as stored (so its size and bytes need one read). */
typedef struct b2spy_dframe {
  b2s_store *store;
  b2s_dframe *df;
  b2s_ctx *ctx;
  uint8_t *chunk;
  size_t chunk_len;
  int64_t chunk_i;                 /* -1: none held */
} b2spy_dframe;

B2SPY_API int b2spy_store_have_rados(void) { return b2s_store_have_rados(); }

B2SPY_API const char *b2spy_store_last_error(void) {
  return b2s_store_last_error();
}

B2SPY_API void b2spy_dframe_close(void *h) {
  b2spy_dframe *d = h;
  if (d == NULL)
    return;
  b2s_dframe_free(d->df);          /* borrows the store: freed first */
  b2s_store_free(d->store);
  b2s_ctx_free(d->ctx);
  free(d->chunk);
  free(d);
}

/* Open frame `name` in the store at store_url (b2s_store_open's URL;
 * ceph_conf may be NULL).  NULL on failure, with the code in *code and the
 * store's words in msg. */
B2SPY_API void *b2spy_dframe_open(const char *store_url, const char *name,
                                  const char *ceph_conf, int *code, char *msg,
                                  size_t cap) {
  b2spy_dframe *d = calloc(1, sizeof *d);
  int rc = d && (d->ctx = b2s_ctx_new()) ? 0 : B2S_E_NOMEM;
  b2s_store_opts so = {.ceph_conf = ceph_conf};
  if (rc == 0)
    rc = b2s_store_open(store_url, &so, &d->store);
  if (rc == 0)
    rc = b2s_dframe_open(d->store, name, &d->df);
  *code = rc < 0 ? rc : 0;
  if (rc < 0) {
    const char *words = b2s_store_last_error();
    if (msg && cap)
      snprintf(msg, cap, "%s%s%s", b2s_strerror(rc), words[0] ? ": " : "",
               words);
    b2spy_dframe_close(d);
    return NULL;
  }
  d->chunk_i = -1;
  return d;
}

/* Re-read the committed count and the closed flag. */
B2SPY_API int b2spy_dframe_refresh(void *h, int64_t *committed, int *closed) {
  bool c = false;
  int rc = b2s_dframe_refresh(((b2spy_dframe *)h)->df, committed, &c);
  *closed = c;
  return rc;
}

/* The frame's parameters into out[9]: typesize, chunk_nbytes, ranks,
 * frames_per_block, codec, clevel, blocksize, splitmode, has_b2nd. */
B2SPY_API void b2spy_dframe_params(void *h, int32_t *out) {
  const b2s_dframe_params *p = b2s_dframe_params_get(((b2spy_dframe *)h)->df);
  const b2s_cparams *cp = &p->cparams;
  int32_t v[9] = {cp->typesize, p->chunk_nbytes, p->ranks,
                  p->frames_per_block, cp->codec, cp->clevel, cp->blocksize,
                  cp->splitmode, p->has_b2nd};
  memcpy(out, v, sizeof v);
}

/* The b2nd metadata of the frame's exports, as b2spy_frame_b2nd. */
B2SPY_API int b2spy_dframe_b2nd(void *h, int64_t *shape, int32_t *chunkshape,
                                int32_t *blockshape, char *dtype, size_t cap) {
  const b2s_dframe_params *p = b2s_dframe_params_get(((b2spy_dframe *)h)->df);
  if (!p->has_b2nd)
    return 0;
  const b2s_b2nd *nd = &p->b2nd;
  for (int d = 0; d < nd->ndim && d < B2S_B2ND_MAX_DIM; d++) {
    shape[d] = nd->shape[d];
    chunkshape[d] = nd->chunkshape[d];
    blockshape[d] = nd->blockshape[d];
  }
  size_t n = nd->has_dtype && nd->dtype_len < cap ? nd->dtype_len : 0;
  if (n)
    memcpy(dtype, nd->dtype, n);
  dtype[n] = '\0';
  return nd->ndim;
}

/* Committed chunk i as stored, held in the handle. */
static int dframe_hold(b2spy_dframe *d, int64_t i) {
  if (d->chunk_i == i)
    return 0;
  free(d->chunk);
  d->chunk = NULL;
  d->chunk_i = -1;
  int rc = b2s_dframe_chunk_get(d->df, i, &d->chunk, &d->chunk_len);
  if (rc == -ENOENT)
    rc = B2S_E_NCHUNK;             /* beyond the committed count */
  if (rc >= 0)
    d->chunk_i = i;
  return rc;
}

/* Chunk i as stored: its length, copied into dst when it fits (else call
 * again with room), or a negative code. */
B2SPY_API int64_t b2spy_dframe_chunk_raw(void *h, int64_t i, void *dst,
                                         size_t cap) {
  b2spy_dframe *d = h;
  int rc = dframe_hold(d, i);
  if (rc < 0)
    return rc;
  if (d->chunk_len <= cap && d->chunk_len)
    memcpy(dst, d->chunk, d->chunk_len);
  return (int64_t)d->chunk_len;
}

/* Decompress chunk i into dst (cap bytes): its nbytes or a negative code. */
B2SPY_API int b2spy_dframe_chunk_decompress(void *h, int64_t i, void *dst,
                                            size_t cap) {
  b2spy_dframe *d = h;
  int rc = dframe_hold(d, i);
  if (rc < 0)
    return rc;
  /* uninitialised chunks write nothing: give them defined bytes */
  memset(dst, 0, cap);
  return b2s_decompress(d->ctx, d->chunk, d->chunk_len, dst, cap);
}

/* As b2spy_frame_gather, for committed chunks of a distributed frame. */
B2SPY_API int b2spy_dframe_gather(void *h, const int64_t *chunks, int64_t n,
                                  int64_t start, void *dst, size_t nbytes,
                                  int64_t *bad) {
  b2spy_dframe *d = h;
  int rc = 0;
  int64_t k = 0;
  memset(dst, 0, (size_t)n * nbytes);  /* uninitialised chunks write nothing */
  for (; rc >= 0 && k < n; k++) {
    rc = dframe_hold(d, chunks[k]);
    if (rc >= 0)
      rc = b2spy_gather_one(d->ctx, d->chunk, d->chunk_len, start, nbytes,
                      (uint8_t *)dst + k * nbytes);
  }
  *bad = rc < 0 ? k - 1 : -1;
  return rc < 0 ? rc : 0;
}

/* Committed record i, flat as b2spy_records_get (user valid until the next
 * call on h). */
B2SPY_API int b2spy_dframe_record(void *h, int64_t i, uint64_t *frame,
                                  int64_t *ts, uint64_t *xxh64, int *present,
                                  uint32_t *flags, int *user_kind,
                                  const uint8_t **user, uint32_t *user_len) {
  b2s_record rec;
  int rc = b2s_dframe_record_get(((b2spy_dframe *)h)->df, i, &rec);
  if (rc == -ENOENT)
    rc = B2S_E_NCHUNK;
  if (rc < 0)
    return rc;
  record_flat(&rec, frame, ts, xxh64, present, flags, user_kind, user,
              user_len);
  return 0;
}

/* The series map, as b2spy_frame_series. */
B2SPY_API int64_t b2spy_dframe_series(void *h, void *dst, size_t cap) {
  uint8_t *map = NULL;
  size_t len = 0;
  int rc = b2s_dframe_series_get(((b2spy_dframe *)h)->df, &map, &len);
  if (rc < 0)
    return rc;
  if (len <= cap)
    memcpy(dst, map, len);
  free(map);
  return (int64_t)len;
}

/* ---- shared memory, producer side ------------------------------------------ */

/* Map the segment `name` and record this process as its producer. */
B2SPY_API void *b2spy_shm_attach(const char *name, int *code) {
  b2s_shm *seg = NULL;
  *code = b2s_shm_attach(name, &seg);
  return *code < 0 ? NULL : seg;
}

B2SPY_API void b2spy_shm_detach(void *seg) { b2s_shm_detach(seg); }

B2SPY_API uint32_t b2spy_shm_nslots(void *seg) { return b2s_shm_nslots(seg); }

B2SPY_API uint64_t b2spy_shm_slot_size(void *seg) {
  return b2s_shm_slot_size(seg);
}

/* FREE -> FILLING (a compare-and-swap in shm.c): 0 with the index in *slot,
 * B2S_E_TIMEOUT, B2S_E_CLOSED. */
B2SPY_API int b2spy_shm_acquire(void *seg, int timeout_ms, uint32_t *slot) {
  return b2s_shm_acquire(seg, timeout_ms, slot, NULL);
}

/* FILLING -> SUBMITTED with the length and buffer id recorded. */
B2SPY_API int b2spy_shm_submit(void *seg, uint32_t slot, uint64_t len,
                               uint64_t buffer_id) {
  return b2s_shm_submit(seg, slot, (size_t)len, buffer_id);
}

/* FILLING -> FREE. */
B2SPY_API int b2spy_shm_cancel(void *seg, uint32_t slot) {
  return b2s_shm_cancel(seg, slot);
}

B2SPY_API int b2spy_shm_slot_state(void *seg, uint32_t slot) {
  return b2s_shm_slot_state(seg, slot);
}

/* ---- CurveZMQ key files ------------------------------------------------------ */

/* The key of a key file as `b2stream keygen` writes it (41 bytes with the
 * NUL): 0, -errno or B2S_E_ARG. */
B2SPY_API int b2spy_curve_key_read(const char *path, char *z85) {
  return b2s_curve_key_read(path, z85);
}

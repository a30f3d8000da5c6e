/* A small flat C API for the Python package (python/b2stream/_native.py
 * loads it with ctypes): local frame reading over core/include/frame.h (with
 * the series metadata and records of core/include/b2s_meta.h) and the
 * producer side of the shared-memory slot protocol over proto/shm.h,
 * whose compare-and-swap transitions Python cannot do itself.
 *
 * Only plain integers, pointers and NUL-terminated strings cross this
 * boundary, so the ctypes declarations stay trivial and no C structure
 * layout has to be mirrored in Python.
 *
 * Ownership: b2spy_frame_open, b2spy_records_open and b2spy_shm_attach
 * return heap handles released by b2spy_frame_close, b2spy_records_close
 * and b2spy_shm_detach (all accept NULL).
 * Buffers passed in belong to the caller.  Threads: a handle is used by one
 * thread at a time (ctypes releases the GIL around every call). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "curve_key.h"
#include "frame.h"
#include "shm.h"

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
  *frame = rec.frame;
  *ts = rec.ts;
  *xxh64 = rec.xxh64;
  *present = (rec.has_frame ? 1 : 0) | (rec.has_ts ? 2 : 0);
  *flags = rec.flags;
  *user_kind = rec.user_kind;
  *user = rec.user;
  *user_len = rec.user_len;
  return 0;
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

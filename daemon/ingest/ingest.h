/* Ingest (handles.c, shm_ingest.c): producers' handles on streams, the
 * messages they send (OPEN, META, DATA, FLUSH, CLOSE, SHM_ATTACH,
 * SHM_SUBMIT) and the way an accepted buffer becomes a job.  I/O thread
 * only.  The handle itself is in session.h. */
#ifndef B2SD_INGEST_H
#define B2SD_INGEST_H

#include "session.h"

/* ---- handles.c: producer handles ------------------------------------------ */

/* Free a handle (its segment, if any, is reclaimed). */
void b2sd_handle_free(b2sd_handle *h);
/* Credits, ACKs, FLUSHED, CLOSED for the progress published by workers and
 * writer.  Returns false when the handle was closed and freed. */
bool b2sd_handle_progress(b2sd_server *srv, b2sd_handle *h, uint64_t taken,
                          uint64_t written, uint64_t durable, bool memory_ok);
/* ERROR with closed_ref about the handle, then free it. */
void b2sd_handle_close_ref(b2sd_server *srv, b2sd_handle *h, uint32_t tag,
                           int code, uint8_t type, uint64_t index);
/* payload: OPEN's metadata frame (version 2), or NULL. */
void b2sd_open_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   zmq_msg_t *payload);
/* META (version 2): merge into the stream's series map, META_OK. */
void b2sd_meta_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   zmq_msg_t *payload);
/* payload and rec: the buffer and record frames that came, or NULL. */
void b2sd_data_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   zmq_msg_t *payload, zmq_msg_t *rec);
void b2sd_flush_close_msg(b2sd_server *srv, b2sd_session *s,
                          const b2s_wire_msg *m);

/* Where an accepted buffer's bytes are: a DATA payload (moved into the job)
 * or a TAKEN slot of a segment. */
typedef struct b2sd_bufsrc {
  zmq_msg_t *msg;
  struct b2sd_seg *seg;
  uint32_t slot;
  const void *data;
  size_t len;
  b2sd_rec rec;                /* the producer's record; moves to the job */
} b2sd_bufsrc;

/* The record of a buffer message: with the message's record flag, frame
 * must be one valid producer record (copied into *out); without it, no
 * frame may come.  0 or B2S_E_PROTO / B2S_E_NOMEM (a per-buffer error). */
int b2sd_rec_take(bool flagged, zmq_msg_t *frame,
                  b2sd_rec *out);

b2sd_handle *b2sd_buffer_admit(b2sd_server *srv, b2sd_session *s,
                               const b2s_wire_msg *m, uint32_t handle,
                               uint64_t id);
/* why: the ERROR's text, NULL for the code's own. */
void b2sd_buffer_reject(b2sd_server *srv, b2sd_handle *h,
                        const b2s_wire_msg *m, uint64_t id, int code,
                        const char *why);
/* gaps: fill: a buffer of len bytes that does not reach the frame
 * (flags: B2S_RECORD_DROPPED or _REJECTED) leaves a placeholder chunk with
 * its record (taken from *rec) at the stream's next seq.  Otherwise, or
 * for len 0, nothing; *rec is cleared either way. */
void b2sd_gap_put(b2sd_handle *h, uint32_t flags, size_t len, b2sd_rec *rec);
/* 0, or why the buffer's frame number is refused: order: frame_number
 * (no frame number: B2S_E_ARG; late, duplicate: order.h); a distributed
 * stream (rank.h: B2S_E_NEED_FRAME, B2S_E_WRONG_RANK naming the owner and
 * its endpoint, in ed).  ed's text is "" when the code says enough. */
int b2sd_frame_check(b2sd_server *srv, b2sd_handle *h, const b2sd_rec *rec,
                     b2s_errdetail *ed);
/* A distributed stream's buffers its writer could not store (the frame
 * number was taken in the store): each producer gets a per-buffer ERROR
 * B2S_E_OBJ_CONFLICT and no acknowledgement above received for it.  Call
 * after b2sd_progress_load, before the handles' progress. */
void b2sd_dist_conflicts(b2sd_server *srv, b2sd_stream *st);
/* A distributed stream whose last producer went away without CLOSE gets
 * its END this long after (unless a producer opens it meanwhile): the
 * committer can then close the frame. */
#define B2SD_GONE_END_MS 10000
void b2sd_dist_gone_tick(b2sd_stream *st);
/* END for a distributed stream's last CLOSE, unless a producer sent
 * frames of other ranks since the last END (then the flag is cleared and
 * the next one ends). */
void b2sd_misrouted_end(b2sd_stream *st);
/* Whether a buffer refused with code keeps its place (b2sd_gap_put): one
 * refused for what it is, not for how it was sent. */
bool b2sd_leaves_gap(int code);
/* A b2nd stream takes only buffers of exactly one chunk (chunkshape x
 * typesize); any other size is rejected here per buffer with
 * B2S_E_CHUNK_SIZE.  Returns false when the buffer was rejected. */
bool b2sd_buffer_size_ok(b2sd_server *srv, b2sd_handle *h,
                         const b2s_wire_msg *m, uint64_t id, size_t len);
/* Queue the buffer for a worker, or drop it per the stream's policy. */
void b2sd_buffer_accept(b2sd_server *srv, b2sd_handle *h,
                        const b2s_wire_msg *m, uint64_t id, b2sd_bufsrc *b);

/* ---- shm_ingest.c: SHM_ATTACH and SHM_SUBMIT of producer handles --------- */

void b2sd_shm_attach_msg(b2sd_server *srv, b2sd_session *s,
                         const b2s_wire_msg *m);
void b2sd_shm_submit_msg(b2sd_server *srv, b2sd_session *s,
                         const b2s_wire_msg *m, zmq_msg_t *rec);

#endif

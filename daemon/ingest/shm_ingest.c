/* Shared-memory ingest (PROTOCOL.md 3.13-3.15, 4.3): SHM_ATTACH gives a
 * producer handle its own segment (segment.c), SHM_SUBMIT hands one of
 * its filled slots to the handle's buffer path (handles.c).  I/O thread
 * only. */
#define _GNU_SOURCE
#include "outbox.h"
#include "segment.h"
#include "chunkpool.h"
#include "stream.h"
#include "ingest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int attach_check(b2sd_server *srv, b2sd_session *s, b2sd_handle *h,
                        const b2s_wire_msg *m) {
  if (!s->shm)
    return -EOPNOTSUPP;
  if (!h || h->closing)
    return B2S_E_CLOSED;
  if (h->seg)
    return B2S_E_BUSY;
  if (m->shm_attach.slot_count == 0 || m->shm_attach.slot_size == 0)
    return B2S_E_ARG;
  if (m->shm_attach.slot_size > srv->dcfg.max_buffer ||
      m->shm_attach.slot_size > B2S_SHM_MAX_SLOT_SIZE)
    return B2S_E_OVERSIZE;
  return 0;
}

void b2sd_shm_attach_msg(b2sd_server *srv, b2sd_session *s,
                         const b2s_wire_msg *m) {
  uint32_t hid = m->shm_attach.handle;
  b2sd_handle *h = b2sd_handle_find(s, hid);
  int rc = attach_check(srv, s, h, m);
  b2sd_seg *g = NULL;
  if (rc == 0)
    rc = b2sd_seg_new(srv, m->shm_attach.slot_count, m->shm_attach.slot_size, &g);
  if (rc < 0) {
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = rc, .ref_type = m->type, .ref_id = hid,
        .text = rc == -EOPNOTSUPP
                    ? "shared memory is offered on ipc:// endpoints only"
                    : NULL});
    return;
  }
  h->seg = g;
  b2s_wire_msg a;
  b2s_wire_init(&a, B2S_WIRE_SHM_ATTACHED);
  a.tag = m->tag;
  a.shm_attached.handle = hid;
  a.shm_attached.segment = g->id;
  a.shm_attached.slot_count = b2s_shm_nslots(g->shm);
  a.shm_attached.slot_size = m->shm_attach.slot_size;
  a.shm_attached.shm_name = b2s_wire_cstr(b2s_shm_name(g->shm));
  b2sd_send(srv, s, &a, NULL, 0);
  LOG_I("session %u: handle %u on stream %s: segment %s, %u slots of %u bytes",
        s->id, hid, h->st->name, b2s_shm_name(g->shm),
        a.shm_attached.slot_count, a.shm_attached.slot_size);
}

/* Why a submitted slot cannot be taken, or 0. */
static int submit_check(b2sd_server *srv, const b2sd_handle *h,
                        const b2s_wire_msg *m, size_t len) {
  if (h->closing || srv->draining)
    return B2S_E_CLOSED;
  if (!h->seg || m->shm_submit.segment != h->seg->id)
    return B2S_E_ARG;
  if (len == 0)
    return B2S_E_PROTO;
  if (len > (size_t)srv->dcfg.max_buffer)
    return B2S_E_OVERSIZE;
  return 0;
}

void b2sd_shm_submit_msg(b2sd_server *srv, b2sd_session *s,
                         const b2s_wire_msg *m, zmq_msg_t *recf) {
  uint64_t id = m->shm_submit.buffer_id;
  b2sd_handle *h = b2sd_buffer_admit(srv, s, m, m->shm_submit.handle, id);
  if (!h)
    return;
  size_t len = m->shm_submit.length;
  uint32_t slot = m->shm_submit.slot;
  const void *data = NULL;
  /* the record first: a refused buffer's gap keeps its frame number */
  b2sd_rec rec = {0};
  b2s_errdetail why;
  b2s_errdetail_clear(&why);
  int rc = b2sd_rec_take(m->flags & B2S_WIRE_SHM_SUBMIT_RECORD, recf, &rec);
  if (rc == 0)
    rc = b2sd_frame_check(srv, h, &rec, &why);
  if (rc == 0)
    rc = submit_check(srv, h, m, len);
  if (rc == 0 && !b2sd_buffer_size_ok(srv, h, m, id, len)) {
    b2sd_gap_put(h, B2S_RECORD_REJECTED, len, &rec);
    return;                      /* rejected; the slot stays untaken */
  }
  if (rc == 0)
    rc = b2sd_seg_take(h->seg, slot, len, id, &data);
  if (rc < 0) {
    if (b2sd_leaves_gap(rc))
      b2sd_gap_put(h, B2S_RECORD_REJECTED, len, &rec);
    b2sd_rec_clear(&rec);
    b2sd_buffer_reject(srv, h, m, id, rc, why.text);
    return;
  }
  b2sd_bufsrc b = {.seg = h->seg, .slot = slot, .data = data, .len = len,
                   .rec = rec};
  b2sd_buffer_accept(srv, h, m, id, &b);
}

/* Shared-memory producers: SHM_ATTACH, and slots acquired, filled and
 * submitted (PROTOCOL.md 4.3, proto/b2s_shm.h).
 *
 * A slot and a credit are reserved together at acquire, so submit never
 * waits and never sends without credit; cancel returns both. */
#include <errno.h>

#include "client_internal.h"

/* Slot waits are cut into slices this long so the session keeps reading
 * ACKs and sending PINGs while the producer waits for the daemon to free a
 * slot. */
#define SC_SHM_SLICE_MS 100

int b2sc_shm_attach(b2sc_producer *p, uint32_t nslots, size_t slot_size) {
  if (p == NULL || nslots == 0 || slot_size == 0 || slot_size > UINT32_MAX)
    return B2S_E_ARG;
  int rc = sc_session_usable(p->s);
  if (rc < 0)
    return rc;
  if (p->closed)
    return B2S_E_CLOSED;
  if (!p->s->shm)
    return -EOPNOTSUPP;
  if (p->seg != NULL)
    return B2S_E_BUSY;
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_SHM_ATTACH);
  m.shm_attach.handle = p->handle;
  m.shm_attach.slot_count = nslots;
  m.shm_attach.slot_size = (uint32_t)slot_size;
  rc = sc_request(p->s, &m, B2S_WIRE_SHM_ATTACHED,
                  sc_deadline(p->s->timeout_ms));
  if (rc < 0)
    return rc;
  const b2s_wire_msg *a = &p->s->reply.m;
  char name[B2S_WIRE_NAME_MAX + 1];
  sc_strcpy(name, sizeof name, a->shm_attached.shm_name);
  uint32_t granted = a->shm_attached.slot_count;
  uint32_t size = a->shm_attached.slot_size;
  uint32_t segment = a->shm_attached.segment;
  bool mine = a->shm_attached.handle == p->handle;
  sc_msg_close(&p->s->reply);
  if (!mine || granted == 0 || granted > nslots || size != slot_size)
    return B2S_E_PROTO;
  b2s_shm *seg;
  if ((rc = b2s_shm_attach(name, &seg)) < 0)
    return rc;
  /* The mapping must be what the daemon announced. */
  if (b2s_shm_nslots(seg) != granted || b2s_shm_slot_size(seg) != size) {
    b2s_shm_detach(seg);
    return B2S_E_SHM_HEADER;
  }
  p->seg = seg;
  p->segment = segment;
  return 0;
}

static int acquire_slot(b2sc_producer *p, int64_t deadline, uint32_t *slot,
                        void **ptr) {
  for (;;) {
    int64_t left = deadline < 0 ? SC_SHM_SLICE_MS : deadline - sc_now_ms();
    if (left < 0)
      left = 0;
    int slice = left > SC_SHM_SLICE_MS ? SC_SHM_SLICE_MS : (int)left;
    int rc = b2s_shm_acquire(p->seg, slice, slot, ptr);
    if (rc != B2S_E_TIMEOUT || (deadline >= 0 && sc_now_ms() >= deadline))
      return rc;
    if ((rc = sc_pump(p->s, 0)) < 0)
      return rc;
    if (p->closed)
      return B2S_E_CLOSED;
  }
}

int b2sc_shm_acquire(b2sc_producer *p, int timeout_ms, uint32_t *slot,
                     void **ptr, size_t *cap) {
  if (p == NULL || slot == NULL || p->seg == NULL)
    return B2S_E_ARG;
  int64_t deadline = sc_deadline(timeout_ms);
  int rc = sc_producer_wait_credit(p, deadline);
  if (rc < 0)
    return rc;
  p->credits--;   /* reserved for this slot's submit */
  void *first;
  if ((rc = acquire_slot(p, deadline, slot, &first)) < 0) {
    p->credits++;
    return rc;
  }
  if (ptr)
    *ptr = first;
  if (cap)
    *cap = b2s_shm_slot_size(p->seg);
  return 0;
}

int b2sc_shm_submit(b2sc_producer *p, uint32_t slot, size_t len) {
  return b2sc_shm_submit_rec(p, slot, len, NULL);
}

int b2sc_shm_submit_rec(b2sc_producer *p, uint32_t slot, size_t len,
                        const b2sc_record *rec) {
  if (p == NULL || p->seg == NULL || len == 0)
    return B2S_E_ARG;
  int rc = sc_session_usable(p->s);
  if (rc < 0)
    return rc;
  if (p->closed)
    return B2S_E_CLOSED;
  b2s_wire_rec wrec;
  const b2s_wire_rec *r;
  zmq_msg_t recmsg;
  if ((rc = sc_producer_rec(p, rec, &wrec, &r)) < 0 ||
      (r != NULL && (rc = sc_rec_msg(r, &recmsg)) < 0))
    return rc;
  if ((rc = b2s_shm_submit(p->seg, slot, len, p->next_id)) < 0) {
    if (r != NULL)
      zmq_msg_close(&recmsg);
    return rc;
  }
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_SHM_SUBMIT);
  m.flags = r != NULL ? B2S_WIRE_SHM_SUBMIT_RECORD : 0;
  m.shm_submit.buffer_id = p->next_id;
  m.shm_submit.handle = p->handle;
  m.shm_submit.segment = p->segment;
  m.shm_submit.slot = slot;
  m.shm_submit.length = (uint32_t)len;
  rc = sc_send_rec(p->s, &m, NULL, r != NULL ? &recmsg : NULL);
  if (r != NULL)
    zmq_msg_close(&recmsg);   /* empty once sent */
  if (rc < 0)
    return rc;   /* the slot comes back when the daemon reclaims the segment */
  p->next_id++;
  p->bytes += len;
  return 0;
}

int b2sc_shm_cancel(b2sc_producer *p, uint32_t slot) {
  if (p == NULL || p->seg == NULL)
    return B2S_E_ARG;
  int rc = b2s_shm_cancel(p->seg, slot);
  if (rc == 0)
    p->credits++;
  return rc;
}

/* Protocol version 2 in the client, the part without I/O: records
 * (checked and converted between b2sc_record and the wire's record frame)
 * and metadata payloads (checked and copied into a message).
 *
 * Records a consumer receives are copied into a slot of the consumer
 * (at most B2S_WIRE_REC_MAX bytes), so that the user part handed out stays
 * valid until the next call, whatever happens to the message it came in. */
#include <string.h>

#include "client_internal.h"

_Static_assert(B2SC_USER_MAX == B2S_WIRE_USER_MAX, "one user limit");
/* (int) casts: the two sides are different enums */
_Static_assert((int)B2SC_REC_FRAME == (int)B2S_WIRE_REC_FRAME &&
                   (int)B2SC_REC_TS == (int)B2S_WIRE_REC_TS &&
                   (int)B2SC_REC_XXH64 == (int)B2S_WIRE_REC_XXH64 &&
                   (int)B2SC_REC_USER_MAP == (int)B2S_WIRE_REC_USER_MAP,
               "present bits are the wire's");
_Static_assert((int)B2SC_REC_GAP == (int)B2S_WIRE_REC_GAP &&
                   (int)B2SC_REC_DROPPED == (int)B2S_WIRE_REC_DROPPED &&
                   (int)B2SC_REC_REJECTED == (int)B2S_WIRE_REC_REJECTED,
               "flag bits are the wire's");

/* ---- records ------------------------------------------------------------- */

int sc_rec_producer(const b2sc_record *in, b2s_wire_rec *out) {
  if (in->user_len > B2SC_USER_MAX || in->flags != 0 ||
      (in->present & ~(unsigned)(B2SC_REC_FRAME | B2SC_REC_TS |
                                 B2SC_REC_USER_MAP)))
    return B2S_E_ARG;
  *out = (b2s_wire_rec){.frame = in->frame, .ts_ns = in->ts_ns,
                        .present = (uint16_t)in->present,
                        .user_len = (uint16_t)in->user_len,
                        .user = in->user};
  /* the encoder's rules: values without their bit, a malformed map */
  uint8_t probe[B2S_WIRE_REC_MAX];
  return b2s_wire_rec_encode(out, probe, sizeof probe) < 0 ? B2S_E_ARG : 0;
}

int sc_rec_msg(const b2s_wire_rec *rec, zmq_msg_t *msg) {
  if (zmq_msg_init_size(msg, b2s_wire_rec_len(rec)) < 0)
    return B2S_E_NOMEM;
  int n = b2s_wire_rec_encode(rec, zmq_msg_data(msg), zmq_msg_size(msg));
  if (n < 0) {
    zmq_msg_close(msg);
    return n;
  }
  return 0;
}

int sc_rec_keep(sc_rec_slot *slot, const void *frame, size_t len) {
  b2s_wire_rec r;
  slot->len = 0;
  if (b2s_wire_rec_decode(frame, len, &r) != (int)len)
    return B2S_E_PROTO;   /* also a frame longer than one record */
  memcpy(slot->bytes, frame, len);
  slot->len = len;
  return 0;
}

int sc_rec_give(const sc_rec_slot *slot, b2sc_record *out) {
  b2s_wire_rec r;
  memset(out, 0, sizeof *out);
  if (slot->len == 0)
    return B2S_E_NOTFOUND;
  b2s_wire_rec_decode(slot->bytes, slot->len, &r);   /* checked by keep */
  *out = (b2sc_record){.present = r.present, .flags = r.flags,
                       .frame = r.frame, .ts_ns = r.ts_ns, .xxh64 = r.xxh64,
                       .user = r.user, .user_len = r.user_len};
  return 0;
}

bool sc_recs_valid(const void *frame, size_t len, uint32_t count) {
  const uint8_t *p = frame;
  size_t off = 0;
  for (uint32_t i = 0; i < count; i++) {
    b2s_wire_rec r;
    int n = b2s_wire_rec_decode(p + off, len - off, &r);
    if (n < 0)
      return false;
    off += (size_t)n;
  }
  return off == len;
}

/* ---- metadata payloads --------------------------------------------------- */

int sc_meta_msg(const void *meta, size_t meta_len, zmq_msg_t *msg) {
  if (meta == NULL || meta_len == 0 || meta_len > B2S_WIRE_META_MAX ||
      b2s_wire_mp_map_check(meta, meta_len, true) < 0)
    return B2S_E_ARG;
  if (zmq_msg_init_size(msg, meta_len) < 0)
    return B2S_E_NOMEM;
  memcpy(zmq_msg_data(msg), meta, meta_len);
  return 0;
}

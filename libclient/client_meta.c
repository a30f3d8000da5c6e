/* Series metadata of a producer's stream (protocol version 2): META and
 * its reply, and the one-key helper that builds the msgpack map. */
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

int b2sc_producer_set_meta(b2sc_producer *p, const void *meta,
                           size_t meta_len) {
  if (p == NULL || meta == NULL)
    return B2S_E_ARG;
  int rc = sc_session_usable(p->s);
  if (rc < 0)
    return rc;
  if (p->s->version < 2)
    return B2S_E_PROTO_VERSION;
  if (p->closed)
    return p->closed;   /* the daemon's reason, as b2sc_send */
  zmq_msg_t payload;
  if ((rc = sc_meta_msg(meta, meta_len, &payload)) < 0)
    return rc;
  b2s_wire_msg m;
  b2s_wire_init(&m, B2S_WIRE_META);
  m.meta.handle = p->handle;
  rc = sc_request_payload(p->s, &m, &payload, B2S_WIRE_META_OK,
                          sc_deadline(p->s->timeout_ms));
  zmq_msg_close(&payload);   /* empty once sent; ours when it was not */
  if (rc < 0)
    return rc;
  bool ours = p->s->reply.m.meta_ok.handle == p->handle;
  sc_msg_close(&p->s->reply);
  return ours ? 0 : B2S_E_PROTO;
}

/* msgpack str header for n bytes (n < 2^32). */
static size_t mp_str_head(uint8_t *out, size_t n) {
  if (n < 32) {
    out[0] = (uint8_t)(0xa0 | n);
    return 1;
  }
  if (n < 256) {
    out[0] = 0xd9;
    out[1] = (uint8_t)n;
    return 2;
  }
  out[0] = 0xdb;
  for (int i = 0; i < 4; i++)
    out[1 + i] = (uint8_t)(n >> (24 - 8 * i));
  return 5;
}

int b2sc_producer_set_meta_str(b2sc_producer *p, const char *key,
                               const char *value) {
  if (p == NULL || key == NULL || !key[0])
    return B2S_E_ARG;
  size_t kn = strlen(key), vn = value ? strlen(value) : 0;
  if (kn > B2S_WIRE_META_MAX || vn > B2S_WIRE_META_MAX - kn - 11)
    return B2S_E_ARG;
  uint8_t *buf = malloc(kn + vn + 11);   /* map, two str heads of <= 5 */
  if (buf == NULL)
    return B2S_E_NOMEM;
  size_t n = 0;
  buf[n++] = 0x81;                   /* map of one entry */
  n += mp_str_head(buf + n, kn);
  memcpy(buf + n, key, kn);
  n += kn;
  if (value == NULL) {
    buf[n++] = 0xc0;                 /* nil: delete the key */
  } else {
    n += mp_str_head(buf + n, vn);
    memcpy(buf + n, value, vn);
    n += vn;
  }
  int rc = b2sc_producer_set_meta(p, buf, n);
  free(buf);
  return rc;
}

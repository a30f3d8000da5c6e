/* libFuzzer target for the wire protocol codec.
 *
 * The input is one header frame, of either version.  Whatever decodes must
 * encode back to exactly the same bytes (every header has a single valid
 * encoding), and the decoded strings must lie inside the input.  The
 * payload check and the name lookup run on every decoded message too.
 * The same bytes also go through the version-2 frame checks: as a record
 * frame (which must round-trip too) and as a msgpack metadata map. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "b2s_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(b2s_wire_str s, const uint8_t *data, size_t size) {
  if (s.len == 0)
    return;
  const uint8_t *p = (const uint8_t *)s.ptr;
  if (p < data || p + s.len > data + size)
    abort();
}

static void check_strings(const b2s_wire_msg *m, const uint8_t *data,
                          size_t size) {
  switch (m->type) {
  case B2S_WIRE_HELLO: check_str(m->hello.name, data, size); break;
  case B2S_WIRE_OPEN:
    check_str(m->open.stream, data, size);
    check_str(m->open.tmpl, data, size);
    break;
  case B2S_WIRE_FOLLOW: check_str(m->follow.target, data, size); break;
  case B2S_WIRE_READ: check_str(m->read.stream, data, size); break;
  case B2S_WIRE_STATS: check_str(m->stats.stream, data, size); break;
  case B2S_WIRE_WELCOME: check_str(m->welcome.server, data, size); break;
  case B2S_WIRE_SHM_ATTACHED:
    check_str(m->shm_attached.shm_name, data, size);
    break;
  case B2S_WIRE_ERROR: check_str(m->error.message, data, size); break;
  default: break;
  }
}

/* The input as a record frame, and as msgpack metadata. */
static void fuzz_v2_frames(const uint8_t *data, size_t size) {
  b2s_wire_rec r;
  int n = b2s_wire_rec_decode(data, size, &r);
  if (n >= 0) {
    uint8_t out[B2S_WIRE_REC_MAX];
    if ((size_t)n > size || n > B2S_WIRE_REC_MAX ||
        (r.user_len > 0 && (r.user < data || r.user + r.user_len > data + n)) ||
        b2s_wire_rec_encode(&r, out, sizeof out) != n ||
        memcmp(out, data, (size_t)n) != 0)
      abort();
  } else if (n != B2S_E_PROTO) {
    abort();
  }
  int rc = b2s_wire_mp_map_check(data, size, size % 2 == 0);
  if (rc != 0 && rc != B2S_E_PROTO)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_v2_frames(data, size);
  b2s_wire_msg m;
  int rc = b2s_wire_decode_v(data, size, B2S_WIRE_VERSION_MAX, &m);
  if (rc != 0) {
    if (rc != B2S_E_PROTO && rc != B2S_E_PROTO_VERSION)
      abort();
    return 0;
  }
  if (size > B2S_WIRE_HEADER_MAX ||
      strcmp(b2s_wire_type_name(m.type), "UNKNOWN") == 0)
    abort();
  check_strings(&m, data, size);

  uint8_t out[B2S_WIRE_HEADER_MAX];
  int n = b2s_wire_encode_v(&m, m.version, out, sizeof out);
  if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
    abort();
  /* one byte short of room must fail cleanly */
  if (b2s_wire_encode_v(&m, m.version, out, size - 1) != B2S_E_DEST_SMALL)
    abort();
  /* a version-1 peer sees version 1 only */
  b2s_wire_msg v1;
  if ((b2s_wire_decode(data, size, &v1) == 0) != (data[4] == 1))
    abort();
  int frames = b2s_wire_msg_frames(&m);
  if (frames < 1 || frames > 3)
    abort();

  rc = b2s_wire_check_payload(&m, size, SIZE_MAX);
  if (rc != 0 && rc != B2S_E_PROTO)
    abort();
  return 0;
}

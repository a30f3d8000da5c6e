/* libFuzzer target for the wire protocol header codec.
 *
 * The input is one header frame.  Whatever decodes must encode back to
 * exactly the same bytes (every header has a single valid encoding), and
 * the decoded strings must lie inside the input.  The payload check and the
 * name lookup run on every decoded message too. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_errors.h"
#include "wire.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  b2s_wire_msg m;
  int rc = b2s_wire_decode(data, size, &m);
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
  int n = b2s_wire_encode(&m, out, sizeof out);
  if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
    abort();
  /* one byte short of room must fail cleanly */
  if (b2s_wire_encode(&m, out, size - 1) != B2S_E_DEST_SMALL)
    abort();

  rc = b2s_wire_check_payload(&m, size, SIZE_MAX);
  if (rc != 0 && rc != B2S_E_PROTO)
    abort();
  return 0;
}

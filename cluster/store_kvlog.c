/* Key-log batches of the local store: encoding and the torn-tail-tolerant
 * reader (store_kvlog.h). */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "b2s_errors.h"
#include "store_impl.h"
#include "store_kvlog.h"

#define KVLOG_MAGIC 0x564B3242u
#define KVLOG_END 0x42324B56u

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) {
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

int b2s_kvlog_encode(const b2s_kv *kv, size_t n, uint8_t **out, size_t *len) {
  uint64_t plen = 4;
  for (size_t i = 0; i < n; i++)
    plen += 5 + strlen(kv[i].key) + kv[i].len;
  if (n > UINT32_MAX || plen > KVLOG_PAYLOAD_MAX)
    return b2s_store_fail(B2S_E_ARG, "key batch over 1 GiB");
  size_t total = KVLOG_HEAD + (size_t)plen + KVLOG_TAIL;
  uint8_t *b = malloc(total), *p = b + KVLOG_HEAD + 4;
  if (!b)
    return b2s_store_fail(B2S_E_NOMEM, "out of memory (%zu bytes)", total);
  put32(b, KVLOG_MAGIC);
  put32(b + 4, (uint32_t)plen);
  put32(b + 8, (uint32_t)n);
  for (size_t i = 0; i < n; i++) {
    size_t kl = strlen(kv[i].key);
    *p = (uint8_t)kl;
    put32(p + 1, (uint32_t)kv[i].len);
    memcpy(p + 5, kv[i].key, kl);
    if (kv[i].len)
      memcpy(p + 5 + kl, kv[i].val, kv[i].len);
    p += 5 + kl + kv[i].len;
  }
  put64(p, XXH64(b, KVLOG_HEAD + (size_t)plen, 0));
  put32(p + 8, (uint32_t)plen);
  put32(p + 12, KVLOG_END);
  *out = b;
  *len = total;
  return 0;
}

/* Check a payload's entries without visiting them; 1 when well formed. */
static int payload_ok(const uint8_t *p, size_t plen) {
  if (plen < 4)
    return 0;
  uint32_t count = get32(p);
  size_t off = 4;
  for (uint32_t i = 0; i < count; i++) {
    if (plen - off < 5)
      return 0;
    size_t kl = p[off], vl = get32(p + off + 1);
    if (kl < 1 || kl > STORE_KEY_MAX || vl > STORE_VAL_MAX ||
        plen - off - 5 < kl + vl)
      return 0;
    char key[STORE_KEY_MAX + 1];
    memcpy(key, p + off + 5, kl);
    key[kl] = '\0';
    if (!b2s_store_name_ok(key, STORE_KEY_MAX, 1))
      return 0;
    off += 5 + kl + vl;
  }
  return off == plen;
}

static int payload_visit(const uint8_t *p, kvlog_entry_cb cb, void *arg) {
  uint32_t count = get32(p);
  size_t off = 4;
  for (uint32_t i = 0; i < count; i++) {
    size_t kl = p[off], vl = get32(p + off + 1);
    int rc = cb(arg, p + off + 5, kl, p + off + 5 + kl, vl);
    if (rc)
      return rc;
    off += 5 + kl + vl;
  }
  return 0;
}

size_t b2s_kvlog_batch_len(const uint8_t *buf, size_t len) {
  if (len < KVLOG_HEAD + KVLOG_TAIL || get32(buf) != KVLOG_MAGIC)
    return 0;
  size_t plen = get32(buf + 4);
  if (plen > KVLOG_PAYLOAD_MAX || len - KVLOG_HEAD - KVLOG_TAIL < plen)
    return 0;
  const uint8_t *t = buf + KVLOG_HEAD + plen;
  if (get32(t + 8) != plen || get32(t + 12) != KVLOG_END ||
      get64(t) != XXH64(buf, KVLOG_HEAD + plen, 0) ||
      !payload_ok(buf + KVLOG_HEAD, plen))
    return 0;
  return KVLOG_HEAD + plen + KVLOG_TAIL;
}

int b2s_kvlog_parse(const uint8_t *buf, size_t len, kvlog_entry_cb cb, void *arg,
                size_t *valid_end) {
  size_t off = 0, end = 0;
  int rc = 0;
  while (!rc && off < len) {
    size_t blen = b2s_kvlog_batch_len(buf + off, len - off);
    if (blen == 0) {   /* torn or damaged: the next batch starts later */
      off++;
      continue;
    }
    if (cb)
      rc = payload_visit(buf + off + KVLOG_HEAD, cb, arg);
    off += blen;
    end = off;
  }
  if (valid_end)
    *valid_end = end;
  return rc;
}

size_t b2s_kvlog_last_batch_len(const uint8_t tail[KVLOG_TAIL],
                            uint64_t file_len) {
  uint64_t plen = get32(tail + 8);
  if (get32(tail + 12) != KVLOG_END || plen > KVLOG_PAYLOAD_MAX ||
      file_len < KVLOG_HEAD + KVLOG_TAIL + plen)
    return 0;
  return KVLOG_HEAD + (size_t)plen + KVLOG_TAIL;
}

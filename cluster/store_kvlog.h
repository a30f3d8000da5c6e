/* The local store's key-log file format (store_local_kv.c): an
 * append-only sequence of batches, each set atomically by being complete
 * and checksummed.  Pure functions on buffers (no I/O), so the reader can
 * be fuzzed on its own.  Owned by cluster/store_kvlog.c.
 *
 * batch   := u32le 0x564B3242 ("B2KV")  u32le plen  payload[plen]
 *            u64le xxh64(magic .. payload, seed 0)  u32le plen
 *            u32le 0x42324B56 (end mark)
 * payload := u32le count, count times: u8 klen (1..64) u32le vlen
 *            (<= 65536) key[klen] val[vlen]; keys of [A-Za-z0-9._-]
 *
 * The trailer repeats plen so an appender can find and check the last
 * batch from the end of the file without reading the rest.  The reader
 * visits every batch that is complete, passes its checksum and parses,
 * and skips whatever bytes do not (looking for the next magic): a torn
 * tail, and bytes damaged in the middle (possible only on a power loss
 * without B2S_SYNC_FULL, or a failing disk), which hide the batches they
 * hit but never the later ones, so an append always becomes visible. */
#ifndef B2S_STORE_KVLOG_H
#define B2S_STORE_KVLOG_H

#include <stddef.h>
#include <stdint.h>

#include "b2s_store.h"

#define KVLOG_HEAD 8u
#define KVLOG_TAIL 16u
#define KVLOG_PAYLOAD_MAX (1u << 30)

/* Encode one batch into a malloc'ed buffer; B2S_E_ARG when the batch is
 * larger than KVLOG_PAYLOAD_MAX, B2S_E_NOMEM. */
int b2s_kvlog_encode(const b2s_kv *kv, size_t n, uint8_t **out, size_t *len);

/* One entry of a batch; key is not NUL-terminated. */
typedef int (*kvlog_entry_cb)(void *arg, const uint8_t *key, size_t klen,
                              const uint8_t *val, size_t vlen);

/* Visit the entries of every valid batch of buf in order (cb may be NULL;
 * a nonzero cb return stops the walk and is returned).  *valid_end gets
 * the end of the last valid batch (0 when none): what follows is a torn
 * tail an appender cuts.  Returns 0 (or cb's value). */
int b2s_kvlog_parse(const uint8_t *buf, size_t len, kvlog_entry_cb cb, void *arg,
                size_t *valid_end);

/* Length of the complete, valid batch at the start of buf, or 0. */
size_t b2s_kvlog_batch_len(const uint8_t *buf, size_t len);

/* Length of the batch that ends at file_len, read from its trailer (the
 * KVLOG_TAIL bytes before file_len), when the trailer is well formed and
 * the batch fits; 0 otherwise.  The caller checks the batch itself with
 * b2s_kvlog_batch_len. */
size_t b2s_kvlog_last_batch_len(const uint8_t tail[KVLOG_TAIL], uint64_t file_len);

#endif

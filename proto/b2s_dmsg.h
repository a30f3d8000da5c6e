/* Messages between the ranks of a distributed stream, its committer and
 * its followers (docs/DISTRIBUTED.md).  Each is one ZeroMQ frame:
 *
 *   "B2DM" u8 version (1) u8 type u16le name_len name
 *   then by type:
 *     WRITTEN   (rank -> committer, PUSH/PULL):  u64le index  u32le rank
 *                                                u32le rec_len  rec bytes
 *     END       (rank -> committer):  u64le index (one past the highest
 *                                     frame the rank stored, 0 if none)
 *                                     u32le rank
 *     COMMITTED (committer -> followers, PUB/SUB; the name is the
 *                subscription prefix, so it comes first after the fixed
 *                header):  u64le index (committed count H)  u8 closed
 *
 * Untrusted input: decode checks every length and value (name as for
 * b2s_dframe, rec_len <= B2S_RECORD_USER_MAX + 256, index < 2^62, no
 * trailing bytes) and returns B2S_E_PROTO (malformed) or B2S_E_PROTO_VERSION.
 * A decoded message borrows name and rec from the buffer. */
#ifndef B2S_DMSG_H
#define B2S_DMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum b2s_dmsg_type {
  B2S_DMSG_WRITTEN = 1,
  B2S_DMSG_END = 2,
  B2S_DMSG_COMMITTED = 3,
};

#define B2S_DMSG_NAME_MAX 160
#define B2S_DMSG_REC_MAX (4096 + 256)

typedef struct b2s_dmsg {
  int type;                  /* enum b2s_dmsg_type */
  const char *name;          /* not NUL-terminated when decoded */
  uint16_t name_len;
  int64_t index;
  int32_t rank;              /* WRITTEN, END */
  const uint8_t *rec;        /* WRITTEN */
  uint32_t rec_len;
  bool closed;               /* COMMITTED */
} b2s_dmsg;

/* Encode into buf; returns the length or -ENOBUFS / B2S_E_ARG. */
int b2s_dmsg_encode(const b2s_dmsg *m, uint8_t *buf, size_t cap);
int b2s_dmsg_decode(const void *buf, size_t len, b2s_dmsg *m);

#endif

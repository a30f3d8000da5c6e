/* Commit records: encoding, decoding and reading (frame_record.h). */
#include "frame_record.h"

#include <string.h>
#include <zlib.h>

#include "b2s_errors.h"
#include "frame_io.h"

void b2s_fw_st64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

void b2s_fw_st32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t ld64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* Record k at B + 2048 + 512 * (k mod 2): the previous commit's record is
 * never overwritten by the current one. */
int64_t b2s_fw_record_pos(int64_t base, uint64_t seq) {
  return base + FW_REC_OFF + (int64_t)(seq & 1) * FW_REC_SIZE;
}

void b2s_fw_record_encode(const fw_record *r, uint8_t out[FW_REC_SIZE]) {
  memset(out, 0, FW_REC_SIZE);
  memcpy(out, FW_REC_MAGIC, 8);
  b2s_fw_st32(out + 8, FW_REC_VERSION);
  b2s_fw_st32(out + 12, FW_REC_USED);
  const int64_t f[FW_REC_NFIELDS] = {
      (int64_t)r->seq, r->slot_pos, r->slot_len, r->nchunks, r->data_region,
      r->pos0, r->cap0, r->pos1, r->data_end, r->fresh_from, r->stored_bytes};
  for (int i = 0; i < FW_REC_NFIELDS; i++)
    b2s_fw_st64(out + 16 + 8 * i, (uint64_t)f[i]);
  memcpy(out + FW_REC_HDR, r->header, B2S_FRAME_HEADER_FIXED);
  b2s_fw_st32(out + FW_REC_CRC, (uint32_t)crc32(0L, out, FW_REC_CRC));
}

bool b2s_fw_record_decode(const uint8_t in[FW_REC_SIZE], fw_record *r) {
  if (memcmp(in, FW_REC_MAGIC, 8) != 0 || ld64(in + 8) !=
      ((uint64_t)FW_REC_USED << 32 | FW_REC_VERSION))
    return false;
  uint32_t crc = (uint32_t)in[FW_REC_CRC] | (uint32_t)in[FW_REC_CRC + 1] << 8 |
                 (uint32_t)in[FW_REC_CRC + 2] << 16 |
                 (uint32_t)in[FW_REC_CRC + 3] << 24;
  if (crc != (uint32_t)crc32(0L, in, FW_REC_CRC))
    return false;
  int64_t f[FW_REC_NFIELDS];
  for (int i = 0; i < FW_REC_NFIELDS; i++)
    f[i] = (int64_t)ld64(in + 16 + 8 * i);
  *r = (fw_record){.seq = (uint64_t)f[0], .slot_pos = f[1], .slot_len = f[2],
                   .nchunks = f[3], .data_region = f[4], .pos0 = f[5],
                   .cap0 = f[6], .pos1 = f[7], .data_end = f[8],
                   .fresh_from = f[9], .stored_bytes = f[10]};
  memcpy(r->header, in + FW_REC_HDR, B2S_FRAME_HEADER_FIXED);
  return r->slot_pos > 0 && r->slot_len > 0 && r->nchunks >= 0;
}

int b2s_fw_records_read(int fd, int64_t base, fw_record rec[2], int *nvalid) {
  uint8_t raw[FW_REC_SIZE];
  *nvalid = 0;
  for (int i = 0; i < 2; i++) {
    /* the file may end right after the used part of a record */
    memset(raw, 0, sizeof raw);
    int64_t at = b2s_fw_record_pos(base, (uint64_t)i);
    int rc = b2s_fio_pread(fd, raw, FW_REC_USED, at);
    if (rc < 0 && rc != B2S_E_TRUNCATED)
      return rc;
    if (rc == 0 && b2s_fw_record_decode(raw, &rec[*nvalid]))
      (*nvalid)++;
  }
  if (*nvalid == 2 && rec[1].seq > rec[0].seq) {
    fw_record t = rec[0];
    rec[0] = rec[1];
    rec[1] = t;
  }
  return 0;
}

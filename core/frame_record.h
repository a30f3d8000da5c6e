/* Commit records (frame_record.c): the commit area's layout, a record's
 * fields, their encoding (docs/FRAME_COMMIT.md section 2), and reading
 * both records of a frame file.  Below the writer's commits (which write
 * them), its open (which resumes from one) and recovery (which restores
 * from them), so none of those calls another for them.  Internal to core.
 *
 * Ownership: records are values; buffers and descriptors stay the
 * caller's. */
#ifndef B2S_FRAME_RECORD_H
#define B2S_FRAME_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "b2s_frame_format.h"

/* The commit area: AREA bytes right after the natural header.  The two
 * records sit in its second half so that the trailer of an empty
 * contiguous frame, which c-blosc2 expects right after the header, does not
 * overlap them. */
#define FW_AREA 4096
#define FW_REC_OFF 2048
#define FW_REC_SIZE 512
#define FW_REC_NFIELDS 11
#define FW_REC_HDR (16 + 8 * FW_REC_NFIELDS)
#define FW_REC_CRC (FW_REC_HDR + B2S_FRAME_HEADER_FIXED)
#define FW_REC_USED (FW_REC_CRC + 4)
#define FW_REC_MAGIC "B2SCOMIT"
#define FW_REC_VERSION 1

/* One commit record: everything recovery needs to restore the state of one
 * commit without trusting the frame header. */
typedef struct fw_record {
  uint64_t seq;
  int64_t slot_pos, slot_len;      /* where this state's index + trailer are */
  int64_t nchunks;
  int64_t data_region;             /* cframe: data region end (rel. header) */
  int64_t pos0, cap0, pos1;        /* slot layout */
  int64_t data_end;                /* cframe: end of used data; sparse: 0 */
  int64_t fresh_from;              /* cframe: data_end of the previous commit */
  int64_t stored_bytes;            /* referenced stored chunk bytes */
  uint8_t header[B2S_FRAME_HEADER_FIXED];
} fw_record;

/* Record seq's place in a frame of natural header length base. */
int64_t b2s_fw_record_pos(int64_t base, uint64_t seq);
void b2s_fw_record_encode(const fw_record *r, uint8_t out[FW_REC_SIZE]);
/* false when in is no record (magic, version, CRC, fields). */
bool b2s_fw_record_decode(const uint8_t in[FW_REC_SIZE], fw_record *r);
/* Both records of the commit area of fd, newest first; *nvalid says how
 * many checked out. */
int b2s_fw_records_read(int fd, int64_t base, fw_record rec[2], int *nvalid);

/* Little-endian fields, as records and index entries store them. */
void b2s_fw_st64(uint8_t *p, uint64_t v);
void b2s_fw_st32(uint8_t *p, uint32_t v);

#endif

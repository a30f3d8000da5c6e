/* Records for consumers (PROTOCOL.md 4.4): the stored record of a chunk
 * as the wire's record frame, the records of a run of chunks read from a
 * stream's companion frame, and the NOTIFY and CHUNK headers that carry
 * them.  The message builders are plain functions of plain data; the
 * reading (b2sd_recsrc) runs on the reader threads only (readers.c), never
 * on the I/O thread.
 *
 * Ownership: a b2sd_recsrc belongs to one reader thread; the buffers that
 * b2sd_recs_encode returns are the caller's (free()). */
#ifndef B2SD_RECDELIVER_H
#define B2SD_RECDELIVER_H

#include "b2s_meta.h"
#include "b2s_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* rec as a record frame; w->user borrows rec->user. */
void b2sd_rec_to_wire(const b2s_record *rec, b2s_wire_rec *w);

/* One thread's view of a stream's records frame, reopened when it does
 * not know the records asked for yet. */
typedef struct b2sd_recsrc {
  b2s_records *rs;
} b2sd_recsrc;

void b2sd_recsrc_close(b2sd_recsrc *src);

/* The record frames of chunks first .. first + count - 1 of the data frame
 * at data_path, back to back, into a new buffer (*out, *len).  A chunk
 * past the records frame (none, or written by another writer) gets a
 * record with present 0.  0 or a negative error (*out NULL). */
int b2sd_recs_encode(b2sd_recsrc *src, const char *data_path, uint64_t first,
                     uint32_t count, uint8_t **out, size_t *len);

/* NOTIFY of follow_id announcing chunks first .. committed - 1 (first <
 * committed), at most B2S_WIRE_NOTIFY_RECS_MAX of them with records (the
 * payload then holds their records).  Returns the count announced. */
uint32_t b2sd_notify_build(b2s_wire_msg *m, uint32_t follow_id, uint64_t first,
                           uint64_t committed, bool records);

/* What a CHUNK says about its payload. */
typedef struct b2sd_chunk_desc {
  uint32_t tag, follow_id, nbytes, cbytes;
  uint64_t index;
  bool push, decompressed, record;
} b2sd_chunk_desc;

/* The CHUNK header for d (a READ reply, or pushed); with d->record it
 * announces a record frame after the payload. */
void b2sd_chunk_build(b2s_wire_msg *m, const b2sd_chunk_desc *d);

#endif

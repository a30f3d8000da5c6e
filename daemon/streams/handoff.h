/* The hand-over of chunks to a stream's writer (handoff.c): the workers
 * put chunks (and tombstones) into the stream's reorder buffer in any
 * order, the writer, plain or distributed, takes them out in sequence;
 * the I/O thread sets the level a flush wants durable.  Each call takes
 * or assumes the stream's lock as it says. */
#ifndef B2SD_HANDOFF_H
#define B2SD_HANDOFF_H

#include "streamobj.h"

/* Hand a chunk (or tombstone) to the writer; takes ownership (locks st). */
void b2sd_stream_put(b2sd_stream *st, b2sd_chunk *c);
/* Ask the writer to commit and fsync every seq below upto (locks st). */
void b2sd_stream_flush(b2sd_stream *st, uint64_t upto);
/* A stream's writer (plain or distributed) takes from st->ready the chunks
 * that continue its sequence at next_seq, in order; chunks below it (left
 * by a writer that failed) are given back.  The caller holds st->lock. */
b2sd_chunk *b2sd_chunk_take_ready(b2sd_stream *st, uint64_t next_seq);

#endif

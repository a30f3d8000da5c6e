/* The chunk-buffer pool (chunkpool.c): idle chunk buffers that the writers
 * give back and the workers compress into again; chunks.c: a chunk's end
 * (its records cleared, its buffer back here; the hand-over to the writer
 * is streams/handoff.c).  The server owns one
 * (b2sd_server.chunks), made before the workers start and freed after the
 * writers stopped; any thread may get and give back buffers. */
#ifndef B2SD_CHUNKPOOL_H
#define B2SD_CHUNKPOOL_H

#include "b2sd.h"

typedef struct b2sd_chunkpool b2sd_chunkpool;

/* A pool keeping at most max_bytes of idle buffers. */
int b2sd_chunkpool_new(int64_t max_bytes, b2sd_chunkpool **out);
/* Free the pool and its idle buffers (no buffer may come back after).
 * Accepts NULL. */
void b2sd_chunkpool_free(b2sd_chunkpool *cp);
/* A buffer of at least cap bytes: the newest idle one that fits, else a
 * new one; NULL when out of memory.  Its bytes are not counted here: the
 * caller adds c->cap to inflight_bytes. */
b2sd_chunk *b2sd_chunkpool_get(b2sd_chunkpool *cp, size_t cap);
/* Give c back: kept within the budget (smaller idle buffers make room),
 * else handed to the lazy list (b2sd_chunkpool_release) or freed.  The
 * writers' way is b2sd_chunk_done, which also counts the bytes out. */
void b2sd_chunkpool_put(b2sd_chunkpool *cp, b2sd_chunk *c);
/* Bytes on the lazy list (not counted in the idle bytes). */
int64_t b2sd_chunkpool_lazy_bytes(b2sd_chunkpool *cp);
/* A new budget (memory_limit reloaded); idle buffers over it are freed. */
void b2sd_chunkpool_set_max(b2sd_chunkpool *cp, int64_t max_bytes);
/* Free the idle buffers, the lazy ones too. */
void b2sd_chunkpool_trim(b2sd_chunkpool *cp);
/* Hand the idle buffers' pages back to the kernel lazily (a stream
 * stopped): taken when memory runs short, and still there, without a page
 * fault, for the next stream's workers when it does not. */
void b2sd_chunkpool_release(b2sd_chunkpool *cp);
/* Bytes of the idle buffers; any thread, approximate; 0 for NULL. */
int64_t b2sd_chunkpool_idle_bytes(b2sd_chunkpool *cp);
/* The writer is done with c (written, or dropped at stop): its bytes leave
 * inflight_bytes and its buffer goes back to srv's pool or is freed; wakes
 * the I/O thread when that frees memory credits waited for.  Any thread;
 * accepts a tombstone. */
void b2sd_chunk_done(b2sd_server *srv, b2sd_chunk *c);
/* Free the user part of a producer's record and clear r (chunks.c). */
void b2sd_rec_clear(b2sd_rec *r);
/* The record a chunk is stored with: the producer's fields of in (out
 * borrows in's user part; checksum and flags 0) (chunks.c). */
void b2sd_rec_record(const b2sd_rec *in, b2s_record *out);

#endif

/* The reader threads (readers.c), "b2s-read-N": they read and decompress
 * the committed chunks READ asks for and push follows deliver.  The server
 * owns them (b2sd_server.readers); a read (b2sd_read, below) belongs to
 * whoever holds it, as session.h says. */
#ifndef B2SD_READERS_H
#define B2SD_READERS_H

#include "session.h"

typedef struct b2sd_readers b2sd_readers;

#define B2SD_READER_THREADS 2

int b2sd_readers_new(b2sd_server *srv, int nthreads, b2sd_readers **out);
/* Stop and join the threads, free what they still hold (before the
 * streams are freed).  Accepts NULL. */
void b2sd_readers_free(b2sd_readers *rd);
/* A stream was freed: every reader thread drops its frame handles before
 * its next read.  Accepts NULL.  I/O thread. */
void b2sd_readers_forget(b2sd_readers *rd);

/* readers.c: chunks are read (and decompressed) by reader threads, never
 * by the I/O thread.  A read is issued only for a committed chunk and
 * within the bounds of readbudget.h; its result comes back through a queue and a
 * b2sd_wake, and the I/O thread sends it.  A read whose session or follow
 * ended meanwhile is discarded when it comes back. */

typedef struct b2sd_read {
  struct b2sd_read *next;      /* in exactly one queue or list at a time */
  /* the request, fixed before it is issued */
  b2sd_stream *st;
  uint64_t index;
  bool decompress, push;
  bool record;                 /* the CHUNK carries the chunk's record */
  uint32_t nrecs;              /* > 0: no chunk bytes, the records of chunks
                                * index .. index + nrecs - 1 for a NOTIFY */
  uint32_t tag, session_id, follow_id;
  /* set by the I/O thread before it hands the read to a reader */
  uint64_t seq;                /* issue order within the session */
  bool admitted;               /* false: look up the sizes; true: the bytes
                                * are reserved and buf allocated, fill it */
  /* the result, written by a reader thread before it hands the read back */
  int rc;                      /* payload length, or a negative error */
  int32_t nbytes, cbytes;
  uint8_t *buf;                /* payload (readers.c allocates and frees it) */
  uint8_t *rec;                /* record frame(s), malloc'd by the reader */
  size_t rec_len;
} b2sd_read;

/* Collect the reads that came back (send READ replies, file pushed chunks
 * with their follows), retry held replies, issue waiting READs.  Returns
 * true when something waits for a peer's queue (retry soon). */
bool b2sd_reads_turn(b2sd_server *srv);
/* Queue a validated READ of session s (B2S_E_BUSY when too many wait). */
int b2sd_reads_request(b2sd_server *srv, b2sd_session *s, b2sd_read *r);
/* Whether the bounds let session s issue one more read. */
bool b2sd_reads_headroom(b2sd_server *srv, const b2sd_session *s);
/* Hand r to the reader threads (ownership moves; b2sd_reads_headroom said
 * yes). */
void b2sd_reads_issue(b2sd_server *srv, b2sd_session *s, b2sd_read *r);
/* A read is finished with: free it and give its place back (s: its
 * session, or NULL when that is gone). */
void b2sd_read_release(b2sd_server *srv, b2sd_session *s, b2sd_read *r);
/* The session ends: its waiting READs and held replies go. */
void b2sd_reads_session_end(b2sd_server *srv, b2sd_session *s);
/* The CHUNK answering r (a READ reply, or pushed when r->push) with r's
 * payload, which moves to ZeroMQ on success (no copy), and its record
 * when r->record. */
int b2sd_send_chunk(b2sd_server *srv, b2sd_session *s,
                    b2sd_read *r);

#endif

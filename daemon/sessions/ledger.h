/* A producer handle's ledger (ledger.c): the buffers it sent that are not
 * yet settled, its credits and the acknowledgements due (PROTOCOL.md 4.2,
 * 5.2).  Plain data and decisions only, no I/O: handles.c sends what the
 * ledger says is due and tells it what went out.  The I/O thread owns
 * each ledger (inside its b2sd_handle). */
#ifndef B2SD_LEDGER_H
#define B2SD_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What became of one buffer. */
enum {
  B2SD_ENTRY_QUEUED = 0,         /* given to a worker, seq is its stream seq */
  B2SD_ENTRY_DROPPED = 1,        /* dropped by the stream's policy */
  B2SD_ENTRY_REJECTED = 2,       /* refused with an ERROR */
};

/* One buffer the handle sent and that is not yet settled at its ack
 * level.  Entries are contiguous in buffer id. */
typedef struct b2sd_entry {
  uint64_t seq;                  /* B2SD_ENTRY_QUEUED only */
  uint8_t state;
} b2sd_entry;

typedef struct b2sd_ledger {
  uint8_t ack_level, policy;     /* wire values, as in OPENED */
  uint64_t next_id;              /* next buffer id expected */
  uint64_t first_id;             /* buffer id of q[qhead] */
  b2sd_entry *q;                 /* ring of unsettled entries */
  size_t qhead, qlen, qcap;
  size_t ncredited;              /* front entries whose credit came back */
  uint32_t avail;                /* credits the client may still use */
  uint32_t owed;                 /* credits to return in the next ACK */
  uint64_t acked[4];             /* upto last sent, by wire level */
} b2sd_ledger;

/* A ledger at buffer id 0 with `credits` for the client (wire values for
 * ack_level and policy). */
void b2sd_ledger_init(b2sd_ledger *l, uint8_t ack_level, uint8_t policy,
                      uint32_t credits);
void b2sd_ledger_fini(b2sd_ledger *l);

/* The client spends one credit on a buffer; false when it has none. */
bool b2sd_ledger_spend(b2sd_ledger *l);
/* Record the next buffer (id next_id, which then advances).  B2S_E_NOMEM
 * (nothing recorded) when the ring cannot grow. */
int b2sd_ledger_push(b2sd_ledger *l, uint8_t state, uint64_t seq);
/* The entry of buffer id, NULL when it is not in the ledger. */
b2sd_entry *b2sd_ledger_entry(b2sd_ledger *l, uint64_t id);

/* A buffer queued with stream seq `seq` that the writer could not store
 * after all (a distributed stream's frame number taken in the store):
 * it becomes rejected, so no ACK above received claims it.  Returns its
 * buffer id, or -1 when this ledger holds no such buffer (another
 * handle's, or settled and pruned). */
int64_t b2sd_ledger_reject_seq(b2sd_ledger *l, uint64_t seq);

/* Credits come back in entry order: at once for a buffer dropped or
 * rejected and under the drop policies; under `block` once the workers
 * took it (seq below `taken`) and memory has room. */
void b2sd_ledger_credit(b2sd_ledger *l, uint64_t taken, bool memory_ok);
/* Whether an ACK at level received is due: credits to return, or new
 * buffers where the producer waits for that level (its ack level, or a
 * CLOSE).  Above level received an ACK without credits tells the producer
 * nothing it waits for: it rides on the next credit or on the ACK at the
 * stream's level. */
bool b2sd_ledger_receipt_due(const b2sd_ledger *l, bool closing);
/* That ACK (upto, with the owed credits) went out. */
void b2sd_ledger_receipt_sent(b2sd_ledger *l, uint64_t upto);
/* Buffer ids below the returned one are settled at the handle's ack
 * level, given the seqs below written (committed) and durable. */
uint64_t b2sd_ledger_upto(const b2sd_ledger *l, uint64_t written,
                          uint64_t durable);
/* Whether an ACK at the handle's level (above received) up to u is due;
 * b2sd_ledger_level_sent when it went out. */
bool b2sd_ledger_level_due(const b2sd_ledger *l, uint64_t upto);
void b2sd_ledger_level_sent(b2sd_ledger *l, uint64_t upto);
/* Forget the entries below upto whose credit came back. */
void b2sd_ledger_prune(b2sd_ledger *l, uint64_t upto);
/* Every buffer is settled up to upto and its credit came back: a CLOSE
 * may be answered. */
bool b2sd_ledger_settled(const b2sd_ledger *l, uint64_t upto);

#endif

/* A producer handle's ledger: unsettled buffers, credits, ACKs due (see
 * ledger.h).  Pure bookkeeping; handles.c does the sending. */
#include "ledger.h"

#include "b2s_assert.h"
#include "b2s_errors.h"
#include "b2s_wire.h"

#include <stdlib.h>
#include <string.h>

static b2sd_entry *entry_at(const b2sd_ledger *l, size_t i) {
  return &l->q[(l->qhead + i) % l->qcap];
}

void b2sd_ledger_init(b2sd_ledger *l, uint8_t ack_level, uint8_t policy,
                      uint32_t credits) {
  memset(l, 0, sizeof *l);
  l->ack_level = ack_level;
  l->policy = policy;
  l->avail = credits;
}

void b2sd_ledger_fini(b2sd_ledger *l) {
  free(l->q);
  l->q = NULL;
  l->qlen = l->qcap = l->qhead = 0;
}

bool b2sd_ledger_spend(b2sd_ledger *l) {
  if (l->avail == 0)
    return false;
  l->avail--;
  return true;
}

int b2sd_ledger_push(b2sd_ledger *l, uint8_t state, uint64_t seq) {
  if (l->qlen == l->qcap) {
    size_t ncap = l->qcap ? l->qcap * 2 : 16;
    b2sd_entry *nq = malloc(ncap * sizeof *nq);
    if (!nq)
      return B2S_E_NOMEM;
    for (size_t i = 0; i < l->qlen; i++)
      nq[i] = *entry_at(l, i);
    free(l->q);
    l->q = nq;
    l->qcap = ncap;
    l->qhead = 0;
  }
  b2sd_entry *e = entry_at(l, l->qlen++);
  e->seq = seq;
  e->state = state;
  l->next_id++;
  /* entries are contiguous in buffer id (ledger.h) */
  B2S_ASSERT(l->next_id - l->first_id == l->qlen && l->qlen <= l->qcap);
  return 0;
}

b2sd_entry *b2sd_ledger_entry(b2sd_ledger *l, uint64_t id) {
  if (id < l->first_id || id >= l->next_id)
    return NULL;
  return entry_at(l, (size_t)(id - l->first_id));
}

int64_t b2sd_ledger_reject_seq(b2sd_ledger *l, uint64_t seq) {
  for (size_t i = 0; i < l->qlen; i++) {
    b2sd_entry *e = entry_at(l, i);
    if (e->state == B2SD_ENTRY_QUEUED && e->seq == seq) {
      e->state = B2SD_ENTRY_REJECTED;
      return (int64_t)(l->first_id + i);
    }
  }
  return -1;
}

void b2sd_ledger_credit(b2sd_ledger *l, uint64_t taken, bool memory_ok) {
  while (l->ncredited < l->qlen) {
    const b2sd_entry *e = entry_at(l, l->ncredited);
    if (e->state == B2SD_ENTRY_QUEUED && l->policy == B2S_WIRE_POLICY_BLOCK &&
        (e->seq >= taken || !memory_ok))
      break;
    l->ncredited++;
    l->owed++;
  }
}

bool b2sd_ledger_receipt_due(const b2sd_ledger *l, bool closing) {
  bool news = l->next_id > l->acked[B2S_WIRE_LEVEL_RECEIVED] &&
              (l->ack_level == B2S_WIRE_LEVEL_RECEIVED || closing);
  return news || l->owed;
}

void b2sd_ledger_receipt_sent(b2sd_ledger *l, uint64_t upto) {
  l->acked[B2S_WIRE_LEVEL_RECEIVED] = upto;
  l->avail += l->owed;
  l->owed = 0;
}

/* Whether e is settled at level: dropped and rejected buffers at once,
 * queued ones once their seq is written or durable. */
static bool settled(const b2sd_entry *e, int level, uint64_t written,
                    uint64_t durable) {
  if (e->state != B2SD_ENTRY_QUEUED || level <= B2S_WIRE_LEVEL_RECEIVED)
    return true;
  return e->seq < (level == B2S_WIRE_LEVEL_WRITTEN ? written : durable);
}

uint64_t b2sd_ledger_upto(const b2sd_ledger *l, uint64_t written,
                          uint64_t durable) {
  if (l->ack_level <= B2S_WIRE_LEVEL_RECEIVED)
    return l->next_id;
  for (size_t i = 0; i < l->qlen; i++)
    if (!settled(entry_at(l, i), l->ack_level, written, durable))
      return l->first_id + i;
  return l->next_id;
}

bool b2sd_ledger_level_due(const b2sd_ledger *l, uint64_t upto) {
  return l->ack_level > B2S_WIRE_LEVEL_RECEIVED &&
         l->ack_level <= B2S_WIRE_LEVEL_DURABLE &&
         upto > l->acked[l->ack_level];
}

void b2sd_ledger_level_sent(b2sd_ledger *l, uint64_t upto) {
  if (l->ack_level <= B2S_WIRE_LEVEL_DURABLE)
    l->acked[l->ack_level] = upto;
}

void b2sd_ledger_prune(b2sd_ledger *l, uint64_t upto) {
  while (l->ncredited > 0 && l->first_id < upto) {
    l->qhead = (l->qhead + 1) % l->qcap;
    l->qlen--;
    l->ncredited--;
    l->first_id++;
  }
  B2S_ASSERT(l->next_id - l->first_id == l->qlen && l->ncredited <= l->qlen);
}

bool b2sd_ledger_settled(const b2sd_ledger *l, uint64_t upto) {
  return upto == l->next_id && l->ncredited == l->qlen;
}

/* Group commit decisions of a stream's writer (see groupcommit.h). */
#include "groupcommit.h"

void b2sd_group_appended(b2sd_group *g, uint64_t now_ns) {
  if (g->pending++ == 0)
    g->pending_since = now_ns;
}

bool b2sd_group_fsync(const b2s_stream_durability *dur) {
  return dur->ack == B2S_ACK_FSYNC;
}

bool b2sd_group_full(const b2sd_group *g, const b2s_stream_durability *dur) {
  return g->pending >= dur->group_count;
}

uint64_t b2sd_group_deadline(const b2sd_group *g,
                             const b2s_stream_durability *dur) {
  return g->pending_since + (uint64_t)dur->group_interval_ms * 1000000u;
}

b2sd_commit b2sd_group_decide(const b2sd_group *g,
                              const b2s_stream_durability *dur,
                              uint64_t flush_upto, bool stop, uint64_t now_ns) {
  bool fsync = b2sd_group_fsync(dur);
  bool want_flush = flush_upto > g->durable && g->next_seq >= flush_upto;
  /* pending 0 with the sequence ahead: only tombstones, publish at once */
  if (g->next_seq > g->written &&
      (g->pending == 0 || now_ns >= b2sd_group_deadline(g, dur) ||
       want_flush || stop))
    return (b2sd_commit){.commit = true,
                         .durable = fsync || want_flush || stop};
  if (want_flush)              /* written already, not yet durable */
    return (b2sd_commit){.commit = true, .durable = true};
  return (b2sd_commit){.commit = false};
}

bool b2sd_group_wait(const b2sd_group *g, uint64_t deadline, uint64_t now_ns,
                     uint64_t *ns) {
  if (g->pending == 0)
    return false;
  *ns = deadline > now_ns ? deadline - now_ns : 0;
  return true;
}

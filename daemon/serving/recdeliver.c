/* Records for consumers: stored records turned into record frames, and the
 * headers announcing them (recdeliver.h). */
#include "recdeliver.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void b2sd_rec_to_wire(const b2s_record *rec, b2s_wire_rec *w) {
  /* a stored record always holds its checksum */
  *w = (b2s_wire_rec){.xxh64 = rec->xxh64, .present = B2S_WIRE_REC_XXH64,
                      .flags = (uint16_t)rec->flags};
  if (rec->has_frame) {
    w->frame = rec->frame;
    w->present |= B2S_WIRE_REC_FRAME;
  }
  if (rec->has_ts) {
    w->ts_ns = rec->ts;
    w->present |= B2S_WIRE_REC_TS;
  }
  if (rec->user_kind != B2S_RECORD_USER_NONE && rec->user_len) {
    w->user = rec->user;
    w->user_len = (uint16_t)rec->user_len;
    if (rec->user_kind == B2S_RECORD_USER_MAP)
      w->present |= B2S_WIRE_REC_USER_MAP;
  }
}

void b2sd_recsrc_close(b2sd_recsrc *src) {
  b2s_records_free(src->rs);
  src->rs = NULL;
}

/* src knowing up to `want` records if the frame has them; 0 also when the
 * stream keeps no records (src->rs stays NULL). */
static int recsrc_reach(b2sd_recsrc *src, const char *data_path,
                        int64_t want) {
  if (src->rs && b2s_records_count(src->rs) >= want)
    return 0;
  b2sd_recsrc_close(src);
  /* records are committed before their chunks (b2s_pair_commit), so a
   * reopen sees the record of every committed chunk */
  int rc = b2s_records_open(data_path, &src->rs, NULL);
  return rc == -ENOENT ? 0 : rc;
}

int b2sd_recs_encode(b2sd_recsrc *src, const char *data_path, uint64_t first,
                     uint32_t count, uint8_t **out, size_t *len) {
  *out = NULL;
  *len = 0;
  if (count == 0 || count > B2S_WIRE_NOTIFY_RECS_MAX ||
      first > (uint64_t)INT64_MAX - count)
    return B2S_E_ARG;
  int rc = recsrc_reach(src, data_path, (int64_t)(first + count));
  if (rc < 0)
    return rc;
  uint8_t *buf = malloc((size_t)count * B2S_WIRE_REC_MAX);
  if (!buf)
    return B2S_E_NOMEM;
  int64_t have = src->rs ? b2s_records_count(src->rs) : 0;
  size_t at = 0;
  for (uint32_t k = 0; k < count && rc >= 0; k++) {
    int64_t i = (int64_t)(first + k);
    b2s_wire_rec w = {0};      /* past the records: present 0 */
    b2s_record rec;
    if (i < have && (rc = b2s_records_get(src->rs, i, &rec)) >= 0)
      b2sd_rec_to_wire(&rec, &w);
    if (rc >= 0)
      rc = b2s_wire_rec_encode(&w, buf + at, B2S_WIRE_REC_MAX);
    if (rc >= 0)
      at += (size_t)rc;
  }
  if (rc < 0) {
    free(buf);
    return rc;
  }
  *out = buf;
  *len = at;
  return 0;
}

uint32_t b2sd_notify_build(b2s_wire_msg *m, uint32_t follow_id, uint64_t first,
                           uint64_t committed, bool records) {
  uint64_t count = committed - first;
  uint64_t max = records ? B2S_WIRE_NOTIFY_RECS_MAX : UINT32_MAX;
  if (count > max)
    count = max;
  b2s_wire_init(m, B2S_WIRE_NOTIFY);
  m->flags = records ? B2S_WIRE_NOTIFY_RECORDS : 0;
  m->notify.first = first;
  m->notify.count = (uint32_t)count;
  m->notify.committed = committed;
  m->notify.follow_id = follow_id;
  return (uint32_t)count;
}

void b2sd_chunk_build(b2s_wire_msg *m, const b2sd_chunk_desc *d) {
  b2s_wire_init(m, B2S_WIRE_CHUNK);
  m->tag = d->tag;
  m->flags = (d->push ? B2S_WIRE_CHUNK_PUSHED : 0) |
             (d->decompressed ? B2S_WIRE_CHUNK_DECOMPRESSED : 0) |
             (d->record ? B2S_WIRE_CHUNK_RECORD : 0);
  m->chunk.index = d->index;
  m->chunk.follow_id = d->follow_id;
  m->chunk.nbytes = d->nbytes;
  m->chunk.cbytes = d->cbytes;
}

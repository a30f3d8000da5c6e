/* Producer handles (PROTOCOL.md 4.2, 4.3): OPEN, DATA, FLUSH, CLOSE, the
 * buffer path every DATA and SHM_SUBMIT takes (admit, reject, accept into
 * the worker queue or drop by policy), and sending the credits and
 * acknowledgements the handle's ledger (ledger.c) says are due.  I/O
 * thread only. */
#define _GNU_SOURCE
#include "clock.h"
#include "dwriter.h"
#include "fdheadroom.h"
#include "outbox.h"
#include "progress.h"
#include "wiremap.h"
#include "segment.h"
#include "chunkpool.h"
#include "order.h"
#include "handoff.h"
#include "stream.h"
#include "workers.h"
#include "ingest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- handles ---------------------------------------------------------------- */

/* Whether st has a producer that has not sent CLOSE. */
static bool has_open_producer(const b2sd_stream *st) {
  for (const b2sd_handle *o = st->handles; o; o = o->next_st)
    if (!o->closing)
      return true;
  return false;
}

void b2sd_handle_free(b2sd_handle *h) {
  b2sd_session *s = h->sess;
  b2sd_stream *st = h->st;
  bool gone = !h->closing;       /* freed without its CLOSE */
  for (b2sd_handle **pp = &s->handles; *pp; pp = &(*pp)->next_s)
    if (*pp == h) {
      *pp = h->next_s;
      break;
    }
  for (b2sd_handle **pp = &h->st->handles; *pp; pp = &(*pp)->next_st)
    if (*pp == h) {
      *pp = h->next_st;
      break;
    }
  s->nhandles--;
  if (h->seg)
    b2sd_seg_end(h->seg);     /* the producer's slots come back */
  b2sd_ledger_fini(&h->lg);
  free(h);
  /* a distributed stream's last producer gone without CLOSE (killed,
   * connection lost): END after B2SD_GONE_END_MS unless one comes back,
   * so the frame does not stay open until the rank stops */
  if (gone && st->dist && !has_open_producer(st))
    st->end_due_ns = b2sd_now_ns() + B2SD_GONE_END_MS * UINT64_C(1000000);
}

void b2sd_dist_gone_tick(b2sd_stream *st) {
  if (!st->end_due_ns || b2sd_now_ns() < st->end_due_ns)
    return;
  st->end_due_ns = 0;
  if (has_open_producer(st))     /* one came back: its CLOSE ends */
    return;
  LOG_W("stream %s: its producers went away without CLOSE %d s ago",
        st->name, B2SD_GONE_END_MS / 1000);
  b2sd_misrouted_end(st);
}

void b2sd_misrouted_end(b2sd_stream *st) {
  if (!st->misrouted) {
    b2sd_stream_end_mark(st);
    return;
  }
  st->misrouted = false;         /* the next producer's CLOSE ends */
  LOG_W("stream %s: no END at this CLOSE: a producer sent frames of other "
        "ranks since the last END (a wrong rank list or frames-per-block), "
        "and a run with the producers misconfigured must not close the "
        "frame for good", st->name);
}

/* Progress of one handle: credits, ACKs, FLUSHED, CLOSED, as its ledger
 * says they are due.  Returns false when the handle was closed and
 * freed. */
bool b2sd_handle_progress(b2sd_server *srv, b2sd_handle *h, uint64_t taken,
                          uint64_t written, uint64_t durable,
                          bool memory_ok) {
  b2sd_ledger *l = &h->lg;
  b2sd_ledger_credit(l, taken, memory_ok);
  b2s_wire_msg m;
  uint64_t ur = l->next_id;
  if (b2sd_ledger_receipt_due(l, h->closing)) {
    b2s_wire_init(&m, B2S_WIRE_ACK);
    m.ack.upto = ur;
    m.ack.dropped = h->dropped;
    m.ack.handle = h->id;
    m.ack.credits = l->owed;
    m.ack.level = B2S_WIRE_LEVEL_RECEIVED;
    if (b2sd_send(srv, h->sess, &m, NULL, 0) == 0)
      b2sd_ledger_receipt_sent(l, ur);
  }
  uint64_t u = b2sd_ledger_upto(l, written, durable);
  if (b2sd_ledger_level_due(l, u)) {
    b2s_wire_init(&m, B2S_WIRE_ACK);
    m.ack.upto = u;
    m.ack.dropped = h->dropped;
    m.ack.handle = h->id;
    m.ack.level = l->ack_level;
    if (b2sd_send(srv, h->sess, &m, NULL, 0) == 0)
      b2sd_ledger_level_sent(l, u);
  }
  /* drop entries settled at the ack level whose credit came back */
  b2sd_ledger_prune(l, u);
  while (h->nflush > 0 && durable >= h->flushes[0].seq) {
    b2s_wire_init(&m, B2S_WIRE_FLUSHED);
    m.tag = h->flushes[0].tag;
    m.flushed.upto = h->flushes[0].upto;
    m.flushed.handle = h->id;
    if (b2sd_send(srv, h->sess, &m, NULL, 0) == -EAGAIN)
      break;
    memmove(h->flushes, h->flushes + 1,
            (size_t)--h->nflush * sizeof h->flushes[0]);
  }
  if (h->closing && h->nflush == 0 && b2sd_ledger_settled(l, u)) {
    b2s_wire_init(&m, B2S_WIRE_CLOSED);
    m.tag = h->close_tag;
    m.closed.upto = h->close_upto;
    m.closed.dropped = h->dropped;
    m.closed.handle = h->id;
    if (b2sd_send(srv, h->sess, &m, NULL, 0) == -EAGAIN)
      return true;
    b2sd_handle_free(h);
    return false;
  }
  return true;
}

static int stream_create_from_template(b2sd_server *srv, const char *name,
                                       const char *tmpl, b2sd_stream **out) {
  b2s_stream_cfg sc;
  int rc = b2s_config_stream_from_template(srv->cfg, tmpl, name, &sc);
  if (rc < 0)
    return rc;
  for (b2sd_stream *st = srv->streams; st; st = st->next)
    if (strcmp(st->path, sc.full_path) == 0)
      return B2S_E_CONFIG;
  if ((rc = b2sd_headroom_stream(srv, NULL)) < 0)
    return rc;
  b2sd_stream *st;
  rc = b2sd_stream_open(srv, &sc, &st);
  if (rc < 0)
    return rc;
  rc = b2sd_stream_start(st);
  if (rc < 0) {
    b2sd_stream_free(st);
    return rc;
  }
  st->next = srv->streams;
  srv->streams = st;
  srv->nstreams++;
  srv->streams_made++;
  LOG_I("stream %s: created from template %s", name, tmpl);
  *out = st;
  return 0;
}

/* Bytes of one chunk of a b2nd stream (its frame's b2nd metalayer says
 * every chunk holds chunkshape items); 0 when the stream is not b2nd. */
static int64_t b2nd_chunk_bytes(const b2s_stream_cfg *cfg) {
  if (!cfg->b2nd.enabled || cfg->b2nd.ndim <= 0)
    return 0;
  int64_t n = cfg->cparams.typesize > 0 ? cfg->cparams.typesize : 1;
  for (int i = 0; i < cfg->b2nd.ndim && i < B2S_CONFIG_MAX_DIM; i++) {
    if (n > INT64_MAX / 2 / cfg->b2nd.chunkshape[i])
      return INT64_MAX;          /* beyond any buffer: all are refused */
    n *= cfg->b2nd.chunkshape[i];
  }
  return n;
}

/* A series map of META or OPEN: one msgpack map with string keys, merged
 * into the stream's (all or nothing).  0 or the error to answer. */
static int meta_apply(b2sd_server *srv, b2sd_stream *st, const b2s_wire_msg *m,
                      zmq_msg_t *payload) {
  size_t len = payload ? zmq_msg_size(payload) : 0;
  int rc = b2s_wire_check_payload(m, len, B2S_WIRE_META_MAX);
  if (rc == B2S_E_OVERSIZE)
    rc = B2S_E_SERIES_SIZE;
  const uint8_t *buf = payload ? zmq_msg_data(payload) : NULL;
  if (rc == 0 && len == 0)
    rc = B2S_E_PROTO;
  if (rc == 0)
    rc = b2s_wire_mp_map_check(buf, len, true);
  if (rc == 0)
    rc = b2s_series_check(buf, len, true);
  if (rc > 0)
    rc = 0;                      /* a key count */
  if (rc == 0 && srv->draining)
    rc = B2S_E_CLOSED;
  if (rc == 0)
    rc = b2sd_stream_meta(st, buf, len);
  return rc;
}

void b2sd_meta_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   zmq_msg_t *payload) {
  uint32_t hid = m->meta.handle;
  b2sd_handle *h = b2sd_handle_find(s, hid);
  int rc = !h || h->closing ? B2S_E_CLOSED : 0;
  if (rc == 0 && b2sd_progress_failed(h->st))
    rc = b2sd_progress_failed(h->st);
  if (rc == 0)
    rc = meta_apply(srv, h->st, m, payload);
  if (rc < 0) {
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = rc, .ref_type = m->type, .ref_id = hid});
    return;
  }
  b2s_wire_msg r;
  b2s_wire_init(&r, B2S_WIRE_META_OK);
  r.tag = m->tag;
  r.meta_ok.upto = h->lg.next_id;
  r.meta_ok.handle = hid;
  b2sd_send(srv, s, &r, NULL, 0);
}

void b2sd_open_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   zmq_msg_t *payload) {
  char name[B2S_STREAM_NAME_MAX + 1], tmpl[B2S_WIRE_NAME_MAX + 1];
  int rc = b2sd_cstr_copy(name, sizeof name, m->open.stream);
  if (rc == 0)
    rc = b2s_stream_name_check(name);
  if (rc == 0)
    rc = b2sd_cstr_copy(tmpl, sizeof tmpl, m->open.tmpl) ? B2S_E_NOTEMPLATE : 0;
  if (rc == 0 && srv->draining)
    rc = B2S_E_CLOSED;
  const char *why = NULL;
  if (rc == 0 && s->nhandles >= B2SD_MAX_HANDLES) {
    rc = B2S_E_BUSY;
    why = "this session has " B2SD_STR(B2SD_MAX_HANDLES) " handles open, "
          "the limit";
  }
  b2sd_stream *st = rc == 0 ? b2sd_stream_find(srv, name) : NULL;
  if (st && b2sd_life_retiring(st->life)) {      /* its series ended (retire.h) */
    rc = B2S_E_CLOSED;
    why = "the stream is closing: its detector series ended";
  }
  if (rc == 0 && !st)
    rc = tmpl[0] ? stream_create_from_template(srv, name, tmpl, &st)
                 : B2S_E_NOSTREAM;
  /* a failed stream has no handle left (server.c ended them): try again,
   * the cause may be gone (room on the disk, a repaired frame) */
  if (rc == 0 && b2sd_progress_failed(st) && !st->handles)
    rc = b2sd_stream_reopen(st);
  if (rc == 0 && b2sd_progress_failed(st))
    rc = b2sd_progress_failed(st);
  /* initial metadata: a refused map makes no handle (a stream just made
   * from its template stays) */
  if (rc == 0 && (m->flags & B2S_WIRE_OPEN_META))
    rc = meta_apply(srv, st, m, payload);
  b2sd_handle *h = rc == 0 ? calloc(1, sizeof *h) : NULL;
  if (rc == 0 && !h)
    rc = B2S_E_NOMEM;
  if (rc < 0) {
    if (why == NULL && st && st->fail_reason[0])
      why = st->fail_reason;
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = rc, .ref_type = m->type, .text = why});
    return;
  }
  b2s_stream_cfg cfg;
  b2sd_stream_cfg_get(st, &cfg);
  h->sess = s;
  h->st = st;
  h->id = s->next_handle++;
  b2sd_ledger_init(&h->lg, b2sd_wire_ack_level(cfg.durability.ack),
                   b2sd_wire_policy(cfg.backpressure),
                   (uint32_t)cfg.queue_depth);
  h->chunk_bytes = st->dist ? cfg.chunk_nbytes : b2nd_chunk_bytes(&cfg);
  h->next_s = s->handles;
  s->handles = h;
  h->next_st = st->handles;
  st->handles = h;
  s->nhandles++;
  b2s_wire_msg o;
  b2s_wire_init(&o, B2S_WIRE_OPENED);
  o.tag = m->tag;
  o.opened.handle = h->id;
  o.opened.credits = h->lg.avail;
  int64_t mb = srv->dcfg.max_buffer;
  o.opened.max_buffer = (uint32_t)(mb > UINT32_MAX ? UINT32_MAX : mb);
  o.opened.ack_level = h->lg.ack_level;
  o.opened.policy = h->lg.policy;
  b2sd_send(srv, s, &o, NULL, 0);
}

static void send_dropped(b2sd_server *srv, b2sd_handle *h, uint64_t id,
                         int reason) {
  b2s_wire_msg d;
  b2s_wire_init(&d, B2S_WIRE_DROPPED);
  d.dropped.buffer_id = id;
  d.dropped.handle = h->id;
  d.dropped.reason = (uint8_t)reason;
  b2sd_send(srv, h->sess, &d, NULL, 0);
  h->dropped++;
  /* relaxed: statistics counter */
  atomic_fetch_add_explicit(&h->st->st_drops, 1, memory_order_relaxed);
  if (reason == B2S_WIRE_POLICY_DROP_OLDEST)
    atomic_fetch_add_explicit(&h->st->st_drops_oldest, 1,
                              memory_order_relaxed);
}

/* drop-oldest: take the stream's oldest queued job out and report it. */
static bool drop_oldest(b2sd_server *srv, b2sd_stream *st) {
  b2sd_job *j = b2sd_pool_steal_oldest(srv->pool, st);
  if (!j)
    return false;
  b2sd_chunk *c = calloc(1, sizeof *c);
  if (!c)
    abort();
  c->seq = j->seq;
  if (b2sd_stream_ingest(st)->fills) {   /* the seq keeps a placeholder */
    c->gap = B2S_RECORD_GAP | B2S_RECORD_DROPPED;
    c->nbytes = (int32_t)j->len;
    c->rec = j->rec;
    j->rec = (b2sd_rec){0};
  }
  b2sd_stream_put(st, c);        /* tombstone: the writer skips the seq */
  for (b2sd_session *s = srv->sessions; s; s = s->next) {
    if (s->id != j->session_id)
      continue;
    b2sd_handle *h = b2sd_handle_find(s, j->handle_id);
    b2sd_entry *e = h ? b2sd_ledger_entry(&h->lg, j->buffer_id) : NULL;
    if (e) {
      e->state = B2SD_ENTRY_DROPPED;
      send_dropped(srv, h, j->buffer_id, B2S_WIRE_POLICY_DROP_OLDEST);
    }
  }
  b2sd_job_free(srv, j);
  return true;
}

void b2sd_handle_close_ref(b2sd_server *srv, b2sd_handle *h, uint32_t tag,
                             int code, uint8_t type, uint64_t index) {
  b2sd_send_error(srv, h->sess, &(b2sd_errreply){
      .tag = tag, .code = code, .flags = B2S_WIRE_ERROR_CLOSED_REF,
      .ref_type = type, .ref_id = h->id, .ref_index = index});
  b2sd_handle_free(h);
}

/* The checks every buffer message passes first: known handle, the next
 * buffer id, a credit.  Returns the handle, or NULL when the message was
 * answered here (the handle may then be closed). */
b2sd_handle *b2sd_buffer_admit(b2sd_server *srv, b2sd_session *s,
                               const b2s_wire_msg *m, uint32_t handle,
                               uint64_t id) {
  b2sd_handle *h = b2sd_handle_find(s, handle);
  if (!h) {
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = B2S_E_CLOSED, .ref_type = m->type,
        .ref_id = handle, .ref_index = id});
    return NULL;
  }
  if (id != h->lg.next_id) {
    b2sd_handle_close_ref(srv, h, m->tag, B2S_E_PROTO, m->type, id);
    return NULL;
  }
  if (!b2sd_ledger_spend(&h->lg)) {
    b2sd_handle_close_ref(srv, h, m->tag, B2S_E_BUSY, m->type, id);
    return NULL;
  }
  return h;
}

/* A buffer refused on its own: settled for ACK, the handle stays open. */
void b2sd_buffer_reject(b2sd_server *srv, b2sd_handle *h,
                        const b2s_wire_msg *m, uint64_t id, int code,
                        const char *why) {
  b2sd_ledger_push(&h->lg, B2SD_ENTRY_REJECTED, 0);
  /* relaxed: statistics counter */
  atomic_fetch_add_explicit(&h->st->st_rejected, 1, memory_order_relaxed);
  b2sd_send_error(srv, h->sess, &(b2sd_errreply){
      .tag = m->tag, .code = code, .ref_type = m->type, .ref_id = h->id,
      .ref_index = id, .text = why && why[0] ? why : NULL});
}

bool b2sd_buffer_size_ok(b2sd_server *srv, b2sd_handle *h,
                         const b2s_wire_msg *m, uint64_t id, size_t len) {
  if (h->chunk_bytes == 0 || (int64_t)len == h->chunk_bytes)
    return true;
  char text[128];
  snprintf(text, sizeof text,
           "buffer is %zu bytes, stream's b2nd chunk is %lld bytes", len,
           (long long)h->chunk_bytes);
  b2sd_ledger_push(&h->lg, B2SD_ENTRY_REJECTED, 0);
  b2sd_send_error(srv, h->sess, &(b2sd_errreply){
      .tag = m->tag, .code = B2S_E_CHUNK_SIZE, .ref_type = m->type,
      .ref_id = h->id, .ref_index = id, .text = text});
  return false;
}

/* order: frame_number: rec's frame number is on its way to the writer. */
static void order_take(b2sd_stream *st, const b2sd_rec *rec) {
  if (st->ordered && (rec->present & B2S_WIRE_REC_FRAME))
    b2sd_window_take(&st->win, rec->frame);
}

void b2sd_dist_conflicts(b2sd_server *srv, b2sd_stream *st) {
  pthread_mutex_lock(&st->lock);
  b2sd_conflict *v = st->conflicts;
  size_t n = st->nconflicts;
  st->conflicts = NULL;
  st->nconflicts = st->capconflicts = 0;
  pthread_mutex_unlock(&st->lock);
  for (size_t i = 0; i < n; i++) {
    char why[200];
    if (v[i].code == B2S_E_CONFIG)
      snprintf(why, sizeof why, "frame number %llu: this rank's cluster "
               "settings differ from the distributed frame's in the store "
               "(ranks, frames_per_block or the stream's parameters; its "
               "log says which); this buffer was not stored",
               (unsigned long long)v[i].frame);
    else if (v[i].code == B2S_E_CLOSED)
      snprintf(why, sizeof why, "frame number %llu: the distributed frame "
               "is closed in the store, and a closed frame is not written "
               "again (write under a new name); this buffer was not stored",
               (unsigned long long)v[i].frame);
    else
      snprintf(why, sizeof why, "frame number %llu is in the store with "
               "other bytes (made a gap meanwhile?); this buffer was not "
               "stored", (unsigned long long)v[i].frame);
    for (b2sd_handle *h = st->handles; h; h = h->next_st) {
      int64_t id = b2sd_ledger_reject_seq(&h->lg, v[i].seq);
      if (id >= 0) {
        b2sd_send_error(srv, h->sess, &(b2sd_errreply){
            .code = v[i].code, .ref_type = B2S_WIRE_DATA,
            .ref_id = h->id, .ref_index = (uint64_t)id, .text = why});
        break;
      }
    }
  }
  free(v);
}

/* A distributed stream stores only the frame numbers this rank owns;
 * the producer learns which rank owns the others, and where it listens. */
static int rank_check(b2sd_server *srv, const b2sd_stream *st,
                      const b2sd_rec *rec, b2s_errdetail *ed) {
  int32_t owner = -1;
  int rc = b2sd_rank_check(&st->dist->rank,
                           rec->present & B2S_WIRE_REC_FRAME, rec->frame,
                           &owner, ed);
  const b2s_cluster_cfg *k = b2s_config_cluster(srv->cfg);
  if (rc == B2S_E_WRONG_RANK && owner < k->nranks) {
    size_t n = strlen(ed->text);
    snprintf(ed->text + n, sizeof ed->text - n, " (%s)", k->ranks[owner]);
  }
  return rc;
}

int b2sd_frame_check(b2sd_server *srv, b2sd_handle *h, const b2sd_rec *rec,
                     b2s_errdetail *ed) {
  b2s_errdetail_clear(ed);
  if (b2sd_stream_acq_admit(h->st) < 0)
    return b2s_errdetail_set(ed, B2S_E_NOT_ARMED, "no acquisition takes "
                             "frames on stream '%s'", h->st->name);
  if (h->st->dist) {
    int rc = rank_check(srv, h->st, rec, ed);
    if (rc == B2S_E_WRONG_RANK && !h->st->misrouted) {
      /* a producer with another rank list or frames_per_block: its
       * CLOSE must not end (and so close for good) the frame */
      h->st->misrouted = true;
      LOG_W("stream %s: a producer sends frames of other ranks (%s): its "
            "rank list or frames-per-block differ from the cluster's; the "
            "stream's next CLOSE sends no END", h->st->name, ed->text);
    }
    return rc;
  }
  if (!h->st->ordered)
    return 0;
  if (!(rec->present & B2S_WIRE_REC_FRAME))
    return b2s_errdetail_set(ed, B2S_E_ARG, "stream '%s' is stored in "
                             "frame-number order (order: frame_number): each "
                             "buffer needs a frame number", h->st->name);
  int rc = b2sd_window_check(&h->st->win, rec->frame);
  if (rc == B2S_E_ARG)
    b2s_errdetail_set(ed, rc, "frame number %llu is too far ahead of the "
                      "next one to store in stream '%s'",
                      (unsigned long long)rec->frame, h->st->name);
  return rc;
}

void b2sd_gap_put(b2sd_handle *h, uint32_t flags, size_t len, b2sd_rec *rec) {
  b2sd_stream *st = h->st;
  int64_t n = h->chunk_bytes ? h->chunk_bytes : (int64_t)len;
  b2sd_chunk *c = NULL;
  /* a distributed stream's gaps are the committer's: a frame number no
   * rank stored */
  if (!st->dist && b2sd_stream_ingest(st)->fills && n > 0 && n <= INT32_MAX)
    c = calloc(1, sizeof *c);
  if (!c) {
    b2sd_rec_clear(rec);
    return;
  }
  c->seq = st->seq_next++;
  c->gap = B2S_RECORD_GAP | flags;
  c->nbytes = (int32_t)n;
  c->rec = *rec;
  *rec = (b2sd_rec){0};
  order_take(st, &c->rec);
  b2sd_stream_put(st, c);
}

/* Give up a buffer's bytes that no job took. */
static void source_drop(b2sd_bufsrc *b) {
  if (b->seg)
    b2sd_seg_give_back(b->seg, b->slot);
  b2sd_rec_clear(&b->rec);
}

int b2sd_rec_take(bool flagged, zmq_msg_t *frame,
                  b2sd_rec *out) {
  *out = (b2sd_rec){0};
  if (!flagged)
    return frame ? B2S_E_PROTO : 0;
  if (!frame)
    return B2S_E_PROTO;
  const uint8_t *buf = zmq_msg_data(frame);
  size_t len = zmq_msg_size(frame);
  b2s_wire_rec r;
  int n = b2s_wire_rec_decode(buf, len, &r);
  if (n < 0 || (size_t)n != len || b2s_wire_rec_check_producer(&r) < 0)
    return B2S_E_PROTO;
  if (r.user_len) {
    out->user = malloc(r.user_len);
    if (!out->user)
      return B2S_E_NOMEM;
    memcpy(out->user, r.user, r.user_len);
  }
  out->present = r.present;
  out->user_len = r.user_len;
  out->frame = r.frame;
  out->ts = r.ts_ns;
  return 0;
}

void b2sd_buffer_accept(b2sd_server *srv, b2sd_handle *h,
                        const b2s_wire_msg *m, uint64_t id, b2sd_bufsrc *b) {
  b2sd_stream *st = h->st;
  const b2sd_ingest_cfg *cfg = b2sd_stream_ingest(st);
  /* relaxed: the memory bound is approximate by at most one buffer per
   * worker; pairs with the fetch_sub in b2sd_job_free */
  int64_t inflight =
      atomic_load_explicit(&srv->inflight_bytes, memory_order_relaxed);
  size_t plen = b->len;
  bool full = b2sd_pool_stream_queued(srv->pool, st) >=
                  (size_t)cfg->queue_depth ||
              (!b->seg && inflight + (int64_t)plen > b2sd_memory_headroom(srv));
  if (full && cfg->backpressure == B2S_BP_DROP_NEWEST) {
    b2sd_gap_put(h, B2S_RECORD_DROPPED, plen, &b->rec);
    source_drop(b);
    b2sd_ledger_push(&h->lg, B2SD_ENTRY_DROPPED, 0);
    send_dropped(srv, h, id, B2S_WIRE_POLICY_DROP_NEWEST);
    return;
  }
  if (full && cfg->backpressure == B2S_BP_DROP_OLDEST)
    drop_oldest(srv, st);
  b2sd_job *j = calloc(1, sizeof *j);
  if (!j || b2sd_ledger_push(&h->lg, B2SD_ENTRY_QUEUED, st->seq_next) < 0) {
    free(j);
    b2sd_gap_put(h, B2S_RECORD_REJECTED, plen, &b->rec);
    source_drop(b);
    h->lg.next_id = id;           /* undo: reject instead */
    b2sd_buffer_reject(srv, h, m, id, B2S_E_NOMEM, NULL);
    return;
  }
  j->st = st;
  j->seq = st->seq_next++;
  j->cparams = cfg->cparams;
  if (cfg->backpressure == B2S_BP_BLOCK)
    j->credit_batch =
        cfg->queue_depth >= 8 ? (uint32_t)cfg->queue_depth / 4 : 1;
  if (b->seg) {
    j->is_shm = true;
    j->seg = b->seg;
    j->slot = b->slot;
    j->data = b->data;
    b2sd_seg_ref(b->seg);
  } else {
    zmq_msg_init(&j->msg);
    zmq_msg_move(&j->msg, b->msg);
    j->data = zmq_msg_data(&j->msg);
    /* relaxed: see the load above */
    atomic_fetch_add_explicit(&srv->inflight_bytes, (int64_t)plen,
                              memory_order_relaxed);
  }
  j->len = plen;
  j->session_id = h->sess->id;
  j->handle_id = h->id;
  j->buffer_id = id;
  j->fill_gaps = cfg->fills;
  j->rec = b->rec;
  b->rec = (b2sd_rec){0};
  order_take(st, &j->rec);
  /* relaxed: statistics counters */
  atomic_fetch_add_explicit(&st->st_buffers_in, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&st->st_bytes_in, plen, memory_order_relaxed);
  b2sd_pool_push(srv->pool, &j);
}

bool b2sd_leaves_gap(int code) {
  return code == B2S_E_OVERSIZE || code == B2S_E_CHUNK_SIZE;
}

void b2sd_data_msg(b2sd_server *srv, b2sd_session *s, const b2s_wire_msg *m,
                   zmq_msg_t *payload, zmq_msg_t *recf) {
  uint64_t id = m->data.buffer_id;
  b2sd_handle *h = b2sd_buffer_admit(srv, s, m, m->data.handle, id);
  if (!h)
    return;
  size_t plen = payload ? zmq_msg_size(payload) : 0;
  b2sd_bufsrc b = {.msg = payload, .len = plen};
  /* the record first: a refused buffer's gap keeps its frame number */
  b2s_errdetail why;
  b2s_errdetail_clear(&why);
  int rc = b2sd_rec_take(m->flags & B2S_WIRE_DATA_RECORD, recf, &b.rec);
  if (rc == 0)
    rc = b2sd_frame_check(srv, h, &b.rec, &why);
  if (rc == 0)
    rc = b2s_wire_check_payload(m, plen, (size_t)srv->dcfg.max_buffer);
  if (rc == 0 && (h->closing || srv->draining))
    rc = B2S_E_CLOSED;
  if (rc < 0) {
    if (b2sd_leaves_gap(rc))
      b2sd_gap_put(h, B2S_RECORD_REJECTED, plen, &b.rec);
    b2sd_rec_clear(&b.rec);
    b2sd_buffer_reject(srv, h, m, id, rc, why.text);
    return;
  }
  if (!b2sd_buffer_size_ok(srv, h, m, id, plen)) {
    b2sd_gap_put(h, B2S_RECORD_REJECTED, plen, &b.rec);
    return;
  }
  b.data = zmq_msg_data(payload);
  b2sd_buffer_accept(srv, h, m, id, &b);
}

/* Whether h is its stream's last producer not yet closing: a handle
 * stays listed after its CLOSE until CLOSED goes out, and two producers
 * closing at once must not each take the other for one still open. */
static bool last_open_producer(const b2sd_handle *h) {
  for (const b2sd_handle *o = h->st->handles; o; o = o->next_st)
    if (o != h && !o->closing)
      return false;
  return true;
}

void b2sd_flush_close_msg(b2sd_server *srv, b2sd_session *s,
                           const b2s_wire_msg *m) {
  uint32_t hid = m->type == B2S_WIRE_FLUSH ? m->flush.handle : m->close.handle;
  b2sd_handle *h = b2sd_handle_find(s, hid);
  if (!h || h->closing) {
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = B2S_E_CLOSED, .ref_type = m->type,
        .ref_id = hid});
    return;
  }
  if (m->type == B2S_WIRE_CLOSE) {
    if (last_open_producer(h)) {
      b2sd_stream_drain_mark(h->st);
      b2sd_misrouted_end(h->st);
    }
    h->closing = true;
    h->close_tag = m->tag;
    h->close_upto = h->lg.next_id;
    return;
  }
  if (h->nflush == B2SD_MAX_FLUSHES) {
    b2sd_send_error(srv, s, &(b2sd_errreply){
        .tag = m->tag, .code = B2S_E_BUSY, .ref_type = m->type, .ref_id = hid,
        .text = B2SD_STR(B2SD_MAX_FLUSHES)
        " FLUSHes already wait on this handle, the limit"});
    return;
  }
  b2sd_stream_drain_mark(h->st);  /* held frame numbers are stored */
  b2sd_flush *f = &h->flushes[h->nflush++];
  f->tag = m->tag;
  f->upto = h->lg.next_id;
  f->seq = h->st->seq_next;
  b2sd_stream_flush(h->st, f->seq);
}

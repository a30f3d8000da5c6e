/* The metrics snapshot (metrics.h), taken by the I/O thread: it alone may
 * walk the stream list and the sessions, and it reads the writers' and
 * workers' figures through relaxed loads, as STATS does (stats.c), so
 * taking one never waits for a writer.  The one lock it takes is the job
 * FIFO's (a leaf, held for a count), as STATS and every DATA do. */
#include "msnap.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "live.h"
#include "progress.h"
#include "segment.h"
#include "session.h"
#include "source_s2.h"
#include "metrics.h"
#include "stream.h"
#include "workers.h"

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static const char *format_name(int32_t f) {
  switch (f) {
  case B2S_FORMAT_CONTIGUOUS: return "contiguous";
  case B2S_FORMAT_SPARSE: return "sparse";
  case B2S_FORMAT_DISTRIBUTED: return "distributed";
  default: return "unknown";
  }
}

static void copy_name(char *dst, size_t n, const char *src) {
  size_t l = strnlen(src, n - 1);
  memcpy(dst, src, l);
  dst[l] = '\0';
}

static void take_stream(b2sd_server *srv, b2sd_stream *st, b2sd_mstream *m,
                        b2sd_msnap *s) {
  /* the settings without the stream's lock: only this thread writes them
   * (reload), so its own reads need none, and the writer is never kept
   * waiting by a snapshot */
  const b2s_stream_cfg *cfg = &st->cfg;
  copy_name(m->name, sizeof m->name, st->name);
  copy_name(m->path, sizeof m->path, st->path);
  m->format = format_name(cfg->format);
  /* the shape of a stream whose frame is a file (a distributed stream's
   * chunks are objects: no thumbnail) */
  if (cfg->b2nd.enabled && cfg->b2nd.ndim <= 8 &&
      cfg->format != B2S_FORMAT_DISTRIBUTED) {
    m->ndim = cfg->b2nd.ndim;
    for (int i = 0; i < m->ndim; i++)
      m->chunkshape[i] = cfg->b2nd.chunkshape[i];
    copy_name(m->dtype, sizeof m->dtype, cfg->b2nd.dtype);
  }
  /* relaxed loads: statistics (pair with the relaxed increments) */
  m->buffers_in = LD(st->st_buffers_in);
  m->bytes_in = LD(st->st_bytes_in);
  m->bytes_out = LD(st->st_bytes_out);
  m->chunks = LD(st->st_chunks);
  m->commits = LD(st->st_commits);
  uint64_t drops = LD(st->st_drops);
  m->drops_oldest = LD(st->st_drops_oldest);
  m->drops_newest = drops > m->drops_oldest ? drops - m->drops_oldest : 0;
  m->rejected = LD(st->st_rejected);
  m->gaps = LD(st->st_gaps);
  m->errors = LD(st->st_errors);
  m->slow_calls = LD(st->st_slow_calls);
  m->queued = b2sd_pool_stream_queued(srv->pool, st);
  m->queue_limit = cfg->queue_depth;
  b2sd_progress p;
  b2sd_progress_load(st, &p);
  m->backlog = st->seq_next > p.written ? st->seq_next - p.written : 0;
  m->committed = b2sd_progress_committed_stat(st);
  m->last_commit_ns = LD(st->st_last_commit_ns);
  m->failed = p.failed;
  if (p.failed)
    copy_name(m->fail_reason, sizeof m->fail_reason,
              st->fail_reason[0] ? st->fail_reason : b2s_strerror(p.failed));
  b2sd_hist_read(&st->st_commit_hist, &m->commit);
  b2sd_hist_read(&st->st_notify_hist, &m->notify);
  for (b2sd_handle *h = st->handles; h; h = h->next_st)
    if (h->seg) {
      s->shm_segments++;
      s->shm_slots += b2s_shm_nslots(h->seg->shm);
    }
}

static void take_sources(b2sd_server *srv, b2sd_msnap *snap) {
  size_t n = b2sd_sources_count(srv);
  for (size_t i = 0; i < n && i < B2SD_MSOURCES_MAX; i++) {
    b2sd_source_counts c;
    b2sd_source_counts_get(srv, i, &c);
    b2sd_msource *m = &snap->sources[snap->nsources++];
    snprintf(m->endpoint, sizeof m->endpoint, "%s", c.endpoint);
    m->kind = c.kind;
    m->messages = c.messages;
    m->images = c.images;
    m->refused = c.refused;
    m->unknown_series = c.unknown_series;
    m->series = c.series;
    m->series_timed_out = c.series_timed_out;
    m->series_open = c.series_open;
  }
}

b2sd_msnap *b2sd_msnap_take(b2sd_server *srv, uint64_t start_ns) {
  b2sd_msnap *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->streams = calloc(srv->nstreams ? srv->nstreams : 1, sizeof *s->streams);
  if (!s->streams) {
    free(s);
    return NULL;
  }
  s->taken_ns = b2sd_wall_ns();
  s->start_ns = start_ns;
  s->version = B2SD_VERSION;
  s->workers = srv->nworkers;
  s->sessions = srv->nsessions;
  s->sessions_reclaimed = srv->sessions_reclaimed;
  s->connections = srv->connections;
  s->accept_failed = srv->accept_failed;
  s->limit_refused = srv->limit_refused;
  s->queued = b2sd_pool_queued(srv->pool);
  s->inflight_bytes = LD(srv->inflight_bytes);
  s->shm_bytes = LD(srv->shm_bytes);
  s->stage_bytes = LD(srv->stage_bytes);
  s->memory_limit = srv->dcfg.memory_limit;
  s->draining = srv->draining;
  b2sd_live_counts(srv->live, &s->live_frames, &s->live_dropped);
  s->disk_free = s->disk_size = -1;
  s->fd_open = s->fd_limit = -1;
  for (b2sd_stream *st = srv->streams; st && s->nstreams < srv->nstreams;
       st = st->next)
    take_stream(srv, st, &s->streams[s->nstreams++], s);
  take_sources(srv, s);
  return s;
}

void b2sd_msnap_free(b2sd_msnap *s) {
  if (!s)
    return;
  free(s->streams);
  free(s);
}

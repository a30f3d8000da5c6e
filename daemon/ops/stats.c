/* Statistics as JSON for STATS_REPLY (and `b2stream stats`).
 *
 * {"daemon": {...}, "streams": {"name": {...}, ...}}; counters are relaxed
 * atomics bumped by the workers and writers, so a reply is a snapshot of
 * values that may be a few buffers apart. */
#define _GNU_SOURCE
#include "session.h"
#include "fdheadroom.h"
#include "progress.h"
#include "source_s2.h"
#include "hist.h"
#include "acqfile.h"
#include "stream.h"
#include "workers.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jbuf {
  char *p;
  size_t len, cap;
  bool oom;
} jbuf;

static void jp(jbuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0,
                      fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = true;
      return;
    }
    if (b->p && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    size_t ncap = (b->cap + (size_t)n + 1) * 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

/* A JSON string body: quotes, backslashes and control bytes escaped. */
static void jstr(jbuf *b, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      jp(b, "\\%c", c);
    else if (c < 0x20)
      jp(b, "\\u%04x", c);
    else
      jp(b, "%c", c);
  }
}

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static void jdims64(jbuf *b, const char *key, const int64_t *v, int n) {
  jp(b, "\"%s\":[", key);
  for (int i = 0; i < n; i++)
    jp(b, "%s%lld", i ? "," : "", (long long)v[i]);
  jp(b, "]");
}

static void jdims32(jbuf *b, const char *key, const int32_t *v, int n) {
  int64_t w[B2S_CONFIG_MAX_DIM];
  for (int i = 0; i < n; i++)
    w[i] = v[i];
  jdims64(b, key, w, n);
}

/* The stream's array description, so that a client on another host can
 * shape and check images: "b2nd":{shape (as configured: 0 grows),
 * chunkshape, blockshape, dtype}. */
static void b2nd_json(jbuf *b, b2sd_stream *st) {
  b2s_stream_cfg cfg;
  b2sd_stream_cfg_get(st, &cfg);
  const b2s_stream_b2nd *nd = &cfg.b2nd;
  int n = nd->ndim;
  if (!nd->enabled || n <= 0 || n > B2S_CONFIG_MAX_DIM)
    return;
  jp(b, ",\"b2nd\":{");
  jdims64(b, "shape", nd->shape, n);
  jp(b, ",");
  jdims32(b, "chunkshape", nd->chunkshape, n);
  jp(b, ",");
  jdims32(b, "blockshape", nd->blockshape, n);
  jp(b, ",\"dtype\":\"");
  jstr(b, nd->dtype);
  jp(b, "\"}");
}

/* The series map as META left it, msgpack in hex (JSON has no bytes):
 * only in the STATS of one stream, being up to 256 KiB. */
static void series_json(jbuf *b, const b2sd_stream *st) {
  jp(b, ",\"series_msgpack\":\"");
  for (size_t i = 0; i < st->series_len; i++)
    jp(b, "%02x", st->series[i]);
  jp(b, "\"");
}

static void stream_json(jbuf *b, b2sd_server *srv, b2sd_stream *st,
                        bool one) {
  /* relaxed loads: statistics only (pair with the relaxed increments) */
  uint64_t in = LD(st->st_bytes_in), out = LD(st->st_bytes_out);
  uint64_t commits = LD(st->st_commits);
  jp(b, "\"%s\":{\"path\":\"", st->name);
  jstr(b, st->path);
  jp(b, "\",\"buffers_in\":%llu,\"bytes_in\":%llu,"
        "\"chunks_out\":%llu,\"bytes_out\":%llu,\"ratio\":%.3f,"
        "\"drops\":%llu,\"queue_depth\":%zu,\"committed\":%lld,"
        "\"commits\":%llu,\"commit_latency_avg_us\":%.1f,"
        "\"commit_latency_max_us\":%.1f,\"notifies\":%llu,"
        "\"notify_latency_p50_us\":%.1f,\"notify_latency_p99_us\":%.1f,"
        "\"notify_latency_max_us\":%.1f,\"slow_disk_calls\":%llu,"
        "\"errors\":%llu,\"failed\":%d,\"images_rewritten\":%llu,"
        "\"images_patched\":%llu,\"images_recompressed\":%llu,"
        "\"images_refused\":%llu",
     (unsigned long long)LD(st->st_buffers_in),
     (unsigned long long)in, (unsigned long long)LD(st->st_chunks),
     (unsigned long long)out, out ? (double)in / (double)out : 0.0,
     (unsigned long long)LD(st->st_drops),
     b2sd_pool_stream_queued(srv->pool, st), (long long)b2sd_progress_committed_stat(st),
     (unsigned long long)commits,
     commits ? (double)LD(st->st_commit_ns_total) / (double)commits / 1e3 : 0.0,
     (double)LD(st->st_commit_ns_max) / 1e3,
     (unsigned long long)st->notify_lat.n,
     b2sd_latency_quantile_us(&st->notify_lat, 0.5),
     b2sd_latency_quantile_us(&st->notify_lat, 0.99),
     (double)st->notify_lat.max_ns / 1e3,
     (unsigned long long)LD(st->st_slow_calls),
     (unsigned long long)LD(st->st_errors), b2sd_progress_failed_stat(st),
     (unsigned long long)LD(st->st_h5_path[B2S_H5_VERBATIM]),
     (unsigned long long)LD(st->st_h5_path[B2S_H5_PATCHED]),
     (unsigned long long)LD(st->st_h5_path[B2S_H5_RECOMPRESSED]),
     (unsigned long long)LD(st->st_h5_failed));
  /* why, for a failed stream (fail_reason: I/O thread, as STATS) */
  int failed = b2sd_progress_failed_stat(st);
  if (failed) {
    jp(b, ",\"error\":\"");
    jstr(b, st->fail_reason[0] ? st->fail_reason : b2s_strerror(failed));
    jp(b, "\"");
  }
  /* acquisitions (docs/ACQUISITIONS.md 13): the id taking its frames */
  if (st->acq_only) {
    jp(b, ",\"acquisition\":");
    if (st->acq_plan && st->acq_taking)
      jp(b, "\"%s\"", st->acq_plan->id);   /* an id: no escaping needed */
    else
      jp(b, "null");
    jp(b, ",\"refused_unarmed\":%llu",
       (unsigned long long)LD(st->st_refused_unarmed));
  }
  b2nd_json(b, st);
  if (one)
    series_json(b, st);
  jp(b, "}");
}

char *b2sd_stats_json(b2sd_server *srv, b2sd_stream *only) {
  jbuf b = {0};
  size_t nsess = 0;
  char *src = b2sd_sources_json(srv);
  for (b2sd_session *s = srv->sessions; s; s = s->next)
    nsess++;
  jp(&b, "{\"daemon\":{\"version\":\"%s\",\"workers\":%d,\"streams\":%zu,"
         "\"sessions\":%zu,\"sessions_reclaimed\":%llu,"
         "\"connections\":%llu,\"accept_failed\":%llu,"
         "\"limit_refused\":%llu,\"fd_open\":%ld,\"fd_limit\":%ld,"
         "\"queued\":%zu,\"inflight_bytes\":%lld,"
         "\"shm_bytes\":%lld,\"stage_bytes\":%lld,"
         "\"memory_limit\":%lld,\"draining\":%s,\"sources\":%s},"
         "\"streams\":{",
     B2SD_VERSION, srv->nworkers, srv->nstreams, nsess,
     (unsigned long long)srv->sessions_reclaimed,
     (unsigned long long)srv->connections,
     (unsigned long long)srv->accept_failed,
     (unsigned long long)srv->limit_refused, b2sd_fd_open(), b2sd_fd_limit(),
     b2sd_pool_queued(srv->pool),
     (long long)LD(srv->inflight_bytes), (long long)LD(srv->shm_bytes),
     (long long)LD(srv->stage_bytes), (long long)srv->dcfg.memory_limit,
     srv->draining ? "true" : "false", src ? src : "[]");
  free(src);
  bool first = true;
  for (b2sd_stream *st = srv->streams; st; st = st->next) {
    if (only && st != only)
      continue;
    if (!first)
      jp(&b, ",");
    first = false;
    stream_json(&b, srv, st, only != NULL);
  }
  jp(&b, "}}");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

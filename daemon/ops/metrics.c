/* The texts of a metrics snapshot (metrics.h): Prometheus exposition
 * format and the status page's JSON.  Pure: input to text. */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- histograms ---------------------------------------------------------- */

/* the edges of hist.c as Prometheus `le` labels, written once, exactly */
static const char *const edge_text[B2SD_HIST_EDGES] = {
  "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
  "0.025", "0.05", "0.1", "0.25", "1"};

/* ---- text buffer ------------------------------------------------------------ */

void b2sd_text_printf(b2sd_text *t, const char *fmt, ...) {
  if (t->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->p ? t->cap - t->len : 0;
    int n = vsnprintf(t->p ? t->p + t->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->oom = true;
      return;
    }
    if ((size_t)n < room) {
      t->len += (size_t)n;
      return;
    }
    size_t ncap = (t->cap + (size_t)n + 1) * 2;
    char *np = realloc(t->p, ncap);
    if (!np) {
      t->oom = true;
      return;
    }
    t->p = np;
    t->cap = ncap;
  }
}

void b2sd_text_free(b2sd_text *t) {
  free(t->p);
  *t = (b2sd_text){0};
}

/* ---- Prometheus -------------------------------------------------------------- */

/* A label value: backslash, double quote and newline escaped. */
static void label(b2sd_text *t, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == '"')
      b2sd_text_printf(t, "\\%c", *s);
    else if (*s == '\n')
      b2sd_text_printf(t, "\\n");
    else
      b2sd_text_printf(t, "%c", *s);
  }
}

static void family(b2sd_text *t, const char *name, const char *type,
                   const char *help) {
  b2sd_text_printf(t, "# HELP b2stream_%s %s\n# TYPE b2stream_%s %s\n", name,
                   help, name, type);
}

static void gauge_i(b2sd_text *t, const char *name, const char *help,
                    int64_t v) {
  family(t, name, "gauge", help);
  b2sd_text_printf(t, "b2stream_%s %lld\n", name, (long long)v);
}

static void counter(b2sd_text *t, const char *name, const char *help,
                    uint64_t v) {
  family(t, name, "counter", help);
  b2sd_text_printf(t, "b2stream_%s %llu\n", name, (unsigned long long)v);
}

static void daemon_metrics(const b2sd_msnap *s, b2sd_text *t) {
  family(t, "build_info", "gauge", "The daemon's version; always 1.");
  b2sd_text_printf(t, "b2stream_build_info{version=\"");
  label(t, s->version);
  b2sd_text_printf(t, "\"} 1\n");
  family(t, "start_time_seconds", "gauge",
         "When the daemon started, seconds since the Unix epoch.");
  b2sd_text_printf(t, "b2stream_start_time_seconds %.3f\n",
                   (double)s->start_ns / 1e9);
  gauge_i(t, "workers", "Compression threads.", s->workers);
  gauge_i(t, "streams", "Streams open.", (int64_t)s->nstreams);
  gauge_i(t, "sessions", "Client sessions open.", (int64_t)s->sessions);
  counter(t, "sessions_reclaimed_total", "Sessions ended without BYE "
          "(peer gone, producer dead, silent past its timeout).",
          s->sessions_reclaimed);
  gauge_i(t, "connections", "Peer connections open.", (int64_t)s->connections);
  counter(t, "connections_refused_total", "Connections closed at once for "
          "want of file descriptors.", s->accept_failed);
  counter(t, "limit_refused_total", "HELLOs and OPENs refused by "
          "max_sessions, max_streams or the descriptor reserve.",
          s->limit_refused);
  gauge_i(t, "open_fds", "File descriptors open.", s->fd_open);
  gauge_i(t, "max_fds", "File descriptor limit.", s->fd_limit);
  gauge_i(t, "queued_jobs", "Buffers waiting for a worker, all streams.",
          (int64_t)s->queued);
  family(t, "memory_used_bytes", "gauge", "Memory counted against "
         "memory_limit, by kind: buffers and chunks in flight, shared-memory "
         "segments, direct-I/O stages.");
  const char *kinds[] = {"inflight", "shm", "stage"};
  int64_t used[] = {s->inflight_bytes, s->shm_bytes, s->stage_bytes};
  for (int i = 0; i < 3; i++)
    b2sd_text_printf(t, "b2stream_memory_used_bytes{kind=\"%s\"} %lld\n",
                     kinds[i], (long long)used[i]);
  gauge_i(t, "memory_limit_bytes", "The configured memory_limit.",
          s->memory_limit);
  gauge_i(t, "shm_segments", "Shared-memory segments of producers.",
          (int64_t)s->shm_segments);
  gauge_i(t, "shm_slots", "Slots of those segments.", (int64_t)s->shm_slots);
  gauge_i(t, "data_dir_free_bytes", "Bytes available to the daemon in the "
          "file system of data_dir (-1: unknown).", s->disk_free);
  gauge_i(t, "data_dir_size_bytes", "Size of the file system of data_dir "
          "(-1: unknown).", s->disk_size);
  gauge_i(t, "draining", "1 while the daemon drains to stop.", s->draining);
  counter(t, "http_requests_total", "HTTP requests answered.",
          s->http_requests);
  counter(t, "live_frames_total", "Frames decoded for the live view.",
          s->live_frames);
  counter(t, "live_dropped_total", "Live view messages a full PUB "
          "subscriber did not get.", s->live_dropped);
}

/* Per-stream scalars, one family each. */
typedef struct smetric {
  const char *name, *type, *help;
  size_t off;
  bool is_signed;
} smetric;

#define U(f) offsetof(b2sd_mstream, f), false
#define I(f) offsetof(b2sd_mstream, f), true
static const smetric smetrics[] = {
  {"stream_buffers_in_total", "counter", "Buffers accepted.", U(buffers_in)},
  {"stream_bytes_in_total", "counter", "Bytes of the buffers accepted.",
   U(bytes_in)},
  {"stream_bytes_out_total", "counter", "Compressed bytes written.",
   U(bytes_out)},
  {"stream_chunks_total", "counter", "Chunks written.", U(chunks)},
  {"stream_commits_total", "counter", "Frame commits.", U(commits)},
  {"stream_rejected_total", "counter", "Buffers refused (ERROR).",
   U(rejected)},
  {"stream_gaps_total", "counter", "Gap records written for buffers that "
   "did not reach the frame.", U(gaps)},
  {"stream_errors_total", "counter", "Compression and write errors.",
   U(errors)},
  {"stream_slow_disk_calls_total", "counter", "Disk calls slower than "
   "slow_disk_ms.", U(slow_calls)},
  {"stream_queue_depth", "gauge", "Buffers waiting for a worker.", U(queued)},
  {"stream_queue_limit", "gauge", "The configured queue_depth.",
   I(queue_limit)},
  {"stream_backlog_buffers", "gauge", "Buffers accepted and not yet "
   "committed or dropped.", U(backlog)},
  {"stream_committed_chunks", "gauge", "Chunks in the frame.", I(committed)},
};
#undef U
#undef I

static void series_head(b2sd_text *t, const char *name,
                        const b2sd_mstream *st) {
  b2sd_text_printf(t, "b2stream_%s{stream=\"", name);
  label(t, st->name);
  b2sd_text_printf(t, "\"");
}

static void stream_scalars(const b2sd_msnap *s, b2sd_text *t) {
  for (size_t m = 0; m < sizeof smetrics / sizeof smetrics[0]; m++) {
    const smetric *d = &smetrics[m];
    family(t, d->name, d->type, d->help);
    for (size_t i = 0; i < s->nstreams; i++) {
      const char *f = (const char *)&s->streams[i] + d->off;
      series_head(t, d->name, &s->streams[i]);
      if (d->is_signed)
        b2sd_text_printf(t, "} %lld\n", (long long)*(const int64_t *)f);
      else
        b2sd_text_printf(t, "} %llu\n", (unsigned long long)*(const uint64_t *)f);
    }
  }
}

static void stream_labelled(const b2sd_msnap *s, b2sd_text *t) {
  family(t, "stream_dropped_total", "counter",
         "Buffers dropped by backpressure, by policy.");
  for (size_t i = 0; i < s->nstreams; i++) {
    const b2sd_mstream *st = &s->streams[i];
    series_head(t, "stream_dropped_total", st);
    b2sd_text_printf(t, ",policy=\"drop-newest\"} %llu\n",
                     (unsigned long long)st->drops_newest);
    series_head(t, "stream_dropped_total", st);
    b2sd_text_printf(t, ",policy=\"drop-oldest\"} %llu\n",
                     (unsigned long long)st->drops_oldest);
  }
  family(t, "stream_state", "gauge", "1 for the stream's state: writing, "
         "or failed (its frame cannot be written).");
  for (size_t i = 0; i < s->nstreams; i++) {
    const b2sd_mstream *st = &s->streams[i];
    series_head(t, "stream_state", st);
    b2sd_text_printf(t, ",state=\"writing\"} %d\n", st->failed == 0);
    series_head(t, "stream_state", st);
    b2sd_text_printf(t, ",state=\"failed\"} %d\n", st->failed != 0);
  }
  family(t, "stream_last_commit_timestamp_seconds", "gauge",
         "When the stream last committed, seconds since the Unix epoch "
         "(0: not since the start).");
  for (size_t i = 0; i < s->nstreams; i++) {
    series_head(t, "stream_last_commit_timestamp_seconds", &s->streams[i]);
    b2sd_text_printf(t, "} %.3f\n", (double)s->streams[i].last_commit_ns / 1e9);
  }
}

static void histogram(b2sd_text *t, const char *name, const char *help,
                      const b2sd_msnap *s, size_t hoff) {
  family(t, name, "histogram", help);
  char bucket[96];
  snprintf(bucket, sizeof bucket, "%s_bucket", name);
  for (size_t i = 0; i < s->nstreams; i++) {
    const b2sd_mstream *st = &s->streams[i];
    const b2sd_mhist *h = (const b2sd_mhist *)((const char *)st + hoff);
    uint64_t cum = 0;
    for (int e = 0; e <= B2SD_HIST_EDGES; e++) {
      cum += h->bucket[e];
      series_head(t, bucket, st);
      b2sd_text_printf(t, ",le=\"%s\"} %llu\n",
                       e < B2SD_HIST_EDGES ? edge_text[e] : "+Inf",
                       (unsigned long long)cum);
    }
    b2sd_text_printf(t, "b2stream_%s_sum{stream=\"", name);
    label(t, st->name);
    b2sd_text_printf(t, "\"} %.9f\n", (double)h->sum_ns / 1e9);
    b2sd_text_printf(t, "b2stream_%s_count{stream=\"", name);
    label(t, st->name);
    b2sd_text_printf(t, "\"} %llu\n", (unsigned long long)cum);
  }
}

/* Per detector source, `source` (its endpoint) and `kind` labels. */
typedef struct srcmetric {
  const char *name, *type, *help;
  size_t off;
} srcmetric;

static const srcmetric srcmetrics[] = {
  {"source_messages_total", "counter", "Messages received from the "
   "detector.", offsetof(b2sd_msource, messages)},
  {"source_images_total", "counter", "Image messages taken (one per image, "
   "whatever its channels).", offsetof(b2sd_msource, images)},
  {"source_decode_failures_total", "counter", "Messages refused: malformed, "
   "of unknown kind or size, or an image that does not decode to its "
   "declared shape.", offsetof(b2sd_msource, refused)},
  {"source_unknown_series_total", "counter", "Images of a series no start "
   "message opened.", offsetof(b2sd_msource, unknown_series)},
  {"source_series_total", "counter", "Series started.",
   offsetof(b2sd_msource, series)},
  {"source_series_timed_out_total", "counter", "Series closed by the "
   "timeout, with no end message.", offsetof(b2sd_msource, series_timed_out)},
};

static void source_head(b2sd_text *t, const char *name,
                        const b2sd_msource *src) {
  b2sd_text_printf(t, "b2stream_%s{source=\"", name);
  label(t, src->endpoint);
  b2sd_text_printf(t, "\",kind=\"");
  label(t, src->kind ? src->kind : "");
  b2sd_text_printf(t, "\"}");
}

static void source_metrics(const b2sd_msnap *s, b2sd_text *t) {
  for (size_t m = 0; m < sizeof srcmetrics / sizeof srcmetrics[0]; m++) {
    const srcmetric *d = &srcmetrics[m];
    family(t, d->name, d->type, d->help);
    for (size_t i = 0; i < s->nsources; i++) {
      source_head(t, d->name, &s->sources[i]);
      b2sd_text_printf(t, " %llu\n", (unsigned long long)*(const uint64_t *)(
                                         (const char *)&s->sources[i] + d->off));
    }
  }
  family(t, "source_series_open", "gauge", "1 while a series is open.");
  for (size_t i = 0; i < s->nsources; i++) {
    source_head(t, "source_series_open", &s->sources[i]);
    b2sd_text_printf(t, " %d\n", s->sources[i].series_open);
  }
}

void b2sd_metrics_prometheus(const b2sd_msnap *s, b2sd_text *out) {
  daemon_metrics(s, out);
  stream_scalars(s, out);
  stream_labelled(s, out);
  histogram(out, "stream_commit_duration_seconds",
            "Time a frame commit takes (the records frame, then the data "
            "frame).", s, offsetof(b2sd_mstream, commit));
  histogram(out, "stream_notify_delay_seconds",
            "Time from a commit to the NOTIFY that announces it to "
            "followers.", s, offsetof(b2sd_mstream, notify));
  source_metrics(s, out);
}

/* ---- JSON for the status page ----------------------------------------------- */

static void jstr(b2sd_text *t, const char *s) {
  b2sd_text_printf(t, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      b2sd_text_printf(t, "\\%c", c);
    else if (c < 0x20)
      b2sd_text_printf(t, "\\u%04x", c);
    else
      b2sd_text_printf(t, "%c", c);
  }
  b2sd_text_printf(t, "\"");
}

static void stream_json(const b2sd_msnap *s, const b2sd_mstream *st,
                        b2sd_text *t) {
  jstr(t, st->name);
  b2sd_text_printf(t, ":{\"format\":");
  jstr(t, st->format ? st->format : "");
  b2sd_text_printf(t, ",\"buffers_in\":%llu,\"bytes_in\":%llu,"
                   "\"bytes_out\":%llu,\"chunks\":%llu,\"committed\":%lld,"
                   "\"dropped\":%llu,\"rejected\":%llu,\"gaps\":%llu,"
                   "\"errors\":%llu,\"queued\":%llu,\"queue_limit\":%lld,"
                   "\"backlog\":%llu,",
                   (unsigned long long)st->buffers_in,
                   (unsigned long long)st->bytes_in,
                   (unsigned long long)st->bytes_out,
                   (unsigned long long)st->chunks, (long long)st->committed,
                   (unsigned long long)(st->drops_newest + st->drops_oldest),
                   (unsigned long long)st->rejected,
                   (unsigned long long)st->gaps,
                   (unsigned long long)st->errors,
                   (unsigned long long)st->queued, (long long)st->queue_limit,
                   (unsigned long long)st->backlog);
  if (st->last_commit_ns && s->taken_ns >= st->last_commit_ns)
    b2sd_text_printf(t, "\"last_commit_age\":%.3f,",
                     (double)(s->taken_ns - st->last_commit_ns) / 1e9);
  else
    b2sd_text_printf(t, "\"last_commit_age\":null,");
  /* a thumbnail: b2nd chunks of two dimensions or more, at least one
   * committed */
  b2sd_text_printf(t, "\"thumbnail\":%s,\"failed\":%s,\"error\":",
                   st->ndim >= 2 && st->committed > 0 ? "true" : "false",
                   st->failed ? "true" : "false");
  jstr(t, st->fail_reason);
  b2sd_text_printf(t, "}");
}

void b2sd_metrics_json(const b2sd_msnap *s, b2sd_text *t) {
  b2sd_text_printf(t, "{\"time\":%.3f,\"version\":", (double)s->taken_ns / 1e9);
  jstr(t, s->version);
  b2sd_text_printf(t, ",\"sessions\":%llu,\"disk_free\":%lld,"
                   "\"disk_size\":%lld,\"memory_used\":%lld,"
                   "\"memory_limit\":%lld,\"streams\":{",
                   (unsigned long long)s->sessions, (long long)s->disk_free,
                   (long long)s->disk_size,
                   (long long)(s->inflight_bytes + s->shm_bytes +
                               s->stage_bytes),
                   (long long)s->memory_limit);
  for (size_t i = 0; i < s->nstreams; i++) {
    if (i)
      b2sd_text_printf(t, ",");
    stream_json(s, &s->streams[i], t);
  }
  b2sd_text_printf(t, "}}");
}

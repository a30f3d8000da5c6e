/* An acquisition as JSON (docs/ACQUISITIONS.md 9.5): its object, its
 * counters (5) and its file objects. */
#include "acqint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t b2sd_acq_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

const char *b2sd_acq_reason_name(int reason) {
  switch (reason) {
  case B2SD_END_STOP: return "stop";
  case B2SD_END_ABORT: return "abort";
  case B2SD_END_FRAMES: return "frames";
  case B2SD_END_FAILURE: return "failure";
  case B2SD_END_DAEMON_STOPPED: return "daemon_stopped";
  default: return NULL;
  }
}

void b2sd_acq_counts_get(const b2sd_acq *a, b2sd_acq_counts *c) {
  memset(c, 0, sizeof *c);
  const b2sd_acqplan *p = a->plan;
  bool live = a->st != NULL && a->state < B2SD_ACQ_DONE;
  bool last = a->st != NULL && a->st->acq_plan == a->plan;
  c->received = live ? a->st->acq_admitted : a->received;
  c->refused_after = last ? a->st->acq_refused_after : a->refused_after;
  /* relaxed: statistics, as STATS reads them */
  c->bytes_received =
      live ? atomic_load_explicit(&a->st->st_bytes_in, memory_order_relaxed) -
                 a->bytes_in0
           : a->bytes_received;
  if (!p || a->state == B2SD_ACQ_ARMED)
    return;                      /* 0 until writing is reported (5) */
  /* acquire: pairs with the writer's release stores (acqfile.c); committed
   * first, so that committed <= written holds in one answer */
  c->committed = atomic_load_explicit(&p->committed, memory_order_acquire);
  c->written = atomic_load_explicit(&p->written, memory_order_acquire);
  c->files = atomic_load_explicit(&p->files, memory_order_acquire);
  c->bytes_written = atomic_load_explicit(&p->bytes, memory_order_relaxed);
  c->gaps = atomic_load_explicit(&p->gaps, memory_order_relaxed);
  c->discarded = atomic_load_explicit(&p->discarded, memory_order_relaxed);
}

static void add_u(json_object *o, const char *k, uint64_t v) {
  json_object_object_add(o, k, json_object_new_uint64(v));
}

static void add_s(json_object *o, const char *k, const char *v) {
  json_object_object_add(o, k, v && v[0] ? json_object_new_string(v) : NULL);
}

static json_object *counters(const b2sd_acq_counts *c, bool channel) {
  json_object *o = json_object_new_object();
  add_u(o, "frames_received", c->received);
  add_u(o, "frames_written", c->written);
  add_u(o, "frames_committed", c->committed);
  add_u(o, "frames_dropped", 0);
  add_u(o, "frames_gaps", c->gaps);
  add_u(o, "frames_refused", 0);
  add_u(o, "frames_discarded", c->discarded);
  add_u(o, "frames_refused_after_end", c->refused_after);
  add_u(o, "bytes_received", c->bytes_received);
  add_u(o, "bytes_written", c->bytes_written);
  add_u(o, "files", c->files);
  json_object_object_add(o, "loss", json_object_new_boolean(c->gaps > 0));
  if (channel) {
    add_u(o, "gaps_never_came", 0);
    add_u(o, "refused_no_position", 0);
  }
  return o;
}

/* The positions file number k holds now (written counts the prefix). */
static uint64_t file_frames(const b2sd_acq *a, uint64_t k, uint64_t upto) {
  uint64_t first = b2s_acq_file_first(a->req.frames_per_file, k);
  if (upto <= first)
    return 0;
  uint64_t n = upto - first;
  uint32_t per = a->req.frames_per_file;
  return per && n > per ? per : n;
}

static const char *file_state(const b2sd_acq *a, uint64_t k, uint64_t files) {
  if (a->state >= B2SD_ACQ_DONE)
    return b2sd_acq_state_name(a->state);
  return k < files ? "finished" : "writing";
}

static json_object *file_object(const b2sd_acq *a, uint64_t k,
                                const b2sd_acq_counts *c) {
  char name[B2S_ACQ_FILE_NAME_MAX + 1], rec[B2S_ACQ_FILE_NAME_MAX + 16];
  char path[B2S_CONFIG_PATH_MAX + B2S_ACQ_FILE_NAME_MAX + 2];
  b2s_acq_namevals v = {.id = a->req.id, .stream = a->req.input_name,
                        .channel = "data"};
  if (b2s_acq_template_expand(&a->req.tmpl, &v, k, name, sizeof name) < 0)
    snprintf(name, sizeof name, "?");
  if (b2s_acq_records_name(name, rec, sizeof rec) < 0)
    snprintf(rec, sizeof rec, "?");
  snprintf(path, sizeof path, "%s/%s", a->req.directory, name);
  json_object *o = json_object_new_object();
  add_s(o, "channel", "data");
  add_u(o, "number", k);
  add_s(o, "name", name);
  add_s(o, "path", path);
  add_s(o, "records", rec);
  add_u(o, "first_frame", b2s_acq_file_first(a->req.frames_per_file, k));
  add_u(o, "frames", file_frames(a, k, c->written));
  add_u(o, "frames_committed", file_frames(a, k, c->committed));
  add_s(o, "state", file_state(a, k, c->files));
  json_object_object_add(o, "created_at", NULL);
  json_object_object_add(o, "finished_at", NULL);
  return o;
}

json_object *b2sd_acq_file_list(const b2sd_acq *a, uint64_t after, int limit,
                                bool *more) {
  b2sd_acq_counts c;
  b2sd_acq_counts_get(a, &c);
  json_object *arr = json_object_new_array();
  *more = false;
  for (uint64_t k = after + 1; k <= c.files; k++) {
    if ((int)json_object_array_length(arr) >= limit) {
      *more = true;
      break;
    }
    json_object_array_add(arr, file_object(a, k, &c));
  }
  return arr;
}

static json_object *channel(const b2sd_acq *a, const b2sd_acq_counts *c) {
  json_object *o = json_object_new_object();
  add_s(o, "name", "data");
  add_s(o, "stream", a->req.input_name);
  json_object_object_add(o, "frame", NULL);
  json_object_object_add(o, "counters", counters(c, true));
  bool current = c->files > 0 && a->state < B2SD_ACQ_DONE;
  json_object_object_add(o, "current_file",
                         current ? file_object(a, c->files, c) : NULL);
  add_u(o, "files_finished", current ? c->files - 1 : c->files);
  return o;
}

static json_object *error_obj(const b2sd_acq *a) {
  if (a->state != B2SD_ACQ_FAILED)
    return NULL;
  json_object *o = json_object_new_object();
  add_s(o, "code", b2s_acq_failure_name(a->fail) ? b2s_acq_failure_name(a->fail)
                                                 : "write_failed");
  add_s(o, "message", a->fail_msg[0] ? a->fail_msg : "the acquisition failed");
  return o;
}

static json_object *disk_obj(const b2sd_acq *a) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "free", json_object_new_int64(a->disk_free));
  json_object_object_add(o, "needed", json_object_new_int64(a->disk_needed));
  json_object_object_add(o, "floor", json_object_new_int64(a->disk_floor));
  json_object_object_add(o, "frame_bytes",
                         a->frame_bytes >= 0
                             ? json_object_new_int64(a->frame_bytes)
                             : NULL);
  json_object_object_add(o, "ratio", b2s_acq_json_double(a->ratio));
  return o;
}

json_object *b2sd_acq_object(const b2sd_acq *a, bool with_series) {
  b2sd_acq_counts c;
  b2sd_acq_counts_get(a, &c);
  json_object *o = json_object_new_object();
  add_s(o, "id", a->req.id);
  add_s(o, "state", b2sd_acq_state_name(a->state));
  json_object_object_add(o, "request", b2s_acq_request_json(&a->req,
                                                           with_series));
  add_s(o, "directory_resolved", a->resolved);
  json_object_object_add(o, "armed_at", b2s_acq_json_time(a->t_armed));
  json_object_object_add(o, "writing_at", b2s_acq_json_time(a->t_writing));
  json_object_object_add(o, "closing_at", b2s_acq_json_time(a->t_closing));
  json_object_object_add(o, "ended_at", b2s_acq_json_time(a->t_ended));
  add_s(o, "armed_by", a->armed_by);
  add_s(o, "stopped_by", a->stopped_by);
  add_s(o, "aborted_by", a->aborted_by);
  add_s(o, "end_reason", b2sd_acq_reason_name(a->reason));
  json_object_object_add(o, "error", error_obj(a));
  json_object_object_add(o, "counters", counters(&c, false));
  add_s(o, "counters_from", "daemon");
  json_object *chs = json_object_new_array();
  json_object_array_add(chs, channel(a, &c));
  json_object_object_add(o, "channels", chs);
  json_object_object_add(o, "source_series", NULL);
  json_object_object_add(o, "disk", disk_obj(a));
  return o;
}

void b2sd_acq_reply_json(int status, json_object *o, b2sd_acq_reply *out) {
  out->status = status;
  out->body = o ? b2s_acq_json_line(o) : NULL;
  json_object_put(o);
  if (!out->body) {
    out->status = 500;
    out->body = strdup("{\"error\":{\"code\":\"internal\",\"message\":"
                       "\"out of memory\",\"status\":500,\"field\":null}}");
  }
}

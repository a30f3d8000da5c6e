/* The acquisitions the daemon holds (registry.h): the arm in the order of
 * docs/ACQUISITIONS.md 6.1, the states of section 4 and the routes'
 * answers. */
#define _GNU_SOURCE
#include "acqint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b2s_meta.h"
#include "clock.h"
#include "segment.h"
#include "stream.h"

static const char *const state_names[B2SD_ACQ_NSTATES] = {
  "armed", "writing", "closing", "done", "aborted", "failed", "interrupted"};

const char *b2sd_acq_state_name(int s) {
  return s >= 0 && s < B2SD_ACQ_NSTATES ? state_names[s] : NULL;
}

int b2sd_acq_state_by_name(const char *name) {
  for (int i = 0; i < B2SD_ACQ_NSTATES; i++)
    if (strcmp(name, state_names[i]) == 0)
      return i;
  if (strcmp(name, "ended") == 0)
    return B2SD_ACQ_NSTATES;
  if (strcmp(name, "active") == 0)
    return B2SD_ACQ_NSTATES + 1;
  return -1;
}

static bool ended(const b2sd_acq *a) { return a->state >= B2SD_ACQ_DONE; }

b2sd_acqreg *b2sd_acq_new(b2sd_server *srv) {
  if (!srv->dcfg.acq.enabled)
    return NULL;
  b2sd_acqreg *r = calloc(1, sizeof *r);
  if (r)
    r->srv = srv;
  return r;
}

static void acq_free(b2sd_acq *a) {
  if (a->plan)
    free(a->plan->series);
  free(a->plan);
  b2s_acq_request_fini(&a->req);
  free(a);
}

void b2sd_acq_free(b2sd_acqreg *r) {
  if (!r)
    return;
  while (r->list) {
    b2sd_acq *a = r->list;
    r->list = a->next;
    acq_free(a);
  }
  free(r);
}

void b2sd_acq_set_hook(b2sd_acqreg *r, b2sd_acq_hook fn, void *arg) {
  if (!r)
    return;
  r->hook = fn;
  r->hook_arg = arg;
}

/* An event with the acquisition's object as its data. */
static void emit(b2sd_acqreg *r, const char *type, const b2sd_acq *a) {
  if (!r->hook)
    return;
  json_object *o = b2sd_acq_object(a, false);
  char *line = o ? b2s_acq_json_line(o) : NULL;
  json_object_put(o);
  if (line)
    r->hook(r->hook_arg, type, a->req.id, line);
  free(line);
}

void b2sd_acq_error(int code, const char *field, const char *msg,
                    b2sd_acq_reply *out) {
  b2s_acq_err e;
  b2s_acq_err_clear(&e);
  if (msg)
    b2s_acq_err_set(&e, code, field, "%s", msg);
  else
    b2s_acq_err_set(&e, code, field, NULL);
  out->status = b2s_acq_code_status(code);
  out->body = b2s_acq_err_json(&e);
}

static void reply_err(const b2s_acq_err *e, b2sd_acq_reply *out) {
  out->status = b2s_acq_code_status(e->code);
  out->body = b2s_acq_err_json(e);
}

static b2sd_acq *find(b2sd_acqreg *r, const char *id) {
  for (b2sd_acq *a = r->list; a; a = a->next)
    if (strcmp(a->req.id, id) == 0)
      return a;
  return NULL;
}

/* ---- arm ----------------------------------------------------------------- */

/* Checks 5 and 6: the input. */
static int check_input(b2sd_acqreg *r, b2sd_acq *a, b2s_acq_err *e) {
  if (a->req.input != B2S_ACQ_INPUT_STREAM)
    return b2s_acq_err_set(e, B2S_ACQ_E_INPUT_UNSUPPORTED, "input",
                           "source inputs are not served by this daemon yet");
  b2sd_stream *st = b2sd_stream_find(r->srv, a->req.input_name);
  if (!st)
    return b2s_acq_err_set(e, a->req.template_name[0]
                                  ? B2S_ACQ_E_NO_SUCH_INPUT
                                  : B2S_ACQ_E_NO_SUCH_INPUT, "input",
                           "no stream '%s' is configured%s",
                           a->req.input_name, a->req.template_name[0]
                               ? " (streams made from a template cannot be "
                                 "inputs yet)" : "");
  if (st->cfg.format == B2S_FORMAT_DISTRIBUTED)
    return b2s_acq_err_set(e, B2S_ACQ_E_INPUT_UNSUPPORTED, "input",
                           "stream '%s' is distributed", st->name);
  if (!st->acq_only)
    return b2s_acq_err_set(e, B2S_ACQ_E_INPUT_NOT_ACQUIRABLE, "input",
                           "stream '%s' is not acquisitions: only", st->name);
  if (b2sd_life_retiring(st->life) || st->life == B2SD_LIFE_FAILED)
    return b2s_acq_err_set(e, B2S_ACQ_E_INPUT_FAILED, "input",
                           "stream '%s' cannot write", st->name);
  int rc = b2s_acq_request_check_order(
      &a->req, st->cfg.order == B2S_ORDER_FRAME_NUMBER, e);
  if (rc < 0)
    return rc;
  for (b2sd_acq *o = r->list; o; o = o->next)
    if (o->st == st && !ended(o))
      return b2s_acq_err_set(e, B2S_ACQ_E_INPUT_BUSY, "input", "stream '%s' "
                             "is the input of acquisition %s", st->name,
                             o->req.id);
  a->st = st;
  return 0;
}

/* Check 10: free memory. */
static int check_memory(b2sd_acqreg *r, b2s_acq_err *e) {
  const b2s_daemon_cfg *d = &r->srv->dcfg;
  /* relaxed: approximate, as the ingest path reads it */
  int64_t used = atomic_load_explicit(&r->srv->inflight_bytes,
                                      memory_order_relaxed);
  int64_t free_b = d->memory_limit - used;
  if (free_b * 100 < d->memory_limit * d->acq.min_free_memory)
    return b2s_acq_err_set(e, B2S_ACQ_E_BUFFERS_SHORT, NULL, "%lld of "
                           "memory_limit's %lld bytes are free, under "
                           "min_free_memory %d %%", (long long)free_b,
                           (long long)d->memory_limit, d->acq.min_free_memory);
  return 0;
}

/* Check 12: room for one more, forgetting the oldest ended one. */
static int make_room(b2sd_acqreg *r, b2s_acq_err *e) {
  if (r->n < (size_t)r->srv->dcfg.acq.max_held)
    return 0;
  for (b2sd_acq **pp = &r->list; *pp; pp = &(*pp)->next)
    if (ended(*pp)) {
      b2sd_acq *a = *pp;
      *pp = a->next;
      if (a->st && a->st->acq_plan == a->plan)
        a->st->acq_plan = NULL;  /* the stream no longer counts for it */
      LOG_I("acquisition %s: forgotten (max_held); its files stay",
            a->req.id);
      acq_free(a);
      r->n--;
      return 0;
    }
  return b2s_acq_err_set(e, B2S_ACQ_E_TOO_MANY_ACQUISITIONS, NULL,
                         "%zu acquisitions are held and none has ended",
                         r->n);
}

/* Checks 7 to 12, in order. */
static int check_rest(b2sd_acqreg *r, b2sd_acq *a, bool *missing,
                      b2s_acq_err *e) {
  const b2s_daemon_cfg *d = &r->srv->dcfg;
  int rc = b2s_acq_request_check_directory(&a->req, e);
  if (rc == 0)
    rc = b2sd_acq_check_dir(d, a, missing, e);
  if (rc == 0 && a->req.overwrite == B2S_ACQ_REPLACE)
    rc = b2s_acq_err_set(e, B2S_ACQ_E_BAD_FIELD, "overwrite",
                         "overwrite: replace is not served by this daemon "
                         "yet");
  if (rc == 0 && !*missing)
    rc = b2sd_acq_check_names(a, e);
  if (rc == 0)
    rc = check_memory(r, e);
  if (rc == 0)
    rc = b2sd_acq_check_disk(d, a, e);
  if (rc == 0)
    rc = make_room(r, e);
  return rc;
}

/* The plan its writer gets: names, the series (the stream's defaults, then
 * the arm's). */
static int plan_make(b2sd_acq *a) {
  b2sd_acqplan *p = calloc(1, sizeof *p);
  if (!p)
    return B2S_E_NOMEM;
  a->plan = p;
  snprintf(p->dir, sizeof p->dir, "%s", a->resolved);
  p->tmpl = a->req.tmpl;
  snprintf(p->id, sizeof p->id, "%s", a->req.id);
  snprintf(p->stream, sizeof p->stream, "%.64s", a->req.input_name);
  snprintf(p->channel, sizeof p->channel, "data");
  snprintf(p->input, sizeof p->input, "stream:%.64s", a->req.input_name);
  b2s_acq_time_text(a->t_armed, p->armed_at, sizeof p->armed_at);
  p->frames_per_file = a->req.frames_per_file;
  p->frames = a->req.frames;
  p->fail_on_loss = a->req.on_loss == B2S_ACQ_LOSS_FAIL;
  b2s_mpbuf out;
  b2s_mpbuf_init(&out);
  int rc = b2s_series_merge(a->st->series, a->st->series_len,
                            a->req.series_mp, a->req.series_mp_len, &out);
  if (rc < 0)
    rc = b2s_series_merge(a->st->cfg.series, a->st->cfg.series_len,
                          a->req.series_mp, a->req.series_mp_len, &out);
  if (rc < 0) {
    b2s_mpbuf_fini(&out);
    return rc;
  }
  p->series = out.data;
  p->series_len = out.len;
  return 0;
}

/* Bind the input: from the next buffer on, its frames are ours. */
static int bind(b2sd_acqreg *r, b2sd_acq *a) {
  b2sd_stream *st = a->st;
  for (b2sd_acq *o = r->list; o; o = o->next)
    if (o->st == st && o->plan == st->acq_plan) {
      o->refused_after = st->acq_refused_after;   /* frozen: its last */
      o->st = NULL;
    }
  int rc = b2sd_stream_acq_mark(st, a->plan);
  if (rc < 0)
    return rc;
  st->acq_plan = a->plan;
  st->acq_taking = true;
  st->acq_admitted = 0;
  st->acq_limit = a->req.frames;
  st->acq_refused_after = 0;
  /* relaxed: a statistic */
  a->bytes_in0 = atomic_load_explicit(&st->st_bytes_in, memory_order_relaxed);
  return 0;
}

static void log_refusal(const char *id, const b2sd_acq_who *w,
                        const b2s_acq_err *e) {
  LOG_W("arm of %s by %s from %s refused: %s: %s", id[0] ? id : "?", w->who,
        w->from, b2s_acq_code_name(e->code), e->message);
}

/* Checks 3 and 4: draining; a held id (a repeated arm answers it). */
static bool check_held(b2sd_acqreg *r, const b2sd_acq *a, b2sd_acq_reply *out,
                       b2s_acq_err *e) {
  if (r->srv->draining) {
    b2s_acq_err_set(e, B2S_ACQ_E_DRAINING, NULL, "the daemon is stopping");
    return false;
  }
  b2sd_acq *o = find(r, a->req.id);
  if (!o)
    return true;
  const char *member = NULL;
  if (b2s_acq_request_compare(&o->req, &a->req, &member) == 0) {
    b2sd_acq_reply_json(200, b2sd_acq_object(o, true), out);
    return false;
  }
  b2s_acq_err_set(e, B2S_ACQ_E_ID_CONFLICT, member, "acquisition %s is "
                  "held with another %s", a->req.id, member ? member : "?");
  return false;
}

void b2sd_acq_arm(b2sd_acqreg *r, const char *body, size_t len,
                  const b2sd_acq_who *w, b2sd_acq_reply *out) {
  b2s_acq_err e;
  b2s_acq_err_clear(&e);
  b2sd_acq *a = calloc(1, sizeof *a);
  if (!a) {
    b2sd_acq_error(B2S_ACQ_E_INTERNAL, NULL, "out of memory", out);
    return;
  }
  b2s_acq_request_init(&a->req);
  a->t_armed = a->t_writing = a->t_closing = a->t_ended = -1;
  a->frame_bytes = -1;
  a->ratio = 1.0;
  bool missing = false;
  int rc = b2s_acq_request_parse(body, len, &a->req, &e);
  if (rc == -ENOMEM || rc == B2S_E_NOMEM)
    b2s_acq_err_set(&e, B2S_ACQ_E_INTERNAL, NULL, "out of memory");
  if (rc == 0 && !check_held(r, a, out, &e)) {
    rc = -1;
    if (out->body) {             /* a repeated arm */
      LOG_I("acquisition %s: armed again by %s from %s (same parameters)",
            a->req.id, w->who, w->from);
      acq_free(a);
      return;
    }
  }
  if (rc == 0)
    rc = check_input(r, a, &e);
  if (rc == 0)
    rc = check_rest(r, a, &missing, &e);
  if (rc == 0 && missing && (rc = b2sd_acq_make_dir(a)) < 0)
    b2s_acq_err_set(&e, B2S_ACQ_E_PERMISSION_DENIED, "directory",
                    "cannot create %s: %s", a->resolved, strerror(-rc));
  a->t_armed = b2sd_acq_now_us();
  if (rc == 0 && (rc = plan_make(a)) < 0)
    b2s_acq_err_set(&e, B2S_ACQ_E_BAD_SERIES, "series", "the series with the "
                    "stream's defaults breaks a metadata limit: %s",
                    b2s_strerror(rc));
  if (rc == 0 && (rc = bind(r, a)) < 0)
    b2s_acq_err_set(&e, B2S_ACQ_E_INTERNAL, NULL, "out of memory");
  if (rc < 0) {
    log_refusal(a->req.id, w, &e);
    reply_err(&e, out);
    acq_free(a);
    return;
  }
  snprintf(a->armed_by, sizeof a->armed_by, "%s", w->who);
  b2sd_acq **pp = &r->list;
  while (*pp)
    pp = &(*pp)->next;
  *pp = a;
  r->n++;
  LOG_I("acquisition %s: armed by %s from %s (stream %s -> %s, %llu frames)",
        a->req.id, w->who, w->from, a->req.input_name, a->resolved,
        (unsigned long long)a->req.frames);
  emit(r, "armed", a);
  snprintf(out->location, sizeof out->location, "/api/v1/acquisitions/%s",
           a->req.id);
  b2sd_acq_reply_json(201, b2sd_acq_object(a, true), out);
}

/* ---- the end ----------------------------------------------------------- */

/* To closing: the input takes no more frames, its writer gets the end. */
static void begin_closing(b2sd_acqreg *r, b2sd_acq *a, int reason) {
  a->state = B2SD_ACQ_CLOSING;
  a->reason = reason;
  a->t_closing = b2sd_acq_now_us();
  b2sd_stream *st = a->st;
  st->acq_taking = false;
  int code = reason == B2SD_END_ABORT     ? B2SD_ACQ_END_ABORTED
             : reason == B2SD_END_FAILURE ? B2SD_ACQ_END_FAILED
                                          : B2SD_ACQ_END_DONE;
  /* relaxed: the end chunk is put (under the stream's lock) after it */
  atomic_store_explicit(&a->plan->end_code, code, memory_order_relaxed);
  if (reason == B2SD_END_ABORT)
    /* release: pairs with the writer's acquire load */
    atomic_store_explicit(&a->plan->discard, true, memory_order_release);
  if (b2sd_stream_acq_mark(st, NULL) < 0)
    LOG_E("acquisition %s: out of memory for its end", a->req.id);
  emit(r, "closing", a);
}

/* The writer closed every file: the end state. */
static void finish(b2sd_acqreg *r, b2sd_acq *a) {
  b2sd_acq_counts c;
  b2sd_acq_counts_get(a, &c);
  /* acquire: pairs with the writer's release store */
  int failed = atomic_load_explicit(&a->plan->failed, memory_order_acquire);
  a->received = c.received;
  a->bytes_received = c.bytes_received;
  a->refused_after = c.refused_after;
  if (a->reason == B2SD_END_ABORT)
    a->state = B2SD_ACQ_ABORTED;
  else if (failed || a->reason == B2SD_END_FAILURE) {
    a->state = B2SD_ACQ_FAILED;
    if (!a->fail) {
      a->fail = B2S_ACQ_FAIL_WRITE_FAILED;
      snprintf(a->fail_msg, sizeof a->fail_msg, "%s", b2s_strerror(failed));
    }
  } else if (a->req.on_loss == B2S_ACQ_LOSS_FAIL && c.gaps > 0) {
    a->state = B2SD_ACQ_FAILED;
    a->fail = B2S_ACQ_FAIL_FRAMES_LOST;
    snprintf(a->fail_msg, sizeof a->fail_msg, "%llu positions are gaps",
             (unsigned long long)c.gaps);
  } else
    a->state = B2SD_ACQ_DONE;
  a->t_ended = b2sd_acq_now_us();
  LOG_I("acquisition %s: %s (%s): %llu frames committed in %llu files",
        a->req.id, b2sd_acq_state_name(a->state),
        b2sd_acq_reason_name(a->reason), (unsigned long long)c.committed,
        (unsigned long long)c.files);
  /* the stream keeps refusing (7.6), counting for this acquisition until
   * the next one is armed on it (bind) */
  emit(r, "end", a);
}

/* One acquisition's turn. */
static void step(b2sd_acqreg *r, b2sd_acq *a, uint64_t now) {
  b2sd_acqplan *p = a->plan;
  /* acquire: pairs with the writer's release stores (acqfile.c) */
  uint64_t files = atomic_load_explicit(&p->files, memory_order_acquire);
  int failed = atomic_load_explicit(&p->failed, memory_order_acquire);
  if (a->state == B2SD_ACQ_ARMED && files >= 1) {
    a->state = B2SD_ACQ_WRITING;
    a->t_writing = b2sd_acq_now_us();
    emit(r, "writing", a);
  }
  if (a->state <= B2SD_ACQ_WRITING && failed) {
    a->fail = files == 0 ? B2S_ACQ_FAIL_CREATE_FAILED
                         : B2S_ACQ_FAIL_WRITE_FAILED;
    snprintf(a->fail_msg, sizeof a->fail_msg, "%s", b2s_strerror(failed));
    begin_closing(r, a, B2SD_END_FAILURE);
  }
  if (a->state == B2SD_ACQ_WRITING && a->st->acq_limit &&
      a->st->acq_admitted >= a->st->acq_limit)
    begin_closing(r, a, B2SD_END_FRAMES);
  if (files > a->seen_files) {
    a->seen_files = files;
    emit(r, "file", a);
  }
  uint64_t committed = atomic_load_explicit(&p->committed,
                                            memory_order_acquire);
  uint64_t gap_ns = 1000000000u / (uint64_t)r->srv->dcfg.acq.progress_hz;
  if (committed != a->seen_committed && now - a->last_progress_ns >= gap_ns) {
    a->seen_committed = committed;
    a->last_progress_ns = now;
    emit(r, "progress", a);
  }
  /* acquire: the files are closed and marked before */
  if (a->state == B2SD_ACQ_CLOSING &&
      atomic_load_explicit(&p->ended, memory_order_acquire))
    finish(r, a);
}

void b2sd_acq_turn(b2sd_acqreg *r) {
  if (!r)
    return;
  uint64_t now = b2sd_now_ns();
  for (b2sd_acq *a = r->list; a; a = a->next)
    if (!ended(a) && a->st)
      step(r, a, now);
}

void b2sd_acq_stop(b2sd_acqreg *r, const char *id, bool abort,
                   const b2sd_acq_who *w, b2sd_acq_reply *out) {
  b2sd_acq *a = find(r, id);
  if (!a) {
    b2sd_acq_error(B2S_ACQ_E_NO_SUCH_ACQUISITION, NULL, NULL, out);
    return;
  }
  int status = 200;
  if (!ended(a) && a->state != B2SD_ACQ_CLOSING) {
    begin_closing(r, a, abort ? B2SD_END_ABORT : B2SD_END_STOP);
    status = 202;
  } else if (!ended(a) && abort && a->reason == B2SD_END_STOP) {
    /* an abort during a stop's closing makes it an abort (7.2) */
    a->reason = B2SD_END_ABORT;
    atomic_store_explicit(&a->plan->end_code, B2SD_ACQ_END_ABORTED,
                          memory_order_relaxed);
    atomic_store_explicit(&a->plan->discard, true, memory_order_release);
    status = 202;
  }
  if (status == 202) {
    snprintf(abort ? a->aborted_by : a->stopped_by, sizeof a->stopped_by,
             "%s", w->who);
    LOG_I("acquisition %s: %s by %s from %s", id,
          abort ? "aborted" : "stopped", w->who, w->from);
  }
  b2sd_acq_reply_json(status, b2sd_acq_object(a, true), out);
}

/* ---- reads --------------------------------------------------------------- */

void b2sd_acq_get(b2sd_acqreg *r, const char *id, b2sd_acq_reply *out) {
  b2sd_acq *a = find(r, id);
  if (!a)
    b2sd_acq_error(B2S_ACQ_E_NO_SUCH_ACQUISITION, NULL, NULL, out);
  else
    b2sd_acq_reply_json(200, b2sd_acq_object(a, true), out);
}

void b2sd_acq_list(b2sd_acqreg *r, unsigned states, int limit,
                   const char *after, b2sd_acq_reply *out) {
  b2sd_acq *a = r->list;
  if (after && after[0]) {
    b2sd_acq *o = find(r, after);
    if (!o) {
      b2sd_acq_error(B2S_ACQ_E_BAD_PARAMETER, "after",
                     "no held acquisition has that id", out);
      return;
    }
    a = o->next;
  }
  json_object *arr = json_object_new_array();
  const char *next = NULL;
  for (; a; a = a->next) {
    if (states && !(states & (1u << a->state)))
      continue;
    if ((int)json_object_array_length(arr) >= limit) {
      next = json_object_get_string(json_object_object_get(
          json_object_array_get_idx(arr, (size_t)limit - 1), "id"));
      break;
    }
    json_object_array_add(arr, b2sd_acq_object(a, false));
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "next", next ? json_object_new_string(next) : NULL);
  json_object_object_add(o, "acquisitions", arr);
  b2sd_acq_reply_json(200, o, out);
}

void b2sd_acq_files(b2sd_acqreg *r, const char *id, uint64_t after,
                    int limit, b2sd_acq_reply *out) {
  b2sd_acq *a = find(r, id);
  if (!a) {
    b2sd_acq_error(B2S_ACQ_E_NO_SUCH_ACQUISITION, NULL, NULL, out);
    return;
  }
  bool more = false;
  json_object *arr = b2sd_acq_file_list(a, after, limit, &more);
  json_object *o = json_object_new_object();
  json_object *next = NULL;
  if (more) {
    next = json_object_new_object();
    json_object_object_add(next, "channel", json_object_new_string("data"));
    json_object_object_add(next, "after",
                           json_object_new_uint64(after + (uint64_t)limit));
  }
  json_object_object_add(o, "files", arr);
  json_object_object_add(o, "next", next);
  b2sd_acq_reply_json(200, o, out);
}

/* Whether the wait's condition holds (1), cannot (-1, *code), or may
 * still (0). */
static int wait_check(const b2sd_acq *a, const b2sd_acq_waitq *q, int *code) {
  b2sd_acq_counts c;
  b2sd_acq_counts_get(a, &c);
  bool allow = q->allow_loss >= 0 ? q->allow_loss
                                  : a->req.on_loss == B2S_ACQ_LOSS_COUNT;
  *code = B2S_ACQ_E_WAIT_UNREACHABLE;
  if (!allow && c.gaps > 0) {
    *code = B2S_ACQ_E_FRAMES_LOST;
    return -1;
  }
  if (q->state < 0) {
    if (c.committed >= q->committed)
      return 1;
    bool past = a->req.frames > 0 && q->committed > a->req.frames;
    return ended(a) || past ? -1 : 0;
  }
  if (q->state == B2SD_ACQ_NSTATES)
    return ended(a) ? 1 : 0;
  if (q->state == B2SD_ACQ_WRITING)
    return a->t_writing >= 0 ? 1 : ended(a) ? -1 : 0;
  if (q->state == B2SD_ACQ_CLOSING)
    return a->t_closing >= 0 ? 1 : 0;
  if (q->state == B2SD_ACQ_ARMED)
    return 1;
  if (!ended(a))
    return 0;
  return a->state == q->state ? 1 : -1;
}

bool b2sd_acq_wait(b2sd_acqreg *r, const char *id, const b2sd_acq_waitq *q,
                   bool timed_out, b2sd_acq_reply *out) {
  b2sd_acq *a = find(r, id);
  if (!a) {
    b2sd_acq_error(B2S_ACQ_E_NO_SUCH_ACQUISITION, NULL, NULL, out);
    return true;
  }
  int code = 0;
  int v = wait_check(a, q, &code);
  if (v == 0 && !timed_out)
    return false;
  if (v > 0) {
    b2sd_acq_reply_json(200, b2sd_acq_object(a, true), out);
    return true;
  }
  if (v == 0)
    code = B2S_ACQ_E_WAIT_TIMEOUT;
  /* the error body with the acquisition as it is (9.3) */
  b2s_acq_err e;
  b2s_acq_err_clear(&e);
  b2s_acq_err_set(&e, code, NULL, NULL);
  char *err = b2s_acq_err_json(&e);
  json_object *o = err ? json_tokener_parse(err) : NULL;
  free(err);
  if (o)
    json_object_object_add(o, "acquisition", b2sd_acq_object(a, true));
  b2sd_acq_reply_json(b2s_acq_code_status(code), o, out);
  return true;
}

void b2sd_acq_api(b2sd_acqreg *r, bool authenticated, b2sd_acq_reply *out) {
  const b2s_daemon_cfg *d = r ? &r->srv->dcfg : NULL;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "api", json_object_new_string("1.0"));
  json_object_object_add(o, "server",
                         json_object_new_string(B2SD_NAME " " B2SD_VERSION));
  json_object *auth = json_object_new_object();
  json_object_object_add(auth, "changes", json_object_new_boolean(
                                              d && d->http.token_file[0]));
  json_object_object_add(auth, "reads", json_object_new_boolean(
                                            d && d->http.auth_reads));
  json_object_object_add(o, "auth", auth);
  json_object_object_add(o, "acquisitions", json_object_new_boolean(r != NULL));
  if (d) {
    json_object *lim = json_object_new_object();
    json_object_object_add(lim, "max_body",
                           json_object_new_int64(d->http.max_body));
    json_object_object_add(lim, "max_held",
                           json_object_new_int(d->acq.max_held));
    json_object_object_add(lim, "events_held",
                           json_object_new_int(d->acq.events_held));
    json_object_object_add(lim, "progress_hz",
                           json_object_new_int(d->acq.progress_hz));
    json_object_object_add(lim, "max_wait_s", json_object_new_int(60));
    json_object_object_add(lim, "max_event_streams",
                           json_object_new_int(d->http.max_event_streams));
    json_object_object_add(lim, "max_waits",
                           json_object_new_int(d->http.max_waits));
    json_object_object_add(o, "limits", lim);
    if (authenticated) {
      json_object *roots = json_object_new_array();
      for (int i = 0; i < d->acq.nroots; i++)
        json_object_array_add(roots, json_object_new_string(d->acq.roots[i]));
      json_object_object_add(o, "roots", roots);
    }
  }
  b2sd_acq_reply_json(200, o, out);
}

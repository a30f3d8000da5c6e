/* An acquisition's files, the writer's side (acqfile.h). */
#define _GNU_SOURCE
#include "acqfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b2s_msgpack.h"

int b2sd_acq_file_name(const b2sd_acqplan *p, uint64_t file, char *out,
                       size_t cap) {
  b2s_acq_namevals v = {.id = p->id, .stream = p->stream,
                        .channel = p->channel};
  char name[B2S_ACQ_FILE_NAME_MAX + 1];
  int n = b2s_acq_template_expand(&p->tmpl, &v, file, name, sizeof name);
  if (n < 0)
    return n;
  int m = snprintf(out, cap, "%s/%s", p->dir, name);
  return m < 0 || (size_t)m >= cap ? -ENAMETOOLONG : m;
}

const char *b2sd_acq_end_name(int code) {
  static const char *const names[] = {"done", "aborted", "failed",
                                      "interrupted"};
  return code >= 0 && code < 4 ? names[code] : "failed";
}

/* The state the files end with: a loss fails an on_loss: fail one. */
static const char *end_state(const b2sd_acqw *a) {
  /* relaxed: see end_code */
  int code = atomic_load_explicit(&a->p->end_code, memory_order_relaxed);
  if (code == B2SD_ACQ_END_DONE && a->p->fail_on_loss && a->gaps > 0)
    code = B2SD_ACQ_END_FAILED;
  return b2sd_acq_end_name(code);
}

static int put_kv_str(b2s_mpbuf *b, const char *k, const char *v) {
  int rc = b2s_mp_put_str(b, k, strlen(k));
  return rc < 0 ? rc : b2s_mp_put_str(b, v, strlen(v));
}

static int put_kv_uint(b2s_mpbuf *b, const char *k, uint64_t v) {
  int rc = b2s_mp_put_str(b, k, strlen(k));
  return rc < 0 ? rc : b2s_mp_put_uint(b, v);
}

int b2sd_acq_file_update(const b2sd_acqplan *p, uint64_t file,
                         const char *state, int64_t frames, bool last,
                         uint64_t files, b2s_mpbuf *out) {
  const char *key = B2S_ACQ_SERIES_KEY;
  uint64_t first = b2s_acq_file_first(p->frames_per_file, file);
  int rc = b2s_mp_put_map(out, 1);
  if (rc >= 0)
    rc = b2s_mp_put_str(out, key, strlen(key));
  if (rc >= 0)
    rc = b2s_mp_put_map(out, frames < 0 ? 9 : 12);
  if (rc >= 0)
    rc = put_kv_str(out, "id", p->id);
  if (rc >= 0)
    rc = put_kv_str(out, "input", p->input);
  if (rc >= 0)
    rc = put_kv_str(out, "channel", p->channel);
  if (rc >= 0)
    rc = put_kv_uint(out, "file", file);
  if (rc >= 0)
    rc = put_kv_uint(out, "first_frame", first);
  if (rc >= 0)
    rc = put_kv_uint(out, "frames_per_file", p->frames_per_file);
  if (rc >= 0)
    rc = put_kv_uint(out, "frames_expected", p->frames);
  if (rc >= 0)
    rc = put_kv_str(out, "armed_at", p->armed_at);
  if (rc >= 0)
    rc = put_kv_str(out, "state", state ? state : "writing");
  if (rc >= 0 && frames >= 0) {
    rc = put_kv_uint(out, "frames", (uint64_t)frames);
    if (rc >= 0)
      rc = b2s_mp_put_str(out, "last_file", 9);
    if (rc >= 0)
      rc = b2s_mp_write_bool(out, last);
    if (rc >= 0)
      rc = put_kv_uint(out, "files", files);
  }
  return rc < 0 ? rc : 0;
}

void b2sd_acqw_fail(b2sd_acqw *a, int rc) {
  int none = 0;
  /* release: pairs with the acquire load of the registry's turn */
  atomic_compare_exchange_strong_explicit(&a->p->failed, &none, rc,
                                          memory_order_release,
                                          memory_order_relaxed);
}

/* Create file number `file`, empty, with its series, committed. */
static int create_file(b2sd_acqw *a, uint64_t file, const b2s_stream_cfg *cfg,
                       const b2s_fwriter_opts *opts, b2s_pair **fw) {
  int rc = b2sd_acq_file_name(a->p, file, a->path, sizeof a->path);
  b2s_frame_metas metas;
  b2s_frame_metas_init(&metas);
  if (rc >= 0 && cfg->b2nd.enabled) {
    b2s_b2nd nd;
    b2s_stream_cfg_b2nd(cfg, &nd);
    rc = b2s_frame_metas_add_b2nd(&metas, &nd);
  }
  /* b2s_pair_create refuses an existing name (-EEXIST): a file that
   * appeared after the arm's check is never replaced */
  if (rc >= 0)
    rc = b2s_pair_create(a->path, cfg->format == B2S_FORMAT_SPARSE, opts,
                         &metas, fw);
  b2s_frame_metas_fini(&metas);
  b2s_mpbuf upd;
  b2s_mpbuf_init(&upd);
  if (rc >= 0 && a->p->series_len)
    rc = b2s_fwriter_series_set(b2s_pair_data(*fw), a->p->series,
                                a->p->series_len);
  if (rc >= 0)
    rc = b2sd_acq_file_update(a->p, file, NULL, -1, false, 0, &upd);
  if (rc >= 0)
    rc = b2s_fwriter_series_merge(b2s_pair_data(*fw), upd.data, upd.len);
  if (rc >= 0)
    rc = b2s_pair_commit(*fw);
  b2s_mpbuf_fini(&upd);
  if (rc < 0) {
    if (*fw)
      b2s_pair_free(*fw);
    *fw = NULL;
    LOG_E("acquisition %s: cannot create %s: %s", a->p->id, a->path,
          b2s_strerror(rc));
    b2sd_acqw_fail(a, rc);
    return rc;
  }
  a->file = file;
  a->in_file = 0;
  /* release: the file exists, committed, before the I/O thread counts it */
  atomic_store_explicit(&a->p->files, file, memory_order_release);
  LOG_I("acquisition %s: created %s", a->p->id, a->path);
  return 0;
}

int b2sd_acqw_begin(b2sd_acqw *a, b2sd_acqplan *p, const b2s_stream_cfg *cfg,
                    const b2s_fwriter_opts *opts, b2s_pair **fw) {
  *a = (b2sd_acqw){.p = p};
  return create_file(a, 1, cfg, opts, fw);
}

/* Mark a closed file with the end state (its trailer only, one commit). */
static int mark_file(b2sd_acqw *a, uint64_t file, uint64_t frames,
                     const b2s_fwriter_opts *opts) {
  char path[B2S_CONFIG_PATH_MAX];
  int rc = b2sd_acq_file_name(a->p, file, path, sizeof path);
  b2s_pair *fw = NULL;
  b2s_frame_error ferr = {0};
  if (rc >= 0)
    rc = b2s_pair_open(path, opts, &fw, &ferr);
  b2s_mpbuf upd;
  b2s_mpbuf_init(&upd);
  if (rc >= 0)
    rc = b2sd_acq_file_update(a->p, file, end_state(a), (int64_t)frames,
                              file == a->file, a->file, &upd);
  if (rc >= 0)
    rc = b2s_fwriter_series_merge(b2s_pair_data(fw), upd.data, upd.len);
  b2s_mpbuf_fini(&upd);
  int crc = fw ? b2s_pair_close(fw) : 0;
  return rc < 0 ? rc : crc;
}

/* Close the current file with its series updated to `state`. */
static int close_current(b2sd_acqw *a, b2s_pair **fw, const char *state,
                         bool last) {
  b2s_mpbuf upd;
  b2s_mpbuf_init(&upd);
  int rc = b2sd_acq_file_update(a->p, a->file, state, (int64_t)a->in_file,
                                last, a->file, &upd);
  if (rc >= 0)
    rc = b2s_fwriter_series_merge(b2s_pair_data(*fw), upd.data, upd.len);
  b2s_mpbuf_fini(&upd);
  int crc = b2s_pair_close(*fw);   /* commits and compacts */
  *fw = NULL;
  return rc < 0 ? rc : crc;
}

int b2sd_acqw_before(b2sd_acqw *a, const b2s_stream_cfg *cfg,
                     const b2s_fwriter_opts *opts, b2s_pair **fw) {
  uint32_t n = a->p->frames_per_file;
  if (!*fw)
    return B2S_E_CLOSED;
  if (n == 0 || a->in_file < n)
    return 0;
  int rc = close_current(a, fw, "writing", false);
  if (rc >= 0)
    b2sd_acqw_committed(a, true);
  if (rc < 0) {
    LOG_E("acquisition %s: closing %s: %s", a->p->id, a->path,
          b2s_strerror(rc));
    b2sd_acqw_fail(a, rc);
    return rc;
  }
  return create_file(a, a->file + 1, cfg, opts, fw);
}

bool b2sd_acqw_discarding(b2sd_acqw *a) {
  /* acquire: pairs with the release store of an abort */
  return atomic_load_explicit(&a->p->discard, memory_order_acquire);
}

void b2sd_acqw_discarded(b2sd_acqw *a) {
  /* relaxed: a count the I/O thread reads after `ended` (acquire) */
  atomic_fetch_add_explicit(&a->p->discarded, 1, memory_order_relaxed);
}

void b2sd_acqw_appended(b2sd_acqw *a, int64_t cbytes) {
  a->in_file++;
  a->positions++;
  if (cbytes > 0)
    a->bytes += (uint64_t)cbytes;
  else
    a->gaps++;
}

void b2sd_acqw_committed(b2sd_acqw *a, bool durable) {
  /* relaxed: counts; `written` and `committed` are released after them */
  atomic_store_explicit(&a->p->bytes, a->bytes, memory_order_relaxed);
  atomic_store_explicit(&a->p->gaps, a->gaps, memory_order_relaxed);
  /* release: pairs with the registry's acquire loads; committed never
   * passes written (both only rise) */
  atomic_store_explicit(&a->p->written, a->positions, memory_order_release);
  if (durable)
    atomic_store_explicit(&a->p->committed, a->positions,
                          memory_order_release);
}

int b2sd_acqw_end(b2sd_acqw *a, b2s_pair **fw, const b2s_fwriter_opts *opts) {
  int rc = 0;
  if (*fw) {
    rc = close_current(a, fw, end_state(a), true);
    int fd = open(a->p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      if (syncfs(fd) < 0 && rc >= 0)
        rc = -errno;
      close(fd);
    }
    if (rc >= 0)
      b2sd_acqw_committed(a, true);
  }
  uint32_t n = a->p->frames_per_file;
  for (uint64_t f = 1; f < a->file && rc >= 0; f++)
    rc = mark_file(a, f, n, opts);
  if (rc < 0) {
    LOG_E("acquisition %s: closing its files: %s", a->p->id, b2s_strerror(rc));
    b2sd_acqw_fail(a, rc);
  }
  /* release: every file is closed and marked before the I/O thread sees
   * the end */
  atomic_store_explicit(&a->p->ended, true, memory_order_release);
  return rc;
}

/* Recovery of a data frame and its records frame: each is restored to its
 * newest complete commit, then records past the data are cut and data
 * chunks past the records get "no record" records, so that every chunk has
 * its record and every record its chunk (docs/METADATA.md). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "b2s_errors.h"
#include "b2s_meta.h"
#include "pair_internal.h"

bool b2s_pair_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int64_t b2s_pair_cut_tail(b2s_fwriter *w, int64_t keep) {
  int64_t cut = 0;
  for (int64_t n = b2s_fwriter_nchunks(w); n > keep; n--, cut++) {
    int rc = b2s_fwriter_delete(w, n - 1);
    if (rc < 0)
      return rc;
  }
  return cut;
}

static int count(const char *path, int64_t *n, b2s_frame_error *err) {
  b2s_frame *f;
  int rc = b2s_frame_open(path, &f, err);
  if (rc < 0)
    return rc;
  *n = b2s_frame_nchunks(f);
  b2s_frame_free(f);
  return 0;
}

/* Cut the frame at path back to keep chunks; durably (recovery is rare and
 * must not be undone by a power loss). */
static int cut_frame(const char *path, int64_t keep, int64_t *cut,
                     b2s_frame_error *err) {
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.sync = B2S_SYNC_FULL;
  o.compact_on_close = false;
  b2s_fwriter *w;
  int rc = b2s_fwriter_open(path, &o, &w, err);
  if (rc < 0)
    return rc;
  int64_t c = b2s_pair_cut_tail(w, keep);
  if (c < 0) {
    b2s_fwriter_free(w);
    return (int)c;
  }
  *cut = c;
  return b2s_fwriter_close(w);
}

/* "No record" records for the data chunks past the records frame's count;
 * durably, as a cut. */
static int fill_records(const char *data_path, const char *rpath,
                        int64_t have, int64_t want, int64_t *filled,
                        b2s_frame_error *err) {
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.sync = B2S_SYNC_FULL;
  o.compact_on_close = false;
  b2s_fwriter *w;
  int rc = b2s_fwriter_open(rpath, &o, &w, err);
  if (rc < 0)
    return rc;
  rc = b2s_pair_records_fill(w, data_path, have);
  if (rc < 0) {
    b2s_fwriter_free(w);
    return rc;
  }
  *filled = want - have;
  return b2s_fwriter_close(w);
}

int b2s_pair_recover(const char *data_path, bool deep, b2s_pair_report *rep,
                     b2s_frame_error *err) {
  b2s_pair_report local;
  rep = rep ? rep : &local;
  memset(rep, 0, sizeof *rep);
  if (data_path == NULL)
    return B2S_E_ARG;
  char rpath[4096];
  int rc = b2s_records_path(data_path, rpath, sizeof rpath);
  if (rc < 0)
    return rc;
  rc = b2s_frame_recover(data_path, deep, &rep->data, err);
  if (rc < 0 || !b2s_pair_exists(rpath))
    return rc;
  rep->has_records = true;
  rc = b2s_frame_recover(rpath, deep, &rep->records, err);
  int64_t nd = 0, nr = 0;
  if (rc == 0)
    rc = count(data_path, &nd, err);
  if (rc == 0)
    rc = count(rpath, &nr, err);
  if (rc == 0 && nr > nd)
    rc = cut_frame(rpath, nd, &rep->records_cut, err);
  else if (rc == 0 && nd > nr)
    rc = fill_records(data_path, rpath, nr, nd, &rep->records_filled, err);
  return rc;
}

/* Recovery of a frame whose last commit was interrupted.
 *
 * The frame header is not trusted (it may be torn); the commit records
 * are (they are checksummed).  Candidates are tried newest first: the
 * record's header is written back, the frame must then open and hold the
 * record's chunk count, and the chunks that commit wrote (all of them with
 * `deep`) must decode.  The first candidate that passes is made the newest
 * record; if none does, the original header bytes are put back.
 *
 * Recovery holds the frame's lock (b2s_frame_lock.h) throughout: beside a
 * live writer, chunk files it has written but not yet committed would
 * look like orphans. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frame_rfile.h"
#include "fwriter_internal.h"

/* Recovery's own writes are neither counted nor cut. */
static int raw_write(int fd, const void *p, size_t n, int64_t pos) {
  b2s_fio io;
  b2s_fio_init(&io);
  return b2s_fio_write(&io, fd, p, n, pos);
}

/* Chunks a candidate must decode: those its commit wrote (a cframe's
 * bytes from fresh_from on), every chunk with `deep`; sparse chunk files
 * must at least be as long as their headers say.  A sparse chunk file
 * that is gone does not fail the candidate (no older state brings it
 * back): it is counted, and drop_missing takes its entry out. */
static int check_chunks(b2s_frame *f, const fw_record *rec, bool deep,
                        b2s_recover_report *rep) {
  bool sparse = b2s_frame_is_sparse(f);
  const int64_t *index = b2s_frame_index(f);
  uint8_t *buf = NULL;
  int rc = 0;
  for (int64_t i = 0; rc >= 0 && i < b2s_frame_nchunks(f); i++) {
    int32_t nb, cb;
    if (index[i] < 0)
      continue;
    rc = b2s_frame_chunk_sizes(f, i, &cb, &nb);
    if (rc == -ENOENT && sparse) {
      rep->missing_files++;
      rc = 0;
      continue;
    }
    if (rc < 0 || !(deep || sparse || index[i] >= rec->fresh_from))
      continue;
    uint8_t *p = realloc(buf, (size_t)nb + 1);
    if (p == NULL) {
      rc = B2S_E_NOMEM;
      break;
    }
    buf = p;
    rc = deep || !sparse ? b2s_frame_chunk_decompress(f, i, NULL, buf, (size_t)nb)
                         : b2s_frame_chunk_read(f, i, buf, (size_t)nb + 1);
    if (rc == B2S_E_DEST_SMALL)   /* sparse quick check: stored > nbytes */
      rc = 0;
    rep->chunks_checked += deep || !sparse;
  }
  free(buf);
  return rc < 0 ? rc : 0;
}

/* Write rec's header and see whether the frame holds up. */
static int try_record(const char *path, fw_rfile *r, const fw_record *rec,
                      bool deep, b2s_recover_report *rep,
                      b2s_frame_error *err) {
  int rc = raw_write(r->fd, rec->header, B2S_FRAME_HEADER_FIXED, 0);
  if (rc < 0)
    return rc;
  b2s_frame *f;
  rc = b2s_frame_open(path, &f, err);
  if (rc < 0)
    return rc;
  if (b2s_frame_nchunks(f) != rec->nchunks)
    rc = B2S_E_INDEX;
  if (rc == 0)
    rc = check_chunks(f, rec, deep, rep);
  b2s_frame_free(f);
  return rc;
}

/* Make rec the newest record so writers resume from it. */
static int promote(fw_rfile *r, const fw_record *rec, uint64_t newest) {
  fw_record p = *rec;
  if (p.seq == newest)
    return 0;
  p.seq = newest + 1;
  uint8_t raw[FW_REC_SIZE];
  b2s_fw_record_encode(&p, raw);
  return raw_write(r->fd, raw, FW_REC_USED, b2s_fw_record_pos(r->base, p.seq));
}

/* Sparse frames: chunk files no index entry names (writes of an
 * interrupted commit, or deletions not yet carried out). */
static int remove_orphans(const char *path, fw_rfile *r, b2s_recover_report *rep) {
  b2s_frame *f;
  int rc = b2s_frame_open(path, &f, NULL);
  if (rc < 0)
    return rc;
  int64_t n = b2s_frame_nchunks(f);
  const int64_t *index = b2s_frame_index(f);
  int dfd = dup(r->dirfd);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (d == NULL) {
    if (dfd >= 0)
      close(dfd);
    b2s_frame_free(f);
    return -errno;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    unsigned id;
    char tail[8];
    if (strlen(de->d_name) != 14 ||
        sscanf(de->d_name, "%8X%7s", &id, tail) != 2 || strcmp(tail, ".chunk"))
      continue;
    bool used = false;
    for (int64_t i = 0; i < n && !used; i++)
      used = index[i] == (int64_t)id;
    if (!used && unlinkat(r->dirfd, de->d_name, 0) == 0)
      rep->orphan_files++;
  }
  closedir(d);
  b2s_frame_free(f);
  return 0;
}

static int drop_missing(const char *path, fw_rfile *r, b2s_recover_report *rep) {
  b2s_fwriter_opts o = B2S_FWRITER_OPTS_DEFAULTS;
  o.sync = B2S_SYNC_FULL;
  o.compact_on_close = false;
  /* the same open file description: the lock recovery holds */
  int lockfd = dup(r->lockfd);
  if (lockfd < 0)
    return -errno;
  b2s_fwriter *w = NULL;
  int rc = b2s_fw_open_locked(path, &o, &lockfd, &w, NULL, true);
  if (lockfd >= 0)
    close(lockfd);
  bool *gone = rc == 0 ? calloc((size_t)w->m.n + 1, 1) : NULL;
  if (rc == 0 && gone == NULL)
    rc = B2S_E_NOMEM;
  for (int64_t i = 0; rc == 0 && i < w->m.n; i++) {
    char name[32];
    snprintf(name, sizeof name, "%08X.chunk", (unsigned)w->m.index[i]);
    gone[i] = w->m.index[i] >= 0 &&
              faccessat(r->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
              errno == ENOENT;
  }
  if (rc == 0)
    rc = b2s_fw_drop(w, gone);
  if (rc == 0)   /* nothing when nothing was dropped */
    rc = b2s_fwriter_commit(w);
  if (rc == 0)
    rep->commit = (int64_t)w->c.seq;
  free(gone);
  b2s_fwriter_free(w);
  return rc;
}

static int sync_file(fw_rfile *r) {
  if (fsync(r->fd) < 0)
    return -errno;
  return r->sparse && fsync(r->dirfd) < 0 ? -errno : 0;
}

static int recover_from_records(const char *path, fw_rfile *r, fw_record *rec,
                                int nvalid, bool deep, b2s_recover_report *rep,
                                b2s_frame_error *err) {
  uint8_t orig[B2S_FRAME_HEADER_FIXED];
  int rc = b2s_fio_pread(r->fd, orig, sizeof orig, 0);
  if (rc < 0)
    return rc;
  for (int k = 0; k < nvalid; k++) {
    rep->chunks_checked = rep->missing_files = 0;
    rc = try_record(path, r, &rec[k], deep, rep, err);
    if (rc == 0) {
      rep->nchunks = rec[k].nchunks;
      rep->commit = (int64_t)rec[k].seq;
      if (k > 0 && rec[0].nchunks > rec[k].nchunks)
        rep->dropped_chunks = rec[0].nchunks - rec[k].nchunks;
      rc = promote(r, &rec[k], rec[0].seq);
      return rc == 0 ? sync_file(r) : rc;
    }
  }
  raw_write(r->fd, orig, sizeof orig, 0);
  return B2S_E_UNRECOVERABLE;
}

/* Whether cur is what a header write from `old` to `new` cut at some byte
 * leaves: a prefix of new followed by the rest of old. */
static bool header_mix(const uint8_t *cur, const uint8_t *new,
                       const uint8_t *old) {
  size_t k = 0;
  while (k < B2S_FRAME_HEADER_FIXED && cur[k] == new[k])
    k++;
  return memcmp(cur + k, old + k, B2S_FRAME_HEADER_FIXED - k) == 0;
}

int b2s_frame_recover(const char *path, bool deep, b2s_recover_report *rep,
                      b2s_frame_error *err) {
  b2s_recover_report local;
  if (rep == NULL)
    rep = &local;
  *rep = (b2s_recover_report){0};
  if (err != NULL)
    b2s_frame_error_clear(err);
  if (path == NULL)
    return B2S_E_ARG;
  fw_rfile r;
  fw_record rec[2];
  int nvalid;
  int rc = b2s_fw_rfile_records(path, true, &r, rec, &nvalid);
  if (rc < 0) {
    b2s_fw_rfile_close(&r);
    return rc;
  }
  uint8_t cur[B2S_FRAME_HEADER_FIXED];
  rc = b2s_fio_pread(r.fd, cur, sizeof cur, 0);
  b2s_frame *f = NULL;
  bool opens = rc == 0 && b2s_frame_open(path, &f, err) == 0;
  bool current = nvalid > 0 && memcmp(cur, rec[0].header, sizeof cur) == 0;
  bool ours = nvalid > 0 && header_mix(cur, rec[0].header,
                                       rec[nvalid - 1].header);
  if (opens && (current || !ours)) {
    /* Consistent, or changed by another tool after our last commit. */
    rep->was_clean = true;
    rep->nchunks = b2s_frame_nchunks(f);
    rep->commit = nvalid > 0 ? (int64_t)rec[0].seq : 0;
    rc = check_chunks(f, &(fw_record){.fresh_from = INT64_MAX}, deep, rep);
  } else if (nvalid == 0) {
    rc = rc < 0 ? rc : (err && err->code < 0 ? err->code : B2S_E_UNRECOVERABLE);
  } else {
    rc = recover_from_records(path, &r, rec, nvalid, deep, rep, err);
  }
  b2s_frame_free(f);
  if (rc == 0 && r.sparse)
    rc = remove_orphans(path, &r, rep);
  /* Frames closed cleanly carry no commit records (compacted on close),
   * so a lost chunk file is dropped from those as well: losing one chunk
   * beats losing the stream. */
  if (rc == 0 && rep->missing_files > 0) {
    rep->was_clean = false;
    rc = drop_missing(path, &r, rep);
    rep->nchunks -= rep->missing_files;
  }
  b2s_fw_rfile_close(&r);
  return rc;
}

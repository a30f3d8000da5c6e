/* The frame writer's object and the internals its files share.  Internal
 * to core.
 *
 * The files, top down; each calls only files below it (and the reader,
 * frame.c, the format, frame_format.c, and the lock, frame_lock.c):
 *
 *   frame_recover.c    recovery (b2s_frame_recover)
 *   frame_wopen.c      a writer's life: create, open (adopting a frame
 *                      written elsewhere), close, free; its files
 *   frame_finish.c     compaction on close
 *   frame_b2nd_grow.c  a growing b2nd array's shape
 *   frame_writer.c     the model (header, metalayers, index) and the
 *                      chunk operations
 *   frame_commit.c     layout, slots, commits, the chunk data's writes
 *   frame_sparse.c     a sparse frame's chunk files (frame_sparse.h)
 *   frame_rfile.c      a frame file opened for its records (frame_rfile.h)
 *   frame_record.c     commit records (frame_record.h)
 *   frame_dio.c        the direct-I/O stage (frame_dio.h)
 *   frame_helper.c     the helper thread (frame_helper.h)
 *   frame_io.c         raw file I/O (frame_io.h)
 *
 * Only the first six include this header.  The stage, the helper, the
 * sparse chunk files and the I/O count are reached through their own
 * headers' functions only.
 *
 * Ownership: the caller owns the writer (b2s_frame_writer.h); the writer
 * owns every part below.  Each part says which file writes it; the
 * others only read it, or call the owner. */
#ifndef B2S_FWRITER_INTERNAL_H
#define B2S_FWRITER_INTERNAL_H

#include "b2s_frame_writer.h"
#include "b2s_msgpack.h"
#include "frame_dio.h"
#include "frame_helper.h"
#include "frame_io.h"
#include "frame_record.h"
#include "frame_sparse.h"

#define FW_INDEX_BLOCKSIZE 16384
#define FW_RESERVE_MIN (INT64_C(1) << 20)
/* A file being built to replace the frame file (or chunks.b2frame) of the
 * same name without the suffix. */
#define FW_NEW_SUFFIX ".b2s-new"

/* The frame's files: frame_wopen.c opens them and closes them. */
typedef struct fw_files {
  bool sparse;
  int fd;                          /* cframe file, or chunks.b2frame */
  int dirfd;                       /* sparse frame directory, or -1 */
  int lockfd;                      /* holds the frame's lock (b2s_frame_lock.h),
                                      or -1 */
} fw_files;

/* The model being edited: frame_writer.c.  frame_commit.c and
 * frame_finish.c write it out; frame_wopen.c loads it through
 * frame_writer.c. */
typedef struct fw_model {
  b2s_frame_header hdr;            /* header_len/frame_len/cbytes: set per
                                      commit (frame_commit.c, in a copy) */
  b2s_frame_metas metas, vlmetas;
  int64_t base;                    /* natural header length */
  int64_t *index;
  int64_t n, cap;
  int32_t last_nbytes;             /* nbytes of the last chunk */
  int64_t stored_bytes;            /* referenced stored chunk bytes */
  b2s_ctx *ctx;                    /* the writer's own codec context */
} fw_model;

/* Where everything is in the file: frame_commit.c. */
typedef struct fw_layout {
  int64_t data_end, data_region;   /* cframe: chunk data ends at data_end,
                                      within data_region (relative to base) */
  int64_t pos[2], cap0;            /* the slots */
  int64_t slot_len[2];
  int64_t valid[2];                /* leading entries of each slot that
                                      match the model's index */
  int active;                      /* slot of the committed state; -1: an
                                      empty cframe (trailer after header) */
  int64_t file_end;
} fw_layout;

/* What is pending and what was committed last: frame_commit.c (the chunk
 * operations mark changes through b2s_fw_touch*). */
typedef struct fw_commit {
  bool dirty, metas_dirty, trailer_dirty;
  b2s_mpbuf trailer;               /* encoded trailer for the model */
  b2s_frame_header committed;
  int64_t committed_n;
  uint64_t seq;
  int64_t fresh_from;              /* data_end at the last commit */
} fw_commit;

struct b2s_fwriter {
  b2s_fwriter_opts opts;           /* frame_wopen.c sets it; all read it */
  fw_files f;                      /* frame_wopen.c */
  fw_model m;                      /* frame_writer.c */
  fw_layout lay;                   /* frame_commit.c */
  fw_commit c;                     /* frame_commit.c */
  fw_chunkfiles cf;                /* frame_sparse.h's functions */
  b2s_fio io;                      /* frame_io.h's functions */
  /* frame_wopen.c makes and frees these; frame_commit.c writes the chunk
   * data through the stage and tells the helper how far it got. */
  b2s_dio *dio;                    /* direct I/O of chunk data, or NULL */
  b2s_fwhelper *pacer;             /* drop-behind (opts.drop_behind), or
                                      NULL */
  /* Scratch space: b2s_fw_scratch's (frame_commit.c). */
  uint8_t *buf;
  size_t bufcap;
};

/* ---- frame_commit.c: layout, commit state, chunk data, scratch ---------- */

void b2s_fw_commit_init(b2s_fwriter *w);
void b2s_fw_commit_fini(b2s_fwriter *w);
/* A buffer of at least n bytes, or NULL without memory; its contents last
 * until the next call into frame_commit.c (moves use it). */
uint8_t *b2s_fw_scratch(b2s_fwriter *w, size_t n);
/* The index changed at position pos: slots must rewrite from there. */
void b2s_fw_touch(b2s_fwriter *w, int64_t pos);
/* A metalayer's content changed (written in place at the next commit). */
void b2s_fw_touch_metas(b2s_fwriter *w);
/* The vlmetalayers changed: the trailer is encoded again. */
void b2s_fw_touch_trailer(b2s_fwriter *w);
/* A new file: its header with metalayers, then the empty state
 * committed. */
int b2s_fw_start(b2s_fwriter *w);
/* Our frame, current per record r: layout and commit state from it. */
int b2s_fw_resume(b2s_fwriter *w, const fw_record *r);
/* Room for cbytes more chunk bytes in a cframe's data region (and the
 * stage's padding beyond them), moving the slots when needed. */
int b2s_fw_make_room(b2s_fwriter *w, int64_t cbytes);
/* n chunk bytes at the end of a cframe's data, where make_room made room;
 * *entry gets their index value. */
int b2s_fw_data_append(b2s_fwriter *w, const void *p, size_t n,
                       int64_t *entry);
/* The chunk data written so far is in the file (before reading it). */
int b2s_fw_data_flush(b2s_fwriter *w);
int b2s_fw_compact(b2s_fwriter *w);
int64_t b2s_fw_slot_need(const b2s_fwriter *w, int64_t n);
void b2s_fw_index_header(uint8_t out[B2S_HEADER_LEN], int64_t n);

/* ---- frame_writer.c: the model ------------------------------------------ */

int b2s_fw_model_init(fw_model *m);
void b2s_fw_model_fini(fw_model *m);
/* A new frame's model: the header from opts.cparams, metas copied. */
int b2s_fw_model_new(b2s_fwriter *w, const b2s_frame_metas *metas);
/* Header, metalayers, vlmetalayers and index from a reader; with `empty`,
 * no entries yet (and nbytes 0) but room for f's: b2s_fw_adopt_chunks
 * adds them. */
int b2s_fw_model_load(b2s_fwriter *w, b2s_frame *f, bool empty);
/* Our frame opened again: the stored bytes its record says, a sparse
 * frame's ids in use, the last chunk's size. */
int b2s_fw_model_resume(b2s_fwriter *w, int64_t stored_bytes);
/* Every chunk of f into w, which b2s_fw_model_load(empty) made: a
 * contiguous frame gets the bytes at the end of its data, a sparse frame
 * keeps the chunk files and their ids.  With lost_ok, a sparse chunk file
 * that is gone keeps its entry (0 bytes stored) for recovery to drop. */
int b2s_fw_adopt_chunks(b2s_fwriter *w, b2s_frame *f, bool lost_ok);
/* nbytes and cbytes (0 for a special entry) of chunk i as stored now. */
int b2s_fw_entry_sizes(b2s_fwriter *w, int64_t i, int32_t *nbytes,
                       int32_t *cbytes);
/* Take out the entries gone[i] marks, keeping the others in order (to
 * commit). */
int b2s_fw_drop(b2s_fwriter *w, const bool *gone);

/* ---- frame_finish.c ------------------------------------------------------ */

/* Compaction on close (b2s_fw_compact, then a sparse frame's
 * chunks.b2frame replaced by its unpadded form). */
int b2s_fw_finish(b2s_fwriter *w);

/* ---- frame_wopen.c ------------------------------------------------------- */

/* b2s_fwriter_open with the frame's lock already held by *lockfd, which
 * moves into the writer on success (*lockfd = -1).  lost_ok (recovery
 * only): a sparse frame written elsewhere opens even with chunk files
 * missing, their entries kept for the caller to drop. */
int b2s_fw_open_locked(const char *path, const b2s_fwriter_opts *opts,
                       int *lockfd, b2s_fwriter **out, b2s_frame_error *err,
                       bool lost_ok);

#endif

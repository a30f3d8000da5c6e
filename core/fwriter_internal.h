/* Internals shared by the frame writer's files: frame_writer.c (the
 * in-memory model and chunk operations), frame_commit.c (layout, slots,
 * commit records, commits), frame_dio.c (direct I/O), frame_finish.c
 * (compaction on close), frame_wopen.c (opening) and frame_recover.c
 * (recovery); frame_io.h has the raw file I/O under them all. */
#ifndef B2S_FWRITER_INTERNAL_H
#define B2S_FWRITER_INTERNAL_H

#include "b2s_frame_lock.h"
#include "b2s_frame_writer.h"
#include "b2s_msgpack.h"

/* The commit area: AREA bytes right after the natural header.  The two
 * records sit in its second half so that the trailer of an empty
 * contiguous frame, which c-blosc2 expects right after the header, does not
 * overlap them. */
#define FW_AREA 4096
#define FW_REC_OFF 2048
#define FW_REC_SIZE 512
#define FW_REC_NFIELDS 11
#define FW_REC_HDR (16 + 8 * FW_REC_NFIELDS)
#define FW_REC_CRC (FW_REC_HDR + B2S_FRAME_HEADER_FIXED)
#define FW_REC_USED (FW_REC_CRC + 4)
#define FW_REC_MAGIC "B2SCOMIT"
#define FW_REC_VERSION 1
#define FW_INDEX_BLOCKSIZE 16384
#define FW_RESERVE_MIN (INT64_C(1) << 20)
/* A file being built to replace the frame file (or chunks.b2frame) of the
 * same name without the suffix. */
#define FW_NEW_SUFFIX ".b2s-new"

/* One commit record: everything recovery needs to restore the state of one
 * commit without trusting the frame header. */
typedef struct fw_record {
  uint64_t seq;
  int64_t slot_pos, slot_len;      /* where this state's index + trailer are */
  int64_t nchunks;
  int64_t data_region;             /* cframe: data region end (rel. header) */
  int64_t pos0, cap0, pos1;        /* slot layout */
  int64_t data_end;                /* cframe: end of used data; sparse: 0 */
  int64_t fresh_from;              /* cframe: data_end of the previous commit */
  int64_t stored_bytes;            /* referenced stored chunk bytes */
  uint8_t header[B2S_FRAME_HEADER_FIXED];
} fw_record;

struct b2s_fwriter {
  bool sparse;
  int fd;                          /* cframe file, or chunks.b2frame */
  int dirfd;                       /* sparse frame directory, or -1 */
  int lockfd;                      /* holds the frame's lock (b2s_frame_lock.h),
                                      or -1 */
  b2s_fwriter_opts opts;

  /* Model being edited; header_len/frame_len/cbytes are set per commit. */
  b2s_frame_header hdr;
  b2s_frame_metas metas, vlmetas;
  int64_t base;                    /* natural header length */
  int64_t *index;
  int64_t n, cap;
  int32_t last_nbytes;             /* nbytes of the last chunk */
  int64_t stored_bytes;            /* referenced stored chunk bytes */
  bool dirty, trailer_dirty, metas_dirty;
  b2s_mpbuf trailer;               /* encoded trailer for the model */

  /* Contiguous frames: data written at data_end, within data_region. */
  int64_t data_end, data_region;   /* relative to header_len */

  /* Sparse frames: ids in use (referenced, or awaiting unlink). */
  uint64_t *ids;
  int64_t ids_words, id_hint;
  int64_t *unlink_ids;
  int64_t nunlink, unlink_cap;
  int *sync_fds;
  int nsync, sync_cap;

  /* Layout and the last commit. */
  int64_t pos[2], cap0;
  int64_t slot_len[2];
  int64_t valid[2];                /* leading entries of each slot that
                                      match the model's index */
  int active;                      /* slot of the committed state; -1: an
                                      empty cframe (trailer after header) */
  b2s_frame_header committed;
  int64_t committed_n;
  uint64_t seq;
  int64_t fresh_from;
  int64_t file_end;

  /* Direct I/O of chunk data (frame_dio.c); dfd is -1 without it. */
  int dfd;
  int64_t dio_align;
  uint8_t *stage;                  /* aligned; file bytes from stage_pos */
  size_t stage_cap, stage_len;
  int64_t stage_pos;
  bool stage_ok;                   /* stage_pos/stage_len describe the file */
  /* The helper thread (frame_helper.h): writes a full stage meanwhile,
   * or paces a buffered frame's write-out (opts.drop_behind); or NULL. */
  struct fw_helper *helper;

  int64_t write_limit, written;
  b2s_ctx *ctx;
  uint8_t *buf;
  size_t bufcap;
};

/* frame_commit.c */
int b2s_fw_buf(b2s_fwriter *w, size_t n);
int b2s_fw_layout_init(b2s_fwriter *w);
int b2s_fw_make_room(b2s_fwriter *w, int64_t cbytes);
int b2s_fw_compact(b2s_fwriter *w);
int64_t b2s_fw_slot_need(const b2s_fwriter *w, int64_t n);
void b2s_fw_index_header(uint8_t out[B2S_HEADER_LEN], int64_t n);
void b2s_fw_record_encode(const fw_record *r, uint8_t out[FW_REC_SIZE]);
bool b2s_fw_record_decode(const uint8_t in[FW_REC_SIZE], fw_record *r);
int b2s_fw_records_read(int fd, int64_t base, fw_record rec[2], int *nvalid);

/* frame_finish.c: compaction on close (b2s_fw_compact, then a sparse frame's
 * chunks.b2frame replaced by its unpadded form). */
int b2s_fw_finish(b2s_fwriter *w);

/* frame_dio.c */
void b2s_fw_dio_open(b2s_fwriter *w, const char *path);
void b2s_fw_dio_close(b2s_fwriter *w);
/* Bytes the reserve must keep past the chunk data for a flush's padding. */
int64_t b2s_fw_dio_slack(const b2s_fwriter *w);
/* Write the staged chunk bytes and wait for the stage being written, if
 * any (before a commit or a read of the data). */
int b2s_fw_dio_flush(b2s_fwriter *w);
/* The data end moved other than by appending: the stage starts over. */
void b2s_fw_dio_forget(b2s_fwriter *w);
/* Chunk bytes at pos of a contiguous frame, direct when it can. */
int b2s_fw_data_write(b2s_fwriter *w, const void *p, size_t n, int64_t pos);

/* frame_writer.c */
void b2s_fw_touch(b2s_fwriter *w, int64_t pos);
int64_t b2s_fw_natural_base(const b2s_frame_metas *metas);
b2s_fwriter *b2s_fw_alloc(bool sparse, const b2s_fwriter_opts *opts);
void b2s_fw_header_defaults(b2s_frame_header *h, const b2s_cparams *cp,
                        bool sparse);
int b2s_fw_copy_metas(b2s_frame_metas *dst, const b2s_frame_metas *src);
/* nbytes and cbytes (0 for a special entry) of chunk i as stored now. */
int b2s_fw_entry_sizes(b2s_fwriter *w, int64_t i, int32_t *nbytes,
                   int32_t *cbytes);
/* Mark sparse chunk id as in use. */
int b2s_fw_id_mark(b2s_fwriter *w, int64_t id);

/* frame_wopen.c: b2s_fwriter_open with the frame's lock already held by
 * *lockfd, which moves into the writer on success (*lockfd = -1).
 * lost_ok (recovery only): a sparse frame written elsewhere opens even
 * with chunk files missing, their entries kept for the caller to drop. */
int b2s_fw_open_locked(const char *path, const b2s_fwriter_opts *opts,
                   int *lockfd, b2s_fwriter **out, b2s_frame_error *err,
                   bool lost_ok);

/* frame_rfile.c: a frame file opened for recovery (with `lock`, the
 * frame's lock taken first: recovery rewrites the header and removes
 * files, which must never happen beside a writer) at its natural header
 * length (`base`, from the metalayer section, which no commit rewrites). */
typedef struct fw_rfile {
  bool sparse;
  int fd, dirfd;
  int lockfd;                      /* the frame's lock, or -1 */
  int64_t size, base;
} fw_rfile;
int b2s_fw_rfile_open(const char *path, bool lock, fw_rfile *r);
/* b2s_fw_rfile_open, then the commit records (*nvalid of them valid). */
int b2s_fw_rfile_records(const char *path, bool lock, fw_rfile *r,
                     fw_record rec[2], int *nvalid);
void b2s_fw_rfile_close(fw_rfile *r);
/* 1 when path has valid commit records, 0 when not. */
int b2s_fw_has_records(const char *path);

#endif

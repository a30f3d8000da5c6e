/* An acquisition's files, the writer's side (acqfile.c,
 * docs/ACQUISITIONS.md 3.4, 3.5): a stream with `acquisitions: only` has
 * no frame of its own; an acquisition hands its writer a plan (a control
 * chunk, b2sd_chunk.acq_begin) and the writer creates the acquisition's
 * first file, rolls over to the next one every frames_per_file positions,
 * and at the plan's end (b2sd_chunk.acq_end) commits, closes and marks
 * every file with the end state.
 *
 * The plan is the acquisition's (daemon/acquire/); the writer borrows it
 * from its begin chunk to its end chunk and publishes its progress in the
 * plan's atomics, which the I/O thread reads: each store below sits with
 * the load it pairs with.  Chunk index = the acquisition's frame number
 * within its file: positions are counted in the writer's order, which is
 * the stream's sequence order. */
#ifndef B2SD_ACQFILE_H
#define B2SD_ACQFILE_H

#include <stdatomic.h>

#include "b2s_acq_request.h"
#include "b2s_meta.h"
#include "b2sd.h"

/* The end state an acquisition's files are marked with (3.5). */
enum b2sd_acq_end {
  B2SD_ACQ_END_DONE = 0, B2SD_ACQ_END_ABORTED, B2SD_ACQ_END_FAILED,
  B2SD_ACQ_END_INTERRUPTED,
};
const char *b2sd_acq_end_name(int code);

typedef struct b2sd_acqplan {
  /* Set by the I/O thread before the begin chunk, then read only. */
  char dir[B2S_CONFIG_PATH_MAX];     /* resolved, checked at arm */
  b2s_acq_template tmpl;
  char id[B2S_ACQ_NAME_PART_MAX + 1];
  char stream[B2S_ACQ_NAME_PART_MAX + 1];
  char channel[B2S_ACQ_NAME_PART_MAX + 1];
  char input[B2S_ACQ_NAME_PART_MAX + 16];   /* "stream:NAME" */
  char armed_at[40];                 /* RFC 3339 */
  uint32_t frames_per_file;
  uint64_t frames;                   /* expected; 0: until stopped */
  uint8_t *series;                   /* the files' series map, owned */
  size_t series_len;
  bool fail_on_loss;                 /* on_loss: fail (a gap fails it) */
  /* The end state the files get (enum b2sd_acq_end): set by the I/O
   * thread before the end chunk, raised by an abort while closing;
   * relaxed: the writer reads it after the end chunk, which the stream's
   * lock orders after the first store. */
  _Atomic int end_code;
  /* Set by the I/O thread at an abort (release), read by the writer
   * (acquire): chunks that reach it from then on are not written. */
  _Atomic bool discard;
  /* Published by the writer (release), read by the I/O thread (acquire). */
  _Atomic uint64_t files;            /* files created */
  _Atomic uint64_t written;          /* positions committed (readable) */
  _Atomic uint64_t committed;        /* ... and synced */
  _Atomic uint64_t bytes;            /* chunk bytes stored */
  _Atomic uint64_t gaps;             /* placeholder positions stored */
  _Atomic uint64_t discarded;        /* chunks dropped by an abort */
  _Atomic int failed;                /* the first error, 0: none */
  _Atomic bool ended;                /* every file closed and marked */
} b2sd_acqplan;

/* The writer's state of the plan it writes (in its own struct). */
typedef struct b2sd_acqw {
  b2sd_acqplan *p;                   /* NULL: none */
  uint64_t file;                     /* current file number, from 1 */
  uint64_t in_file;                  /* positions appended to it */
  uint64_t positions;                /* positions appended in all */
  uint64_t bytes, gaps;
  char path[B2S_CONFIG_PATH_MAX];    /* the current file's */
} b2sd_acqw;

/* The name of file number `file` of plan p into out: its length, or < 0. */
int b2sd_acq_file_name(const b2sd_acqplan *p, uint64_t file, char *out,
                       size_t cap);
/* The update {"b2stream_acquisition": {...}} of file number `file` (3.5)
 * into out (initialised); frames < 0 leaves frames, last_file and files
 * out (a file being written). */
int b2sd_acq_file_update(const b2sd_acqplan *p, uint64_t file,
                         const char *state, int64_t frames, bool last,
                         uint64_t files, b2s_mpbuf *out);

/* Writer thread.  Begin: create file 1 of p into *fw (none may be open).
 * 0 or the error (published in p->failed). */
int b2sd_acqw_begin(b2sd_acqw *a, b2sd_acqplan *p, const b2s_stream_cfg *cfg,
                    const b2s_fwriter_opts *opts, b2s_pair **fw);
/* Before a position is appended: roll over to the next file when the
 * current one is full.  0 or the error. */
int b2sd_acqw_before(b2sd_acqw *a, const b2s_stream_cfg *cfg,
                     const b2s_fwriter_opts *opts, b2s_pair **fw);
/* Whether chunks are to be discarded (an abort). */
bool b2sd_acqw_discarding(b2sd_acqw *a);
void b2sd_acqw_discarded(b2sd_acqw *a);
/* A position was appended (cbytes 0: a gap). */
void b2sd_acqw_appended(b2sd_acqw *a, int64_t cbytes);
/* A commit made every appended position readable, and synced when
 * durable. */
void b2sd_acqw_committed(b2sd_acqw *a, bool durable);
/* End: commit, mark and close the current file, mark every earlier one;
 * then p->ended.  *fw is NULL after.  0 or the first error. */
int b2sd_acqw_end(b2sd_acqw *a, b2s_pair **fw, const b2s_fwriter_opts *opts);
/* The writer failed: published once in the plan. */
void b2sd_acqw_fail(b2sd_acqw *a, int rc);

#endif

/* The frame writer's one helper thread (frame_helper.c).  Internal to
 * core.
 *
 * The frame writer is used by the daemon's stream writers, the b2stream
 * tool's convert and pack, and bench_append alike, so whatever paces its
 * write-out lives here rather than in any one of them.  A writer has at
 * most one helper, for work that may wait for the disk and must not make
 * the writer (and so every commit) wait with it:
 *   - direct I/O (frame_dio.c): a full stage is written from here while
 *     the writer fills the other one;
 *   - drop-behind (opts.drop_behind; a contiguous frame whose chunk data
 *     goes through the page cache): data well behind the end is handed to
 *     writeback and then dropped from the page cache.
 * A writer does one or the other, never both: drop-behind is for buffered
 * data only.  The thread starts at its first job, blocks every signal, and
 * shares nothing with the writer but this struct, every field of which is
 * under mu.  b2s_fw_helper_free (b2s_fwriter_free, and b2s_fwriter_close before
 * compaction when it only paces) stops and joins it; a queued stage is
 * written first.
 *
 * Ownership: the writer owns its helper.  buf's bytes belong to the helper
 * while state is FW_STAGE_QUEUED and to the writer otherwise. */
#ifndef B2S_FRAME_HELPER_H
#define B2S_FRAME_HELPER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_frame_writer.h"

enum { FW_STAGE_IDLE, FW_STAGE_QUEUED, FW_STAGE_DONE };

typedef struct fw_helper {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t th;
  bool started;                    /* the writer's thread alone reads it */
  bool stop;

  /* Direct I/O: the stage being written, or the spare when idle. */
  int state;                       /* FW_STAGE_* */
  int dfd;                         /* -1: no direct I/O */
  uint8_t *buf;                    /* allocated at the first hand-over */
  size_t cap, len;
  int64_t pos;
  int rc;

  /* Drop-behind: the file, where its chunk data ends, how far writeback
   * and dropping got.  fd -1: no drop-behind. */
  int fd;
  int64_t end, wb_from, drop_from;
} fw_helper;

/* A helper with no job yet (dfd and fd -1), or NULL without memory. */
fw_helper *b2s_fw_helper_new(void);
/* Start the thread (once; 0 when running).  Negative errno when it cannot
 * be created. */
int b2s_fw_helper_start(fw_helper *h);
/* Stop and join the thread (a queued stage is written first), free.
 * Accepts NULL. */
void b2s_fw_helper_free(fw_helper *h);

/* Drop-behind of the writer's contiguous frame when opts.drop_behind asks
 * for it and its chunk data goes through the page cache; without memory
 * there is none (it is only a hint). */
void b2s_fw_pace_open(b2s_fwriter *w);
/* After a commit: where the chunk data ends now. */
void b2s_fw_pace_note(b2s_fwriter *w);
/* No more drop-behind (before compaction moves the data's end). */
void b2s_fw_pace_stop(b2s_fwriter *w);

#endif

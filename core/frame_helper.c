/* The frame writer's one helper thread: the jobs it runs and its life
 * (frame_helper.h says why there is exactly one, and what it shares).
 *
 * Drop-behind: chunk data of a contiguous frame is written once and read,
 * if at all, by consumers near the end.  After each commit the writer
 * tells the helper how far the data goes; the helper hands data more than
 * PACE_WINDOW before the end to writeback and drops data twice that far
 * back, written back by then, from the page cache.  The writer thus
 * recycles a bounded set of cache pages instead of taking fresh memory for
 * every byte (fresh pages cost a fault and a clear each, and far more in a
 * VM that backs its memory lazily), and writeback runs steadily instead of
 * in bursts at the dirty limits.  The helper makes the calls because they
 * may wait for the disk or the journal, which the writer must not; when
 * the helper lags, the cache just grows as it would without it.  Both
 * calls are hints: failures are ignored. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "frame_helper.h"
#include "frame_io.h"
#include "fwriter_internal.h"

#define PACE_WINDOW (INT64_C(64) << 20)
#define PACE_STEP (INT64_C(8) << 20)
#define PACE_FROM (INT64_C(1) << 20)   /* header and commit area stay */

fw_helper *b2s_fw_helper_new(void) {
  fw_helper *h = calloc(1, sizeof *h);
  if (h == NULL)
    return NULL;
  if (pthread_mutex_init(&h->mu, NULL) != 0) {
    free(h);
    return NULL;
  }
  if (pthread_cond_init(&h->cv, NULL) != 0) {
    pthread_mutex_destroy(&h->mu);
    free(h);
    return NULL;
  }
  h->dfd = h->fd = -1;
  h->wb_from = h->drop_from = PACE_FROM;
  return h;
}

/* Under mu: whether enough data lies behind the window to pace. */
static bool pace_due(const fw_helper *h) {
  return h->fd >= 0 && h->end - PACE_WINDOW - h->wb_from >= PACE_STEP;
}

/* Write the queued stage; entered and left with mu held. */
static void stage_write(fw_helper *h) {
  pthread_mutex_unlock(&h->mu);
  /* a throwaway writer: no fault injection, and direct writes go whole */
  int rc = b2s_fw_pwrite(&(b2s_fwriter){.write_limit = -1, .dfd = h->dfd}, h->dfd,
                     h->buf, h->len, h->pos);
  pthread_mutex_lock(&h->mu);
  h->rc = rc;
  h->state = FW_STAGE_DONE;
  pthread_cond_broadcast(&h->cv);
}

/* One drop-behind step up to the data end noted last; entered and left
 * with mu held. */
static void pace_step(fw_helper *h) {
  int fd = h->fd;
  int64_t end = h->end, wb_from = h->wb_from, drop_from = h->drop_from;
  pthread_mutex_unlock(&h->mu);
  int64_t wb_to = (end - PACE_WINDOW) & ~(PACE_STEP - 1);
  sync_file_range(fd, wb_from, wb_to - wb_from, SYNC_FILE_RANGE_WRITE);
  int64_t drop_to = (end - 2 * PACE_WINDOW) & ~(PACE_STEP - 1);
  if (drop_to - drop_from >= PACE_STEP) {
    posix_fadvise(fd, drop_from, drop_to - drop_from, POSIX_FADV_DONTNEED);
    drop_from = drop_to;
  }
  pthread_mutex_lock(&h->mu);
  h->wb_from = wb_to;
  h->drop_from = drop_from;
}

static void *helper_main(void *arg) {
  fw_helper *h = arg;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (h->state != FW_STAGE_QUEUED && !h->stop && !pace_due(h))
      pthread_cond_wait(&h->cv, &h->mu);
    if (h->state == FW_STAGE_QUEUED)   /* even when stopping */
      stage_write(h);
    else if (h->stop)
      break;
    else
      pace_step(h);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* Signals stay with the application's threads: a write past RLIMIT_FSIZE
 * must give EFBIG here, not a SIGXFSZ that stops the process. */
int b2s_fw_helper_start(fw_helper *h) {
  if (h->started)
    return 0;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&h->th, NULL, helper_main, h);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0)
    return -rc;
  pthread_setname_np(h->th, "b2s-fwriter");
  h->started = true;
  return 0;
}

void b2s_fw_helper_free(fw_helper *h) {
  if (h == NULL)
    return;
  if (h->started) {
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->th, NULL);
  }
  pthread_cond_destroy(&h->cv);
  pthread_mutex_destroy(&h->mu);
  free(h->buf);
  free(h);
}

/* ---- drop-behind ---------------------------------------------------------- */

void b2s_fw_pace_open(b2s_fwriter *w) {
  if (!w->opts.drop_behind || w->sparse || w->dfd >= 0 || w->helper != NULL)
    return;   /* no chunk data in the page cache to pace */
  w->helper = b2s_fw_helper_new();
  if (w->helper != NULL)
    w->helper->fd = w->fd;
}

void b2s_fw_pace_note(b2s_fwriter *w) {
  fw_helper *h = w->helper;
  if (h == NULL || h->dfd >= 0)
    return;
  pthread_mutex_lock(&h->mu);
  h->end = w->base + w->data_end;   /* the file offset where data ends */
  bool due = pace_due(h);
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&h->mu);
  /* the thread at the first step: small frames never need one */
  if (due && !h->started && b2s_fw_helper_start(h) < 0) {
    pthread_mutex_lock(&h->mu);
    h->fd = -1;   /* no thread, no drop-behind: it is only a hint */
    pthread_mutex_unlock(&h->mu);
  }
}

void b2s_fw_pace_stop(b2s_fwriter *w) {
  if (w->helper == NULL || w->helper->dfd >= 0)
    return;
  b2s_fw_helper_free(w->helper);
  w->helper = NULL;
}

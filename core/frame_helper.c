/* The frame writer's helper thread: the jobs it runs and its life
 * (frame_helper.h says what it is for and what it shares).
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
#include "frame_helper.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

#include "frame_io.h"

#define PACE_WINDOW (INT64_C(64) << 20)
#define PACE_STEP (INT64_C(8) << 20)
#define PACE_FROM (INT64_C(1) << 20)   /* header and commit area stay */

enum { WRITE_IDLE, WRITE_QUEUED, WRITE_DONE };

struct b2s_fwhelper {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t th;
  bool started;                    /* the owner's thread alone reads it */
  bool stop;

  /* The write handed over. */
  int state;                       /* WRITE_* */
  int wfd;
  const void *buf;
  size_t len;
  int64_t pos;
  int rc;

  /* Drop-behind: the file, where its chunk data ends, how far writeback
   * and dropping got.  fd -1: no drop-behind. */
  int fd;
  int64_t end, wb_from, drop_from;
};

b2s_fwhelper *b2s_fwhelper_new(void) {
  b2s_fwhelper *h = calloc(1, sizeof *h);
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
  h->wfd = h->fd = -1;
  h->wb_from = h->drop_from = PACE_FROM;
  return h;
}

/* Under mu: whether enough data lies behind the window to pace. */
static bool pace_due(const b2s_fwhelper *h) {
  return h->fd >= 0 && h->end - PACE_WINDOW - h->wb_from >= PACE_STEP;
}

/* Do the write handed over; entered and left with mu held. */
static void do_write(b2s_fwhelper *h) {
  pthread_mutex_unlock(&h->mu);
  /* its own count, uncut: the owner counts the bytes when it waits */
  b2s_fio io;
  b2s_fio_init(&io);
  int rc = b2s_fio_write_direct(&io, h->wfd, -1, h->buf, h->len, h->pos);
  pthread_mutex_lock(&h->mu);
  h->rc = rc;
  h->state = WRITE_DONE;
  pthread_cond_broadcast(&h->cv);
}

/* One drop-behind step up to the data end noted last; entered and left
 * with mu held. */
static void pace_step(b2s_fwhelper *h) {
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
  b2s_fwhelper *h = arg;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (h->state != WRITE_QUEUED && !h->stop && !pace_due(h))
      pthread_cond_wait(&h->cv, &h->mu);
    if (h->state == WRITE_QUEUED)   /* even when stopping */
      do_write(h);
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
int b2s_fwhelper_start(b2s_fwhelper *h) {
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

void b2s_fwhelper_free(b2s_fwhelper *h) {
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
  free(h);
}

/* ---- writes ---------------------------------------------------------------- */

void b2s_fwhelper_write(b2s_fwhelper *h, int fd, const void *buf, size_t len,
                        int64_t pos) {
  pthread_mutex_lock(&h->mu);
  h->wfd = fd;
  h->buf = buf;
  h->len = len;
  h->pos = pos;
  h->state = WRITE_QUEUED;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

int b2s_fwhelper_wait(b2s_fwhelper *h) {
  pthread_mutex_lock(&h->mu);
  while (h->state == WRITE_QUEUED)
    pthread_cond_wait(&h->cv, &h->mu);
  int rc = h->state == WRITE_DONE ? h->rc : 0;
  h->state = WRITE_IDLE;
  pthread_mutex_unlock(&h->mu);
  return rc;
}

/* ---- drop-behind ------------------------------------------------------------ */

void b2s_fwhelper_pace(b2s_fwhelper *h, int fd) {
  pthread_mutex_lock(&h->mu);
  h->fd = fd;
  pthread_mutex_unlock(&h->mu);
}

void b2s_fwhelper_pace_to(b2s_fwhelper *h, int64_t end) {
  if (h == NULL)
    return;
  pthread_mutex_lock(&h->mu);
  h->end = end;
  bool due = pace_due(h);
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&h->mu);
  if (due && !h->started && b2s_fwhelper_start(h) < 0) {
    pthread_mutex_lock(&h->mu);
    h->fd = -1;   /* no thread, no drop-behind: it is only a hint */
    pthread_mutex_unlock(&h->mu);
  }
}

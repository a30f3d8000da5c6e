/* The frame writer's helper thread (frame_helper.c).  Internal to core.
 *
 * The frame writer is used by the daemon's stream writers, the b2stream
 * tool's convert and pack, and bench_append alike, so whatever paces its
 * write-out lives here rather than in any one of them.  A helper does work
 * that may wait for the disk and must not make its owner (and so every
 * commit) wait with it.  It has two kinds of job, and a writer has at most
 * one helper, for one of them:
 *   - a write handed over (frame_dio.c: a full direct-I/O stage is written
 *     from here while the writer fills the other one);
 *   - drop-behind (the writer's opts.drop_behind; a contiguous frame whose
 *     chunk data goes through the page cache): data well behind the end is
 *     handed to writeback and then dropped from the page cache.
 * The thread, named b2s-fwriter, starts when asked (b2s_fwhelper_start,
 * or at the first drop-behind step), blocks every signal, and shares
 * nothing with its owner but the helper, every field of which is under
 * its mutex.  b2s_fwhelper_free stops and joins it; a write handed over is
 * done first.
 *
 * Ownership: the helper belongs to whoever made it (the direct-I/O stage,
 * or the writer for drop-behind), and is called from that owner's thread
 * only.  It knows no writer: it is given descriptors, which stay the
 * owner's and must outlive it, and the bytes of a write, which stay the
 * owner's but must not be touched from b2s_fwhelper_write until
 * b2s_fwhelper_wait returns. */
#ifndef B2S_FRAME_HELPER_H
#define B2S_FRAME_HELPER_H

#include <stddef.h>
#include <stdint.h>

typedef struct b2s_fwhelper b2s_fwhelper;

/* A helper with no job and no thread yet, or NULL without memory. */
b2s_fwhelper *b2s_fwhelper_new(void);
/* Stop and join the thread (a write handed over is done first), free.
 * Accepts NULL. */
void b2s_fwhelper_free(b2s_fwhelper *h);
/* Start the thread (once; 0 when running).  Negative errno when it cannot
 * be created. */
int b2s_fwhelper_start(b2s_fwhelper *h);

/* ---- writes -------------------------------------------------------------- */

/* Write buf[0..len) at pos of fd (O_DIRECT: in one piece) from the thread,
 * which must be running.  One write at a time: the previous one has been
 * waited for. */
void b2s_fwhelper_write(b2s_fwhelper *h, int fd, const void *buf, size_t len,
                        int64_t pos);
/* Wait for the write handed over last; its result (0 or a negative
 * error), 0 when none is pending. */
int b2s_fwhelper_wait(b2s_fwhelper *h);

/* ---- drop-behind ----------------------------------------------------------- */

/* Pace the write-out of fd, a contiguous frame's file. */
void b2s_fwhelper_pace(b2s_fwhelper *h, int fd);
/* After a commit: the file offset where its chunk data ends now.  The
 * thread starts at the first step due (small frames never need one);
 * without it there is no drop-behind (it is only a hint).  Accepts NULL. */
void b2s_fwhelper_pace_to(b2s_fwhelper *h, int64_t end);

#endif

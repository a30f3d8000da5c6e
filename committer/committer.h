/* b2stream-committer: the one process that moves the committed count of
 * distributed frames (docs/DISTRIBUTED.md, "Commit protocol").
 *
 * committer.c owns the sockets, the clock, signals and the main loop;
 * committer_frame.c owns one frame's handle and tracker and carries out
 * the tracker's decisions against the store; committer_log.c writes the
 * log: stderr, one line per notable event, sd-daemon priority prefix. */
#ifndef B2S_COMMITTER_H
#define B2S_COMMITTER_H

#include <stdbool.h>
#include <stdint.h>

#include "b2s_dcommit.h"
#include "b2s_dframe.h"
#include "b2s_dmsg.h"

#define CM_BATCH_MAX 4096           /* records per key-log batch */
#define CM_STEPS_MAX 256            /* decisions per frame per loop round */

typedef struct cm_opts {
  const char *store_url;
  const char *ceph_conf;
  const char **frames;              /* --frame names (may be none) */
  int nframes;
  const char *pull, *pub;           /* endpoints the committer binds */
  int64_t gap_timeout_ms;
  int64_t window;                   /* 0: the tracker's default */
  int sync;                         /* enum b2s_sync, local store */
  int64_t lease_ms;                 /* a frame's lease in the store */
} cm_opts;

/* Run until SIGTERM or SIGINT; returns the process exit status. */
int cm_run(const cm_opts *o);

/* ---- one frame (committer_frame.c) ---- */

typedef struct cm_frame {
  char name[B2S_DMSG_NAME_MAX + 1];
  b2s_dframe *df;                   /* NULL until NAME.meta is there */
  b2s_dcommit *dc;
  int64_t retry_at;                 /* after a store error: not before */
  bool closed;                      /* "closed" is set in the store */
  int64_t gaps, lost_found;         /* gaps written, records probed back */
  int64_t late;                     /* WRITTEN refused after the close */
  b2s_lease *lease;                 /* this committer's, in the store */
  b2s_dcommit_lease lease_wait;     /* while another holds it */
} cm_frame;

/* Open the frame and rebuild its state from the store: H from
 * "committed", then the records stored at H, H+1, ... while present.
 * -ENOENT while the frame has no NAME.meta. */
int cm_frame_open(cm_frame *f, b2s_store *s, const cm_opts *o);
void cm_frame_fini(cm_frame *f);

/* A decoded WRITTEN or END for this frame.  Returns 0, or a negative code
 * for a message that was refused (logged by the caller). */
int cm_frame_message(cm_frame *f, const b2s_dmsg *m);

/* Carry out decisions until there is nothing to do, at most
 * CM_STEPS_MAX of them.  gaps: whether missing chunks may become gaps
 * (not while stopping).  *published is set when H moved or the frame got
 * closed; *wait_ms gets when to come back (-1: on a message only, 0: at
 * once). */
void cm_frame_step(cm_frame *f, int64_t now_ms, bool gaps, bool *published,
                   int64_t *wait_ms);

/* ---- the frame's lease (committer_lease.c) ---- */

/* Start f's wait state: expire_ms is how long a dead holder keeps a
 * lease in this store (b2s_dcommit_lease). */
void cm_lease_init(cm_frame *f, int64_t expire_ms);
/* Try to take f's lease at now_ms when its wait says a try is due
 * (b2s_dcommit_lease_wait); 0 when held, B2S_E_BUSY while another holds
 * it (the holder logged at the first refusal and when shown alive), or
 * the store's code. */
int cm_lease_try(cm_frame *f, b2s_store *s, const cm_opts *o, int64_t now_ms);
/* Renew it; B2S_E_BUSY when it was lost (then dropped: the caller closes
 * the frame). */
int cm_lease_renew(cm_frame *f);
void cm_lease_drop(cm_frame *f);

/* ---- logging (committer_log.c) ---- */

void cm_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define CM_ERR 3
#define CM_WARN 4
#define CM_INFO 6

#endif

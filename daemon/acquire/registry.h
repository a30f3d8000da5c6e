/* The acquisitions the daemon holds (registry.c, docs/ACQUISITIONS.md
 * 3-7): arm with the checks of 6.1, their states and counters, stop,
 * abort, the end when `frames` are reached, and the answers of the
 * control API's routes as JSON.  I/O thread only: the HTTP listener
 * reaches it through requests the I/O thread answers (http.h), never
 * directly.
 *
 * Inputs served: streams with `acquisitions: only` (their writer makes
 * the files, acqfile.h).  Each acquisition borrows its stream while it
 * has not ended.
 *
 * Events: b2sd_acq_set_hook names a function called at each change
 * (armed, writing, progress at most acquisitions.progress_hz a second,
 * file, closing, end) with the event's type, the acquisition's id and its
 * data as one line of JSON (the acquisition's object, or the members
 * ACQUISITIONS.md section 10 lists).  The data is valid during the call
 * only. */
#ifndef B2SD_REGISTRY_H
#define B2SD_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "b2sd.h"

typedef struct b2sd_acqreg b2sd_acqreg;

enum b2sd_acq_state {
  B2SD_ACQ_ARMED = 0, B2SD_ACQ_WRITING, B2SD_ACQ_CLOSING, B2SD_ACQ_DONE,
  B2SD_ACQ_ABORTED, B2SD_ACQ_FAILED, B2SD_ACQ_INTERRUPTED,
  B2SD_ACQ_NSTATES
};
/* "armed", ...; NULL for a value out of the enum. */
const char *b2sd_acq_state_name(int s);
/* The value of a state's name, or of "ended"/"active" as the lists and
 * waits take them (B2SD_ACQ_NSTATES, B2SD_ACQ_NSTATES + 1); -1 if none. */
int b2sd_acq_state_by_name(const char *name);

typedef void (*b2sd_acq_hook)(void *arg, const char *type, const char *id,
                              const char *data);

/* NULL when srv's configuration has no acquisitions: (or no memory). */
b2sd_acqreg *b2sd_acq_new(b2sd_server *srv);
/* After the streams are freed (their writers borrowed the plans). */
void b2sd_acq_free(b2sd_acqreg *r);
void b2sd_acq_set_hook(b2sd_acqreg *r, b2sd_acq_hook fn, void *arg);
/* Each turn of the I/O loop: progress, states, ends. */
void b2sd_acq_turn(b2sd_acqreg *r);

/* An answer: HTTP status and its JSON body (malloc'ed, the caller's);
 * location for a 201. */
typedef struct b2sd_acq_reply {
  int status;
  char *body;
  char location[160];
} b2sd_acq_reply;

/* Who asks (9.2) and from where, for the log and the object. */
typedef struct b2sd_acq_who {
  char who[64];
  char from[64];
} b2sd_acq_who;

/* POST /api/v1/acquisitions: the body as it came (its media type and size
 * checked by the listener).  Always answers. */
void b2sd_acq_arm(b2sd_acqreg *r, const char *body, size_t len,
                  const b2sd_acq_who *w, b2sd_acq_reply *out);
/* GET /api/v1/acquisitions: states a bit mask of enum b2sd_acq_state
 * (0: all), limit 1..256, after an id or "". */
void b2sd_acq_list(b2sd_acqreg *r, unsigned states, int limit,
                   const char *after, b2sd_acq_reply *out);
void b2sd_acq_get(b2sd_acqreg *r, const char *id, b2sd_acq_reply *out);
/* GET .../files: after a file number, limit 1..1000. */
void b2sd_acq_files(b2sd_acqreg *r, const char *id, uint64_t after,
                    int limit, b2sd_acq_reply *out);
/* POST .../stop and .../abort. */
void b2sd_acq_stop(b2sd_acqreg *r, const char *id, bool abort,
                   const b2sd_acq_who *w, b2sd_acq_reply *out);

/* GET .../wait: committed >= N (state < 0) or the state `state` (a value
 * of b2sd_acq_state_by_name).  Returns true with *out filled when it is
 * answered (met, cannot be met, lost frames, or timed_out: 504), false
 * while it is pending (nothing filled). */
typedef struct b2sd_acq_waitq {
  uint64_t committed;
  int state;                         /* -1: committed */
  int allow_loss;                    /* -1: by on_loss */
} b2sd_acq_waitq;
bool b2sd_acq_wait(b2sd_acqreg *r, const char *id, const b2sd_acq_waitq *q,
                   bool timed_out, b2sd_acq_reply *out);

/* GET /api/v1. */
void b2sd_acq_api(b2sd_acqreg *r, bool authenticated, b2sd_acq_reply *out);

/* An error answer (9.3) of an API code with a message (NULL: the code's
 * meaning) and a field (NULL: none). */
void b2sd_acq_error(int code, const char *field, const char *msg,
                    b2sd_acq_reply *out);

#endif

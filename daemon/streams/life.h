/* A stream's life (life.c): one state, owned by the I/O thread, and the
 * only way to change it, b2sd_life_move, which refuses a move the machine
 * below does not have (an invariant broken: it aborts in developer builds,
 * and logs an error and leaves the state as it was otherwise).
 *
 *   NEW       calloc'ed by b2sd_stream_open, nothing open yet.
 *   READY     its frame is open (a distributed stream: its store is the
 *             writer's to open), no writer runs yet.
 *   FAILED    no writer runs and no frame is open: the frame could not be
 *             opened, or a re-open failed.  OPEN tries a re-open again.
 *   WRITING   its writer thread runs.  The writer may have failed since
 *             (b2sd_progress_failed): that is the writer's to publish,
 *             and a re-open (WRITING -> ENDED -> ...) ends it.
 *   RETIRING  its series ended (retire.h): no new handle; the writer, if
 *             any, goes on until every seq given is held.
 *   STOPPING  retiring, and the writer was asked to stop.
 *   CLOSED    retiring, the writer exited (or there was none): the frame
 *             is closed, the stream is freed once its follows and reads
 *             are done.  As with a handle closed in an event loop, the
 *             memory outlives the close until the last user lets go.
 *   ENDED     the writer stopped and was joined, or a frame no writer took
 *             was closed: freed next (b2sd_stream_free), or re-opened.
 *
 * Transitions, and who makes them:
 *   NEW -> READY, FAILED      b2sd_stream_open
 *   READY -> WRITING          b2sd_stream_start
 *   READY -> FAILED           a re-open's writer did not start
 *   READY, FAILED, WRITING, RETIRING, STOPPING, CLOSED, NEW -> ENDED
 *                             writer_end (b2sd_stream_reopen, _free)
 *   ENDED -> READY, FAILED    b2sd_stream_reopen: the frame opened, or not
 *   READY, FAILED, WRITING -> RETIRING    b2sd_stream_retire
 *   RETIRING -> STOPPING, CLOSED; STOPPING -> CLOSED    b2sd_retire_turn
 *
 * Plain data: no stream, lock or thread here, so the machine is tested
 * on its own (tests/test_stream_life.c). */
#ifndef B2SD_LIFE_H
#define B2SD_LIFE_H

#include <stdbool.h>

typedef enum b2sd_life {
  B2SD_LIFE_NEW = 0,
  B2SD_LIFE_READY,
  B2SD_LIFE_FAILED,
  B2SD_LIFE_WRITING,
  B2SD_LIFE_RETIRING,
  B2SD_LIFE_STOPPING,
  B2SD_LIFE_CLOSED,
  B2SD_LIFE_ENDED,
  B2SD_LIFE_COUNT
} b2sd_life;

/* "NEW", "READY", ...; "?" for a value out of the enum. */
const char *b2sd_life_name(b2sd_life s);
/* Whether from -> to is a transition of the machine above. */
bool b2sd_life_legal(b2sd_life from, b2sd_life to);
/* Move *life to `to`: 0, or -EINVAL for a transition the machine does not
 * have (stream names the stream in the error; *life stays as it was). */
int b2sd_life_move(b2sd_life *life, b2sd_life to, const char *stream);

/* Its series ended: RETIRING, STOPPING or CLOSED. */
static inline bool b2sd_life_retiring(b2sd_life s) {
  return s == B2SD_LIFE_RETIRING || s == B2SD_LIFE_STOPPING ||
         s == B2SD_LIFE_CLOSED;
}

#endif

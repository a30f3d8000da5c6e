/* Closing a stream for good inside the running daemon (retire.c): a
 * detector series' streams once the series ended (source_s2.c).
 *
 * Retiring never blocks the I/O thread: each turn (b2sd_retire_turn) moves
 * a retiring stream one step on, as far as it can.
 *   1. At once: its producer handles end (ERROR B2S_E_CLOSED, closed_ref);
 *      OPEN refuses it from now on.
 *   2. Once every seq given is written (the workers and the writer hold
 *      nothing of it): its writer is told to stop; it commits, closes the
 *      frame (compacted, as at a stop of the daemon) and exits.
 *   3. Once the writer exited: each follow that was sent every committed
 *      chunk ends (ERROR B2S_E_CLOSED, closed_ref, ref_index the chunk
 *      count, as when a stream is removed while followed).
 *   4. Once no follow and no read is left: the stream leaves the list, is
 *      freed, and no longer counts against max_streams.
 * A stream whose frame failed is not retired: it stays, as before, for
 * OPEN to retry. */
#ifndef B2SD_RETIRE_H
#define B2SD_RETIRE_H

#include "b2sd.h"

/* Start closing st for good (step 1).  I/O thread. */
void b2sd_stream_retire(b2sd_stream *st);
/* Take the retiring streams on as far as they go (steps 2 to 4).  I/O
 * thread, each turn of its loop; nothing while the daemon drains (the stop
 * closes them all). */
void b2sd_retire_turn(b2sd_server *srv);

#endif

/* The live view (live.c, docs/ACQUISITIONS.md section 11): the latest
 * frame of each image stream, sampled at a bounded rate, for the HTTP
 * route /api/v1/streams/NAME/latest and a ZeroMQ PUB socket.
 *
 * Ingest never waits for it.  The I/O thread, at most live.max_rate_hz
 * times a second and only while someone looks (a PUB socket, or an HTTP
 * request in the last few seconds), copies each stream's name, path and
 * committed count into a small table (b2sd_live_turn); no frame bytes are
 * touched there.  The sampler thread ("b2s-live") reads the newest
 * eligible frame (a multiple of live.every_n) back from the file with its
 * own reader, never from a writer's buffers and never under a writer's
 * lock, at most max_rate_hz times a second per stream, holds it for the
 * HTTP route and sends it on the PUB socket (which it alone owns), never
 * waiting for a subscriber.
 *
 * `lock` (a leaf) guards the stream slots, the samples' references and
 * the published table; decoding and sending happen outside it. */
#ifndef B2SD_LIVE_H
#define B2SD_LIVE_H

#include "b2sd.h"
#include "thumb.h"

typedef struct b2sd_live b2sd_live;

/* A sampled frame, shared by the requests that send it (reference
 * counted under the live view's lock). */
typedef struct b2sd_live_frame {
  b2sd_image im;
  int64_t frame;                 /* the frame number (chunk index) */
  uint64_t written_ns;           /* CLOCK_REALTIME of its commit */
  char stream[B2S_STREAM_NAME_MAX + 1];
  int refs;
} b2sd_live_frame;

/* Start the live view when it can be seen (http: or live.publish
 * configured; *out NULL otherwise): bind the PUB socket, start the
 * sampler.  I/O thread, at start.  0 or a negative error (logged). */
int b2sd_live_start(b2sd_server *srv, b2sd_live **out);
/* I/O thread, each turn: publish the streams' table when it is due. */
void b2sd_live_turn(b2sd_live *lv);
/* Stop and join the sampler, close the socket, free.  Accepts NULL. */
void b2sd_live_stop(b2sd_live *lv);

/* HTTP thread: the latest sample of stream `name`, referenced, waiting a
 * bounded time for a first one.  0, or B2S_ACQ_E_NO_SUCH_STREAM,
 * B2S_ACQ_E_NOT_AN_IMAGE, B2S_ACQ_E_NO_FRAME, B2S_ACQ_E_FRAME_TOO_LARGE. */
int b2sd_live_latest(b2sd_live *lv, const char *name, b2sd_live_frame **out);
void b2sd_live_frame_unref(b2sd_live *lv, b2sd_live_frame *f);
/* This run's epoch (random at start), for ETags. */
uint64_t b2sd_live_epoch(const b2sd_live *lv);
/* Frames sampled and PUB messages not sent to a full subscriber, since
 * the start (any thread).  NULL lv: 0, 0. */
void b2sd_live_counts(const b2sd_live *lv, uint64_t *frames,
                      uint64_t *dropped);

#endif

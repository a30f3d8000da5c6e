/* The events of GET /api/v1/events (events.c, docs/ACQUISITIONS.md
 * section 10): a ring of the last N events, each with its id EPOCH-SEQ,
 * kept as the server-sent-event text it is sent as.
 *
 * The I/O thread posts (a copy of at most B2SD_EVENT_DATA_MAX bytes under
 * `lock`, a leaf held for that copy only); each event stream reads with a
 * cursor of its own at its own pace, so a slow client never holds up a
 * post: one that falls behind the oldest held gets `events_lost` and goes
 * on from there.  The id parser reads a client's text (fuzzed in
 * tests/fuzz/fuzz_http.c). */
#ifndef B2SD_EVENTS_H
#define B2SD_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define B2SD_EVENTS_HELD 4096          /* acquisitions.events_held's default */
#define B2SD_EVENT_DATA_MAX 2048       /* bytes of one event's data */
#define B2SD_EVENT_ID_MAX 40           /* "EPOCH-SEQ" with its NUL */
#define B2SD_EVENT_ACQ_MAX 64          /* an acquisition id, bytes */
/* Room a reader gives b2sd_events_read: one event at least. */
#define B2SD_EVENT_TEXT_MAX (B2SD_EVENT_DATA_MAX + 512)

typedef struct b2sd_events b2sd_events;

/* A ring of `held` events (at least 1) of the run `epoch`.  NULL: no
 * memory. */
b2sd_events *b2sd_events_new(size_t held, uint64_t epoch);
void b2sd_events_free(b2sd_events *ev);

/* Post an event: type 1..31 characters of a-z and _, acq the
 * acquisition's id ("" for none: such an event goes to every stream),
 * data one line of JSON.  Its SEQ (from 1), or B2S_E_ARG (the type, the
 * id or the data breaks a rule: nothing is posted). */
int64_t b2sd_events_post(b2sd_events *ev, const char *type, const char *acq,
                         const char *data);
/* The newest SEQ posted (0: none yet), and the generation of the posts
 * for waiting: wait until the generation is not *gen or timeout_ms
 * passed; *gen becomes the current one. */
uint64_t b2sd_events_newest(b2sd_events *ev);
void b2sd_events_wait(b2sd_events *ev, uint64_t *gen, int timeout_ms);
uint64_t b2sd_events_epoch(const b2sd_events *ev);

/* An id "EPOCH-SEQ": EPOCH 16 hex digits (either case), SEQ a decimal
 * without leading zeros below 2^63.  0, or B2S_E_ARG. */
int b2sd_events_id_parse(const char *s, uint64_t *epoch, uint64_t *seq);
void b2sd_events_id_text(uint64_t epoch, uint64_t seq,
                         char out[B2SD_EVENT_ID_MAX]);

/* A reader's place. */
typedef struct b2sd_events_cursor {
  uint64_t next;                 /* the next SEQ to send */
  bool lost;                     /* events_lost is due first */
  const char *reason;            /* "evicted" or "restarted" */
  char asked[B2SD_EVENT_ID_MAX]; /* the id the client gave */
  char acq[B2SD_EVENT_ACQ_MAX + 1]; /* only this acquisition's, "" all */
} b2sd_events_cursor;

/* Place c after the event `last_id` (NULL: after the newest, so the
 * stream starts with the next one), for acquisition acq (NULL or "":
 * every one).  last_id must have passed b2sd_events_id_parse. */
void b2sd_events_cursor_init(b2sd_events *ev, b2sd_events_cursor *c,
                             const char *last_id, const char *acq);
/* The text of the held events after c, in order, into out (cap at least
 * B2SD_EVENT_TEXT_MAX), whole events only; an `events_lost` first when
 * c asked for (or fell behind to) events no longer held.  Bytes written,
 * 0 when there is nothing new; c advances past what was written. */
size_t b2sd_events_read(b2sd_events *ev, b2sd_events_cursor *c, char *out,
                        size_t cap);

#endif

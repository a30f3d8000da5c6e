/* The events ring (events.h). */
#include "events.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b2s_errors.h"

typedef struct event {
  uint64_t seq;                  /* 0: empty */
  char acq[B2SD_EVENT_ACQ_MAX + 1];
  char *text;                    /* "id: ...\nevent: ...\ndata: ...\n\n" */
  size_t len;
} event;

struct b2sd_events {
  uint64_t epoch;
  size_t held;
  pthread_mutex_t lock;          /* a leaf: the ring, newest, gen */
  pthread_cond_t posted;
  event *ring;                   /* seq s at ring[(s - 1) % held] */
  uint64_t newest;
  uint64_t gen;
};

b2sd_events *b2sd_events_new(size_t held, uint64_t epoch) {
  b2sd_events *ev = calloc(1, sizeof *ev);
  if (!ev)
    return NULL;
  ev->held = held ? held : 1;
  ev->ring = calloc(ev->held, sizeof *ev->ring);
  if (!ev->ring) {
    free(ev);
    return NULL;
  }
  ev->epoch = epoch;
  pthread_mutex_init(&ev->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&ev->posted, &ca);
  pthread_condattr_destroy(&ca);
  return ev;
}

void b2sd_events_free(b2sd_events *ev) {
  if (!ev)
    return;
  for (size_t i = 0; i < ev->held; i++)
    free(ev->ring[i].text);
  free(ev->ring);
  pthread_cond_destroy(&ev->posted);
  pthread_mutex_destroy(&ev->lock);
  free(ev);
}

uint64_t b2sd_events_epoch(const b2sd_events *ev) { return ev->epoch; }

void b2sd_events_id_text(uint64_t epoch, uint64_t seq,
                         char out[B2SD_EVENT_ID_MAX]) {
  snprintf(out, B2SD_EVENT_ID_MAX, "%016" PRIx64 "-%" PRIu64, epoch, seq);
}

static bool type_ok(const char *t) {
  size_t n = strlen(t);
  return n >= 1 && n <= 31 && strspn(t, "abcdefghijklmnopqrstuvwxyz_") == n;
}

/* One line: an SSE data line ends at the first newline. */
static bool data_ok(const char *d) {
  size_t n = strlen(d);
  return n <= B2SD_EVENT_DATA_MAX && !strpbrk(d, "\r\n");
}

int64_t b2sd_events_post(b2sd_events *ev, const char *type, const char *acq,
                         const char *data) {
  if (!type_ok(type) || !data_ok(data) || strlen(acq) > B2SD_EVENT_ACQ_MAX)
    return B2S_E_ARG;
  char *text = malloc(B2SD_EVENT_TEXT_MAX);
  if (!text)
    return B2S_E_NOMEM;
  pthread_mutex_lock(&ev->lock);
  uint64_t seq = ev->newest + 1;
  char id[B2SD_EVENT_ID_MAX];
  b2sd_events_id_text(ev->epoch, seq, id);
  int n = snprintf(text, B2SD_EVENT_TEXT_MAX, "id: %s\nevent: %s\ndata: %s\n\n",
                   id, type, data);
  event *e = &ev->ring[(seq - 1) % ev->held];
  free(e->text);                 /* the oldest goes */
  e->text = text;
  e->len = (size_t)n;
  e->seq = seq;
  snprintf(e->acq, sizeof e->acq, "%s", acq);
  ev->newest = seq;
  ev->gen++;
  pthread_cond_broadcast(&ev->posted);
  pthread_mutex_unlock(&ev->lock);
  return (int64_t)seq;
}

uint64_t b2sd_events_newest(b2sd_events *ev) {
  pthread_mutex_lock(&ev->lock);
  uint64_t n = ev->newest;
  pthread_mutex_unlock(&ev->lock);
  return n;
}

void b2sd_events_wait(b2sd_events *ev, uint64_t *gen, int timeout_ms) {
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)timeout_ms * 1000000u;
  dl.tv_sec += (time_t)(ns / 1000000000u);
  dl.tv_nsec = (long)(ns % 1000000000u);
  pthread_mutex_lock(&ev->lock);
  while (ev->gen == *gen &&
         pthread_cond_timedwait(&ev->posted, &ev->lock, &dl) == 0) {
  }
  *gen = ev->gen;
  pthread_mutex_unlock(&ev->lock);
}

/* ---- ids ------------------------------------------------------------------------ */

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

int b2sd_events_id_parse(const char *s, uint64_t *epoch, uint64_t *seq) {
  if (!s)
    return B2S_E_ARG;
  uint64_t e = 0, q = 0;
  for (int i = 0; i < 16; i++) {
    int v = hexval(s[i]);
    if (v < 0)
      return B2S_E_ARG;          /* also the NUL of a short text */
    e = e << 4 | (uint64_t)v;
  }
  if (s[16] != '-')              /* before reading on: s may end here */
    return B2S_E_ARG;
  const char *d = s + 17;
  size_t n = strspn(d, "0123456789");
  if (n == 0 || n > 19 || d[n] != '\0' || (d[0] == '0' && n > 1))
    return B2S_E_ARG;
  for (size_t i = 0; i < n; i++)
    q = q * 10 + (uint64_t)(d[i] - '0');
  if (q > INT64_MAX)
    return B2S_E_ARG;
  *epoch = e;
  *seq = q;
  return 0;
}

/* ---- readers ---------------------------------------------------------------------- */

/* The oldest SEQ held (newest + 1 when none).  Under the lock. */
static uint64_t oldest(const b2sd_events *ev) {
  return ev->newest >= ev->held ? ev->newest - ev->held + 1 : 1;
}

void b2sd_events_cursor_init(b2sd_events *ev, b2sd_events_cursor *c,
                             const char *last_id, const char *acq) {
  memset(c, 0, sizeof *c);
  snprintf(c->acq, sizeof c->acq, "%s", acq ? acq : "");
  uint64_t epoch = 0, seq = 0;
  pthread_mutex_lock(&ev->lock);
  c->next = ev->newest + 1;
  if (last_id && b2sd_events_id_parse(last_id, &epoch, &seq) == 0) {
    snprintf(c->asked, sizeof c->asked, "%s", last_id);
    if (epoch != ev->epoch) {
      c->lost = true;
      c->reason = "restarted";
      c->next = oldest(ev);
    } else if (seq + 1 < oldest(ev)) {
      c->lost = true;
      c->reason = "evicted";
      c->next = oldest(ev);
    } else if (seq < ev->newest) {
      c->next = seq + 1;
    }
  }
  pthread_mutex_unlock(&ev->lock);
}

/* The events_lost event (no id of its own: a reconnect after it asks
 * for what it asked before, and learns the same). */
static size_t lost_text(b2sd_events *ev, b2sd_events_cursor *c, char *out,
                        size_t cap) {
  char first[B2SD_EVENT_ID_MAX];
  b2sd_events_id_text(ev->epoch, c->next, first);
  int n = snprintf(out, cap, "event: events_lost\ndata: {\"last_event_id\":"
                   "\"%s\",\"first_held\":\"%s\",\"reason\":\"%s\"}\n\n",
                   c->asked, first, c->reason);
  c->lost = false;
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

size_t b2sd_events_read(b2sd_events *ev, b2sd_events_cursor *c, char *out,
                        size_t cap) {
  size_t used = 0;
  pthread_mutex_lock(&ev->lock);
  if (c->next < oldest(ev)) {    /* fell behind: those are gone */
    if (!c->lost) {
      b2sd_events_id_text(ev->epoch, c->next - 1, c->asked);
      c->reason = "evicted";
    }
    c->lost = true;
    c->next = oldest(ev);
  }
  if (c->lost)
    used = lost_text(ev, c, out, cap);
  while (c->next <= ev->newest) {
    const event *e = &ev->ring[(c->next - 1) % ev->held];
    bool mine = !c->acq[0] || !e->acq[0] || strcmp(c->acq, e->acq) == 0;
    if (mine && used + e->len > cap)
      break;                     /* the rest at the next read */
    if (mine) {
      memcpy(out + used, e->text, e->len);
      used += e->len;
    }
    c->next++;
  }
  pthread_mutex_unlock(&ev->lock);
  return used;
}

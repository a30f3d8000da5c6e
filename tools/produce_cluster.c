/* b2stream produce --ranks: the input sent to the ranks of a distributed
 * stream through a cluster producer, buffer i as frame number N + i to
 * the rank that owns it; then every rank flushed.
 *
 * A rank that fails (its daemon restarted: the connection or stream
 * closed, or no credit for PRODUCE_CREDIT_MS) is reconnected for up to
 * RECOVER_MS, and what it had not acknowledged is read again from the
 * input (which must be seekable for that) and resent.  The summary counts
 * every buffer of the input once: acknowledged, refused (per-buffer
 * errors, printed as they come), or not acknowledged (listed). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_produce.h"

#define RECOVER_MS 60000          /* a rank's restart may take this long */
#define RECONNECT_EVERY_MS 200
#define UNACKED_MAX 65536         /* frames one rank may owe */
#define LIST_MAX 20               /* unacknowledged frames printed */

typedef struct pc_state {
  const produce_opts *o;
  b2sc_cluster *c;
  int fd;
  uint64_t buffers, bytes;        /* of the input */
  uint64_t refused, dropped;      /* over every session of every rank */
  uint64_t reconnects, resent;
  uint64_t *unacked;              /* scratch: UNACKED_MAX frames */
  uint64_t owed;                  /* of ranks that did not come back */
  char owed_list[LIST_MAX * 24 + 8];
} pc_state;

/* Frames that will not be acknowledged: counted, the first listed. */
static void owe(pc_state *p, const uint64_t *frames, int n) {
  for (int k = 0; k < n; k++, p->owed++)
    if (p->owed < LIST_MAX) {
      size_t len = strlen(p->owed_list);
      snprintf(p->owed_list + len, sizeof p->owed_list - len, "%s%llu",
               len ? " " : "", (unsigned long long)frames[k]);
    }
}

static void cluster_err(const b2sc_cluster *c, const char *stream, int rc) {
  const char *why = b2sc_cluster_last_error(c);
  if (why[0])
    cli_err("%s: %s", stream, why);
  else
    cli_err("%s: %s", stream, b2sc_strerror(rc));
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A rank gone or restarted: its session closed, no credit in time, or
 * the restarted daemon's "no session: HELLO first" (B2S_E_PROTO). */
static bool rank_failure(int rc) {
  return rc == B2S_E_CLOSED || rc == B2S_E_TIMEOUT || rc == B2S_E_PROTO;
}

/* What the rank's current session refused or dropped, before it goes. */
static void count_session(pc_state *p, int rank) {
  b2sc_producer_stats st;
  b2sc_producer *pr = b2sc_cluster_producer(p->c, rank);
  if (pr && b2sc_producer_stats_get(pr, &st) == 0) {
    p->refused += st.rejected;
    p->dropped += st.dropped;
  }
}

/* Buffer i (frame N + i) read again from the input; its length. */
static ssize_t reread(pc_state *p, uint64_t frame, uint8_t *buf) {
  uint64_t i = frame - (uint64_t)p->o->frame;
  off_t off = (off_t)(i * (uint64_t)p->o->chunk_bytes);
  ssize_t n = pread(p->fd, buf, (size_t)p->o->chunk_bytes, off);
  return n < 0 ? -errno : n;
}

/* Reconnect the rank (waiting up to RECOVER_MS for it to come back). */
static int reconnect(pc_state *p, int rank) {
  int rc = B2S_E_CLOSED;
  for (int64_t t0 = now_ms(); rc < 0 && now_ms() - t0 < RECOVER_MS;) {
    rc = b2sc_cluster_reconnect(p->c, rank);
    if (rc < 0)
      usleep(RECONNECT_EVERY_MS * 1000);
  }
  if (rc < 0)
    cli_err("%s: rank %d did not come back in %d s: %s", p->o->stream, rank,
            RECOVER_MS / 1000, b2sc_cluster_last_error(p->c));
  else
    p->reconnects++;
  return rc;
}

/* Resend frames[0..n) to their (reconnected) rank; 0, a rank failure
 * (again), or another error. */
static int resend(pc_state *p, const uint64_t *frames, int n) {
  uint8_t *buf = malloc((size_t)p->o->chunk_bytes);
  if (!buf)
    return B2S_E_NOMEM;
  int rc = 0;
  for (int k = 0; rc == 0 && k < n; k++) {
    ssize_t len = reread(p, frames[k], buf);
    if (len <= 0) {
      cli_err("%s: %s: %s", p->o->stream, p->o->input,
              len < 0 ? strerror((int)-len) : "shorter than before");
      rc = len < 0 ? (int)len : B2S_E_ARG;
      break;
    }
    b2sc_record rec;
    const b2sc_record *r =
        produce_record(p->o, frames[k] - (uint64_t)p->o->frame, &rec);
    rc = b2sc_cluster_send_rec(p->c, buf, (size_t)len, r, PRODUCE_CREDIT_MS);
    p->resent += rc == 0;
  }
  free(buf);
  return rc;
}

/* A failed rank: reconnect and resend what it had not acknowledged, a few
 * rounds while it keeps failing. */
static int recover(pc_state *p, int rank, int why) {
  if (lseek(p->fd, 0, SEEK_CUR) < 0) {
    cli_err("%s: rank %d failed (%s); the input is not seekable, so its "
            "unacknowledged buffers cannot be resent", p->o->stream, rank,
            b2sc_cluster_last_error(p->c));
    return why;
  }
  int rc = why;
  for (int round = 0; round < 4 && rank_failure(rc); round++) {
    int n = b2sc_cluster_unacked(p->c, rank, p->unacked, UNACKED_MAX);
    if (n < 0 || n > UNACKED_MAX) {
      cli_err("%s: rank %d owes too many buffers to resend", p->o->stream,
              rank);
      return n < 0 ? n : B2S_E_LIMIT;
    }
    cli_err("%s: rank %d failed (%s); reconnecting to resend %d buffers",
            p->o->stream, rank, b2sc_cluster_last_error(p->c), n);
    count_session(p, rank);
    uint64_t *frames = malloc((size_t)n * sizeof *frames + 1);
    if (!frames)
      return B2S_E_NOMEM;
    memcpy(frames, p->unacked, (size_t)n * sizeof *frames);
    rc = reconnect(p, rank);
    if (rc == 0) {
      rc = resend(p, frames, n);
    } else {
      owe(p, frames, n);         /* the rank forgot them: we keep count */
      free(frames);
      break;
    }
    free(frames);
  }
  if (rc < 0)
    cluster_err(p->c, p->o->stream, rc);
  return rc;
}

/* Buffer i to its rank; a failed rank is recovered. */
static int send_one(pc_state *p, uint64_t i, const uint8_t *buf, size_t n) {
  b2sc_record rec;
  const b2sc_record *r = produce_record(p->o, i, &rec);
  int rc = b2sc_cluster_send_rec(p->c, buf, n, r, PRODUCE_CREDIT_MS);
  if (rank_failure(rc))          /* i is among what recover resends */
    return recover(p, b2sc_cluster_owner(p->c, r->frame), rc);
  if (rc < 0)
    cluster_err(p->c, p->o->stream, rc);
  return rc;
}

static int send_all(pc_state *p, uint8_t *buf) {
  const produce_opts *o = p->o;
  for (uint64_t i = 0;; i++) {
    ssize_t n = produce_read_full(p->fd, buf, (size_t)o->chunk_bytes);
    if (n < 0) {
      cli_err("%s: %s", o->input, strerror((int)-n));
      return (int)n;
    }
    if (n == 0)
      return 0;
    p->buffers++;
    p->bytes += (uint64_t)n;
    int rc = send_one(p, i, buf, (size_t)n);
    if (rc < 0)
      return rc;
    if (n < o->chunk_bytes)
      return 0;
  }
}

/* Every rank flushed; a rank that fails meanwhile is recovered (the
 * failure names it: "rank R (ENDPOINT): ..."). */
static int flush_all(pc_state *p) {
  int rc = 0;
  for (int round = 0; round < 5; round++) {
    rc = b2sc_cluster_flush(p->c, PRODUCE_FLUSH_MS);
    int rank = -1;
    if (!rank_failure(rc) ||
        sscanf(b2sc_cluster_last_error(p->c), "rank %d", &rank) != 1 ||
        rank < 0 || rank >= p->o->nranks)
      break;
    if ((rc = recover(p, rank, rc)) < 0)
      return rc;                 /* said */
  }
  if (rc < 0 && rc != B2S_E_DROPPED)
    cluster_err(p->c, p->o->stream, rc);
  return rc;
}

/* Series metadata goes to one rank: every rank merges into the same
 * series of the distributed frame. */
static int set_meta(b2sc_cluster *c, const produce_opts *o) {
  if (!o->nmeta)
    return 0;
  b2s_mpbuf map = {0};
  int rc = produce_meta_map(o, &map);
  if (rc == 0)
    rc = b2sc_producer_set_meta(b2sc_cluster_producer(c, 0), map.data,
                                map.len);
  b2s_mpbuf_fini(&map);
  if (rc < 0)
    cli_err("%s: series metadata: %s", o->stream, b2sc_strerror(rc));
  return rc;
}

/* Exact counts: every buffer of the input is acknowledged, refused or
 * dropped, or still owed by a rank (listed).  Returns the owed count. */
static uint64_t print_totals(pc_state *p) {
  for (int i = 0; i < p->o->nranks; i++) {
    count_session(p, i);
    int n = b2sc_cluster_unacked(p->c, i, p->unacked, UNACKED_MAX);
    if (n > 0)
      owe(p, p->unacked, n < UNACKED_MAX ? n : UNACKED_MAX);
  }
  uint64_t owed = p->owed;
  const char *list = p->owed_list;
  uint64_t settled = p->refused + p->dropped + owed;
  uint64_t acked = p->buffers > settled ? p->buffers - settled : 0;
  printf("%s: %llu buffers, %llu bytes to %d ranks (frames %lld..%lld); "
         "%llu acknowledged, %llu refused, %llu dropped, %llu not "
         "acknowledged; %llu reconnects, %llu resent\n", p->o->stream,
         (unsigned long long)p->buffers, (unsigned long long)p->bytes,
         p->o->nranks, (long long)p->o->frame,
         (long long)(p->o->frame + (int64_t)p->buffers - 1),
         (unsigned long long)acked, (unsigned long long)p->refused,
         (unsigned long long)p->dropped, (unsigned long long)owed,
         (unsigned long long)p->reconnects, (unsigned long long)p->resent);
  if (owed)
    printf("%s: not acknowledged: frames %s%s\n", p->o->stream, list,
           owed > LIST_MAX ? " ..." : "");
  return owed;
}

int produce_cluster(const produce_opts *o, int fd) {
  b2sc_options opts;
  char secret[B2SC_CURVE_KEY_LEN + 1];
  if (cli_client_options(B2SC_ROLE_PRODUCER, &opts, secret) < 0)
    return CLI_EXIT_FAIL;
  pc_state p = {.o = o, .fd = fd};
  int rc = b2sc_cluster_open(o->ranks, o->nranks, (int)o->frames_per_block,
                             o->stream, o->tmpl, &opts, &p.c);
  if (rc < 0) {
    cli_err("%s: cannot open the stream on every rank: %s", o->stream,
            b2sc_strerror(rc));
    return CLI_EXIT_FAIL;
  }
  uint8_t *buf = malloc((size_t)o->chunk_bytes);
  p.unacked = malloc(UNACKED_MAX * sizeof *p.unacked);
  if (buf == NULL || p.unacked == NULL) {
    cli_err("out of memory");
    rc = B2S_E_NOMEM;
  }
  if (rc == 0)
    rc = set_meta(p.c, o);
  if (rc == 0)
    rc = send_all(&p, buf);
  free(buf);
  int flushed = rc < 0 ? rc : flush_all(&p);
  uint64_t owed = print_totals(&p);
  free(p.unacked);
  int closed = b2sc_cluster_close(p.c);
  bool ok = cli_flush_stdout() && (flushed == 0 || flushed == B2S_E_DROPPED) &&
            (closed == 0 || closed == B2S_E_DROPPED) && owed == 0;
  return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

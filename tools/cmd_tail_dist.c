/* b2stream tail on a distributed frame: print each chunk (its line, or its
 * decompressed bytes) once it is below the committed count, until the
 * frame is closed.  The committer's COMMITTED messages (b2s_dmsg.h, PUB/SUB)
 * drive the reads; without its endpoint the count is re-read every 200 ms.
 *
 * Signals: SIGINT ends the follow cleanly (exit 0).  It is blocked while
 * the ZeroMQ context starts its threads, so only this thread takes it and
 * interrupts zmq_poll or the sleep. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "cli_tail.h"

#define POLL_MS 200        /* without --committer-pub */
#define QUIET_MS 2000      /* with it: re-read the count after this silence */

/* Written by on_sigint, read by follow() after each wait it ends. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

typedef struct follower {
  const cli_tail_opts *o;
  cli_src src;
  void *zctx, *sub;
  int64_t next, printed;
  int64_t last_new_ms;             /* when a chunk last came (--idle) */
} follower;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the committer's messages ---------------------------------------------- */

/* SUB to the committer's PUB with the prefix of COMMITTED messages of this
 * frame: the encoded header up to and including the name. */
static int subscribe(follower *f, const char *name) {
  uint8_t buf[16 + B2S_DMSG_NAME_MAX];
  b2s_dmsg m = {.type = B2S_DMSG_COMMITTED, .name = name,
                .name_len = (uint16_t)strlen(name)};
  int len = b2s_dmsg_encode(&m, buf, sizeof buf);
  if (len < 0) {
    cli_err("%s: %s", f->src.path, b2s_strerror(len));
    return len;
  }
  size_t prefix = 8 + (size_t)m.name_len;   /* magic, version, type, len */
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  f->zctx = zmq_ctx_new();
  f->sub = f->zctx ? zmq_socket(f->zctx, ZMQ_SUB) : NULL;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  int linger = 0;
  if (f->sub == NULL ||
      zmq_setsockopt(f->sub, ZMQ_LINGER, &linger, sizeof linger) < 0 ||
      zmq_setsockopt(f->sub, ZMQ_SUBSCRIBE, buf, prefix) < 0 ||
      zmq_connect(f->sub, f->o->committer_pub) < 0) {
    cli_err("%s: %s", f->o->committer_pub, zmq_strerror(zmq_errno()));
    return -zmq_errno();
  }
  return 0;
}

/* One message: *h and *closed raised by a COMMITTED of this frame.
 * Malformed messages are reported and skipped. */
static void take_message(follower *f, zmq_msg_t *msg, int64_t *h,
                         bool *closed) {
  b2s_dmsg m;
  int rc = b2s_dmsg_decode(zmq_msg_data(msg), zmq_msg_size(msg), &m);
  if (rc < 0) {
    cli_err("%s: committer message skipped: %s", f->o->committer_pub,
            b2s_strerror(rc));
    return;
  }
  if (m.type != B2S_DMSG_COMMITTED)
    return;
  if (m.index > *h)
    *h = m.index;
  *closed = *closed || m.closed;
}

/* Wait for COMMITTED messages (at most ms), then read the count from the
 * store when they announced more, or after a silence. */
static int wait_messages(follower *f, int ms) {
  zmq_pollitem_t it = {.socket = f->sub, .events = ZMQ_POLLIN};
  int n = zmq_poll(&it, 1, ms);
  if (n < 0 && zmq_errno() == EINTR)
    return 0;
  if (n < 0) {
    cli_err("%s: %s", f->o->committer_pub, zmq_strerror(zmq_errno()));
    return -1;
  }
  if (n == 0)
    return ms >= QUIET_MS ? cli_src_refresh(&f->src) : 0;
  int64_t h = f->src.committed;
  bool closed = false;
  zmq_msg_t msg;
  zmq_msg_init(&msg);
  while (zmq_msg_recv(&msg, f->sub, ZMQ_DONTWAIT) >= 0)
    take_message(f, &msg, &h, &closed);
  zmq_msg_close(&msg);
  /* the chunks are read through the store, whose count must move first */
  return h > f->src.committed || closed ? cli_src_refresh(&f->src) : 0;
}

/* Sleep ms (cut short by SIGINT), then re-read the count. */
static int wait_poll(follower *f, int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
    return 0;
  return cli_src_refresh(&f->src);
}

/* ---- output ------------------------------------------------------------------ */

static bool print_record(cli_src *src, int64_t i) {
  b2s_record r;
  int rc = b2s_dframe_record_get(src->dframe, i, &r);
  if (rc < 0) {
    cli_record_err(src, i, rc);
    return false;
  }
  b2sc_record c = {.flags = r.flags & 7u, .frame = r.frame, .ts_ns = r.ts,
                   .xxh64 = r.xxh64};
  c.present = B2SC_REC_XXH64 | (r.has_frame ? B2SC_REC_FRAME : 0) |
              (r.has_ts ? B2SC_REC_TS : 0);
  cli_print_record(&c);
  return true;
}

/* Chunk i out: its line, or its bytes with --data. */
static bool emit(follower *f, int64_t i) {
  if (f->o->data) {
    const uint8_t *p;
    int n = cli_src_decode(&f->src, i, &p);
    if (n < 0)
      return false;
    int rc = cli_write_all(STDOUT_FILENO, p, (size_t)n);
    if (rc < 0)
      cli_err("stdout: %s", strerror(-rc));
    return rc == 0;
  }
  cli_chunk d;
  if (cli_src_chunk(&f->src, i, &d) < 0)
    return false;
  printf("%lld %d %d", (long long)i, d.nbytes, d.cbytes);
  if (f->o->records && !print_record(&f->src, i))
    return false;
  putchar('\n');
  return cli_flush_stdout();   /* a line as soon as the chunk is there */
}

/* ---- the follow ---------------------------------------------------------------- */

/* 1 when --count or --idle says stop. */
static int limits_reached(const follower *f) {
  const cli_tail_opts *o = f->o;
  if (o->count >= 0 && f->printed >= o->count)
    return 1;
  return o->idle >= 0 && now_ms() - f->last_new_ms >= o->idle;
}

/* How long to wait: the mode's interval, cut to what --idle leaves. */
static int wait_ms(const follower *f) {
  int ms = f->sub ? QUIET_MS : POLL_MS;
  if (f->o->idle >= 0) {
    int64_t left = f->o->idle - (now_ms() - f->last_new_ms);
    if (left < ms)
      ms = left > 0 ? (int)left : 0;
  }
  return ms;
}

static int follow(follower *f) {
  for (;;) {
    while (f->next < f->src.committed && !limits_reached(f)) {
      if (!emit(f, f->next))
        return CLI_EXIT_FAIL;
      f->next++;
      f->printed++;
      f->last_new_ms = now_ms();
    }
    bool done = f->src.closed && f->next >= f->src.committed;
    if (done || interrupted || limits_reached(f))
      return CLI_EXIT_OK;
    int ms = wait_ms(f);
    int rc = f->sub ? wait_messages(f, ms) : wait_poll(f, ms);
    if (rc < 0)
      return CLI_EXIT_FAIL;
  }
}

int cli_tail_dist(const cli_tail_opts *o) {
  follower f = {.o = o};
  cli_dist_url u;
  cli_dist_parse(o->stream, &u);   /* checked by the caller */
  if (cli_src_open_dist(o->stream, o->ceph_conf, &f.src) < 0)
    return CLI_EXIT_FAIL;
  /* SA_RESTART keeps writes going; poll and nanosleep still end at once
   * (they are never restarted) */
  struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = SA_RESTART}, old;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  int status = CLI_EXIT_FAIL;
  /* subscribed first, then the count read: nothing committed in between
   * is missed */
  if ((o->committer_pub == NULL || subscribe(&f, u.name) == 0) &&
      cli_src_refresh(&f.src) == 0) {
    f.next = o->from < 0 ? f.src.committed : o->from;
    f.last_new_ms = now_ms();
    status = follow(&f);
  }
  if (f.sub)
    zmq_close(f.sub);
  if (f.zctx)
    zmq_ctx_term(f.zctx);
  sigaction(SIGINT, &old, NULL);
  cli_src_close(&f.src);
  return status;
}

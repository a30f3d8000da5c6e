/* A distributed stream across hosts on a Ceph cluster across hosts: each
 * host a network namespace made here (ip netns, a veth pair into a bridge
 * in a hub namespace, an address of 10.229.0.0/24 each).  Hosts 0-2 run
 * the three ranks, host 3 the committer, host 4 `b2stream produce --ranks`,
 * host 8 this test's reader of the store and its tools; host 5 the Ceph monitor (and its
 * manager) with osd.0, hosts 6 and 7 osd.1 and osd.2
 * (scripts/ceph-test-cluster start-hosts: memstore, pool b2stream of size 3,
 * min_size 2, one CRUSH host per OSD).  Everything goes over tcp:// between
 * the namespaces; chunks, records and the key log live in RADOS only.
 *
 * The producer's link is limited to 1 Mbit/s (tc tbf), about RATE buffers
 * a second, so that it sends from a file it can read again (to resend
 * what a restarted rank lost) at a steady rate, while faults are
 * injected in an order and at moments drawn from a seed: an OSD killed
 * with SIGKILL (the pool must keep serving on two) and made again empty
 * (it must be backfilled: three OSDs up, every PG active+clean); a rank's
 * host and the committer's host cut off (ip link set down) and healed;
 * the committer and a rank killed with SIGKILL and restarted.  One round
 * is one fault of each kind; B2S_NETNS_ROUNDS rounds (default 1, the short
 * version of the suite) with B2S_NETNS_SEED (default: from the clock;
 * printed either way, so a run can be replayed).
 *
 * Checked: the producer acknowledges every buffer; the committed prefix,
 * sampled throughout, never shrinks; every committed chunk holds its
 * frame bit for bit and matches its record's checksum when first seen
 * and at the end; `b2stream verify` passes; the export (`b2stream
 * convert`) opens in c-blosc2 (python-blosc2 of $B2S_VENV, else the
 * source's .venv) with every chunk equal to the buffer sent.  Prints the
 * counts: acknowledged, lost, prefix regressions, faults, time.
 *
 * Needs root, iproute2, Ceph (ceph-mon, ceph-mgr, ceph-osd) and a build
 * with librados; skipped, saying which, otherwise. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "b2s_chunk.h"
#include "b2s_dframe.h"
#include "b2s_errors.h"
#include "b2s_store.h"
#include "cluster_util.h"
#include "daemon_harness.h"
#include "netns_hosts.h"
#include "venv_python.h"
#include "ts.h"

#define HOSTS 9         /* ranks 0..2, committer 3, producer 4, ceph 5..7,
                           this test's reader 8 */
#define PROD 4
#define OBS 8           /* where this test reads the store and runs tools */
#define CHECKS 40       /* new chunks checked per sample */
#define MON 5
#define CHUNK 4096
#define PORT 7000
#define RATE 28         /* frames a second the producer's link carries */
#define SLOT_S 10       /* seconds between the starts of two faults */
#define KINDS 5         /* OSD, rank cut, committer cut, committer kill,
                           rank kill */

static nh_hosts hosts;
static char dir[256], cephdir[300], conf[400];
static const char *script;

/* What cleanup() stops and removes, also after a failed assertion. */
static pid_t procs[8];             /* ranks 0-2, committer 3, producer 4,
                                      a wait-clean 5 */
static env ranks[3];
static bool ranks_made, ceph_up;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* This process (and the librados threads it starts) joins the producer's
 * host, from where it reaches the monitor and the OSDs. */
static void join_host(int host) {
  char path[96];
  snprintf(path, sizeof path, "/run/netns/%s", hosts.ns[host]);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  assert_int_equal(setns(fd, CLONE_NEWNET), 0);
  close(fd);
}

/* scripts/ceph-test-cluster CMD CEPHDIR ARGS, its output in DIR/ceph.log;
 * its status. */
static int ceph_cmd(const char *cmd, const char *args) {
  return nh_sh("'%s' %s '%s' %s >>'%s/ceph.log' 2>&1", script, cmd, cephdir,
            args, dir);
}

static bool passed;

/* A failed run's logs, before they are removed. */
static void show_logs(void) {
  char path[400];
  static const char *const mine[] = {"produce.log", "committer.log",
                                     "ceph.log"};
  for (size_t k = 0; k < 3; k++) {
    snprintf(path, sizeof path, "%s/%s", dir, mine[k]);
    if (access(path, R_OK) == 0)
      nh_sh("echo '--- tail of %s'; tail -25 '%s'", mine[k], path);
  }
  for (int k = 0; ranks_made && k < 3; k++)
    nh_sh("echo '--- tail of rank %d'; tail -15 '%s'", k, ranks[k].log);
}
static void cleanup(void) {
  if (!passed && dir[0])
    show_logs();
  for (int k = 0; k < 8; k++)
    if (procs[k] > 0)
      nh_stop(&procs[k], SIGKILL);
  if (ranks_made)
    for (int r = 0; r < 3; r++)
      env_fini(&ranks[r]);
  ranks_made = false;
  if (ceph_up && ceph_cmd("stop", "") != 0)
    nh_sh("tail -20 '%s/ceph.log'", dir);
  ceph_up = false;
  nh_down(&hosts);
  if (dir[0])
    ts_rmtree(dir);
  dir[0] = '\0';
  nh_janitor_done();
}

/* The janitor's part (netns_hosts.h) after meson's timeout: the Ceph
 * daemons live in sessions of their own, and DIR. */
static void janitor_clean(void) {
  ceph_up = true;                  /* stop refuses a directory without one */
  ranks_made = false;
  memset(procs, 0, sizeof procs);  /* in the killed group */
  passed = true;                   /* no logs: nobody reads them now */
  cleanup();
}

/* ---- the reader: the store's committed prefix ------------------------------------ */

typedef struct follower {
  b2s_store *s;
  int64_t h;                       /* highest seen */
  int64_t upto;                    /* chunks below checked */
  int64_t samples, regressions, checked, errors;
  bool closed;
  b2s_ctx *ctx;
} follower;

/* Chunk i of df against frame i and against its record; 0 or why not
 * (a message in why). */
static int check_chunk(follower *f, b2s_dframe *df, int64_t i, char *why,
                       size_t cap) {
  uint8_t *chunk = NULL, got[CHUNK], want[CHUNK];
  size_t len = 0;
  b2s_record rec;
  int rc = b2s_dframe_chunk_get(df, i, &chunk, &len);
  if (rc == 0)
    rc = b2s_dframe_record_get(df, i, &rec);
  if (rc != 0) {
    free(chunk);
    snprintf(why, cap, "chunk %lld: %s", (long long)i, b2s_strerror(rc));
    return rc;
  }
  cluster_frame_fill(want, CHUNK, (uint64_t)i);
  int n = b2s_decompress(f->ctx, chunk, len, got, sizeof got);
  bool sum = rec.xxh64 == b2s_chunk_xxh64(chunk, len);
  free(chunk);
  f->checked++;
  if (n != CHUNK || memcmp(got, want, CHUNK) != 0 || rec.flags != 0 ||
      rec.frame != (uint64_t)i || !sum) {
    snprintf(why, cap, "chunk %lld: %d bytes, flags %u, frame %llu, "
             "checksum %s, content %s", (long long)i, n, (unsigned)rec.flags,
             (unsigned long long)rec.frame, sum ? "ok" : "differs",
             n == CHUNK && !memcmp(got, want, CHUNK) ? "ok" : "differs");
    return B2S_E_CHECKSUM;
  }
  return 0;
}

/* What the store says now, through a fresh frame handle (nothing cached
 * hides a regression): H never below one seen, new chunks checked.  A
 * read the cluster cannot serve now (an OSD just killed, the monitor's
 * answer late) counts as an error, not a sample. */
static void follow(follower *f) {
  b2s_dframe *df;
  if (b2s_dframe_open(f->s, "img", &df) != 0) {
    f->errors++;
    return;
  }
  int64_t h;
  bool closed;
  if (b2s_dframe_refresh(df, &h, &closed) != 0) {
    f->errors++;
    b2s_dframe_free(df);
    return;
  }
  f->samples++;
  if (h < f->h) {
    f->regressions++;
    printf("prefix regression: %lld after %lld\n", (long long)h,
           (long long)f->h);
  }
  if (h > f->h)
    f->h = h;
  char why[256];                   /* a few at a time: sampling goes on */
  for (int k = 0; k < CHECKS && f->upto < f->h; k++, f->upto++)
    if (check_chunk(f, df, f->upto, why, sizeof why) != 0)
      fail_msg("first read of a committed chunk: %s", why);
  f->closed = closed;
  b2s_dframe_free(df);
}

/* ---- the faults --------------------------------------------------------------------- */

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}

enum kind { OSD_KILL, RANK_CUT, CM_CUT, CM_KILL, RANK_KILL };
static const char *const kind_name[KINDS] = {
    "kill -9 of an OSD, made again empty", "a rank's host cut off",
    "the committer's host cut off", "kill -9 of the committer",
    "kill -9 of a rank"};

typedef struct fault {
  enum kind kind;
  int who;                         /* rank or OSD */
  double at, hold;                 /* start (s from t0), then how long */
  double began;                    /* when it did start (an OSD's may wait) */
  int state;                       /* 0 waiting, 1 in effect, 2 undone */
} fault;

typedef struct run {
  fault *f;
  int n, injected;
  double t0;
  char *cm_argv[16];
  char *rank_argv[3][4];
  char clog[300];
  int osd_down;                    /* an OSD killed and not yet clean: its
                                      id, else -1 */
  const follower *fo;
  int64_t h_osd_killed;            /* committed when the OSD was killed */
  int64_t served_on_two;           /* chunks committed while it was down */
  double clean_s;                  /* longest wait for active+clean */
  double clean_from;
} run;

static void schedule(run *r, rng *g, int rounds) {
  r->n = rounds * KINDS;
  r->f = calloc((size_t)r->n, sizeof *r->f);
  assert_non_null(r->f);
  /* a round: one fault of each kind in a shuffled order, the OSD's in
     one of the first two slots, so that it has recovered (10-14 s down,
     about 12 s of backfill) before the next round's */
  for (int b = 0; b < r->n; b += KINDS) {
    fault *f = r->f + b;
    for (int k = 0; k < KINDS; k++)
      f[k].kind = (enum kind)k;
    for (int k = KINDS - 1; k > 0; k--) {
      int j = (int)(rng_next(g) % (uint64_t)(k + 1));
      enum kind t = f[k].kind;
      f[k].kind = f[j].kind;
      f[j].kind = t;
    }
    for (int k = 2; k < KINDS; k++)
      if (f[k].kind == OSD_KILL) {
        int j = (int)(rng_next(g) % 2);
        f[k].kind = f[j].kind;
        f[j].kind = OSD_KILL;
      }
  }
  for (int k = 0; k < r->n; k++) {
    fault *f = &r->f[k];
    f->at = 5.0 + SLOT_S * k + (double)(rng_next(g) % 3000) / 1000.0;
    f->who = (int)(rng_next(g) % 3);
    /* cuts 1-4 s, under the committer's lease of 10 s; kills restarted
       after 0.2-2 s; an OSD made again after 10-14 s, well after it is
       marked down (heartbeat grace 5 s), so the pool serves on two */
    f->hold = f->kind == RANK_CUT || f->kind == CM_CUT
                  ? 1.0 + (double)(rng_next(g) % 3000) / 1000.0
              : f->kind == OSD_KILL
                  ? 10.0 + (double)(rng_next(g) % 4000) / 1000.0
                  : 0.2 + (double)(rng_next(g) % 1800) / 1000.0;
    if (f->kind == CM_CUT || f->kind == CM_KILL)
      printf("fault %d at %.1f s: %s, for %.1f s\n", k, f->at,
             kind_name[f->kind], f->hold);
    else
      printf("fault %d at %.1f s: %s (%s.%d), for %.1f s\n", k, f->at,
             kind_name[f->kind], f->kind == OSD_KILL ? "osd" : "rank",
             f->who, f->hold);
  }
  fflush(stdout);
}

static void start_committer(run *r) {
  procs[3] = nh_spawn(&hosts, 3, r->clog, r->cm_argv);
}

static void start_rank(run *r, int k) {
  procs[k] = nh_spawn(&hosts, k, ranks[k].log, r->rank_argv[k]);
}

static void fault_begin(run *r, fault *f) {
  switch (f->kind) {
  case OSD_KILL:
    break;
  case RANK_CUT:
    nh_link(&hosts, f->who, "down");
    break;
  case CM_CUT:
    nh_link(&hosts, 3, "down");
    break;
  case CM_KILL:
    assert_int_equal(nh_stop(&procs[3], SIGKILL), -1);
    break;
  case RANK_KILL:
    assert_int_equal(nh_stop(&procs[f->who], SIGKILL), -1);
    break;
  }
  if (f->kind == OSD_KILL) {
    char who[16];
    snprintf(who, sizeof who, "%d", f->who);
    if (ceph_cmd("kill-osd", who) != 0)
      fail_msg("kill-osd %d failed (%s/ceph.log)", f->who, dir);
    r->osd_down = f->who;
    r->h_osd_killed = r->fo->h;
  }
  r->injected++;
  f->state = 1;
  f->began = now_s() - r->t0;
  printf("%6.1f s: %s begins\n", now_s() - r->t0, kind_name[f->kind]);
  fflush(stdout);
}

static void fault_end(run *r, fault *f) {
  switch (f->kind) {
  case OSD_KILL: {
    /* the pool served with one OSD of three gone */
    int64_t served = r->fo->h - r->h_osd_killed;
    printf("%6.1f s: %lld chunks committed while osd.%d was down\n",
           now_s() - r->t0, (long long)served, f->who);
    if (served <= 0)
      fail_msg("nothing was committed in %.1f s with osd.%d down", f->hold,
               f->who);
    r->served_on_two += served;
    char who[16];
    snprintf(who, sizeof who, "%d", f->who);
    if (ceph_cmd("restart-osd", who) != 0)
      fail_msg("restart-osd %d failed (%s/ceph.log)", f->who, dir);
    /* its backfill is waited for beside the run */
    char *argv[] = {(char *)script, "wait-clean", cephdir, "300", NULL};
    char log[300];
    snprintf(log, sizeof log, "%s/ceph.log", dir);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
      int fd = open(log, O_WRONLY | O_APPEND);
      dup2(fd, 1);
      dup2(fd, 2);
      execv(script, argv);
      _exit(127);
    }
    procs[5] = p;
    r->clean_from = now_s();
    break;
  }
  case RANK_CUT:
    nh_link(&hosts, f->who, "up");
    break;
  case CM_CUT:
    nh_link(&hosts, 3, "up");
    break;
  case CM_KILL:
    start_committer(r);
    break;
  case RANK_KILL:
    start_rank(r, f->who);
    break;
  }
  f->state = 2;
  printf("%6.1f s: %s ends\n", now_s() - r->t0, kind_name[f->kind]);
  fflush(stdout);
}

/* The OSD's recovery: the wait-clean beside the run, when it ends. */
static void poll_clean(run *r) {
  int st;
  if (!nh_reap(&procs[5], &st, false))
    return;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("osd.%d: the cluster did not recover (%s/ceph.log)", r->osd_down,
             dir);
  double took = now_s() - r->clean_from;
  if (took > r->clean_s)
    r->clean_s = took;
  printf("%6.1f s: osd.%d backfilled, every PG active+clean after %.1f s\n",
         now_s() - r->t0, r->osd_down, took);
  fflush(stdout);
  r->osd_down = -1;
}

/* Faults whose time has come; a second OSD is only killed once the first
 * has recovered (two down of three stops the pool by design). */
static void faults_step(run *r) {
  double t = now_s() - r->t0;
  for (int k = 0; k < r->n; k++) {
    fault *f = &r->f[k];
    if (f->state == 0 && t >= f->at &&
        (f->kind != OSD_KILL || (r->osd_down < 0 && procs[5] <= 0)))
      fault_begin(r, f);
    else if (f->state == 1 && t >= f->began + f->hold)
      fault_end(r, f);
  }
  poll_clean(r);
}

/* Every fault injected and undone; with_recovery: the last OSD's
 * backfill finished too (it may outlast the producer). */
static bool faults_done(const run *r, bool with_recovery) {
  for (int k = 0; k < r->n; k++)
    if (r->f[k].state != 2)
      return false;
  return !with_recovery || procs[5] <= 0;
}

/* ---- the end: verify and the export in c-blosc2 ------------------------------------ */

/* The start of path's text (empty when it cannot be read). */
static void slurp(const char *path, char *out, size_t cap) {
  char *text = ts_read_text(path, NULL);
  snprintf(out, cap, "%s", text != NULL ? text : "");
  free(text);
}

/* The tool in the producer's host; its exit status, output in log. */
static int tool(const char *log, char *const args[]) {
  char *argv[16] = {(char *)getenv("B2S_CLI")};
  int n = 1;
  for (int k = 0; args[k] && n < 15; k++)
    argv[n++] = args[k];
  argv[n] = NULL;
  unlink(log);
  pid_t p = nh_spawn(&hosts, OBS, log, argv);
  int st;
  nh_reap(&p, &st, true);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_tools(int64_t nframes, const char *in) {
  char log[300], out[4096], want[160], exp[300];
  snprintf(log, sizeof log, "%s/verify.log", dir);
  char *verify[] = {"verify", "rados://b2stream/img", "--ceph-conf", conf, NULL};
  int rc = tool(log, verify);
  slurp(log, out, sizeof out);
  snprintf(want, sizeof want, "ok: %lld chunks, %lld bytes, %lld checksums\n",
           (long long)nframes, (long long)nframes * CHUNK, (long long)nframes);
  if (rc != 0 || strstr(out, want) == NULL)
    fail_msg("verify (status %d): %s", rc, out);
  snprintf(exp, sizeof exp, "%s/export.b2frame", dir);
  snprintf(log, sizeof log, "%s/convert.log", dir);
  char *convert[] = {"convert", "rados://b2stream/img", exp, "--contiguous",
                     "--ceph-conf", conf, NULL};
  rc = tool(log, convert);
  slurp(log, out, sizeof out);
  snprintf(want, sizeof want, "exported %lld chunks\n", (long long)nframes);
  if (rc != 0 || strstr(out, want) == NULL)
    fail_msg("convert (status %d): %s", rc, out);

  char py[400];
  if (!ts_venv_python(py, sizeof py))
    return;
  char cmd[2000];
  fflush(stdout);                  /* before the child's line */
  snprintf(cmd, sizeof cmd,
           "'%s' -c 'import sys, blosc2\n"
           "s = blosc2.open(sys.argv[1])\n"
           "s = getattr(s, \"schunk\", s)\n"
           "data = open(sys.argv[2], \"rb\").read()\n"
           "n = len(data) // %d\n"
           "assert s.nchunks == n, (s.nchunks, n)\n"
           "for k in range(n):\n"
           "    if s.decompress_chunk(k) != data[k * %d:(k + 1) * %d]:\n"
           "        sys.exit(\"chunk %%d differs\" %% k)\n"
           "print(\"c-blosc2: %%d chunks of the export equal to the buffers "
           "sent\" %% n)' '%s' '%s'",
           py, CHUNK, CHUNK, CHUNK, exp, in);
  if (system(cmd) != 0)
    fail_msg("c-blosc2 does not read the export %s as the buffers sent", exp);
}

/* ---- the test ------------------------------------------------------------------------- */

static const char *skip_reason(void) {
  if (geteuid() != 0)
    return "needs root";
  if (nh_sh("ip netns list >/dev/null 2>&1") != 0)
    return "needs iproute2";
  if (nh_sh("{ command -v ceph-mon && command -v ceph-mgr && "
         "command -v ceph-osd && command -v rados; } >/dev/null") != 0)
    return "needs Ceph (ceph-mon, ceph-mgr, ceph-osd, rados)";
  if (!b2s_store_have_rados())
    return "this build has no librados";
  script = getenv("B2S_CEPH_CLUSTER");
  if (!script || access(script, X_OK) != 0)
    return "no $B2S_CEPH_CLUSTER (scripts/ceph-test-cluster)";
  return NULL;
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
  const char *e = getenv(name);
  return e && *e ? strtoull(e, NULL, 0) : dflt;
}

/* The hosts, the Ceph cluster across them, this process on the reader's
 * host with the store open. */
static void cluster_up(follower *fo) {
  double t0 = now_s();
  snprintf(dir, sizeof dir, "/tmp/b2s-netnsceph-XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(cephdir, sizeof cephdir, "%s/ceph", dir);
  snprintf(conf, sizeof conf, "%s/ceph.conf", cephdir);
  assert_int_equal(nh_name(&hosts, HOSTS, 229, 'c'), 0);
  nh_janitor_start(&hosts, janitor_clean);
  if (nh_up(&hosts) != 0)
    fail_msg("cannot make the network namespaces");
  char args[200];
  snprintf(args, sizeof args, "%s %s %s %s", hosts.ns[MON], hosts.ns[MON],
           hosts.ns[MON + 1], hosts.ns[MON + 2]);
  if (ceph_cmd("start-hosts", args) != 0) {
    nh_sh("tail -40 '%s/ceph.log'", dir);
    fail_msg("scripts/ceph-test-cluster start-hosts failed");
  }
  ceph_up = true;
  printf("ceph: 1 monitor, 3 OSDs on 3 hosts up after %.1f s\n",
         now_s() - t0);
  join_host(OBS);
  fo->ctx = b2s_ctx_new();
  b2s_store_opts so = {.ceph_conf = conf};
  assert_int_equal(b2s_store_open("rados://b2stream", &so, &fo->s), 0);
}

/* The committer and the three ranks on the RADOS store, listening. */
static void daemons_up(run *r) {
  char cip[32];
  static char pull[64], pub[64];
  nh_ip(&hosts, 3, cip, sizeof cip);
  snprintf(pull, sizeof pull, "tcp://%s:%d", cip, PORT + 1);
  snprintf(pub, sizeof pub, "tcp://%s:%d", cip, PORT + 2);
  snprintf(r->clog, sizeof r->clog, "%s/committer.log", dir);
  char *cm[] = {(char *)getenv("B2S_COMMITTER"), "--store",
                "rados://b2stream", "--ceph-conf", conf, "--pull", pull,
                "--pub", pub, "--frame", "img", "--gap-timeout-ms", "60000",
                NULL};
  memcpy(r->cm_argv, cm, sizeof cm);
  start_committer(r);
  for (int k = 0; k < 3; k++)
    nh_rank_config(&hosts, &ranks[k], k, PORT, "rados://b2stream", conf,
                   dir);
  ranks_made = true;
  for (int k = 0; k < 3; k++) {
    r->rank_argv[k][0] = (char *)getenv("B2S_DAEMON");
    r->rank_argv[k][1] = "--config";
    r->rank_argv[k][2] = ranks[k].config;
    r->rank_argv[k][3] = NULL;
    start_rank(r, k);
  }
  for (int k = 0; k < 3; k++)
    nh_wait_log(&ranks[k], "listening on tcp://", 60000);
}

/* The producer's input (kept for the c-blosc2 check) and its start on a
 * link limited to 1 Mbit/s. */
static void producer_start(run *r, const char *in, const char *plog,
                           int64_t nframes) {
  FILE *f = fopen(in, "w");
  assert_non_null(f);
  uint8_t buf[CHUNK];
  for (int64_t k = 0; k < nframes; k++) {
    cluster_frame_fill(buf, CHUNK, (uint64_t)k);
    assert_int_equal(fwrite(buf, 1, CHUNK, f), CHUNK);
  }
  fclose(f);
  static char eps[512];
  char ip[32];
  int n = 0;
  for (int k = 0; k < 3; k++) {
    nh_ip(&hosts, k, ip, sizeof ip);
    n += snprintf(eps + n, sizeof eps - (size_t)n, "%stcp://%s:%d",
                  k ? "," : "", ip, PORT);
  }
  if (nh_sh("ip netns exec %s tc qdisc add dev eth0 root tbf rate 1mbit "
         "burst 16kb latency 500ms", hosts.ns[PROD]) != 0)
    fail_msg("tc cannot limit the producer's link (tbf)");
  char *pr_argv[] = {(char *)getenv("B2S_CLI"), "produce", "--ranks", eps,
                     "--frames-per-block", "1", "--frame-number", "0",
                     "--stream", "img", "--chunk-bytes", "4096", (char *)in,
                     NULL};
  procs[4] = nh_spawn(&hosts, PROD, plog, pr_argv);
  r->t0 = now_s();
  printf("producing %lld frames of %d bytes at about %d a second\n",
         (long long)nframes, CHUNK, RATE);
  fflush(stdout);
}

typedef struct counts {
  long long acked, refused, dropped, unacked;
} counts;

/* Faults and samples until the producer has ended and every fault is
 * undone and recovered from; the producer's counts. */
static counts produce_through_faults(run *r, follower *fo, const char *plog,
                                     int64_t nframes) {
  int st = 0;
  for (;;) {
    if (now_s() - r->t0 > 600.0 + 20.0 * r->n)
      fail_msg("the run did not end (committed %lld of %lld)",
               (long long)fo->h, (long long)nframes);
    faults_step(r);
    follow(fo);
    if (nh_reap(&procs[4], &st, false)) {
      if (!faults_done(r, false)) {
        char early[2048];
        slurp(plog, early, sizeof early);
        fail_msg("the producer ended before the faults: %s", early);
      }
    }
    if (procs[4] == 0 && faults_done(r, true))
      break;
    usleep(100000);
  }
  char out[4096];
  slurp(plog, out, sizeof out);
  printf("%s", out);
  fflush(stdout);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("produce failed: %s", out);
  counts c = {-1, -1, -1, -1};
  const char *p = strstr(out, " acknowledged, ");
  while (p && p > out && p[-1] >= '0' && p[-1] <= '9')
    p--;
  if (!p || sscanf(p, "%lld acknowledged, %lld refused, %lld dropped, %lld "
                      "not acknowledged", &c.acked, &c.refused, &c.dropped,
                   &c.unacked) != 4)
    fail_msg("no counts in the producer's summary: %s", out);
  return c;
}

/* The frame closed with every chunk; each read again through a fresh
 * handle: how many are not their frame. */
static int64_t check_end(follower *fo, int64_t nframes) {
  double end_by = now_s() + 120.0;
  while (!fo->closed || fo->h < nframes || fo->upto < fo->h) {
    if (now_s() > end_by)
      fail_msg("committed %lld of %lld, closed %d", (long long)fo->h,
               (long long)nframes, fo->closed);
    follow(fo);
    usleep(200000);
  }
  int64_t lost = 0;
  b2s_dframe *df;
  assert_int_equal(b2s_dframe_open(fo->s, "img", &df), 0);
  char why[256];
  for (int64_t i = 0; i < nframes; i++)
    if (check_chunk(fo, df, i, why, sizeof why) != 0 && lost++ < 5)
      printf("lost: %s\n", why);
  b2s_dframe_free(df);
  return lost;
}

static void test_netns_ceph(void **state) {
  (void)state;
  const char *why = skip_reason();
  if (why) {
    printf("cross-host Ceph test skipped: %s\n", why);
    skip();
  }
  double t0 = now_s();
  uint64_t seed = env_u64("B2S_NETNS_SEED",
                          (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20));
  int rounds = (int)env_u64("B2S_NETNS_ROUNDS", 1);
  assert_true(rounds >= 1 && rounds <= 1000);
  printf("netns-ceph seed %llu, %d round(s) (replay with B2S_NETNS_SEED=%llu "
         "B2S_NETNS_ROUNDS=%d)\n", (unsigned long long)seed, rounds,
         (unsigned long long)seed, rounds);
  fflush(stdout);
  rng g = {seed ? seed : 1};
  run r = {.osd_down = -1};
  schedule(&r, &g, rounds);
  /* production outlasts the last fault by a few seconds */
  int64_t nframes = (int64_t)((5.0 + SLOT_S * r.n + 16.0) * RATE);

  follower fo = {0};
  r.fo = &fo;
  cluster_up(&fo);
  daemons_up(&r);
  char in[300], plog[300];
  snprintf(in, sizeof in, "%s/in.bin", dir);
  snprintf(plog, sizeof plog, "%s/produce.log", dir);
  producer_start(&r, in, plog, nframes);
  counts c = produce_through_faults(&r, &fo, plog, nframes);
  int64_t lost = check_end(&fo, nframes);
  check_tools(nframes, in);
  printf("netns-ceph: %lld acknowledged, %lld lost, %lld prefix regressions "
         "in %lld samples, %d faults injected (%d rounds: OSD kill -9 and "
         "backfill, rank cut, committer cut, committer kill -9, rank kill "
         "-9), %lld chunks committed with an OSD down, longest backfill %.1f "
         "s, %lld chunk checks, %lld reads the cluster did not serve at "
         "once, %.1f s, seed %llu\n",
         c.acked, (long long)lost, (long long)fo.regressions,
         (long long)fo.samples, r.injected, rounds,
         (long long)r.served_on_two, r.clean_s,
         (long long)fo.checked, (long long)fo.errors, now_s() - t0,
         (unsigned long long)seed);
  assert_int_equal(c.acked, nframes);
  assert_int_equal(c.refused + c.dropped + c.unacked, 0);
  assert_int_equal(lost, 0);
  assert_int_equal(fo.regressions, 0);
  assert_int_equal(r.injected, rounds * KINDS);
  b2s_store_free(fo.s);
  b2s_ctx_free(fo.ctx);
  free(r.f);
  assert_int_equal(nh_stop(&procs[3], SIGTERM), 0);
  for (int k = 0; k < 3; k++)
    assert_int_equal(nh_stop(&procs[k], SIGTERM), 0);
  passed = true;
  cleanup();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_netns_ceph),
  };
  int rc = harness_run(tests);
  cleanup();                       /* also after a failure */
  return rc;
}

#define _GNU_SOURCE
#include "netns_hosts.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int nh_sh(const char *fmt, ...) {
  char cmd[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void nh_ip(const nh_hosts *h, int host, char *out, size_t cap) {
  snprintf(out, cap, "10.%d.0.%d", h->net, host + 1);
}

/* The processes nh_spawn started that nobody has reaped: children of
 * this process, so their pids cannot have passed to another. */
#define NH_MAX_SPAWNED 64
static pid_t spawned[NH_MAX_SPAWNED];

static void track(pid_t pid, pid_t was) {
  for (int k = 0; k < NH_MAX_SPAWNED; k++)
    if (spawned[k] == was) {
      spawned[k] = pid;
      return;
    }
}

static void kill_spawned(void) {
  for (int k = 0; k < NH_MAX_SPAWNED; k++)
    if (spawned[k] > 0) {
      pid_t pid = spawned[k];
      nh_stop(&pid, SIGKILL);
    }
}

void nh_down(nh_hosts *h) {
  kill_spawned();
  for (int k = 0; k <= h->n; k++)
    if (h->ns[k][0])
      nh_sh("ip netns del %s 2>/dev/null", h->ns[k]);
  memset(h->ns, 0, sizeof h->ns);
}

/* Host k: its namespace, a veth into the hub's bridge, its address. */
static int host_up(const nh_hosts *h, int k) {
  const char *hub = h->ns[h->n];
  char ip[32];
  nh_ip(h, k, ip, sizeof ip);
  return nh_sh("ip netns add %s", h->ns[k]) ||
         nh_sh("ip -n %s link add v%d type veth peer name eth0 netns %s", hub,
               k, h->ns[k]) ||
         nh_sh("ip -n %s link set v%d master br0 up", hub, k) ||
         nh_sh("ip -n %s addr add %s/24 dev eth0", h->ns[k], ip) ||
         nh_sh("ip -n %s link set eth0 up", h->ns[k]) ||
         nh_sh("ip -n %s link set lo up", h->ns[k]) ? -1 : 0;
}

int nh_name(nh_hosts *h, int n, int net, char tag) {
  memset(h, 0, sizeof *h);
  if (n < 1 || n > NH_MAX)
    return -1;
  h->n = n, h->net = net;
  for (int k = 0; k <= n; k++)
    snprintf(h->ns[k], sizeof h->ns[k], "b2%c%d%c%d", tag,
             (int)getpid() % 100000, k == n ? 'h' : 'n', k);
  return 0;
}

int nh_up(nh_hosts *h) {
  int n = h->n;
  const char *hub = h->ns[n];
  if (nh_sh("ip netns add %s", hub) ||
      nh_sh("ip -n %s link add br0 type bridge", hub) ||
      nh_sh("ip -n %s link set br0 up", hub))
    return -1;
  for (int k = 0; k < n; k++)
    if (host_up(h, k) != 0)
      return -1;
  return 0;
}

void nh_link(const nh_hosts *h, int host, const char *state) {
  assert_int_equal(nh_sh("ip -n %s link set eth0 %s", h->ns[host], state), 0);
}

pid_t nh_spawn(const nh_hosts *h, int host, const char *log,
               char *const argv[]) {
  pid_t parent = getpid();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* the test dying on its own (an abort, a sanitizer's report, the
     * OOM killer) takes this one along: nh_down never runs then, and
     * only a timeout's kill reaches the whole process group */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
      _exit(127);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    char *args[40] = {"ip", "netns", "exec", (char *)h->ns[host]};
    int n = 4;
    for (int k = 0; argv[k] && n < 39; k++)
      args[n++] = argv[k];
    args[n] = NULL;
    execvp("ip", args);
    _exit(127);
  }
  track(pid, 0);
  return pid;
}

bool nh_reap(pid_t *pid, int *st, bool block) {
  if (*pid <= 0 || waitpid(*pid, st, block ? 0 : WNOHANG) != *pid)
    return false;
  track(0, *pid);
  *pid = 0;
  return true;
}

int nh_stop(pid_t *pid, int sig) {
  if (*pid <= 0)
    return -2;
  kill(*pid, sig);
  int st = 0;
  if (!nh_reap(pid, &st, true))
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int janitor_fd = -1;

void nh_janitor_start(const nh_hosts *h, void (*clean)(void)) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid > 0) {
    close(p[0]);
    fcntl(p[1], F_SETFD, FD_CLOEXEC);
    janitor_fd = p[1];
    return;
  }
  close(p[1]);
  /* the test's children are not this one's, and are gone (and reaped by
   * init, their pids free) when it acts */
  memset(spawned, 0, sizeof spawned);
  setsid();
  int null = open("/dev/null", O_RDWR);    /* the test's pipes may be gone */
  dup2(null, 1);
  dup2(null, 2);
  char c;
  if (read(p[0], &c, 1) == 1)
    _exit(0);
  if (clean)
    clean();
  nh_hosts mine = *h;
  nh_down(&mine);
  _exit(0);
}

void nh_janitor_done(void) {
  if (janitor_fd < 0)
    return;
  (void)!write(janitor_fd, "x", 1);      /* done: nothing to do */
  close(janitor_fd);
  janitor_fd = -1;
}

void nh_rank_config(const nh_hosts *h, env *e, int r, int port,
                    const char *storage, const char *ceph_conf,
                    const char *scratch) {
  char y[4096], ip[32], cip[32], cc[512] = "";
  nh_ip(h, r, ip, sizeof ip);
  nh_ip(h, 3, cip, sizeof cip);
  if (ceph_conf)
    snprintf(cc, sizeof cc, "  ceph_conf: \"%s\"\n", ceph_conf);
  int n = snprintf(y, sizeof y,
                   "listen: [tcp://%s:%d]\nrun_dir: run\ndata_dir: data\n"
                   "workers: 2\nmax_buffer: 1MiB\nlog_level: info\n"
                   "cluster:\n  storage: \"%s\"\n%s  rank: %d\n"
                   "  committer: tcp://%s:%d\n  committer_pub: tcp://%s:%d\n"
                   "  frames_per_block: 1\n  ranks:\n",
                   ip, port, storage, cc, r, cip, port + 1, cip, port + 2);
  for (int k = 0; k < 3; k++) {
    nh_ip(h, k, ip, sizeof ip);
    n += snprintf(y + n, sizeof y - (size_t)n, "    - tcp://%s:%d\n", ip,
                  port);
  }
  snprintf(y + n, sizeof y - (size_t)n,
           "streams:\n  img:\n    format: distributed\n"
           "    chunk_nbytes: 4096\n    typesize: 4\n    codec: lz4\n"
           "    durability: {ack: fsync}\n");
  char tmpl[300];
  snprintf(tmpl, sizeof tmpl, "%s/rank%d-XXXXXX", scratch, r);
  env_init_config_at(e, tmpl, y);
}

void nh_wait_log(const env *e, const char *text, int ms) {
  for (int t = 0; env_log_count((env *)e, text) == 0; t += 50) {
    if (t > ms)
      fail_msg("%s: no '%s' in its log", e->dir, text);
    usleep(50000);
  }
}

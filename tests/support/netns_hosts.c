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

void nh_down(nh_hosts *h) {
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
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
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
  return pid;
}

int nh_stop(pid_t *pid, int sig) {
  if (*pid <= 0)
    return -2;
  kill(*pid, sig);
  int st;
  waitpid(*pid, &st, 0);
  *pid = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void nh_rank_config(const nh_hosts *h, env *e, int r, int port,
                    const char *storage, const char *ceph_conf) {
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
  env_init_config(e, y);
}

void nh_wait_log(const env *e, const char *text, int ms) {
  for (int t = 0; env_log_count((env *)e, text) == 0; t += 50) {
    if (t > ms)
      fail_msg("%s: no '%s' in its log", e->dir, text);
    usleep(50000);
  }
}

/* Shared by the cluster tests: see cluster_util.h. */
#define _GNU_SOURCE
#include "cluster_util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b2s_errors.h"

void cluster_frame_fill(uint8_t *b, size_t len, uint64_t f) {
  uint32_t x = (uint32_t)(f * 2654435761u + 12345u);
  for (size_t i = 0; i + 4 <= len; i += 4) {
    uint32_t v = (uint32_t)(f << 16) + (uint32_t)(i / 4) +
                 ((x = x * 1103515245u + 12345u) >> 28);
    memcpy(b + i, &v, 4);
  }
}

int cluster_store_open(const cluster *c, b2s_store **out) {
  b2s_store_opts o = {.ceph_conf = c->ceph_conf[0] ? c->ceph_conf : NULL};
  return b2s_store_open(c->storage, &o, out);
}

pid_t cluster_committer_start(const cluster *c, const char *frame,
                              int gap_ms) {
  return cluster_committer_start_opts(c, frame, gap_ms, 0);
}

pid_t cluster_committer_start_opts(const cluster *c, const char *frame,
                                   int gap_ms, int lease_ms) {
  const char *exe = getenv("B2S_COMMITTER");
  if (!exe)
    return -1;
  char log[400], gap[32], lease[32];
  snprintf(log, sizeof log, "%s/committer.log", c->dir);
  snprintf(gap, sizeof gap, "%d", gap_ms);
  snprintf(lease, sizeof lease, "%d", lease_ms);
  const char *argv[16] = {exe, "--store", c->storage, "--pull", c->committer,
                          "--pub", c->pub, "--gap-timeout-ms", gap};
  int n = 9;
  if (frame) {
    argv[n++] = "--frame";
    argv[n++] = frame;
  }
  if (lease_ms > 0) {
    argv[n++] = "--lease-ms";
    argv[n++] = lease;
  }
  if (c->ceph_conf[0]) {
    argv[n++] = "--ceph-conf";
    argv[n++] = c->ceph_conf;
  }
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  dup2(fd, 1);
  dup2(fd, 2);
  execv(exe, (char *const *)argv);
  _exit(127);
}

int cluster_committer_stop(pid_t pid, int sig) {
  kill(pid, sig);
  int st;
  if (waitpid(pid, &st, 0) != pid)
    return -2;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int cluster_resend(b2sc_cluster *cl, int rank, size_t len, int send_ms) {
  uint64_t frames[1024];
  int n = b2sc_cluster_unacked(cl, rank, frames, 1024);
  if (n < 0 || n > 1024)
    return n < 0 ? n : B2S_E_LIMIT;
  int rc = B2S_E_TIMEOUT;
  for (int k = 0; k < 200 && rc != 0; k++) {   /* until the rank is back */
    rc = b2sc_cluster_reconnect(cl, rank);
    if (rc != 0)
      usleep(50000);
  }
  if (rc != 0)
    return rc;
  uint8_t *buf = malloc(len);
  if (!buf)
    return B2S_E_NOMEM;
  int first = 0;
  for (int k = 0; k < n; k++) {
    cluster_frame_fill(buf, len, frames[k]);
    int r = b2sc_cluster_send(cl, frames[k], buf, len, send_ms);
    if (r != 0 && first == 0)
      first = r;
  }
  free(buf);
  return first;
}

/* Hosts for the cross-host tests: network namespaces the test makes, each
 * with a veth pair into a bridge in a hub namespace and its own address
 * 10.NET.0.(host + 1)/24.  Needs root (CAP_NET_ADMIN) and iproute2. */
#ifndef TS_NETNS_HOSTS_H
#define TS_NETNS_HOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "daemon_harness.h"

#define NH_MAX 16

typedef struct nh_hosts {
  int n, net;
  char ns[NH_MAX + 1][32];         /* [n]: the hub; "" when not made */
} nh_hosts;

/* A shell command (printf format); its exit status, -1 if killed. */
int nh_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Names n hosts on 10.NET.0.0/24 (tag and the pid tell one test's from
 * another's), then makes them: 0 or -1 (nh_down undoes what was made). */
int nh_name(nh_hosts *h, int n, int net, char tag);
int nh_up(nh_hosts *h);
void nh_down(nh_hosts *h);

void nh_ip(const nh_hosts *h, int host, char *out, size_t cap);
/* ip link set eth0 up|down in the host (asserts). */
void nh_link(const nh_hosts *h, int host, const char *state);
/* argv run in the host, stdout and stderr appended to log.  Every such
 * process not yet reaped by nh_stop is killed by nh_down (a failed
 * assertion leaves nothing running), and by the kernel when this process
 * dies (PR_SET_PDEATHSIG: an abort leaves nothing running either). */
pid_t nh_spawn(const nh_hosts *h, int host, const char *log,
               char *const argv[]);
/* Signal *pid, reap it, *pid = 0; its exit status, -1 if killed by a
 * signal, -2 if there was none. */
int nh_stop(pid_t *pid, int sig);

/* waitpid on *pid (WNOHANG unless block): true when it was reaped, its
 * status in *st and *pid = 0; use it rather than waitpid on what
 * nh_spawn started, so that nh_down forgets it. */
bool nh_reap(pid_t *pid, int *st, bool block);

/* Once h is named: a process in a session of its own that waits for this
 * one to end.  meson's timeout kills the test's process group (SIGKILL),
 * which takes the spawned processes but not the namespaces nor what
 * lives in sessions of its own: unless nh_janitor_done() was called, the
 * janitor then runs clean (NULL: nothing more) and removes h's
 * namespaces. */
void nh_janitor_start(const nh_hosts *h, void (*clean)(void));
void nh_janitor_done(void);

/* A rank's configuration: rank r of three on hosts 0-2 at port, the
 * committer on host 3 (port + 1, + 2), storage as given (with ceph_conf
 * when not NULL), stream img: distributed, 4096-byte chunks of u4, lz4,
 * ack fsync.  Its directory is made inside scratch (the test's own, which
 * the janitor removes if the test dies). */
void nh_rank_config(const nh_hosts *h, env *e, int r, int port,
                    const char *storage, const char *ceph_conf,
                    const char *scratch);
/* Wait until e's log holds text, at most ms. */
void nh_wait_log(const env *e, const char *text, int ms);

#endif

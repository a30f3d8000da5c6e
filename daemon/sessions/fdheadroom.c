/* File descriptors: the limit and the count (fdheadroom.h). */
#define _GNU_SOURCE
#include "fdheadroom.h"
#include "log.h"

#include <dirent.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

void b2sd_fd_raise_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
    return;
  rlim_t soft = rl.rlim_cur;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
      LOG_W("file descriptors: cannot raise the limit %llu to %llu: %s",
            (unsigned long long)soft, (unsigned long long)rl.rlim_max,
            strerror(errno));
      return;
    }
  }
  LOG_I("file descriptors: soft limit %llu raised to the hard limit %llu",
        (unsigned long long)soft, (unsigned long long)rl.rlim_max);
}

long b2sd_fd_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
    return 0;
  return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 0x7fffffff
             ? 0x7fffffff : (long)rl.rlim_cur;
}

long b2sd_fd_open(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;                   /* none left even for this, or no /proc */
  long n = -1;                   /* the directory's own descriptor */
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

/* Refuse: count, log sparingly (a client may knock many times). */
static int refuse(b2sd_server *srv, const char *why) {
  uint64_t k = ++srv->limit_refused;
  if ((k & (k - 1)) == 0)
    LOG_W("limit: %s (%llu refused so far)", why, (unsigned long long)k);
  return B2S_E_LIMIT;
}

static int headroom(b2sd_server *srv, long now, long most, const char *what,
                long need, long reserve, b2s_errdetail *ed) {
  b2s_errdetail mine;
  if (ed == NULL)
    ed = &mine;                  /* the log line still says why */
  b2s_errdetail_clear(ed);
  if (now >= most) {
    b2s_errdetail_set(ed, B2S_E_LIMIT, "%s refused: the maximum of %ld is "
                      "reached", what, most);
    return refuse(srv, ed->text);
  }
  long limit = b2sd_fd_limit(), open = b2sd_fd_open();
  if (!b2sd_fd_headroom(limit, open, need, reserve)) {
    b2s_errdetail_set(ed, B2S_E_LIMIT, "%s refused: %ld of %ld file "
                      "descriptors in use", what, open, limit);
    return refuse(srv, ed->text);
  }
  return 0;
}

int b2sd_headroom_session(b2sd_server *srv, b2s_errdetail *ed) {
  return headroom(srv, (long)srv->nsessions, srv->dcfg.max_sessions, "session",
              0, B2SD_FD_RESERVE_SESSION, ed);
}

int b2sd_headroom_stream(b2sd_server *srv, b2s_errdetail *ed) {
  return headroom(srv, (long)srv->streams_made, srv->dcfg.max_streams,
              "stream from a template", B2SD_FD_PER_STREAM, B2SD_FD_RESERVE,
              ed);
}

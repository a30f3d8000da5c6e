/* b2streamd: command line, configuration, directories, signals, readiness.
 *
 *   b2streamd [--config FILE] [--check-config FILE] [--dump-config] [--version]
 *
 * Signals are blocked in every thread (set here before any thread starts,
 * inherited by all) and read from a signalfd by the I/O loop: SIGTERM and
 * SIGINT drain and stop, SIGHUP reloads the configuration. */
#define _GNU_SOURCE
#include "b2sd.h"
#include "dirlock.h"
#include "endpoint.h"
#include "fdheadroom.h"
#include "notify.h"
#include "preflight.h"
#include "server.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_CONFIG "/etc/b2stream/b2streamd.yaml"


static void usage(FILE *f) {
  fprintf(f,
          "usage: b2streamd [--config FILE] [--check-config FILE] "
          "[--dump-config] [--version]\n"
          "  --config FILE        configuration (default " DEFAULT_CONFIG ")\n"
          "  --check-config FILE  validate FILE and what start needs (group, "
          "key files,\n"
          "                       directories; run it as the daemon's user) "
          "and exit:\n"
          "                       0 valid, 2 invalid\n"
          "  --dump-config        print the effective configuration and exit\n"
          "  --version            print the version and exit\n");
}

static int load(const char *path, b2s_config **cfg) {
  b2s_errdetail ed;
  int rc = b2s_config_load(path, cfg, &ed);
  if (rc < 0) {
    fprintf(stderr, "<3>%s\n", ed.text);
    return 2;
  }
  return 0;
}

static int mkdir_p(const char *dir) {
  char buf[B2S_CONFIG_PATH_MAX];
  snprintf(buf, sizeof buf, "%s", dir);
  size_t n = strlen(buf);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0')
      continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0750) < 0 && errno != EEXIST)
      return -errno;
    buf[i] = c;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *config = DEFAULT_CONFIG, *check = NULL;
  bool dump = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      config = argv[++i];
    } else if (strcmp(argv[i], "--check-config") == 0 && i + 1 < argc) {
      check = argv[++i];
    } else if (strcmp(argv[i], "--dump-config") == 0) {
      dump = true;
    } else if (strcmp(argv[i], "--version") == 0) {
      printf("%s %s\n", B2SD_NAME, B2SD_VERSION);
      return 0;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  b2s_config *cfg = NULL;
  if (check) {
    if (load(check, &cfg))
      return 2;
    /* what start would refuse */
    int bad = b2sd_preflight(cfg) < 0;
    bad |= b2sd_endpoints_check(b2s_config_daemon(cfg), false) < 0;
    b2s_config_free(cfg);
    if (bad)
      return 2;
    printf("%s: ok\n", check);
    return 0;
  }
  if (load(config, &cfg))
    return 2;
  if (dump) {
    int rc = b2s_config_dump(cfg, stdout, B2S_DUMP_HELP);
    b2s_config_free(cfg);
    return rc < 0 ? 1 : 0;
  }
  const b2s_daemon_cfg *d = b2s_config_daemon(cfg);
  b2sd_log_set_level(d->log_level);
  /* frames, chunk files and directories give others nothing, whatever
   * mask was inherited (a service manager's UMask= still applies to the
   * owner and group bits) */
  umask(umask(0) | 0007);
  int rc;
  b2sd_umask_private();
  if ((rc = mkdir_p(d->run_dir)) < 0 || (rc = mkdir_p(d->data_dir)) < 0) {
    LOG_E("cannot create %s or %s: %s", d->run_dir, d->data_dir,
          strerror(-rc));
    b2s_config_free(cfg);
    return 1;
  }
  /* before any socket, segment or frame is touched */
  if (b2sd_dirs_lock(d) < 0 || b2sd_endpoints_check(d, true) < 0) {
    b2s_config_free(cfg);
    return 1;
  }
  /* libzmq mallocs every received message.  Above glibc's mmap threshold
   * each one is a fresh mapping, and the first touch of each of its pages
   * faults (a host fault too, in a VM): up to 1 core-second per GB.  From
   * the heap, with freed memory kept up to the memory bound, the same
   * pages serve message after message. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD,
          d->memory_limit < INT_MAX ? (int)d->memory_limit : INT_MAX);
  /* before any thread exists, so every thread inherits the mask */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  /* a file-size limit (LimitFSIZE=, a quota) must fail the write with
   * EFBIG, which the stream reports, not kill the daemon */
  signal(SIGXFSZ, SIG_IGN);
  /* every connection, frame and segment is a descriptor: take all the
   * service manager allows (the soft limit is often far below) */
  b2sd_fd_raise_limit();
  b2sd_accept_guard_init();

  b2sd_server srv = {0};
  rc = b2sd_server_init(&srv, config, cfg);
  if (rc < 0) {
    LOG_E("startup failed: %s", b2s_strerror(rc));
    b2sd_server_fini(&srv);
    return 1;
  }
  LOG_I("%s %s ready: %zu streams, %d workers", B2SD_NAME, B2SD_VERSION,
        srv.nstreams, srv.nworkers);
  b2s_notify("READY=1\nSTATUS=serving");
  rc = b2sd_server_run(&srv);
  b2s_notify("STOPPING=1");
  b2sd_server_fini(&srv);
  LOG_I("stopped");
  return rc < 0 ? 1 : 0;
}

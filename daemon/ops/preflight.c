/* What start needs, checked without changing anything, for --check-config:
 * a configuration that passes here does not fail start on a missing group,
 * a bad key file, an endpoint directory, a data directory or a cluster
 * store directory.  Every
 * problem is logged, not only the first. */
#define _GNU_SOURCE
#include "b2sd.h"
#include "b2s_store.h"
#include "access.h"
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether this process may create entries in an existing directory. */
static int dir_writable(const char *dir) {
  struct stat sb;
  if (stat(dir, &sb) < 0)
    return -errno;
  if (!S_ISDIR(sb.st_mode))
    return -ENOTDIR;
  return access(dir, W_OK | X_OK) < 0 ? -errno : 0;
}

/* dir exists and is writable, or its nearest existing ancestor is a
 * directory it can be created in. */
static int dir_creatable(const char *what, const char *dir) {
  char p[B2S_CONFIG_PATH_MAX];
  snprintf(p, sizeof p, "%s", dir);
  for (;;) {
    int rc = dir_writable(p);
    if (rc == -ENOENT && strcmp(p, "/") != 0 && strcmp(p, ".") != 0) {
      char *slash = strrchr(p, '/');
      if (slash == p)
        slash[1] = '\0';
      else if (slash)
        *slash = '\0';
      else
        snprintf(p, sizeof p, ".");
      continue;
    }
    if (rc < 0)
      LOG_E("%s %s: cannot be created or used (%s: %s)", what, dir, p,
            strerror(-rc));
    return rc < 0 ? B2S_E_CONFIG : 0;
  }
}

static bool under(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int check_endpoints(const b2s_daemon_cfg *d) {
  int bad = 0;
  for (int i = 0; i < d->nlisten; i++) {
    if (strncmp(d->listen[i], "ipc://", 6) != 0)
      continue;
    char dir[B2S_CONFIG_ENDPOINT_MAX];
    snprintf(dir, sizeof dir, "%s", d->listen[i] + 6);
    dirname(dir);
    int rc = under(dir, d->run_dir) ? dir_creatable("endpoint directory", dir)
                                    : dir_writable(dir);
    if (rc < 0 && rc != B2S_E_CONFIG)
      LOG_E("listen %s: directory %s: %s", d->listen[i], dir, strerror(-rc));
    bad |= rc < 0;
  }
  return bad;
}

/* The cluster's store: a directory that can be made, or RADOS in this
 * build (whether the pool answers is the writer's to find out: the node
 * checking may not reach the cluster). */
static int check_cluster(const b2s_cluster_cfg *k) {
  if (!k->enabled)
    return 0;
  if (strncmp(k->storage, "rados://", 8) != 0)
    return dir_creatable("cluster storage", k->storage) < 0;
  if (b2s_store_have_rados())
    return 0;
  LOG_E("cluster storage %s: this build has no RADOS store (librados was "
        "not found)", k->storage);
  return 1;
}

int b2sd_preflight(const b2s_config *cfg) {
  const b2s_daemon_cfg *d = b2s_config_daemon(cfg);
  int bad = 0;
  gid_t gid;
  if (d->group[0])
    bad |= b2sd_access_group(d->group, &gid) < 0;
  if (d->curve.enabled)
    bad |= b2sd_auth_check(d) < 0;
  bad |= check_endpoints(d);
  bad |= dir_creatable("run_dir", d->run_dir) < 0;
  bad |= dir_creatable("data_dir", d->data_dir) < 0;
  bad |= check_cluster(b2s_config_cluster(cfg));
  size_t n;
  const b2s_stream_cfg *sc = b2s_config_streams(cfg, &n);
  for (size_t i = 0; i < n; i++) {
    char dir[B2S_CONFIG_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", sc[i].full_path);
    bad |= dir_creatable("frame directory", dirname(dir)) < 0;
  }
  return bad ? B2S_E_CONFIG : 0;
}

/* Local access to the daemon: who may connect to its ipc:// sockets and map
 * its shared-memory segments.  By default only the daemon's own user
 * (0600); with `group:` set, members of that group too (0660, that group),
 * so producers and consumers can run under their own accounts without
 * running as the daemon's user. */
#define _GNU_SOURCE
#include "b2sd.h"
#include "b2s_shm.h"

#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int b2sd_access_group(const char *name, gid_t *gid) {
  struct group gr, *res = NULL;
  char buf[16384];
  int e = getgrnam_r(name, &gr, buf, sizeof buf, &res);
  if (!res) {
    LOG_E("group '%s': %s", name, e ? strerror(e) : "no such group");
    return B2S_E_CONFIG;
  }
  *gid = gr.gr_gid;
  return 0;
}

/* A directory of ours (run_dir, data_dir) goes to the group, which may
 * enter and list it: its members reach the sockets and read the frames. */
static int share_dir(b2sd_server *srv, const char *dir) {
  struct stat sb;
  if (stat(dir, &sb) < 0 || sb.st_uid != geteuid())
    return 0;                     /* not ours: the operator's choice */
  if ((sb.st_gid != srv->share_gid &&
       chown(dir, (uid_t)-1, srv->share_gid) < 0) ||
      chmod(dir, (sb.st_mode & 07777) | 0050) < 0) {
    int e = errno;
    LOG_E("cannot give %s to group %s: %s", dir, srv->dcfg.group,
          strerror(e));
    return -e;
  }
  return 0;
}

int b2sd_access_init(b2sd_server *srv) {
  srv->share = false;
  if (!srv->dcfg.group[0])
    return 0;
  int rc = b2sd_access_group(srv->dcfg.group, &srv->share_gid);
  if (rc < 0)
    return rc;
  srv->share = true;
  if ((rc = share_dir(srv, srv->dcfg.run_dir)) < 0 ||
      (rc = share_dir(srv, srv->dcfg.data_dir)) < 0)
    return rc;
  return 0;
}

int b2sd_access_socket(b2sd_server *srv, const char *path) {
  if (srv->share && chown(path, (uid_t)-1, srv->share_gid) < 0) {
    int e = errno;
    LOG_E("cannot give %s to group %s: %s", path, srv->dcfg.group,
          strerror(e));
    return -e;
  }
  if (chmod(path, srv->share ? 0660 : 0600) < 0) {
    int e = errno;
    LOG_E("cannot set the mode of %s: %s", path, strerror(e));
    return -e;
  }
  return 0;
}

int b2sd_access_segment(b2sd_server *srv, b2s_shm *shm) {
  if (!srv->share)
    return 0;
  int rc = b2s_shm_share_group(shm, srv->share_gid);
  if (rc < 0)
    LOG_E("cannot give segment %s to group %s: %s", b2s_shm_name(shm),
          srv->dcfg.group, b2s_strerror(rc));
  return rc;
}

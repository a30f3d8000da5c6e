/* Local access to the daemon: who may connect to its ipc:// sockets and map
 * its shared-memory segments.  By default only the daemon's own user
 * (0600); with `group:` set, members of that group too (0660, that group),
 * so producers and consumers can run under their own accounts without
 * running as the daemon's user. */
#define _GNU_SOURCE
#include "b2sd.h"

#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int b2sd_access_init(b2sd_server *srv) {
  srv->share = false;
  if (!srv->dcfg.group[0])
    return 0;
  struct group gr, *res = NULL;
  char buf[16384];
  int e = getgrnam_r(srv->dcfg.group, &gr, buf, sizeof buf, &res);
  if (!res) {
    LOG_E("group '%s': %s", srv->dcfg.group,
          e ? strerror(e) : "no such group");
    return B2S_E_CONFIG;
  }
  srv->share_gid = gr.gr_gid;
  srv->share = true;
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

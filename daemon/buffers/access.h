/* Local access (access.c): the mode and group of what other local users
 * may open, the ipc:// socket files and the shared-memory segments. */
#ifndef B2SD_ACCESS_H
#define B2SD_ACCESS_H

#include <sys/types.h>

#include "b2s_shm.h"
#include "b2sd.h"

/* The id of group name (B2S_E_CONFIG, logged, when it does not exist). */
int b2sd_access_group(const char *name, gid_t *gid);
/* Resolve the configured group (B2S_E_CONFIG when it does not exist). */
int b2sd_access_init(b2sd_server *srv);
/* Mode and group of a bound ipc:// socket file. */
int b2sd_access_socket(b2sd_server *srv, const char *path);
/* Mode and group of a new segment, before its name is sent. */
int b2sd_access_segment(b2sd_server *srv, b2s_shm *shm);

#endif

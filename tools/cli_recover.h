/* b2stream recover on a distributed frame (cmd_recover_dist.c). */
#ifndef B2S_CLI_RECOVER_H
#define B2S_CLI_RECOVER_H

/* Rebuild the key log of the distributed frame path; an exit status. */
int recover_dist(const char *path, const char *ceph_conf);

#endif

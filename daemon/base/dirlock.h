/* The daemon's hold on its directories: one daemon per directory
 * (b2streamd locks its run_dir and data_dir before it touches a socket, a
 * segment or a frame), and nothing it creates there is world-readable.
 *
 * Ownership: the lock files stay open (and locked) until the process
 * exits; nothing else in the daemon sees them. */
#ifndef B2SD_DIRLOCK_H
#define B2SD_DIRLOCK_H

#include "b2s_config.h"

/* Lock run_dir and data_dir (once when they are the same directory):
 * create DIR/.b2streamd.lock, flock it and write this PID into it.
 * Returns 0, or logs which directory another daemon holds (with its PID)
 * and returns B2S_E_LOCKED, or -errno. */
int b2sd_dirs_lock(const b2s_daemon_cfg *d);

/* Outside systemd, add 027 to the umask: frames come out 0640 and their
 * directories 0750, as the unit's UMask=0027 makes them.  Under systemd
 * (NOTIFY_SOCKET set: the unit is Type=notify) the unit's UMask=
 * decides. */
void b2sd_umask_private(void);

/* Log that a writer holds path, the frame of stream, naming its PID when
 * known. */
void b2sd_log_locked(const char *stream, const char *path);

#endif

/* ipc:// endpoints never cost a file.  libzmq removes whatever the path
 * of an ipc:// endpoint names when it binds; the daemon first makes sure
 * that is nothing, or a socket nobody answers on (left by a daemon that
 * died), and at exit removes only the socket it bound itself.  tcp:// and
 * other endpoints pass through untouched.
 *
 * Ownership: the endpoint strings stay the caller's; the I/O thread alone
 * calls these. */
#ifndef B2SD_ENDPOINT_H
#define B2SD_ENDPOINT_H

#include <stdbool.h>

#include "b2s_config.h"

/* Before zmq_bind: 0 when the path is free (a stale socket is removed);
 * otherwise logs why the daemon must not bind there (a file that is not a
 * socket, a socket someone answers on) and returns a negative code. */
int b2sd_endpoint_claim(const char *ep);
/* After a successful zmq_bind: remember which socket file is ours. */
void b2sd_endpoint_bound(const char *ep);
/* At exit: remove the socket file if it is still the one bound. */
void b2sd_endpoint_release(const char *ep);

/* Report every ipc:// endpoint the daemon would refuse (on stderr;
 * nothing is removed); 0 when there is none, else B2S_E_CONFIG.  At start
 * (`starting`) this runs before any frame is opened, so a daemon that
 * cannot serve touches nothing.  For --check-config a socket someone
 * answers on is only noted: the running daemon's configuration is checked
 * while it runs. */
int b2sd_endpoints_check(const b2s_daemon_cfg *d, bool starting);

#endif

/* CURVE authentication of tcp:// clients (auth.c): the daemon's keys, the
 * authorized client keys and the "b2sd-zap" thread that answers libzmq's
 * ZAP requests. */
#ifndef B2SD_AUTH_H
#define B2SD_AUTH_H

#include "b2s_config.h"

typedef struct b2sd_auth b2sd_auth;
/* With curve configured: load the daemon's secret key and the authorized
 * client keys, bind the ZAP handler in zctx.  *out is set even on failure
 * (b2sd_auth_free it).  B2S_E_CONFIG when libzmq lacks CURVE or a key file
 * is wrong, -errno when one cannot be read (the reason is logged). */
int b2sd_auth_new(void *zctx, const b2s_daemon_cfg *d, b2sd_auth **out);
/* Make ROUTER z, before it binds endpoint, a CURVE server of the daemon. */
int b2sd_auth_server_socket(b2sd_auth *a, void *z, const char *endpoint);
/* Read and parse both key files without starting anything (the reason
 * is logged): 0, B2S_E_CONFIG or -errno. */
int b2sd_auth_check(const b2s_daemon_cfg *d);
/* Start the handler thread, once every socket is set up. */
int b2sd_auth_start(b2sd_auth *a);
/* Reload: re-read the authorized keys (on failure, logged, the old set
 * stays).  a may be NULL (curve off). */
void b2sd_auth_reload(b2sd_auth *a, const b2s_daemon_cfg *loaded);
/* Stop the thread, close its sockets (before zmq_ctx_term).  Accepts NULL. */
void b2sd_auth_free(b2sd_auth *a);

#endif

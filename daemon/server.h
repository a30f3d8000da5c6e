/* The I/O loop (server.c): the server's life, which main.c drives. */
#ifndef B2SD_SERVER_H
#define B2SD_SERVER_H

#include "b2sd.h"

/* The I/O loop; returns when a SIGTERM/SIGINT drain has finished. */
int b2sd_server_run(b2sd_server *srv);
int b2sd_server_init(b2sd_server *srv, const char *config_path,
                     b2s_config *cfg);
void b2sd_server_fini(b2sd_server *srv);

#endif

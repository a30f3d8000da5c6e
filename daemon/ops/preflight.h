/* What start needs, checked beforehand (preflight.c): --check-config. */
#ifndef B2SD_PREFLIGHT_H
#define B2SD_PREFLIGHT_H

#include "b2s_config.h"

/* Everything start checks, without changing anything: the group exists,
 * CURVE key files read and parse, ipc:// endpoint directories exist, the
 * run, data and frame directories exist or can be created.  Each problem
 * is logged; B2S_E_CONFIG when there is one. */
int b2sd_preflight(const b2s_config *cfg);

#endif

/* STATS (stats.c): a stream's, or every stream's, statistics as JSON. */
#ifndef B2SD_STATS_H
#define B2SD_STATS_H

#include "b2sd.h"

/* Statistics as a JSON object for STATS_REPLY (stream NULL: all).  Returns
 * a malloc'ed NUL-terminated text, NULL when out of memory. */
char *b2sd_stats_json(b2sd_server *srv, b2sd_stream *only);

#endif

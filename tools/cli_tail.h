/* What the two sides of b2stream tail share: following a b2streamd stream
 * (cmd_tail.c) and following a distributed frame's committed prefix
 * (cmd_tail_dist.c).  Error policy as in cli.h. */
#ifndef B2S_CLI_TAIL_H
#define B2S_CLI_TAIL_H

#include "cli_client.h"

typedef struct cli_tail_opts {
  const char *endpoint, *stream;
  const char *committer_pub, *ceph_conf;   /* distributed frames only */
  int64_t from, count, idle;
  bool data, records;
  bool dist;                               /* stream is a distributed frame */
} cli_tail_opts;

/* tail on a distributed frame o->stream (cli_dist_parse gave 1). */
int cli_tail_dist(const cli_tail_opts *o);

#endif

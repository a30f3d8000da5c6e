/* b2stream recover on a distributed frame (rados://POOL/NAME,
 * dir:///ABS/DIR/NAME): the key log rebuilt from the chunk objects and
 * their attached records (b2s_dframe_reindex), under the frame's lease,
 * so no committer writes it meanwhile. */
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "cli_recover.h"

#define RECOVER_LEASE_MS 60000

int recover_dist(const char *path, const char *ceph_conf) {
  cli_dist_url u;
  b2s_store *s;
  b2s_dframe *df;
  if (cli_dist_parse(path, &u) != 1 || cli_dist_open(path, ceph_conf, &s, &df) < 0)
    return CLI_EXIT_FAIL;
  char lease[B2S_DMSG_NAME_MAX + 16], holder[128], who[512];
  snprintf(lease, sizeof lease, "%s.lease", u.name);
  snprintf(holder, sizeof holder, "b2stream recover pid %ld", (long)getpid());
  b2s_lease *l = NULL;
  int rc = b2s_store_lease_take(s, lease, holder, RECOVER_LEASE_MS, &l, who,
                                sizeof who);
  int64_t missing = 0, h = 0;
  if (rc == B2S_E_BUSY)
    cli_err("%s: a committer holds the frame (%s): stop it first", path,
            who[0] ? who : "holder unknown");
  else if (rc < 0)
    cli_err("%s: cannot take the frame's lease: %s: %s", path,
            b2s_strerror(rc), b2s_store_last_error());
  else if ((rc = b2s_dframe_reindex(df, &missing, &h)) == B2S_E_INDEX)
    cli_err("%s: chunk %lld is committed but its object is missing: the key "
            "log is rebuilt below it only", path, (long long)h);
  else if (rc < 0)
    cli_err("%s: rebuilding the key log: %s: %s", path, b2s_strerror(rc),
            b2s_store_last_error());
  if (rc == 0)
    printf("frame:     %s\n"
           "state:     %s\n"
           "committed: %lld\n"
           "missing_records: %lld (rewritten from their chunk objects)\n",
           path, missing ? "key log rebuilt" : "key log complete (rewritten)",
           (long long)h, (long long)missing);
  b2s_store_lease_drop(l);
  b2s_dframe_free(df);
  b2s_store_free(s);
  return rc == 0 && cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

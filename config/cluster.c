/* The cluster: section: this daemon as one rank of a distributed stream's
 * writers (docs/DISTRIBUTED.md).  Keys go through the schema like the
 * rest (scope CFG_CLUSTER, fields of b2s_cluster_cfg); what spans keys is
 * checked here: required keys, the rank inside the rank list, endpoints
 * that name other processes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define KI(path) b2s_cfg_schema_index(CFG_CLUSTER, path)

/* Endpoints of the section name sockets of other processes, on other
 * nodes: a relative ipc:// path would mean something else to each. */
static bool ipc_relative(const char *ep) {
  return strncmp(ep, "ipc://", 6) == 0 && ep[6] != '/' && ep[6] != '@';
}

static int check_endpoints(cfg_ctx *c, const b2s_cluster_cfg *k,
                           const cfg_loc *loc) {
  static const char why[] = "an ipc:// endpoint of the cluster needs an "
                            "absolute path";
  for (int i = 0; i < k->nranks; i++) {
    if (ipc_relative(k->ranks[i]))
      return b2s_cfg_loc_item_fail(c, loc, KI("ranks"), i, why);
    for (int j = 0; j < i; j++)
      if (strcmp(k->ranks[i], k->ranks[j]) == 0)
        return b2s_cfg_loc_item_fail(c, loc, KI("ranks"), i, "'%s' is also "
                                 "rank %d", k->ranks[i], j);
  }
  if (ipc_relative(k->committer))
    return b2s_cfg_loc_fail(c, loc, KI("committer"), why);
  if (ipc_relative(k->committer_pub))
    return b2s_cfg_loc_fail(c, loc, KI("committer_pub"), why);
  return 0;
}

static int finish_cluster(cfg_ctx *c, const b2s_cluster_cfg *k,
                          const cfg_loc *loc) {
  if (!k->storage[0])
    return b2s_cfg_loc_fail(c, loc, KI("storage"), "required in cluster");
  if (!loc->at[KI("rank")])
    return b2s_cfg_loc_fail(c, loc, KI("rank"), "required in cluster");
  if (k->nranks == 0)
    return b2s_cfg_loc_fail(c, loc, KI("ranks"), "required in cluster");
  if (!k->committer[0])
    return b2s_cfg_loc_fail(c, loc, KI("committer"), "required in cluster");
  if (k->rank >= k->nranks)
    return b2s_cfg_loc_fail(c, loc, KI("rank"), "%d is not a rank of the %d in "
                        "ranks (0..%d)", k->rank, k->nranks, k->nranks - 1);
  return check_endpoints(c, k, loc);
}

int b2s_cfg_cluster_load(cfg_ctx *c) {
  b2s_cluster_cfg *k = &c->cfg->cluster;
  int rc = b2s_cfg_apply_defaults(c, CFG_CLUSTER, k, false);
  if (rc < 0 || !c->cluster_node)
    return rc;
  cfg_loc *loc = calloc(1, sizeof *loc);
  if (!loc)
    return b2s_cfg_nomem(c);
  loc->self = c->cluster_node;
  snprintf(loc->path, sizeof loc->path, "cluster");
  k->enabled = true;
  rc = b2s_cfg_apply_map(c, CFG_CLUSTER, "", c->cluster_node, k, false, loc,
                     "cluster");
  if (rc == 0)
    rc = finish_cluster(c, k, loc);
  free(loc);
  return rc;
}

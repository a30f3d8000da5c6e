/* b2stream-committer: command line (committer.h has the rest). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "committer.h"
#include "b2s_frame_writer.h"

#define FRAMES_ARG_MAX 256

static void usage(FILE *out) {
  fputs("usage: b2stream-committer --store URL --pull ENDPOINT --pub ENDPOINT\n"
        "         [--frame NAME]... [--gap-timeout-ms N] [--window N]\n"
        "         [--ceph-conf FILE] [--sync full|none] [--lease-ms N]\n"
        "Commits the chunks that the ranks of distributed frames stored in\n"
        "URL (rados://POOL, or a directory), announced by WRITTEN and END on\n"
        "the PULL endpoint; publishes COMMITTED on the PUB endpoint after\n"
        "every commit and every second.  Frames are --frame names and those\n"
        "named by messages.  A chunk missing for --gap-timeout-ms (default\n"
        "10000) while later ones are there becomes a gap.  Each frame is\n"
        "leased in the store for --lease-ms (default 10000), renewed every\n"
        "second: a second committer of a frame is refused, naming the\n"
        "holder (it waits up to the lease for one killed to expire).  A\n"
        "frame a message names while another holds its lease is tried\n"
        "again every 200 ms, every second once the holder renewed it.\n", out);
}

static int parse_int(const char *s, int64_t min, int64_t *out) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < min)
    return -1;
  *out = v;
  return 0;
}

static int parse(int argc, char **argv, cm_opts *o, const char **frames) {
  static const struct option longs[] = {
      {"store", required_argument, NULL, 's'},
      {"frame", required_argument, NULL, 'f'},
      {"pull", required_argument, NULL, 'l'},
      {"pub", required_argument, NULL, 'p'},
      {"gap-timeout-ms", required_argument, NULL, 'g'},
      {"window", required_argument, NULL, 'w'},
      {"ceph-conf", required_argument, NULL, 'c'},
      {"sync", required_argument, NULL, 'y'},
      {"lease-ms", required_argument, NULL, 'e'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    switch (ch) {
    case 's': o->store_url = optarg; break;
    case 'l': o->pull = optarg; break;
    case 'p': o->pub = optarg; break;
    case 'c': o->ceph_conf = optarg; break;
    case 'f':
      if (o->nframes == FRAMES_ARG_MAX)
        return -1;
      frames[o->nframes++] = optarg;
      break;
    case 'g':
      if (parse_int(optarg, 0, &o->gap_timeout_ms) < 0)
        return -1;
      break;
    case 'w':
      if (parse_int(optarg, 1, &o->window) < 0)
        return -1;
      break;
    case 'e':
      if (parse_int(optarg, 2000, &o->lease_ms) < 0 || o->lease_ms > 3600000)
        return -1;
      break;
    case 'y':
      if (strcmp(optarg, "full") != 0 && strcmp(optarg, "none") != 0)
        return -1;
      o->sync = strcmp(optarg, "full") == 0 ? B2S_SYNC_FULL : B2S_SYNC_NONE;
      break;
    case 'h': usage(stdout); exit(0);
    default: return -1;
    }
  }
  return optind == argc && o->store_url && o->pull && o->pub ? 0 : -1;
}

int main(int argc, char **argv) {
  static const char *frames[FRAMES_ARG_MAX];
  cm_opts o = {.frames = frames, .gap_timeout_ms = 10000, .lease_ms = 10000,
               .sync = B2S_SYNC_FULL};
  if (parse(argc, argv, &o, frames) < 0) {
    usage(stderr);
    return 2;
  }
  return cm_run(&o);
}

/* b2stream recover: restore a frame whose last commit was interrupted
 * (b2s_frame_recover) and print what was done. */
#include <string.h>

#include "cli.h"
#include "cli_recover.h"
#include "b2s_meta.h"
#include "b2s_frame_writer.h"

static const char help[] =
    "usage: b2stream recover PATH [--deep]\n"
    "\n"
    "Restore the frame PATH (file or sparse frame directory) to its newest\n"
    "complete commit after a crash.  Chunks written since the previous\n"
    "commit are decoded before they are kept; nothing that does not decode\n"
    "is ever added.  A frame written by another tool is only checked.\n"
    "Chunk files missing from a sparse frame are reported and their\n"
    "entries removed; every other chunk stays, in order.  Refused while a\n"
    "writer (b2streamd) holds the frame.\n"
    "A records frame beside it (NAME.records.b2frame) is restored too, and\n"
    "the two are aligned: records past the data frame's last chunk are cut\n"
    "(records_cut), and data chunks without a record get a \"no record\"\n"
    "record (records_filled): data is never cut.\n"
    "Prints a report; exits 1 when the frame cannot be restored.\n"
    "\n"
    "  --deep   decode every chunk, not only the recent ones\n"
    "\n"
    "PATH may also be a distributed frame (rados://POOL/NAME or\n"
    "dir:///ABS/DIR/NAME, --ceph-conf FILE for RADOS): its key log is\n"
    "rebuilt from the chunk objects and the records attached to them\n"
    "(records a damaged batch lost are written again; chunks stored right\n"
    "above the committed count are committed, as a committer's start\n"
    "would).  Refused while a committer holds the frame's lease.\n";

static void report(const char *path, const b2s_recover_report *r) {
  printf("frame:          %s\n"
         "state:          %s\n"
         "commit:         %lld\n"
         "nchunks:        %lld\n"
         "dropped_chunks: %lld\n"
         "chunks_checked: %lld\n"
         "orphan_files:   %lld\n"
         "missing_files:  %lld\n",
         path, r->was_clean ? "clean (nothing to do)" : "restored",
         (long long)r->commit, (long long)r->nchunks,
         (long long)r->dropped_chunks, (long long)r->chunks_checked,
         (long long)r->orphan_files, (long long)r->missing_files);
}

static void report_records(const char *path, const b2s_pair_report *r) {
  char rpath[4096];
  b2s_records_path(path, rpath, sizeof rpath);
  printf("records:        %s\n"
         "records_state:  %s\n"
         "records_commit: %lld\n"
         "records_dropped_chunks: %lld\n"
         "records_cut:    %lld\n"
         "records_filled: %lld\n"
         "nchunks_final:  %lld\n",
         rpath, r->records.was_clean ? "clean (nothing to do)" : "restored",
         (long long)r->records.commit,
         (long long)r->records.dropped_chunks, (long long)r->records_cut,
         (long long)r->records_filled, (long long)r->data.nchunks);
}

static int run(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *path = NULL, *operand, *conf = NULL;
  bool deep = false;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    if (t == 2 && path == NULL)
      path = operand;
    else if (t == 2)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    else if (strcmp(a.opt, "ceph-conf") == 0) {
      if ((conf = cli_args_value(&a)) == NULL)
        return CLI_EXIT_USAGE;
    } else if (strcmp(a.opt, "deep"))
      return cli_unknown_option(&a);
    else if (!cli_args_no_value(&a))
      return CLI_EXIT_USAGE;
    else
      deep = true;
  }
  if (path == NULL)
    return cli_usage(&a, "missing PATH");
  cli_dist_url u;
  int dist = cli_dist_parse(path, &u);
  if (dist < 0)
    return CLI_EXIT_USAGE;
  if (dist == 1)
    return recover_dist(path, conf);
  b2s_pair_report rep;
  b2s_frame_error err;
  memset(&rep, 0, sizeof rep);
  b2s_frame_error_clear(&err);
  int rc = b2s_pair_recover(path, deep, &rep, &err);
  if (rc == B2S_E_LOCKED) {
    cli_err_locked(path);
    return CLI_EXIT_FAIL;
  }
  if (rc < 0) {
    cli_err_frame(path, &err, rc, -1);
    return CLI_EXIT_FAIL;
  }
  report(path, &rep.data);
  if (rep.has_records)
    report_records(path, &rep);
  return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

const cli_cmd cli_cmd_recover = {"recover", "restore a frame after a crash",
                                 help, run};

/* b2stream: the command-line tool.  Dispatches to one subcommand per
 * file (cmd_*.c); cli_*.c hold what they share. */
#include <signal.h>
#include <string.h>

#include "cli.h"
#include "cli_acq.h"
#include "cli_client.h"

static const cli_cmd *const commands[] = {
    &cli_cmd_info,   &cli_cmd_ls,      &cli_cmd_cat,     &cli_cmd_verify,
    &cli_cmd_recover, &cli_cmd_convert, &cli_cmd_pack,   &cli_cmd_unpack,
    &cli_cmd_produce, &cli_cmd_tail,   &cli_cmd_stats,   &cli_cmd_keygen,
    &cli_cmd_top,    &cli_cmd_acq,     &cli_cmd_token,
#ifdef B2S_HAVE_HDF5
    &cli_cmd_export, &cli_cmd_import,
#endif
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static int usage(void) {
  printf("usage: b2stream COMMAND [ARGS]   (b2stream COMMAND --help)\n\n"
         "PATH is a contiguous frame file, a sparse frame directory or a\n"
         "single Blosc2 chunk file.  info, ls, cat, verify, tail and convert\n"
         "also read a distributed frame in an object store, up to its\n"
         "committed count: rados://POOL/NAME (a Ceph RADOS pool; --ceph-conf\n"
         "FILE, else $CEPH_CONF) or dir:///ABS/DIR/NAME (a local store\n"
         "directory), NAME being the frame's name.\n\n");
  for (size_t k = 0; k < NCOMMANDS; k++)
    printf("  %-8s %s\n", commands[k]->name, commands[k]->summary);
  return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

int main(int argc, char **argv) {
  /* A reader that goes away shows up as EPIPE from write(), reported once,
   * instead of killing the process mid-line. */
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) {
    cli_err("missing command (see b2stream --help)");
    return CLI_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help"))
    return usage();
  for (size_t k = 0; k < NCOMMANDS; k++) {
    const cli_cmd *c = commands[k];
    if (strcmp(name, c->name) != 0)
      continue;
    /* acq has subcommands, each with its own help */
    if (c != &cli_cmd_acq && cli_wants_help(argc - 1, argv + 1)) {
      fputs(c->help, stdout);
      return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    return c->run(argc - 1, argv + 1);
  }
  cli_err("unknown command '%s' (see b2stream --help)", name);
  return CLI_EXIT_USAGE;
}

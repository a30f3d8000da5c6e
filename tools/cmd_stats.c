/* b2stream stats: the daemon's statistics, as the JSON it sends. */
#include <stdlib.h>
#include <string.h>

#include "cli_client.h"

static const char help[] =
    "usage: b2stream stats [OPTIONS] [STREAM]\n"
    "\n"
    "Print b2streamd's statistics as one JSON object: the daemon and all\n"
    "its streams, or only STREAM (per-stream buffers, bytes in and out,\n"
    "ratio, drops, queue depth, commit latency, ...).\n"
    "\n"
    CLI_ENDPOINT_HELP;

static int stats_run(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *endpoint = NULL, *stream = NULL, *operand;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    if (t == 2 && stream == NULL)
      stream = operand;
    else if (t == 2)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    else if (strcmp(a.opt, "endpoint"))
      return cli_unknown_option(&a);
    else if ((endpoint = cli_args_value(&a)) == NULL)
      return CLI_EXIT_USAGE;
  }
  b2sc_session *s;
  if (cli_client_connect(endpoint, 0, &s) < 0)
    return CLI_EXIT_FAIL;
  char *json;
  size_t len;
  int rc = b2sc_stats(s, stream, &json, &len);
  if (rc < 0) {
    cli_client_err(s, stream ? stream : "stats", rc);
    b2sc_close(s);
    return CLI_EXIT_FAIL;
  }
  b2sc_close(s);
  fwrite(json, 1, len, stdout);
  if (len == 0 || json[len - 1] != '\n')
    putchar('\n');
  free(json);
  return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

const cli_cmd cli_cmd_stats = {"stats", "b2streamd statistics (JSON)", help,
                               stats_run};

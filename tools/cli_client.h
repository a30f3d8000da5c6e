/* What the b2stream subcommands that talk to b2streamd share (produce,
 * tail, stats): the --endpoint default, connecting, and error lines that
 * carry the daemon's own message.  Error policy as in cli.h: each failure
 * is printed once, here, and the caller only picks the exit status. */
#ifndef B2S_CLI_CLIENT_H
#define B2S_CLI_CLIENT_H

#include "b2stream_client.h"
#include "cli.h"

extern const cli_cmd cli_cmd_produce, cli_cmd_tail, cli_cmd_stats,
    cli_cmd_keygen, cli_cmd_top;

/* Help text lines describing --endpoint, shared by the three commands. */
#define CLI_ENDPOINT_HELP                                                      \
  "  --endpoint E       the daemon's ZeroMQ endpoint (ipc://PATH or\n"        \
  "                     tcp://HOST:PORT); default $B2STREAM_ENDPOINT, else\n" \
  "                     ipc://$RUNTIME_DIRECTORY/b2streamd.sock, else\n"      \
  "                     ipc://run/b2streamd.sock\n"

/* CURVE for tcp:// endpoints of a daemon with curve: configured: the
 * daemon's public key (Z85) and a file holding this client's secret key. */
#define CLI_CURVE_SERVER_ENV "B2S_CURVE_SERVER_KEY"
#define CLI_CURVE_KEY_FILE_ENV "B2S_CURVE_KEY_FILE"

/* Session options with the given roles, with CURVE when
 * $B2S_CURVE_SERVER_KEY is set (the secret key is read into secret, which
 * must outlive the options).  Prints the error; returns 0 or negative. */
int cli_client_options(unsigned roles, b2sc_options *o,
                       char secret[B2SC_CURVE_KEY_LEN + 1]);

/* Connect (endpoint NULL: the default) with the given roles, with CURVE
 * when $B2S_CURVE_SERVER_KEY is set.  Prints the error; returns 0 or
 * negative. */
int cli_client_connect(const char *endpoint, unsigned roles,
                       b2sc_session **out);

/* "b2stream: <what>: <message>[: <daemon's message>]" for code rc; the
 * daemon's message is added when it sent one with this code. */
void cli_client_err(const b2sc_session *s, const char *what, int rc);

/* " frame=N ts=NS xxh64=HEX flags=F" of a record to stdout (tail). */
void cli_print_record(const b2sc_record *r);

#endif

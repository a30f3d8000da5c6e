/* Connecting to b2streamd, reporting its errors and printing the records
 * it delivers (see cli_client.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli_client.h"

void cli_client_err(const b2sc_session *s, const char *what, int rc) {
  const char *daemon = s != NULL && b2sc_last_error_code(s) == rc
                           ? b2sc_last_error(s) : "";
  /* the daemon's text adds something only when it is not the code's */
  if (daemon[0] && strcmp(daemon, b2sc_strerror(rc)) != 0)
    cli_err("%s: %s: %s", what, b2sc_strerror(rc), daemon);
  else
    cli_err("%s: %s", what, b2sc_strerror(rc));
}

int cli_client_options(unsigned roles, b2sc_options *o,
                       char secret[B2SC_CURVE_KEY_LEN + 1]) {
  *o = (b2sc_options){.client_name = "b2stream", .roles = roles};
  /* CURVE from the environment: the daemon's public key, and a file with
   * this client's secret key */
  const char *server = getenv(CLI_CURVE_SERVER_ENV);
  const char *keyfile = getenv(CLI_CURVE_KEY_FILE_ENV);
  if (server == NULL || !server[0])
    return 0;
  if (keyfile == NULL || !keyfile[0]) {
    cli_err("%s is set but %s is not", CLI_CURVE_SERVER_ENV,
            CLI_CURVE_KEY_FILE_ENV);
    return B2S_E_ARG;
  }
  int krc = b2sc_curve_key_read(keyfile, secret);
  if (krc < 0) {
    cli_err("%s: %s", keyfile, krc == B2S_E_ARG ? "no Z85 secret key in it"
                                                : b2sc_strerror(krc));
    return krc;
  }
  o->curve_server_key = server;
  o->curve_secret_key = secret;
  return 0;
}

int cli_client_connect(const char *endpoint, unsigned roles,
                       b2sc_session **out) {
  *out = NULL;
  char def[1100];
  if (endpoint == NULL && b2sc_default_endpoint(def, sizeof def) > 0)
    endpoint = def;
  b2sc_options o;
  char secret[B2SC_CURVE_KEY_LEN + 1];
  int orc = cli_client_options(roles, &o, secret);
  if (orc < 0)
    return orc;
  int rc = b2sc_connect_opts(endpoint, &o, out);
  if (rc == -ENOENT)
    cli_err("%s: no daemon listening (socket missing)", endpoint);
  else if (rc == -EACCES)
    cli_err("%s: permission denied: this user may not open the daemon's "
            "socket (see the daemon's group: setting)", endpoint);
  else if (rc == B2S_E_TIMEOUT)
    cli_err("%s: no answer from the daemon", endpoint);
  else if (rc == B2S_E_ARG && o.curve_server_key)
    cli_err("%s: %s is not a Z85 key (40 characters)", endpoint,
            CLI_CURVE_SERVER_ENV);
  else if (rc == B2S_E_AUTH && o.curve_server_key)
    cli_err("%s: refused by CURVE: this client's key is not authorized, "
            "or the server key is wrong", endpoint);
  else if (rc < 0)
    cli_err("%s: %s", endpoint, b2sc_strerror(rc));
  return rc;
}

void cli_print_record(const b2sc_record *r) {
  if (r->present & B2SC_REC_FRAME)
    printf(" frame=%" PRIu64, r->frame);
  else
    fputs(" frame=-", stdout);
  if (r->present & B2SC_REC_TS)
    printf(" ts=%" PRId64, r->ts_ns);
  else
    fputs(" ts=-", stdout);
  if (r->present & B2SC_REC_XXH64)
    printf(" xxh64=%016" PRIx64, r->xxh64);
  else
    fputs(" xxh64=-", stdout);
  static const char *const names[] = {"gap", "dropped", "rejected",
                                      "norecord"};
  const char *sep = " flags=";
  for (unsigned b = 0; b < 4; b++)
    if (r->flags & (1u << b)) {
      printf("%s%s", sep, names[b]);
      sep = ",";
    }
  if (r->flags == 0)
    fputs(" flags=0", stdout);
}

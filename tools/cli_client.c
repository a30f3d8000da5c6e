/* Connecting to b2streamd and reporting its errors (see cli_client.h). */
#include <errno.h>
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

int cli_client_connect(const char *endpoint, unsigned roles,
                       b2sc_session **out) {
  char def[1100];
  if (endpoint == NULL && b2sc_default_endpoint(def, sizeof def) > 0)
    endpoint = def;
  b2sc_options o = {.client_name = "b2stream", .roles = roles};
  int rc = b2sc_connect_opts(endpoint, &o, out);
  if (rc == -ENOENT)
    cli_err("%s: no daemon listening (socket missing)", endpoint);
  else if (rc == B2S_E_TIMEOUT)
    cli_err("%s: no answer from the daemon", endpoint);
  else if (rc < 0)
    cli_err("%s: %s", endpoint, b2sc_strerror(rc));
  return rc;
}

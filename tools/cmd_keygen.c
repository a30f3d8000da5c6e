/* b2stream keygen: CurveZMQ key pairs for b2streamd's curve: setting and
 * for its clients, in the one-key-per-file Z85 format both read. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "cli_client.h"

static const char help[] =
    "usage: b2stream keygen [--public] FILE\n"
    "\n"
    "Make a CurveZMQ key pair: write the secret key (Z85, 40 characters)\n"
    "to FILE, created with mode 0600 (it must not exist), and print the\n"
    "public key on stdout.  With --public, print the public key of the\n"
    "secret key in FILE instead.\n"
    "\n"
    "The daemon's FILE is its curve.secret_key_file; its public key is what\n"
    "clients give as $" CLI_CURVE_SERVER_ENV ".  A client's FILE is its\n"
    "$" CLI_CURVE_KEY_FILE_ENV "; its public key goes on a line of the\n"
    "daemon's curve.authorized_keys_file.\n";

static int write_secret(const char *path, const char *secret) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    cli_err("%s: %s", path, strerror(errno));
    return -1;
  }
  char text[80];
  int n = snprintf(text, sizeof text, "%s\n", secret);
  bool ok = write(fd, text, (size_t)n) == n;
  ok = fsync(fd) == 0 && ok;
  if (close(fd) < 0 || !ok) {
    cli_err("%s: %s", path, strerror(errno ? errno : EIO));
    unlink(path);
    return -1;
  }
  return 0;
}

static int keygen_run(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *file = NULL, *operand;
  bool public_only = false;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    if (t == 2 && file == NULL)
      file = operand;
    else if (t == 2)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    else if (strcmp(a.opt, "public"))
      return cli_unknown_option(&a);
    else if (!cli_args_no_value(&a))
      return CLI_EXIT_USAGE;
    else
      public_only = true;
  }
  if (file == NULL)
    return cli_usage(&a, "missing FILE");
  if (!zmq_has("curve")) {
    cli_err("keygen: this libzmq was built without CURVE support");
    return CLI_EXIT_FAIL;
  }
  char pub[B2SC_CURVE_KEY_LEN + 1], sec[B2SC_CURVE_KEY_LEN + 1];
  if (public_only) {
    int rc = b2sc_curve_key_read(file, sec);
    if (rc < 0) {
      cli_err("%s: %s", file,
              rc == B2S_E_ARG ? "no Z85 secret key in it" : b2sc_strerror(rc));
      return CLI_EXIT_FAIL;
    }
    if (zmq_curve_public(pub, sec) < 0) {
      cli_err("%s: not a secret key", file);
      return CLI_EXIT_FAIL;
    }
  } else if (zmq_curve_keypair(pub, sec) < 0) {
    cli_err("keygen: %s", zmq_strerror(zmq_errno()));
    return CLI_EXIT_FAIL;
  } else if (write_secret(file, sec) < 0) {
    return CLI_EXIT_FAIL;
  }
  printf("%s\n", pub);
  return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

const cli_cmd cli_cmd_keygen = {"keygen", "make a CurveZMQ key pair",
                                help, keygen_run};

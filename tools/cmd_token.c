/* b2stream token FILE [NAME]: append a new bearer token to a token file
 * (docs/ACQUISITIONS.md 9.2: 256 random bits, base64url) and print it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_acq.h"

#define TOKEN_BYTES 32
#define NAME_MAX_ 64

static const char token_help[] =
    "usage: b2stream token FILE [NAME]\n\n"
    "Append a new bearer token (256 random bits, base64url: 43 characters)\n"
    "to the token file FILE (http.token_file, docs/ACQUISITIONS.md 9.2),\n"
    "with NAME (the name the daemon logs as who made each change), and\n"
    "print it.  FILE is created 0600; an existing FILE that group or others\n"
    "may write, or others may read, is refused, as the daemon refuses it.\n"
    "The daemon reads the new token at its next SIGHUP.\n";

static void b64url(const unsigned char *in, size_t n, char *out) {
  static const char t[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    acc = (acc << 8) | in[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out[o++] = t[(acc >> bits) & 63];
    }
  }
  if (bits > 0)
    out[o++] = t[(acc << (6 - bits)) & 63];
  out[o] = '\0';
}

static bool name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > NAME_MAX_ || s[0] == '#')
    return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
      return false;
  return true;
}

static int write_token(const char *path, const char *line, size_t len) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                0600);
  if (fd < 0) {
    cli_err("%s: %s", path, strerror(errno));
    return CLI_EXIT_FAIL;
  }
  struct stat st;
  int ex = CLI_EXIT_OK;
  if (fstat(fd, &st) != 0) {
    cli_err("%s: %s", path, strerror(errno));
    ex = CLI_EXIT_FAIL;
  } else if (!S_ISREG(st.st_mode)) {
    cli_err("%s: not a regular file", path);
    ex = CLI_EXIT_FAIL;
  } else if (st.st_mode & (S_IWGRP | S_IWOTH | S_IROTH)) {
    cli_err("%s: group or others may write it, or others read it (mode %04o);"
            " the daemon refuses such a token file: chmod 600 it",
            path, (unsigned)(st.st_mode & 07777));
    ex = CLI_EXIT_FAIL;
  } else if (flock(fd, LOCK_EX) != 0) {
    cli_err("%s: cannot lock: %s", path, strerror(errno));
    ex = CLI_EXIT_FAIL;
  } else {
    /* a file whose last line has no newline would join the new token to it */
    if (st.st_size > 0) {
      char last;
      int rfd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (rfd >= 0 && pread(rfd, &last, 1, st.st_size - 1) == 1 &&
          last != '\n' && cli_write_all(fd, "\n", 1) != 0)
        ex = CLI_EXIT_FAIL;
      if (rfd >= 0)
        close(rfd);
    }
    int rc = ex == CLI_EXIT_OK ? cli_write_all(fd, line, len) : -EIO;
    if (rc == 0 && fsync(fd) != 0)
      rc = -errno;
    if (rc != 0) {
      cli_err("%s: %s", path, strerror(-rc));
      ex = CLI_EXIT_FAIL;
    }
  }
  close(fd);
  return ex;
}

static int run_token(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *file = NULL, *name = NULL, *operand;
  int k;
  while ((k = cli_args_next(&a, &operand)) != 0) {
    if (k == 1)
      return cli_unknown_option(&a);
    if (file == NULL)
      file = operand;
    else if (name == NULL)
      name = operand;
    else
      return cli_usage(&a, "unexpected argument '%s'", operand);
  }
  if (file == NULL)
    return cli_usage(&a, "missing FILE");
  if (name != NULL && !name_ok(name))
    return cli_usage(&a, "NAME: 1 to 64 printable characters without spaces,"
                     " not starting with '#'");
  unsigned char raw[TOKEN_BYTES];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      cli_err("getrandom: %s", strerror(errno));
      return CLI_EXIT_FAIL;
    }
    got += (size_t)r;
  }
  char tok[64], line[64 + NAME_MAX_ + 4];
  b64url(raw, sizeof raw, tok);
  explicit_bzero(raw, sizeof raw);
  int n = snprintf(line, sizeof line, "%s%s%s\n", tok, name ? " " : "",
                   name ? name : "");
  int ex = write_token(file, line, (size_t)n);
  explicit_bzero(line, sizeof line);
  if (ex == CLI_EXIT_OK) {
    printf("%s\n", tok);
    if (!cli_flush_stdout())
      ex = CLI_EXIT_FAIL;
  }
  explicit_bzero(tok, sizeof tok);
  return ex;
}

const cli_cmd cli_cmd_token = {
    "token", "append a new bearer token of the control API to a token file",
    token_help, run_token};

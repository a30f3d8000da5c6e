/* b2stream cat and unpack: decompressed bytes of a frame or a chunk, to
 * stdout or to a file. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char cat_help[] =
    "usage: b2stream cat PATH [--chunk N] [--offset N | --ceph-conf FILE]\n"
    "\n"
    "Write the decompressed bytes of every chunk of PATH (a frame file, a\n"
    "sparse frame directory or a chunk file), in order, to stdout.\n"
    "Uninitialised chunks come out as zeros.\n"
    "\n"
    "  --chunk N    only chunk N (0-based)\n"
    "  --offset N   the contiguous frame starts at byte N of the file PATH\n"
    "               (a frame inside a larger file; units as pack's\n"
    "               --chunk-bytes)\n"
    CLI_DIST_HELP;

static const char unpack_help[] =
    "usage: b2stream unpack FRAME OUTPUT [--force]\n"
    "\n"
    "Write the decompressed bytes of every chunk of FRAME to the file\n"
    "OUTPUT ('-' for stdout).  OUTPUT must not exist unless --force is\n"
    "given; it is removed again when unpacking fails.\n"
    "\n"
    "  --force   replace an existing OUTPUT\n";

/* Decode chunks [first, last) to fd.  to_name names fd in messages. */
static int emit(cli_src *src, int64_t first, int64_t last, int fd,
                const char *to_name) {
  for (int64_t i = first; i < last; i++) {
    const uint8_t *p;
    int n = cli_src_decode(src, i, &p);
    if (n < 0)
      return CLI_EXIT_FAIL;
    int rc = cli_write_all(fd, p, (size_t)n);
    if (rc < 0) {
      cli_err("%s: %s", to_name, strerror(-rc));
      return CLI_EXIT_FAIL;
    }
  }
  return CLI_EXIT_OK;
}

static int cat_run(int argc, char **argv) {
  cli_src src;
  cli_src_line line;
  int opened = cli_src_open_args(argc, argv, CLI_LINE_CHUNK, &src, &line);
  if (opened != CLI_EXIT_OK)
    return opened;
  const char *path = src.path;
  int64_t chunk = line.chunk;
  int64_t n = cli_src_nchunks(&src);
  int status;
  if (chunk >= n) {
    cli_err("%s: no chunk %lld (%lld chunks)", path, (long long)chunk,
            (long long)n);
    status = CLI_EXIT_FAIL;
  } else {
    status = chunk >= 0 ? emit(&src, chunk, chunk + 1, STDOUT_FILENO, "stdout")
                        : emit(&src, 0, n, STDOUT_FILENO, "stdout");
  }
  cli_src_close(&src);
  return status;
}

static int unpack_to(cli_src *src, const char *out, bool force) {
  if (!strcmp(out, "-"))
    return emit(src, 0, cli_src_nchunks(src), STDOUT_FILENO, "stdout");
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
  int fd = open(out, flags, 0666);
  if (fd < 0) {
    cli_err("%s: %s", out, strerror(errno));
    return CLI_EXIT_FAIL;
  }
  int status = emit(src, 0, cli_src_nchunks(src), fd, out);
  if (close(fd) < 0 && status == CLI_EXIT_OK) {
    cli_err("%s: %s", out, strerror(errno));
    status = CLI_EXIT_FAIL;
  }
  if (status != CLI_EXIT_OK)
    unlink(out);   /* a partial output must not pass for the whole */
  return status;
}

static int unpack_run(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  const char *ops[2] = {NULL, NULL}, *operand;
  int nops = 0;
  bool force = false;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    if (t == 2 && nops < 2)
      ops[nops++] = operand;
    else if (t == 2)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    else if (strcmp(a.opt, "force"))
      return cli_unknown_option(&a);
    else if (!cli_args_no_value(&a))
      return CLI_EXIT_USAGE;
    else
      force = true;
  }
  if (nops < 2)
    return cli_usage(&a, "needs FRAME and OUTPUT");
  cli_src src;
  if (cli_src_open(ops[0], &src) < 0)
    return CLI_EXIT_FAIL;
  int status = unpack_to(&src, ops[1], force);
  cli_src_close(&src);
  return status;
}

const cli_cmd cli_cmd_cat = {"cat", "decompressed bytes to stdout", cat_help,
                             cat_run};
const cli_cmd cli_cmd_unpack = {"unpack", "frame to a raw file",
                                unpack_help, unpack_run};

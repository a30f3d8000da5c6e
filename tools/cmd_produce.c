/* b2stream produce: a file or stdin cut into buffers and sent to a
 * b2streamd stream, then flushed (made durable). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_client.h"

#define PRODUCE_DEFAULT_CHUNK (INT64_C(4) << 20)
#define PRODUCE_CREDIT_MS 30000   /* longest wait for credit per buffer */
#define PRODUCE_FLUSH_MS 60000

static const char help[] =
    "usage: b2stream produce [OPTIONS] FILE|-\n"
    "\n"
    "Cut FILE (or stdin with '-') into buffers of --chunk-bytes (the last\n"
    "one may be shorter), send each to a b2streamd stream, where it becomes\n"
    "one chunk, then flush: wait until every buffer is durable.  Prints\n"
    "buffers and bytes sent, and buffers dropped by the stream's\n"
    "backpressure policy or refused by the daemon.\n"
    "\n"
    "  --stream S         stream to write (default demo)\n"
    "  --template T       create the stream from daemon template T when it\n"
    "                     does not exist\n"
    "  --chunk-bytes N    bytes per buffer (default 4M; units as for pack);\n"
    "                     at most the stream's max_buffer\n"
    CLI_ENDPOINT_HELP
    "\n"
    "Exit status 1 when a buffer was refused or a wait for the daemon ran\n"
    "out (30 s for credit, 60 s for the flush).\n";

typedef struct produce_opts {
  const char *endpoint, *stream, *tmpl, *input;
  int64_t chunk_bytes;
} produce_opts;

static int parse(int argc, char **argv, produce_opts *o) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  *o = (produce_opts){.stream = "demo", .chunk_bytes = PRODUCE_DEFAULT_CHUNK};
  const char *operand, *v;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    if (t == 2 && o->input == NULL) {
      o->input = operand;
      continue;
    }
    if (t == 2)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    bool known = !strcmp(a.opt, "endpoint") || !strcmp(a.opt, "stream") ||
                 !strcmp(a.opt, "template") || !strcmp(a.opt, "chunk-bytes");
    if (!known)
      return cli_unknown_option(&a);
    if ((v = cli_args_value(&a)) == NULL)
      return CLI_EXIT_USAGE;
    if (!strcmp(a.opt, "endpoint"))
      o->endpoint = v;
    else if (!strcmp(a.opt, "stream"))
      o->stream = v;
    else if (!strcmp(a.opt, "template"))
      o->tmpl = v;
    else if (cli_parse_size(v, 1, INT32_MAX, &o->chunk_bytes) < 0)
      return cli_usage(&a, "--chunk-bytes needs a size of 1..2G, not '%s'", v);
  }
  if (o->input == NULL)
    return cli_usage(&a, "missing FILE (or '-' for stdin)");
  return CLI_EXIT_OK;
}

/* Read up to len bytes (less only at the end of the input). */
static ssize_t read_full(int fd, uint8_t *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0)
      break;
    got += (size_t)n;
  }
  return (ssize_t)got;
}

/* Send the whole input; 0 or the failing code (already printed). */
static int send_all(b2sc_session *s, b2sc_producer *p, int fd,
                    const produce_opts *o, uint8_t *buf) {
  for (;;) {
    ssize_t n = read_full(fd, buf, (size_t)o->chunk_bytes);
    if (n < 0) {
      cli_err("%s: %s", o->input, strerror((int)-n));
      return (int)n;
    }
    if (n == 0)
      return 0;
    int rc = b2sc_send(p, buf, (size_t)n, PRODUCE_CREDIT_MS);
    if (rc < 0) {
      cli_client_err(s, o->stream, rc);
      return rc;
    }
    if (n < o->chunk_bytes)
      return 0;
  }
}

static int produce(b2sc_session *s, const produce_opts *o, int fd) {
  b2sc_producer *p;
  int rc = b2sc_producer_open(s, o->stream, o->tmpl, &p);
  if (rc < 0) {
    cli_client_err(s, o->stream, rc);
    return CLI_EXIT_FAIL;
  }
  b2sc_producer_stats st;
  b2sc_producer_stats_get(p, &st);
  if (o->chunk_bytes > st.max_buffer) {
    cli_err("%s: --chunk-bytes %lld is above the stream's max_buffer %u",
            o->stream, (long long)o->chunk_bytes, st.max_buffer);
    b2sc_producer_close(p);
    return CLI_EXIT_FAIL;
  }
  uint8_t *buf = malloc((size_t)o->chunk_bytes);
  if (buf == NULL) {
    cli_err("out of memory");
    b2sc_producer_close(p);
    return CLI_EXIT_FAIL;
  }
  rc = send_all(s, p, fd, o, buf);
  free(buf);
  int flushed = rc < 0 ? rc : b2sc_flush(p, PRODUCE_FLUSH_MS);
  if (rc == 0 && flushed < 0 && flushed != B2S_E_DROPPED)
    cli_client_err(s, o->stream, flushed);
  b2sc_producer_stats_get(p, &st);
  printf("%s: %llu buffers, %llu bytes sent; %llu durable, %llu dropped, "
         "%llu refused\n", o->stream, (unsigned long long)st.sent,
         (unsigned long long)st.bytes, (unsigned long long)st.durable,
         (unsigned long long)st.dropped, (unsigned long long)st.rejected);
  int closed = b2sc_producer_close(p);
  bool ok = cli_flush_stdout() && (flushed == 0 || flushed == B2S_E_DROPPED) &&
            (closed == 0 || closed == B2S_E_DROPPED);
  return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

static int produce_run(int argc, char **argv) {
  produce_opts o;
  int status = parse(argc, argv, &o);
  if (status != CLI_EXIT_OK)
    return status;
  int fd = STDIN_FILENO;
  if (strcmp(o.input, "-") && (fd = open(o.input, O_RDONLY | O_CLOEXEC)) < 0) {
    cli_err("%s: %s", o.input, strerror(errno));
    return CLI_EXIT_FAIL;
  }
  b2sc_session *s;
  if (cli_client_connect(o.endpoint, B2SC_ROLE_PRODUCER, &s) < 0)
    status = CLI_EXIT_FAIL;
  else
    status = produce(s, &o, fd);
  b2sc_close(s);
  if (fd != STDIN_FILENO)
    close(fd);
  return status;
}

const cli_cmd cli_cmd_produce = {"produce", "send a file to a b2streamd stream",
                                 help, produce_run};

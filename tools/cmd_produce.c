/* b2stream produce: a file or stdin cut into buffers and sent to a
 * b2streamd stream, then flushed (made durable); with protocol version 2,
 * series metadata and a record (frame number, timestamp) per buffer. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_produce.h"

#define PRODUCE_DEFAULT_CHUNK (INT64_C(4) << 20)

static const char help[] =
    "usage: b2stream produce [OPTIONS] FILE|-\n"
    "\n"
    "Cut FILE (or stdin with '-') into buffers of --chunk-bytes (the last\n"
    "one may be shorter), send each to a b2streamd stream, where it becomes\n"
    "one chunk, then flush: wait until every buffer is durable.  Prints\n"
    "buffers and bytes sent, and buffers dropped by the stream's\n"
    "backpressure policy or refused by the daemon.\n"
    "\n"
    "On a b2nd stream give --chunk-bytes one chunk's size: each buffer is one\n"
    "chunk, its items in C order (a raw stack of images, as numpy's tofile\n"
    "writes it); the daemon stores them block after block.\n"
    "\n"
    "  --stream S         stream to write (default demo)\n"
    "  --template T       create the stream from daemon template T when it\n"
    "                     does not exist\n"
    "  --chunk-bytes N    bytes per buffer (default 4M; units as for pack);\n"
    "                     at most the stream's max_buffer\n"
    "  --meta KEY=VALUE   set the stream's series metadata KEY (repeatable);\n"
    "                     VALUE is stored as an integer or a float when it\n"
    "                     reads as one, else as a string\n"
    "  --frame-number N   give buffer i the frame number N + i\n"
    "  --timestamp        give each buffer the time it was read (ns since\n"
    "                     1970) as its timestamp\n"
    CLI_ENDPOINT_HELP
    "  --ranks E0,E1,...  a distributed stream: the endpoints of its ranks,\n"
    "                     in rank order (the daemons' cluster.ranks); each\n"
    "                     buffer goes to the rank owning its frame number\n"
    "                     (from --frame-number, default 0); not with\n"
    "                     --endpoint\n"
    "  --frames-per-block B  consecutive frame numbers per rank (the\n"
    "                     daemons' cluster.frames_per_block, default 1)\n"
    "\n"
    "--meta, --frame-number, --timestamp and --ranks need a daemon speaking\n"
    "protocol version 2.\n"
    "\n"
    "Exit status 1 when a buffer was refused or a wait for the daemon ran\n"
    "out (30 s for credit, 60 s for the flush).\n";

/* Whether the option needs protocol version 2. */
static bool wants_v2(const produce_opts *o) {
  return o->nmeta > 0 || o->frame >= 0 || o->timestamp;
}

/* A --meta KEY=VALUE: KEY not empty and not given before. */
static int meta_option(cli_args *a, produce_opts *o, const char *v) {
  const char *eq = strchr(v, '=');
  if (eq == NULL || eq == v)
    return cli_usage(a, "--meta needs KEY=VALUE, not '%s'", v);
  if (o->nmeta == PRODUCE_META_MAX)
    return cli_usage(a, "at most %d --meta options", PRODUCE_META_MAX);
  size_t klen = (size_t)(eq - v);
  for (int k = 0; k < o->nmeta; k++)
    if (!strncmp(o->meta[k], v, klen) && o->meta[k][klen] == '=')
      return cli_usage(a, "--meta %.*s given twice", (int)klen, v);
  o->meta[o->nmeta++] = v;
  return CLI_EXIT_OK;
}

/* --ranks E0,E1,...: 1..1024 endpoints, none empty, given once. */
static int ranks_option(cli_args *a, produce_opts *o, const char *v) {
  if (o->ranks_buf)
    return cli_usage(a, "--ranks given twice");
  int n = 1;
  for (const char *p = v; *p; p++)
    n += *p == ',';
  if (n > B2SC_CLUSTER_MAX_RANKS)
    return cli_usage(a, "--ranks lists %d endpoints, at most %d", n,
                     B2SC_CLUSTER_MAX_RANKS);
  o->ranks_buf = strdup(v);
  o->ranks = calloc((size_t)n, sizeof *o->ranks);
  if (!o->ranks_buf || !o->ranks) {
    cli_err("out of memory");
    return CLI_EXIT_FAIL;
  }
  char *save = NULL, *p = o->ranks_buf;
  for (int i = 0; i < n; i++, p = save) {
    save = strchr(p, ',');
    if (save)
      *save++ = '\0';
    if (!*p)
      return cli_usage(a, "--ranks: endpoint %d is empty in '%s'", i, v);
    o->ranks[i] = p;
  }
  o->nranks = n;
  return CLI_EXIT_OK;
}

/* One option of produce with its value. */
static int option(cli_args *a, produce_opts *o) {
  if (!strcmp(a->opt, "timestamp")) {
    if (!cli_args_no_value(a))
      return CLI_EXIT_USAGE;
    o->timestamp = true;
    return CLI_EXIT_OK;
  }
  bool known = !strcmp(a->opt, "endpoint") || !strcmp(a->opt, "stream") ||
               !strcmp(a->opt, "template") ||
               !strcmp(a->opt, "chunk-bytes") || !strcmp(a->opt, "meta") ||
               !strcmp(a->opt, "frame-number") || !strcmp(a->opt, "ranks") ||
               !strcmp(a->opt, "frames-per-block");
  if (!known)
    return cli_unknown_option(a);
  const char *v = cli_args_value(a);
  if (v == NULL)
    return CLI_EXIT_USAGE;
  if (!strcmp(a->opt, "ranks"))
    return ranks_option(a, o, v);
  if (!strcmp(a->opt, "frames-per-block")) {
    if (cli_parse_int(v, 1, INT32_MAX, &o->frames_per_block) < 0)
      return cli_usage(a, "--frames-per-block needs a number >= 1, not '%s'",
                       v);
    return CLI_EXIT_OK;
  }
  if (!strcmp(a->opt, "endpoint"))
    o->endpoint = v;
  else if (!strcmp(a->opt, "stream"))
    o->stream = v;
  else if (!strcmp(a->opt, "template"))
    o->tmpl = v;
  else if (!strcmp(a->opt, "meta"))
    return meta_option(a, o, v);
  else if (!strcmp(a->opt, "frame-number")) {
    if (cli_parse_int(v, 0, INT64_MAX, &o->frame) < 0)
      return cli_usage(a, "--frame-number needs a number >= 0, not '%s'", v);
  } else if (cli_parse_size(v, 1, INT32_MAX, &o->chunk_bytes) < 0)
    return cli_usage(a, "--chunk-bytes needs a size of 1..2G, not '%s'", v);
  return CLI_EXIT_OK;
}

static int parse(int argc, char **argv, produce_opts *o) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  *o = (produce_opts){.stream = "demo", .chunk_bytes = PRODUCE_DEFAULT_CHUNK,
                      .frame = -1, .frames_per_block = 0};
  const char *operand;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    int status;
    if (t == 2 && o->input == NULL)
      o->input = operand;
    else if (t == 2)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    else if ((status = option(&a, o)) != CLI_EXIT_OK)
      return status;
  }
  if (o->input == NULL)
    return cli_usage(&a, "missing FILE (or '-' for stdin)");
  if (o->nranks && o->endpoint)
    return cli_usage(&a, "--ranks and --endpoint exclude each other");
  if (o->frames_per_block && !o->nranks)
    return cli_usage(&a, "--frames-per-block needs --ranks");
  if (!o->frames_per_block)
    o->frames_per_block = 1;
  if (o->nranks && o->frame < 0)
    o->frame = 0;      /* a distributed stream routes by frame number */
  return CLI_EXIT_OK;
}

/* Send the whole input; 0 or the failing code (already printed). */
static int send_all(b2sc_session *s, b2sc_producer *p, int fd,
                    const produce_opts *o, uint8_t *buf) {
  for (uint64_t i = 0;; i++) {
    ssize_t n = produce_read_full(fd, buf, (size_t)o->chunk_bytes);
    if (n < 0) {
      cli_err("%s: %s", o->input, strerror((int)-n));
      return (int)n;
    }
    if (n == 0)
      return 0;
    b2sc_record rec;
    int rc = b2sc_send_rec(p, buf, (size_t)n, produce_record(o, i, &rec),
                           PRODUCE_CREDIT_MS);
    if (rc < 0) {
      cli_client_err(s, o->stream, rc);
      return rc;
    }
    if (n < o->chunk_bytes)
      return 0;
  }
}

/* Open the stream with the --meta map (if any). */
static int open_stream(b2sc_session *s, const produce_opts *o,
                       b2sc_producer **p) {
  if (wants_v2(o) && b2sc_protocol_version(s) < 2) {
    cli_err("%s: --meta, --frame-number and --timestamp need protocol "
            "version 2; the daemon speaks version %d", o->stream,
            b2sc_protocol_version(s));
    return B2S_E_PROTO_VERSION;
  }
  b2s_mpbuf map = {0};
  int rc = o->nmeta ? produce_meta_map(o, &map) : 0;
  if (rc == 0)
    rc = b2sc_producer_open_meta(s, o->stream, o->tmpl, map.data, map.len, p);
  b2s_mpbuf_fini(&map);
  if (rc < 0)
    cli_client_err(s, o->stream, rc);
  return rc;
}

static int produce(b2sc_session *s, const produce_opts *o, int fd) {
  b2sc_producer *p;
  int rc = open_stream(s, o, &p);
  if (rc < 0)
    return CLI_EXIT_FAIL;
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

/* Connect to the one daemon, or to the ranks, and send the input. */
static int produce_to(const produce_opts *o, int fd) {
  if (o->nranks)
    return produce_cluster(o, fd);
  b2sc_session *s;
  int status = CLI_EXIT_FAIL;
  if (cli_client_connect(o->endpoint, B2SC_ROLE_PRODUCER, &s) == 0)
    status = produce(s, o, fd);
  b2sc_close(s);
  return status;
}

static int produce_run(int argc, char **argv) {
  produce_opts o;
  int status = parse(argc, argv, &o);
  int fd = STDIN_FILENO;
  if (status == CLI_EXIT_OK && strcmp(o.input, "-") &&
      (fd = open(o.input, O_RDONLY | O_CLOEXEC)) < 0) {
    cli_err("%s: %s", o.input, strerror(errno));
    status = CLI_EXIT_FAIL;
  }
  if (status == CLI_EXIT_OK)
    status = produce_to(&o, fd);
  if (fd >= 0 && fd != STDIN_FILENO)
    close(fd);
  free(o.ranks);
  free(o.ranks_buf);
  return status;
}

const cli_cmd cli_cmd_produce = {"produce", "send a file to a b2streamd stream",
                                 help, produce_run};

/* b2stream tail: follow a b2streamd stream and print each chunk as it is
 * committed (with its record, protocol version 2), or its decompressed
 * bytes.  A distributed frame's PATH goes to cmd_tail_dist.c. */
#include <string.h>
#include <unistd.h>

#include "cli_tail.h"

static const char help[] =
    "usage: b2stream tail [OPTIONS] STREAM\n"
    "       b2stream tail [OPTIONS] rados://POOL/NAME | dir:///ABS/DIR/NAME\n"
    "\n"
    "Follow STREAM and print one line per committed chunk, as it is\n"
    "committed: its index, nbytes and cbytes.  Runs until --count chunks\n"
    "were printed, --idle passes without a new chunk, or it is\n"
    "interrupted.\n"
    "\n"
    "  --from N           start at chunk N (default: after the last chunk\n"
    "                     committed now)\n"
    "  --count K          stop after K chunks\n"
    "  --data             write the decompressed bytes of each chunk to\n"
    "                     stdout instead of the lines\n"
    "  --idle MS          stop after MS milliseconds without a new chunk\n"
    "  --records          add each chunk's record to its line: frame=N\n"
    "                     ts=NS xxh64=HEX flags=F (- for a field the record\n"
    "                     does not hold; flags as gap,dropped,rejected,\n"
    "                     norecord or\n"
    "                     0); needs a daemon speaking protocol version 2\n"
    CLI_ENDPOINT_HELP
    "\n"
    "A distributed frame (rados://POOL/NAME, or dir:///ABS/DIR/NAME for a\n"
    "local store) is followed up to its committed count, the same lines or\n"
    "bytes for each chunk, until the frame is closed (then tail exits 0\n"
    "once every committed chunk is out), --count, --idle or SIGINT:\n"
    "  --committer-pub E  the committer's PUB endpoint: every COMMITTED\n"
    "                     message moves the count and the new chunks are\n"
    "                     read at once; after 2 s without a message the\n"
    "                     count is re-read from the store, which covers a\n"
    "                     message sent before the subscription took hold\n"
    "                     (without it: the count is re-read from the store\n"
    "                     every 200 ms, i.e. polled)\n"
    "  --ceph-conf FILE   the Ceph configuration of a rados:// frame\n"
    "                     (default $CEPH_CONF, else librados's own search)\n";

typedef cli_tail_opts tail_opts;

static int option(cli_args *a, tail_opts *o) {
  if (!strcmp(a->opt, "data") || !strcmp(a->opt, "records")) {
    if (!cli_args_no_value(a))
      return CLI_EXIT_USAGE;
    *(!strcmp(a->opt, "data") ? &o->data : &o->records) = true;
    return CLI_EXIT_OK;
  }
  const char *v;
  if (strcmp(a->opt, "endpoint") && strcmp(a->opt, "from") &&
      strcmp(a->opt, "count") && strcmp(a->opt, "idle") &&
      strcmp(a->opt, "committer-pub") && strcmp(a->opt, "ceph-conf"))
    return cli_unknown_option(a);
  if ((v = cli_args_value(a)) == NULL)
    return CLI_EXIT_USAGE;
  if (!strcmp(a->opt, "endpoint"))
    o->endpoint = v;
  else if (!strcmp(a->opt, "committer-pub"))
    o->committer_pub = v;
  else if (!strcmp(a->opt, "ceph-conf"))
    o->ceph_conf = v;
  else if (!strcmp(a->opt, "from") && cli_parse_int(v, 0, INT64_MAX, &o->from) < 0)
    return cli_usage(a, "--from needs a chunk number, not '%s'", v);
  else if (!strcmp(a->opt, "count") && cli_parse_int(v, 1, INT64_MAX, &o->count) < 0)
    return cli_usage(a, "--count needs a positive number, not '%s'", v);
  else if (!strcmp(a->opt, "idle") && cli_parse_int(v, 0, INT32_MAX, &o->idle) < 0)
    return cli_usage(a, "--idle needs milliseconds, not '%s'", v);
  return CLI_EXIT_OK;
}

static int parse(int argc, char **argv, tail_opts *o) {
  cli_args a;
  cli_args_init(&a, argc, argv);
  *o = (tail_opts){.from = -1, .count = -1, .idle = -1};
  const char *operand;
  for (int t; (t = cli_args_next(&a, &operand)) != 0;) {
    int status;
    if (t == 2 && o->stream == NULL)
      o->stream = operand;
    else if (t == 2)
      return cli_usage(&a, "unexpected argument '%s'", operand);
    else if ((status = option(&a, o)) != CLI_EXIT_OK)
      return status;
  }
  if (o->stream == NULL)
    return cli_usage(&a, "missing STREAM");
  if (o->data && o->records)
    return cli_usage(&a, "--records prints lines; --data writes bytes");
  cli_dist_url u;
  int dist = cli_dist_parse(o->stream, &u);
  if (dist < 0)
    return CLI_EXIT_USAGE;
  if (dist == 1 && o->endpoint != NULL)
    return cli_usage(&a, "--endpoint names a daemon; a distributed frame "
                         "takes --committer-pub");
  if (dist == 0 && (o->committer_pub != NULL || o->ceph_conf != NULL))
    return cli_usage(&a, "--committer-pub and --ceph-conf go with a "
                         "distributed frame, not a stream");
  o->dist = dist == 1;
  return CLI_EXIT_OK;
}

/* One chunk out; false after printing the error. */
static bool emit(const tail_opts *o, const b2sc_chunk_info *ci,
                 const b2sc_record *rec) {
  if (o->data) {
    int rc = cli_write_all(STDOUT_FILENO, ci->data, ci->len);
    if (rc < 0)
      cli_err("stdout: %s", strerror(-rc));
    return rc == 0;
  }
  printf("%llu %u %u", (unsigned long long)ci->index, ci->nbytes,
         ci->cbytes);
  if (o->records)
    cli_print_record(rec);
  putchar('\n');
  return cli_flush_stdout();   /* a line as soon as the chunk is there */
}

static int follow(b2sc_session *s, const tail_opts *o) {
  /* The pushed CHUNK carries both sizes; --data wants the bytes anyway. */
  unsigned flags = o->data ? B2SC_FOLLOW_PUSH_DECOMPRESSED
                           : B2SC_FOLLOW_PUSH_COMPRESSED;
  if (o->from < 0)
    flags |= B2SC_FOLLOW_FROM_END;
  if (o->records && b2sc_protocol_version(s) < 2) {
    cli_err("%s: --records needs protocol version 2; the daemon speaks "
            "version %d", o->stream, b2sc_protocol_version(s));
    return CLI_EXIT_FAIL;
  }
  if (o->records)
    flags |= B2SC_FOLLOW_RECORDS;
  b2sc_consumer *c;
  int rc = b2sc_follow(s, o->stream, o->from < 0 ? 0 : (uint64_t)o->from,
                       flags, &c);
  if (rc < 0) {
    cli_client_err(s, o->stream, rc);
    return CLI_EXIT_FAIL;
  }
  int status = CLI_EXIT_OK;
  b2sc_chunk_info ci;
  b2sc_record rec = {0};
  for (int64_t n = 0; o->count < 0 || n < o->count; n++) {
    int ms = o->idle < 0 ? -1 : (int)o->idle;
    rc = o->records ? b2sc_next_rec(c, ms, &ci, &rec) : b2sc_next(c, ms, &ci);
    if (rc == B2S_E_TIMEOUT)
      break;   /* --idle ran out: a normal end */
    if (rc < 0) {
      cli_client_err(s, o->stream, rc);
      status = CLI_EXIT_FAIL;
      break;
    }
    if (!emit(o, &ci, &rec)) {
      status = CLI_EXIT_FAIL;
      break;
    }
  }
  b2sc_unfollow(c);
  return status;
}

static int tail_run(int argc, char **argv) {
  tail_opts o;
  int status = parse(argc, argv, &o);
  if (status != CLI_EXIT_OK)
    return status;
  if (o.dist)
    return cli_tail_dist(&o);
  b2sc_session *s;
  if (cli_client_connect(o.endpoint, B2SC_ROLE_CONSUMER, &s) < 0)
    return CLI_EXIT_FAIL;
  status = follow(s, &o);
  b2sc_close(s);
  return status;
}

const cli_cmd cli_cmd_tail = {"tail",
                              "follow a b2streamd stream or a distributed "
                              "frame", help, tail_run};

/* What `b2stream acq` and `b2stream token` share: the HTTP client of the
 * acquisition control API (docs/ACQUISITIONS.md section 9, over libcurl),
 * the reading of its answers (error bodies of 9.3, acquisition objects)
 * into lines for a person, and the server-sent-event reader of section
 * 10.
 *
 * The readers (cli_acq_err_text, cli_acq_summary, cli_acq_list_text,
 * cli_sse_feed) take the daemon's bytes as they came: they go through
 * acq/'s strict JSON reader first, never crash on any input, and are
 * fuzzed (tests/fuzz/fuzz_acqcli.c).  Text from the daemon is printed
 * with control characters replaced, so a message cannot drive a terminal.
 *
 * Ownership: a cli_http_answer's body is the caller's (cli_http_answer_free);
 * a cli_sse owns its buffers (cli_sse_fini). */
#ifndef B2S_CLI_ACQ_H
#define B2S_CLI_ACQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses of `b2stream acq` (tools/README.md), beyond cli.h's 0, 1
 * (the daemon refused, or the acquisition did not end done) and 2. */
enum {
  CLI_EXIT_UNREACHABLE = 3,   /* no daemon, no API, or an answer that is not one */
  CLI_EXIT_TIMEOUT = 4,       /* a wait ran out (504 wait_timeout) */
};

#define CLI_ACQ_URL_ENV "B2STREAM_URL"
#define CLI_ACQ_TOKEN_ENV "B2STREAM_TOKEN_FILE"
#define CLI_ACQ_URL_DEFAULT "http://127.0.0.1:9464"
#define CLI_ACQ_TOKEN_MIN 32        /* RFC 6750 b64token, as 9.2 bounds it */
#define CLI_ACQ_TOKEN_MAX 512
#define CLI_ACQ_ANSWER_MAX (16u << 20)   /* bytes of one answer body */

/* ---- the token file ------------------------------------------------------ */

/* Whether s[0..n) is a token of 9.2: 32..512 of A-Z a-z 0-9 - . _ ~ + / = */
bool cli_acq_token_valid(const char *s, size_t n);

/* The token of a token file: the first word of its first line that is
 * not blank or a comment (the daemon's file format, so one file serves
 * both).  0 with tok filled, or prints the error and returns negative. */
int cli_acq_token_read(const char *path, char tok[CLI_ACQ_TOKEN_MAX + 1]);

/* ---- HTTP ------------------------------------------------------------------ */

typedef struct cli_http {
  const char *base;               /* http://HOST:PORT, no trailing '/' */
  const char *token;              /* NULL: no Authorization header */
  const char *last_event_id;      /* events: sent as Last-Event-ID */
} cli_http;

typedef struct cli_http_answer {
  long status;                    /* 0: no answer (transport failure) */
  char *body;                     /* NUL-terminated; len bytes */
  size_t len;
  bool json;                      /* Content-Type application/json */
  char transport[256];            /* status 0: why (libcurl's words) */
} cli_http_answer;

/* One request: method "GET" or "POST", path under base (starting with
 * '/'), body (NULL: none) sent as application/json, whole-request
 * timeout in ms (0: none).  0 with a->status set, or negative with
 * a->transport set.  Answers over CLI_ACQ_ANSWER_MAX are a transport
 * failure. */
int cli_http_call(const cli_http *h, const char *method, const char *path,
                  const char *body, long timeout_ms, cli_http_answer *a);
void cli_http_answer_free(cli_http_answer *a);

/* GET path as a stream: every byte of a 200 answer goes to sink as it
 * comes (returning false stops the stream: 1 is returned).  A status
 * other than 200 leaves its body in a (up to 64 KiB).  Returns 0 when the
 * daemon ended the stream, 1 when sink stopped it, negative with
 * a->transport on a transport failure (a->status is still set when one
 * was read). */
typedef bool (*cli_http_sink)(void *arg, const char *p, size_t n);
int cli_http_stream(const cli_http *h, const char *path, cli_http_sink sink,
                    void *arg, cli_http_answer *a);

/* ---- answers ----------------------------------------------------------------- */

/* The subcommands (cmd_acq.c, cmd_token.c). */
struct cli_cmd;
extern const struct cli_cmd cli_cmd_acq, cli_cmd_token;

/* s with control characters and DEL as '?', at most n bytes, to out. */
void cli_acq_put_text(FILE *out, const char *s, size_t n);

/* An error answer as one line for a person, into out:
 *   "files_exist (409): MESSAGE (field file_template)"
 * and, for a wait's error with the acquisition in it, its state and
 * committed count.  Returns the code's text length > 0 when body is the
 * error body of 9.3 (code copied to code[0..64)), 0 when it is not
 * (out then says what came: status and the first bytes, as text). */
int cli_acq_err_text(long status, const char *body, size_t len, char *out,
                     size_t cap, char code[65]);

/* An acquisition object (GET /acquisitions/ID, arm, stop, abort, wait)
 * as lines "key: value" for a person.  0, or -1 when body is not one
 * (nothing printed). */
int cli_acq_summary(FILE *out, const char *body, size_t len);

/* The list answer ({"acquisitions": [...], "next": ...}): one line per
 * acquisition "ID STATE COMMITTED/FRAMES FILES LOSS" (out NULL: none),
 * and the next page's id into next (empty when none).  The count, or -1
 * when body is not one. */
int cli_acq_list_text(FILE *out, const char *body, size_t len,
                      char next[65]);

/* The files answer ({"files": [...], "next": {"channel", "after"}}):
 * one line per file "CHANNEL NUMBER STATE FRAMES COMMITTED PATH" (out
 * NULL: none), and the query of the next page ("?channel=C&after=N")
 * into next (empty when none).  The count, or -1 when body is not one. */
int cli_acq_files_text(FILE *out, const char *body, size_t len, char *next,
                       size_t next_cap);

/* Whether an end event's data is about acquisition id; its state into
 * state[0..16). */
bool cli_acq_end_of(const char *data, size_t len, const char *id,
                    char state[16]);

/* The state of an acquisition object, into state[0..16); false when body
 * is not one. */
bool cli_acq_state(const char *body, size_t len, char state[16]);

/* ---- server-sent events ---------------------------------------------------- */

#define CLI_SSE_LINE_MAX (64u << 10)   /* bytes of one line */
#define CLI_SSE_DATA_MAX (1u << 20)    /* bytes of one event's data */

typedef struct cli_sse_event {
  const char *id;                 /* the last event id seen ("" none) */
  const char *event;              /* "message" when none was given */
  const char *data;               /* the data lines joined by '\n' */
  size_t data_len;
} cli_sse_event;

/* Returns false to stop reading. */
typedef bool (*cli_sse_cb)(void *arg, const cli_sse_event *ev);

/* The event-stream reader of WHATWG HTML ("server-sent events", the
 * parsing of an event stream): lines ending CR, LF or CR LF, a leading
 * BOM skipped, comments, fields "event", "data", "id" (not with NUL) and
 * "retry", an event dispatched at a blank line when it has data.  Lines
 * and data over the bounds above are an error (the stream is not the
 * daemon's). */
typedef struct cli_sse {
  char *line; size_t line_len;
  char *data; size_t data_len;
  char event[65];
  char id[129];                   /* last event id (kept across events) */
  unsigned char bom;              /* BOM bytes matched at the start; 3: past it */
  bool cr, failed, event_set, data_set;
  char error[96];
  long retry_ms;                  /* -1: none given */
} cli_sse;

int cli_sse_init(cli_sse *s);
void cli_sse_fini(cli_sse *s);
/* Feed bytes; calls cb for each complete event.  1 when cb asked to stop,
 * 0 to go on, -1 when the stream broke a bound (s->error says which). */
int cli_sse_feed(cli_sse *s, const char *p, size_t n, cli_sse_cb cb,
                 void *arg);

#endif

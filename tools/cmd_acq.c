/* b2stream acq arm|list|status|files|stop|abort|wait|events: the control
 * API of docs/ACQUISITIONS.md over HTTP (tools/README.md has the command
 * lines and exit statuses). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b2s_acq_json.h"
#include "b2s_acq_names.h"
#include "cli.h"
#include "cli_acq.h"

#define PATH_MAX_ 512
#define WAIT_SLICE_S 60.0        /* the route's longest timeout (9.4) */
#define RECONNECT_GIVE_UP_MS 30000

typedef struct acq_ctx {
  const char *sub;               /* "arm", ... */
  const char *url, *token_file;
  bool json;
  char base[1024];
  char token[CLI_ACQ_TOKEN_MAX + 1];
  cli_http h;
} acq_ctx;

#define COMMON_HELP                                                            \
  "  --url URL          the daemon's HTTP listener (default $" CLI_ACQ_URL_ENV  \
  ",\n"                                                                        \
  "                     else " CLI_ACQ_URL_DEFAULT ")\n"                       \
  "  --token-file F     bearer token: the first token line of F, the format\n" \
  "                     of http.token_file (default $" CLI_ACQ_TOKEN_ENV ")\n" \
  "  --json             print the daemon's JSON answer as it came\n"

/* 1: a common option (consumed), 0: not one, <0: exit status negated. */
static int common_opt(cli_args *a, acq_ctx *c) {
  if (!strcmp(a->opt, "url") || !strcmp(a->opt, "token-file")) {
    const char *v = cli_args_value(a);
    if (v == NULL)
      return -CLI_EXIT_USAGE;
    if (a->opt[0] == 'u')
      c->url = v;
    else
      c->token_file = v;
    return 1;
  }
  if (!strcmp(a->opt, "json")) {
    if (!cli_args_no_value(a))
      return -CLI_EXIT_USAGE;
    c->json = true;
    return 1;
  }
  return 0;
}

static int setup(acq_ctx *c, const cli_args *a) {
  const char *url = c->url ? c->url : getenv(CLI_ACQ_URL_ENV);
  if (url == NULL || url[0] == '\0')
    url = CLI_ACQ_URL_DEFAULT;
  size_t n = strlen(url);
  while (n > 0 && url[n - 1] == '/')
    n--;
  if ((strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) ||
      n >= sizeof c->base || strpbrk(url, " \r\n?#") != NULL)
    return cli_usage(a, "--url: '%s' is not http://HOST:PORT", url);
  memcpy(c->base, url, n);
  c->base[n] = '\0';
  c->h.base = c->base;
  const char *tf = c->token_file ? c->token_file : getenv(CLI_ACQ_TOKEN_ENV);
  if (tf != NULL && tf[0] != '\0') {
    if (cli_acq_token_read(tf, c->token) < 0)
      return CLI_EXIT_FAIL;
    c->h.token = c->token;
  }
  return CLI_EXIT_OK;
}

/* The exit status of an answer that is not the expected success, printed
 * as one line. */
static int report(const acq_ctx *c, const char *what, int rc,
                  const cli_http_answer *an) {
  if (rc < 0 || an->status == 0) {
    cli_err("acq %s%s%s: cannot reach %s: %s", c->sub, what[0] ? " " : "",
            what, c->base, an->transport);
    return CLI_EXIT_UNREACHABLE;
  }
  char line[1024], code[65];
  int api = cli_acq_err_text(an->status, an->body, an->len, line, sizeof line,
                             code);
  cli_err("acq %s%s%s: %s", c->sub, what[0] ? " " : "", what, line);
  if (api == 0)
    return CLI_EXIT_UNREACHABLE;
  return !strcmp(code, "wait_timeout") ? CLI_EXIT_TIMEOUT : CLI_EXIT_FAIL;
}

static bool ok_status(long s) { return s >= 200 && s < 300; }

/* The success output: the body as it came with --json, else the
 * summary. */
static int print_object(const acq_ctx *c, const char *what,
                        const cli_http_answer *an) {
  if (c->json) {
    fwrite(an->body, 1, an->len, stdout);
    if (an->len == 0 || an->body[an->len - 1] != '\n')
      fputc('\n', stdout);
  } else if (cli_acq_summary(stdout, an->body, an->len) < 0) {
    cli_err("acq %s %s: the answer (HTTP %ld) is not an acquisition", c->sub,
            what, an->status);
    return CLI_EXIT_UNREACHABLE;
  }
  return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

static int check_id(const cli_args *a, const char *id) {
  if (id == NULL)
    return cli_usage(a, "missing ID");
  if (!b2s_acq_id_valid(id, strlen(id)))
    return cli_usage(a, "'%s' is not an acquisition id (1 to 64 of A-Z a-z "
                     "0-9 . _ -, not starting with '.')", id);
  return CLI_EXIT_OK;
}

/* One request whose success is an acquisition object. */
static int object_call(acq_ctx *c, const char *id, const char *method,
                       const char *path, const char *body, long timeout_ms) {
  cli_http_answer an;
  int rc = cli_http_call(&c->h, method, path, body, timeout_ms, &an);
  int ex = (rc < 0 || !ok_status(an.status)) ? report(c, id, rc, &an)
                                              : print_object(c, id, &an);
  cli_http_answer_free(&an);
  return ex;
}

/* ---- arm -------------------------------------------------------------------- */

static const char arm_help[] =
    "usage: b2stream acq arm ID (--stream NAME [--template T] | --source E)\n"
    "           --directory DIR [OPTIONS]\n"
    "       b2stream acq arm --body FILE|-\n\n"
    "Arm an acquisition (POST /api/v1/acquisitions, docs/ACQUISITIONS.md\n"
    "3.1).  Members not given take the daemon's defaults.\n\n"
    "  --stream NAME      input: a stream (acquisitions: only)\n"
    "  --template T       make the stream from template T if it does not exist\n"
    "  --source E         input: the configured detector source of endpoint E\n"
    "  --directory DIR    where the files go (absolute, inside the roots)\n"
    "  --create-directory create missing directories below the root\n"
    "  --file-template T  e.g. {id}_{channel}_{file:06}.b2frame\n"
    "  --frames N         frames expected per channel (0: until stopped)\n"
    "  --frames-per-file N  0: one file\n"
    "  --first-frame N    producer frame number of frame 0 (order: frame_number)\n"
    "  --series JSON      series metadata, a JSON object\n"
    "  --overwrite refuse|replace\n"
    "  --on-loss fail|count\n"
    "  --body FILE|-      send FILE (or stdin) as the whole arm body instead\n" COMMON_HELP;

typedef struct arm_opts {
  const char *id, *stream, *tmpl, *source, *dir, *file_template, *series,
      *overwrite, *on_loss, *body_file;
  bool create_dir;
  int64_t frames, frames_per_file, first_frame;   /* -1: not given */
} arm_opts;

static int arm_int(cli_args *a, int64_t max, int64_t *out) {
  const char *v = cli_args_value(a);
  if (v == NULL)
    return CLI_EXIT_USAGE;
  if (cli_parse_int(v, 0, max, out) < 0)
    return cli_usage(a, "--%s: '%s' is not an integer in 0..%lld", a->opt, v,
                     (long long)max);
  return CLI_EXIT_OK;
}

static int arm_opt(cli_args *a, arm_opts *o) {
  static const struct { const char *name; size_t off; } strs[] = {
      {"stream", offsetof(arm_opts, stream)},
      {"template", offsetof(arm_opts, tmpl)},
      {"source", offsetof(arm_opts, source)},
      {"directory", offsetof(arm_opts, dir)},
      {"file-template", offsetof(arm_opts, file_template)},
      {"series", offsetof(arm_opts, series)},
      {"overwrite", offsetof(arm_opts, overwrite)},
      {"on-loss", offsetof(arm_opts, on_loss)},
      {"body", offsetof(arm_opts, body_file)},
  };
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
    if (strcmp(a->opt, strs[i].name) != 0)
      continue;
    const char *v = cli_args_value(a);
    if (v == NULL)
      return CLI_EXIT_USAGE;
    *(const char **)((char *)o + strs[i].off) = v;
    return CLI_EXIT_OK;
  }
  if (!strcmp(a->opt, "create-directory")) {
    if (!cli_args_no_value(a))
      return CLI_EXIT_USAGE;
    o->create_dir = true;
    return CLI_EXIT_OK;
  }
  if (!strcmp(a->opt, "frames"))
    return arm_int(a, INT64_MAX, &o->frames);
  if (!strcmp(a->opt, "frames-per-file"))
    return arm_int(a, INT32_MAX, &o->frames_per_file);
  if (!strcmp(a->opt, "first-frame"))
    return arm_int(a, INT64_MAX, &o->first_frame);
  return cli_unknown_option(a);
}

static bool add_str(json_object *o, const char *key, const char *v) {
  if (v == NULL)
    return true;
  json_object *s = json_object_new_string(v);
  return s != NULL && json_object_object_add(o, key, s) == 0;
}

static bool add_int(json_object *o, const char *key, int64_t v) {
  if (v < 0)
    return true;
  json_object *s = json_object_new_int64(v);
  return s != NULL && json_object_object_add(o, key, s) == 0;
}

/* The arm body from the options; NULL after printing why. */
static char *arm_body(const cli_args *a, const arm_opts *o) {
  if ((o->stream != NULL) == (o->source != NULL)) {
    cli_usage(a, "give exactly one of --stream and --source");
    return NULL;
  }
  if (o->tmpl != NULL && o->stream == NULL) {
    cli_usage(a, "--template goes with --stream");
    return NULL;
  }
  if (o->dir == NULL) {
    cli_usage(a, "missing --directory");
    return NULL;
  }
  json_object *series = NULL;
  if (o->series != NULL) {
    b2s_acq_err e;
    b2s_acq_err_clear(&e);
    if (b2s_acq_json_parse(o->series, strlen(o->series), B2S_ACQ_JSON_DEPTH,
                           &series, &e) != 0) {
      cli_usage(a, "--series: not a JSON object: %s", e.message);
      return NULL;
    }
  }
  json_object *b = json_object_new_object(), *in = json_object_new_object();
  bool ok = b != NULL && in != NULL && add_str(b, "id", o->id) &&
            add_str(in, o->stream ? "stream" : "source",
                    o->stream ? o->stream : o->source) &&
            add_str(in, "template", o->tmpl) &&
            json_object_object_add(b, "input", in) == 0;
  if (!ok)
    json_object_put(in);
  in = NULL;
  ok = ok && add_str(b, "directory", o->dir) &&
       (!o->create_dir ||
        json_object_object_add(b, "create_directory",
                               json_object_new_boolean(1)) == 0) &&
       add_str(b, "file_template", o->file_template) &&
       add_int(b, "frames", o->frames) &&
       add_int(b, "frames_per_file", o->frames_per_file) &&
       add_int(b, "first_frame", o->first_frame);
  if (ok && series != NULL) {
    ok = json_object_object_add(b, "series", series) == 0;
    series = NULL;
  }
  ok = ok && add_str(b, "overwrite", o->overwrite) &&
       add_str(b, "on_loss", o->on_loss);
  char *text = ok ? b2s_acq_json_line(b) : NULL;
  json_object_put(b);
  json_object_put(series);
  if (text == NULL)
    cli_err("acq arm: out of memory");
  return text;
}

static char *read_body(const char *path) {
  FILE *f = !strcmp(path, "-") ? stdin : fopen(path, "rb");
  if (f == NULL) {
    cli_err("%s: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  while (buf != NULL) {
    if (len + 1 >= cap) {
      if (cap >= B2S_ACQ_JSON_MAX) {
        cli_err("%s: over %u bytes", path, B2S_ACQ_JSON_MAX);
        free(buf);
        buf = NULL;
        break;
      }
      char *nb = realloc(buf, cap * 2);
      if (nb == NULL) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t r = fread(buf + len, 1, cap - len - 1, f);
    len += r;
    if (r == 0) {
      if (ferror(f)) {
        cli_err("%s: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
      }
      break;
    }
  }
  if (buf != NULL)
    buf[len] = '\0';
  if (f != stdin)
    fclose(f);
  return buf;
}

static int run_arm(acq_ctx *c, cli_args *a) {
  arm_opts o = {.frames = -1, .frames_per_file = -1, .first_frame = -1};
  const char *operand;
  int k;
  while ((k = cli_args_next(a, &operand)) != 0) {
    if (k == 2) {
      if (o.id != NULL)
        return cli_usage(a, "unexpected argument '%s'", operand);
      o.id = operand;
      continue;
    }
    int r = common_opt(a, c);
    if (r < 0)
      return -r;
    if (r == 0 && (r = arm_opt(a, &o)) != CLI_EXIT_OK)
      return r;
  }
  char *body = NULL;
  if (o.body_file != NULL) {
    if (o.id || o.stream || o.source || o.dir || o.tmpl || o.file_template ||
        o.series || o.overwrite || o.on_loss || o.create_dir ||
        o.frames >= 0 || o.frames_per_file >= 0 || o.first_frame >= 0)
      return cli_usage(a, "--body goes alone (the body has every member)");
  } else {
    int r = check_id(a, o.id);
    if (r != CLI_EXIT_OK)
      return r;
  }
  int r = setup(c, a);
  if (r != CLI_EXIT_OK)
    return r;
  body = o.body_file ? read_body(o.body_file) : arm_body(a, &o);
  if (body == NULL)
    return o.body_file ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
  cli_http_answer an;
  int rc = cli_http_call(&c->h, "POST", "/api/v1/acquisitions", body, 30000,
                         &an);
  free(body);
  const char *what = o.id ? o.id : "";
  int ex;
  if (rc < 0 || !ok_status(an.status)) {
    ex = report(c, what, rc, &an);
  } else {
    if (!c->json)
      printf("%-18s%s\n", "created:", an.status == 201 ? "yes"
             : "no: a held acquisition with the same parameters (repeated arm)");
    ex = print_object(c, what, &an);
  }
  cli_http_answer_free(&an);
  return ex;
}

/* ---- list, status, files, stop, abort ------------------------------------- */

static const char list_help[] =
    "usage: b2stream acq list [--state LIST] [OPTIONS]\n\n"
    "The held acquisitions, one line each: ID STATE COMMITTED[/FRAMES]\n"
    "files=N [loss] (every page of GET /api/v1/acquisitions).\n\n"
    "  --state LIST       comma-separated states, or active\n" COMMON_HELP;

static bool word_list(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n == 0 || n > max)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == ','))
      return false;
  return true;
}

static int run_list(acq_ctx *c, cli_args *a) {
  const char *state = NULL, *operand;
  int k;
  while ((k = cli_args_next(a, &operand)) != 0) {
    if (k == 2)
      return cli_usage(a, "unexpected argument '%s'", operand);
    int r = common_opt(a, c);
    if (r < 0)
      return -r;
    if (r == 1)
      continue;
    if (strcmp(a->opt, "state") != 0)
      return cli_unknown_option(a);
    if ((state = cli_args_value(a)) == NULL)
      return CLI_EXIT_USAGE;
    if (!word_list(state, 200))
      return cli_usage(a, "--state: '%s' is not a list of states", state);
  }
  int r = setup(c, a);
  if (r != CLI_EXIT_OK)
    return r;
  char next[65] = "", path[PATH_MAX_];
  int ex = CLI_EXIT_OK;
  do {
    snprintf(path, sizeof path, "/api/v1/acquisitions%s%s%s%s%s",
             state || next[0] ? "?" : "", state ? "state=" : "",
             state ? state : "", state && next[0] ? "&" : "", "");
    if (next[0] && strlen(path) + strlen(next) + 8 < sizeof path) {
      strcat(path, "after=");
      strcat(path, next);
    }
    cli_http_answer an;
    int rc = cli_http_call(&c->h, "GET", path, NULL, 30000, &an);
    if (rc < 0 || an.status != 200) {
      ex = report(c, "", rc, &an);
    } else if (c->json) {
      fwrite(an.body, 1, an.len, stdout);
      if (an.len == 0 || an.body[an.len - 1] != '\n')
        fputc('\n', stdout);
      cli_acq_list_text(NULL, an.body, an.len, next);
    } else {
      char nx[65];
      if (cli_acq_list_text(stdout, an.body, an.len, nx) < 0) {
        cli_err("acq list: the answer is not a list of acquisitions");
        ex = CLI_EXIT_UNREACHABLE;
      }
      memcpy(next, nx, sizeof nx);
    }
    cli_http_answer_free(&an);
    if (next[0] && !b2s_acq_id_valid(next, strlen(next)))
      next[0] = '\0';
  } while (ex == CLI_EXIT_OK && next[0]);
  if (ex == CLI_EXIT_OK && !cli_flush_stdout())
    ex = CLI_EXIT_FAIL;
  return ex;
}

/* ID and the common options only. */
static int id_args(acq_ctx *c, cli_args *a, const char **id) {
  const char *operand;
  int k;
  *id = NULL;
  while ((k = cli_args_next(a, &operand)) != 0) {
    if (k == 2) {
      if (*id != NULL)
        return cli_usage(a, "unexpected argument '%s'", operand);
      *id = operand;
      continue;
    }
    int r = common_opt(a, c);
    if (r < 0)
      return -r;
    if (r == 0)
      return cli_unknown_option(a);
  }
  int r = check_id(a, *id);
  return r != CLI_EXIT_OK ? r : setup(c, a);
}

static const char status_help[] =
    "usage: b2stream acq status ID [OPTIONS]\n\n"
    "One acquisition (GET /api/v1/acquisitions/ID): state, counters,\n"
    "current files, who armed and stopped it, how it ended.\n\n" COMMON_HELP;
static const char stop_help[] =
    "usage: b2stream acq stop ID [OPTIONS]\n\n"
    "Stop: take no more frames, write every frame received, commit, close\n"
    "(POST .../stop).  Prints the acquisition, then closing; follow it with\n"
    "`b2stream acq wait ID --state ended`.\n\n" COMMON_HELP;
static const char abort_help[] =
    "usage: b2stream acq abort ID [OPTIONS]\n\n"
    "Abort: take no more frames, discard what is not written, keep what is\n"
    "committed (POST .../abort).\n\n" COMMON_HELP;
static const char files_help[] =
    "usage: b2stream acq files ID [OPTIONS]\n\n"
    "The acquisition's files, one line each: CHANNEL NUMBER STATE FRAMES\n"
    "COMMITTED PATH (every page of GET .../files).\n\n" COMMON_HELP;

static int run_status(acq_ctx *c, cli_args *a) {
  const char *id;
  int r = id_args(c, a, &id);
  if (r != CLI_EXIT_OK)
    return r;
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "/api/v1/acquisitions/%s", id);
  return object_call(c, id, "GET", path, NULL, 30000);
}

static int run_end(acq_ctx *c, cli_args *a, const char *verb) {
  const char *id;
  int r = id_args(c, a, &id);
  if (r != CLI_EXIT_OK)
    return r;
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "/api/v1/acquisitions/%s/%s", id, verb);
  return object_call(c, id, "POST", path, NULL, 30000);
}

static int run_stop(acq_ctx *c, cli_args *a) { return run_end(c, a, "stop"); }
static int run_abort(acq_ctx *c, cli_args *a) { return run_end(c, a, "abort"); }

static int run_files(acq_ctx *c, cli_args *a) {
  const char *id;
  int r = id_args(c, a, &id);
  if (r != CLI_EXIT_OK)
    return r;
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "/api/v1/acquisitions/%s/files", id);
  char after[160] = "";
  for (;;) {
    char p2[PATH_MAX_ + 200];
    snprintf(p2, sizeof p2, "%s%s", path, after);
    cli_http_answer an;
    int rc = cli_http_call(&c->h, "GET", p2, NULL, 30000, &an);
    if (rc < 0 || an.status != 200) {
      int ex = report(c, id, rc, &an);
      cli_http_answer_free(&an);
      return ex;
    }
    if (c->json) {
      fwrite(an.body, 1, an.len, stdout);
      if (an.len == 0 || an.body[an.len - 1] != '\n')
        fputc('\n', stdout);
    }
    int n = cli_acq_files_text(c->json ? NULL : stdout, an.body, an.len,
                               after, sizeof after);
    cli_http_answer_free(&an);
    if (n < 0) {
      cli_err("acq files %s: the answer is not a list of files", id);
      return CLI_EXIT_UNREACHABLE;
    }
    if (after[0] == '\0')
      break;
  }
  return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* ---- wait -------------------------------------------------------------------- */

static const char wait_help[] =
    "usage: b2stream acq wait ID (--committed N | --state S) [--timeout SEC]\n"
    "           [--allow-loss true|false] [OPTIONS]\n\n"
    "Wait until frames_committed >= N or the state S is reached (GET .../wait,\n"
    "a long poll).  S: writing, closing, done, aborted, failed, interrupted,\n"
    "ended.  --timeout: seconds in all (default 10; fractions allowed;\n"
    "longer than 60 s is asked again every 60 s).  Exit 0 when met, 1 when it\n"
    "cannot be met or frames were lost (wait_unreachable, frames_lost), 4\n"
    "when the time ran out.\n\n" COMMON_HELP;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int run_wait(acq_ctx *c, cli_args *a) {
  const char *id = NULL, *committed = NULL, *state = NULL, *allow = NULL,
             *operand;
  double timeout = 10;
  int k;
  while ((k = cli_args_next(a, &operand)) != 0) {
    if (k == 2) {
      if (id != NULL)
        return cli_usage(a, "unexpected argument '%s'", operand);
      id = operand;
      continue;
    }
    int r = common_opt(a, c);
    if (r < 0)
      return -r;
    if (r == 1)
      continue;
    const char *v;
    if (strcmp(a->opt, "committed") && strcmp(a->opt, "state") &&
        strcmp(a->opt, "timeout") && strcmp(a->opt, "allow-loss"))
      return cli_unknown_option(a);
    if ((v = cli_args_value(a)) == NULL)
      return CLI_EXIT_USAGE;
    if (!strcmp(a->opt, "committed")) {
      int64_t n;
      if (cli_parse_int(v, 0, INT64_MAX, &n) < 0)
        return cli_usage(a, "--committed: '%s' is not a count", v);
      committed = v;
    } else if (!strcmp(a->opt, "state")) {
      if (!word_list(v, 15) || strchr(v, ','))
        return cli_usage(a, "--state: '%s' is not a state", v);
      state = v;
    } else if (!strcmp(a->opt, "allow-loss")) {
      if (strcmp(v, "true") && strcmp(v, "false"))
        return cli_usage(a, "--allow-loss: true or false");
      allow = v;
    } else {
      char *end;
      errno = 0;
      timeout = strtod(v, &end);
      if (errno || end == v || *end || !isfinite(timeout) || timeout < 0 ||
          timeout > 1e7)
        return cli_usage(a, "--timeout: '%s' is not a number of seconds", v);
    }
  }
  int r = check_id(a, id);
  if (r != CLI_EXIT_OK)
    return r;
  if ((committed != NULL) == (state != NULL))
    return cli_usage(a, "give exactly one of --committed and --state");
  if ((r = setup(c, a)) != CLI_EXIT_OK)
    return r;
  double deadline = now_s() + timeout;
  for (;;) {
    double left = deadline - now_s();
    if (left < 0)
      left = 0;
    double slice = left > WAIT_SLICE_S ? WAIT_SLICE_S : left;
    char path[PATH_MAX_];
    snprintf(path, sizeof path, "/api/v1/acquisitions/%s/wait?%s=%s&timeout=%.3f%s%s",
             id, committed ? "committed" : "state",
             committed ? committed : state, slice, allow ? "&allow_loss=" : "",
             allow ? allow : "");
    cli_http_answer an;
    int rc = cli_http_call(&c->h, "GET", path, NULL,
                           (long)(slice * 1000) + 15000, &an);
    char line[16], code[65];
    bool again = rc >= 0 && an.status == 504 && left > slice &&
                 cli_acq_err_text(an.status, an.body, an.len, line,
                                  sizeof line, code) > 0 &&
                 !strcmp(code, "wait_timeout");
    if (again) {
      cli_http_answer_free(&an);
      continue;
    }
    int ex = (rc < 0 || an.status != 200) ? report(c, id, rc, &an)
                                          : print_object(c, id, &an);
    cli_http_answer_free(&an);
    return ex;
  }
}

/* ---- events ------------------------------------------------------------------- */

static const char events_help[] =
    "usage: b2stream acq events [--acquisition ID] [--last-event-id EID]\n"
    "           [--until-end] [--count N] [OPTIONS]\n\n"
    "Print the server-sent events (GET /api/v1/events), one line each:\n"
    "EVENT EVENT-ID DATA (the data: one line of JSON).  A dropped\n"
    "connection is made again with Last-Event-ID, so no event still held\n"
    "is missed (events_lost says when some were).\n\n"
    "  --acquisition ID   that acquisition's events only\n"
    "  --last-event-id E  start after event E (else with the next event)\n"
    "  --until-end        with --acquisition: stop at its end event; exit 0\n"
    "                     when it ended done, else 1\n"
    "  --count N          stop after N events\n" COMMON_HELP;

typedef struct ev_run {
  cli_sse sse;
  const char *acq;
  bool until_end;
  int64_t count, seen;
  int end_status;                /* -1 none yet */
  bool got_bytes;
} ev_run;

static bool on_event(void *arg, const cli_sse_event *ev) {
  ev_run *e = arg;
  cli_acq_put_text(stdout, ev->event, strlen(ev->event));
  fputc(' ', stdout);
  cli_acq_put_text(stdout, ev->id[0] ? ev->id : "-", ev->id[0] ? strlen(ev->id) : 1);
  fputc(' ', stdout);
  cli_acq_put_text(stdout, ev->data, ev->data_len);
  fputc('\n', stdout);
  fflush(stdout);
  e->seen++;
  if (e->until_end && !strcmp(ev->event, "end")) {
    char st[16];
    if (cli_acq_end_of(ev->data, ev->data_len, e->acq, st)) {
      e->end_status = strcmp(st, "done") ? CLI_EXIT_FAIL : CLI_EXIT_OK;
      if (e->end_status != CLI_EXIT_OK)
        cli_err("acq events %s: ended %s", e->acq, st);
      return false;
    }
  }
  return e->count <= 0 || e->seen < e->count;
}

static bool on_bytes(void *arg, const char *p, size_t n) {
  ev_run *e = arg;
  e->got_bytes = true;
  return cli_sse_feed(&e->sse, p, n, on_event, e) == 0;
}

static bool event_id_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 128)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
          (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '-'))
      return false;
  return true;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

static int run_events(acq_ctx *c, cli_args *a) {
  ev_run e = {.end_status = -1};
  const char *last = NULL, *operand;
  int k;
  while ((k = cli_args_next(a, &operand)) != 0) {
    if (k == 2)
      return cli_usage(a, "unexpected argument '%s'", operand);
    int r = common_opt(a, c);
    if (r < 0)
      return -r;
    if (r == 1)
      continue;
    const char *v;
    if (!strcmp(a->opt, "until-end")) {
      if (!cli_args_no_value(a))
        return CLI_EXIT_USAGE;
      e.until_end = true;
    } else if (!strcmp(a->opt, "acquisition") ||
               !strcmp(a->opt, "last-event-id") || !strcmp(a->opt, "count")) {
      if ((v = cli_args_value(a)) == NULL)
        return CLI_EXIT_USAGE;
      if (a->opt[0] == 'a') {
        e.acq = v;
      } else if (a->opt[0] == 'l') {
        if (!event_id_ok(v))
          return cli_usage(a, "--last-event-id: not an event id (EPOCH-SEQ)");
        last = v;
      } else if (cli_parse_int(v, 1, INT64_MAX, &e.count) < 0) {
        return cli_usage(a, "--count: '%s' is not a count", v);
      }
    } else {
      return cli_unknown_option(a);
    }
  }
  if (e.acq != NULL && check_id(a, e.acq) != CLI_EXIT_OK)
    return CLI_EXIT_USAGE;
  if (e.until_end && e.acq == NULL)
    return cli_usage(a, "--until-end needs --acquisition");
  int r = setup(c, a);
  if (r != CLI_EXIT_OK)
    return r;
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "/api/v1/events%s%s", e.acq ? "?acquisition=" : "",
           e.acq ? e.acq : "");
  if (cli_sse_init(&e.sse) < 0) {
    cli_err("acq events: out of memory");
    return CLI_EXIT_FAIL;
  }
  if (last != NULL)
    snprintf(e.sse.id, sizeof e.sse.id, "%s", last);
  bool connected_once = false;
  double failing_since = -1;
  int ex = CLI_EXIT_OK;
  for (;;) {
    c->h.last_event_id = e.sse.id[0] ? e.sse.id : NULL;
    cli_http_answer an;
    e.got_bytes = false;
    int rc = cli_http_stream(&c->h, path, on_bytes, &e, &an);
    if (rc == 1 || (e.sse.failed)) {
      if (e.sse.failed) {
        cli_err("acq events: the event stream is not one: %s", e.sse.error);
        ex = CLI_EXIT_UNREACHABLE;
      } else {
        ex = e.end_status >= 0 ? e.end_status : CLI_EXIT_OK;
      }
      cli_http_answer_free(&an);
      break;
    }
    if (an.status != 0 && an.status != 200) {
      ex = report(c, e.acq ? e.acq : "", 0, &an);
      cli_http_answer_free(&an);
      break;
    }
    bool reached = an.status == 200;
    if (!connected_once && !reached) {
      ex = report(c, e.acq ? e.acq : "", rc, &an);
      cli_http_answer_free(&an);
      break;
    }
    connected_once = true;
    cli_http_answer_free(&an);
    /* The connection ended: go on from the last event id, after the
     * daemon's retry delay, for at most RECONNECT_GIVE_UP_MS of failures. */
    if (reached || e.got_bytes)
      failing_since = -1;
    else if (failing_since < 0)
      failing_since = now_s();
    if (failing_since >= 0 && (now_s() - failing_since) * 1000 > RECONNECT_GIVE_UP_MS) {
      cli_err("acq events: cannot reach %s again", c->base);
      ex = CLI_EXIT_UNREACHABLE;
      break;
    }
    sleep_ms(e.sse.retry_ms >= 0 && e.sse.retry_ms < 60000 ? e.sse.retry_ms : 2000);
    /* a new connection starts a new stream: a partial line is dropped */
    e.sse.line_len = 0;
    e.sse.data_len = 0;
    e.sse.data_set = e.sse.event_set = e.sse.cr = false;
    e.sse.bom = 0;
  }
  cli_sse_fini(&e.sse);
  return ex;
}

/* ---- the dispatcher ------------------------------------------------------------- */

typedef struct acq_sub {
  const char *name, *help;
  int (*run)(acq_ctx *c, cli_args *a);
} acq_sub;

static const acq_sub subs[] = {
    {"arm", arm_help, run_arm},       {"list", list_help, run_list},
    {"status", status_help, run_status}, {"files", files_help, run_files},
    {"stop", stop_help, run_stop},    {"abort", abort_help, run_abort},
    {"wait", wait_help, run_wait},    {"events", events_help, run_events},
};

static const char acq_help[] =
    "usage: b2stream acq SUBCOMMAND [ARGS]   (b2stream acq SUBCOMMAND --help)\n\n"
    "Drive acquisitions over the daemon's control API (docs/ACQUISITIONS.md):\n"
    "  arm      arm an acquisition\n"
    "  list     the held acquisitions\n"
    "  status   one acquisition\n"
    "  files    its files\n"
    "  stop     stop: drain, commit, close\n"
    "  abort    abort: keep what is committed\n"
    "  wait     long poll for a count or a state\n"
    "  events   the server-sent events\n\n"
    "Exit status: 0 success; 1 the daemon refused (its code and message are\n"
    "printed) or the acquisition did not end done; 2 bad command line; 3 no\n"
    "daemon answered, or not with the acquisition API; 4 a wait ran out.\n";

static int run_acq(int argc, char **argv) {
  if (argc < 2) {
    cli_err("acq: missing subcommand (see b2stream acq --help)");
    return CLI_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fputs(acq_help, stdout);
    return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
  }
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    if (strcmp(argv[1], subs[i].name) != 0)
      continue;
    if (cli_wants_help(argc - 1, argv + 1)) {
      fputs(subs[i].help, stdout);
      return cli_flush_stdout() ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    char cmd[32];
    snprintf(cmd, sizeof cmd, "acq %s", subs[i].name);
    argv[1] = cmd;
    acq_ctx c = {.sub = subs[i].name};
    cli_args a;
    cli_args_init(&a, argc - 1, argv + 1);
    int ex = subs[i].run(&c, &a);
    explicit_bzero(c.token, sizeof c.token);
    return ex;
  }
  cli_err("acq: unknown subcommand '%s' (see b2stream acq --help)", argv[1]);
  return CLI_EXIT_USAGE;
}

const cli_cmd cli_cmd_acq = {
    "acq", "drive acquisitions over the control API (arm, wait, events...)",
    acq_help, run_acq};

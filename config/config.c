/* Loading a configuration: file -> text -> tree -> daemon settings,
 * templates, streams; access to the result; streams created from a
 * template at run time. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_internal.h"

#define DI(path) b2s_cfg_schema_index(CFG_DAEMON, path)

static int finish_listen(cfg_ctx *c, b2s_daemon_cfg *d, const cfg_loc *loc) {
  for (int i = 0; i < d->nlisten; i++) {
    char out[B2S_CONFIG_ENDPOINT_MAX];
    if (b2s_cfg_endpoint_resolve(d->listen[i], d->run_dir, out, sizeof out) < 0)
      return b2s_cfg_loc_item_fail(c, loc, DI("listen"), i, "'%s' in run_dir "
                               "makes a socket path longer than %d bytes",
                               d->listen[i], B2S_IPC_PATH_MAX);
    memcpy(d->listen[i], out, sizeof out);
  }
  if (d->live.publish[0]) {
    char out[B2S_CONFIG_ENDPOINT_MAX];
    if (b2s_cfg_endpoint_resolve(d->live.publish, d->run_dir, out,
                                 sizeof out) < 0)
      return b2s_cfg_loc_fail(c, loc, DI("live.publish"), "'%s' in run_dir "
                              "makes a socket path longer than %d bytes",
                              d->live.publish, B2S_IPC_PATH_MAX);
    memcpy(d->live.publish, out, sizeof out);
  }
  return 0;
}

/* Whether one of a and b is b or inside it (both normalised, absolute). */
static bool path_nested(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b), n = na < nb ? na : nb;
  if (strncmp(a, b, n) != 0)
    return false;
  const char *rest = na > nb ? a + n : b + n;
  return n == 1 || rest[0] == '\0' || rest[0] == '/';
}

/* acquisitions: needs http:, a token file unless anonymous changes on a
 * loopback listener were asked for, and roots apart from the daemon's own
 * directories (an acquisition must never write among its frames or
 * sockets). */
static int finish_acq(cfg_ctx *c, b2s_daemon_cfg *d, const cfg_loc *loc) {
  if (!d->acq.enabled)
    return 0;
  if (!d->http.enabled)
    return b2s_cfg_loc_fail(c, loc, DI("acquisitions"), "needs http:");
  if (!d->http.token_file[0] && !d->acq.anonymous)
    return b2s_cfg_loc_fail(c, loc, DI("acquisitions"), "needs "
                        "http.token_file (or acquisitions.anonymous: true "
                        "on a loopback listener)");
  if (!d->http.token_file[0] && !b2s_config_hostport_loopback(d->http.listen))
    return b2s_cfg_loc_fail(c, loc, DI("acquisitions.anonymous"), "anonymous "
                        "changes need a loopback http.listen");
  if (d->acq.nroots == 0)
    return b2s_cfg_loc_fail(c, loc, DI("acquisitions.roots"), "required "
                        "with acquisitions");
  for (int i = 0; i < d->acq.nroots; i++) {
    const char *r = d->acq.roots[i];
    if (strcmp(r, "/") == 0 || path_nested(r, d->data_dir) ||
        path_nested(r, d->run_dir))
      return b2s_cfg_loc_item_fail(c, loc, DI("acquisitions.roots"), i, "'%s' "
                               "is /, or inside or around data_dir or "
                               "run_dir", r);
  }
  return 0;
}

static int finish_daemon(cfg_ctx *c, b2s_daemon_cfg *d, const cfg_loc *loc) {
  if (!d->run_dir[0])
    return b2s_cfg_loc_fail(c, loc, DI("run_dir"), "must not be empty");
  if (!d->data_dir[0])
    return b2s_cfg_loc_fail(c, loc, DI("data_dir"), "must not be empty");
  int rc = finish_listen(c, d, loc);
  if (rc < 0)
    return rc;
  if (d->curve.enabled) {
    const char *keys[] = {"curve.secret_key_file", "curve.authorized_keys_file"};
    const char *vals[] = {d->curve.secret_key_file,
                          d->curve.authorized_keys_file};
    for (int i = 0; i < 2; i++)
      if (!vals[i][0])
        return b2s_cfg_loc_fail(c, loc, DI(keys[i]), "required with curve");
  }
  if (d->http.enabled && !d->http.allow_remote &&
      !b2s_config_hostport_loopback(d->http.listen))
    return b2s_cfg_loc_fail(c, loc, DI("http.listen"), "'%s' is not a loopback "
                        "address and the page has no authentication; set "
                        "http.allow_remote: true to serve it anyway",
                        d->http.listen);
  if ((rc = finish_acq(c, d, loc)) < 0)
    return rc;
  if (d->max_buffer > d->memory_limit) {
    char a[32], b[32];
    b2s_size_format(d->max_buffer, a, sizeof a);
    b2s_size_format(d->memory_limit, b, sizeof b);
    if (!loc->at[DI("max_buffer")] && loc->at[DI("memory_limit")])
      return b2s_cfg_loc_fail(c, loc, DI("memory_limit"), "%s is smaller than "
                          "max_buffer (%s)", b, a);
    return b2s_cfg_loc_fail(c, loc, DI("max_buffer"), "%s is larger than "
                        "memory_limit (%s)", a, b);
  }
  return 0;
}

static int build(cfg_ctx *c, const char *text, size_t len) {
  b2s_config *cfg = c->cfg;
  int rc = b2s_cfg_tree_parse(c, text, len);
  if (rc == 0)
    rc = b2s_cfg_apply_defaults(c, CFG_DAEMON, &cfg->daemon, false);
  if (rc == 0)
    rc = b2s_cfg_apply_defaults(c, CFG_STREAM, &cfg->stream_defaults, true);
  if (rc < 0)
    return rc;
  const cfg_node *root = c->tree.root;
  cfg_loc *loc = calloc(1, sizeof *loc);
  if (!loc)
    return b2s_cfg_nomem(c);
  loc->self = root;
  if (root && root->kind != CN_MAP && !b2s_cfg_node_is_null(root))
    rc = b2s_cfg_fail(c, root, "", "the top level must be a mapping of keys, "
                  "got %s", b2s_cfg_node_kind_name(root));
  else if (root && root->kind == CN_MAP)
    rc = b2s_cfg_apply_map(c, CFG_DAEMON, "", root, &cfg->daemon, false, loc, "");
  if (rc == 0)
    rc = finish_daemon(c, &cfg->daemon, loc);
  free(loc);
  if (rc == 0)
    rc = b2s_cfg_cluster_load(c);
  if (rc == 0)
    rc = b2s_cfg_streams_load(c);
  if (rc == 0)
    rc = b2s_cfg_sources_load(c);
  return rc;
}

static int parse(const char *text, size_t len, const char *filename,
                 const char *base_dir, b2s_config **out, b2s_errdetail *ed);

int b2s_config_parse(const char *text, size_t len, const char *filename,
                     const char *base_dir, b2s_config **out,
                     b2s_errdetail *ed) {
  b2s_errdetail_clear(ed);
  int rc = parse(text, len, filename, base_dir, out, ed);
  if (ed != NULL && rc < 0)
    ed->code = rc;
  return rc;
}

static int parse(const char *text, size_t len, const char *filename,
                 const char *base_dir, b2s_config **out, b2s_errdetail *ed) {
  char *err = ed ? ed->text : NULL;
  size_t errlen = ed ? sizeof ed->text : 0;
  if (!out || (!text && len))
    return B2S_E_ARG;
  *out = NULL;
  char base[B2S_CONFIG_PATH_MAX];
  cfg_ctx c = {.file = filename ? filename : "<config>", .err = err,
               .errlen = errlen, .base_dir = base};
  if (!base_dir || base_dir[0] != '/' ||
      b2s_cfg_path_normalize(base_dir, base, sizeof base, NULL) < 0)
    return b2s_cfg_fail(&c, NULL, "", "the base directory must be an absolute "
                    "path shorter than %d bytes", B2S_CONFIG_PATH_MAX),
           B2S_E_ARG;
  if (len > B2S_CONFIG_TEXT_MAX)
    return b2s_cfg_fail(&c, NULL, "", "larger than %d bytes",
                    B2S_CONFIG_TEXT_MAX);
  c.cfg = calloc(1, sizeof *c.cfg);
  if (!c.cfg)
    return b2s_cfg_nomem(&c);
  int rc = build(&c, text ? text : "", len);
  b2s_cfg_tree_fini(&c.tree);
  if (rc < 0) {
    b2s_config_free(c.cfg);
    return rc;
  }
  *out = c.cfg;
  return 0;
}

static int read_all(int fd, char **text, size_t *len) {
  size_t cap = 64 * 1024, n = 0;
  char *buf = malloc(cap);
  if (!buf)
    return B2S_E_NOMEM;
  for (;;) {
    if (n == cap) {
      if (cap > B2S_CONFIG_TEXT_MAX) {
        free(buf);
        return -EFBIG;
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        return B2S_E_NOMEM;
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      free(buf);
      return -e;
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  if (n > B2S_CONFIG_TEXT_MAX) {
    free(buf);
    return -EFBIG;
  }
  *text = buf;
  *len = n;
  return 0;
}

static int load(const char *path, b2s_config **out, b2s_errdetail *ed);

int b2s_config_load(const char *path, b2s_config **out, b2s_errdetail *ed) {
  b2s_errdetail_clear(ed);
  int rc = load(path, out, ed);
  if (ed != NULL && rc < 0)
    ed->code = rc;
  return rc;
}

static int load(const char *path, b2s_config **out, b2s_errdetail *ed) {
  char *err = ed ? ed->text : NULL;
  size_t errlen = ed ? sizeof ed->text : 0;
  if (!path || !out)
    return B2S_E_ARG;
  *out = NULL;
  cfg_ctx c = {.file = path, .err = err, .errlen = errlen};
  char *real = realpath(path, NULL);
  if (!real) {
    int e = errno;
    b2s_cfg_fail(&c, NULL, "", "%s", strerror(e));
    return -e;
  }
  /* O_NONBLOCK: a FIFO must not block the open; only a regular file is
   * read (a FIFO or a device could block the daemon forever) */
  int fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat sb = {0};
  if (fd >= 0 && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))) {
    int e = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
    close(fd);
    free(real);
    if (e == EINVAL)
      b2s_cfg_fail(&c, NULL, "", "not a regular file");
    else
      b2s_cfg_fail(&c, NULL, "", "%s", strerror(e));
    return -e;
  }
  if (fd < 0) {
    int e = errno;
    free(real);
    b2s_cfg_fail(&c, NULL, "", "%s", strerror(e));
    return -e;
  }
  fcntl(fd, F_SETFL, 0);        /* reads of the regular file block again */
  char *text = NULL;
  size_t len = 0;
  int rc = read_all(fd, &text, &len);
  close(fd);
  if (rc == -EFBIG)
    rc = b2s_cfg_fail(&c, NULL, "", "larger than %d bytes", B2S_CONFIG_TEXT_MAX);
  else if (rc < 0)
    b2s_cfg_fail(&c, NULL, "", "%s", rc == B2S_E_NOMEM ? "out of memory"
                                                   : strerror(-rc));
  if (rc == 0)
    rc = parse(text, len, path, dirname(real), out, ed);
  free(text);
  free(real);
  return rc;
}

void b2s_config_free(b2s_config *cfg) {
  if (!cfg)
    return;
  free(cfg->streams);
  free(cfg->templates);
  free(cfg);
}

const b2s_daemon_cfg *b2s_config_daemon(const b2s_config *cfg) {
  return &cfg->daemon;
}

const b2s_source_cfg *b2s_config_sources(const b2s_config *cfg, size_t *count) {
  *count = cfg->nsources;
  return cfg->sources;
}

const b2s_cluster_cfg *b2s_config_cluster(const b2s_config *cfg) {
  return &cfg->cluster;
}

const b2s_stream_cfg *b2s_config_streams(const b2s_config *cfg, size_t *count) {
  *count = cfg->nstreams;
  return cfg->streams;
}

const b2s_stream_cfg *b2s_config_templates(const b2s_config *cfg,
                                           size_t *count) {
  *count = cfg->ntemplates;
  return cfg->templates;
}

/* ---- run-time creation --------------------------------------------------- */

int b2s_config_stream_from_template(const b2s_config *cfg,
                                    const char *template_name,
                                    const char *stream_name,
                                    b2s_stream_cfg *out) {
  if (!cfg || !out)
    return B2S_E_ARG;
  if (b2s_stream_name_check(stream_name) < 0)
    return B2S_E_STREAM_NAME;
  const b2s_stream_cfg *t =
      b2s_config_template_find(cfg, template_name ? template_name : "default");
  if (!t)
    return B2S_E_NOTEMPLATE;
  *out = *t;
  snprintf(out->name, sizeof out->name, "%s", stream_name);
  snprintf(out->template_name, sizeof out->template_name, "%s", t->name);
  return b2s_cfg_stream_finish(NULL, &cfg->daemon, out, NULL);
}

int b2s_daemon_cfg_workers(const b2s_daemon_cfg *d) {
  if (d->workers > 0)
    return d->workers;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

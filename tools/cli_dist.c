/* Distributed frames as a PATH of the b2stream tool: the URL syntax
 * (rados://POOL/NAME, dir:///ABS/DIR/NAME), opening the store and the
 * frame, and reading its committed count and chunks into a cli_src
 * (cli.h; cli_src.c opens and closes it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* The frame name's rules of b2s_dframe.h: 1..160 bytes of [A-Za-z0-9._-],
 * not starting with '.' (so a name never leaves a local store). */
static bool name_ok(const char *s, size_t n) {
  if (n == 0 || n > B2S_DMSG_NAME_MAX || s[0] == '.')
    return false;
  for (size_t k = 0; k < n; k++) {
    char c = s[k];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok)
      return false;
  }
  return true;
}

/* rest = "POOL/NAME": the store URL is "rados://POOL"; *name = NAME. */
static int parse_rados(const char *path, const char *rest, cli_dist_url *u,
                       const char **name) {
  const char *slash = strchr(rest, '/');
  if (slash == NULL || slash == rest) {
    cli_err("%s: a RADOS frame is rados://POOL/NAME", path);
    return B2S_E_ARG;
  }
  size_t pool = (size_t)(slash - rest);
  if (pool + 9 > sizeof u->store) {
    cli_err("%s: pool name too long", path);
    return B2S_E_ARG;
  }
  snprintf(u->store, sizeof u->store, "rados://%.*s", (int)pool, rest);
  *name = slash + 1;
  return 0;
}

/* rest = "/ABS/DIR/NAME": the store is the directory "/ABS/DIR". */
static int parse_dir(const char *path, const char *rest, cli_dist_url *u,
                     const char **name) {
  const char *slash = strrchr(rest, '/');
  if (rest[0] != '/' || slash == rest) {
    cli_err("%s: a local store's frame is dir:///ABS/DIR/NAME (an absolute "
            "directory, then the frame's name)", path);
    return B2S_E_ARG;
  }
  size_t dir = (size_t)(slash - rest);
  if (dir + 1 > sizeof u->store) {
    cli_err("%s: directory name too long", path);
    return B2S_E_ARG;
  }
  memcpy(u->store, rest, dir);
  u->store[dir] = '\0';
  *name = slash + 1;
  return 0;
}

int cli_dist_parse(const char *path, cli_dist_url *u) {
  static const char rados[] = "rados://", dir[] = "dir://";
  const char *name = NULL;
  int rc;
  if (!strncmp(path, rados, sizeof rados - 1))
    rc = parse_rados(path, path + sizeof rados - 1, u, &name);
  else if (!strncmp(path, dir, sizeof dir - 1))
    rc = parse_dir(path, path + sizeof dir - 1, u, &name);
  else
    return 0;
  if (rc < 0)
    return rc;
  if (!name_ok(name, strlen(name))) {
    cli_err("%s: frame name '%s' is not 1..%d bytes of [A-Za-z0-9._-] "
            "starting with no '.'", path, name, B2S_DMSG_NAME_MAX);
    return B2S_E_ARG;
  }
  strcpy(u->name, name);   /* fits: checked against the bound */
  return 1;
}

/* "b2stream: PATH: what: message[: the store's words]". */
static void store_err(const char *path, const char *what, int rc) {
  const char *words = b2s_store_last_error();
  if (words != NULL && words[0])
    cli_err("%s: %s: %s: %s", path, what, b2s_strerror(rc), words);
  else
    cli_err("%s: %s: %s", path, what, b2s_strerror(rc));
}

int cli_dist_open(const char *path, const char *ceph_conf, b2s_store **s,
                  b2s_dframe **df) {
  *s = NULL;
  *df = NULL;
  cli_dist_url u;
  int rc = cli_dist_parse(path, &u);
  if (rc == 0) {
    cli_err("%s: not a rados:// or dir:// frame", path);
    rc = B2S_E_ARG;
  }
  if (rc < 0)
    return rc;
  struct stat st;
  /* the local store makes a missing directory: not for a reader */
  if (u.store[0] == '/' && stat(u.store, &st) < 0) {
    rc = -errno;
    cli_err("%s: store directory %s: %s", path, u.store, strerror(-rc));
    return rc;
  }
  b2s_store_opts so = {.ceph_conf = ceph_conf};
  rc = b2s_store_open(u.store, &so, s);
  if (rc < 0)
    store_err(path, "cannot open the store", rc);
  else if ((rc = b2s_dframe_open(*s, u.name, df)) == -ENOENT)
    cli_err("%s: no such frame (no %s.meta in %s)", path, u.name, u.store);
  else if (rc < 0)
    store_err(path, "cannot open the frame", rc);
  if (rc < 0) {
    b2s_store_free(*s);
    *s = NULL;
  }
  return rc;
}

int cli_src_refresh(cli_src *src) {
  int rc = b2s_dframe_refresh(src->dframe, &src->committed, &src->closed);
  if (rc < 0)
    store_err(src->path, "cannot read the committed count", rc);
  return rc;
}

/* Committed chunk i into src->dchunk, its header checked into *info. */
int cli_dist_chunk_read(cli_src *src, int64_t i, b2s_chunk_info *info) {
  if (i < 0 || i >= src->committed) {
    cli_err("%s: no chunk %lld (%lld committed)", src->path, (long long)i,
            (long long)src->committed);
    return B2S_E_NCHUNK;
  }
  if (src->dchunk_i == i)          /* verify: checksum, then decode */
    return b2s_chunk_info_get(src->dchunk, src->dchunk_len, info);
  free(src->dchunk);
  src->dchunk = NULL;
  src->dchunk_len = 0;
  src->dchunk_i = -1;
  int rc = b2s_dframe_chunk_get(src->dframe, i, &src->dchunk,
                                &src->dchunk_len);
  if (rc < 0) {
    char what[64];
    snprintf(what, sizeof what, "chunk %lld", (long long)i);
    store_err(src->path, what, rc);
    return rc;
  }
  rc = b2s_chunk_info_get(src->dchunk, src->dchunk_len, info);
  if (rc >= 0 && (size_t)info->cbytes != src->dchunk_len)
    rc = B2S_E_CBYTES;
  if (rc < 0)
    cli_err("%s: chunk %lld: not a valid chunk (%zu bytes stored): %s",
            src->path, (long long)i, src->dchunk_len, b2s_strerror(rc));
  else
    src->dchunk_i = i;
  return rc;
}

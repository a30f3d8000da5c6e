/* Internals of the configuration loader: the schema table, the YAML node
 * tree, error reporting and the helpers shared by the loader's files.
 *
 * Flow: yaml_tree.c turns the document into a bounded tree of nodes (with
 * line and column); apply.c walks it against the schema and stores values
 * into b2s_daemon_cfg / b2s_stream_cfg fields by offset; streams.c builds
 * templates and streams; stream_check.c and config.c check what spans
 * several keys; equal.c and dump.c walk the schema again over the result. */
#ifndef B2S_CONFIG_INTERNAL_H
#define B2S_CONFIG_INTERNAL_H

#include <stdarg.h>

#include "b2s_config.h"
#include "b2s_names.h"

/* ---- schema ------------------------------------------------------------ */

enum cfg_scope { CFG_DAEMON, CFG_STREAM, CFG_CLUSTER, CFG_SOURCE };

enum cfg_type {
  CT_GROUP,        /* nested mapping of further keys */
  CT_INT,          /* integer in min..max */
  CT_SIZE,         /* byte size with optional unit, min..max */
  CT_ENUM,         /* one of enums[], stored as its value */
  CT_PATH,         /* path relative to the config file's directory */
  CT_STREAM_PATH,  /* path relative to data_dir, checked per stream */
  CT_TEMPLATE,     /* name of a template */
  CT_DTYPE,        /* NumPy dtype string */
  CT_UNIX_GROUP,   /* a POSIX group name (resolved by the daemon) */
  CT_ENDPOINTS,    /* list of ZeroMQ endpoints */
  CT_ENUM_LIST,    /* list of enums[] values, stored as uint8_t */
  CT_INT_LIST,     /* list of integers in min..max */
  CT_TEMPLATES,    /* mapping name -> stream settings */
  CT_STREAMS,      /* mapping name -> stream settings */
  CT_SERIES,       /* mapping key -> scalar or list, stored as msgpack;
                    * aux: uint16_t length */
  CT_CLUSTER,      /* mapping of CFG_CLUSTER keys (b2s_cluster_cfg) */
  CT_STORAGE,      /* "rados://POOL", "file:///DIR" or a directory */
  CT_ENDPOINT,     /* one ZeroMQ endpoint, "" allowed when not required */
  CT_SOURCES,      /* sequence of mappings of CFG_SOURCE keys */
  CT_STRING,       /* free text (checked by its section) */
  CT_HOSTPORT,     /* "IPv4:PORT" or "[IPv6]:PORT", numeric (http.listen) */
  CT_FLOAT,        /* finite double in min..max */
  CT_PATHS,        /* list of paths, each as CT_PATH */
};

enum cfg_flags {
  CF_OPTIONAL = 1,     /* group that may be absent; aux: its bool */
  CF_STREAM_ONLY = 2,  /* not allowed in a template */
  CF_COUNT16 = 4,      /* list: its count (aux) is a uint16_t, not uint8_t */
};

typedef struct cfg_enum {
  const char *name;
  int value;
} cfg_enum;

typedef struct cfg_desc {
  const char *path;         /* dotted key path inside its scope */
  uint8_t scope, type, flags;
  uint16_t min_items, max_items;
  uint16_t off;             /* field (lists: first element) */
  uint16_t size;            /* field (lists: element) size in bytes */
  uint16_t aux;             /* lists: uint8_t count; CF_OPTIONAL: bool */
  int64_t min, max;
  const cfg_enum *enums;    /* NULL-name terminated */
  const char *def;          /* default, as YAML text; NULL: none */
  const char *env;          /* environment variable that replaces def */
  const char *unit;
  const char *help;
  /* How a running daemon takes a new value on SIGHUP (enum b2s_reload,
   * never 0: test_config checks every row) and, for at-once keys, how; a
   * next-frame or restart-only key may say what waits. */
  uint8_t reload;
  const char *applies;
} cfg_desc;

#define CFG_MAX_DESC 128      /* schema rows: sizes the per-row arrays */
extern const cfg_desc b2s_cfg_schema[];
extern const size_t b2s_cfg_nschema;

/* Index of the schema entry named `key` directly under `prefix` ("" for
 * the top of the scope), or -1. */
int b2s_cfg_schema_find(int scope, const char *prefix, const char *key,
                    size_t keylen);
/* Index of the entry with this full path. */
int b2s_cfg_schema_index(int scope, const char *path);
/* The last component of a key path. */
const char *b2s_cfg_desc_key(const cfg_desc *d);
/* Whether d sits directly under prefix. */
bool b2s_cfg_desc_under(const cfg_desc *d, int scope, const char *prefix);
/* Index of the group holding entry di, or -1 at the top of its scope. */
int b2s_cfg_desc_parent(int di);
const cfg_enum *b2s_cfg_enum_by_value(const cfg_enum *e, int value);

/* ---- YAML tree --------------------------------------------------------- */

enum cfg_node_kind { CN_SCALAR, CN_MAP, CN_SEQ };

typedef struct cfg_node {
  int kind;
  bool quoted;                       /* scalar was quoted or a block scalar */
  int line, col;                     /* 1-based */
  const char *str;                   /* scalar text, NUL-terminated */
  size_t len;
  size_t n;                          /* children (maps: keys + values) */
  struct cfg_node *child, *last, *next;
} cfg_node;

typedef struct cfg_tree {
  struct cfg_block *blocks;
  cfg_node *root;                    /* NULL for an empty document */
  size_t nnodes;
} cfg_tree;

#define CFG_MAX_DEPTH 5              /* root/streams/stream/b2nd/shape */
#define CFG_MAX_ENTRIES 1024         /* per mapping or sequence */
#define CFG_MAX_NODES (1 << 19)

struct cfg_ctx;
int b2s_cfg_tree_parse(struct cfg_ctx *c, const char *text, size_t len);
void b2s_cfg_tree_fini(cfg_tree *t);
/* A node for a schema default: a scalar, or "[a, b]" for a list when not
 * quoted. */
cfg_node *b2s_cfg_tree_from_text(cfg_tree *t, const char *text, bool quoted);
bool b2s_cfg_node_is_null(const cfg_node *n);
const char *b2s_cfg_node_kind_name(const cfg_node *n);

/* ---- errors and locations ---------------------------------------------- */

#define CFG_KEYPATH_MAX 256

typedef struct cfg_ctx {
  const char *file;                  /* NULL: no file positions */
  char *err;
  size_t errlen;
  const char *base_dir;
  cfg_tree tree;
  b2s_config *cfg;
  const cfg_node *templates_node, *streams_node, *cluster_node, *sources_node;
} cfg_ctx;

/* Where each key of one stream or template mapping was set, so checks that
 * span keys can point at the right line. */
typedef struct cfg_loc {
  const cfg_node *self;
  const cfg_node *at[CFG_MAX_DESC];
  const struct cfg_loc *base;        /* the template's, or NULL */
  char path[CFG_KEYPATH_MAX];        /* "streams.raw" */
} cfg_loc;

/* Format "file:line:col: keypath: message" into c->err; returns
 * B2S_E_CONFIG.  at or keypath may be NULL/"". */
int b2s_cfg_fail(cfg_ctx *c, const cfg_node *at, const char *keypath,
             const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int b2s_cfg_vfail(cfg_ctx *c, const cfg_node *at, const char *keypath,
              const char *fmt, va_list ap);
/* "out of memory" into c->err; returns B2S_E_NOMEM. */
int b2s_cfg_nomem(cfg_ctx *c);
/* The same at schema entry `di` of a stream, located through loc. */
int b2s_cfg_loc_fail(cfg_ctx *c, const cfg_loc *loc, int di, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* ... at item `item` of the list at entry `di`. */
int b2s_cfg_loc_item_fail(cfg_ctx *c, const cfg_loc *loc, int di, int item,
                      const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- values ------------------------------------------------------------ */

int b2s_cfg_parse_int(const char *s, int64_t *out);
/* s, printable, quoted and cut to fit n, for messages. */
void b2s_cfg_quote(char *buf, size_t n, const char *s, size_t len);
/* The candidate closest to word when close enough to be a typo, or NULL. */
const char *b2s_cfg_suggest(const char *word, const char *const *cand, size_t n);
int64_t b2s_cfg_field_get(const void *p, size_t size);
void b2s_cfg_field_set(void *p, size_t size, int64_t v);
/* Item count of the list at entry d of obj (uint8_t or, CF_COUNT16,
 * uint16_t). */
size_t b2s_cfg_list_count(const cfg_desc *d, const void *obj);
void b2s_cfg_list_count_set(const cfg_desc *d, void *obj, size_t n);
/* Whether the field of d holds the same value in oa and ob (equal.c; a
 * group's own row is always equal: its keys are rows of their own). */
bool b2s_cfg_field_equal(const cfg_desc *d, const void *oa, const void *ob);

/* ---- paths and names --------------------------------------------------- */

/* Lexically normalise in: no "//", "." or "x/.."; leading ".." of a
 * relative path stay and are counted in *up.  "" becomes ".".  Returns 0
 * or -ENAMETOOLONG. */
int b2s_cfg_path_normalize(const char *in, char *out, size_t outlen, int *up);
/* normalize(base/rel), or normalize(rel) when rel is absolute. */
int b2s_cfg_path_join(const char *base, const char *rel, char *out, size_t outlen);
/* The normalised part of path below data_dir (B2S_E_CONFIG when it
 * escapes or is data_dir itself). */
int b2s_cfg_stream_rel(const char *data_dir, const char *path, char *out,
                   size_t outlen);
/* NULL when ep is an ipc:// or tcp:// endpoint we accept, else why not. */
const char *b2s_cfg_endpoint_check(const char *ep);
/* NULL when s is a numeric "A.B.C.D:PORT" or "[IPv6]:PORT" with port
 * 1..65535, else why not (hostport.c). */
const char *b2s_cfg_hostport_check(const char *s);
int b2s_cfg_endpoint_resolve(const char *ep, const char *run_dir, char *out,
                         size_t outlen);

/* ---- stage entry points ------------------------------------------------ */

/* Store the defaults of every entry of scope into obj. */
int b2s_cfg_apply_defaults(cfg_ctx *c, int scope, void *obj, bool template);
/* Apply mapping map (keys directly under prefix) to obj. */
int b2s_cfg_apply_map(cfg_ctx *c, int scope, const char *prefix,
                  const cfg_node *map, void *obj, bool template,
                  cfg_loc *loc, const char *keypath);

/* Encode the `series:` mapping v into the field of d (series.c). */
int b2s_cfg_series_set(cfg_ctx *c, const cfg_desc *d, const cfg_node *v,
                   void *obj, const char *kp);

int b2s_cfg_streams_load(cfg_ctx *c);
/* The cluster: section (cluster.c): defaults, keys, cross-key checks. */
int b2s_cfg_cluster_load(cfg_ctx *c);
/* The sources: section (sources.c). */
int b2s_cfg_sources_load(cfg_ctx *c);
/* A stream's distributed settings: a cluster to run in, a chunk size. */
int cfg_stream_distributed(cfg_ctx *c, const b2s_stream_cfg *s,
                           const cfg_loc *loc);
/* Finish a stream built from a template: name, path, filters, b2nd. */
int b2s_cfg_stream_finish(cfg_ctx *c, const b2s_daemon_cfg *d, b2s_stream_cfg *s,
                      const cfg_loc *loc);

struct b2s_config {
  b2s_daemon_cfg daemon;
  b2s_stream_cfg *streams;
  size_t nstreams;
  b2s_stream_cfg *templates;
  size_t ntemplates;
  b2s_stream_cfg stream_defaults;
  b2s_cluster_cfg cluster;
  b2s_source_cfg sources[B2S_CONFIG_MAX_SOURCES];
  size_t nsources;
};

#endif

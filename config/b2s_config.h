/* b2streamd configuration: a YAML file checked against one schema table.
 *
 * The schema (config/schema.c) lists every key once with its type, default,
 * bounds and help text; loading, defaults, bounds checks, equality and the
 * effective-config dump are all driven by it.  Errors come back as one line
 * naming the file, line, column and key path, e.g.
 *   b2streamd.yaml:14:12: streams.raw.clevel: 12 is out of range 0..9
 *
 * Paths: relative paths in the file are relative to the directory of the
 * file (b2s_config_load makes that absolute), stream paths relative to
 * data_dir, relative ipc:// endpoints relative to run_dir.  Every path held
 * here is absolute and lexically normalised; the checks are lexical (no
 * symlinks are followed), so whoever opens a stream path should still open
 * it without following links out of data_dir.
 *
 * Streams without a `template:` key inherit from the template `default`
 * (built-in defaults unless the file defines it); a stream's own keys
 * override the template's, key by key inside nested maps.
 *
 * Ownership: a b2s_config owns everything it points to and is immutable
 * after loading, so threads may share it; pointers into it live as long as
 * it does.  b2s_stream_cfg and b2s_daemon_cfg hold no pointers and may be
 * copied by value (a stream writer keeps its own copy across reloads). */
#ifndef B2S_CONFIG_H
#define B2S_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "b2s_chunk.h"
#include "b2s_errors.h"
#include "b2s_frame_format.h"

#define B2S_STREAM_NAME_MAX 64          /* bytes, without the NUL */
#define B2S_CONFIG_PATH_MAX 4096        /* bytes, with the NUL */
#define B2S_CONFIG_STRING_MAX 4096      /* longest scalar accepted */
#define B2S_CONFIG_TEXT_MAX (1 << 20)   /* largest configuration document */
#define B2S_CONFIG_MAX_STREAMS 1024     /* streams, and templates, each */
#define B2S_CONFIG_MAX_LISTEN 16
#define B2S_CONFIG_ENDPOINT_MAX 512     /* bytes, with the NUL */
#define B2S_CONFIG_MAX_ROOTS 64         /* acquisitions.roots */
#define B2S_CONFIG_ROOT_MAX 1024        /* one root, bytes with the NUL */
#define B2S_CONFIG_MAX_DIM 8
#define B2S_CONFIG_DTYPE_MAX 64         /* bytes, with the NUL */
#define B2S_CONFIG_GROUP_MAX 33         /* bytes, with the NUL */
#define B2S_IPC_PATH_MAX 107            /* sockaddr_un.sun_path minus NUL */
#define B2S_CONFIG_SERIES_MAX 4096      /* series defaults, msgpack bytes */

/* How a running daemon takes a key's new value on SIGHUP; each schema row
 * (config/schema.c) says which, and docs/CONFIG.md shows it. */
enum b2s_reload {
  B2S_RELOAD_AT_ONCE = 1,              /* the running daemon takes it */
  B2S_RELOAD_NEXT_FRAME = 2,           /* a frame (stream) opened from now
                                          on gets it; running ones keep
                                          theirs */
  B2S_RELOAD_RESTART = 3,              /* kept until a restart */
};

enum b2s_log_level {
  B2S_LOG_ERROR = 0,
  B2S_LOG_WARNING = 1,
  B2S_LOG_INFO = 2,
  B2S_LOG_DEBUG = 3,
};

enum b2s_stream_format {
  B2S_FORMAT_CONTIGUOUS = 0,           /* one .b2frame file */
  B2S_FORMAT_SPARSE = 1,               /* a .b2frame directory */
  B2S_FORMAT_DISTRIBUTED = 2,          /* chunk objects in the cluster's
                                          store (b2s_dframe.h), needs a
                                          cluster: section */
};

enum b2s_stream_io {
  B2S_IO_DIRECT = 0,                   /* chunk data bypasses the page cache */
  B2S_IO_BUFFERED = 1,
};

enum b2s_ack {
  B2S_ACK_RECEIPT = 0,                 /* once the daemon holds the buffer */
  B2S_ACK_WRITE = 1,                   /* once the chunk is written */
  B2S_ACK_FSYNC = 2,                   /* once the commit is on stable storage */
};

enum b2s_backpressure {
  B2S_BP_BLOCK = 0,
  B2S_BP_DROP_NEWEST = 1,
  B2S_BP_DROP_OLDEST = 2,
};

/* What a buffer that never reaches the frame leaves there (METADATA.md). */
enum b2s_gaps {
  B2S_GAPS_AUTO = 0,                   /* fill for b2nd streams, else skip */
  B2S_GAPS_SKIP = 1,                   /* nothing: chunk index = arrival */
  B2S_GAPS_FILL = 2,                   /* a placeholder chunk, gap record */
};

/* Order of the chunks in the frame. */
enum b2s_order {
  B2S_ORDER_ARRIVAL = 0,
  B2S_ORDER_FRAME_NUMBER = 1,          /* producers' frame numbers */
};

#define B2S_REORDER_WINDOW_MAX 4096

/* Whether a stream is an acquisition input (docs/ACQUISITIONS.md 2). */
enum b2s_acq_mode {
  B2S_ACQ_MODE_OFF = 0,                /* writes its own frame at path */
  B2S_ACQ_MODE_ONLY = 1,               /* writes acquisitions only */
};

/* The b2nd (N-d array) description of a stream.  Counts are as configured;
 * in a finished stream (not a template) ndim == nshape == nchunkshape ==
 * nblockshape, dtype is filled in and cparams.blocksize matches blockshape.
 * shape[0] may be 0: the first dimension grows with the stream. */
typedef struct b2s_stream_b2nd {
  bool enabled;
  int8_t ndim;
  uint8_t nshape, nchunkshape, nblockshape;
  int64_t shape[B2S_CONFIG_MAX_DIM];
  int32_t chunkshape[B2S_CONFIG_MAX_DIM];
  int32_t blockshape[B2S_CONFIG_MAX_DIM]; /* none configured: = chunkshape */
  char dtype[B2S_CONFIG_DTYPE_MAX];       /* NumPy dtype string; "" = auto */
} b2s_stream_b2nd;

typedef struct b2s_stream_durability {
  int32_t ack;                         /* enum b2s_ack */
  int32_t group_count;                 /* commit after this many chunks */
  int32_t group_interval_ms;           /* ... or after this long */
} b2s_stream_durability;

/* One stream's (or template's) settings. */
typedef struct b2s_stream_cfg {
  char name[B2S_STREAM_NAME_MAX + 1];
  char template_name[B2S_STREAM_NAME_MAX + 1]; /* "" in a template */
  /* Normalised, relative to data_dir; a template keeps its "{name}"
   * placeholders, which a stream replaces by its name. */
  char path[B2S_CONFIG_PATH_MAX];
  char full_path[B2S_CONFIG_PATH_MAX];  /* data_dir/path; "" in a template */
  int32_t format;                      /* enum b2s_stream_format */
  int32_t io;                          /* enum b2s_stream_io */
  /* Ready for b2s_compress: codec, clevel, typesize, blocksize, splitmode
   * as configured; filters and filters_meta from the lists below, placed
   * at the end of the pipeline as c-blosc2 does. */
  b2s_cparams cparams;
  uint8_t nfilters;                    /* as configured, in pipeline order */
  uint8_t filters[B2S_MAX_FILTERS];
  uint8_t nfilters_meta;               /* 0 or nfilters */
  int16_t filters_meta[B2S_MAX_FILTERS];
  b2s_stream_b2nd b2nd;
  b2s_stream_durability durability;
  int32_t backpressure;                /* enum b2s_backpressure */
  int32_t queue_depth;                 /* buffers in flight for the stream */
  int32_t gaps;                        /* enum b2s_gaps */
  int32_t order;                       /* enum b2s_order */
  int32_t acquisitions;                /* enum b2s_acq_mode */
  int32_t reorder_window;              /* frame numbers held back at most */
  /* Series metadata a new frame starts with: one msgpack map (checked by
   * b2s_series_check, no nil values) in series[0..series_len); 0 = none. */
  uint16_t series_len;
  uint8_t series[B2S_CONFIG_SERIES_MAX];
  /* format distributed: bytes of every chunk (= every buffer); set from
   * the b2nd chunkshape when not configured; 0 for other formats unless
   * configured (then unused). */
  int64_t chunk_nbytes;
} b2s_stream_cfg;

/* gaps as it applies to the stream (auto resolved). */
static inline bool b2s_stream_cfg_fill_gaps(const b2s_stream_cfg *c) {
  return c->gaps == B2S_GAPS_FILL ||
         (c->gaps == B2S_GAPS_AUTO && c->b2nd.enabled);
}

typedef struct b2s_daemon_cfg {
  /* Endpoints to bind; relative ipc:// paths already joined to run_dir. */
  char listen[B2S_CONFIG_MAX_LISTEN][B2S_CONFIG_ENDPOINT_MAX];
  uint8_t nlisten;
  char run_dir[B2S_CONFIG_PATH_MAX];
  char data_dir[B2S_CONFIG_PATH_MAX];
  /* Group whose members may use the ipc:// sockets and shared-memory
   * segments (both then mode 0660); "" = the daemon's user only (0600). */
  char group[B2S_CONFIG_GROUP_MAX];
  int32_t workers;                     /* 0 = one per online CPU */
  int64_t memory_limit;                /* bytes for all buffers in flight */
  int64_t max_buffer;                  /* largest single buffer, bytes */
  int32_t log_level;                   /* enum b2s_log_level */
  int32_t slow_disk_ms;
  int32_t max_sessions;                /* sessions at a time */
  int32_t max_streams;                 /* streams made from templates */
  struct {
    int32_t slots;
    int64_t slot_size;
  } shm;                               /* defaults for shared-memory producers */
  struct {
    bool enabled;
    char secret_key_file[B2S_CONFIG_PATH_MAX];
    char authorized_keys_file[B2S_CONFIG_PATH_MAX];
  } curve;
  struct {
    bool enabled;                      /* an http: section is present */
    char listen[B2S_CONFIG_ENDPOINT_MAX]; /* "127.0.0.1:9464", "[::1]:9464" */
    int32_t allow_remote;              /* 1: a non-loopback address is
                                          allowed (no authentication!) */
    char token_file[B2S_CONFIG_PATH_MAX];  /* bearer tokens; "" = none */
    int32_t auth_reads;                /* 1: reads need a token too */
    int64_t max_body;                  /* bytes of a request body */
    int32_t max_connections;
    int32_t max_event_streams;
    int32_t max_waits;
  } http;                              /* metrics, status page, control API */
  struct {
    bool enabled;                      /* a live: section is present */
    int32_t every_n;                   /* frame numbers shown: multiples */
    int32_t max_rate_hz;               /* decodes per stream per second */
    /* the PUB endpoint, a relative ipc:// path joined to run_dir; "" none */
    char publish[B2S_CONFIG_ENDPOINT_MAX];
    int64_t max_bytes;                 /* largest decoded frame shown */
    int32_t send_hwm;                  /* PUB messages per subscriber */
  } live;                              /* live view (docs/ACQUISITIONS.md 11) */
  /* Acquisitions armed over HTTP (docs/ACQUISITIONS.md); last in the
   * struct, roots last of all: the schema's offsets are 16 bits. */
  struct {
    bool enabled;                      /* an acquisitions: section */
    int64_t disk_floor;                /* bytes */
    int32_t disk_margin;               /* % */
    int32_t min_free_memory;           /* % of memory_limit */
    int32_t max_held;
    int32_t events_held;
    int32_t progress_hz;
    int32_t anonymous;                 /* 1: changes without a token */
    uint8_t nroots;
    char roots[B2S_CONFIG_MAX_ROOTS][B2S_CONFIG_ROOT_MAX];
  } acq;
} b2s_daemon_cfg;

/* Whether a numeric "HOST:PORT" (http.listen) is on a loopback address
 * (127.0.0.0/8, ::1). */
bool b2s_config_hostport_loopback(const char *hostport);

#define B2S_CLUSTER_MAX_RANKS 1024

/* The node's part in a cluster (the top-level `cluster:` section): this
 * daemon is rank `rank` of nranks; its distributed streams write chunk
 * objects to `storage` and tell the committer about each one.  Too large
 * to copy casually (the rank list): keep a pointer into the config. */
typedef struct b2s_cluster_cfg {
  bool enabled;                        /* a cluster: section is present */
  /* "rados://POOL", or an absolute, normalised directory (a plain path
   * in the file is relative to the file's directory; "file://" is
   * dropped). */
  char storage[B2S_CONFIG_PATH_MAX];
  char ceph_conf[B2S_CONFIG_PATH_MAX]; /* "" = librados's own search */
  int32_t rank;                        /* 0..nranks-1 */
  int32_t frames_per_block;            /* frame f: rank (f / this) % N */
  /* The committer's PULL endpoint (ranks PUSH to it) and its PUB endpoint
   * ("" when not configured), as written: they name another process. */
  char committer[B2S_CONFIG_ENDPOINT_MAX];
  char committer_pub[B2S_CONFIG_ENDPOINT_MAX];
  /* Producer endpoints of every rank, in rank order, as producers reach
   * them (not resolved against run_dir). */
  uint16_t nranks;
  char ranks[B2S_CLUSTER_MAX_RANKS][B2S_CONFIG_ENDPOINT_MAX];
} b2s_cluster_cfg;

/* Sources the daemon pulls data from itself (docs/SOURCES.md). */
#define B2S_CONFIG_MAX_SOURCES 8
#define B2S_SOURCE_NAME_MAX 128        /* name pattern, bytes with the NUL */

enum b2s_source_kind {
  B2S_SOURCE_DECTRIS_STREAM2 = 1,      /* DECTRIS Stream V2 (CBOR) */
};

enum b2s_source_layout {
  B2S_SOURCE_FLAT = 0,                 /* (images, pixels): no recompression */
  B2S_SOURCE_IMAGES = 1,               /* (images, y, x): blocks of whole rows */
};

/* What the detector is set to send: the frames' blocks are laid out for it. */
enum b2s_source_comp {
  B2S_SOURCE_BSLZ4 = 0,                /* bitshuffle's 8 KiB blocks */
  B2S_SOURCE_LZ4 = 1,                  /* one block per image */
};

/* Facts about the beamline that a detector does not know, recorded in
 * the series metadata under "beamline" (docs/SOURCES.md section 4). */
#define B2S_BEAMLINE_TEXT_MAX 256      /* one fact, bytes with the NUL */
typedef struct b2s_source_beamline {
  char source_name[B2S_BEAMLINE_TEXT_MAX];      /* "": not given */
  char source_type[B2S_BEAMLINE_TEXT_MAX];
  char source_probe[B2S_BEAMLINE_TEXT_MAX];
  char instrument_name[B2S_BEAMLINE_TEXT_MAX];
  char sample_name[B2S_BEAMLINE_TEXT_MAX];
  double beam_flux;                    /* photons/s on the sample; 0: not given */
} b2s_source_beamline;

typedef struct b2s_source_cfg {
  int32_t kind;                        /* enum b2s_source_kind */
  char endpoint[B2S_CONFIG_ENDPOINT_MAX]; /* the daemon connects a PULL */
  char template_name[B2S_STREAM_NAME_MAX + 1]; /* stream settings */
  char name[B2S_SOURCE_NAME_MAX];      /* stream name pattern */
  int32_t series_timeout_ms;           /* an unfinished series closes */
  int32_t verify;                      /* check copied LZ4 blocks decode */
  int32_t layout;                      /* enum b2s_source_layout */
  int32_t compression;                 /* enum b2s_source_comp */
  int32_t max_message;                 /* MiB, largest message accepted */
  b2s_source_beamline beamline;
} b2s_source_cfg;

typedef struct b2s_config b2s_config;

/* Read and check the file at path.  Returns 0 and a new config in *out, or
 * a negative error (B2S_E_CONFIG, B2S_E_NOMEM, -errno) with a one-line
 * message "file:line:col: key: what" in ed (when ed is not NULL). */
int b2s_config_load(const char *path, b2s_config **out, b2s_errdetail *ed);

/* The same from text[0..len).  filename only names the text in messages
 * (NULL: "<config>"); base_dir, which must be absolute, stands for the
 * directory of the file.  Nothing is read from the filesystem;
 * $RUNTIME_DIRECTORY and $STATE_DIRECTORY supply the run_dir and data_dir
 * defaults when set. */
int b2s_config_parse(const char *text, size_t len, const char *filename,
                     const char *base_dir, b2s_config **out,
                     b2s_errdetail *ed);

void b2s_config_free(b2s_config *cfg);

const b2s_daemon_cfg *b2s_config_daemon(const b2s_config *cfg);

/* The cluster section (enabled == false when the file has none). */
const b2s_cluster_cfg *b2s_config_cluster(const b2s_config *cfg);

const b2s_source_cfg *b2s_config_sources(const b2s_config *cfg, size_t *count);

/* Configured streams in file order; *count receives their number. */
const b2s_stream_cfg *b2s_config_streams(const b2s_config *cfg, size_t *count);
const b2s_stream_cfg *b2s_config_stream_find(const b2s_config *cfg,
                                             const char *name);

/* Templates (always including "default") in file order. */
const b2s_stream_cfg *b2s_config_templates(const b2s_config *cfg,
                                           size_t *count);
const b2s_stream_cfg *b2s_config_template_find(const b2s_config *cfg,
                                               const char *name);

/* Settings for a stream created at run time from a template (NULL means
 * "default").  Returns 0, B2S_E_STREAM_NAME, B2S_E_NOTEMPLATE, or
 * B2S_E_CONFIG when the resulting path does not fit.  The
 * caller still checks the name and path against the streams it runs. */
int b2s_config_stream_from_template(const b2s_config *cfg,
                                    const char *template_name,
                                    const char *stream_name,
                                    b2s_stream_cfg *out);

/* Whether two streams' effective settings are the same (what a reload
 * compares to decide whether a stream must be reopened). */
bool b2s_stream_cfg_equal(const b2s_stream_cfg *a, const b2s_stream_cfg *b);
bool b2s_daemon_cfg_equal(const b2s_daemon_cfg *a, const b2s_daemon_cfg *b);
bool b2s_cluster_cfg_equal(const b2s_cluster_cfg *a, const b2s_cluster_cfg *b);

/* ---- reload --------------------------------------------------------------
 * What a SIGHUP changes, key by key, as the schema's rows say. */

typedef struct b2s_reload_change {
  const char *key;                     /* the row's path: "codec",
                                          "durability.ack", "workers" */
  int how;                             /* enum b2s_reload */
  const char *applies;                 /* at once: how; else what waits,
                                          or NULL */
  char kept[96];                       /* the running value, as YAML (cut
                                          to fit) */
} b2s_reload_change;

/* Told of one changed key; arg is the caller's. */
typedef void (*b2s_reload_fn)(void *arg, const b2s_reload_change *ch);

/* The settings a running stream goes on with after a reload: loaded, with
 * every restart-only key (and what is derived from it: full_path from
 * path, the whole b2nd description from b2nd) kept from running.  fn, when
 * not NULL, is told of every key that differs, in schema order.  Returns
 * the number of keys that differ (0: the stream is left as it is). */
int b2s_stream_cfg_reload(const b2s_stream_cfg *running,
                          const b2s_stream_cfg *loaded, b2s_stream_cfg *out,
                          b2s_reload_fn fn, void *arg);

/* The daemon's settings: the at-once keys that differ are copied from
 * loaded into running, field by field (a field nothing changed is not
 * written: other threads read some); fn hears of every key that differs.
 * Returns the number of keys that differ. */
int b2s_daemon_cfg_reload(b2s_daemon_cfg *running,
                          const b2s_daemon_cfg *loaded, b2s_reload_fn fn,
                          void *arg);

/* The keys of the cluster section that differ (a section switched on or
 * off is the key "cluster"); nothing is copied.  Returns their number. */
int b2s_cluster_cfg_reload(const b2s_cluster_cfg *running,
                           const b2s_cluster_cfg *loaded, b2s_reload_fn fn,
                           void *arg);

/* The keys of one source that differ; nothing is copied (sources start
 * with the daemon).  Returns their number. */
int b2s_source_cfg_reload(const b2s_source_cfg *running,
                          const b2s_source_cfg *loaded, b2s_reload_fn fn,
                          void *arg);

/* How the key at path reloads (enum b2s_reload) and, in *applies when not
 * NULL, the row's words; scope is "daemon", "stream", "cluster" or
 * "source".  B2S_E_ARG for a key the schema lacks. */
int b2s_config_key_reload(const char *scope, const char *path,
                          const char **applies);

/* The core's b2nd description of s (which must have b2nd.enabled); nd
 * borrows the dtype string from s. */
void b2s_stream_cfg_b2nd(const b2s_stream_cfg *s, b2s_b2nd *nd);

/* workers, with 0 resolved to the number of online CPUs (1..256). */
int b2s_daemon_cfg_workers(const b2s_daemon_cfg *d);

/* 0 when name is a valid stream or template name: 1..64 bytes of
 * [A-Za-z0-9._-], not starting with '.'; else B2S_E_STREAM_NAME. */
int b2s_stream_name_check(const char *name);

/* Resolve a stream path (relative to data_dir, or absolute) lexically and
 * write data_dir/<normalised path> to out.  Returns 0, B2S_E_CONFIG when
 * the path is empty, names data_dir itself or leaves it, or -ENAMETOOLONG
 * when the result does not fit in outlen bytes.  data_dir must be absolute
 * and normalised. */
int b2s_stream_path_resolve(const char *data_dir, const char *path, char *out,
                            size_t outlen);

/* Print the effective configuration as YAML that loads back to an equal
 * configuration.  With B2S_DUMP_HELP every key carries its help text as a
 * comment.  Returns 0 or -EIO. */
#define B2S_DUMP_HELP 1u
int b2s_config_dump(const b2s_config *cfg, FILE *out, unsigned flags);

#endif

/* Shared pieces of the b2stream command-line tool: opening a PATH of any
 * kind, error lines, option and value parsing, output, JSON.
 *
 * Error policy: every failure is reported once, as one line on stderr
 * starting with "b2stream: ", by the function that detects it; callers
 * only turn the failure into an exit status (CLI_EXIT_*).
 *
 * Ownership: a cli_src owns its frame handle, the chunk file's bytes and
 * its buffers; cli_src_close() releases them.  Pointers it returns stay
 * valid until the next call on the same cli_src. */
#ifndef B2S_CLI_H
#define B2S_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "b2s_chunk.h"
#include "b2s_dframe.h"
#include "b2s_dmsg.h"
#include "b2s_names.h"
#include "b2s_frame.h"
#include "b2s_meta.h"
#include "b2s_msgpack.h"

enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_FAIL = 1,     /* the operation failed or found a problem */
  CLI_EXIT_USAGE = 2,    /* bad command line */
};

/* ---- messages ---------------------------------------------------------- */

/* "b2stream: <fmt>\n" on stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "b2stream: PATH: reason: message (at byte OFFSET[, chunk N])": a frame
 * error as the core describes it.  In a sparse frame an offset inside a
 * chunk file names that file.  chunk_id: the file's id when known, else -1. */
void cli_err_frame(const char *path, const b2s_frame_error *e, int code,
                   int64_t chunk_id);

/* "b2stream: PATH: a writer holds this frame (PID N)": PATH is locked
 * (b2s_frame_lock.h); the PID when /proc/locks tells it. */
void cli_err_locked(const char *path);

/* ---- command line ------------------------------------------------------ */

/* A subcommand: its name, one-line summary, full help text and entry point
 * (argv[0] is the subcommand name). */
typedef struct cli_cmd {
  const char *name;
  const char *summary;
  const char *help;
  int (*run)(int argc, char **argv);
} cli_cmd;

extern const cli_cmd cli_cmd_info, cli_cmd_ls, cli_cmd_cat, cli_cmd_unpack,
    cli_cmd_verify, cli_cmd_recover, cli_cmd_convert, cli_cmd_pack;
extern const cli_cmd cli_cmd_export, cli_cmd_import;   /* with libhdf5 */

/* Walks argv[1..argc) of a subcommand.  Options (--name, --name=value,
 * --name value) may come anywhere; "--" ends them; "-" is an operand. */
typedef struct cli_args {
  int argc, i;
  char **argv;
  const char *cmd;
  bool only_operands;              /* after "--" */
  const char *opt;                 /* current option name without "--" */
  const char *raw;                 /* the current argument as given */
  char optbuf[64];
  const char *inline_val;          /* value after '=' or NULL */
} cli_args;

void cli_args_init(cli_args *a, int argc, char **argv);

/* Next argument: 1 for an option (a->opt), 2 for an operand (*operand),
 * 0 at the end. */
int cli_args_next(cli_args *a, const char **operand);

/* Value of the current option (inline or the next argument); NULL after
 * printing an error when it is missing. */
const char *cli_args_value(cli_args *a);

/* The current option was given a value it does not take: error. */
bool cli_args_no_value(cli_args *a);

/* Usage error: prints "b2stream: CMD: <fmt> (see b2stream CMD --help)",
 * returns CLI_EXIT_USAGE. */
int cli_usage(const cli_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Usage error for the current option, which the command does not know. */
int cli_unknown_option(const cli_args *a);

/* Whether argv holds --help or -h before any "--". */
bool cli_wants_help(int argc, char **argv);

/* ---- value parsing (no output; 0 or a negative error) ------------------- */

/* Decimal integer in [min, max], whole string. */
int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);

/* Size with an optional unit (b2s_names.h: k, K, KiB = 1024; kB, KB =
 * 1000; M, G, T likewise), in [min, max]. */
int cli_parse_size(const char *s, int64_t min, int64_t max, int64_t *out);

/* Hex string (even length, may be empty) into a malloc'ed buffer of
 * *len bytes (at least 1 allocated). */
int cli_parse_hex(const char *s, uint8_t **out, int32_t *len);

/* Comma list of NAME[:META] (shuffle, bitshuffle, delta, truncprec; truncprec
 * needs its precision in bits, which may be negative), or "none".  Filled
 * right-aligned into the six slots, as c-blosc2's defaults are. */
int cli_parse_filters(const char *s, uint8_t filters[B2S_MAX_FILTERS],
                      uint8_t meta[B2S_MAX_FILTERS]);

/* ---- names -------------------------------------------------------------- */

const char *cli_codec_name(int code);       /* b2s_codec_name or "unknown" */
const char *cli_special_name(int special);  /* none/zeros/nan/value/uninit */
const char *cli_split_name(int splitmode);
/* "delta,shuffle", "truncprec:10,shuffle" or "none" into out. */
void cli_filters_str(const uint8_t filters[B2S_MAX_FILTERS],
                     const uint8_t meta[B2S_MAX_FILTERS], char *out,
                     size_t outlen);

/* ---- output ------------------------------------------------------------- */

/* write(2) all of buf to fd, through short writes and EINTR.  0 or -errno
 * (-EPIPE when the reader went away: SIGPIPE is ignored). */
int cli_write_all(int fd, const void *buf, size_t len);

/* Flush stdout; on failure print the error and return false. */
bool cli_flush_stdout(void);

/* Remove a frame this process created and failed to finish: the file, or
 * the directory with the files in it.  Best effort, silent. */
void cli_remove_frame(const char *path);

/* ---- JSON --------------------------------------------------------------- */

/* Writes s[0..n) as a JSON string literal: valid UTF-8 passes through,
 * quotes, backslashes and control characters are escaped, and every byte
 * that is not part of valid UTF-8 becomes \u00XX (its Latin-1 reading),
 * so any byte string gives valid JSON. */
void cli_json_string(FILE *out, const char *s, size_t n);

#define CLI_JSON_MAX_DEPTH 16

/* Pretty-printed JSON, built value by value.  Keys are given with each
 * value inside objects and are NULL inside arrays. */
typedef struct cli_json {
  FILE *out;
  int depth;
  bool first[CLI_JSON_MAX_DEPTH];
  bool inline_[CLI_JSON_MAX_DEPTH];  /* array printed on one line */
} cli_json;

void cj_init(cli_json *j, FILE *out);
void cj_obj_open(cli_json *j, const char *key);
void cj_obj_close(cli_json *j);
/* inline_items: all on one line (short arrays of numbers). */
void cj_arr_open(cli_json *j, const char *key, bool inline_items);
void cj_arr_close(cli_json *j);
void cj_str(cli_json *j, const char *key, const char *s);
void cj_strn(cli_json *j, const char *key, const char *s, size_t n);
void cj_int(cli_json *j, const char *key, int64_t v);
void cj_bool(cli_json *j, const char *key, bool v);
void cj_null(cli_json *j, const char *key);
/* nbytes / cbytes with 3 decimals, or null when cbytes is 0. */
void cj_ratio(cli_json *j, const char *key, int64_t nbytes, int64_t cbytes);
/* Start a value under key[0..n) (NULL in arrays) that the caller then
 * writes to j->out itself, as one line of JSON. */
void cj_raw_keyn(cli_json *j, const char *key, size_t n);
/* Ends the document with a newline. */
void cj_end(cli_json *j);

/* ---- PATH of any kind ----------------------------------------------------- */

typedef enum cli_kind {
  CLI_KIND_CHUNK,
  CLI_KIND_CFRAME,
  CLI_KIND_SFRAME,
  CLI_KIND_DFRAME,                 /* distributed frame in an object store */
} cli_kind;

/* chunk / cframe / sframe / dframe */
const char *cli_kind_name(cli_kind k);

/* A distributed frame's PATH (cli_dist.c): "rados://POOL/NAME" or
 * "dir:///ABS/DIR/NAME", the store's URL and, as its last element, the
 * frame's name. */
typedef struct cli_dist_url {
  char store[4096];                /* as b2s_store_open takes it */
  char name[B2S_DMSG_NAME_MAX + 1];
} cli_dist_url;

/* Help lines of the read-only commands on a distributed PATH. */
#define CLI_DIST_HELP                                                          \
  "  --ceph-conf FILE\n"                                                      \
  "               the Ceph configuration of a rados:// PATH (default\n"      \
  "               $CEPH_CONF, else librados's own search)\n"                  \
  "\n"                                                                         \
  "PATH may also be a distributed frame in an object store, read up to its\n" \
  "committed count: rados://POOL/NAME (a Ceph RADOS pool) or\n"               \
  "dir:///ABS/DIR/NAME (a local store directory), NAME being the frame.\n"

/* 1 with *u filled when path names a distributed frame, 0 when it is a
 * local path, or B2S_E_ARG (reported) for a malformed rados:// or dir://
 * URL. */
int cli_dist_parse(const char *path, cli_dist_url *u);

/* Open the store and the frame of the distributed frame path (NULL
 * ceph_conf: $CEPH_CONF, then librados's default).  A missing local store
 * directory is an error (a reader does not make it).  Prints the error;
 * on failure nothing is left open. */
int cli_dist_open(const char *path, const char *ceph_conf, b2s_store **s,
                  b2s_dframe **df);

typedef struct cli_src {
  const char *path;
  int64_t offset;                  /* where the frame starts in the file */
  cli_kind kind;
  b2s_frame *frame;                /* frames */
  uint8_t *chunk;                  /* chunk file: its bytes */
  size_t chunk_len;
  b2s_ctx *ctx;
  uint8_t *buf;                    /* chunk bytes as read / decoded */
  size_t cap;
  b2s_store *store;                /* distributed frame: its store, */
  b2s_dframe *dframe;              /* the frame, */
  int64_t committed;               /* its committed count and */
  bool closed;                     /* closed flag as of the last refresh, */
  uint8_t *dchunk;                 /* the chunk last read (malloc'ed), */
  size_t dchunk_len;
  int64_t dchunk_i;                /* its number (-1: none) */
} cli_src;

/* Open PATH: a directory is a sparse frame, a file starting with the frame
 * magic a contiguous frame, anything else a chunk file (its header is
 * checked).  Prints the error; returns 0 or a negative error. */
int cli_src_open(const char *path, cli_src *src);
/* Open the contiguous frame that starts at byte `offset` of the file PATH
 * (bytes before and after it are not the frame's; offsets inside it are
 * relative to its start).  A directory, or no frame magic at `offset`, is
 * an error.  Error messages give byte offsets in PATH.  offset < 0: as
 * cli_src_open. */
int cli_src_open_at(const char *path, int64_t offset, cli_src *src);
/* Open the distributed frame PATH (cli_dist_parse) with the Ceph
 * configuration file ceph_conf (NULL: $CEPH_CONF, then librados's
 * default) and read its committed count. */
int cli_src_open_dist(const char *path, const char *ceph_conf, cli_src *src);
/* Re-read a distributed frame's committed count and closed flag. */
int cli_src_refresh(cli_src *src);
/* Committed chunk i of a distributed frame into src->dchunk (read once
 * when asked for the same chunk again), its header checked into *info
 * (cli_src_chunk and cli_src_decode use it). */
int cli_dist_chunk_read(cli_src *src, int64_t i, b2s_chunk_info *info);
void cli_src_close(cli_src *src);

/* The command line of a read-only command: PATH, [--offset N] (the frame
 * starts at byte N of the file: cli_src_open_at) and the options of
 * `accept`. */
enum {
  CLI_LINE_JSON = 1,               /* --json */
  CLI_LINE_CHUNK = 2,              /* --chunk N */
};
/* --ceph-conf FILE is taken by every read-only command; it only goes with
 * a rados:// PATH (--offset never goes with a distributed frame). */
typedef struct cli_src_line {
  bool json;
  const char *ceph_conf;           /* NULL when not given */
  int64_t chunk;                   /* -1 when not given */
  int64_t offset;                  /* -1 when not given */
  const char *path;                /* PATH, once parsed */
  int open_rc;                     /* why PATH did not open, else 0 */
} cli_src_line;

/* Parse the command line and open PATH.  Returns CLI_EXIT_OK with src
 * open, or the exit status (usage or failure, already reported). */
int cli_src_open_args(int argc, char **argv, unsigned accept, cli_src *src,
                      cli_src_line *line);

int64_t cli_src_nchunks(const cli_src *src);

/* What is known about chunk i without decoding it. */
typedef struct cli_chunk {
  int64_t index;
  int32_t nbytes, cbytes;          /* cbytes 32 for a special index entry */
  bool stored;                     /* false: special index entry */
  int64_t entry;                   /* frame index value, 0 for a chunk file */
  int special;                     /* enum b2s_special */
  b2s_chunk_info info;             /* header of a stored chunk */
  const uint8_t *bytes;            /* the chunk (cbytes bytes): as stored,
                                      or the special chunk an index entry
                                      stands for */
} cli_chunk;

/* Describe chunk i and read it whole (d->bytes).  Prints the error; 0 or
 * negative. */
int cli_src_chunk(cli_src *src, int64_t i, cli_chunk *d);

/* Decode chunk i into the source's buffer (*out, returns nbytes).  An
 * uninitialised chunk decodes to zeros.  Prints the error. */
int cli_src_decode(cli_src *src, int64_t i, const uint8_t **out);

/* Print the frame's last error for PATH (chunk i's file in a sparse
 * frame); code is the value returned. */
void cli_src_frame_err(const cli_src *src, int code);

/* Bytes of PATH on disk: the file, or chunks.b2frame plus every chunk file
 * of a sparse frame.  *holes: unreferenced bytes (see cmd_info.c).  Prints
 * the error. */
int cli_src_space(cli_src *src, int64_t *file_size, int64_t *stored,
                  int64_t *holes);

/* ---- acquisition metadata (cli_meta.c) ---------------------------------- */

/* One msgpack value from r as compact one-line JSON (bin: a string of hex
 * digits; ext, NaN and infinities: null; non-string keys: their JSON text
 * as a string).  Returns 0, or a negative error for malformed input. */
int cli_mp_json(FILE *out, b2s_mpreader *r, int depth);

/* The records of a source: the records frame beside a local frame, or the
 * index of a distributed frame (one record per committed chunk). */
typedef struct cli_recs {
  b2s_records *frame;              /* owned */
  b2s_dframe *dframe;              /* borrowed from the cli_src */
  int64_t count;
} cli_recs;

/* Open src's records: r->count < 0 (returns 0) when it has none (a chunk
 * file, a frame inside a larger file, or no companion frame).  Prints the
 * error and returns it when the companion does not open. */
int cli_recs_open(const cli_src *src, cli_recs *r);
static inline bool cli_recs_have(const cli_recs *r) { return r->count >= 0; }
/* Record i (user bytes valid until the next call); prints the error. */
int cli_recs_get(const cli_src *src, cli_recs *r, int64_t i, b2s_record *rec);
void cli_recs_close(cli_recs *r);

/* Print the error of record i of src's records. */
void cli_record_err(const cli_src *src, int64_t i, int code);

/* A series map (msgpack; cli_info): as the JSON object under key, or as
 * "series:       N keys" and one line per key (its value as JSON). */
void cli_series_json(cli_json *j, const char *key, const uint8_t *map,
                     size_t len);
void cli_series_text(const uint8_t *map, size_t len);

/* The b2nd metalayer as the JSON value of "b2nd" (null for NULL), or as
 * the line "b2nd:         shape A x B, chunks ..., blocks ...[, dtype D]". */
void cli_b2nd_json(cli_json *j, const b2s_b2nd *nd);
void cli_b2nd_text(const b2s_b2nd *nd);

/* info of a distributed frame (cmd_info_dist.c). */
int cli_info_dist(cli_src *src, bool json);

#endif

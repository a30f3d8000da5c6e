/* The b2streamd configuration (config/): the shipped file, every kind of
 * error with its exact message and position, size units, templates and
 * inheritance, stream names and paths, limits, and dump -> parse round
 * trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b2s_config.h"
#include "b2s_names.h"
#include "b2s_frame_format.h"
#include "b2s_msgpack.h"
#include "config_internal.h"
#include "textfile.h"
#include "ts.h"

#define BASE "/srv/b2"
#define MIB (INT64_C(1) << 20)

static b2s_errdetail ed;

static int setup(void **state) {
  (void)state;
  /* The run_dir / data_dir defaults follow these; tests set them on purpose. */
  unsetenv("RUNTIME_DIRECTORY");
  unsetenv("STATE_DIRECTORY");
  return 0;
}

static b2s_config *parse_ok(const char *yaml) {
  b2s_config *cfg = NULL;
  int rc = b2s_config_parse(yaml, strlen(yaml), "b2streamd.yaml", BASE, &cfg,
                            &ed);
  if (rc != 0)
    fail_msg("parse failed (%d): %s\n--- input ---\n%s", rc, ed.text, yaml);
  assert_non_null(cfg);
  return cfg;
}

static void parse_err(const char *yaml, const char *expect) {
  b2s_config *cfg = (b2s_config *)&cfg;
  int rc = b2s_config_parse(yaml, strlen(yaml), "b2streamd.yaml", BASE, &cfg,
                            &ed);
  if (rc != B2S_E_CONFIG || strcmp(ed.text, expect) != 0)
    fail_msg("input:\n%s\nexpected: %s\ngot (%d):  %s", yaml, expect, rc, ed.text);
  assert_null(cfg);
}

static const b2s_stream_cfg *stream(const b2s_config *cfg, const char *name) {
  const b2s_stream_cfg *s = b2s_config_stream_find(cfg, name);
  if (!s)
    fail_msg("no stream %s", name);
  return s;
}

/* ---- the shipped file --------------------------------------------------- */

static void test_shipped_config(void **state) {
  (void)state;
  const char *path = getenv("B2S_DEFAULT_CONFIG");
  assert_non_null(path);
  b2s_config *cfg = NULL;
  int rc = b2s_config_load(path, &cfg, &ed);
  if (rc != 0)
    fail_msg("%s", ed.text);
  char *real = realpath(path, NULL);
  assert_non_null(real);
  char dir[PATH_MAX], want[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s", dirname(real));
  free(real);

  const b2s_daemon_cfg *d = b2s_config_daemon(cfg);
  assert_int_equal(d->nlisten, 1);
  snprintf(want, sizeof want, "ipc://%s/run/b2streamd.sock", dir);
  assert_string_equal(d->listen[0], want);
  snprintf(want, sizeof want, "%s/run", dir);
  assert_string_equal(d->run_dir, want);
  snprintf(want, sizeof want, "%s/data", dir);
  assert_string_equal(d->data_dir, want);
  assert_int_equal(d->workers, 0);
  assert_true(b2s_daemon_cfg_workers(d) >= 1);
  assert_int_equal(d->memory_limit, 256 * MIB);
  assert_int_equal(d->max_buffer, 64 * MIB);
  assert_int_equal(d->log_level, B2S_LOG_INFO);
  assert_int_equal(d->slow_disk_ms, 200);
  assert_int_equal(d->shm.slots, 16);
  assert_int_equal(d->shm.slot_size, 4 * MIB);
  assert_false(d->curve.enabled);

  size_t nt, ns;
  const b2s_stream_cfg *t = b2s_config_templates(cfg, &nt);
  assert_int_equal(nt, 2);
  assert_string_equal(t[0].name, "default");
  assert_string_equal(t[1].name, "detector");
  const b2s_stream_cfg *det = b2s_config_template_find(cfg, "detector");
  assert_ptr_equal(det, &t[1]);
  assert_true(det->b2nd.enabled);
  assert_int_equal(det->b2nd.nshape, 3);
  assert_int_equal(det->b2nd.shape[0], 0);
  assert_int_equal(det->b2nd.chunkshape[2], 512);
  assert_int_equal(det->b2nd.blockshape[1], 64);
  assert_string_equal(det->b2nd.dtype, "<u2");
  assert_int_equal(det->nfilters, 1);
  assert_int_equal(det->filters[0], B2S_FILTER_BITSHUFFLE);

  const b2s_stream_cfg *s = b2s_config_streams(cfg, &ns);
  assert_int_equal(ns, 2);
  assert_string_equal(s[0].name, "demo");
  assert_string_equal(s[1].name, "demo-sparse");
  const b2s_stream_cfg *demo = stream(cfg, "demo");
  assert_string_equal(demo->template_name, "default");
  assert_string_equal(demo->path, "demo.b2frame");
  snprintf(want, sizeof want, "%s/data/demo.b2frame", dir);
  assert_string_equal(demo->full_path, want);
  assert_int_equal(demo->format, B2S_FORMAT_CONTIGUOUS);
  assert_int_equal(demo->io, B2S_IO_DIRECT);
  assert_int_equal(demo->cparams.codec, B2S_CODEC_ZSTD);
  assert_int_equal(demo->cparams.clevel, 5);
  assert_int_equal(demo->cparams.typesize, 4);
  assert_int_equal(demo->cparams.blocksize, 0);
  assert_int_equal(demo->cparams.splitmode, B2S_SPLIT_FORWARD_COMPAT);
  static const uint8_t shuffle_last[6] = {0, 0, 0, 0, 0, B2S_FILTER_SHUFFLE};
  assert_memory_equal(demo->cparams.filters, shuffle_last, 6);
  assert_false(demo->b2nd.enabled);
  assert_int_equal(demo->durability.ack, B2S_ACK_WRITE);
  assert_int_equal(demo->queue_depth, 64);

  const b2s_stream_cfg *sp = stream(cfg, "demo-sparse");
  assert_int_equal(sp->format, B2S_FORMAT_SPARSE);
  assert_int_equal(sp->cparams.codec, B2S_CODEC_LZ4);
  assert_int_equal(sp->cparams.typesize, 2);
  assert_int_equal(sp->durability.ack, B2S_ACK_FSYNC);
  assert_int_equal(sp->durability.group_count, 16);
  assert_int_equal(sp->durability.group_interval_ms, 50);
  assert_int_equal(sp->backpressure, B2S_BP_DROP_OLDEST);
  b2s_config_free(cfg);
}

static void test_empty_config_is_all_defaults(void **state) {
  (void)state;
  static const char *const texts[] = {"", "# nothing\n", "---\n", "~\n"};
  for (size_t i = 0; i < 4; i++) {
    b2s_config *cfg = parse_ok(texts[i]);
    const b2s_daemon_cfg *d = b2s_config_daemon(cfg);
    assert_string_equal(d->listen[0], "ipc://" BASE "/run/b2streamd.sock");
    assert_string_equal(d->run_dir, BASE "/run");
    assert_string_equal(d->data_dir, BASE "/data");
    assert_int_equal(d->max_buffer, 64 * MIB);
    size_t n;
    b2s_config_streams(cfg, &n);
    assert_int_equal(n, 0);
    const b2s_stream_cfg *t = b2s_config_templates(cfg, &n);
    assert_int_equal(n, 1);
    assert_string_equal(t->name, "default");
    assert_string_equal(t->path, "{name}.b2frame");
    assert_int_equal(t->cparams.codec, B2S_CODEC_ZSTD);
    assert_int_equal(t->cparams.typesize, 2);
    assert_int_equal(t->cparams.clevel, 5);
    b2s_config_free(cfg);
  }
}

static void test_environment_directories(void **state) {
  (void)state;
  setenv("RUNTIME_DIRECTORY", "/run/b2stream:/run/other", 1);
  setenv("STATE_DIRECTORY", "/var/lib/b2stream", 1);
  b2s_config *cfg = parse_ok("listen: [ipc://s.sock, 'tcp://*:5555']\n");
  const b2s_daemon_cfg *d = b2s_config_daemon(cfg);
  assert_string_equal(d->run_dir, "/run/b2stream");
  assert_string_equal(d->data_dir, "/var/lib/b2stream");
  assert_string_equal(d->listen[0], "ipc:///run/b2stream/s.sock");
  assert_string_equal(d->listen[1], "tcp://*:5555");
  b2s_config_free(cfg);
  /* The file wins over the environment. */
  cfg = parse_ok("data_dir: frames\nrun_dir: /tmp/r\n");
  d = b2s_config_daemon(cfg);
  assert_string_equal(d->data_dir, BASE "/frames");
  assert_string_equal(d->run_dir, "/tmp/r");
  assert_string_equal(d->listen[0], "ipc:///tmp/r/b2streamd.sock");
  b2s_config_free(cfg);
  unsetenv("RUNTIME_DIRECTORY");
  unsetenv("STATE_DIRECTORY");
}

/* ---- errors --------------------------------------------------------------- */

static const struct {
  const char *yaml, *msg;
} errors[] = {
  /* group names */
  {"group: a/b\n", "b2streamd.yaml:1:8: group: 'a/b' is not a group name"},
  {"group: 9lab\n", "b2streamd.yaml:1:8: group: '9lab' is not a group name"},
  {"group: abcdefghijklmnopqrstuvwxyz0123456\n",
   "b2streamd.yaml:1:8: group: 'abcdefghijklmnopqrstuvwxyz0123456' is not a "
   "group name"},
  /* bounds */
  {"workers: 300\n", "b2streamd.yaml:1:10: workers: 300 is out of range 0..256"},
  {"workers: -1\n", "b2streamd.yaml:1:10: workers: -1 is out of range 0..256"},
  {"slow_disk_ms: 0\n",
   "b2streamd.yaml:1:15: slow_disk_ms: 0 is out of range 1..600000"},
  {"workers: 99999999999999999999\n",
   "b2streamd.yaml:1:10: workers: expected an integer, got "
   "'99999999999999999999'"},
  {"# a comment\nstreams:\n  raw:\n    codec: zstd\n    clevel: 12\n",
   "b2streamd.yaml:5:13: streams.raw.clevel: 12 is out of range 0..9"},
  {"streams:\n  raw:\n    durability:\n      group_interval_ms: 60001\n",
   "b2streamd.yaml:4:26: streams.raw.durability.group_interval_ms: 60001 is "
   "out of range 0..60000"},
  {"shm:\n  slots: 5000\n", "b2streamd.yaml:2:10: shm.slots: 5000 is out of "
   "range 1..4096"},
  {"memory_limit: 2T\n",
   "b2streamd.yaml:1:15: memory_limit: 2T is out of range 1MiB..1TiB"},
  {"max_buffer: 2G\n",
   "b2streamd.yaml:1:13: max_buffer: 2G is out of range 1KiB..2147483584"},
  {"shm: {slot_size: 1k}\n",
   "b2streamd.yaml:1:18: shm.slot_size: 1k is out of range 4KiB..1GiB"},
  {"templates:\n  t:\n    b2nd:\n      shape: [0, 4]\n      chunkshape: [1, 0]\n",
   "b2streamd.yaml:5:23: templates.t.b2nd.chunkshape[1]: 0 is out of range "
   "1..2147483647"},
  /* unknown keys */
  {"streams:\n  raw:\n    clevle: 3\n",
   "b2streamd.yaml:3:5: streams.raw: unknown key 'clevle' (did you mean "
   "'clevel'?)"},
  {"wrokers: 3\n",
   "b2streamd.yaml:1:1: unknown key 'wrokers' (did you mean 'workers'?)"},
  {"frobnicate: 3\n", "b2streamd.yaml:1:1: unknown key 'frobnicate'"},
  {"shm:\n  slot: 3\n",
   "b2streamd.yaml:2:3: shm: unknown key 'slot' (did you mean 'slots'?)"},
  {"shm.slots: 3\n", "b2streamd.yaml:1:1: unknown key 'shm.slots'"},
  /* types */
  {"workers: [1]\n",
   "b2streamd.yaml:1:10: workers: expected an integer, got a list"},
  {"workers: many\n",
   "b2streamd.yaml:1:10: workers: expected an integer, got 'many'"},
  {"workers:\n", "b2streamd.yaml:1:9: workers: expected an integer, got "
   "nothing"},
  {"workers: 1.5\n",
   "b2streamd.yaml:1:10: workers: expected an integer, got '1.5'"},
  {"data_dir: {a: 1}\n",
   "b2streamd.yaml:1:11: data_dir: expected a string, got a mapping"},
  {"shm: 5\n", "b2streamd.yaml:1:6: shm: expected a mapping, got '5'"},
  {"listen: ipc://x\n",
   "b2streamd.yaml:1:9: listen: expected a list, got 'ipc://x'"},
  {"streams: [a]\n", "b2streamd.yaml:1:10: streams: expected a mapping of "
   "names to stream settings, got a list"},
  {"streams:\n  a: 5\n",
   "b2streamd.yaml:2:6: streams.a: expected a mapping of settings, got a "
   "scalar"},
  {"- a\n", "b2streamd.yaml:1:1: the top level must be a mapping of keys, "
   "got a list"},
  {"? [a]\n: 3\n", "b2streamd.yaml:1:3: a mapping key must be a plain string"},
  /* sizes */
  {"max_buffer: 16mb\n", "b2streamd.yaml:1:13: max_buffer: '16mb' is not a "
   "size (" B2S_SIZE_SYNTAX ")"},
  {"max_buffer: 1.5M\n", "b2streamd.yaml:1:13: max_buffer: '1.5M' is not a "
   "size (" B2S_SIZE_SYNTAX ")"},
  {"max_buffer: -5\n", "b2streamd.yaml:1:13: max_buffer: '-5' is not a size "
   "(" B2S_SIZE_SYNTAX ")"},
  {"max_buffer: 99999999999T\n", "b2streamd.yaml:1:13: max_buffer: "
   "'99999999999T' is not a size (" B2S_SIZE_SYNTAX ")"},
  /* enums */
  {"streams:\n  a:\n    codec: zst\n",
   "b2streamd.yaml:3:12: streams.a.codec: 'zst' is not one of blosclz, lz4, "
   "lz4hc, zlib, zstd (did you mean 'zstd'?)"},
  {"streams:\n  a:\n    io: odirect\n",
   "b2streamd.yaml:3:9: streams.a.io: 'odirect' is not one of direct, "
   "buffered (did you mean 'direct'?)"},
  {"log_level: loud\n", "b2streamd.yaml:1:12: log_level: 'loud' is not one "
   "of error, warning, info, debug"},
  {"streams:\n  a:\n    filters: [shuffle, bitshufle]\n",
   "b2streamd.yaml:3:24: streams.a.filters[1]: 'bitshufle' is not one of "
   "shuffle, bitshuffle, delta, truncprec (did you mean 'bitshuffle'?)"},
  /* duplicates */
  {"workers: 1\nlog_level: info\nworkers: 2\n",
   "b2streamd.yaml:3:1: duplicate key 'workers' (first at line 1)"},
  {"durability: 1\n", "b2streamd.yaml:1:1: unknown key 'durability'"},
  {"streams:\n  a:\n    durability:\n      ack: write\n      ack: fsync\n",
   "b2streamd.yaml:5:7: streams.a.durability: duplicate key 'ack' (first at "
   "line 4)"},
  {"streams:\n  a: {}\n  b: {}\n  a: {}\n",
   "b2streamd.yaml:4:3: streams: duplicate key 'a'"},
  {"templates:\n  default: {}\n  t: {}\n  default: {}\n",
   "b2streamd.yaml:4:3: templates: duplicate key 'default' (first at line "
   "2)"},
  /* YAML itself */
  {"listen: [a\n", "b2streamd.yaml:2:1: YAML syntax error: did not find "
   "expected ',' or ']' (while parsing a flow sequence at line 1)"},
  {"a: b: c\n", "b2streamd.yaml:1:5: YAML syntax error: mapping values are "
   "not allowed in this context"},
  {"base: &x {workers: 1}\nother: *x\n",
   "b2streamd.yaml:2:8: YAML aliases are not supported (use templates)"},
  {"workers: 1\n---\nworkers: 2\n",
   "b2streamd.yaml:2:1: only one YAML document is allowed"},
  {"data_dir: \"a\\0b\"\n",
   "b2streamd.yaml:1:11: string contains a NUL character"},
  {"streams:\n  a:\n    b2nd:\n      shape: [[1]]\n",
   "b2streamd.yaml:4:15: nesting deeper than the configuration schema "
   "allows (5 levels)"},
  /* templates */
  {"streams:\n  a:\n    template: detectr\ntemplates:\n  detector: {}\n",
   "b2streamd.yaml:3:15: streams.a.template: unknown template 'detectr' (did "
   "you mean 'detector'?)"},
  {"templates:\n  t:\n    template: default\n",
   "b2streamd.yaml:3:5: templates.t: 'template' is not allowed in a "
   "template"},
  {"templates:\n  t:\n    path: ../{name}\n",
   "b2streamd.yaml:3:11: templates.t.path: '../t' is not a path inside "
   "data_dir"},
  /* names */
  {"streams:\n  a/b: {}\n", "b2streamd.yaml:2:3: streams: invalid name 'a/b' "
   "(1..64 characters of A-Z a-z 0-9 . _ -, not starting with '.')"},
  {"templates:\n  '..': {}\n", "b2streamd.yaml:2:3: templates: invalid name "
   "'..' (1..64 characters of A-Z a-z 0-9 . _ -, not starting with '.')"},
  {"streams:\n  \"caf\\xe9\": {}\n", "b2streamd.yaml:2:3: streams: invalid "
   "name 'caf\\xc3\\xa9' (1..64 characters of A-Z a-z 0-9 . _ -, not "
   "starting with '.')"},
  /* paths */
  {"streams:\n  a:\n    path: ../x\n",
   "b2streamd.yaml:3:11: streams.a.path: '../x' is not a path inside "
   "data_dir"},
  {"streams:\n  a:\n    path: sub/../../x\n",
   "b2streamd.yaml:3:11: streams.a.path: 'sub/../../x' is not a path inside "
   "data_dir"},
  {"streams:\n  a:\n    path: /etc/passwd\n",
   "b2streamd.yaml:3:11: streams.a.path: '/etc/passwd' is not a path inside "
   "data_dir"},
  {"streams:\n  a:\n    path: " BASE "/database/x\n",
   "b2streamd.yaml:3:11: streams.a.path: '" BASE "/database/x' is not a path "
   "inside data_dir"},
  {"streams:\n  a:\n    path: ./.\n",
   "b2streamd.yaml:3:11: streams.a.path: './.' is not a path inside "
   "data_dir"},
  {"streams:\n  a:\n    path: ''\n",
   "b2streamd.yaml:3:11: streams.a.path: must not be empty"},
  {"streams:\n  a: {}\n  b:\n    path: a.b2frame/c\n",
   "b2streamd.yaml:4:11: streams.b.path: 'a.b2frame/c' clashes with the path "
   "of stream 'a'"},
  {"streams:\n  a: {path: x}\n  b: {path: ./x}\n",
   "b2streamd.yaml:3:13: streams.b.path: 'x' clashes with the path of stream "
   "'a'"},
  {"data_dir: ''\n", "b2streamd.yaml:1:11: data_dir: must not be empty"},
  /* lists */
  {"listen: []\n", "b2streamd.yaml:1:9: listen: at least 1 item needed"},
  {"streams:\n  a:\n    filters: [delta, delta, delta, delta, delta, delta, "
   "delta]\n",
   "b2streamd.yaml:3:14: streams.a.filters: at most 6 items, got 7"},
  {"listen: ['tcp://host']\n",
   "b2streamd.yaml:1:10: listen[0]: 'tcp://host': expected tcp://HOST:PORT"},
  {"listen: ['tcp://host:0']\n", "b2streamd.yaml:1:10: listen[0]: "
   "'tcp://host:0': the port must be 1..65535 or *"},
  {"listen: ['udp://host:9']\n", "b2streamd.yaml:1:10: listen[0]: "
   "'udp://host:9': expected an ipc:// or tcp:// endpoint"},
  {"listen:\n  - ipc://ok.sock\n  - ipc://"
   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
   "aaaaaaaaaaaaaaaaaaaaaaaa\n",
   "b2streamd.yaml:3:5: listen[1]: 'ipc://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' in "
   "run_dir makes a socket path longer than 107 bytes"},
  /* filters */
  {"streams:\n  a:\n    filters: [shuffle, delta]\n    filters_meta: [0]\n",
   "b2streamd.yaml:4:19: streams.a.filters_meta: has 1 items but filters "
   "has 2"},
  {"streams:\n  a:\n    filters: [truncprec]\n",
   "b2streamd.yaml:3:14: streams.a.filters: truncprec needs typesize 4 or 8 "
   "(floats), not 2"},
  {"streams:\n  a:\n    typesize: 4\n    filters: [truncprec]\n"
   "    filters_meta: [30]\n",
   "b2streamd.yaml:5:20: streams.a.filters_meta[0]: truncprec keeps 1..23 "
   "bits (or drops 1..22 with a negative value), not 30"},
  {"streams:\n  a:\n    filters: [shuffle]\n    filters_meta: [-1]\n",
   "b2streamd.yaml:4:20: streams.a.filters_meta[0]: negative values are for "
   "truncprec only"},
  /* b2nd */
  {"streams:\n  a:\n    b2nd: {}\n",
   "b2streamd.yaml:3:11: streams.a.b2nd.shape: required with b2nd"},
  {"streams:\n  a:\n    b2nd:\n      shape: [4, 4]\n",
   "b2streamd.yaml:4:7: streams.a.b2nd.chunkshape: required with b2nd"},
  {"streams:\n  a:\n    b2nd: {shape: [0, 4], chunkshape: [1]}\n",
   "b2streamd.yaml:3:39: streams.a.b2nd.chunkshape: has 1 dimension, shape "
   "has 2"},
  {"streams:\n  a:\n    b2nd: {shape: [9, 0], chunkshape: [1, 1]}\n",
   "b2streamd.yaml:3:23: streams.a.b2nd.shape[1]: only the first dimension "
   "may be 0"},
  {"streams:\n  a:\n    b2nd: {shape: [8], chunkshape: [4], blockshape: [8]}"
   "\n", "b2streamd.yaml:3:54: streams.a.b2nd.blockshape[0]: 8 is larger "
   "than the chunkshape's 4"},
  /* square blocks that do not tile the image: c-blosc2 would pad it */
  {"streams:\n  a:\n    b2nd: {shape: [0, 100, 100], chunkshape: [1, 100, "
   "100], blockshape: [1, 32, 32]}\n", "b2streamd.yaml:3:73: "
   "streams.a.b2nd.blockshape: dimension 1: 32 does not divide the chunk's "
   "100 (blocks that are not runs of the chunk's C order must)"},
  {"streams:\n  a:\n    typesize: 4\n    b2nd:\n      shape: [8]\n"
   "      chunkshape: [8]\n      dtype: '<u2'\n",
   "b2streamd.yaml:7:14: streams.a.b2nd.dtype: '<u2' has 2-byte items but "
   "typesize is 4"},
  {"streams:\n  a:\n    blocksize: 64k\n    b2nd: {shape: [10], chunkshape: "
   "[10]}\n", "b2streamd.yaml:3:16: streams.a.blocksize: 65536 disagrees "
   "with b2nd.blockshape (20 bytes)"},
  {"max_buffer: 1M\nstreams:\n  a:\n    b2nd: {shape: [0, 8192], "
   "chunkshape: [1, 8192]}\n    typesize: 255\n",
   "b2streamd.yaml:4:42: streams.a.b2nd.chunkshape: a chunk of these items "
   "is larger than max_buffer (1048576 bytes)"},
  {"templates:\n  t:\n    typesize: 4\n    b2nd: {shape: [4], chunkshape: "
   "[4], dtype: '<f4'}\nstreams:\n  a:\n    template: t\n    typesize: 8\n",
   "b2streamd.yaml:4:48: streams.a.b2nd.dtype: '<f4' has 4-byte items but "
   "typesize is 8 (set in templates.t)"},
  /* daemon cross-checks */
  {"curve:\n  secret_key_file: k\n",
   "b2streamd.yaml:2:3: curve.authorized_keys_file: required with curve"},
  {"memory_limit: 32M\n", "b2streamd.yaml:1:15: memory_limit: 32MiB is "
   "smaller than max_buffer (64MiB)"},
  {"memory_limit: 32M\nmax_buffer: 33M\n", "b2streamd.yaml:2:13: "
   "max_buffer: 33MiB is larger than memory_limit (32MiB)"},
};

static void test_error_messages(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    parse_err(errors[i].yaml, errors[i].msg);
}

static char *repeat(const char *head, const char *unit, size_t n,
                    const char *tail) {
  size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
  char *s = malloc(hl + ul * n + tl + 1);
  assert_non_null(s);
  memcpy(s, head, hl);
  for (size_t i = 0; i < n; i++)
    memcpy(s + hl + i * ul, unit, ul);
  memcpy(s + hl + n * ul, tail, tl + 1);
  return s;
}

static void test_limits(void **state) {
  (void)state;
  /* Strings: 4096 bytes pass the reader, 4097 do not. */
  char *s = repeat("streams:\n  a:\n    b2nd: {shape: [1], chunkshape: [1], "
                   "dtype: '", "x", 4096, "'}\n");
  b2s_config *cfg = NULL;
  assert_int_equal(b2s_config_parse(s, strlen(s), "f", BASE, &cfg, &ed), B2S_E_CONFIG);
  assert_string_equal(ed.text, "f:3:48: streams.a.b2nd.dtype: longer than 63 "
                           "bytes");
  free(s);
  s = repeat("data_dir: ", "y", 4097, "\n");
  parse_err(s, "b2streamd.yaml:1:11: string longer than 4096 bytes");
  free(s);

  /* 1024 streams load, 1025 do not (entries of one mapping). */
  char *text = malloc(1200 * 16 + 32);
  assert_non_null(text);
  size_t o = (size_t)sprintf(text, "streams:\n");
  for (int i = 0; i < 1024; i++)
    o += (size_t)sprintf(text + o, "  s%d: {}\n", i);
  cfg = parse_ok(text);
  size_t n;
  const b2s_stream_cfg *v = b2s_config_streams(cfg, &n);
  assert_int_equal(n, 1024);
  assert_string_equal(v[1023].name, "s1023");
  assert_string_equal(v[1023].path, "s1023.b2frame");
  b2s_config_free(cfg);
  sprintf(text + o, "  s1024: {}\n");
  parse_err(text, "b2streamd.yaml:1026:3: more than 1024 entries in one "
                  "mapping");
  free(text);

  /* Documents over 1 MiB are refused before parsing. */
  size_t big = B2S_CONFIG_TEXT_MAX + 1;
  char *doc = malloc(big);
  assert_non_null(doc);
  memset(doc, '#', big);
  cfg = (b2s_config *)&cfg;
  assert_int_equal(b2s_config_parse(doc, big, "f", BASE, &cfg, &ed), B2S_E_CONFIG);
  assert_null(cfg);
  assert_string_equal(ed.text, "f: larger than 1048576 bytes");
  /* Exactly 1 MiB (one long comment line) is fine. */
  memset(doc, ' ', big - 1);
  doc[0] = '#';
  doc[big - 2] = '\n';
  cfg = NULL;
  assert_int_equal(b2s_config_parse(doc, big - 1, "f", BASE, &cfg, &ed), 0);
  b2s_config_free(cfg);
  free(doc);
}

/* ---- size units ----------------------------------------------------------- */

static void test_size_units(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int64_t bytes;
  } sizes[] = {
    {"1024", 1024}, {"123456", 123456}, {"64k", 65536}, {"64K", 65536},
    {"64KiB", 65536}, {"16M", 16 * MIB}, {"16MiB", 16 * MIB},
    {"16 MiB", 16 * MIB}, {"1G", 1024 * MIB}, {"1GiB", 1024 * MIB},
    {"2147483584", 2147483584}, {"'8k'", 8192},
    /* decimal units */
    {"16MB", 16000000}, {"16KB", 16000}, {"16kB", 16000},
    {"2 GB", 2000000000}, {"1048576 B", 1048576},
  };
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    char yaml[128];
    snprintf(yaml, sizeof yaml, "max_buffer: %s\nmemory_limit: 1T\n",
             sizes[i].text);
    b2s_config *cfg = parse_ok(yaml);
    assert_int_equal(b2s_config_daemon(cfg)->max_buffer, sizes[i].bytes);
    assert_int_equal(b2s_config_daemon(cfg)->memory_limit, 1024 * 1024 * MIB);
    b2s_config_free(cfg);
  }
  static const char *const bad[] = {"16mb", "16m", "16 ", "k", "0x10",
                                    "1e6", "16Kb", "16 M i B", "+5",
                                    "16  MiB", " 16", "16kiB", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char yaml[128], msg[256];
    snprintf(yaml, sizeof yaml, "max_buffer: \"%s\"\n", bad[i]);
    snprintf(msg, sizeof msg, "b2streamd.yaml:1:13: max_buffer: '%s' is not "
             "a size (" B2S_SIZE_SYNTAX ")", bad[i]);
    parse_err(yaml, msg);
  }
}

/* ---- templates ------------------------------------------------------------ */

static const char inherit_yaml[] =
    "templates:\n"
    "  t:\n"
    "    codec: lz4\n"
    "    clevel: 3\n"
    "    path: cams/{name}.b2frame\n"
    "    filters: [delta, shuffle]\n"
    "    durability: {ack: fsync, group_count: 8}\n"
    "    b2nd: {shape: [0, 8], chunkshape: [2, 8], dtype: '<i2'}\n"
    "  default:\n"
    "    clevel: 9\n"
    "streams:\n"
    "  x:\n"
    "    template: t\n"
    "    clevel: 7\n"
    "    durability: {group_count: 4}\n"
    "  flat:\n"
    "    template: t\n"
    "    b2nd: null\n"
    "    filters: [bitshuffle]\n"
    "  plain: ~\n";

static void test_templates_and_inheritance(void **state) {
  (void)state;
  b2s_config *cfg = parse_ok(inherit_yaml);
  const b2s_stream_cfg *x = stream(cfg, "x");
  assert_string_equal(x->template_name, "t");
  assert_int_equal(x->cparams.codec, B2S_CODEC_LZ4);     /* template */
  assert_int_equal(x->cparams.clevel, 7);                /* own */
  assert_int_equal(x->durability.ack, B2S_ACK_FSYNC);    /* template, nested */
  assert_int_equal(x->durability.group_count, 4);        /* own, nested */
  assert_int_equal(x->durability.group_interval_ms, 50); /* schema default */
  assert_string_equal(x->path, "cams/x.b2frame");
  assert_string_equal(x->full_path, BASE "/data/cams/x.b2frame");
  static const uint8_t two[6] = {0, 0, 0, 0, B2S_FILTER_DELTA,
                                 B2S_FILTER_SHUFFLE};
  assert_memory_equal(x->cparams.filters, two, 6);
  assert_true(x->b2nd.enabled);
  assert_int_equal(x->b2nd.ndim, 2);
  assert_int_equal(x->b2nd.nblockshape, 2);      /* from the chunkshape */
  assert_int_equal(x->b2nd.blockshape[0], 2);
  assert_int_equal(x->cparams.blocksize, 2 * 8 * 2);

  const b2s_stream_cfg *flat = stream(cfg, "flat");
  assert_false(flat->b2nd.enabled);
  assert_int_equal(flat->cparams.blocksize, 0);
  assert_int_equal(flat->nfilters, 1);
  assert_int_equal(flat->cparams.filters[5], B2S_FILTER_BITSHUFFLE);
  assert_int_equal(flat->cparams.filters[4], 0);

  /* No template key: the file's "default" template. */
  const b2s_stream_cfg *plain = stream(cfg, "plain");
  assert_string_equal(plain->template_name, "default");
  assert_int_equal(plain->cparams.clevel, 9);
  assert_int_equal(plain->cparams.codec, B2S_CODEC_ZSTD);
  assert_string_equal(plain->path, "plain.b2frame");

  /* The template itself keeps its placeholder and does not resolve. */
  const b2s_stream_cfg *t = b2s_config_template_find(cfg, "t");
  assert_string_equal(t->path, "cams/{name}.b2frame");
  assert_string_equal(t->full_path, "");
  assert_int_equal(t->b2nd.nblockshape, 0);
  size_t nt;
  b2s_config_templates(cfg, &nt);
  assert_int_equal(nt, 2);

  /* Run-time creation. */
  b2s_stream_cfg s;
  assert_int_equal(b2s_config_stream_from_template(cfg, "t", "cam7", &s), 0);
  assert_string_equal(s.name, "cam7");
  assert_string_equal(s.template_name, "t");
  assert_string_equal(s.full_path, BASE "/data/cams/cam7.b2frame");
  assert_int_equal(s.cparams.clevel, 3);
  assert_int_equal(s.cparams.blocksize, 32);
  assert_string_equal(s.b2nd.dtype, "<i2");
  assert_int_equal(b2s_config_stream_from_template(cfg, NULL, "d1", &s), 0);
  assert_int_equal(s.cparams.clevel, 9);
  assert_string_equal(s.full_path, BASE "/data/d1.b2frame");
  assert_int_equal(b2s_config_stream_from_template(cfg, "nope", "d1", &s),
                   B2S_E_NOTEMPLATE);
  assert_int_equal(b2s_config_stream_from_template(cfg, "t", "../d1", &s),
                   B2S_E_STREAM_NAME);
  assert_int_equal(b2s_config_stream_from_template(cfg, "t", "", &s),
                   B2S_E_STREAM_NAME);
  /* Equal to the same stream configured in the file. */
  assert_int_equal(b2s_config_stream_from_template(cfg, "t", "x", &s), 0);
  assert_false(b2s_stream_cfg_equal(&s, x));   /* x has its own clevel */
  s.cparams.clevel = 7;
  s.durability.group_count = 4;
  assert_true(b2s_stream_cfg_equal(&s, x));
  b2s_config_free(cfg);
}

static void test_template_filters_meta_reset(void **state) {
  (void)state;
  /* A stream that changes the filters drops the template's parameters. */
  b2s_config *cfg = parse_ok(
      "templates:\n  f:\n    typesize: 4\n    filters: [truncprec, shuffle]\n"
      "    filters_meta: [10, 0]\n"
      "streams:\n  a: {template: f}\n  b: {template: f, filters: [shuffle]}\n"
      "  c: {template: f, filters_meta: [-3, 0]}\n");
  const b2s_stream_cfg *a = stream(cfg, "a");
  assert_int_equal(a->cparams.filters[4], B2S_FILTER_TRUNC_PREC);
  assert_int_equal(a->cparams.filters_meta[4], 10);
  const b2s_stream_cfg *b = stream(cfg, "b");
  assert_int_equal(b->nfilters_meta, 0);
  assert_int_equal(b->cparams.filters[5], B2S_FILTER_SHUFFLE);
  assert_int_equal(b->cparams.filters[4], 0);
  const b2s_stream_cfg *c = stream(cfg, "c");
  assert_int_equal((int8_t)c->cparams.filters_meta[4], -3);
  b2s_config_free(cfg);
}

/* ---- names and paths ------------------------------------------------------ */

static void test_stream_names(void **state) {
  (void)state;
  char max[66];
  memset(max, 'n', 64);
  max[64] = '\0';
  static const char *const good[] = {"a", "A-b_c.9", "demo-sparse", "x..y",
                                     "-lead", "9"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    assert_int_equal(b2s_stream_name_check(good[i]), 0);
  assert_int_equal(b2s_stream_name_check(max), 0);
  max[64] = 'n';
  max[65] = '\0';
  static const char *const bad[] = {"", ".", "..", ".hidden", "../x", "a/b",
                                    "/a", "a b", "caf\xc3\xa9", "a\n",
                                    "a\\b", "{name}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (b2s_stream_name_check(bad[i]) != B2S_E_STREAM_NAME)
      fail_msg("accepted '%s'", bad[i]);
  assert_int_equal(b2s_stream_name_check(max), B2S_E_STREAM_NAME);
  assert_int_equal(b2s_stream_name_check(NULL), B2S_E_STREAM_NAME);

  /* The same rules for keys of the file. */
  char yaml[160], msg[256];
  snprintf(yaml, sizeof yaml, "streams:\n  %s: {}\n", max);
  snprintf(msg, sizeof msg, "b2streamd.yaml:2:3: streams: invalid name '%s' "
           "(1..64 characters of A-Z a-z 0-9 . _ -, not starting with '.')",
           max);
  parse_err(yaml, msg);
  parse_err("streams:\n  '': {}\n", "b2streamd.yaml:2:3: streams: invalid "
            "name '' (1..64 characters of A-Z a-z 0-9 . _ -, not starting "
            "with '.')");
  parse_err("streams:\n  .: {}\n", "b2streamd.yaml:2:3: streams: invalid "
            "name '.' (1..64 characters of A-Z a-z 0-9 . _ -, not starting "
            "with '.')");
  parse_err("streams:\n  '../x': {}\n", "b2streamd.yaml:2:3: streams: invalid "
            "name '../x' (1..64 characters of A-Z a-z 0-9 . _ -, not "
            "starting with '.')");
}

static void test_path_resolution(void **state) {
  (void)state;
  static const struct {
    const char *path, *out;
  } ok[] = {
    {"x.b2frame", "/d/x.b2frame"},  {"a/../b", "/d/b"},
    {"./a//b/", "/d/a/b"},          {"/d/x", "/d/x"},
    {"/d//sub/./y", "/d/sub/y"},    {"a/b/../../c", "/d/c"},
    {"..x", "/d/..x"},
  };
  char out[256];
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int rc = b2s_stream_path_resolve("/d", ok[i].path, out, sizeof out);
    if (rc != 0 || strcmp(out, ok[i].out) != 0)
      fail_msg("%s -> %d %s", ok[i].path, rc, out);
  }
  static const char *const bad[] = {"", ".", "..", "../x", "a/../../x",
                                    "/d", "/d/", "/d/..", "/d/../etc",
                                    "/dx/y", "/etc/passwd", "a/..", "/"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (b2s_stream_path_resolve("/d", bad[i], out, sizeof out) != B2S_E_CONFIG)
      fail_msg("accepted '%s'", bad[i]);
  assert_int_equal(b2s_stream_path_resolve("/", "x", out, sizeof out), 0);
  assert_string_equal(out, "/x");
  assert_int_equal(b2s_stream_path_resolve("/d", "abcdef", out, 8),
                   -ENAMETOOLONG);
  assert_int_equal(b2s_stream_path_resolve("rel", "x", out, sizeof out),
                   B2S_E_ARG);

  /* Relative data_dir, absolute inside it, and "{name}" in a template. */
  b2s_config *cfg = parse_ok("data_dir: ../frames\nstreams:\n  a:\n"
                             "    path: " BASE "/../frames/deep/./a\n");
  assert_string_equal(b2s_config_daemon(cfg)->data_dir, "/srv/frames");
  assert_string_equal(stream(cfg, "a")->path, "deep/a");
  assert_string_equal(stream(cfg, "a")->full_path, "/srv/frames/deep/a");
  b2s_config_free(cfg);
}

/* ---- dump, equality --------------------------------------------------------- */

static char *dump(const b2s_config *cfg, unsigned flags) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(b2s_config_dump(cfg, f, flags), 0);
  fclose(f);
  return buf;
}

static void assert_configs_equal(const b2s_config *a, const b2s_config *b) {
  assert_true(b2s_daemon_cfg_equal(b2s_config_daemon(a), b2s_config_daemon(b)));
  assert_true(b2s_cluster_cfg_equal(b2s_config_cluster(a),
                                    b2s_config_cluster(b)));
  size_t na, nb;
  const b2s_stream_cfg *sa = b2s_config_streams(a, &na);
  const b2s_stream_cfg *sb = b2s_config_streams(b, &nb);
  assert_int_equal(na, nb);
  for (size_t i = 0; i < na; i++)
    if (!b2s_stream_cfg_equal(&sa[i], &sb[i]))
      fail_msg("stream %s differs", sa[i].name);
  sa = b2s_config_templates(a, &na);
  sb = b2s_config_templates(b, &nb);
  assert_int_equal(na, nb);
  for (size_t i = 0; i < na; i++)
    if (!b2s_stream_cfg_equal(&sa[i], &sb[i]))
      fail_msg("template %s differs", sa[i].name);
}

static const char rich_yaml[] =
    "listen: ['ipc://a.sock', 'tcp://[::1]:7000', 'ipc://@abstract', "
    "'tcp://*:*']\n"
    "run_dir: \"r\\\"u n\\\\ \\u00e9\\u2028\\t\"\n"
    "data_dir: /var/tmp/b2\n"
    "workers: 3\n"
    "memory_limit: 3G\n"
    "max_buffer: 12345\n"
    "log_level: debug\n"
    "slow_disk_ms: 7\n"
    "shm: {slots: 4, slot_size: 12k}\n"
    "curve: {secret_key_file: keys/s, authorized_keys_file: /etc/ak}\n"
    "templates:\n"
    "  cam:\n"
    "    typesize: 4\n"
    "    filters: [truncprec, bitshuffle]\n"
    "    filters_meta: [-4, 0]\n"
    "    b2nd: {shape: [0, 3, 5], chunkshape: [1, 3, 5], blockshape: [1, 1, 5]}\n"
    "    split: never\n"
    "  -dash: {format: sparse}\n"
    "streams:\n"
    "  one:\n"
    "    template: cam\n"
    "    codec: lz4hc\n"
    "    b2nd: {dtype: '<f4'}\n"
    "    blocksize: 20\n"
    "  two:\n"
    "    template: cam\n"
    "    b2nd: null\n"
    "    backpressure: drop-newest\n"
    "    queue_depth: 1\n"
    "    durability: {ack: receipt, group_count: 1000000, "
    "group_interval_ms: 0}\n"
    "  three:\n"
    "    path: \"sub dir/three \\U0001F600.b2frame\"\n"
    "    codec: blosclz\n"
    "    clevel: 0\n"
    "    filters: []\n";

static void roundtrip(const char *yaml) {
  b2s_config *a = parse_ok(yaml);
  char *text = dump(a, B2S_DUMP_HELP);
  b2s_config *b = NULL;
  if (b2s_config_parse(text, strlen(text), "dump", BASE, &b, &ed) != 0)
    fail_msg("dump does not load: %s\n%s", ed.text, text);
  assert_configs_equal(a, b);
  char *again = dump(b, B2S_DUMP_HELP);
  assert_string_equal(text, again);   /* the dump is a fixed point */
  free(again);
  free(text);
  b2s_config_free(b);
  b2s_config_free(a);
}

static void test_dump_roundtrip(void **state) {
  (void)state;
  roundtrip("");
  roundtrip("group: beam_line-2.x$\n");
  b2s_config *g = parse_ok("group: lab\n"), *none = parse_ok("");
  assert_string_equal(b2s_config_daemon(g)->group, "lab");
  assert_string_equal(b2s_config_daemon(none)->group, "");
  assert_false(b2s_daemon_cfg_equal(b2s_config_daemon(g),
                                    b2s_config_daemon(none)));
  b2s_config_free(g);
  b2s_config_free(none);
  roundtrip(inherit_yaml);
  roundtrip(rich_yaml);
  b2s_config *cfg = parse_ok(rich_yaml);
  const b2s_daemon_cfg *d = b2s_config_daemon(cfg);
  assert_string_equal(d->run_dir, BASE "/r\"u n\\ \xc3\xa9\xe2\x80\xa8\t");
  assert_string_equal(d->curve.secret_key_file, BASE "/keys/s");
  assert_string_equal(d->listen[2], "ipc://@abstract");
  assert_int_equal(stream(cfg, "one")->cparams.blocksize, 20);
  assert_string_equal(stream(cfg, "three")->path,
                      "sub dir/three \xf0\x9f\x98\x80.b2frame");
  char *text = dump(cfg, 0);
  /* spot checks of the text: sizes with units, escapes, null groups */
  assert_non_null(strstr(text, "memory_limit: 3GiB\n"));
  assert_non_null(strstr(text, "max_buffer: 12345\n"));
  assert_non_null(strstr(text, "  slot_size: 12KiB\n"));
  assert_non_null(strstr(text, "\\u2028"));
  assert_non_null(strstr(text, "    b2nd: null\n"));
  assert_non_null(strstr(text, "  \"-dash\":\n"));
  assert_non_null(strstr(text, "    filters_meta: [-4, 0]\n"));
  free(text);
  b2s_config_free(cfg);

  /* The shipped file, too. */
  b2s_config *shipped = NULL;
  assert_int_equal(b2s_config_load(getenv("B2S_DEFAULT_CONFIG"), &shipped, &ed), 0);
  text = dump(shipped, 0);
  b2s_config *back = NULL;
  assert_int_equal(b2s_config_parse(text, strlen(text), "dump", "/elsewhere",
                                    &back, &ed), 0);
  assert_configs_equal(shipped, back);
  free(text);
  b2s_config_free(back);
  b2s_config_free(shipped);
}

/* ---- series metadata defaults -------------------------------------------- */

static const char series_yaml[] =
    "templates:\n"
    "  beam:\n"
    "    series:\n"
    "      sample: Fe2O3\n"
    "      energy_kev: 12.4\n"
    "      n: 3\n"
    "      neg: -5\n"
    "      on: true\n"
    "      roi: [0, 10, 2.5, x]\n"
    "      quoted: \"12\"\n"
    "streams:\n"
    "  a: {template: beam}\n"
    "  b: {template: beam, series: {operator: ana}}\n"
    "  c: {template: beam, series: null}\n"
    "  d: {}\n";

/* msgpack of the template's series, shortest forms as python's packb */
static const uint8_t beam_series[] = {
    0x87,
    0xa6, 's', 'a', 'm', 'p', 'l', 'e', 0xa5, 'F', 'e', '2', 'O', '3',
    0xaa, 'e', 'n', 'e', 'r', 'g', 'y', '_', 'k', 'e', 'v',
    0xcb, 0x40, 0x28, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcd,
    0xa1, 'n', 0x03,
    0xa3, 'n', 'e', 'g', 0xfb,
    0xa2, 'o', 'n', 0xc3,
    0xa3, 'r', 'o', 'i', 0x94, 0x00, 0x0a,
    0xcb, 0x40, 0x04, 0, 0, 0, 0, 0, 0, 0xa1, 'x',
    0xa6, 'q', 'u', 'o', 't', 'e', 'd', 0xa2, '1', '2'};

static void test_series_defaults(void **state) {
  (void)state;
  b2s_config *cfg = parse_ok(series_yaml);
  const b2s_stream_cfg *a = stream(cfg, "a");   /* inherits */
  assert_int_equal(a->series_len, sizeof beam_series);
  assert_memory_equal(a->series, beam_series, sizeof beam_series);
  static const uint8_t own[] = {0x81, 0xa8, 'o', 'p', 'e', 'r', 'a', 't',
                                'o', 'r', 0xa3, 'a', 'n', 'a'};
  const b2s_stream_cfg *b = stream(cfg, "b");   /* replaces, no merge */
  assert_int_equal(b->series_len, sizeof own);
  assert_memory_equal(b->series, own, sizeof own);
  assert_int_equal(stream(cfg, "c")->series_len, 0);   /* switched off */
  assert_int_equal(stream(cfg, "d")->series_len, 0);   /* none configured */
  assert_false(b2s_stream_cfg_equal(a, b));

  /* Run-time streams inherit too, and compare equal to a. */
  b2s_stream_cfg s;
  assert_int_equal(b2s_config_stream_from_template(cfg, "beam", "a", &s), 0);
  assert_int_equal(s.series_len, sizeof beam_series);
  assert_true(b2s_stream_cfg_equal(&s, a));
  s.series[s.series_len - 1] = '3';
  assert_false(b2s_stream_cfg_equal(&s, a));

  char *text = dump(cfg, 0);
  assert_non_null(strstr(text, "      \"energy_kev\": 12.4\n"));
  assert_non_null(strstr(text, "      \"roi\": [0, 10, 2.5, \"x\"]\n"));
  assert_non_null(strstr(text, "      \"neg\": -5\n"));
  assert_non_null(strstr(text, "      \"on\": true\n"));
  assert_non_null(strstr(text, "      \"quoted\": \"12\"\n"));
  assert_non_null(strstr(text, "    series: {}\n"));
  free(text);
  b2s_config_free(cfg);
  roundtrip(series_yaml);
  roundtrip("streams:\n  f: {series: {x: 1.0, y: -.inf, z: 1e3, w: "
            "[true, \"a\\u2028b\"]}}\n");
}

static void test_series_errors(void **state) {
  (void)state;
  parse_err("streams:\n  s:\n    series: [1, 2]\n",
            "b2streamd.yaml:3:13: streams.s.series: expected a mapping of "
            "keys to values, got a list");
  parse_err("streams:\n  s:\n    series: {a: null}\n",
            "b2streamd.yaml:3:17: streams.s.series.a: null is not a series "
            "value (leave the key out)");
  parse_err("streams:\n  s:\n    series: {a: {b: 1}}\n",
            "b2streamd.yaml:3:17: streams.s.series.a: expected a scalar, got "
            "a mapping");
  parse_err("streams:\n  s:\n    series: {a: [1, [2]]}\n",
            "b2streamd.yaml:3:21: nesting deeper than the configuration "
            "schema allows (5 levels)");
  parse_err("templates:\n  t:\n    series: {n: 99999999999999999999}\n",
            "b2streamd.yaml:3:17: templates.t.series.n: 99999999999999999999 "
            "is out of the 64-bit integer range");
  char key[66];
  memset(key, 'k', 65);
  key[65] = '\0';
  char yaml[4096 * 3];
  snprintf(yaml, sizeof yaml, "streams:\n  s:\n    series: {%s: 1}\n", key);
  char want[256];
  snprintf(want, sizeof want, "b2streamd.yaml:3:14: streams.s.series: "
           "series key '%s' is not 1..64 bytes of UTF-8", key);
  parse_err(yaml, want);
  parse_err("streams:\n  s:\n    series:\n      a: 1\n      a: 2\n",
            "b2streamd.yaml:5:7: streams.s.series: duplicate key 'a' (first "
            "at line 4)");
  /* Too large for the stream's buffer: map16 header (3 bytes) and 80 times
   * fixstr key (4) + str8 value (2 + 60). */
  size_t o = (size_t)snprintf(yaml, sizeof yaml, "templates:\n  t:\n    "
                              "series:\n");
  for (int i = 0; i < 80; i++)
    o += (size_t)snprintf(yaml + o, sizeof yaml - o, "      k%02d: v%059d\n",
                          i, 0);
  b2s_config *cfg = NULL;
  assert_int_equal(b2s_config_parse(yaml, strlen(yaml), "b2streamd.yaml",
                                    BASE, &cfg, &ed),
                   B2S_E_CONFIG);
  assert_null(cfg);
  assert_string_equal(ed.text, "b2streamd.yaml:4:7: templates.t.series: encodes "
                           "to 5283 bytes, more than 4096");
}

static void test_equality_sees_changes(void **state) {
  (void)state;
  b2s_config *a = parse_ok(rich_yaml);
  const b2s_stream_cfg *one = stream(a, "one");
  b2s_stream_cfg c = *one;
  assert_true(b2s_stream_cfg_equal(&c, one));
  c.b2nd.blockshape[2] = 4;
  assert_false(b2s_stream_cfg_equal(&c, one));
  c = *one;
  c.cparams.filters_meta[4] = 3;
  assert_false(b2s_stream_cfg_equal(&c, one));
  c = *one;
  c.durability.group_interval_ms++;
  assert_false(b2s_stream_cfg_equal(&c, one));
  c = *one;
  c.full_path[1] = 'X';
  assert_false(b2s_stream_cfg_equal(&c, one));
  /* Keys of a switched-off group do not count. */
  const b2s_stream_cfg *two = stream(a, "two");
  c = *two;
  c.b2nd.shape[1] = 99;
  assert_true(b2s_stream_cfg_equal(&c, two));

  b2s_daemon_cfg d = *b2s_config_daemon(a);
  assert_true(b2s_daemon_cfg_equal(&d, b2s_config_daemon(a)));
  d.listen[3][6] = 'x';
  assert_false(b2s_daemon_cfg_equal(&d, b2s_config_daemon(a)));
  d = *b2s_config_daemon(a);
  d.curve.enabled = false;
  assert_false(b2s_daemon_cfg_equal(&d, b2s_config_daemon(a)));

  /* A reload that changes one stream's clevel changes only that stream. */
  b2s_config *b = parse_ok("streams:\n  p: {clevel: 1}\n  q: {clevel: 2}\n");
  b2s_config *b2 = parse_ok("streams:\n  p: {clevel: 1}\n  q: {clevel: 3}\n");
  assert_true(b2s_stream_cfg_equal(stream(b, "p"), stream(b2, "p")));
  assert_false(b2s_stream_cfg_equal(stream(b, "q"), stream(b2, "q")));
  b2s_config_free(b2);
  b2s_config_free(b);
  b2s_config_free(a);
}

static void test_b2nd_for_the_frame(void **state) {
  (void)state;
  b2s_config *cfg = parse_ok(rich_yaml);
  b2s_b2nd nd;
  b2s_stream_cfg_b2nd(stream(cfg, "one"), &nd);
  b2s_mpbuf buf;
  b2s_mpbuf_init(&buf);
  assert_int_equal(b2s_b2nd_write(&nd, &buf), 0);
  b2s_b2nd back;
  b2s_frame_error fe;
  assert_int_equal(b2s_b2nd_parse(buf.data, buf.len, 0, &back, &fe), 0);
  assert_int_equal(back.ndim, 3);
  assert_int_equal(back.shape[2], 5);
  assert_int_equal(back.chunkshape[1], 3);
  assert_int_equal(back.blockshape[1], 1);
  assert_int_equal(back.dtype_len, 3);
  assert_memory_equal(back.dtype, "<f4", 3);
  b2s_mpbuf_fini(&buf);
  b2s_config_free(cfg);
}

/* gaps, order and reorder_window: defaults (auto: fill for b2nd streams
 * only), values, bounds, and templates passing them on. */
static void test_gaps_and_order(void **state) {
  (void)state;
  b2s_config *cfg = parse_ok(
      "templates:\n"
      "  t:\n"
      "    order: frame_number\n"
      "    reorder_window: 8\n"
      "streams:\n"
      "  plain: {}\n"
      "  nd:\n"
      "    typesize: 2\n"
      "    b2nd: {shape: [0, 4], chunkshape: [1, 4]}\n"
      "  skipped:\n"
      "    gaps: skip\n"
      "    b2nd: {shape: [0, 4], chunkshape: [1, 4]}\n"
      "  filled:\n"
      "    template: t\n"
      "    gaps: fill\n");
  const b2s_stream_cfg *plain = stream(cfg, "plain");
  assert_int_equal(plain->gaps, B2S_GAPS_AUTO);
  assert_false(b2s_stream_cfg_fill_gaps(plain));
  assert_int_equal(plain->order, B2S_ORDER_ARRIVAL);
  assert_int_equal(plain->reorder_window, 64);
  assert_true(b2s_stream_cfg_fill_gaps(stream(cfg, "nd")));
  assert_false(b2s_stream_cfg_fill_gaps(stream(cfg, "skipped")));
  const b2s_stream_cfg *f = stream(cfg, "filled");
  assert_true(b2s_stream_cfg_fill_gaps(f));
  assert_int_equal(f->order, B2S_ORDER_FRAME_NUMBER);
  assert_int_equal(f->reorder_window, 8);
  b2s_config_free(cfg);
  parse_err("streams:\n  s:\n    reorder_window: 0\n",
            "b2streamd.yaml:3:21: streams.s.reorder_window: 0 is out of "
            "range 1..4096");
}

/* ---- cluster -------------------------------------------------------------- */

static const char cluster_yaml[] =
    "cluster:\n"
    "  storage: objs\n"
    "  rank: 2\n"
    "  ranks: [tcp://n0:7000, tcp://n1:7000, 'ipc:///run/b2/r2.sock']\n"
    "  committer: tcp://head:7100\n"
    "  committer_pub: tcp://head:7101\n"
    "  frames_per_block: 16\n"
    "templates:\n"
    "  dist: {format: distributed, chunk_nbytes: 64k}\n"
    "streams:\n"
    "  img:\n"
    "    format: distributed\n"
    "    typesize: 2\n"
    "    b2nd: {shape: [0, 32, 32], chunkshape: [1, 32, 32]}\n"
    "  raw: {template: dist}\n"
    "  local: {format: sparse}\n";

static void test_cluster_section(void **state) {
  (void)state;
  b2s_config *none = parse_ok("");
  assert_false(b2s_config_cluster(none)->enabled);
  b2s_config_free(none);
  none = parse_ok("cluster: null\n");
  assert_false(b2s_config_cluster(none)->enabled);
  b2s_config_free(none);

  b2s_config *cfg = parse_ok(cluster_yaml);
  const b2s_cluster_cfg *k = b2s_config_cluster(cfg);
  assert_true(k->enabled);
  assert_string_equal(k->storage, BASE "/objs");
  assert_string_equal(k->ceph_conf, "");
  assert_int_equal(k->rank, 2);
  assert_int_equal(k->nranks, 3);
  assert_string_equal(k->ranks[0], "tcp://n0:7000");
  assert_string_equal(k->ranks[2], "ipc:///run/b2/r2.sock");
  assert_string_equal(k->committer, "tcp://head:7100");
  assert_string_equal(k->committer_pub, "tcp://head:7101");
  assert_int_equal(k->frames_per_block, 16);
  const b2s_stream_cfg *img = stream(cfg, "img");
  assert_int_equal(img->format, B2S_FORMAT_DISTRIBUTED);
  assert_int_equal(img->chunk_nbytes, 2 * 32 * 32);   /* from the b2nd chunk */
  assert_int_equal(stream(cfg, "raw")->chunk_nbytes, 64 * 1024);
  assert_int_equal(stream(cfg, "local")->format, B2S_FORMAT_SPARSE);
  /* a stream made at run time from the template */
  b2s_stream_cfg rt;
  assert_int_equal(b2s_config_stream_from_template(cfg, "dist", "run7", &rt),
                   0);
  assert_int_equal(rt.format, B2S_FORMAT_DISTRIBUTED);
  assert_int_equal(rt.chunk_nbytes, 64 * 1024);
  b2s_config_free(cfg);

  cfg = parse_ok("cluster:\n  storage: rados://b2stream\n"
                 "  ceph_conf: /etc/ceph/test.conf\n  rank: 0\n"
                 "  ranks: [tcp://a:1]\n  committer: 'ipc://@commit'\n");
  k = b2s_config_cluster(cfg);
  assert_string_equal(k->storage, "rados://b2stream");
  assert_string_equal(k->ceph_conf, "/etc/ceph/test.conf");
  assert_int_equal(k->frames_per_block, 1);
  assert_string_equal(k->committer_pub, "");
  b2s_config_free(cfg);
  cfg = parse_ok("cluster: {storage: 'file:///srv/objs/../o', rank: 0, "
                 "ranks: [tcp://a:1], committer: tcp://c:2}\n");
  assert_string_equal(b2s_config_cluster(cfg)->storage, "/srv/o");
  b2s_config_free(cfg);
}

/* ---- sources ------------------------------------------------------------- */

static void test_sources(void **state) {
  (void)state;
  size_t n;
  b2s_config *cfg = parse_ok("");
  b2s_config_sources(cfg, &n);
  assert_int_equal(n, 0);
  b2s_config_free(cfg);
  static const char yaml[] =
      "templates:\n  eiger: {typesize: 2}\n"
      "sources:\n"
      "  - kind: dectris-stream2\n"
      "    endpoint: tcp://dcu.example:31001\n"
      "    template: eiger\n"
      "  - {kind: dectris-stream2, endpoint: 'ipc:///run/det2', template: eiger,\n"
      "     name: 'p.{series_unique_id}_{channel}', series_timeout_ms: 5000,\n"
      "     verify: false, max_message: 64, compression: lz4}\n";
  cfg = parse_ok(yaml);
  const b2s_source_cfg *s = b2s_config_sources(cfg, &n);
  assert_int_equal(n, 2);
  assert_int_equal(s[0].kind, B2S_SOURCE_DECTRIS_STREAM2);
  assert_string_equal(s[0].endpoint, "tcp://dcu.example:31001");
  assert_string_equal(s[0].template_name, "eiger");
  assert_string_equal(s[0].name, "{detector}-{series_id}-{channel}");
  assert_int_equal(s[0].series_timeout_ms, 60000);
  assert_int_equal(s[0].verify, 1);
  assert_int_equal(s[0].max_message, 256);
  assert_int_equal(s[0].compression, B2S_SOURCE_BSLZ4);
  assert_string_equal(s[1].name, "p.{series_unique_id}_{channel}");
  assert_int_equal(s[1].series_timeout_ms, 5000);
  assert_int_equal(s[1].verify, 0);
  assert_int_equal(s[1].max_message, 64);
  assert_int_equal(s[1].compression, B2S_SOURCE_LZ4);
  /* the dump loads back to the same sources */
  char *text = dump(cfg, B2S_DUMP_HELP);
  b2s_config *again = parse_ok(text);
  const b2s_source_cfg *t = b2s_config_sources(again, &n);
  assert_int_equal(n, 2);
  assert_memory_equal(s, t, 2 * sizeof *s);
  b2s_config_free(again);
  free(text);
  b2s_config_free(cfg);

  parse_err("templates: {e: {}}\nsources:\n  - {kind: dectris-stream2, template: e}\n",
            "b2streamd.yaml:3:5: sources[0].endpoint: required in a source");
  parse_err("sources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1, template: e}\n",
            "b2streamd.yaml:2:60: sources[0].template: no template named 'e'");
  parse_err("templates: {e: {}}\nsources:\n  - {kind: eiger1, endpoint: tcp://a:1, template: e}\n",
            "b2streamd.yaml:3:12: sources[0].kind: 'eiger1' is not one of dectris-stream2");
  parse_err("templates: {e: {}}\nsources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1,"
            " template: e, name: '{channel}'}\n",
            "b2streamd.yaml:3:69: sources[0].name: must contain {channel} and "
            "{series_id} or {series_unique_id}, so every series and channel gets "
            "a stream of its own");
  parse_err("templates: {e: {}}\nsources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1,"
            " template: e, name: '{chan}{series_id}'}\n",
            "b2streamd.yaml:3:69: sources[0].name: unknown placeholder (known: "
            "{detector}, {series_id}, {series_unique_id}, {channel})");
  parse_err("templates: {e: {}}\nsources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1, template: e}\n"
            "  - {kind: dectris-stream2, endpoint: tcp://a:1, template: e}\n",
            "b2streamd.yaml:4:39: sources[1].endpoint: also the endpoint of sources[0]");
  parse_err("templates: {e: {}}\nsources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1,"
            " template: e, compression: zstd}\n",
            "b2streamd.yaml:3:76: sources[0].compression: 'zstd' is not one of bslz4, lz4");
  parse_err("sources: {a: 1}\n", "b2streamd.yaml:1:10: sources: expected a list of source settings, got a mapping");
}

/* The smallest source (kind and endpoint) takes the built-in template
 * "default", or the one templates: defines under that name. */
static void test_source_minimal(void **state) {
  (void)state;
  size_t n;
  b2s_config *cfg = parse_ok("sources:\n  - {kind: dectris-stream2, endpoint: tcp://dcu:31001}\n");
  const b2s_source_cfg *s = b2s_config_sources(cfg, &n);
  assert_int_equal(n, 1);
  assert_string_equal(s[0].template_name, "default");
  assert_string_equal(s[0].name, "{detector}-{series_id}-{channel}");
  assert_string_equal(s[0].beamline.source_name, "");
  assert_true(s[0].beamline.beam_flux == 0);
  b2s_stream_cfg sc;
  assert_int_equal(b2s_config_stream_from_template(cfg, s[0].template_name,
                                                   "E-1-threshold_1", &sc), 0);
  assert_int_equal(sc.cparams.codec, B2S_CODEC_ZSTD);   /* the built-in */
  b2s_config_free(cfg);
  cfg = parse_ok("templates: {default: {queue_depth: 7}}\n"
                 "sources:\n  - {kind: dectris-stream2, endpoint: tcp://dcu:31001}\n");
  s = b2s_config_sources(cfg, &n);
  assert_int_equal(b2s_config_stream_from_template(cfg, s[0].template_name,
                                                   "E-1-threshold_1", &sc), 0);
  assert_int_equal(sc.queue_depth, 7);
  b2s_config_free(cfg);
  parse_err("sources:\n  - {endpoint: tcp://a:1}\n",
            "b2streamd.yaml:2:5: sources[0].kind: required in a source");
}

/* beamline: the facts, their defaults (not given), the dump, errors. */
static void test_source_beamline(void **state) {
  (void)state;
  size_t n;
  static const char yaml[] =
      "sources:\n"
      "  - kind: dectris-stream2\n"
      "    endpoint: tcp://dcu:31001\n"
      "    beamline:\n"
      "      source_name: Diamond Light Source\n"
      "      source_type: Synchrotron X-ray Source\n"
      "      source_probe: x-ray\n"
      "      instrument_name: I04\n"
      "      sample_name: 'lysozyme, crystal 3'\n"
      "      beam_flux: 2.5e12\n"
      "  - kind: dectris-stream2\n"
      "    endpoint: tcp://dcu:31002\n"
      "    beamline: {sample_name: thaumatin}\n";
  b2s_config *cfg = parse_ok(yaml);
  const b2s_source_cfg *s = b2s_config_sources(cfg, &n);
  assert_int_equal(n, 2);
  assert_string_equal(s[0].beamline.source_name, "Diamond Light Source");
  assert_string_equal(s[0].beamline.source_type, "Synchrotron X-ray Source");
  assert_string_equal(s[0].beamline.source_probe, "x-ray");
  assert_string_equal(s[0].beamline.instrument_name, "I04");
  assert_string_equal(s[0].beamline.sample_name, "lysozyme, crystal 3");
  assert_true(s[0].beamline.beam_flux == 2.5e12);
  assert_string_equal(s[1].beamline.sample_name, "thaumatin");
  assert_string_equal(s[1].beamline.instrument_name, "");
  assert_true(s[1].beamline.beam_flux == 0);
  char *text = dump(cfg, B2S_DUMP_HELP);
  assert_non_null(strstr(text, "beam_flux: 2500000000000.0\n"));
  b2s_config *again = parse_ok(text);
  const b2s_source_cfg *t = b2s_config_sources(again, &n);
  assert_int_equal(n, 2);
  assert_memory_equal(s, t, 2 * sizeof *s);
  b2s_config_free(again);
  free(text);
  b2s_config_free(cfg);
  parse_err("sources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1,"
            " beamline: {source_probe: xray}}\n",
            "b2streamd.yaml:2:75: sources[0].beamline.source_probe: 'xray' is not "
            "one of neutron, photon, x-ray, muon, electron, ultraviolet, "
            "visible light, positron, proton (NXsource/probe)");
  parse_err("sources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1,"
            " beamline: {beam_flux: -1}}\n",
            "b2streamd.yaml:2:72: sources[0].beamline.beam_flux: -1 is out of "
            "range 0..9223372036854775807");
  parse_err("sources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1,"
            " beamline: {beam_flux: lots}}\n",
            "b2streamd.yaml:2:72: sources[0].beamline.beam_flux: expected a "
            "number, got 'lots'");
  parse_err("sources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1,"
            " beamline: {beam_flux: .inf}}\n",
            "b2streamd.yaml:2:72: sources[0].beamline.beam_flux: expected a "
            "number, got '.inf'");
  parse_err("sources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1,"
            " beamline: {sample_name: \"a\\tb\"}}\n",
            "b2streamd.yaml:2:74: sources[0].beamline.sample_name: control "
            "characters are not allowed");
  parse_err("sources:\n  - {kind: dectris-stream2, endpoint: tcp://a:1,"
            " beamline: {flux: 1}}\n",
            "b2streamd.yaml:2:61: sources[0].beamline: unknown key 'flux'");
}

static void test_cluster_example(void **state) {
  (void)state;
  const char *path = getenv("B2S_CLUSTER_EXAMPLE");
  assert_non_null(path);
  b2s_config *cfg = NULL;
  if (b2s_config_load(path, &cfg, &ed) != 0)
    fail_msg("%s", ed.text);
  const b2s_cluster_cfg *k = b2s_config_cluster(cfg);
  assert_true(k->enabled);
  assert_string_equal(k->storage, "rados://b2stream");
  assert_int_equal(k->rank, 1);
  assert_int_equal(k->nranks, 3);
  assert_int_equal(k->frames_per_block, 4);
  const b2s_stream_cfg *d = stream(cfg, "detector");
  assert_int_equal(d->format, B2S_FORMAT_DISTRIBUTED);
  assert_int_equal(d->chunk_nbytes, 512 * 512 * 2);
  assert_int_equal(stream(cfg, "raw")->chunk_nbytes, MIB);
  b2s_config_free(cfg);
  /* the shipped file keeps its cluster commented out */
  path = getenv("B2S_DEFAULT_CONFIG");
  assert_int_equal(b2s_config_load(path, &cfg, &ed), 0);
  assert_false(b2s_config_cluster(cfg)->enabled);
  b2s_config_free(cfg);
}

/* The largest cluster: 1024 ranks, whose count does not fit a byte. */
static void test_cluster_many_ranks(void **state) {
  (void)state;
  size_t cap = 64 + B2S_CLUSTER_MAX_RANKS * 32;
  char *y = malloc(cap);
  assert_non_null(y);
  int n = snprintf(y, cap, "cluster:\n  storage: /o\n  rank: 1023\n"
                   "  committer: tcp://c:1\n  ranks:\n");
  for (int i = 0; i < B2S_CLUSTER_MAX_RANKS; i++)
    n += snprintf(y + n, cap - (size_t)n, "    - tcp://n%d:7000\n", i);
  b2s_config *cfg = parse_ok(y);
  const b2s_cluster_cfg *k = b2s_config_cluster(cfg);
  assert_int_equal(k->nranks, B2S_CLUSTER_MAX_RANKS);
  assert_string_equal(k->ranks[1023], "tcp://n1023:7000");
  b2s_config_free(cfg);
  roundtrip(y);
  snprintf(y + n, cap - (size_t)n, "    - tcp://n%d:7000\n",
           B2S_CLUSTER_MAX_RANKS);
  parse_err(y, "b2streamd.yaml:1030:7: more than 1024 entries in one list");
  free(y);
}

#define CL_OK "  storage: /o\n  rank: 0\n  ranks: [tcp://a:1]\n" \
              "  committer: tcp://c:2\n"

static void test_cluster_errors(void **state) {
  (void)state;
  parse_err("cluster: [a]\n", "b2streamd.yaml:1:10: cluster: expected a "
            "mapping of cluster settings, got a list");
  parse_err("cluster:\n  rank: 0\n  ranks: [tcp://a:1]\n"
            "  committer: tcp://c:2\n",
            "b2streamd.yaml:2:3: cluster.storage: required in cluster");
  parse_err("cluster:\n  storage: /o\n  ranks: [tcp://a:1]\n"
            "  committer: tcp://c:2\n",
            "b2streamd.yaml:2:3: cluster.rank: required in cluster");
  parse_err("cluster:\n  storage: /o\n  rank: 0\n  committer: tcp://c:2\n",
            "b2streamd.yaml:2:3: cluster.ranks: required in cluster");
  parse_err("cluster:\n  storage: /o\n  rank: 0\n  ranks: [tcp://a:1]\n",
            "b2streamd.yaml:2:3: cluster.committer: required in cluster");
  parse_err("cluster:\n  storage: /o\n  rank: 3\n"
            "  ranks: [tcp://a:1, tcp://b:1, tcp://c:1]\n"
            "  committer: tcp://c:2\n",
            "b2streamd.yaml:3:9: cluster.rank: 3 is not a rank of the 3 in "
            "ranks (0..2)");
  parse_err("cluster:\n  storage: /o\n  rank: -1\n",
            "b2streamd.yaml:3:9: cluster.rank: -1 is out of range 0..1023");
  parse_err("cluster:\n  storage: /o\n  rank: 0\n"
            "  ranks: [tcp://a:1, udp://b:1]\n  committer: tcp://c:2\n",
            "b2streamd.yaml:4:22: cluster.ranks[1]: 'udp://b:1': expected "
            "an ipc:// or tcp:// endpoint");
  parse_err("cluster:\n  storage: /o\n  rank: 0\n"
            "  ranks: [tcp://a:1, tcp://a:1]\n  committer: tcp://c:2\n",
            "b2streamd.yaml:4:22: cluster.ranks[1]: 'tcp://a:1' is also "
            "rank 0");
  parse_err("cluster:\n  storage: /o\n  rank: 0\n"
            "  ranks: [ipc://r0.sock]\n  committer: tcp://c:2\n",
            "b2streamd.yaml:4:11: cluster.ranks[0]: an ipc:// endpoint of "
            "the cluster needs an absolute path");
  parse_err("cluster:\n" CL_OK "  committer_pub: ipc://pub\n",
            "b2streamd.yaml:6:18: cluster.committer_pub: an ipc:// endpoint "
            "of the cluster needs an absolute path");
  parse_err("cluster:\n  storage: /o\n  rank: 0\n  ranks: [tcp://a:1]\n"
            "  committer: http://c\n",
            "b2streamd.yaml:5:14: cluster.committer: 'http://c': expected "
            "an ipc:// or tcp:// endpoint");
  parse_err("cluster:\n  storage: rados://\n",
            "b2streamd.yaml:2:12: cluster.storage: 'rados://': a pool name "
            "is 1..128 characters of A-Z a-z 0-9 . _ -");
  parse_err("cluster:\n  storage: rados://a/b\n",
            "b2streamd.yaml:2:12: cluster.storage: 'rados://a/b': a pool "
            "name is 1..128 characters of A-Z a-z 0-9 . _ -");
  parse_err("cluster:\n  storage: s3://bucket\n",
            "b2streamd.yaml:2:12: cluster.storage: 's3://bucket' is neither "
            "rados://POOL, file:///DIR nor a directory");
  parse_err("cluster:\n  storage: file://rel\n",
            "b2streamd.yaml:2:12: cluster.storage: 'file://rel': a file:// "
            "URL holds an absolute path");
  parse_err("cluster:\n  storage: ''\n",
            "b2streamd.yaml:2:12: cluster.storage: must not be empty");
  parse_err("cluster:\n" CL_OK "  frames_per_block: 0\n",
            "b2streamd.yaml:6:21: cluster.frames_per_block: 0 is out of "
            "range 1..2147483647");
  parse_err("cluster:\n" CL_OK "  rnaks: []\n",
            "b2streamd.yaml:6:3: cluster: unknown key 'rnaks' (did you mean "
            "'ranks'?)");
  parse_err("cluster:\n" CL_OK "  rank: 0\n",
            "b2streamd.yaml:6:3: cluster: duplicate key 'rank' (first at "
            "line 3)");
}

static void test_distributed_streams(void **state) {
  (void)state;
  parse_err("streams:\n  s:\n    format: distributed\n"
            "    chunk_nbytes: 4k\n",
            "b2streamd.yaml:3:13: streams.s.format: distributed needs a "
            "cluster section");
  parse_err("templates:\n  t: {format: distributed}\n",
            "b2streamd.yaml:2:15: templates.t.format: distributed needs a "
            "cluster section");
  parse_err("cluster:\n" CL_OK "streams:\n  s:\n    format: distributed\n",
            "b2streamd.yaml:8:5: streams.s.chunk_nbytes: required with "
            "format: distributed (or b2nd)");
  parse_err("cluster:\n" CL_OK "streams:\n  s:\n    format: distributed\n"
            "    typesize: 4\n    chunk_nbytes: 100\n"
            "    b2nd: {shape: [0, 5], chunkshape: [1, 5]}\n",
            "b2streamd.yaml:10:19: streams.s.chunk_nbytes: 100 disagrees "
            "with b2nd.chunkshape (20 bytes)");
  parse_err("cluster:\n" CL_OK "max_buffer: 1M\nstreams:\n  s:\n"
            "    format: distributed\n    chunk_nbytes: 2M\n",
            "b2streamd.yaml:10:19: streams.s.chunk_nbytes: 2097152 is larger "
            "than max_buffer (1048576)");
  parse_err("cluster:\n" CL_OK "streams:\n  s:\n    format: distributed\n"
            "    chunk_nbytes: 3G\n",
            "b2streamd.yaml:9:19: streams.s.chunk_nbytes: 3G is out of range "
            "0..2147483584");
  parse_err("cluster:\n" CL_OK "streams:\n  s:\n    format: distributd\n",
            "b2streamd.yaml:8:13: streams.s.format: 'distributd' is not "
            "one of contiguous, sparse, distributed (did you mean "
            "'distributed'?)");
  roundtrip(cluster_yaml);
  /* a changed cluster is seen */
  b2s_config *a = parse_ok(cluster_yaml), *b = parse_ok("cluster:\n" CL_OK);
  b2s_config *c = parse_ok("");
  assert_false(b2s_cluster_cfg_equal(b2s_config_cluster(a),
                                     b2s_config_cluster(b)));
  assert_false(b2s_cluster_cfg_equal(b2s_config_cluster(b),
                                     b2s_config_cluster(c)));
  assert_true(b2s_cluster_cfg_equal(b2s_config_cluster(a),
                                    b2s_config_cluster(a)));
  b2s_config_free(a);
  b2s_config_free(b);
  b2s_config_free(c);
}

/* http: off unless present; numeric loopback by default; a remote address
 * only when allowed in so many words. */
static void test_http_section(void **state) {
  (void)state;
  b2s_config *cfg = parse_ok("");
  assert_false(b2s_config_daemon(cfg)->http.enabled);
  b2s_config_free(cfg);
  cfg = parse_ok("http: {}\n");
  const b2s_daemon_cfg *d = b2s_config_daemon(cfg);
  assert_true(d->http.enabled);
  assert_string_equal(d->http.listen, "127.0.0.1:9464");
  assert_int_equal(d->http.allow_remote, 0);
  b2s_config_free(cfg);
  cfg = parse_ok("http: {listen: \"[::1]:8080\"}\n");
  assert_string_equal(b2s_config_daemon(cfg)->http.listen, "[::1]:8080");
  b2s_config_free(cfg);
  cfg = parse_ok("http: {listen: \"0.0.0.0:9464\", allow_remote: true}\n");
  assert_int_equal(b2s_config_daemon(cfg)->http.allow_remote, 1);
  b2s_config_free(cfg);
  parse_err("http: {listen: \"0.0.0.0:9464\"}\n",
            "b2streamd.yaml:1:16: http.listen: '0.0.0.0:9464' is not a "
            "loopback address and the page has no authentication; set "
            "http.allow_remote: true to serve it anyway");
  parse_err("http: {listen: \"localhost:9464\"}\n",
            "b2streamd.yaml:1:16: http.listen: 'localhost:9464': not a "
            "numeric IPv4 address (names are not resolved)");
  parse_err("http: {listen: \"127.0.0.1:0\"}\n",
            "b2streamd.yaml:1:16: http.listen: '127.0.0.1:0': the port is "
            "1..65535");
  parse_err("http: {listen: \"[::1]9464\"}\n",
            "b2streamd.yaml:1:16: http.listen: '[::1]9464': expected "
            "[IPv6]:PORT");
  assert_true(b2s_config_hostport_loopback("127.1.2.3:1"));
  assert_false(b2s_config_hostport_loopback("[::2]:1"));
  roundtrip("http: {listen: \"127.0.0.1:9999\"}\n");
}

/* acquisitions: (docs/ACQUISITIONS.md 2): its keys, and what it needs. */
static void test_acquisitions_section(void **state) {
  (void)state;
  b2s_config *cfg = parse_ok("");
  assert_false(b2s_config_daemon(cfg)->acq.enabled);
  assert_int_equal(b2s_config_daemon(cfg)->http.max_body, 256 * 1024);
  b2s_config_free(cfg);
  cfg = parse_ok("http: {token_file: tokens}\n"
                 "acquisitions: {roots: [/data, beam]}\n"
                 "streams: {d1: {acquisitions: only}}\n");
  const b2s_daemon_cfg *d = b2s_config_daemon(cfg);
  assert_true(d->acq.enabled);
  assert_string_equal(d->http.token_file, BASE "/tokens");
  assert_int_equal(d->acq.nroots, 2);
  assert_string_equal(d->acq.roots[0], "/data");
  assert_string_equal(d->acq.roots[1], BASE "/beam");
  assert_int_equal(d->acq.disk_floor, INT64_C(1) << 30);
  assert_int_equal(d->acq.disk_margin, 10);
  assert_int_equal(d->acq.min_free_memory, 5);
  assert_int_equal(d->acq.max_held, 256);
  assert_int_equal(stream(cfg, "d1")->acquisitions, B2S_ACQ_MODE_ONLY);
  b2s_config_free(cfg);
  roundtrip("http: {token_file: /t}\nacquisitions: {roots: [/data]}\n");
  cfg = parse_ok("http: {}\nacquisitions: {roots: [/data], anonymous: true}\n");
  assert_int_equal(b2s_config_daemon(cfg)->acq.anonymous, 1);
  b2s_config_free(cfg);
  parse_err("acquisitions: {roots: [/data]}\n",
            "b2streamd.yaml:1:15: acquisitions: needs http:");
  parse_err("http: {}\nacquisitions: {roots: [/data]}\n",
            "b2streamd.yaml:2:15: acquisitions: needs http.token_file (or "
            "acquisitions.anonymous: true on a loopback listener)");
  parse_err("http: {token_file: /t}\nacquisitions: {disk_margin: 5}\n",
            "b2streamd.yaml:2:15: acquisitions.roots: required with "
            "acquisitions");
  parse_err("http: {token_file: /t}\nacquisitions: {roots: [" BASE "]}\n",
            "b2streamd.yaml:2:24: acquisitions.roots[0]: '" BASE "' is /, or "
            "inside or around data_dir or run_dir");
  parse_err("http: {token_file: /t}\nacquisitions: {roots: [/data/x]}\n"
            "data_dir: /data\n",
            "b2streamd.yaml:2:24: acquisitions.roots[0]: '/data/x' is /, or "
            "inside or around data_dir or run_dir");
}

static void test_load_from_files(void **state) {
  (void)state;
  char dir[] = "/tmp/b2s_config_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/my.yaml", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("data_dir: frames\nstreams:\n  s:\n    clevel: 10\n", f);
  fclose(f);
  b2s_config *cfg = (b2s_config *)&cfg;
  assert_int_equal(b2s_config_load(path, &cfg, &ed), B2S_E_CONFIG);
  assert_null(cfg);
  char want[512];
  snprintf(want, sizeof want, "%s:4:13: streams.s.clevel: 10 is out of range "
           "0..9", path);
  assert_string_equal(ed.text, want);

  f = fopen(path, "w");
  assert_non_null(f);
  fputs("data_dir: frames\n", f);
  fclose(f);
  char cwd[PATH_MAX];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(dir), 0);
  int rc = b2s_config_load("./my.yaml", &cfg, &ed);
  assert_int_equal(chdir(cwd), 0);
  if (rc != 0)
    fail_msg("%s", ed.text);
  char *real = realpath(dir, NULL);
  snprintf(want, sizeof want, "%s/frames", real);
  assert_string_equal(b2s_config_daemon(cfg)->data_dir, want);
  free(real);
  b2s_config_free(cfg);

  /* Too big on disk. */
  f = fopen(path, "w");
  assert_non_null(f);
  for (int i = 0; i < (1 << 20) / 8 + 1; i++)
    fputs("#234567\n", f);
  fclose(f);
  assert_int_equal(b2s_config_load(path, &cfg, &ed), B2S_E_CONFIG);
  snprintf(want, sizeof want, "%s: larger than 1048576 bytes", path);
  assert_string_equal(ed.text, want);
  unlink(path);

  assert_int_equal(b2s_config_load(path, &cfg, &ed), -ENOENT);
  snprintf(want, sizeof want, "%s: %s", path, strerror(ENOENT));
  assert_string_equal(ed.text, want);
  rmdir(dir);

  /* The base directory must be absolute. */
  assert_int_equal(b2s_config_parse("", 0, "x", "rel", &cfg, &ed),
                   B2S_E_ARG);
}

/* ---- reload classes -------------------------------------------------------- */

/* Every row of the schema says how it reloads; an at-once row says how. */
static void test_schema_rows_declare_reload(void **state) {
  (void)state;
  for (size_t i = 0; i < b2s_cfg_nschema; i++) {
    const cfg_desc *d = &b2s_cfg_schema[i];
    if (d->reload != B2S_RELOAD_AT_ONCE && d->reload != B2S_RELOAD_NEXT_FRAME &&
        d->reload != B2S_RELOAD_RESTART)
      fail_msg("schema row %s declares no reload class", d->path);
    if (d->reload == B2S_RELOAD_AT_ONCE && (!d->applies || !d->applies[0]))
      fail_msg("schema row %s applies at once but does not say how", d->path);
  }
  assert_int_equal(b2s_config_key_reload("stream", "nosuch", NULL), B2S_E_ARG);
  assert_int_equal(b2s_config_key_reload("nowhere", "codec", NULL), B2S_E_ARG);
}

typedef struct told {
  int n;
  char keys[16][64];
  int how[16];
  char kept[16][96];
} told;

static void tell(void *arg, const b2s_reload_change *ch) {
  told *t = arg;
  assert_true(t->n < 16);
  snprintf(t->keys[t->n], sizeof t->keys[0], "%s", ch->key);
  t->how[t->n] = ch->how;
  snprintf(t->kept[t->n], sizeof t->kept[0], "%s", ch->kept);
  t->n++;
}

static int told_at(const told *t, const char *key) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->keys[i], key) == 0)
      return i;
  fail_msg("no change told for %s", key);
  return -1;
}

/* The reload path's decision for each key is its row's: the at-once and
 * next-frame values are the stream's from now on (a next-frame one is
 * used by the next frame it opens), the restart-only ones (and full_path,
 * derived from path) stay the running ones; each changed key is told
 * once, with its row's class and the value kept. */
static void test_reload_follows_rows(void **state) {
  (void)state;
  b2s_config *a = parse_ok(
      "workers: 2\nlog_level: info\nmemory_limit: 64MiB\n"
      "streams:\n  s:\n    codec: zstd\n    clevel: 5\n"
      "    durability: {group_count: 8}\n"
      "    series: {sample: a}\n    path: one.b2frame\n    order: arrival\n"
      "    b2nd: {shape: [0, 4], chunkshape: [1, 4]}\n");
  b2s_config *b = parse_ok(
      "workers: 4\nlog_level: debug\nmemory_limit: 64MiB\n"
      "streams:\n  s:\n    codec: lz4\n    clevel: 5\n"
      "    durability: {group_count: 9}\n"
      "    series: {sample: b}\n    path: two.b2frame\n"
      "    order: frame_number\n"
      "    b2nd: {shape: [0, 8], chunkshape: [1, 8]}\n");
  const b2s_stream_cfg *ra = stream(a, "s"), *lb = stream(b, "s");
  b2s_stream_cfg out;
  told t = {0};
  /* codec, group_count, series, path, order, b2nd.shape, chunkshape and
   * blockshape (= chunkshape), and blocksize, derived from blockshape
   * (chunk_nbytes stays 0: not distributed) */
  assert_int_equal(b2s_stream_cfg_reload(ra, lb, &out, tell, &t), 9);
  assert_int_equal(t.n, 9);
  const char *keys[] = {"codec", "durability.group_count", "series", "path",
                        "order", "b2nd.shape", "b2nd.chunkshape"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    int k = told_at(&t, keys[i]);
    assert_int_equal(t.how[k], b2s_config_key_reload("stream", keys[i], NULL));
  }
  assert_int_equal(t.how[told_at(&t, "codec")], B2S_RELOAD_AT_ONCE);
  assert_int_equal(t.how[told_at(&t, "series")], B2S_RELOAD_NEXT_FRAME);
  assert_int_equal(t.how[told_at(&t, "path")], B2S_RELOAD_RESTART);
  assert_string_equal(t.kept[told_at(&t, "path")], "\"one.b2frame\"");
  assert_string_equal(t.kept[told_at(&t, "order")], "arrival");
  assert_string_equal(t.kept[told_at(&t, "b2nd.shape")], "[0, 4]");
  /* a b2nd stream's blocksize goes with its b2nd description, kept */
  assert_int_equal(t.how[told_at(&t, "blocksize")], B2S_RELOAD_RESTART);
  assert_string_equal(t.kept[told_at(&t, "blocksize")], "8");
  assert_int_equal(out.cparams.blocksize, ra->cparams.blocksize);
  /* at once and next frame: the loaded values */
  assert_int_equal(out.cparams.codec, B2S_CODEC_LZ4);
  assert_int_equal(out.durability.group_count, 9);
  assert_int_equal(out.series_len, lb->series_len);
  assert_memory_equal(out.series, lb->series, lb->series_len);
  /* restart only: the running ones, with what derives from them */
  assert_string_equal(out.path, ra->path);
  assert_string_equal(out.full_path, ra->full_path);
  assert_int_equal(out.order, B2S_ORDER_ARRIVAL);
  assert_memory_equal(&out.b2nd, &ra->b2nd, sizeof out.b2nd);
  /* nothing changed: nothing told, the settings as they are */
  t.n = 0;
  assert_int_equal(b2s_stream_cfg_reload(ra, ra, &out, tell, &t), 0);
  assert_int_equal(t.n, 0);
  assert_true(b2s_stream_cfg_equal(&out, ra));

  /* the daemon: log_level taken, workers kept at 2 */
  b2s_daemon_cfg d = *b2s_config_daemon(a);
  t.n = 0;
  assert_int_equal(b2s_daemon_cfg_reload(&d, b2s_config_daemon(b), tell, &t),
                   2);
  assert_int_equal(t.how[told_at(&t, "workers")], B2S_RELOAD_RESTART);
  assert_string_equal(t.kept[told_at(&t, "workers")], "2");
  assert_int_equal(t.how[told_at(&t, "log_level")], B2S_RELOAD_AT_ONCE);
  assert_int_equal(d.workers, 2);
  assert_int_equal(d.log_level, B2S_LOG_DEBUG);
  b2s_config_free(b);
  b2s_config_free(a);
}

/* An optional group switched on or off is one change (its keys are not
 * told of one by one), and the cluster section is one rank's settings
 * for distributed streams opened from now on. */
static void test_reload_groups(void **state) {
  (void)state;
  b2s_config *a = parse_ok("streams:\n  s: {}\n");
  b2s_config *b = parse_ok(
      "streams:\n  s: {b2nd: {shape: [0, 4], chunkshape: [1, 4]}}\n");
  told t = {0};
  b2s_stream_cfg out;
  assert_int_equal(b2s_stream_cfg_reload(stream(a, "s"), stream(b, "s"), &out,
                                         tell, &t), 2);
  /* blocksize comes from the blockshape: told of on its own */
  assert_string_equal(t.keys[0], "blocksize");
  assert_string_equal(t.keys[1], "b2nd");
  assert_string_equal(t.kept[1], "null");
  assert_false(out.b2nd.enabled);
  t.n = 0;
  assert_int_equal(b2s_cluster_cfg_reload(b2s_config_cluster(a),
                                          b2s_config_cluster(b), tell, &t), 0);
  /* a source's keys are told of, each as restart only */
  b2s_config *c = parse_ok("sources:\n  - {kind: dectris-stream2, endpoint: "
                           "'tcp://127.0.0.1:9999', series_timeout_ms: 500}\n");
  b2s_config *c2 = parse_ok("sources:\n  - {kind: dectris-stream2, endpoint: "
                            "'tcp://127.0.0.1:9999', series_timeout_ms: 900, "
                            "beamline: {beam_flux: 2.5}}\n");
  size_t n1, n2;
  const b2s_source_cfg *s1 = b2s_config_sources(c, &n1);
  const b2s_source_cfg *s2 = b2s_config_sources(c2, &n2);
  assert_int_equal(n1, 1);
  assert_int_equal(n2, 1);
  t.n = 0;
  assert_int_equal(b2s_source_cfg_reload(s1, s2, tell, &t), 2);
  assert_string_equal(t.keys[0], "series_timeout_ms");
  assert_string_equal(t.kept[0], "500");
  assert_int_equal(t.how[0], B2S_RELOAD_RESTART);
  assert_string_equal(t.keys[1], "beamline.beam_flux");
  assert_string_equal(t.kept[1], "0");
  b2s_config_free(c2);
  b2s_config_free(c);
  b2s_config_free(b);
  b2s_config_free(a);
}

/* docs/CONFIG.md against the schema: a row "| `path` | ... |" for every
 * key, with its default as `def` in the third column, and no row for a
 * key the schema lacks. */
static void test_config_md_matches_schema(void **state) {
  (void)state;
  const char *path = getenv("B2S_CONFIG_MD");
  assert_non_null(path);
  char *doc = ts_read_text(path, NULL);
  assert_non_null(doc);
  /* each scope's table, where its rows are looked for */
  static const char *const heads[] = {
      [CFG_DAEMON] = "\n## The daemon", [CFG_CLUSTER] = "\n## `cluster:`",
      [CFG_STREAM] = "\n## Streams and templates",
      [CFG_SOURCE] = "\n## `sources:`"};
  static const char *const classes[] = {
      [B2S_RELOAD_AT_ONCE] = "at once", [B2S_RELOAD_NEXT_FRAME] = "next frame",
      [B2S_RELOAD_RESTART] = "restart"};
  for (size_t i = 0; i < b2s_cfg_nschema; i++) {
    const cfg_desc *d = &b2s_cfg_schema[i];
    char row[256];
    snprintf(row, sizeof row, "\n| `%s` | ", d->path);
    char *table = strstr(doc, heads[d->scope]);
    assert_non_null(table);
    char *at = strstr(table, row);
    if (at == NULL) {
      fail_msg("docs/CONFIG.md has no row for %s", d->path);
      continue;                  /* (fail_msg does not return) */
    }
    /* the default sits in the row's third column */
    char *end = strchr(at + 1, '\n');
    assert_non_null(end);
    if (d->def != NULL && d->def[0]) {
      char def[256];
      snprintf(def, sizeof def, "| `%s` |", d->def);
      char *found = strstr(at, def);
      if (found == NULL || found > end)
        fail_msg("docs/CONFIG.md: %s should show default %s", d->path,
                 d->def);
    }
    /* the reload column, fifth, is the row's class */
    char *cell = at + 1;
    for (int col = 0; col < 5 && cell && cell < end; col++)
      cell = strstr(cell + 1, " | ");
    assert_true(d->reload >= B2S_RELOAD_AT_ONCE &&
                d->reload <= B2S_RELOAD_RESTART);
    const char *want = classes[d->reload];
    if (!cell || cell >= end || strncmp(cell - strlen(want), want,
                                        strlen(want)) != 0 ||
        cell[-(int)strlen(want) - 1] != ' ')
      fail_msg("docs/CONFIG.md: %s should say it reloads: %s", d->path, want);
    /* a key the loader refuses in templates says so */
    char *only = strstr(at, "streams only");
    if ((d->flags & CF_STREAM_ONLY) && (only == NULL || only > end))
      fail_msg("docs/CONFIG.md: %s should say it is for streams only",
               d->path);
  }
  /* every row names a key of the schema */
  int rows = 0;
  for (char *p = strstr(doc, "\n| `"); p; p = strstr(p + 1, "\n| `")) {
    char key[128];
    if (sscanf(p, "\n| `%127[^`]`", key) != 1)
      continue;
    bool known = false;
    for (size_t i = 0; i < b2s_cfg_nschema && !known; i++)
      known = strcmp(b2s_cfg_schema[i].path, key) == 0;
    if (!known)
      fail_msg("docs/CONFIG.md documents %s, which the schema lacks", key);
    rows++;
  }
  assert_int_equal((size_t)rows, b2s_cfg_nschema);
  free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shipped_config),
      cmocka_unit_test(test_config_md_matches_schema),
      cmocka_unit_test(test_schema_rows_declare_reload),
      cmocka_unit_test(test_reload_follows_rows),
      cmocka_unit_test(test_reload_groups),
      cmocka_unit_test(test_empty_config_is_all_defaults),
      cmocka_unit_test(test_environment_directories),
      cmocka_unit_test(test_error_messages),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_size_units),
      cmocka_unit_test(test_templates_and_inheritance),
      cmocka_unit_test(test_template_filters_meta_reset),
      cmocka_unit_test(test_stream_names),
      cmocka_unit_test(test_path_resolution),
      cmocka_unit_test(test_dump_roundtrip),
      cmocka_unit_test(test_series_defaults),
      cmocka_unit_test(test_series_errors),
      cmocka_unit_test(test_equality_sees_changes),
      cmocka_unit_test(test_b2nd_for_the_frame),
      cmocka_unit_test(test_gaps_and_order),
      cmocka_unit_test(test_load_from_files),
      cmocka_unit_test(test_sources),
      cmocka_unit_test(test_source_minimal),
      cmocka_unit_test(test_source_beamline),
    cmocka_unit_test(test_cluster_section),
      cmocka_unit_test(test_cluster_example),
      cmocka_unit_test(test_cluster_many_ranks),
      cmocka_unit_test(test_cluster_errors),
      cmocka_unit_test(test_http_section),
      cmocka_unit_test(test_acquisitions_section),
      cmocka_unit_test(test_distributed_streams),
  };
  return ts_run_tests(tests, setup, NULL);
}

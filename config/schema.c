/* The configuration schema: every key, once.  Parsing, defaults, bounds,
 * equality, the dump and reloads all walk this table; a new key is one new
 * row (and its field).  Children of a group follow the group's row.  Each
 * row says how a running daemon takes a new value on SIGHUP: AT_ONCE(how),
 * NEXT_FRAME(what waits) or RESTART (reload.c, and the reload path of the
 * daemon, read it from here). */
#include <stddef.h>
#include <string.h>

#include "config_internal.h"

#define KIB INT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)
#define TIB (GIB * 1024)

#define FSIZE(T, m) sizeof(((T *)0)->m)
#define D(m) .off = offsetof(b2s_daemon_cfg, m), .size = FSIZE(b2s_daemon_cfg, m)
#define DL(m, count)                                                           \
  .off = offsetof(b2s_daemon_cfg, m), .size = FSIZE(b2s_daemon_cfg, m[0]),     \
  .aux = offsetof(b2s_daemon_cfg, count)
#define S(m) .off = offsetof(b2s_stream_cfg, m), .size = FSIZE(b2s_stream_cfg, m)
#define SL(m, count)                                                           \
  .off = offsetof(b2s_stream_cfg, m), .size = FSIZE(b2s_stream_cfg, m[0]),     \
  .aux = offsetof(b2s_stream_cfg, count)
#define C(m) .off = offsetof(b2s_cluster_cfg, m), .size = FSIZE(b2s_cluster_cfg, m)
#define CL(m, count)                                                           \
  .off = offsetof(b2s_cluster_cfg, m), .size = FSIZE(b2s_cluster_cfg, m[0]),   \
  .aux = offsetof(b2s_cluster_cfg, count)
#define DAEMON .scope = CFG_DAEMON
#define CLUSTER .scope = CFG_CLUSTER
#define STREAM .scope = CFG_STREAM
#define SOURCE .scope = CFG_SOURCE
#define SR(m) .off = offsetof(b2s_source_cfg, m), .size = FSIZE(b2s_source_cfg, m)

/* How a key reloads (b2s_config.h, enum b2s_reload); at once, how. */
#define AT_ONCE(how) .reload = B2S_RELOAD_AT_ONCE, .applies = how
#define NEXT_FRAME(what) .reload = B2S_RELOAD_NEXT_FRAME, .applies = what
#define RESTART .reload = B2S_RELOAD_RESTART
#define RESTART_(what) .reload = B2S_RELOAD_RESTART, .applies = what
/* A chunk carries its own codec parameters, a frame header only defaults */
#define CPARAMS_AT_ONCE                                                        \
  "to buffers accepted from now on; the frame header's defaults (a writer "  \
  "option) are fixed when the frame opens"

static const cfg_enum log_levels[] = {
  {"error", B2S_LOG_ERROR}, {"warning", B2S_LOG_WARNING},
  {"info", B2S_LOG_INFO}, {"debug", B2S_LOG_DEBUG}, {NULL, 0}};
static const cfg_enum formats[] = {
  {"contiguous", B2S_FORMAT_CONTIGUOUS}, {"sparse", B2S_FORMAT_SPARSE},
  {"distributed", B2S_FORMAT_DISTRIBUTED}, {NULL, 0}};
static const cfg_enum ios[] = {
  {"direct", B2S_IO_DIRECT}, {"buffered", B2S_IO_BUFFERED}, {NULL, 0}};
#define ENUM_ROW(name, code) {name, code},
static const cfg_enum codecs[] = {B2S_CODEC_NAMES(ENUM_ROW) {NULL, 0}};
static const cfg_enum filters[] = {B2S_FILTER_NAMES(ENUM_ROW) {NULL, 0}};
static const cfg_enum splits[] = {B2S_SPLIT_NAMES(ENUM_ROW) {NULL, 0}};
#undef ENUM_ROW
static const cfg_enum acks[] = {
  {"receipt", B2S_ACK_RECEIPT}, {"write", B2S_ACK_WRITE},
  {"fsync", B2S_ACK_FSYNC}, {NULL, 0}};
static const cfg_enum backpressures[] = {
  {"block", B2S_BP_BLOCK}, {"drop-newest", B2S_BP_DROP_NEWEST},
  {"drop-oldest", B2S_BP_DROP_OLDEST}, {NULL, 0}};
static const cfg_enum gapss[] = {
  {"auto", B2S_GAPS_AUTO}, {"skip", B2S_GAPS_SKIP}, {"fill", B2S_GAPS_FILL},
  {NULL, 0}};
static const cfg_enum source_kinds[] = {
  {"dectris-stream2", B2S_SOURCE_DECTRIS_STREAM2}, {NULL, 0}};
static const cfg_enum layouts[] = {
  {"flat", B2S_SOURCE_FLAT}, {"images", B2S_SOURCE_IMAGES}, {NULL, 0}};
static const cfg_enum source_comps[] = {
  {"bslz4", B2S_SOURCE_BSLZ4}, {"lz4", B2S_SOURCE_LZ4}, {NULL, 0}};
static const cfg_enum bools[] = {{"false", 0}, {"true", 1}, {NULL, 0}};
static const cfg_enum orders[] = {
  {"arrival", B2S_ORDER_ARRIVAL}, {"frame_number", B2S_ORDER_FRAME_NUMBER},
  {NULL, 0}};

static const cfg_enum acq_modes[] = {
  {"off", B2S_ACQ_MODE_OFF}, {"only", B2S_ACQ_MODE_ONLY}, {NULL, 0}};

const cfg_desc b2s_cfg_schema[] = {
  /* daemon */
  {"listen", DAEMON, RESTART, .type = CT_ENDPOINTS, DL(listen, nlisten),
   .min_items = 1, .max_items = B2S_CONFIG_MAX_LISTEN,
   .def = "[ipc://b2streamd.sock]",
   .help = "ZeroMQ endpoints to bind: ipc://PATH (relative to run_dir) or "
           "tcp://HOST:PORT"},
  {"run_dir", DAEMON, RESTART, .type = CT_PATH, D(run_dir), .def = "run",
   .env = "RUNTIME_DIRECTORY",
   .help = "directory for sockets ($RUNTIME_DIRECTORY, else run/ next to "
           "this file)"},
  {"data_dir", DAEMON, RESTART, .type = CT_PATH, D(data_dir), .def = "data",
   .env = "STATE_DIRECTORY",
   .help = "directory for frames ($STATE_DIRECTORY, else data/ next to "
           "this file)"},
  {"group", DAEMON, RESTART, .type = CT_UNIX_GROUP, D(group), .def = "",
   .help = "members of this group may use the ipc:// sockets and shared "
           "memory (mode 0660); empty: the daemon's user only (0600)"},
  {"workers", DAEMON, RESTART, .type = CT_INT, D(workers), .min = 0, .max = 256,
   .def = "0", .help = "compression threads; 0 = one per online CPU"},
  {"memory_limit", DAEMON, AT_ONCE("bounds buffers, chunk buffers and reads from now on"), .type = CT_SIZE, D(memory_limit), .min = MIB,
   .max = TIB, .def = "256MiB", .unit = "bytes",
   .help = "total size of the buffers in flight"},
  {"max_buffer", DAEMON, AT_ONCE("to buffers from now on; a raised bound reaches the sockets' message limit for connections made from now on"), .type = CT_SIZE, D(max_buffer), .min = KIB,
   .max = 2 * GIB - 64, .def = "64MiB", .unit = "bytes",
   .help = "largest single buffer accepted"},
  {"log_level", DAEMON, AT_ONCE("to the next line logged"), .type = CT_ENUM, D(log_level), .enums = log_levels,
   .def = "info", .help = "error, warning, info or debug"},
  {"slow_disk_ms", DAEMON, RESTART, .type = CT_INT, D(slow_disk_ms), .min = 1,
   .max = 600000, .def = "200", .unit = "ms",
   .help = "log disk calls slower than this"},
  {"max_sessions", DAEMON, AT_ONCE("to HELLOs from now on"), .type = CT_INT, D(max_sessions), .min = 1,
   .max = 1000000, .def = "1024",
   .help = "client sessions at a time; a HELLO beyond is refused "
           "(B2S_E_LIMIT), as is one when file descriptors run short"},
  {"max_streams", DAEMON, AT_ONCE("to OPENs from now on"), .type = CT_INT, D(max_streams), .min = 0,
   .max = 100000, .def = "256",
   .help = "streams created at run time from templates; an OPEN beyond is "
           "refused (B2S_E_LIMIT), as is one when file descriptors run short"},
  {"shm", DAEMON, RESTART, .type = CT_GROUP,
   .help = "defaults for shared-memory producers"},
  {"shm.slots", DAEMON, RESTART, .type = CT_INT, D(shm.slots), .min = 1, .max = 4096,
   .def = "16", .help = "slots per producer"},
  {"shm.slot_size", DAEMON, RESTART, .type = CT_SIZE, D(shm.slot_size), .min = 4 * KIB,
   .max = GIB, .def = "4MiB", .unit = "bytes", .help = "bytes per slot"},
  {"curve", DAEMON, RESTART, .type = CT_GROUP, .flags = CF_OPTIONAL,
   .aux = offsetof(b2s_daemon_cfg, curve.enabled),
   .help = "CurveZMQ encryption and authentication of tcp:// clients"},
  {"curve.secret_key_file", DAEMON, RESTART, .type = CT_PATH,
   D(curve.secret_key_file), .def = "",
   .help = "the daemon's secret key (Z85)"},
  {"curve.authorized_keys_file", DAEMON, AT_ONCE("the file is read again on every reload, for connections made from now on"), .type = CT_PATH,
   D(curve.authorized_keys_file), .def = "",
   .help = "public keys of the clients allowed in, one per line"},
  {"http", DAEMON, RESTART, .type = CT_GROUP, .flags = CF_OPTIONAL,
   .aux = offsetof(b2s_daemon_cfg, http.enabled),
   .help = "Prometheus metrics (/metrics), a status page (/) and the "
           "control API (/api/v1, docs/ACQUISITIONS.md) over HTTP; null: "
           "off"},
  {"http.listen", DAEMON, RESTART, .type = CT_HOSTPORT, D(http.listen),
   .def = "127.0.0.1:9464",
   .help = "numeric address and port: A.B.C.D:PORT or [IPv6]:PORT"},
  {"http.allow_remote", DAEMON, RESTART, .type = CT_ENUM, D(http.allow_remote),
   .enums = bools, .def = "false",
   .help = "true: allow a non-loopback listen address (anyone who reaches "
           "it sees every stream's name and figures)"},
  {"http.token_file", DAEMON, AT_ONCE("read again on every reload, for requests from then on"), .type = CT_PATH,
   D(http.token_file), .def = "",
   .help = "bearer tokens allowed to change state (docs/ACQUISITIONS.md "
           "9.2), one per line; \"\" = none, which acquisitions: allows "
           "only with acquisitions.anonymous: true on a loopback listener"},
  {"http.auth_reads", DAEMON, RESTART, .type = CT_ENUM, D(http.auth_reads),
   .enums = bools, .def = "false",
   .help = "true: every route (metrics, status page, reads) needs a token "
           "too"},
  {"http.max_body", DAEMON, RESTART, .type = CT_SIZE, D(http.max_body),
   .min = 4 * KIB, .max = 16 * MIB, .def = "256KiB", .unit = "bytes",
   .help = "largest request body; larger gets 413"},
  {"http.max_connections", DAEMON, RESTART, .type = CT_INT,
   D(http.max_connections), .min = 4, .max = 1024, .def = "64",
   .help = "HTTP connections at a time; more wait in the kernel's backlog, "
           "then are refused"},
  {"http.max_event_streams", DAEMON, RESTART, .type = CT_INT,
   D(http.max_event_streams), .min = 0, .max = 256, .def = "8",
   .help = "GET /api/v1/events connections at a time; more get 503"},
  {"http.max_waits", DAEMON, RESTART, .type = CT_INT, D(http.max_waits),
   .min = 0, .max = 1024, .def = "32",
   .help = "GET .../wait requests pending at a time; more get 503"},
  {"acquisitions", DAEMON, RESTART, .type = CT_GROUP, .flags = CF_OPTIONAL,
   .aux = offsetof(b2s_daemon_cfg, acq.enabled),
   .help = "acquisitions armed over HTTP (docs/ACQUISITIONS.md); null: "
           "off; needs http:"},
  {"acquisitions.roots", DAEMON, AT_ONCE("to arms from now on"), .type = CT_PATHS,
   DL(acq.roots, acq.nroots), .min_items = 1,
   .max_items = B2S_CONFIG_MAX_ROOTS,
   .help = "absolute directories acquisitions may write under (each "
           "resolved at every arm); none may be inside, or contain, "
           "data_dir or run_dir; required"},
  {"acquisitions.disk_floor", DAEMON, AT_ONCE("to arms and disk checks from now on"), .type = CT_SIZE,
   D(acq.disk_floor), .min = 0, .max = 1024 * TIB, .def = "1GiB",
   .unit = "bytes",
   .help = "free space an arm must leave after its estimate; 0: no floor"},
  {"acquisitions.disk_margin", DAEMON, AT_ONCE("to arms from now on"), .type = CT_INT,
   D(acq.disk_margin), .min = 0, .max = 1000, .def = "10", .unit = "%",
   .help = "added to the arm's disk estimate"},
  {"acquisitions.min_free_memory", DAEMON, AT_ONCE("to arms from now on"), .type = CT_INT,
   D(acq.min_free_memory), .min = 0, .max = 100, .def = "5", .unit = "%",
   .help = "an arm is refused (buffers_short) while less than this share "
           "of memory_limit is free"},
  {"acquisitions.max_held", DAEMON, RESTART, .type = CT_INT,
   D(acq.max_held), .min = 1, .max = 100000, .def = "256",
   .help = "acquisitions the daemon holds; past it the oldest ended one is "
           "forgotten"},
  {"acquisitions.events_held", DAEMON, RESTART, .type = CT_INT,
   D(acq.events_held), .min = 16, .max = 1000000, .def = "4096",
   .help = "events held for GET /api/v1/events and its reconnects"},
  {"acquisitions.progress_hz", DAEMON, RESTART, .type = CT_INT,
   D(acq.progress_hz), .min = 1, .max = 100, .def = "10", .unit = "Hz",
   .help = "progress events per acquisition per second, at most"},
  {"acquisitions.anonymous", DAEMON, RESTART, .type = CT_ENUM,
   D(acq.anonymous), .enums = bools, .def = "false",
   .help = "true: without http.token_file, a loopback listener takes "
           "changes from anyone who reaches it (any local user), warned "
           "about at every start; false: acquisitions: needs "
           "http.token_file"},
  {"templates", DAEMON, NEXT_FRAME("streams made from a template from now on get its new settings; the running ones keep theirs"), .type = CT_TEMPLATES,
   .help = "stream settings for streams created at run time"},
  {"streams", DAEMON, AT_ONCE("a stream new in the file opens at once, a changed one takes each key as its row says; one taken out runs on until a restart"), .type = CT_STREAMS, .help = "streams opened at start"},
  {"cluster", DAEMON, NEXT_FRAME("distributed streams opened from now on; the running ones keep theirs"), .type = CT_CLUSTER,
   .help = "this daemon as one rank of several on several nodes, for "
           "streams with format: distributed; null: none"},
  {"sources", DAEMON, RESTART, .type = CT_SOURCES,
   .help = "detectors the daemon pulls images from itself (docs/SOURCES.md)"},
  {"live", DAEMON, RESTART, .type = CT_GROUP, .flags = CF_OPTIONAL,
   .aux = offsetof(b2s_daemon_cfg, live.enabled),
   .help = "live view of image streams (docs/ACQUISITIONS.md section 11); "
           "null: the HTTP route serves at the defaults below and no PUB "
           "socket is bound"},
  {"live.every_n", DAEMON, RESTART, .type = CT_INT, D(live.every_n), .min = 1,
   .max = 1000000, .def = "1",
   .help = "only frames whose number is a multiple of this are shown"},
  {"live.max_rate_hz", DAEMON, RESTART, .type = CT_INT, D(live.max_rate_hz),
   .min = 1, .max = 1000, .def = "10", .unit = "Hz",
   .help = "frames decoded for the live view per stream per second, at most "
           "(HTTP and PUB together)"},
  {"live.publish", DAEMON, RESTART, .type = CT_ENDPOINT, D(live.publish),
   .def = "",
   .help = "ZeroMQ PUB endpoint of the live view, tcp://HOST:PORT or "
           "ipc://PATH (relative to run_dir); \"\" = none"},
  {"live.max_bytes", DAEMON, RESTART, .type = CT_SIZE, D(live.max_bytes),
   .min = KIB, .max = 2 * GIB - 64, .def = "64MiB", .unit = "bytes",
   .help = "decoded frames larger than this are not shown"},
  {"live.send_hwm", DAEMON, RESTART, .type = CT_INT, D(live.send_hwm), .min = 1,
   .max = 1000, .def = "2",
   .help = "PUB messages queued per subscriber; a slower subscriber misses "
           "frames (counted), never slows anything"},

  /* sources */
  {"kind", SOURCE, RESTART, .type = CT_ENUM, SR(kind), .enums = source_kinds,
   .help = "dectris-stream2: DECTRIS Stream V2 (CBOR over ZeroMQ PUSH)"},
  {"endpoint", SOURCE, RESTART, .type = CT_ENDPOINT, SR(endpoint),
   .help = "the detector's PUSH endpoint; the daemon connects a PULL socket"},
  {"template", SOURCE, RESTART, .type = CT_TEMPLATE, SR(template_name),
   .def = "default",
   .help = "template whose settings the series' streams get"},
  {"name", SOURCE, RESTART, .type = CT_STRING, SR(name),
   .def = "{detector}-{series_id}-{channel}",
   .help = "stream name of a series' channel: {detector}, {series_id}, "
           "{series_unique_id}, {channel} are replaced"},
  {"series_timeout_ms", SOURCE, RESTART, .type = CT_INT, SR(series_timeout_ms),
   .min = 100, .max = 86400000, .def = "60000", .unit = "ms",
   .help = "a series with no message for this long is closed"},
  {"verify", SOURCE, RESTART, .type = CT_ENUM, SR(verify), .enums = bools,
   .def = "true", .help = "check that every LZ4 block stored as it came "
                          "decodes to its block, to refuse damaged images"},
  {"layout", SOURCE, RESTART, .type = CT_ENUM, SR(layout), .enums = layouts,
   .def = "flat",
   .help = "flat: arrays (images, pixels); images: (images, y, x), compressed "
           "again unless a row block is 8 KiB"},
  {"compression", SOURCE, RESTART, .type = CT_ENUM, SR(compression),
   .enums = source_comps, .def = "bslz4",
   .help = "what the detector sends: the frames' blocks are laid out so its "
           "images are stored without recompression (lz4: a block per image)"},
  {"max_message", SOURCE, RESTART, .type = CT_INT, SR(max_message), .min = 1,
   .max = 2047, .def = "256", .unit = "MiB",
   .help = "largest message accepted; longer ones are refused by ZeroMQ"},
  {"beamline", SOURCE, RESTART, .type = CT_GROUP,
   .help = "facts the detector does not know, recorded in the series "
           "metadata under beamline; a fact not given is not recorded"},
  {"beamline.source_name", SOURCE, RESTART, .type = CT_STRING,
   SR(beamline.source_name), .def = "",
   .help = "the facility (NXsource/name), e.g. Diamond Light Source"},
  {"beamline.source_type", SOURCE, RESTART, .type = CT_STRING,
   SR(beamline.source_type), .def = "",
   .help = "NXsource/type, e.g. Synchrotron X-ray Source"},
  {"beamline.source_probe", SOURCE, RESTART, .type = CT_STRING,
   SR(beamline.source_probe), .def = "",
   .help = "NXsource/probe: neutron, photon, x-ray, muon, electron, "
           "ultraviolet, visible light, positron or proton"},
  {"beamline.instrument_name", SOURCE, RESTART, .type = CT_STRING,
   SR(beamline.instrument_name), .def = "",
   .help = "the beamline (NXinstrument/name), e.g. I04"},
  {"beamline.sample_name", SOURCE, RESTART, .type = CT_STRING,
   SR(beamline.sample_name), .def = "",
   .help = "the sample (NXsample/name)"},
  {"beamline.beam_flux", SOURCE, RESTART, .type = CT_FLOAT, SR(beamline.beam_flux),
   .min = 0, .max = INT64_MAX, .def = "0", .unit = "photons/s",
   .help = "flux on the sample (NXbeam/total_flux); 0: not given"},

  /* cluster */
  {"storage", CLUSTER, NEXT_FRAME("distributed streams opened from now on; the running ones keep theirs"), .type = CT_STORAGE, C(storage),
   .help = "object store of the chunk objects: rados://POOL, file:///DIR or "
           "a directory shared by all ranks"},
  {"ceph_conf", CLUSTER, NEXT_FRAME("distributed streams opened from now on; the running ones keep theirs"), .type = CT_PATH, C(ceph_conf), .def = "",
   .help = "rados: the ceph.conf to use; \"\" = $CEPH_CONF or librados's "
           "search"},
  {"rank", CLUSTER, NEXT_FRAME("distributed streams opened from now on; the running ones keep theirs"), .type = CT_INT, C(rank), .min = 0,
   .max = B2S_CLUSTER_MAX_RANKS - 1,
   .help = "this daemon's rank: its index in ranks"},
  {"ranks", CLUSTER, NEXT_FRAME("distributed streams opened from now on; the running ones keep theirs"), .type = CT_ENDPOINTS, .flags = CF_COUNT16,
   CL(ranks, nranks), .min_items = 1, .max_items = B2S_CLUSTER_MAX_RANKS,
   .help = "producer endpoint of every rank, in rank order; their number "
           "is the number of ranks"},
  {"committer", CLUSTER, NEXT_FRAME("distributed streams opened from now on; the running ones keep theirs"), .type = CT_ENDPOINT, C(committer),
   .help = "the committer's PULL endpoint, to which this rank reports each "
           "chunk it stored"},
  {"committer_pub", CLUSTER, NEXT_FRAME("distributed streams opened from now on; the running ones keep theirs"), .type = CT_ENDPOINT, C(committer_pub),
   .def = "", .help = "the committer's PUB endpoint, where followers learn "
                      "of commits; \"\" = not given"},
  {"frames_per_block", CLUSTER, NEXT_FRAME("distributed streams opened from now on; the running ones keep theirs"), .type = CT_INT, C(frames_per_block),
   .min = 1, .max = INT32_MAX, .def = "1",
   .help = "consecutive frame numbers owned by one rank: frame f belongs "
           "to rank (f / frames_per_block) % number of ranks"},

  /* stream (and template) */
  {"template", STREAM, AT_ONCE("names where the other keys come from; each of those takes its new value as its own row says"), .type = CT_TEMPLATE, .flags = CF_STREAM_ONLY,
   S(template_name), .def = "default",
   .help = "template the other keys override"},
  {"path", STREAM, RESTART, .type = CT_STREAM_PATH, S(path), .def = "{name}.b2frame",
   .help = "frame path inside data_dir; {name} is the stream name"},
  {"format", STREAM, RESTART, .type = CT_ENUM, S(format), .enums = formats,
   .def = "contiguous",
   .help = "contiguous (one file), sparse (a directory) or distributed "
           "(chunk objects in the cluster's storage)"},
  {"io", STREAM, RESTART_("a writer option, fixed when the frame opens"), .type = CT_ENUM, S(io), .enums = ios, .def = "direct",
   .help = "contiguous: chunk data written with O_DIRECT (direct, where the "
           "file system allows it) or through the page cache (buffered)"},
  {"codec", STREAM, AT_ONCE(CPARAMS_AT_ONCE), .type = CT_ENUM, S(cparams.codec), .enums = codecs,
   .def = "zstd", .help = "blosclz, lz4, lz4hc, zlib or zstd"},
  {"clevel", STREAM, AT_ONCE(CPARAMS_AT_ONCE), .type = CT_INT, S(cparams.clevel), .min = 0, .max = 9,
   .def = "5", .help = "compression level; 0 stores the data"},
  {"typesize", STREAM, AT_ONCE(CPARAMS_AT_ONCE), .type = CT_INT, S(cparams.typesize), .min = 1,
   .max = B2S_MAX_TYPESIZE, .def = "2", .unit = "bytes",
   .help = "item size the filters work on"},
  {"filters", STREAM, AT_ONCE(CPARAMS_AT_ONCE), .type = CT_ENUM_LIST, SL(filters, nfilters),
   .enums = filters, .max_items = B2S_MAX_FILTERS, .def = "[shuffle]",
   .help = "pipeline: shuffle, bitshuffle, delta, truncprec"},
  {"filters_meta", STREAM, AT_ONCE(CPARAMS_AT_ONCE), .type = CT_INT_LIST,
   SL(filters_meta, nfilters_meta), .min = -128, .max = 255,
   .max_items = B2S_MAX_FILTERS, .def = "[]",
   .help = "one parameter per filter (truncprec: bits kept); [] = none"},
  {"blocksize", STREAM, AT_ONCE(CPARAMS_AT_ONCE), .type = CT_SIZE, S(cparams.blocksize), .min = 0,
   .max = B2S_MAX_BLOCKSIZE, .def = "0", .unit = "bytes",
   .help = "0 = automatic (or from b2nd.blockshape)"},
  {"split", STREAM, AT_ONCE(CPARAMS_AT_ONCE), .type = CT_ENUM, S(cparams.splitmode), .enums = splits,
   .def = "forward_compat",
   .help = "always, never, auto or forward_compat"},
  {"b2nd", STREAM, RESTART_("the frame's b2nd metalayer, written when it was made"), .type = CT_GROUP, .flags = CF_OPTIONAL,
   .aux = offsetof(b2s_stream_cfg, b2nd.enabled),
   .help = "N-d array metadata (python-blosc2 opens the frame as an array)"},
  /* no defaults: without b2nd there are no shapes */
  {"b2nd.shape", STREAM, RESTART, .type = CT_INT_LIST, SL(b2nd.shape, b2nd.nshape),
   .min = 0, .max = INT64_MAX, .min_items = 1,
   .max_items = B2S_CONFIG_MAX_DIM,
   .help = "array shape; a first dimension of 0 grows with the stream"},
  {"b2nd.chunkshape", STREAM, RESTART, .type = CT_INT_LIST,
   SL(b2nd.chunkshape, b2nd.nchunkshape), .min = 1, .max = INT32_MAX,
   .min_items = 1, .max_items = B2S_CONFIG_MAX_DIM,
   .help = "shape of one chunk (one buffer)"},
  {"b2nd.blockshape", STREAM, RESTART, .type = CT_INT_LIST,
   SL(b2nd.blockshape, b2nd.nblockshape), .min = 1, .max = INT32_MAX,
   .max_items = B2S_CONFIG_MAX_DIM,
   .help = "shape of one block; [] = the chunkshape"},
  {"b2nd.dtype", STREAM, RESTART, .type = CT_DTYPE, S(b2nd.dtype), .def = "",
   .help = "NumPy dtype string, e.g. <u2; \"\" = from typesize"},
  {"durability", STREAM, AT_ONCE("each key as its row says"), .type = CT_GROUP,
   .help = "when producers are acknowledged and commits happen"},
  {"durability.ack", STREAM, AT_ONCE("to the writer's next commit and to handles opened from now on; open handles keep the level OPENED gave them, and the frame's sync mode (a writer option) is fixed when it opens"), .type = CT_ENUM, S(durability.ack),
   .enums = acks, .def = "write",
   .help = "acknowledge on receipt, after write, or after fsync"},
  {"durability.group_count", STREAM, AT_ONCE("to the writer's next commit"), .type = CT_INT,
   S(durability.group_count), .min = 1, .max = 1000000, .def = "64",
   .help = "commit after this many chunks"},
  {"durability.group_interval_ms", STREAM, AT_ONCE("to the writer's next commit"), .type = CT_INT,
   S(durability.group_interval_ms), .min = 0, .max = 60000, .def = "50",
   .unit = "ms", .help = "... or after this long"},
  {"backpressure", STREAM, AT_ONCE("to buffers accepted from now on; open handles were told the old policy in OPENED"), .type = CT_ENUM, S(backpressure),
   .enums = backpressures, .def = "block",
   .help = "when the queue is full: block, drop-newest or drop-oldest"},
  {"queue_depth", STREAM, AT_ONCE("to buffers accepted from now on; open handles keep the credits OPENED gave them"), .type = CT_INT, S(queue_depth), .min = 1,
   .max = 65536, .def = "64", .help = "buffers in flight for the stream"},
  {"gaps", STREAM, AT_ONCE("to buffers dropped or refused from now on"), .type = CT_ENUM, S(gaps), .enums = gapss, .def = "auto",
   .help = "a dropped or rejected buffer leaves a placeholder chunk (fill) "
           "or nothing (skip); auto: fill for b2nd streams"},
  {"order", STREAM, RESTART_("the reorder window runs on"), .type = CT_ENUM, S(order), .enums = orders,
   .def = "arrival",
   .help = "chunks in arrival order or in producers' frame-number order"},
  {"acquisitions", STREAM, RESTART, .type = CT_ENUM, S(acquisitions),
   .enums = acq_modes, .def = "off",
   .help = "off: the stream writes its own frame at path and cannot be an "
           "input; only: it writes acquisitions only, its path unused; "
           "buffers arriving when no acquisition takes frames are refused "
           "(B2S_E_NOT_ARMED)"},
  {"reorder_window", STREAM, RESTART_("the reorder window runs on"), .type = CT_INT, S(reorder_window), .min = 1,
   .max = B2S_REORDER_WINDOW_MAX, .def = "64",
   .help = "order: frame_number: frame numbers a buffer may run ahead of "
           "the next one stored"},
  {"series", STREAM, NEXT_FRAME("a frame made from now on starts with it; a frame that exists keeps its own map"), .type = CT_SERIES, S(series),
   .aux = offsetof(b2s_stream_cfg, series_len),
   .help = "series metadata a new frame starts with: key -> scalar or flat "
           "list; a stream's own replaces its template's"},
  {"chunk_nbytes", STREAM, RESTART_("the distributed frame's, in the store"), .type = CT_SIZE, S(chunk_nbytes), .min = 0,
   .max = 2 * GIB - 64, .def = "0", .unit = "bytes",
   .help = "format: distributed: bytes of every buffer (chunk); 0 = from "
           "b2nd.chunkshape"},
};

const size_t b2s_cfg_nschema = sizeof b2s_cfg_schema / sizeof b2s_cfg_schema[0];

_Static_assert(sizeof b2s_cfg_schema / sizeof b2s_cfg_schema[0] <= CFG_MAX_DESC,
               "the per-row arrays hold CFG_MAX_DESC entries");
_Static_assert(offsetof(b2s_daemon_cfg, acq.roots) <= UINT16_MAX &&
                   sizeof(b2s_stream_cfg) <= UINT16_MAX &&
                   offsetof(b2s_cluster_cfg, ranks) <= UINT16_MAX,
               "field offsets are 16-bit");
_Static_assert(B2S_CLUSTER_MAX_RANKS <= UINT16_MAX,
               "the rank count is a uint16_t (CF_COUNT16)");

const char *b2s_cfg_desc_key(const cfg_desc *d) {
  const char *dot = strrchr(d->path, '.');
  return dot ? dot + 1 : d->path;
}

bool b2s_cfg_desc_under(const cfg_desc *d, int scope, const char *prefix) {
  if (d->scope != scope)
    return false;
  size_t pl = strlen(prefix);
  if (pl == 0)
    return strchr(d->path, '.') == NULL;
  return strncmp(d->path, prefix, pl) == 0 && d->path[pl] == '.' &&
         strchr(d->path + pl + 1, '.') == NULL;
}

int b2s_cfg_schema_find(int scope, const char *prefix, const char *key,
                    size_t keylen) {
  for (size_t i = 0; i < b2s_cfg_nschema; i++) {
    const cfg_desc *d = &b2s_cfg_schema[i];
    if (!b2s_cfg_desc_under(d, scope, prefix))
      continue;
    const char *k = b2s_cfg_desc_key(d);
    if (strlen(k) == keylen && memcmp(k, key, keylen) == 0)
      return (int)i;
  }
  return -1;
}

const cfg_enum *b2s_cfg_enum_by_value(const cfg_enum *e, int value) {
  for (; e->name; e++)
    if (e->value == value)
      return e;
  return NULL;
}

int b2s_cfg_desc_parent(int di) {
  const cfg_desc *d = &b2s_cfg_schema[di];
  const char *dot = strrchr(d->path, '.');
  for (size_t i = 0; dot && i < b2s_cfg_nschema; i++)
    if (b2s_cfg_schema[i].scope == d->scope &&
        strlen(b2s_cfg_schema[i].path) == (size_t)(dot - d->path) &&
        strncmp(b2s_cfg_schema[i].path, d->path, (size_t)(dot - d->path)) == 0)
      return (int)i;
  return -1;
}

int b2s_cfg_schema_index(int scope, const char *path) {
  for (size_t i = 0; i < b2s_cfg_nschema; i++)
    if (b2s_cfg_schema[i].scope == scope && strcmp(b2s_cfg_schema[i].path, path) == 0)
      return (int)i;
  return -1;
}

/* The HTTP listener's pure parts (daemon/ops/metrics.c, httproute.c,
 * thumb.c): the exact Prometheus and JSON texts of a snapshot, histogram
 * bucket edges, request routing, thumbnail scaling and the PNG bytes
 * (decoded again with libpng). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <png.h>

#include "httproute.h"
#include "metrics.h"
#include "textfile.h"
#include "thumb.h"
#include "b2s_errors.h"
#include "ts.h"

/* Every field distinct, so a field printed in another's place shows. */
static b2sd_mstream one_stream(void) {
  b2sd_mstream st = {.name = "cam", .format = "contiguous", .ndim = 3,
    .buffers_in = 10, .bytes_in = 40960, .bytes_out = 10240, .chunks = 9,
    .commits = 3, .drops_newest = 1, .drops_oldest = 2, .rejected = 4,
    .gaps = 5, .errors = 6, .slow_calls = 7, .queued = 8, .queue_limit = 64,
    .backlog = 11, .committed = 12,
    .last_commit_ns = UINT64_C(1700000000500000000)};
  st.commit.bucket[0] = 1;       /* <= 100 us */
  st.commit.bucket[3] = 2;       /* <= 1 ms */
  st.commit.bucket[12] = 1;      /* > 1 s */
  st.commit.sum_ns = 2000300000;
  return st;
}

static b2sd_msnap one_snap(b2sd_mstream *st) {
  return (b2sd_msnap){.taken_ns = UINT64_C(1700000001000000000),
    .start_ns = UINT64_C(1699999999000000000),
    .version = "0.1.0\"x\\",      /* label escaping */
    .workers = 2, .sessions = 3, .sessions_reclaimed = 1, .connections = 4,
    .accept_failed = 5, .limit_refused = 6, .fd_open = 30, .fd_limit = 1024,
    .queued = 8, .inflight_bytes = 1000, .shm_bytes = 2000,
    .stage_bytes = 3000, .memory_limit = 268435456, .shm_segments = 1,
    .shm_slots = 16, .disk_free = 5000, .disk_size = 9000,
    .http_requests = 42, .live_frames = 7, .live_dropped = 2, .nstreams = 1, .streams = st, .nsources = 1,
    .sources = {{.endpoint = "tcp://dcu\"1:31001", .kind = "dectris-stream2",
                 .messages = 10, .images = 7, .refused = 1,
                 .unknown_series = 2, .series = 3, .series_timed_out = 1,
                 .series_open = true}}};
}

static const char expect_prom[] =
  "# HELP b2stream_build_info The daemon's version; always 1.\n"
  "# TYPE b2stream_build_info gauge\n"
  "b2stream_build_info{version=\"0.1.0\\\"x\\\\\"} 1\n"
  "# HELP b2stream_start_time_seconds When the daemon started, seconds since the Unix epoch.\n"
  "# TYPE b2stream_start_time_seconds gauge\n"
  "b2stream_start_time_seconds 1699999999.000\n"
  "# HELP b2stream_workers Compression threads.\n"
  "# TYPE b2stream_workers gauge\n"
  "b2stream_workers 2\n"
  "# HELP b2stream_streams Streams open.\n"
  "# TYPE b2stream_streams gauge\n"
  "b2stream_streams 1\n"
  "# HELP b2stream_sessions Client sessions open.\n"
  "# TYPE b2stream_sessions gauge\n"
  "b2stream_sessions 3\n"
  "# HELP b2stream_sessions_reclaimed_total Sessions ended without BYE (peer gone, producer dead, silent past its timeout).\n"
  "# TYPE b2stream_sessions_reclaimed_total counter\n"
  "b2stream_sessions_reclaimed_total 1\n"
  "# HELP b2stream_connections Peer connections open.\n"
  "# TYPE b2stream_connections gauge\n"
  "b2stream_connections 4\n"
  "# HELP b2stream_connections_refused_total Connections closed at once for want of file descriptors.\n"
  "# TYPE b2stream_connections_refused_total counter\n"
  "b2stream_connections_refused_total 5\n"
  "# HELP b2stream_limit_refused_total HELLOs and OPENs refused by max_sessions, max_streams or the descriptor reserve.\n"
  "# TYPE b2stream_limit_refused_total counter\n"
  "b2stream_limit_refused_total 6\n"
  "# HELP b2stream_open_fds File descriptors open.\n"
  "# TYPE b2stream_open_fds gauge\n"
  "b2stream_open_fds 30\n"
  "# HELP b2stream_max_fds File descriptor limit.\n"
  "# TYPE b2stream_max_fds gauge\n"
  "b2stream_max_fds 1024\n"
  "# HELP b2stream_queued_jobs Buffers waiting for a worker, all streams.\n"
  "# TYPE b2stream_queued_jobs gauge\n"
  "b2stream_queued_jobs 8\n"
  "# HELP b2stream_memory_used_bytes Memory counted against memory_limit, by kind: buffers and chunks in flight, shared-memory segments, direct-I/O stages.\n"
  "# TYPE b2stream_memory_used_bytes gauge\n"
  "b2stream_memory_used_bytes{kind=\"inflight\"} 1000\n"
  "b2stream_memory_used_bytes{kind=\"shm\"} 2000\n"
  "b2stream_memory_used_bytes{kind=\"stage\"} 3000\n"
  "# HELP b2stream_memory_limit_bytes The configured memory_limit.\n"
  "# TYPE b2stream_memory_limit_bytes gauge\n"
  "b2stream_memory_limit_bytes 268435456\n"
  "# HELP b2stream_shm_segments Shared-memory segments of producers.\n"
  "# TYPE b2stream_shm_segments gauge\n"
  "b2stream_shm_segments 1\n"
  "# HELP b2stream_shm_slots Slots of those segments.\n"
  "# TYPE b2stream_shm_slots gauge\n"
  "b2stream_shm_slots 16\n"
  "# HELP b2stream_data_dir_free_bytes Bytes available to the daemon in the file system of data_dir (-1: unknown).\n"
  "# TYPE b2stream_data_dir_free_bytes gauge\n"
  "b2stream_data_dir_free_bytes 5000\n"
  "# HELP b2stream_data_dir_size_bytes Size of the file system of data_dir (-1: unknown).\n"
  "# TYPE b2stream_data_dir_size_bytes gauge\n"
  "b2stream_data_dir_size_bytes 9000\n"
  "# HELP b2stream_draining 1 while the daemon drains to stop.\n"
  "# TYPE b2stream_draining gauge\n"
  "b2stream_draining 0\n"
  "# HELP b2stream_http_requests_total HTTP requests answered.\n"
  "# TYPE b2stream_http_requests_total counter\n"
  "b2stream_http_requests_total 42\n"
  "# HELP b2stream_live_frames_total Frames decoded for the live view.\n"
  "# TYPE b2stream_live_frames_total counter\n"
  "b2stream_live_frames_total 7\n"
  "# HELP b2stream_live_dropped_total Live view messages a full PUB "
  "subscriber did not get.\n"
  "# TYPE b2stream_live_dropped_total counter\n"
  "b2stream_live_dropped_total 2\n"
  "# HELP b2stream_stream_buffers_in_total Buffers accepted.\n"
  "# TYPE b2stream_stream_buffers_in_total counter\n"
  "b2stream_stream_buffers_in_total{stream=\"cam\"} 10\n"
  "# HELP b2stream_stream_bytes_in_total Bytes of the buffers accepted.\n"
  "# TYPE b2stream_stream_bytes_in_total counter\n"
  "b2stream_stream_bytes_in_total{stream=\"cam\"} 40960\n"
  "# HELP b2stream_stream_bytes_out_total Compressed bytes written.\n"
  "# TYPE b2stream_stream_bytes_out_total counter\n"
  "b2stream_stream_bytes_out_total{stream=\"cam\"} 10240\n"
  "# HELP b2stream_stream_chunks_total Chunks written.\n"
  "# TYPE b2stream_stream_chunks_total counter\n"
  "b2stream_stream_chunks_total{stream=\"cam\"} 9\n"
  "# HELP b2stream_stream_commits_total Frame commits.\n"
  "# TYPE b2stream_stream_commits_total counter\n"
  "b2stream_stream_commits_total{stream=\"cam\"} 3\n"
  "# HELP b2stream_stream_rejected_total Buffers refused (ERROR).\n"
  "# TYPE b2stream_stream_rejected_total counter\n"
  "b2stream_stream_rejected_total{stream=\"cam\"} 4\n"
  "# HELP b2stream_stream_gaps_total Gap records written for buffers that did not reach the frame.\n"
  "# TYPE b2stream_stream_gaps_total counter\n"
  "b2stream_stream_gaps_total{stream=\"cam\"} 5\n"
  "# HELP b2stream_stream_errors_total Compression and write errors.\n"
  "# TYPE b2stream_stream_errors_total counter\n"
  "b2stream_stream_errors_total{stream=\"cam\"} 6\n"
  "# HELP b2stream_stream_slow_disk_calls_total Disk calls slower than slow_disk_ms.\n"
  "# TYPE b2stream_stream_slow_disk_calls_total counter\n"
  "b2stream_stream_slow_disk_calls_total{stream=\"cam\"} 7\n"
  "# HELP b2stream_stream_queue_depth Buffers waiting for a worker.\n"
  "# TYPE b2stream_stream_queue_depth gauge\n"
  "b2stream_stream_queue_depth{stream=\"cam\"} 8\n"
  "# HELP b2stream_stream_queue_limit The configured queue_depth.\n"
  "# TYPE b2stream_stream_queue_limit gauge\n"
  "b2stream_stream_queue_limit{stream=\"cam\"} 64\n"
  "# HELP b2stream_stream_backlog_buffers Buffers accepted and not yet committed or dropped.\n"
  "# TYPE b2stream_stream_backlog_buffers gauge\n"
  "b2stream_stream_backlog_buffers{stream=\"cam\"} 11\n"
  "# HELP b2stream_stream_committed_chunks Chunks in the frame.\n"
  "# TYPE b2stream_stream_committed_chunks gauge\n"
  "b2stream_stream_committed_chunks{stream=\"cam\"} 12\n"
  "# HELP b2stream_stream_dropped_total Buffers dropped by backpressure, by policy.\n"
  "# TYPE b2stream_stream_dropped_total counter\n"
  "b2stream_stream_dropped_total{stream=\"cam\",policy=\"drop-newest\"} 1\n"
  "b2stream_stream_dropped_total{stream=\"cam\",policy=\"drop-oldest\"} 2\n"
  "# HELP b2stream_stream_state 1 for the stream's state: writing, or failed (its frame cannot be written).\n"
  "# TYPE b2stream_stream_state gauge\n"
  "b2stream_stream_state{stream=\"cam\",state=\"writing\"} 1\n"
  "b2stream_stream_state{stream=\"cam\",state=\"failed\"} 0\n"
  "# HELP b2stream_stream_last_commit_timestamp_seconds When the stream last committed, seconds since the Unix epoch (0: not since the start).\n"
  "# TYPE b2stream_stream_last_commit_timestamp_seconds gauge\n"
  "b2stream_stream_last_commit_timestamp_seconds{stream=\"cam\"} 1700000000.500\n"
  "# HELP b2stream_stream_commit_duration_seconds Time a frame commit takes (the records frame, then the data frame).\n"
  "# TYPE b2stream_stream_commit_duration_seconds histogram\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.0001\"} 1\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.00025\"} 1\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.0005\"} 1\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.001\"} 3\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.0025\"} 3\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.005\"} 3\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.01\"} 3\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.025\"} 3\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.05\"} 3\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.1\"} 3\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"0.25\"} 3\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"1\"} 3\n"
  "b2stream_stream_commit_duration_seconds_bucket{stream=\"cam\",le=\"+Inf\"} 4\n"
  "b2stream_stream_commit_duration_seconds_sum{stream=\"cam\"} 2.000300000\n"
  "b2stream_stream_commit_duration_seconds_count{stream=\"cam\"} 4\n"
  "# HELP b2stream_stream_notify_delay_seconds Time from a commit to the NOTIFY that announces it to followers.\n"
  "# TYPE b2stream_stream_notify_delay_seconds histogram\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.0001\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.00025\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.0005\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.001\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.0025\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.005\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.01\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.025\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.05\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.1\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"0.25\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"1\"} 0\n"
  "b2stream_stream_notify_delay_seconds_bucket{stream=\"cam\",le=\"+Inf\"} 0\n"
  "b2stream_stream_notify_delay_seconds_sum{stream=\"cam\"} 0.000000000\n"
  "b2stream_stream_notify_delay_seconds_count{stream=\"cam\"} 0\n"
  "# HELP b2stream_source_messages_total Messages received from the detector.\n"
  "# TYPE b2stream_source_messages_total counter\n"
  "b2stream_source_messages_total{source=\"tcp://dcu\\\"1:31001\",kind=\"dectris-stream2\"} 10\n"
  "# HELP b2stream_source_images_total Image messages taken (one per image, whatever its channels).\n"
  "# TYPE b2stream_source_images_total counter\n"
  "b2stream_source_images_total{source=\"tcp://dcu\\\"1:31001\",kind=\"dectris-stream2\"} 7\n"
  "# HELP b2stream_source_decode_failures_total Messages refused: malformed, of unknown kind or size, or an image that does not decode to its declared shape.\n"
  "# TYPE b2stream_source_decode_failures_total counter\n"
  "b2stream_source_decode_failures_total{source=\"tcp://dcu\\\"1:31001\",kind=\"dectris-stream2\"} 1\n"
  "# HELP b2stream_source_unknown_series_total Images of a series no start message opened.\n"
  "# TYPE b2stream_source_unknown_series_total counter\n"
  "b2stream_source_unknown_series_total{source=\"tcp://dcu\\\"1:31001\",kind=\"dectris-stream2\"} 2\n"
  "# HELP b2stream_source_series_total Series started.\n"
  "# TYPE b2stream_source_series_total counter\n"
  "b2stream_source_series_total{source=\"tcp://dcu\\\"1:31001\",kind=\"dectris-stream2\"} 3\n"
  "# HELP b2stream_source_series_timed_out_total Series closed by the timeout, with no end message.\n"
  "# TYPE b2stream_source_series_timed_out_total counter\n"
  "b2stream_source_series_timed_out_total{source=\"tcp://dcu\\\"1:31001\",kind=\"dectris-stream2\"} 1\n"
  "# HELP b2stream_source_series_open 1 while a series is open.\n"
  "# TYPE b2stream_source_series_open gauge\n"
  "b2stream_source_series_open{source=\"tcp://dcu\\\"1:31001\",kind=\"dectris-stream2\"} 1\n";
static const char expect_json[] =
  "{\"time\":1700000001.000,\"version\":\"0.1.0\\\"x\\\\\",\"sessions\":3"
  ",\"disk_free\":5000,\"disk_size\":9000,\"memory_used\":6000"
  ",\"memory_limit\":268435456,\"streams\":{\"cam\":{\"format\":\"contiguous\""
  ",\"buffers_in\":10,\"bytes_in\":40960,\"bytes_out\":10240,\"chunks\":9"
  ",\"committed\":12,\"dropped\":3,\"rejected\":4,\"gaps\":5,\"errors\":6"
  ",\"queued\":8,\"queue_limit\":64,\"backlog\":11,\"last_commit_age\":0.500"
  ",\"thumbnail\":true,\"failed\":false,\"error\":\"\"}}}";

static void test_prometheus_text(void **state) {
  (void)state;
  b2sd_mstream st = one_stream();
  b2sd_msnap s = one_snap(&st);
  b2sd_text t = {0};
  b2sd_metrics_prometheus(&s, &t);
  assert_false(t.oom);
  assert_int_equal(t.len, strlen(t.p));
  assert_string_equal(t.p, expect_prom);
  b2sd_text_free(&t);
}

static void test_status_json(void **state) {
  (void)state;
  b2sd_mstream st = one_stream();
  b2sd_msnap s = one_snap(&st);
  b2sd_text t = {0};
  b2sd_metrics_json(&s, &t);
  assert_string_equal(t.p, expect_json);
  b2sd_text_free(&t);
  /* a failed stream that never committed: no age, its reason, no image */
  st.failed = -28;
  st.last_commit_ns = 0;
  st.committed = 0;
  strcpy(st.fail_reason, "no space \"left\"");
  b2sd_metrics_json(&s, &t);
  assert_non_null(strstr(t.p, "\"last_commit_age\":null,\"thumbnail\":false,"
                              "\"failed\":true,\"error\":\"no space "
                              "\\\"left\\\"\"}"));
  b2sd_text_free(&t);
}

/* A duration on an edge is in that edge's bucket (le: less or equal). */
static void test_histogram_edges(void **state) {
  (void)state;
  b2sd_hist h;
  memset(&h, 0, sizeof h);
  b2sd_hist_note(&h, 100000);    /* 100 us: le 0.0001 */
  b2sd_hist_note(&h, 100001);    /* le 0.00025 */
  b2sd_hist_note(&h, 1000000000); /* 1 s: le 1 */
  b2sd_hist_note(&h, 1000000001); /* +Inf only */
  b2sd_mhist m;
  b2sd_hist_read(&h, &m);
  uint64_t want[B2SD_HIST_EDGES + 1] = {[0] = 1, [1] = 1, [11] = 1, [12] = 1};
  for (int i = 0; i <= B2SD_HIST_EDGES; i++)
    assert_int_equal(m.bucket[i], want[i]);
  assert_int_equal(m.sum_ns, 2000200002);
}

static void route(const char *method, const char *url, b2sd_route_kind k,
                  const char *stream) {
  b2sd_route r;
  b2sd_http_route(method, url, &r);
  if (r.kind != k)
    fail_msg("%s %s: kind %d, want %d", method, url, r.kind, k);
  assert_string_equal(r.stream, stream);
}

static void api(const char *method, const char *url, b2sd_route_kind k,
                b2sd_api a, const char *id) {
  b2sd_route r;
  b2sd_http_route(method, url, &r);
  if (r.kind != k || r.api != a || strcmp(r.id, id) != 0)
    fail_msg("%s %s: kind %d api %d id '%s'", method, url, r.kind, r.api,
             r.id);
}

/* The control API's routes and methods (ACQUISITIONS.md 9.1, 9.5). */
static void test_api_routes(void **state) {
  (void)state;
  api("GET", "/api/v1", B2SD_ROUTE_API, B2SD_API_ROOT, "");
  api("POST", "/api/v1/acquisitions", B2SD_ROUTE_API, B2SD_API_ARM, "");
  api("GET", "/api/v1/acquisitions?state=active", B2SD_ROUTE_API,
      B2SD_API_LIST, "");
  api("GET", "/api/v1/acquisitions/scan-42", B2SD_ROUTE_API, B2SD_API_GET,
      "scan-42");
  api("HEAD", "/api/v1/acquisitions/a.b/files", B2SD_ROUTE_API,
      B2SD_API_FILES, "a.b");
  api("POST", "/api/v1/acquisitions/x/stop", B2SD_ROUTE_API, B2SD_API_STOP,
      "x");
  api("POST", "/api/v1/acquisitions/x/abort", B2SD_ROUTE_API,
      B2SD_API_ABORT, "x");
  api("GET", "/api/v1/acquisitions/x/wait?committed=3", B2SD_ROUTE_API,
      B2SD_API_WAIT, "x");
  api("HEAD", "/api/v1/acquisitions/x/wait", B2SD_ROUTE_API_METHOD,
      B2SD_API_WAIT, "x");
  api("GET", "/api/v1/acquisitions/x/stop", B2SD_ROUTE_API_METHOD,
      B2SD_API_STOP, "x");
  api("DELETE", "/api/v1/acquisitions", B2SD_ROUTE_API_METHOD, B2SD_API_LIST,
      "");
  api("GET", "/api/v1/", B2SD_ROUTE_NOT_FOUND, B2SD_API_NONE, "");
  api("GET", "/api/v1/acquisitions/", B2SD_ROUTE_NOT_FOUND, B2SD_API_NONE, "");
  api("GET", "/api/v1/acquisitions/.x", B2SD_ROUTE_NOT_FOUND, B2SD_API_NONE,
      "");
  api("GET", "/api/v1/acquisitions/x/y", B2SD_ROUTE_NOT_FOUND, B2SD_API_NONE,
      "");
  api("GET", "/api/v1/acquisitions/a%2fb", B2SD_ROUTE_NOT_FOUND,
      B2SD_API_NONE, "");
  api("GET", "/api/v2", B2SD_ROUTE_NOT_FOUND, B2SD_API_NONE, "");
  b2sd_api_params p;
  char field[80];
  const char *k1[] = {"committed", "timeout"}, *v1[] = {"12", "0.25"};
  assert_int_equal(b2sd_api_params_parse(B2SD_API_WAIT, k1, v1, 2, &p, field,
                                         sizeof field), 0);
  assert_true(p.has_committed);
  assert_int_equal(p.committed, 12);
  assert_true(p.timeout_s > 0.24 && p.timeout_s < 0.26);
  assert_int_equal(p.allow_loss, -1);
  const char *k2[] = {"limit", "limit"}, *v2[] = {"3", "4"};
  assert_int_equal(b2sd_api_params_parse(B2SD_API_LIST, k2, v2, 2, &p, field,
                                         sizeof field), -1);
  assert_string_equal(field, "limit");
  const char *k3[] = {"timeout"}, *v3[] = {"61"};
  assert_int_equal(b2sd_api_params_parse(B2SD_API_WAIT, k3, v3, 1, &p, field,
                                         sizeof field), -1);
  assert_string_equal(field, "timeout");
  const char *k4[] = {"committed", "state"}, *v4[] = {"1", "done"};
  assert_int_equal(b2sd_api_params_parse(B2SD_API_WAIT, k4, v4, 2, &p, field,
                                         sizeof field), -1);
  const char *k5[] = {"frames"}, *v5[] = {"1"};
  assert_int_equal(b2sd_api_params_parse(B2SD_API_GET, k5, v5, 1, &p, field,
                                         sizeof field), -1);
  assert_string_equal(field, "frames");
  const char *k6[] = {"limit", "after"}, *v6[] = {"1000", "7"};
  assert_int_equal(b2sd_api_params_parse(B2SD_API_FILES, k6, v6, 2, &p, field,
                                         sizeof field), 0);
  assert_int_equal(p.limit, 1000);
  assert_int_equal(p.after_file, 7);
}

static void test_routes(void **state) {
  (void)state;
  route("GET", "/", B2SD_ROUTE_PAGE, "");
  route("HEAD", "/", B2SD_ROUTE_PAGE, "");
  route("GET", "/metrics", B2SD_ROUTE_METRICS, "");
  route("GET", "/metrics?x=1", B2SD_ROUTE_METRICS, "");
  route("GET", "/status.json", B2SD_ROUTE_STATUS, "");
  route("GET", "/thumb/cam-1.x_y.png", B2SD_ROUTE_THUMB, "cam-1.x_y");
  route("GET", "/thumb/cam.png?c=12", B2SD_ROUTE_THUMB, "cam");
  route("POST", "/metrics", B2SD_ROUTE_METHOD, "");
  route("DELETE", "/thumb/cam.png", B2SD_ROUTE_METHOD, "");
  route("POST", "/nothing", B2SD_ROUTE_NOT_FOUND, "");
  route("GET", "/metrics/", B2SD_ROUTE_NOT_FOUND, "");
  route("GET", "/metricsx", B2SD_ROUTE_NOT_FOUND, "");
  route("GET", "//", B2SD_ROUTE_NOT_FOUND, "");
  route("GET", "", B2SD_ROUTE_NOT_FOUND, "");
  route("GET", "/thumb/.png", B2SD_ROUTE_NOT_FOUND, "");
  route("GET", "/thumb/../x.png", B2SD_ROUTE_NOT_FOUND, "");
  route("GET", "/thumb/a/b.png", B2SD_ROUTE_NOT_FOUND, "");
  route("GET", "/thumb/a%2fb.png", B2SD_ROUTE_NOT_FOUND, "");
  route("GET", "/thumb/cam.jpg", B2SD_ROUTE_NOT_FOUND, "");
  char longname[100] = "/thumb/";
  memset(longname + 7, 'a', 65);
  strcpy(longname + 72, ".png");
  route("GET", longname, B2SD_ROUTE_NOT_FOUND, "");
  longname[71] = '\0';
  strcat(longname, ".png");       /* 64 characters: the most */
  b2sd_route r;
  b2sd_http_route("GET", longname, &r);
  assert_int_equal(r.kind, B2SD_ROUTE_THUMB);
  assert_int_equal(strlen(r.stream), 64);
  b2sd_http_route(NULL, "/", &r);
  assert_int_equal(r.kind, B2SD_ROUTE_NOT_FOUND);
}

/* Levels stretched from the image's minimum to its maximum, in either
 * byte order and for signed and float pixels. */
static void test_thumb_scale(void **state) {
  (void)state;
  static uint8_t out[B2SD_THUMB_MAX * B2SD_THUMB_MAX];
  int oh, ow;
  const uint16_t le[6] = {100, 200, 300, 400, 500, 1100};
  assert_int_equal(b2sd_thumb_scale(le, "<u2", 2, 3, out, &oh, &ow), 0);
  assert_int_equal(oh, 2);
  assert_int_equal(ow, 3);
  const uint8_t want[6] = {0, 26, 51, 77, 102, 255}; /* (v-100)*255/1000 */
  assert_memory_equal(out, want, 6);
  const uint8_t be[4] = {0xff, 0xff, 0x00, 0x01}; /* >i2: -1, 1 */
  assert_int_equal(b2sd_thumb_scale(be, ">i2", 1, 2, out, &oh, &ow), 0);
  assert_int_equal(out[0], 0);
  assert_int_equal(out[1], 255);
  float f[3] = {0.5f, __builtin_nanf(""), 1.5f};
  assert_int_equal(b2sd_thumb_scale(f, "<f4", 1, 3, out, &oh, &ow), 0);
  assert_int_equal(out[0], 0);
  assert_int_equal(out[1], 0);   /* NaN: black */
  assert_int_equal(out[2], 255);
  /* the extremes of float64: hi - lo overflows, the scale must not */
  double ext[3] = {-1.7e308, 0.0, 1.7e308};
  assert_int_equal(b2sd_thumb_scale(ext, "<f8", 1, 3, out, &oh, &ow), 0);
  assert_int_equal(out[0], 0);
  assert_int_equal(out[1], 128);
  assert_int_equal(out[2], 255);
  uint8_t flat[4] = {7, 7, 7, 7};
  assert_int_equal(b2sd_thumb_scale(flat, "|u1", 2, 2, out, &oh, &ow), 0);
  assert_int_equal(out[0] | out[1] | out[2] | out[3], 0);
  assert_int_equal(b2sd_thumb_scale(flat, "<c8", 1, 1, out, &oh, &ow),
                   B2S_E_ARG);
  assert_int_equal(b2sd_thumb_scale(flat, "<u3", 1, 1, out, &oh, &ow),
                   B2S_E_ARG);
  /* 600 x 300 u1: every third pixel, 200 x 100, within the bound */
  uint8_t *big = malloc(600 * 300);
  for (int i = 0; i < 600 * 300; i++)
    big[i] = (uint8_t)((i / 300) % 251);   /* row number */
  assert_int_equal(b2sd_thumb_scale(big, "|u1", 600, 300, out, &oh, &ow), 0);
  assert_int_equal(oh, 200);
  assert_int_equal(ow, 100);
  assert_int_equal(out[0], 0);
  assert_int_equal(out[100], 3 * 255 / 250);  /* row 3 of 0..250 */
  free(big);
}

/* The PNG decodes (libpng) to the same grey levels and size. */
static void test_png_bytes(void **state) {
  (void)state;
  const uint8_t gray[6] = {0, 50, 100, 150, 200, 255};
  void *png = NULL;
  size_t len = 0;
  assert_int_equal(b2sd_png_gray(gray, 2, 3, &png, &len), 0);
  assert_true(len > 8);
  assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  assert_true(png_image_begin_read_from_memory(&im, png, len));
  assert_int_equal(im.width, 3);
  assert_int_equal(im.height, 2);
  im.format = PNG_FORMAT_GRAY;
  uint8_t back[6];
  assert_true(png_image_finish_read(&im, NULL, back, 3, NULL));
  assert_memory_equal(back, gray, 6);
  free(png);
}

/* Every metric family the daemon exposes is explained in
 * docs/MONITORING.md ($B2S_MONITORING_MD). */
static void test_every_metric_documented(void **state) {
  (void)state;
  const char *path = getenv("B2S_MONITORING_MD");
  assert_non_null(path);
  char *doc = ts_read_text(path, NULL);
  assert_non_null(doc);
  b2sd_mstream st = one_stream();
  b2sd_msnap s = one_snap(&st);
  b2sd_text t = {0};
  b2sd_metrics_prometheus(&s, &t);
  int families = 0;
  for (char *p = strstr(t.p, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
    char name[128], want[140];
    assert_int_equal(sscanf(p, "# TYPE %127s", name), 1);
    snprintf(want, sizeof want, "| `%s", name);  /* a row of a table */
    if (!strstr(doc, want))
      fail_msg("%s is not in the metric tables of %s", name, path);
    families++;
  }
  assert_int_equal(families, 47);
  b2sd_text_free(&t);
  free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prometheus_text),
      cmocka_unit_test(test_status_json),
      cmocka_unit_test(test_histogram_edges),
      cmocka_unit_test(test_routes),
      cmocka_unit_test(test_api_routes),
      cmocka_unit_test(test_thumb_scale),
      cmocka_unit_test(test_png_bytes),
      cmocka_unit_test(test_every_metric_documented),
  };
  return ts_run_tests(tests, NULL, NULL);
}

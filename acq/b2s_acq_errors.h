/* The acquisition API's error codes (docs/ACQUISITIONS.md section 12) and
 * the failure codes of a failed acquisition (section 7.5), each written
 * once; tests/test_acq_model.c checks both lists against the document's
 * tables and the OpenAPI file's ErrorCode and FailureCode enums.
 *
 * Codes are strings on the wire; their C values are internal (negative,
 * below core's codes, so a function of this room returns 0 or a count,
 * -errno, a core code or one of these).  Stable: a code is only ever
 * added.
 *
 * A refusal's details travel in a b2s_acq_err (this room's b2s_errdetail:
 * the API code, the request member or parameter at fault, the byte offset
 * of a JSON error and the sentence for a person), filled by the callee
 * and rendered by b2s_acq_err_json into the error body of section 9.3. */
#ifndef B2S_ACQ_ERRORS_H
#define B2S_ACQ_ERRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b2s_errors.h"

/* X(enum name, code, HTTP status, meaning as in section 12) */
#define B2S_ACQ_ERROR_LIST(X)                                                  \
  X(B2S_ACQ_E_BAD_JSON, "bad_json", 400, "the body is not one JSON object within the rules of 9.1") \
  X(B2S_ACQ_E_UNKNOWN_FIELD, "unknown_field", 400, "a request member this API does not have (`field` names it)") \
  X(B2S_ACQ_E_BAD_FIELD, "bad_field", 400, "a member of the wrong type or out of range, or one not allowed with the others (`first_frame` on an arrival-ordered stream, `template` with a source)") \
  X(B2S_ACQ_E_BAD_ID, "bad_id", 400, "`id` breaks its rules") \
  X(B2S_ACQ_E_BAD_TEMPLATE, "bad_template", 400, "`file_template` breaks its rules (3.3)") \
  X(B2S_ACQ_E_BAD_DIRECTORY, "bad_directory", 400, "`directory` is not absolute, has an empty, `.` or `..` component, is not UTF-8 or is too long") \
  X(B2S_ACQ_E_BAD_SERIES, "bad_series", 400, "`series` breaks a metadata limit or uses the key `b2stream_acquisition`") \
  X(B2S_ACQ_E_BAD_PARAMETER, "bad_parameter", 400, "a query parameter unknown, repeated, or out of range") \
  X(B2S_ACQ_E_AUTH_REQUIRED, "auth_required", 401, "a token is needed and none was sent") \
  X(B2S_ACQ_E_AUTH_INVALID, "auth_invalid", 401, "the token sent is not in the token file") \
  X(B2S_ACQ_E_CROSS_ORIGIN, "cross_origin", 403, "a request that changes state carries an `Origin` header") \
  X(B2S_ACQ_E_OUTSIDE_ROOTS, "outside_roots", 403, "the directory, resolved, is not inside `acquisitions.roots`") \
  X(B2S_ACQ_E_PERMISSION_DENIED, "permission_denied", 403, "the daemon may not write there") \
  X(B2S_ACQ_E_NOT_FOUND, "not_found", 404, "no such route") \
  X(B2S_ACQ_E_ACQUISITIONS_OFF, "acquisitions_off", 404, "the configuration has no `acquisitions:`") \
  X(B2S_ACQ_E_NO_SUCH_ACQUISITION, "no_such_acquisition", 404, "no held acquisition has that id") \
  X(B2S_ACQ_E_NO_SUCH_INPUT, "no_such_input", 404, "no such stream or source") \
  X(B2S_ACQ_E_NO_SUCH_TEMPLATE, "no_such_template", 404, "the `template` named does not exist") \
  X(B2S_ACQ_E_NO_SUCH_DIRECTORY, "no_such_directory", 404, "the directory does not exist and `create_directory` is false") \
  X(B2S_ACQ_E_NO_SUCH_STREAM, "no_such_stream", 404, "live view: no such stream") \
  X(B2S_ACQ_E_NO_FRAME, "no_frame", 404, "live view: no frame sampled yet") \
  X(B2S_ACQ_E_METHOD_NOT_ALLOWED, "method_not_allowed", 405, "a method the route does not take") \
  X(B2S_ACQ_E_ID_CONFLICT, "id_conflict", 409, "that id is held with other parameters") \
  X(B2S_ACQ_E_INPUT_NOT_ACQUIRABLE, "input_not_acquirable", 409, "the input is not `acquisitions: only`") \
  X(B2S_ACQ_E_INPUT_UNSUPPORTED, "input_unsupported", 409, "a distributed stream") \
  X(B2S_ACQ_E_INPUT_FAILED, "input_failed", 409, "the stream's frame cannot be written (see STATS `error`)") \
  X(B2S_ACQ_E_INPUT_BUSY, "input_busy", 409, "another acquisition has that input and has not ended") \
  X(B2S_ACQ_E_NOT_A_DIRECTORY, "not_a_directory", 409, "the directory path names something else") \
  X(B2S_ACQ_E_FILES_EXIST, "files_exist", 409, "a file name of the acquisition exists and `overwrite` is `refuse`") \
  X(B2S_ACQ_E_FILE_NOT_OURS, "file_not_ours", 409, "`overwrite: replace`, but the existing file is not an acquisition file of b2stream") \
  X(B2S_ACQ_E_FILE_LOCKED, "file_locked", 409, "`overwrite: replace`, but another writer holds the existing file") \
  X(B2S_ACQ_E_WAIT_UNREACHABLE, "wait_unreachable", 409, "the wait's condition can no longer be met") \
  X(B2S_ACQ_E_FRAMES_LOST, "frames_lost", 409, "the wait: the acquisition lost frames and `allow_loss` is false") \
  X(B2S_ACQ_E_NOT_AN_IMAGE, "not_an_image", 409, "live view: the stream's frames are not images") \
  X(B2S_ACQ_E_FRAME_TOO_LARGE, "frame_too_large", 409, "live view: the frame is over `live.max_bytes`") \
  X(B2S_ACQ_E_BODY_TOO_LARGE, "body_too_large", 413, "the body is over `http.max_body`") \
  X(B2S_ACQ_E_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", 415, "a body that is not `application/json`") \
  X(B2S_ACQ_E_INTERNAL, "internal", 500, "a fault of the daemon; the service stays up") \
  X(B2S_ACQ_E_DRAINING, "draining", 503, "the daemon is stopping") \
  X(B2S_ACQ_E_BUFFERS_SHORT, "buffers_short", 503, "less than `min_free_memory` of `memory_limit` is free") \
  X(B2S_ACQ_E_TOO_MANY_ACQUISITIONS, "too_many_acquisitions", 503, "`max_held` acquisitions are held and none has ended") \
  X(B2S_ACQ_E_TOO_MANY_WAITS, "too_many_waits", 503, "`http.max_waits` waits pending") \
  X(B2S_ACQ_E_TOO_MANY_EVENT_STREAMS, "too_many_event_streams", 503, "`http.max_event_streams` event streams open") \
  X(B2S_ACQ_E_WAIT_TIMEOUT, "wait_timeout", 504, "the wait's time ran out (the body has the acquisition)") \
  X(B2S_ACQ_E_DISK_SHORT, "disk_short", 507, "free space below the estimate plus the floor")

enum b2s_acq_code {
  B2S_ACQ_E_BASE_ = -2000,
#define B2S_ACQ_ENUM_(name, code, status, meaning) name,
  B2S_ACQ_ERROR_LIST(B2S_ACQ_ENUM_)
#undef B2S_ACQ_ENUM_
  B2S_ACQ_E_END_
};

/* Whether v is one of the codes above. */
bool b2s_acq_code_valid(int v);
/* The code's string ("bad_json"), HTTP status and meaning; NULL, 0 and
 * NULL for a value that is not one. */
const char *b2s_acq_code_name(int v);
int b2s_acq_code_status(int v);
const char *b2s_acq_code_meaning(int v);
/* The value of a code string; 0 when there is none. */
int b2s_acq_code_by_name(const char *name);

/* X(enum name, code) of section 7.5. */
#define B2S_ACQ_FAILURE_LIST(X)                                                \
  X(B2S_ACQ_FAIL_WRITE_FAILED, "write_failed")                                 \
  X(B2S_ACQ_FAIL_CREATE_FAILED, "create_failed")                               \
  X(B2S_ACQ_FAIL_DISK_LOW, "disk_low")                                         \
  X(B2S_ACQ_FAIL_FRAMES_LOST, "frames_lost")                                   \
  X(B2S_ACQ_FAIL_FRAMES_MISMATCH, "frames_mismatch")                           \
  X(B2S_ACQ_FAIL_SERIES_UNUSABLE, "series_unusable")                           \
  X(B2S_ACQ_FAIL_INPUT_GONE, "input_gone")

enum b2s_acq_failure {
  B2S_ACQ_FAIL_NONE = 0,
#define B2S_ACQ_FENUM_(name, code) name,
  B2S_ACQ_FAILURE_LIST(B2S_ACQ_FENUM_)
#undef B2S_ACQ_FENUM_
  B2S_ACQ_FAIL_END_
};

const char *b2s_acq_failure_name(int f);        /* NULL for NONE or none */
int b2s_acq_failure_by_name(const char *name);  /* 0 when none */

#define B2S_ACQ_FIELD_MAX 64

typedef struct b2s_acq_err {
  int code;                          /* enum b2s_acq_code; 0: none */
  char field[B2S_ACQ_FIELD_MAX];     /* member or parameter at fault, "" */
  int64_t offset;                    /* bad_json: the byte; else -1 */
  char message[B2S_ERRDETAIL_TEXT];  /* a sentence for a person */
} b2s_acq_err;

void b2s_acq_err_clear(b2s_acq_err *e);
/* Fill e (may be NULL) and return code; field may be NULL; fmt NULL:
 * the code's meaning is the message.  Field and message are cut to their
 * buffers and kept UTF-8 (an incomplete last character cut, a stray byte
 * '?'), so the error body is always valid JSON text. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
int b2s_acq_err_set(b2s_acq_err *e, int code, const char *field,
                    const char *fmt, ...);

/* The length of the longest prefix of s[0..n) that is whole UTF-8
 * characters (for cutting a client's text to a buffer). */
size_t b2s_acq_utf8_fit(const char *s, size_t n);

/* The error body of section 9.3, {"error": {code, message, status,
 * field}}, as one line of JSON in a malloc'ed string (NULL: no memory). */
char *b2s_acq_err_json(const b2s_acq_err *e);

#endif

/* JSON for the acquisition API: a strict reader of request bodies and
 * journals (docs/ACQUISITIONS.md 9.1), and what answers need that json-c
 * does not give (times, doubles in their shortest form).
 *
 * Why a scan of our own in front of json-c's tokener: json-c 0.16 builds
 * the trees and writes every answer, but its tokener, even with
 * JSON_TOKENER_STRICT, takes what the contract refuses: a member name
 * given twice (the last one silently wins), NaN and Infinity, integers
 * past 64 bits (clamped to INT64_MIN or UINT64_MAX without a word), raw
 * control characters in strings, lone UTF-16 surrogates (replaced by
 * U+FFFD) and U+0000 in member names (cut there).  So the text is first
 * checked against RFC 8259 and those rules here, with the byte offset of
 * the first fault, and only then handed to json-c; the fuzz target
 * (tests/fuzz/fuzz_acqjson.c) checks that json-c then always agrees.
 *
 * Ownership: *out is the caller's (json_object_put). */
#ifndef B2S_ACQ_JSON_H
#define B2S_ACQ_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "b2s_acq_errors.h"

#define B2S_ACQ_JSON_DEPTH 32          /* objects and arrays nested */
#define B2S_ACQ_JSON_MAX (16u << 20)   /* bytes: http.max_body's top */

/* Parse text[0..len) as one JSON object: RFC 8259, valid UTF-8, strings
 * without raw control characters or lone surrogates, member names without
 * U+0000 and none twice in one object, at most max_depth levels, integers
 * within -2^63 .. 2^64-1, other numbers finite as doubles, nothing but
 * white space after the object.  0, or B2S_ACQ_E_BAD_JSON with e->offset
 * and the reason, or B2S_ACQ_E_BODY_TOO_LARGE past B2S_ACQ_JSON_MAX bytes
 * (json-c's tokener takes an int length; the listener's own bound,
 * http.max_body, is lower); -ENOMEM. */
int b2s_acq_json_parse(const char *text, size_t len, int max_depth,
                       json_object **out, b2s_acq_err *e);

/* An integer member: true when o is a JSON integer, with its value as
 * sign and magnitude (neg: -mag). */
bool b2s_acq_json_int(const json_object *o, bool *neg, uint64_t *mag);

/* A double in the shortest form that reads back to the same bits, laid
 * out as Python's repr(float) writes it, so always with a '.' or an
 * exponent and it stays a double ("1.0", "2.1", "-0.0", "100.0",
 * "1e+16", "1.5e-07"); a json_object that writes itself so.  B2S_E_ARG
 * for NaN and infinities, or cap < 32. */
int b2s_acq_json_double_text(double v, char *out, size_t cap);
json_object *b2s_acq_json_double(double v);

/* Times: microseconds since the epoch <-> RFC 3339 UTC with microseconds
 * ("2026-05-01T12:34:56.123456Z").  A negative time is null. */
#define B2S_ACQ_TIME_TEXT 32
int b2s_acq_time_text(int64_t us, char *out, size_t cap);
json_object *b2s_acq_json_time(int64_t us);        /* null for < 0 */
/* Parse exactly that form; 0 or B2S_E_ARG. */
int b2s_acq_time_parse(const char *s, int64_t *us);

/* One line of JSON (no raw newline), slashes unescaped, in a malloc'ed
 * string; NULL: no memory. */
char *b2s_acq_json_line(json_object *o);

#endif

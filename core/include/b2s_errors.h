/* b2stream core error codes.
 *
 * Every function of the core returns 0 or a count on success and a negative
 * value on failure: either -errno (system errors pass through unchanged) or
 * one of the codes below, which live far below the errno range so the two can
 * never collide.  The list is written once and expands into both the enum and
 * the message table (b2s_strerror).
 *
 * APPEND-ONLY WIRE ABI: a code's value is written beside it, and that
 * value crosses the wire in ERROR messages (docs/PROTOCOL.md, checked by
 * tests/test_wire.c) and is returned by the installed client library.
 * Add new codes at the end with the next value; never reuse, reorder or
 * renumber one (tests/test_names.c checks the values are consecutive).
 *
 * ONE TABLE FOR ALL ROOMS: the codes of proto/, config/, daemon/,
 * libclient/ and cluster/ are here too, since they share the one value
 * range and b2s_strerror, and this installed header is what clients
 * include; splitting it would change the public API.  The comment after
 * each code names the room whose rule it reports (where it is raised and
 * documented; other rooms pass it on). */
#ifndef B2S_ERRORS_H
#define B2S_ERRORS_H

#define B2S_ERROR_LIST(X)                                                      \
  X(B2S_E_ARG,             -999, "invalid argument")                                                /* core */ \
  X(B2S_E_NOMEM,           -998, "out of memory")                                                   /* core */ \
  X(B2S_E_SHORT,           -997, "buffer shorter than a chunk header")                              /* core */ \
  X(B2S_E_CBYTES,          -996, "chunk cbytes inconsistent with its buffer or layout")             /* core */ \
  X(B2S_E_NBYTES,          -995, "chunk nbytes out of range")                                       /* core */ \
  X(B2S_E_VERSION,         -994, "unsupported chunk format version or flags")                       /* core */ \
  X(B2S_E_TYPESIZE,        -993, "invalid typesize")                                                /* core */ \
  X(B2S_E_BLOCKSIZE,       -992, "invalid blocksize")                                               /* core */ \
  X(B2S_E_CODEC,           -991, "unknown or unsupported codec")                                    /* core */ \
  X(B2S_E_FILTER,          -990, "unknown filter or invalid filter parameter")                      /* core */ \
  X(B2S_E_SPECIAL,         -989, "invalid special-value chunk")                                     /* core */ \
  X(B2S_E_BSTARTS,         -988, "block offset outside the chunk")                                  /* core */ \
  X(B2S_E_STREAM,          -987, "stream size runs past the end of the chunk")                      /* core */ \
  X(B2S_E_TOKEN,           -986, "invalid run-length token")                                        /* core */ \
  X(B2S_E_DECODE,          -985, "codec could not decode a stream to its exact size")               /* core */ \
  X(B2S_E_DICT,            -984, "invalid dictionary section")                                      /* core */ \
  X(B2S_E_DEST_SMALL,      -983, "destination buffer too small")                                    /* core */ \
  X(B2S_E_COMPRESS,        -982, "codec failed while compressing")                                  /* core */ \
  X(B2S_E_RANGE,           -981, "item range outside the chunk")                                    /* core */ \
  X(B2S_E_NODICT_CODEC,    -980, "dictionaries need codec zstd, lz4 or lz4hc")                      /* core */ \
  X(B2S_E_MSGPACK,         -979, "unexpected msgpack marker in a frame structure")                  /* core */ \
  X(B2S_E_TRUNCATED,       -978, "frame data ends before a length or offset says")                  /* core */ \
  X(B2S_E_FRAME,           -977, "malformed frame header")                                          /* core */ \
  X(B2S_E_FRAME_VERSION,   -976, "unsupported frame format version")                                /* core */ \
  X(B2S_E_FRAME_TYPE,      -975, "wrong frame type (contiguous file vs sparse dir)")                /* core */ \
  X(B2S_E_TRAILER,         -974, "malformed frame trailer")                                         /* core */ \
  X(B2S_E_INDEX,           -973, "malformed or inconsistent frame chunk index")                     /* core */ \
  X(B2S_E_META,            -972, "malformed metalayer section")                                     /* core */ \
  X(B2S_E_VLMETA,          -971, "malformed vlmetalayer section")                                   /* core */ \
  X(B2S_E_NOTFOUND,        -970, "no metalayer or vlmetalayer with that name")                      /* core */ \
  X(B2S_E_NCHUNK,          -969, "chunk number beyond the frame's chunk count")                     /* core */ \
  X(B2S_E_CHUNK_ID,        -968, "sparse-frame chunk id outside 0..2^32-1")                         /* core */ \
  X(B2S_E_CHUNK_BOUNDS,    -967, "stored chunk outside the frame's data section")                   /* core */ \
  X(B2S_E_CHUNK_SIZE,      -966, "chunk size disagrees with the frame header")                      /* core */ \
  X(B2S_E_B2ND,            -965, "malformed b2nd metalayer")                                        /* core */ \
  X(B2S_E_READONLY,        -964, "frame opened read-only or not writable this way")                 /* core */ \
  X(B2S_E_RECOVER,         -963, "frame's last commit was interrupted; run recovery")               /* core */ \
  X(B2S_E_UNRECOVERABLE,   -962, "no complete commit found; frame cannot be restored")              /* core */ \
  X(B2S_E_TOO_BIG,         -961, "frame structure would exceed a format limit")                     /* core */ \
  X(B2S_E_IO_LIMIT,        -960, "write cut short by fault injection")                              /* core */ \
  X(B2S_E_CONFIG,          -959, "invalid configuration")                                           /* config */ \
  X(B2S_E_PROTO,           -958, "malformed or unexpected protocol message")                        /* proto */ \
  X(B2S_E_PROTO_VERSION,   -957, "unsupported protocol version")                                    /* proto */ \
  X(B2S_E_STREAM_NAME,     -956, "invalid stream name")                                             /* config */ \
  X(B2S_E_NOSTREAM,        -955, "no such stream")                                                  /* daemon */ \
  X(B2S_E_NOTEMPLATE,      -954, "no such stream template")                                         /* daemon */ \
  X(B2S_E_OVERSIZE,        -953, "buffer larger than the configured limit")                         /* daemon */ \
  X(B2S_E_DROPPED,         -952, "buffer dropped by the backpressure policy")                       /* daemon */ \
  X(B2S_E_TIMEOUT,         -951, "timed out")                                                       /* libclient */ \
  X(B2S_E_CLOSED,          -950, "connection or stream closed")                                     /* proto */ \
  X(B2S_E_BUSY,            -949, "resource busy or exhausted")                                      /* daemon */ \
  X(B2S_E_AUTH,            -948, "authentication failed")                                           /* proto */ \
  X(B2S_E_SHM_HEADER,      -947, "shared-memory header invalid or not matching its size")           /* proto */ \
  X(B2S_E_SHM_SLOT,        -946, "shared-memory slot index out of range")                           /* proto */ \
  X(B2S_E_SHM_STATE,       -945, "shared-memory slot not in the state this needs")                  /* proto */ \
  X(B2S_E_SHM_ACCOUNT,     -944, "shared-memory slot accounting does not add up")                   /* proto */ \
  X(B2S_E_LOCKED,          -943, "held by another writer (locked)")                                 /* core */ \
  X(B2S_E_FRAME_LATE,      -942, "frame number late: behind the reorder window")                    /* daemon */ \
  X(B2S_E_FRAME_DUP,       -941, "duplicate frame number")                                          /* daemon */ \
  X(B2S_E_LIMIT,           -940, "a daemon limit on sessions, streams or descriptors was reached")  /* daemon */ \
  X(B2S_E_SERIES_FORMAT,   -939, "series metadata is not a msgpack map of string keys")             /* core */ \
  X(B2S_E_SERIES_KEY,      -938, "series metadata key empty, over 64 bytes, not UTF-8 or repeated") /* core */ \
  X(B2S_E_SERIES_VALUE,    -937, "series metadata value over 64 KiB encoded")                       /* core */ \
  X(B2S_E_SERIES_SIZE,     -936, "series metadata over 256 KiB encoded")                            /* core */ \
  X(B2S_E_RECORD,          -935, "malformed chunk record")                                          /* core */ \
  X(B2S_E_RECORD_USER,     -934, "chunk record user part over 4 KiB or not a map or bytes")         /* core */ \
  X(B2S_E_PAIR,            -933, "records frame does not match its data frame")                     /* core */ \
  X(B2S_E_CHECKSUM,        -932, "chunk checksum differs from its record")                          /* core */ \
  X(B2S_E_WRONG_RANK,      -931, "frame number belongs to another rank of the cluster")             /* cluster */ \
  X(B2S_E_NEED_FRAME,      -930, "a distributed stream needs a frame number with every buffer")     /* cluster */ \
  X(B2S_E_OBJ_CONFLICT,    -929, "stored object exists with different bytes")                       /* cluster */ \
  X(B2S_E_STORE,           -928, "object store unavailable or refused the request")                 /* cluster */ \
  X(B2S_E_NOT_ARMED,       -927, "no acquisition takes frames on this stream")                      /* daemon */

enum b2s_error {
  B2S_E_BASE_ = -1000,
#define B2S_ERR_ENUM_(name, value, msg) name = value,
  /* values count upward from -999 and stay below every -errno */
  B2S_ERROR_LIST(B2S_ERR_ENUM_)
#undef B2S_ERR_ENUM_
};

/* One past the last code; codes are B2S_E_BASE_ < code < B2S_E_END_. */
#define B2S_ERR_COUNT_(name, value, msg) +1
#define B2S_E_END_ (B2S_E_BASE_ + 1 B2S_ERROR_LIST(B2S_ERR_COUNT_))

/* Message for a negative return value (ours or -errno); never NULL. */
const char *b2s_strerror(int code);

/* The details of an error beyond its code: the one way they travel
 * between functions and rooms (docs/ARCHITECTURE.md, conventions).  A
 * function that can say more than its code takes a b2s_errdetail * as its
 * last argument (NULL: the caller does not want it), returns the code,
 * and puts the same code and a sentence for a person (which key, which
 * file, which limit) here. */
#define B2S_ERRDETAIL_TEXT 512
typedef struct b2s_errdetail {
  int code;                          /* the code it explains; 0: none */
  char text[B2S_ERRDETAIL_TEXT];     /* "" when the code says it all */
} b2s_errdetail;

/* Clear ed (NULL is fine). */
void b2s_errdetail_clear(b2s_errdetail *ed);
/* Set ed's code and text (printf format; NULL fmt: no text); returns
 * code, so `return b2s_errdetail_set(ed, B2S_E_LIMIT, "...")` reads as
 * it does.  ed may be NULL. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int b2s_errdetail_set(b2s_errdetail *ed, int code, const char *fmt, ...);

#endif

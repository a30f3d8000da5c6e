/* b2stream core error codes.
 *
 * Every function of the core returns 0 or a count on success and a negative
 * value on failure: either -errno (system errors pass through unchanged) or
 * one of the codes below, which live far below the errno range so the two can
 * never collide.  The list is written once and expands into both the enum and
 * the message table (b2s_strerror).
 *
 * APPEND-ONLY WIRE ABI: a code's value is its position in the list, and
 * that value crosses the wire in ERROR messages (PROTOCOL.md 6.3, checked
 * by tests/test_wire.c) and is returned by the installed client library.
 * Add new codes at the end only; never reorder, remove or renumber one. */
#ifndef B2S_ERRORS_H
#define B2S_ERRORS_H

#define B2S_ERROR_LIST(X)                                                      \
  X(B2S_E_ARG,          "invalid argument")                                    \
  X(B2S_E_NOMEM,        "out of memory")                                       \
  X(B2S_E_SHORT,        "buffer shorter than a chunk header")                  \
  X(B2S_E_CBYTES,       "chunk cbytes inconsistent with its buffer or layout") \
  X(B2S_E_NBYTES,       "chunk nbytes out of range")                           \
  X(B2S_E_VERSION,      "unsupported chunk format version or flags")           \
  X(B2S_E_TYPESIZE,     "invalid typesize")                                    \
  X(B2S_E_BLOCKSIZE,    "invalid blocksize")                                   \
  X(B2S_E_CODEC,        "unknown or unsupported codec")                        \
  X(B2S_E_FILTER,       "unknown filter or invalid filter parameter")          \
  X(B2S_E_SPECIAL,      "invalid special-value chunk")                         \
  X(B2S_E_BSTARTS,      "block offset outside the chunk")                      \
  X(B2S_E_STREAM,       "stream size runs past the end of the chunk")          \
  X(B2S_E_TOKEN,        "invalid run-length token")                            \
  X(B2S_E_DECODE,       "codec could not decode a stream to its exact size")   \
  X(B2S_E_DICT,         "invalid dictionary section")                          \
  X(B2S_E_DEST_SMALL,   "destination buffer too small")                        \
  X(B2S_E_COMPRESS,     "codec failed while compressing")                      \
  X(B2S_E_RANGE,        "item range outside the chunk")                        \
  X(B2S_E_NODICT_CODEC, "dictionaries need codec zstd, lz4 or lz4hc")          \
  X(B2S_E_MSGPACK,      "unexpected msgpack marker in a frame structure")      \
  X(B2S_E_TRUNCATED,    "frame data ends before a length or offset says")      \
  X(B2S_E_FRAME,        "malformed frame header")                              \
  X(B2S_E_FRAME_VERSION, "unsupported frame format version")                   \
  X(B2S_E_FRAME_TYPE,   "wrong frame type (contiguous file vs sparse dir)")    \
  X(B2S_E_TRAILER,      "malformed frame trailer")                             \
  X(B2S_E_INDEX,        "malformed or inconsistent frame chunk index")         \
  X(B2S_E_META,         "malformed metalayer section")                         \
  X(B2S_E_VLMETA,       "malformed vlmetalayer section")                       \
  X(B2S_E_NOTFOUND,     "no metalayer or vlmetalayer with that name")          \
  X(B2S_E_NCHUNK,       "chunk number beyond the frame's chunk count")         \
  X(B2S_E_CHUNK_ID,     "sparse-frame chunk id outside 0..2^32-1")             \
  X(B2S_E_CHUNK_BOUNDS, "stored chunk outside the frame's data section")       \
  X(B2S_E_CHUNK_SIZE,   "chunk size disagrees with the frame header")          \
  X(B2S_E_B2ND,         "malformed b2nd metalayer")                          \
  X(B2S_E_READONLY,     "frame opened read-only or not writable this way")   \
  X(B2S_E_RECOVER,      "frame's last commit was interrupted; run recovery") \
  X(B2S_E_UNRECOVERABLE, "no complete commit found; frame cannot be restored") \
  X(B2S_E_TOO_BIG,      "frame structure would exceed a format limit")      \
  X(B2S_E_IO_LIMIT,     "write cut short by fault injection")               \
  X(B2S_E_CONFIG,       "invalid configuration")                            \
  X(B2S_E_PROTO,        "malformed or unexpected protocol message")         \
  X(B2S_E_PROTO_VERSION, "unsupported protocol version")                    \
  X(B2S_E_STREAM_NAME,  "invalid stream name")                              \
  X(B2S_E_NOSTREAM,     "no such stream")                                   \
  X(B2S_E_NOTEMPLATE,   "no such stream template")                          \
  X(B2S_E_OVERSIZE,     "buffer larger than the configured limit")          \
  X(B2S_E_DROPPED,      "buffer dropped by the backpressure policy")        \
  X(B2S_E_TIMEOUT,      "timed out")                                        \
  X(B2S_E_CLOSED,       "connection or stream closed")                      \
  X(B2S_E_BUSY,         "resource busy or exhausted")                       \
  X(B2S_E_AUTH,         "authentication failed")                          \
  X(B2S_E_SHM_HEADER,   "shared-memory header invalid or not matching its size") \
  X(B2S_E_SHM_SLOT,     "shared-memory slot index out of range")          \
  X(B2S_E_SHM_STATE,    "shared-memory slot not in the state this needs") \
  X(B2S_E_SHM_ACCOUNT,  "shared-memory slot accounting does not add up") \
  X(B2S_E_LOCKED,       "held by another writer (locked)") \
  X(B2S_E_FRAME_LATE,   "frame number late: behind the reorder window")  \
  X(B2S_E_FRAME_DUP,    "duplicate frame number") \
  X(B2S_E_LIMIT,        "a daemon limit on sessions, streams or descriptors was reached") \
  X(B2S_E_SERIES_FORMAT, "series metadata is not a msgpack map of string keys") \
  X(B2S_E_SERIES_KEY,   "series metadata key empty, over 64 bytes, not UTF-8 or repeated") \
  X(B2S_E_SERIES_VALUE, "series metadata value over 64 KiB encoded")        \
  X(B2S_E_SERIES_SIZE,  "series metadata over 256 KiB encoded")             \
  X(B2S_E_RECORD,       "malformed chunk record")                           \
  X(B2S_E_RECORD_USER,  "chunk record user part over 4 KiB or not a map or bytes") \
  X(B2S_E_PAIR,         "records frame does not match its data frame")      \
  X(B2S_E_CHECKSUM,     "chunk checksum differs from its record")           \
  X(B2S_E_WRONG_RANK,   "frame number belongs to another rank of the cluster") \
  X(B2S_E_NEED_FRAME,   "a distributed stream needs a frame number with every buffer") \
  X(B2S_E_OBJ_CONFLICT, "stored object exists with different bytes")      \
  X(B2S_E_STORE,        "object store unavailable or refused the request")

enum b2s_error {
  B2S_E_BASE_ = -1000,
#define B2S_ERR_ENUM_(name, msg) name,
  /* enumerators count upward from -999; all stay below every -errno */
  B2S_ERROR_LIST(B2S_ERR_ENUM_)
#undef B2S_ERR_ENUM_
  B2S_E_END_
};

/* Message for a negative return value (ours or -errno); never NULL. */
const char *b2s_strerror(int code);

#endif

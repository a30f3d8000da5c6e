"""The header encoding of docs/PROTOCOL.md (sections 2 and 3): message
types, flags and the struct layout of every body.  Private to the package."""
from __future__ import annotations

import struct

MAGIC = b"B2SW"
VERSION = 1             # the version of sessions that negotiated nothing
VERSION_MAX = 2         # the highest this package speaks (section 8)
PREFIX = struct.Struct("<4sBBHII")     # magic, version, type, flags, tag, 0
HEADER_MAX = 1059

# client -> daemon
HELLO, OPEN, DATA, FLUSH, CLOSE = 0x01, 0x02, 0x03, 0x04, 0x05
SHM_ATTACH, SHM_SUBMIT, FOLLOW, READ, UNFOLLOW = 0x06, 0x07, 0x08, 0x09, 0x0A
STATS, PING, BYE = 0x0B, 0x0C, 0x0D
META = 0x0E                                          # version 2
# daemon -> client
WELCOME, OPENED, ACK, DROPPED, FLUSHED, CLOSED = 0x81, 0x82, 0x83, 0x84, 0x85, 0x86
SHM_ATTACHED, FOLLOWING, NOTIFY, CHUNK, UNFOLLOWED = 0x87, 0x88, 0x89, 0x8A, 0x8B
STATS_REPLY, PONG, ERROR = 0x8C, 0x8D, 0x8E
META_OK = 0x8F                                       # version 2

HELLO_PRODUCER, HELLO_CONSUMER = 0x0001, 0x0002
WELCOME_SHM = 0x0001
FOLLOW_BY_PATH, FOLLOW_FROM_END = 0x0001, 0x0002
FOLLOW_PUSH_COMPRESSED, FOLLOW_PUSH_DECOMPRESSED = 0x0004, 0x0008
READ_DECOMPRESS = 0x0001
CHUNK_DECOMPRESSED, CHUNK_PUSHED = 0x0001, 0x0002
ERROR_CLOSED_REF, ERROR_CLOSED_SESSION = 0x0001, 0x0002
# version 2 flags (section 8.2)
OPEN_META, DATA_RECORD, SHM_SUBMIT_RECORD = 0x0001, 0x0001, 0x0001
FOLLOW_RECORDS, READ_RECORD = 0x0010, 0x0002
NOTIFY_RECORDS, CHUNK_RECORD = 0x0001, 0x0004

LEVEL_RECEIVED, LEVEL_WRITTEN, LEVEL_DURABLE = 1, 2, 3

# Fixed fields of the bodies (after the 16-byte prefix), widest first.
HELLO_F = struct.Struct("<II")           # pid, ping_ms (+ str name)
WELCOME_F = struct.Struct("<IIIBB")      # max_buffer, timeout_ms, session_id, vmin, vmax
OPENED_F = struct.Struct("<IIIBB")       # handle, credits, max_buffer, ack_level, policy
DATA_F = struct.Struct("<QI")            # buffer_id, handle
ACK_F = struct.Struct("<QQIIB")          # upto, dropped, handle, credits, level
DROPPED_F = struct.Struct("<QIB")        # buffer_id, handle, reason
HANDLE_F = struct.Struct("<I")           # FLUSH, CLOSE, UNFOLLOW
FLUSHED_F = struct.Struct("<QI")         # upto, handle
CLOSED_F = struct.Struct("<QQI")         # upto, dropped, handle
SHM_ATTACH_F = struct.Struct("<III")     # handle, slot_count, slot_size
SHM_ATTACHED_F = struct.Struct("<IIII")  # handle, segment, slot_count, slot_size (+ str)
SHM_SUBMIT_F = struct.Struct("<QIIII")   # buffer_id, handle, segment, slot, length
FOLLOW_F = struct.Struct("<Q")           # start (+ str target)
FOLLOWING_F = struct.Struct("<QQI")      # start, committed, follow_id
NOTIFY_F = struct.Struct("<QQII")        # first, committed, follow_id, count
READ_F = struct.Struct("<QI")            # chunk, follow_id (+ str stream)
CHUNK_F = struct.Struct("<QIII")         # index, follow_id, nbytes, cbytes
UNFOLLOWED_F = struct.Struct("<QI")      # next, follow_id
PING_F = struct.Struct("<Q")             # nonce
PONG_F = struct.Struct("<QQ")            # nonce, time_ns
ERROR_F = struct.Struct("<QiIB")         # ref_index, code, ref_id, ref_type (+ str)
META_F = struct.Struct("<I")             # handle (+ payload: msgpack map)
META_OK_F = struct.Struct("<QI")         # upto, handle

_U16 = struct.Struct("<H")


def header(mtype: int, body: bytes = b"", flags: int = 0, tag: int = 0,
           version: int = VERSION) -> bytes:
    """Prefix (in the session's version) plus body."""
    return PREFIX.pack(MAGIC, version, mtype, flags, tag, 0) + body


def wstr(text: str, limit: int = 255) -> bytes:
    """A protocol string: u16 byte count and UTF-8 bytes."""
    raw = text.encode("utf-8")
    if len(raw) > limit or "\0" in text:
        raise ValueError(f"string {text[:40]!r} longer than {limit} bytes or holds NUL")
    return _U16.pack(len(raw)) + raw


def rstr(body: bytes | memoryview, off: int) -> tuple[str, int]:
    """Decode the string at off; returns it and the offset after it."""
    (n,) = _U16.unpack_from(body, off)
    end = off + 2 + n
    if end > len(body):
        raise ValueError("string runs past the header")
    return bytes(body[off + 2:end]).decode("utf-8"), end


def decode_prefix(frame: bytes | memoryview) -> tuple[int, int, int, int]:
    """(type, flags, tag, version) of a header frame; ValueError when it is
    not one of a version this package speaks."""
    if len(frame) < PREFIX.size or len(frame) > HEADER_MAX:
        raise ValueError(f"header frame of {len(frame)} bytes")
    magic, version, mtype, flags, tag, reserved = PREFIX.unpack_from(frame)
    if magic != MAGIC or reserved != 0:
        raise ValueError("not a b2stream header")
    if not 1 <= version <= VERSION_MAX:
        raise ValueError(f"protocol version {version}")
    return mtype, flags, tag, version

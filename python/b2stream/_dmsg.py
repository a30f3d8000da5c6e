"""The messages between the ranks of a distributed stream, its committer
and its followers (proto/b2s_dmsg.h), each one ZeroMQ frame:

    "B2DM" u8 version (1) u8 type u16le name_len name, then by type
    WRITTEN   (1): u64le index  u32le rank  u32le rec_len  rec bytes
    END       (2): u64le index  u32le rank
    COMMITTED (3): u64le index (the committed count H)  u8 closed

The name comes first after the fixed header, so the header up to the name
is the SUB prefix of one frame's COMMITTED messages.  Decoding checks every
length and value as the C codec does."""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from .errors import CODES, ProtocolError

MAGIC = b"B2DM"
VERSION = 1
WRITTEN, END, COMMITTED = 1, 2, 3
NAME_MAX = 160
REC_MAX = 4096 + 256
INDEX_LIMIT = 1 << 62
RANKS_MAX = 1024
_HEAD = struct.Struct("<4sBBH")
_NAME = re.compile(rb"[A-Za-z0-9._-]{1,160}")
_PROTO, _PROTO_VERSION = CODES["B2S_E_PROTO"], CODES["B2S_E_PROTO_VERSION"]


@dataclass(frozen=True)
class Message:
    """A decoded message; ``rank`` for WRITTEN and END, ``rec`` (the
    encoded record) for WRITTEN, ``closed`` for COMMITTED."""

    type: int
    name: str
    index: int
    rank: int = 0
    rec: bytes = b""
    closed: bool = False


def _check_name(name: bytes) -> None:
    if not _NAME.fullmatch(name) or name.startswith(b"."):
        raise ProtocolError(_PROTO, f"frame name {name!r} breaks the name rule")


def _header(type_: int, name: bytes) -> bytes:
    _check_name(name)
    return _HEAD.pack(MAGIC, VERSION, type_, len(name)) + name


def committed_prefix(name: str) -> bytes:
    """The SUB subscription of one frame's COMMITTED messages."""
    return _header(COMMITTED, name.encode())


def encode_committed(name: str, index: int, closed: bool = False) -> bytes:
    if not 0 <= index < INDEX_LIMIT:
        raise ValueError(f"committed count {index} outside 0 .. 2**62-1")
    return committed_prefix(name) + struct.pack("<QB", index, 1 if closed else 0)


def _rank(rank: int) -> int:
    if rank >= RANKS_MAX:
        raise ProtocolError(_PROTO, f"rank {rank} of at most {RANKS_MAX}")
    return rank


def _body(type_: int, body: memoryview) -> tuple[int, int, bytes, bool]:
    """(index, rank, rec, closed) of a message body; ProtocolError when its
    length or values are wrong."""
    if type_ == COMMITTED and len(body) == 9:
        index, closed = struct.unpack_from("<QB", body)
        if closed > 1:
            raise ProtocolError(_PROTO, f"closed flag {closed}")
        return index, 0, b"", bool(closed)
    if type_ == END and len(body) == 12:
        index, rank = struct.unpack_from("<QI", body)
        return index, _rank(rank), b"", False
    if type_ == WRITTEN and len(body) >= 16:
        index, rank, rec_len = struct.unpack_from("<QII", body)
        if not 0 < rec_len <= REC_MAX or 16 + rec_len != len(body):
            raise ProtocolError(_PROTO, f"record of {rec_len} bytes in a body of {len(body)}")
        return index, _rank(rank), bytes(body[16:]), False
    raise ProtocolError(_PROTO, f"message type {type_} with a body of {len(body)} bytes")


def decode(buf: bytes | memoryview) -> Message:
    """One message; ProtocolError for a malformed one or another version."""
    mv = memoryview(buf)
    if len(mv) < _HEAD.size:
        raise ProtocolError(_PROTO, f"message of {len(mv)} bytes")
    magic, version, type_, name_len = _HEAD.unpack_from(mv)
    if magic != MAGIC:
        raise ProtocolError(_PROTO, "no B2DM magic")
    if version != VERSION:
        raise ProtocolError(_PROTO_VERSION, f"message version {version}")
    end = _HEAD.size + name_len
    if end > len(mv):
        raise ProtocolError(_PROTO, f"name of {name_len} bytes does not fit")
    name = bytes(mv[_HEAD.size:end])
    _check_name(name)
    index, rank, rec, closed = _body(type_, mv[end:])
    if index >= INDEX_LIMIT:
        raise ProtocolError(_PROTO, f"index {index} beyond 2**62")
    return Message(type_, name.decode(), index, rank, rec, closed)

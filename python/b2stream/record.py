"""Chunk records (docs/PROTOCOL.md 2.4, docs/METADATA.md): what a
producer says about a buffer (frame number, timestamp, user part) and what
the daemon adds to the stored chunk (checksum, gap flags).

The wire record frame: 30 bytes little endian (frame u64, ts_ns i64, xxh64
u64, present u16, flags u16, user_len u16) then the user part."""
from __future__ import annotations

import operator
import struct
from dataclasses import dataclass
from typing import Any

from . import _msgpack
from .errors import ArgumentError

RECORD = struct.Struct("<QqQHHH")
PRESENT_FRAME, PRESENT_TS, PRESENT_XXH64, PRESENT_USER_MAP = 0x1, 0x2, 0x4, 0x8
FLAG_GAP, FLAG_DROPPED, FLAG_REJECTED = 0x1, 0x2, 0x4
USER_MAX = 4096
_PRESENT_ALL = PRESENT_FRAME | PRESENT_TS | PRESENT_XXH64 | PRESENT_USER_MAP
_FLAGS_ALL = FLAG_GAP | FLAG_DROPPED | FLAG_REJECTED


class RecordFrameError(ValueError):
    """A record frame that breaks a rule of PROTOCOL.md 2.4."""


@dataclass(frozen=True)
class Record:
    """The record of one chunk.

    ``frame``: the producer's frame number, ``ts``: its timestamp in ns
    since the epoch, ``xxh64``: XXH64 (seed 0) of the chunk as stored, each
    None when absent; ``flags``: the gap/dropped/rejected bits; ``user``:
    the producer's user part (a dict for a msgpack map, bytes otherwise,
    None when none).  ``gap``, ``dropped``, ``rejected``: the flags as
    booleans (a gap is a placeholder chunk of zeros)."""

    frame: int | None = None
    ts: int | None = None
    xxh64: int | None = None
    flags: int = 0
    user: dict | bytes | None = None

    @property
    def gap(self) -> bool:
        return bool(self.flags & FLAG_GAP)

    @property
    def dropped(self) -> bool:
        return bool(self.flags & FLAG_DROPPED)

    @property
    def rejected(self) -> bool:
        return bool(self.flags & FLAG_REJECTED)


def user_bytes(user: Any) -> tuple[bytes, bool]:
    """The encoded user part and whether it is a map: a dict becomes a
    msgpack map, bytes-like stays raw.  ArgumentError (a ValueError) for
    anything else, a map msgpack cannot hold, or above 4096 bytes."""
    if user is None:
        return b"", False
    if isinstance(user, dict):
        try:
            raw, is_map = _msgpack.packb(user), True
        except _msgpack.MsgpackError as exc:
            raise ArgumentError(-999, f"user map cannot be sent: {exc}") from None
    elif isinstance(user, (bytes, bytearray, memoryview)):
        raw, is_map = bytes(user), False
    else:
        raise ArgumentError(-999, f"user must be a dict (sent as a msgpack map) or "
                                  f"bytes, not {type(user).__name__}")
    if len(raw) > USER_MAX:
        raise ArgumentError(-999, f"user part of {len(raw)} bytes encoded; at most "
                                  f"{USER_MAX}")
    return raw, is_map


def int_field(name: str, value: Any, lo: int, hi: int, what: str) -> int:
    """value as an int in lo..hi (a Python or numpy integer; not a bool, a
    float or anything else): ArgumentError saying what it must be."""
    try:
        if isinstance(value, bool):
            raise TypeError
        v = operator.index(value)
    except TypeError:
        raise ArgumentError(-999, f"{name} must be an integer ({what}), not "
                                  f"{value!r} of type {type(value).__name__}") from None
    if not lo <= v <= hi:
        raise ArgumentError(-999, f"{name} {v} is outside {what}")
    return v


def encode(frame: Any = None, ts: Any = None, user: Any = None) -> bytes:
    """A producer's record frame (no xxh64, no flags).  ArgumentError (a
    ValueError) for a frame number that is no integer in 0 .. 2**64-1, a
    timestamp that is no signed 64-bit integer, or a user part that is
    neither a dict nor bytes."""
    if frame is not None:
        frame = int_field("frame", frame, 0, 2**64 - 1, "0 .. 2**64-1")
    if ts is not None:
        ts = int_field("ts", ts, -2**63, 2**63 - 1, "ns since the epoch, a signed "
                       "64-bit integer")
    raw, is_map = user_bytes(user)
    present = ((PRESENT_FRAME if frame is not None else 0)
               | (PRESENT_TS if ts is not None else 0)
               | (PRESENT_USER_MAP if is_map else 0))
    return RECORD.pack(frame or 0, ts or 0, 0, present, 0, len(raw)) + raw


def decode_one(buf: bytes | memoryview, pos: int = 0) -> tuple[Record, int]:
    """The record at pos of buf and the offset after it; RecordFrameError for
    one that breaks the rules of 2.4."""
    if len(buf) - pos < RECORD.size:
        raise RecordFrameError(f"record of {len(buf) - pos} bytes, under {RECORD.size}")
    frame, ts, xxh, present, flags, n = RECORD.unpack_from(buf, pos)
    end = pos + RECORD.size + n
    if present & ~_PRESENT_ALL or flags & ~_FLAGS_ALL:
        raise RecordFrameError(f"record with unknown bits: present {present:#x}, flags {flags:#x}")
    if n > USER_MAX or end > len(buf):
        raise RecordFrameError(f"record user part of {n} bytes does not fit")
    for bit, value in ((PRESENT_FRAME, frame), (PRESENT_TS, ts), (PRESENT_XXH64, xxh)):
        if not present & bit and value:
            raise RecordFrameError("record field nonzero without its present bit")
    raw = bytes(buf[pos + RECORD.size:end])
    user: dict | bytes | None = raw or None
    if present & PRESENT_USER_MAP:
        try:
            user = _msgpack.unpackb(raw) if raw else None
        except _msgpack.MsgpackError as exc:
            raise RecordFrameError(f"record user map: {exc}") from None
        if not isinstance(user, dict):
            raise RecordFrameError("record user_map set but the user part is no map")
    return Record(frame if present & PRESENT_FRAME else None,
                  ts if present & PRESENT_TS else None,
                  xxh if present & PRESENT_XXH64 else None, flags, user), end


def decode(buf: bytes | memoryview) -> Record:
    """Exactly one record filling buf."""
    rec, end = decode_one(buf)
    if end != len(buf):
        raise RecordFrameError(f"{len(buf) - end} bytes after the record")
    return rec


def decode_many(buf: bytes | memoryview, count: int) -> list[Record]:
    """count records back to back filling buf (a NOTIFY's records frame)."""
    out, pos = [], 0
    for _ in range(count):
        rec, pos = decode_one(buf, pos)
        out.append(rec)
    if pos != len(buf):
        raise RecordFrameError(f"{len(buf) - pos} bytes after {count} records")
    return out


def from_map(value: Any) -> Record:
    """A stored record (the msgpack map of a records frame's chunk)."""
    if not isinstance(value, dict):
        raise RecordFrameError("stored record is no msgpack map")
    user = value.get("user")
    if user is not None and not isinstance(user, (dict, bytes)):
        raise RecordFrameError("stored record user part is neither a map nor bin")
    return Record(value.get("frame"), value.get("ts"), value.get("xxh64"),
                  int(value.get("flags", 0)), user)

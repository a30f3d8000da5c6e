"""A small, strict msgpack codec for series metadata and record user parts
(docs/PROTOCOL.md 2.4, 3.11): nil, bool, int (-2**63 .. 2**64-1), float64, str,
bin, array, map.  The encoder writes the shortest form of each value, as
msgpack-python's packb(use_bin_type=True) does, so the bytes are the ones
python-blosc2 would write.  The decoder accepts every encoding of these
types and rejects the rest (ext, timestamps), trailing bytes, invalid
UTF-8 and nesting deeper than MAX_DEPTH.  Private to the package."""
from __future__ import annotations

import struct
from typing import Any

MAX_DEPTH = 32          # containers inside the top-level one (as core allows)


class MsgpackError(ValueError):
    """Bytes that are no msgpack of the supported types, or a value that
    cannot be encoded."""


def _int(v: int, out: bytearray) -> None:
    if 0 <= v <= 0x7F or -32 <= v < 0:
        out += struct.pack(">b" if v < 0 else ">B", v)
    elif v >= 0:
        for tag, fmt, top in ((0xCC, ">B", 0xFF), (0xCD, ">H", 0xFFFF),
                              (0xCE, ">I", 0xFFFFFFFF), (0xCF, ">Q", 2**64 - 1)):
            if v <= top:
                out.append(tag)
                out += struct.pack(fmt, v)
                return
        raise MsgpackError(f"integer {v} above 2**64-1")
    else:
        for tag, fmt, low in ((0xD0, ">b", -0x80), (0xD1, ">h", -0x8000),
                              (0xD2, ">i", -0x80000000), (0xD3, ">q", -2**63)):
            if v >= low:
                out.append(tag)
                out += struct.pack(fmt, v)
                return
        raise MsgpackError(f"integer {v} below -2**63")


def _len(n: int, fix: int | None, fixmax: int, tags: tuple, out: bytearray) -> None:
    """A length prefix: the fix form when it fits, else the shortest of the
    8/16/32-bit forms tags names (None: the type has no such form)."""
    if fix is not None and n <= fixmax:
        out.append(fix | n)
        return
    for tag, fmt, top in zip(tags, (">B", ">H", ">I"), (0xFF, 0xFFFF, 0xFFFFFFFF)):
        if tag is not None and n <= top:
            out.append(tag)
            out += struct.pack(fmt, n)
            return
    raise MsgpackError(f"length {n} too large")


def _enc(v: Any, out: bytearray, depth: int) -> None:
    if depth > MAX_DEPTH + 1:
        raise MsgpackError("nested deeper than msgpack limits here")
    if v is None:
        out.append(0xC0)
    elif v is True or v is False:
        out.append(0xC3 if v else 0xC2)
    elif isinstance(v, int):
        _int(int(v), out)
    elif isinstance(v, float):
        out.append(0xCB)
        out += struct.pack(">d", v)
    elif isinstance(v, str):
        raw = v.encode("utf-8")
        _len(len(raw), 0xA0, 31, (0xD9, 0xDA, 0xDB), out)
        out += raw
    elif isinstance(v, (bytes, bytearray, memoryview)):
        raw = bytes(v)
        _len(len(raw), None, 0, (0xC4, 0xC5, 0xC6), out)
        out += raw
    elif isinstance(v, (list, tuple)):
        _len(len(v), 0x90, 15, (None, 0xDC, 0xDD), out)
        for item in v:
            _enc(item, out, depth + 1)
    elif isinstance(v, dict):
        _len(len(v), 0x80, 15, (None, 0xDE, 0xDF), out)
        for key, item in v.items():
            _enc(key, out, depth + 1)
            _enc(item, out, depth + 1)
    else:
        try:                       # numpy scalars and the like
            import numpy as np
            if isinstance(v, np.generic):
                _enc(v.item(), out, depth)
                return
        except ImportError:
            pass
        raise MsgpackError(f"cannot encode {type(v).__name__} as msgpack")


def packb(value: Any) -> bytes:
    """Encode value (None, bool, int, float, str, bytes, list/tuple, dict)."""
    out = bytearray()
    _enc(value, out, 0)
    return bytes(out)


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.buf):
            raise MsgpackError("msgpack runs past the end of the buffer")
        out = self.buf[self.pos:end]
        self.pos = end
        return out

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def str_(self, n: int) -> str:
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MsgpackError(f"string not valid UTF-8: {exc}") from None

    def value(self, depth: int) -> Any:
        b = self.take(1)[0]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0xA0 <= b <= 0xBF:
            return self.str_(b & 0x1F)
        if 0x90 <= b <= 0x9F:
            return self.array(b & 0x0F, depth)
        if 0x80 <= b <= 0x8F:
            return self.map(b & 0x0F, depth)
        simple = {0xC0: None, 0xC2: False, 0xC3: True}
        if b in simple:
            return simple[b]
        fixed = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b",
                 0xD1: ">h", 0xD2: ">i", 0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
        if b in fixed:
            return self.unpack(fixed[b])
        lens = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H",
                0xC6: ">I", 0xDC: ">H", 0xDD: ">I", 0xDE: ">H", 0xDF: ">I"}
        if b not in lens:
            raise MsgpackError(f"msgpack type byte {b:#04x} not supported")
        n = self.unpack(lens[b])
        if b in (0xD9, 0xDA, 0xDB):
            return self.str_(n)
        if b in (0xC4, 0xC5, 0xC6):
            return bytes(self.take(n))
        if b in (0xDC, 0xDD):
            return self.array(n, depth)
        return self.map(n, depth)

    def _nest(self, n: int, depth: int) -> None:
        if depth >= MAX_DEPTH + 1:
            raise MsgpackError(f"msgpack nested deeper than {MAX_DEPTH}")
        if n > len(self.buf) - self.pos:     # every element takes a byte
            raise MsgpackError("msgpack container longer than the buffer")

    def array(self, n: int, depth: int) -> list:
        self._nest(n, depth)
        return [self.value(depth + 1) for _ in range(n)]

    def map(self, n: int, depth: int) -> dict:
        self._nest(n, depth)
        out: dict = {}
        for _ in range(n):
            key = self.value(depth + 1)
            if isinstance(key, (list, dict)):
                raise MsgpackError("msgpack map key that is an array or a map")
            if key in out:
                raise MsgpackError(f"msgpack map key {key!r} twice")
            out[key] = self.value(depth + 1)
        return out


def unpackb(buf: bytes | bytearray | memoryview) -> Any:
    """Decode exactly one value filling buf (bin as bytes, str as str)."""
    r = _Reader(bytes(buf))
    value = r.value(0)
    if r.pos != len(r.buf):
        raise MsgpackError(f"{len(r.buf) - r.pos} bytes after the msgpack value")
    return value


def pack_map(value: dict, what: str = "map") -> bytes:
    """Encode a dict whose keys are all strings (series metadata, META)."""
    if not isinstance(value, dict):
        raise MsgpackError(f"{what} must be a dict")
    for key in value:
        if not isinstance(key, str):
            raise MsgpackError(f"{what} key {key!r} is not a string")
    return packb(value)

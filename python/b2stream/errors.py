"""Exceptions: one class per error family of docs/PROTOCOL.md section 6.

Every exception the package raises for a daemon or library error is a
:class:`B2StreamError` carrying the wire ``code`` (a negative b2stream code
of section 6.3, or a negated errno), the daemon's ``message`` and what the
error was about (``ref_type``, ``ref_id``, ``ref_index``).  Families also
derive from the matching built-in exception where one fits, so
``except TimeoutError`` or ``except FileNotFoundError`` work as expected.
"""
from __future__ import annotations

import builtins
import errno as _errno
import os

# Section 6.3, in order from -999: the values are stable on the wire.
_NAMES = (
    "ARG NOMEM SHORT CBYTES NBYTES VERSION TYPESIZE BLOCKSIZE CODEC FILTER "
    "SPECIAL BSTARTS STREAM TOKEN DECODE DICT DEST_SMALL COMPRESS RANGE "
    "NODICT_CODEC MSGPACK TRUNCATED FRAME FRAME_VERSION FRAME_TYPE TRAILER "
    "INDEX META VLMETA NOTFOUND NCHUNK CHUNK_ID CHUNK_BOUNDS CHUNK_SIZE B2ND "
    "READONLY RECOVER UNRECOVERABLE TOO_BIG IO_LIMIT CONFIG PROTO "
    "PROTO_VERSION STREAM_NAME NOSTREAM NOTEMPLATE OVERSIZE DROPPED TIMEOUT "
    "CLOSED BUSY AUTH SHM_HEADER SHM_SLOT SHM_STATE SHM_ACCOUNT "
    "LOCKED FRAME_LATE FRAME_DUP LIMIT SERIES_FORMAT SERIES_KEY SERIES_VALUE "
    "SERIES_SIZE RECORD RECORD_USER PAIR CHECKSUM WRONG_RANK NEED_FRAME "
    "OBJ_CONFLICT STORE NOT_ARMED"
).split()


class _Codes(dict):
    """Keyed by the C names; the names without ``B2S_E_`` look up too."""

    def __missing__(self, key: str) -> int:
        if isinstance(key, str) and not key.startswith("B2S_E_") and "B2S_E_" + key in self:
            return self["B2S_E_" + key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (
            isinstance(key, str) and dict.__contains__(self, "B2S_E_" + key))


#: Code value by its C name, e.g. ``CODES["B2S_E_NOSTREAM"] == -955``
#: (``CODES["NOSTREAM"]`` too); ``CODES[code_name(c)] == c`` for every
#: b2stream code.
CODES: dict[str, int] = _Codes(("B2S_E_" + name, -999 + i) for i, name in enumerate(_NAMES))
_SHORT: dict[str, int] = {name: -999 + i for i, name in enumerate(_NAMES)}
_BY_VALUE: dict[int, str] = {v: k for k, v in CODES.items()}


def code_name(code: int) -> str:
    """The name of a code as :data:`CODES` has it (``B2S_E_NOSTREAM`` for
    -955), ``ENOSPC`` for -28, else the number."""
    name = _BY_VALUE.get(code)
    if name is not None:
        return name
    if -4096 < code < 0:
        return _errno.errorcode.get(-code, str(code))
    return str(code)


class B2StreamError(Exception):
    """Base of every b2stream error.

    Attributes: ``code`` (negative wire code), ``message`` (the daemon's or
    the library's text), ``ref_type`` (the client message type the error is
    about, 0 if none), ``ref_id`` (handle or follow id, 0 if none),
    ``ref_index`` (buffer id or chunk index), ``closed`` (what it ended:
    ``None``, ``"ref"`` or ``"session"``).
    """

    def __init__(self, code: int, message: str = "", *, ref_type: int = 0,
                 ref_id: int = 0, ref_index: int = 0,
                 closed: str | None = None) -> None:
        self.code = code
        self.message = message or code_name(code)
        self.ref_type = ref_type
        self.ref_id = ref_id
        self.ref_index = ref_index
        self.closed = closed
        super().__init__(f"{self.message} [{code_name(code)}]")


class ArgumentError(B2StreamError, ValueError):
    """B2S_E_ARG: an argument or request field out of range."""


class NoMemoryError(B2StreamError, MemoryError):
    """B2S_E_NOMEM."""


class FrameError(B2StreamError):
    """Chunk and frame codes (B2S_E_SHORT ... B2S_E_IO_LIMIT): a chunk or
    frame that cannot be read or written, damaged, or needing recovery."""


class ChunkIndexError(FrameError, IndexError):
    """B2S_E_NCHUNK: a chunk index not (yet) committed."""


class ConfigError(B2StreamError):
    """B2S_E_CONFIG: the template cannot make the stream."""


class ProtocolError(B2StreamError):
    """B2S_E_PROTO, B2S_E_PROTO_VERSION: a message the other side rejects."""


class StreamError(B2StreamError):
    """Stream naming: B2S_E_STREAM_NAME, B2S_E_NOSTREAM, B2S_E_NOTEMPLATE."""


class StreamNameError(StreamError, ValueError):
    """B2S_E_STREAM_NAME: the name is not allowed."""


class NoStreamError(StreamError, LookupError):
    """B2S_E_NOSTREAM: no such stream (and no template given)."""


class NoTemplateError(StreamError, LookupError):
    """B2S_E_NOTEMPLATE: the template named does not exist."""


class OversizeError(B2StreamError, ValueError):
    """B2S_E_OVERSIZE: a buffer above the stream's max_buffer."""


class DroppedError(B2StreamError):
    """B2S_E_DROPPED: buffers dropped by the stream's backpressure policy."""


class TimeoutError(B2StreamError, builtins.TimeoutError):
    """B2S_E_TIMEOUT: a wait ran out (never sent by the daemon)."""


class ClosedError(B2StreamError, ConnectionError):
    """B2S_E_CLOSED: the connection, session, handle or follow is gone
    (the daemon stopped or was killed, or the object was closed)."""


class BusyError(B2StreamError):
    """B2S_E_BUSY: a daemon limit reached, or a buffer without credit."""


class AuthError(B2StreamError, PermissionError):
    """B2S_E_AUTH: refused by the daemon's access rules or CurveZMQ."""


class ShmError(B2StreamError):
    """Shared-memory codes B2S_E_SHM_HEADER ... B2S_E_SHM_ACCOUNT."""


class LockedError(BusyError):
    """B2S_E_LOCKED: the stream's frame is held by another writer."""


class LimitError(BusyError):
    """B2S_E_LIMIT: a daemon limit on sessions, streams or descriptors."""


class FrameOrderError(B2StreamError):
    """B2S_E_FRAME_LATE, B2S_E_FRAME_DUP: a buffer refused by a stream
    stored in frame-number order (``ref_index`` is its buffer id)."""


class FrameLateError(FrameOrderError):
    """B2S_E_FRAME_LATE: frame number behind the reorder window."""


class FrameDupError(FrameOrderError):
    """B2S_E_FRAME_DUP: frame number already stored or waiting."""


class SeriesError(B2StreamError, ValueError):
    """B2S_E_SERIES_*: series metadata that is no map of string keys or
    breaks a limit (key <= 64 bytes, value <= 64 KiB, map <= 256 KiB)."""


class RecordError(B2StreamError, ValueError):
    """B2S_E_RECORD, B2S_E_RECORD_USER: a malformed record, or a user
    part over 4 KiB or neither a map nor bytes."""


class IntegrityError(FrameError):
    """B2S_E_PAIR, B2S_E_CHECKSUM: a records frame that does not match
    its data frame, or a chunk whose checksum differs from its record."""


class ClusterError(B2StreamError, ValueError):
    """A buffer a rank of a distributed stream refuses: B2S_E_WRONG_RANK
    (its frame number belongs to another rank, which the message names),
    B2S_E_NEED_FRAME (it has no frame number)."""


class WrongRankError(ClusterError):
    """B2S_E_WRONG_RANK: the frame number belongs to another rank."""


class NeedFrameError(ClusterError):
    """B2S_E_NEED_FRAME: a distributed stream needs a frame number."""


class StoreError(B2StreamError, OSError):
    """B2S_E_OBJ_CONFLICT, B2S_E_STORE: the object store of a distributed
    stream refused a chunk (one stored with other bytes, or a store that
    fails)."""


class SystemError_(B2StreamError, OSError):
    """A negated errno passed through from the system (e.g. -28 ENOSPC)."""

    def __init__(self, code: int, message: str = "", **kw) -> None:
        B2StreamError.__init__(self, code, message or os.strerror(-code), **kw)
        self.errno = -code
        self.strerror = self.message


class NoEntryError(SystemError_, FileNotFoundError):
    """-ENOENT: e.g. an ipc:// socket file that does not exist."""


_FAMILY: dict[int, type[B2StreamError]] = {_SHORT[name]: cls for name, cls in (
    ("ARG", ArgumentError), ("NOMEM", NoMemoryError),
    ("NCHUNK", ChunkIndexError), ("CONFIG", ConfigError),
    ("PROTO", ProtocolError), ("PROTO_VERSION", ProtocolError),
    ("STREAM_NAME", StreamNameError), ("NOSTREAM", NoStreamError),
    ("NOTEMPLATE", NoTemplateError), ("OVERSIZE", OversizeError),
    ("DROPPED", DroppedError), ("TIMEOUT", TimeoutError),
    ("CLOSED", ClosedError), ("BUSY", BusyError), ("AUTH", AuthError),
    ("LOCKED", LockedError), ("LIMIT", LimitError),
    ("FRAME_LATE", FrameLateError), ("FRAME_DUP", FrameDupError),
    ("SERIES_FORMAT", SeriesError), ("SERIES_KEY", SeriesError),
    ("SERIES_VALUE", SeriesError), ("SERIES_SIZE", SeriesError),
    ("RECORD", RecordError), ("RECORD_USER", RecordError),
    ("PAIR", IntegrityError), ("CHECKSUM", IntegrityError),
    ("WRONG_RANK", WrongRankError), ("NEED_FRAME", NeedFrameError),
    ("OBJ_CONFLICT", StoreError), ("STORE", StoreError))}


def error_for(code: int, message: str = "", **kw) -> B2StreamError:
    """The exception of the family `code` belongs to."""
    cls = _FAMILY.get(code)
    if cls is None:
        if _SHORT["SHORT"] <= code <= _SHORT["IO_LIMIT"]:
            cls = FrameError
        elif _SHORT["SHM_HEADER"] <= code <= _SHORT["SHM_ACCOUNT"]:
            cls = ShmError
        elif code == -_errno.ENOENT:
            cls = NoEntryError
        elif -4096 < code < 0:
            cls = SystemError_
        else:
            cls = B2StreamError
    return cls(code, message, **kw)


def naming(exc: B2StreamError, what: str) -> B2StreamError:
    """exc with its message naming what it is about (a stream's name), as
    the same class with the same fields."""
    if what in exc.message:
        return exc
    new = type(exc)(exc.code, f"{exc.message}: '{what}'", ref_type=exc.ref_type,
                    ref_id=exc.ref_id, ref_index=exc.ref_index, closed=exc.closed)
    return new

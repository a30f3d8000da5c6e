"""b2stream: Python producers and consumers for the b2streamd compression
service, on pyzmq and numpy.

* :class:`Session` connects to the daemon (ipc:// or tcp://, CurveZMQ).
* :meth:`Session.open` gives a :class:`Producer` (``send``, ``flush``,
  ``close``; ``attach_shm`` for shared-memory slots filled in place).
* :class:`ClusterProducer` sends to the ranks of a distributed stream,
  each buffer to the rank owning its frame number.
* :meth:`Session.follow` gives a :class:`Follow`, an iterator of
  ``(index, data)`` for every committed chunk.
* :class:`Frame` reads frames on local disk without python-blosc2, with
  their series metadata and chunk records (:class:`Record`).
* :class:`DistributedFrame` (or :func:`open` with ``rados://POOL/NAME`` or
  ``dir:///ABS/DIR/NAME``) reads a distributed frame in an object store
  up to its committed count, and follows it as the committer extends it.
* Protocol version 2 (records, series metadata) is negotiated, falling
  back to version 1 with an older daemon.
* :class:`Control` drives acquisitions over the daemon's HTTP control API
  (arm, list, get, files, stop, abort, wait, events), standard library only.
* :mod:`b2stream.errors` has one exception class per protocol error family.

docs/PYTHON.md is the API reference; docs/PROTOCOL.md the wire protocol."""
from __future__ import annotations

from .errors import (ArgumentError, AuthError, B2StreamError, BusyError,
                     ChunkIndexError, ClosedError, ClusterError, ConfigError,
                     DroppedError, FrameDupError, FrameError, FrameLateError,
                     FrameOrderError, IntegrityError, LimitError, LockedError,
                     NeedFrameError, NoStreamError, NoTemplateError,
                     OversizeError, ProtocolError, RecordError, SeriesError,
                     ShmError, StoreError, StreamError, StreamNameError,
                     TimeoutError, WrongRankError)
from .control import (Acquisition, Control, ControlError, ControlUnreachable,
                      Event, WaitTimeout)
from .dframe import DistributedFrame, DistributedParams
# b2stream.open; left out of __all__ so "import *" keeps the built-in open
from .dframe import open
from .frame import B2ndInfo, Frame
from .keys import public_key, read_key
from .record import Record

try:
    import zmq as _zmq  # noqa: F401
except ImportError:       # without pyzmq: frames only (e.g. in another venv)
    _zmq = None
if _zmq is not None:
    from .cluster import ClusterProducer
    from .consumer import Follow
    from .producer import FlushResult, Producer, ProducerStats
    from .session import Session, default_endpoint
    from .shm import ShmSegment, ShmSlot

__version__ = "0.1.0"

#: ack levels and backpressure policies (PROTOCOL.md 2.3)
RECEIVED, WRITTEN, DURABLE = 1, 2, 3
BLOCK, DROP_NEWEST, DROP_OLDEST = 1, 2, 3


def connect(endpoint: str | None = None, **kw) -> "Session":
    """Shorthand for :class:`Session` (endpoint, name=..., timeout=...,
    curve_server_key=..., curve_secret_key=...)."""
    if _zmq is None:
        raise ImportError("b2stream sessions need pyzmq (Debian: python3-zmq)")
    return Session(endpoint, **kw)


_SESSION_NAMES = {"Session", "default_endpoint", "Producer", "ProducerStats", "FlushResult",
                  "ShmSegment", "ShmSlot", "Follow", "ClusterProducer"}

__all__ = [
    "Session", "connect", "default_endpoint", "Producer", "ProducerStats",
    "FlushResult", "ShmSegment", "ShmSlot", "Follow", "Frame", "B2ndInfo",
    "read_key", "public_key", "B2StreamError", "ArgumentError", "AuthError",
    "BusyError", "ChunkIndexError", "ClosedError", "ConfigError",
    "DroppedError", "FrameError", "NoStreamError", "NoTemplateError",
    "OversizeError", "ProtocolError", "ShmError", "StreamError",
    "StreamNameError", "TimeoutError", "Record", "FrameOrderError",
    "FrameLateError", "FrameDupError", "IntegrityError", "LimitError",
    "LockedError", "RecordError", "SeriesError", "ClusterProducer",
    "ClusterError", "WrongRankError", "NeedFrameError", "StoreError",
    "DistributedFrame", "DistributedParams",
    "RECEIVED", "WRITTEN", "DURABLE",
    "BLOCK", "DROP_NEWEST", "DROP_OLDEST",
]
if _zmq is None:
    __all__ = [n for n in __all__ if n not in _SESSION_NAMES]

"""Consumers: FOLLOW, NOTIFY or pushed CHUNKs, UNFOLLOW (docs/PROTOCOL.md
4.4), and turning decompressed chunks into numpy arrays."""
from __future__ import annotations

import os
import time
from collections import deque
from typing import Any, Iterator

import numpy as np

from . import _msgpack
from . import _wire as w
from . import record as _rec
from ._conn import Connection, _Deadline
from .errors import B2StreamError, ClosedError, NoStreamError, ProtocolError, TimeoutError
from .frame import B2ndInfo, Frame

_MODES = {"decompressed": w.FOLLOW_PUSH_DECOMPRESSED,
          "compressed": w.FOLLOW_PUSH_COMPRESSED, "notify": 0}


class _Layout:
    """How a decompressed chunk of a stream becomes a Python object: an
    array of the b2nd chunkshape and dtype, an array of an explicit dtype
    (and shape), or bytes.

    Extension point: per-stream series metadata could plug in at
    :meth:`make`, ahead of the local frame's b2nd metalayer (records travel
    beside the data, see :class:`Follow`)."""

    def __init__(self, b2nd: B2ndInfo | None = None, dtype: Any = None,
                 shape: Any = None) -> None:
        self.b2nd = b2nd
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.shape = None if shape is None else tuple(shape)

    @classmethod
    def make(cls, session: Connection, stream: str, dtype: Any, shape: Any) -> "_Layout":
        if dtype is not None:
            return cls(dtype=dtype, shape=shape)
        return cls(b2nd=_local_b2nd(session, stream), shape=shape)

    def convert(self, payload: Any) -> Any:
        """A read-only array over the message (no copy, unless b2nd blocks
        need reordering), or bytes."""
        buf = payload.buffer if hasattr(payload, "buffer") else payload
        if self.dtype is not None:
            a = np.frombuffer(buf, dtype=self.dtype)
            a = a.reshape(self.shape) if self.shape else a
        elif self.b2nd is not None:
            a = self.b2nd.item_from_bytes(buf)
            a = a.reshape(self.shape) if self.shape else a
        else:
            return bytes(buf)
        a.flags.writeable = False
        return a


def b2nd_from_stats(info: dict) -> B2ndInfo | None:
    """The b2nd description a stream's STATS carries (shape as configured:
    0 grows), None when it has none or leaves the dtype to the frame."""
    nd = info.get("b2nd")
    if not nd or not nd.get("dtype"):
        return None
    return B2ndInfo(tuple(nd["shape"]), tuple(nd["chunkshape"]), tuple(nd["blockshape"]),
                    np.dtype(nd["dtype"]))


def series_from_stats(info: dict) -> dict | None:
    """The series metadata a stream's STATS carries, None without it."""
    raw = info.get("series_msgpack")
    if raw is None:
        return None
    return _msgpack.unpackb(bytes.fromhex(raw)) if raw else {}


def _local_b2nd(session: Connection, stream: str) -> B2ndInfo | None:
    """The b2nd metadata of the stream: from STATS (the daemon's
    configuration, on any host), else from its frame when that is readable
    here (the daemon runs on this host): its path comes from STATS."""
    try:
        info = session.stats(stream).get("streams", {}).get(stream, {})
        nd = b2nd_from_stats(info)
        if nd is not None:
            return nd
        path = info.get("path")
        if not path or not os.path.exists(path):
            return None
        with Frame(path) as f:
            return f.b2nd
    except (OSError, B2StreamError, ValueError, TypeError):
        return None


class Follow:
    """A follow: iterate for ``(index, data)`` of every chunk committed
    from ``start`` on, exactly once, in order, as the daemon commits them.

    mode: ``"decompressed"`` (default; the daemon decompresses, data is a
    read-only numpy array shaped and typed from the stream's b2nd metadata
    when the frame is readable on this host or ``dtype`` is given, else
    bytes), ``"compressed"`` (bytes of the Blosc2 chunk as stored), or
    ``"notify"`` (data is None: read the frame locally with
    :class:`~b2stream.frame.Frame`).

    timeout: seconds each step of the iteration may wait for the next
    chunk (None: no limit) before TimeoutError.  resume: when the daemon
    ends the session (it stopped or restarted), reconnect and follow on
    from the next index instead of raising ClosedError.

    records (protocol version 2): each step returns ``(index, data,
    record)`` with the chunk's :class:`~b2stream.record.Record` (frame
    number, timestamp, user part, checksum, gap flags).

    Used as a context manager (or on KeyboardInterrupt inside it) the
    follow ends with UNFOLLOW."""

    def __init__(self, session: Connection, stream: str, start: int | str = 0, *,
                 mode: str = "decompressed", timeout: float | None = None,
                 resume: bool = False, dtype: Any = None, shape: Any = None,
                 records: bool = False, on_series: Any = None,
                 series_interval: float = 1.0) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {sorted(_MODES)}")
        if records:
            session._need_v2("records")
        self.records = records
        self._recs: deque = deque()     # NOTIFY mode: records announced
        self.session = session
        self.stream = stream
        self.mode = mode
        self.timeout = timeout
        self.resume = resume
        self.follow_id = 0
        self.committed = 0
        self.closed: B2StreamError | None = None
        self._queue: deque = deque()
        self._announced = 0
        self._dtype, self._shape = dtype, shape
        self._layout = (_Layout.make(session, stream, dtype, shape)
                        if mode == "decompressed" else _Layout())
        self._read_layout: _Layout | None = None
        self.on_series = on_series
        self.series_interval = series_interval
        self._series: dict | None = None
        self._series_at = 0.0
        if on_series is not None:
            self._series = self.session.series(stream)
            self._series_at = time.monotonic()
        from_end = start == "end"
        self._start(0 if from_end else int(start), from_end)

    def _start(self, start: int, from_end: bool) -> None:
        flags = (_MODES[self.mode] | (w.FOLLOW_FROM_END if from_end else 0)
                 | (w.FOLLOW_RECORDS if self.records else 0))
        _, hdr, _ = self.session._request(w.FOLLOW, w.FOLLOW_F.pack(start) + w.wstr(self.stream),
                                          flags, w.FOLLOWING, about=self.stream)
        first, committed, fid = w.FOLLOWING_F.unpack_from(hdr, 16)
        self.follow_id = fid
        self.position = first            # index the next step returns
        self._announced = first          # NOTIFY: indexes below announced
        self._push_next = first          # index the next pushed CHUNK has
        self.committed = committed
        self.closed = None
        self._queue.clear()
        self._recs.clear()
        self.session.follows[fid] = self

    @property
    def start(self) -> int:
        return self.position

    @property
    def series(self) -> dict:
        """The stream's series metadata (docs/METADATA.md) as a dict, as
        the daemon has it now (with ``on_series``: as last seen)."""
        if self.on_series is None or self._series is None:
            return self.session.series(self.stream)
        return self._series

    def _watch_series(self) -> None:
        """With on_series: every series_interval seconds of iteration,
        look at the series metadata and call on_series(series) when a META
        changed it."""
        now = time.monotonic()
        if now - self._series_at < self.series_interval:
            return
        self._series_at = now
        try:
            new = self.session.series(self.stream)
        except (ClosedError, TimeoutError):
            return             # the next step says what happened
        if new != self._series:
            self._series = new
            self.on_series(new)

    # -- messages from the pump ---------------------------------------------------

    def _frames_ok(self, mtype: int, flags: int, frames: list) -> bool:
        """The frames after the header as 8.2 says: with records, one more
        (NOTIFY: the records; CHUNK: the record after the chunk)."""
        bit = w.NOTIFY_RECORDS if mtype == w.NOTIFY else w.CHUNK_RECORD
        want = (0 if mtype == w.NOTIFY else 1) + (1 if self.records else 0)
        if len(frames) == want and bool(flags & bit) == self.records:
            return True
        self.closed = ProtocolError(-958, f"message {mtype:#04x} with {len(frames)} "
                                          f"frames after the header, {want} expected")
        return False

    def _on_message(self, mtype: int, flags: int, hdr: bytes, frames: list) -> None:
        if not self._frames_ok(mtype, flags, frames):
            return
        try:
            if mtype == w.NOTIFY:
                self._on_notify(hdr, frames)
            else:
                self._on_chunk(hdr, frames)
        except _rec.RecordFrameError as exc:
            self.closed = ProtocolError(-958, f"record from the daemon: {exc}")

    def _on_notify(self, hdr: bytes, frames: list) -> None:
        first, committed, _, count = w.NOTIFY_F.unpack_from(hdr, 16)
        if first != self._announced:
            self.closed = ProtocolError(-958, f"NOTIFY from {first}, expected "
                                              f"{self._announced}")
            return
        if self.records:
            self._recs.extend(_rec.decode_many(frames[0].bytes, count))
        self._announced = first + count
        self.committed = max(self.committed, committed)

    def _on_chunk(self, hdr: bytes, frames: list) -> None:
        index, _, nbytes, cbytes = w.CHUNK_F.unpack_from(hdr, 16)
        if index != self._push_next:
            self.closed = ProtocolError(-958, f"pushed chunk {index}, expected "
                                              f"{self._push_next}")
            return
        rec = _rec.decode(frames[1].bytes) if self.records else None
        self._push_next += 1
        self.committed = max(self.committed, index + 1)
        self._queue.append((index, frames[0], rec))

    def _on_error(self, exc: B2StreamError) -> None:
        if exc.closed is not None:
            self.closed = exc

    # -- delivery ----------------------------------------------------------------------

    def _ready(self) -> bool:
        return bool(self._queue) if self.mode != "notify" else self.position < self._announced

    def next(self, timeout: Any = "default") -> tuple:
        """The next committed chunk as (index, data), or (index, data,
        record) for a follow with records; waits up to timeout
        seconds (default: the follow's timeout) and raises TimeoutError.
        After the daemon ended the follow, every chunk delivered before is
        still returned, then its error is raised (ClosedError when the
        session ended, unless resume is set)."""
        deadline = _Deadline(self.timeout if timeout == "default" else timeout)
        while not self._ready():
            if self.closed is not None:
                if self.resume and self.closed.closed == "session":
                    self._resume(deadline)
                    continue
                raise self.closed
            if deadline.passed():
                raise TimeoutError(-951, f"no chunk of '{self.stream}' committed in time")
            try:
                self.session._pump(deadline)
            except ClosedError as exc:
                self.closed = self.closed or exc
        if self.on_series is not None and self.closed is None:
            self._watch_series()
        index = self.position
        self.position += 1
        if self.mode == "notify":
            data, rec = None, (self._recs.popleft() if self.records else None)
        else:
            _, payload, rec = self._queue.popleft()
            data = (payload.bytes if self.mode == "compressed"
                    else self._layout.convert(payload))
        return (index, data, rec) if self.records else (index, data)

    def _resume(self, deadline: _Deadline) -> None:
        """A new session and FOLLOW from the next index, retried until the
        daemon is back and knows the stream, or the deadline passes
        (TimeoutError; the next step goes on trying).

        A restarted daemon knows the streams of its configuration at once
        and a stream made from a template once a producer opens it again
        (the daemon keeps no list of them: the template is the producer's
        to name).  Until then FOLLOW gets NoStreamError, and the follow
        waits for the stream, asking again after 0.05 s, doubling up to
        1 s."""
        self.session.follows.pop(self.follow_id, None)
        pause = 0.05
        while True:
            left = deadline.left()
            try:
                if not self.session.alive:
                    self.session.reconnect(timeout=self.session.timeout if left is None
                                           else max(left, 0.001))
                self._start(self.position, False)
                return
            except (ClosedError, TimeoutError):
                if deadline.passed():
                    raise
            except NoStreamError:
                left = deadline.left()
                if left is not None and left <= 0:
                    raise TimeoutError(-951, f"stream '{self.stream}' is not known to "
                                             f"the restarted daemon yet (one made from "
                                             f"a template is once a producer opens it "
                                             f"again)") from None
                time.sleep(pause if left is None else min(pause, left))
                pause = min(2 * pause, 1.0)

    def __iter__(self) -> Iterator[tuple]:
        while True:
            yield self.next()

    def __next__(self) -> tuple:
        return self.next()

    def read(self, index: int, decompressed: bool = True, record: bool = False) -> Any:
        """Chunk index of the followed stream read through the daemon, in
        every mode alike: decompressed, the data a follow in mode
        ``"decompressed"`` gives (a read-only array typed and shaped from
        the stream's b2nd metadata or the follow's dtype and shape, else
        bytes); with ``decompressed=False``, bytes of the chunk as stored.
        With record: ``(data, record)``.  ChunkIndexError when the chunk
        is not committed yet."""
        layout = None
        if decompressed:
            if self._read_layout is None:
                self._read_layout = (self._layout if self.mode == "decompressed" else
                                     _Layout.make(self.session, self.stream,
                                                  self._dtype, self._shape))
            layout = self._read_layout
        return self.session.read(self.stream, index, decompressed=decompressed,
                                 layout=layout, record=record)

    def unfollow(self, timeout: float | None = None) -> int:
        """End the follow; returns the resume point: the index of the first
        chunk this follow did not return (chunks the daemon had pushed but
        the program had not taken yet are dropped, and following again
        from the returned index gets them).  Idempotent."""
        if self.session.follows.get(self.follow_id) is not self:
            return self.position
        try:
            if self.closed is None and self.session.alive:
                self.session._request(
                    w.UNFOLLOW, w.HANDLE_F.pack(self.follow_id), 0, w.UNFOLLOWED,
                    _Deadline(self.session.timeout if timeout is None else timeout))
            return self.position
        finally:
            self.session.follows.pop(self.follow_id, None)
            self.closed = self.closed or ClosedError(-950, "unfollowed")
            self._queue.clear()
            self._recs.clear()

    close = unfollow

    def __enter__(self) -> "Follow":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.unfollow(timeout=None if exc_type is None else 1.0)
        except B2StreamError:
            if exc_type is None:
                raise

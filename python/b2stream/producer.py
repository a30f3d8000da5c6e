"""Producers: OPEN, DATA with credits, ACK and DROPPED bookkeeping, FLUSH,
CLOSE (docs/PROTOCOL.md 4.2, 5); shared-memory slots are in shm.py.

Credits (5.1): available = OPENED.credits + sum of ACK.credits - buffers
sent; nothing is sent while it is 0, because a buffer sent without credit
makes the daemon close the handle.  A shared-memory slot reserves its
credit when it is acquired, so submit never waits."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _msgpack
from . import _wire as w
from . import record as _rec
from ._buffer import as_bytes_view
from ._conn import DEFAULT, Connection, _Deadline, _DeadlineNow
from .errors import (ArgumentError, B2StreamError, ClosedError, OversizeError,
                     ProtocolError, TimeoutError, error_for)
from .record import int_field
from .shm import SHM_MAX_SLOT_SIZE, SHM_MAX_SLOTS, ShmSegment

_ZERO_COPY_MIN = 64 * 1024   # below this pyzmq copies anyway


@dataclass(frozen=True)
class ProducerStats:
    """Counters of one producer handle.  A dropped or rejected buffer
    counts as settled at every level (PROTOCOL.md 5.2), so
    ``acked - dropped - rejected`` reached the stream's ack level."""

    sent: int
    bytes: int
    received: int
    written: int
    durable: int
    acked: int
    dropped: int
    rejected: int
    credits: int
    max_buffer: int
    ack_level: int
    policy: int


@dataclass(frozen=True)
class FlushResult:
    """What a flush or close settled: ``upto`` buffers, of which
    ``dropped`` were dropped by the backpressure policy since the previous
    flush (drops are counted, not raised: the protocol reports them as
    DROPPED messages, not errors)."""

    upto: int
    dropped: int


class Producer:
    """One producer handle: buffers sent to one stream; each buffer becomes
    one chunk of the stream's frame.  Made by :meth:`Session.open`.

    >>> with s.open("detector1") as p:
    ...     for image in images:
    ...         p.send(image)            # waits for credit up to the timeout
    ...     p.flush()                    # everything durable

    ``handle``, ``max_buffer``, ``ack_level`` (1 received, 2 written,
    3 durable) and ``policy`` (1 block, 2 drop-newest, 3 drop-oldest) are
    what the daemon said in OPENED."""

    def __init__(self, session: Connection, stream: str, handle: int, credits: int,
                 max_buffer: int, ack_level: int, policy: int) -> None:
        self.session = session
        self.stream = stream
        self.handle = handle
        self.credits = credits
        self.max_buffer = max_buffer
        self.ack_level = ack_level
        self.policy = policy
        self.next_id = 0
        self.bytes = 0
        self.upto = [0, 0, 0, 0]             # per level 1..3
        self.dropped = 0
        self.rejected = 0
        self.closed: B2StreamError | None = None
        self._drops_at_flush = 0
        self._rejections: list[B2StreamError] = []
        self._shm: ShmSegment | None = None
        self._spec: Any = False            # array_spec, not asked yet
        session.producers[handle] = self

    # -- messages from the pump ----------------------------------------------

    def _settle(self, level: int, upto: int) -> None:
        for lv in range(1, min(level, 3) + 1):
            if self.upto[lv] < upto:
                self.upto[lv] = upto

    def _on_message(self, mtype: int, hdr: bytes) -> None:
        if mtype == w.ACK:
            upto, dropped, _, credits, level = w.ACK_F.unpack_from(hdr, 16)
            self._settle(level, upto)
            self.credits += credits
            self.dropped = max(self.dropped, dropped)
        elif mtype == w.DROPPED:
            self.dropped += 1
        elif mtype == w.FLUSHED:
            self._settle(w.LEVEL_DURABLE, w.FLUSHED_F.unpack_from(hdr, 16)[0])
        elif mtype == w.CLOSED:
            upto, dropped, _ = w.CLOSED_F.unpack_from(hdr, 16)
            self._settle(self.ack_level, upto)
            self.dropped = max(self.dropped, dropped)
            self.closed = self.closed or ClosedError(-950, "handle closed")

    def _on_error(self, exc: B2StreamError) -> None:
        if exc.ref_type in (w.DATA, w.SHM_SUBMIT):
            # a buffer refused: settled, its credit comes with the next ACK
            self.rejected += 1
            self._rejections.append(exc)
        if exc.closed == "ref":
            self.closed = exc

    def _on_closed_by(self, exc: B2StreamError) -> None:
        self.closed = self.closed or exc

    # -- sending ----------------------------------------------------------------

    def _timeout(self, timeout: Any) -> float | None:
        return self.session.timeout if timeout is DEFAULT else timeout

    def _usable(self) -> None:
        self.session._usable()
        if self.closed is not None:
            raise self.closed

    def wait_credit(self, timeout: Any = DEFAULT) -> int:
        """Wait until a credit is available; returns how many are.  timeout
        in seconds (default: the session's request timeout; None: no limit;
        0: do not wait).  TimeoutError when none came."""
        deadline = _Deadline(self._timeout(timeout))
        while True:
            self._usable()
            if self.credits > 0:
                return self.credits
            if deadline.passed():
                raise TimeoutError(-951, f"no credit from the daemon for stream "
                                         f"'{self.stream}' in time")
            self.session._pump(deadline)

    def send(self, data: Any, timeout: Any = DEFAULT, copy: bool | None = None, *,
             frame: int | None = None, ts: int | None = None, user: Any = None) -> int:
        """Send one buffer (bytes, bytearray, memoryview or numpy array; a
        non-contiguous array is made contiguous); it becomes one chunk.
        Returns its buffer id.

        Waits up to timeout seconds for credit (default: the session's
        request timeout; None: no limit; 0: do not wait) and raises
        TimeoutError when none came (nothing sent).  OversizeError above
        the stream's max_buffer; the daemon's error when it closed the
        handle.  Drops and per-buffer rejections arrive later: the counters
        count them and :meth:`flush` reports them.

        copy: None copies writable buffers (the caller may refill them at
        once) and sends immutable ones (bytes) without copying; False sends
        any buffer without copying, and the caller must then not modify it
        until the session's next call returns after it went out.

        frame, ts, user (protocol version 2): the buffer's record, stored
        with its chunk: the producer's frame number, a timestamp in ns
        since the epoch, and a user part (a dict, sent as a msgpack map, or
        bytes; at most 4096 bytes encoded).  ProtocolError
        B2S_E_PROTO_VERSION on a version-1 session."""
        rec = self._record(frame, ts, user)
        if isinstance(data, np.ndarray):
            self.check_array(data)
        mv = as_bytes_view(data)
        n = mv.nbytes
        if n == 0:
            raise ArgumentError(-999, "empty buffer")
        if n > self.max_buffer:
            raise OversizeError(-953, f"buffer of {n} bytes; stream '{self.stream}' "
                                      f"takes at most {self.max_buffer}")
        self.wait_credit(timeout)
        if copy is None:
            copy = not mv.readonly
        zero_copy = not copy and n >= _ZERO_COPY_MIN
        body = w.DATA_F.pack(self.next_id, self.handle)
        if rec is None:
            self.session._send([self.session._hdr(w.DATA, body), mv], copy=not zero_copy)
        else:
            hdr = self.session._hdr(w.DATA, body, w.DATA_RECORD)
            self.session._send([hdr, mv, rec], copy=not zero_copy)
        self.credits -= 1
        self.bytes += n
        self.next_id += 1
        return self.next_id - 1

    def try_send(self, data: Any, copy: bool | None = None, *, frame: int | None = None,
                 ts: int | None = None, user: Any = None) -> bool:
        """Non-blocking send: False (nothing sent) when no credit is
        available now, else as :meth:`send`."""
        self._record(frame, ts, user)            # a bad record fails before anything
        self.session._pump(_DeadlineNow())       # take in queued ACKs first
        if self.credits <= 0:
            self._usable()
            return False
        self.send(data, timeout=0, copy=copy, frame=frame, ts=ts, user=user)
        return True

    def array_spec(self) -> tuple[np.dtype, tuple[int, ...]] | None:
        """(dtype, shape) a buffer of a b2nd stream must have: the stream's
        dtype and the image shape (chunkshape without its leading 1), or
        None when the stream is no b2nd array.  Asked of the daemon (STATS)
        once per producer."""
        if self._spec is False:
            from .consumer import b2nd_from_stats
            info = self.session.stats(self.stream).get("streams", {}).get(self.stream, {})
            nd = b2nd_from_stats(info)
            self._spec = None if nd is None else (nd.dtype, nd.item_shape, nd.chunkshape)
        return None if self._spec is None else self._spec[:2]

    def check_array(self, data: np.ndarray) -> None:
        """ArgumentError (a ValueError) unless the numpy array has the
        stream's b2nd dtype and an image's shape (or the chunk shape, or is
        flat with a chunk's items).  The items go in C order, as the array
        holds them (any memory layout); the daemon stores them block after
        block (PROTOCOL.md 3.5).  The daemon itself refuses only a buffer
        of the wrong size (B2S_E_CHUNK_SIZE)."""
        if self.array_spec() is None:
            return
        dtype, item, chunk = self._spec
        flat = (int(np.prod(chunk)),)
        if data.dtype != dtype or data.shape not in (item, chunk, flat):
            shapes = " or ".join(str(s) for s in dict.fromkeys((item, chunk, flat)))
            raise ArgumentError(-999, f"array of {data.dtype} {data.shape} for stream "
                                      f"'{self.stream}', which takes {dtype} arrays "
                                      f"of shape {shapes}")

    def _record(self, frame: int | None, ts: int | None, user: Any) -> bytes | None:
        """The record frame of a buffer, None when it has none."""
        if frame is None and ts is None and user is None:
            return None
        self.session._need_v2("a record (frame, ts, user)")
        return _rec.encode(frame, ts, user)

    def set_meta(self, changes: dict | None = None, timeout: Any = DEFAULT,
                 **kw: Any) -> int:
        """Change the stream's series metadata (protocol version 2): each
        key of changes (a dict, or keyword arguments) is set to its value,
        None deletes the key; keys not named keep their values.  All or
        nothing: the daemon's limits (key <= 64 bytes, value <= 64 KiB,
        map <= 256 KiB encoded) raise a SeriesError and change nothing.
        Waits for META_OK; returns its ``upto`` (buffers sent before the
        change).  Durable with the stream's next commit (:meth:`flush`)."""
        update = dict(changes or {}, **kw)
        if not update:
            raise ValueError("set_meta needs at least one key")
        self.session._need_v2("series metadata")
        self._usable()
        payload = _msgpack.pack_map(update, "series metadata")
        _, hdr, _ = self.session._request(w.META, w.META_F.pack(self.handle), 0, w.META_OK,
                                          _Deadline(self._timeout(timeout)), [payload])
        upto, handle = w.META_OK_F.unpack_from(hdr, 16)
        if handle != self.handle:
            raise ProtocolError(-958, f"META_OK for handle {handle}, not {self.handle}")
        return upto

    def _result(self) -> FlushResult:
        dropped = self.dropped - self._drops_at_flush
        self._drops_at_flush = self.dropped
        if self._rejections:
            first = self._rejections[0]
            self._rejections = []
            raise first
        return FlushResult(self.upto[self.ack_level], dropped)

    def flush(self, timeout: Any = DEFAULT) -> FlushResult:
        """Make everything sent so far durable (committed and fsynced,
        whatever the stream's ack level) and wait for the daemon to say so.
        Raises the first per-buffer rejection since the previous flush (e.g.
        OversizeError, with ``ref_index`` = the buffer id); drops are
        counted in the result."""
        self._usable()
        self.session._request(w.FLUSH, w.HANDLE_F.pack(self.handle), 0, w.FLUSHED,
                              _Deadline(self._timeout(timeout)))
        return self._result()

    def close(self, timeout: Any = DEFAULT) -> FlushResult:
        """CLOSE the handle and wait until every buffer reached the stream's
        ack level (or was dropped or rejected); results as :meth:`flush`.
        Idempotent; the shared-memory segment goes with the handle."""
        if self.session.producers.get(self.handle) is not self:
            return FlushResult(self.upto[self.ack_level], 0)
        try:
            if self.closed is None and self.session.alive:
                self.session._request(w.CLOSE, w.HANDLE_F.pack(self.handle), 0, w.CLOSED,
                                      _Deadline(self._timeout(timeout)))
            elif self.closed is not None and self.closed.code != -950:
                raise self.closed
        finally:
            self.session.producers.pop(self.handle, None)
            if self._shm is not None:
                self._shm.detach()
                self._shm = None
        return self._result()

    def stats(self) -> ProducerStats:
        """The handle's counters now (nothing is asked of the daemon)."""
        return ProducerStats(self.next_id, self.bytes, self.upto[1], self.upto[2],
                             self.upto[3], self.upto[self.ack_level], self.dropped,
                             self.rejected, max(0, self.credits), self.max_buffer,
                             self.ack_level, self.policy)

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            try:
                self.close(timeout=1.0)
            except B2StreamError:
                pass

    # -- shared memory ------------------------------------------------------------

    def attach_shm(self, nslots: int = 16, slot_size: int = 4 << 20) -> ShmSegment:
        """Ask the daemon for a shared-memory segment of nslots slots
        (1 .. 4096) of slot_size bytes (1 .. the stream's max_buffer) and
        map it.  The daemon grants at most its ``shm.slots`` (16 unless
        configured) and fewer when its memory limit leaves no room for
        more: :attr:`ShmSegment.nslots` is the count granted.
        ArgumentError for counts or sizes outside those ranges (nothing
        asked); OSError EOPNOTSUPP when the daemon offers none; BusyError
        when this handle has one already."""
        from .errors import BusyError
        nslots = int_field("nslots", nslots, 1, SHM_MAX_SLOTS, f"1 .. {SHM_MAX_SLOTS}")
        slot_size = int_field("slot_size", slot_size, 1, SHM_MAX_SLOT_SIZE,
                              "1 byte .. 1 GiB")
        if slot_size > self.max_buffer:
            raise OversizeError(-953, f"slots of {slot_size} bytes; stream "
                                      f"'{self.stream}' takes buffers of at most "
                                      f"{self.max_buffer}")
        self._usable()
        if not self.session.shm_offered:
            raise error_for(-95, "the daemon offers no shared-memory ingest")
        if self._shm is not None:
            raise BusyError(-949, "this producer has a segment already")
        body = w.SHM_ATTACH_F.pack(self.handle, nslots, slot_size)
        _, hdr, _ = self.session._request(w.SHM_ATTACH, body, 0, w.SHM_ATTACHED)
        handle, segment, granted, size = w.SHM_ATTACHED_F.unpack_from(hdr, 16)
        name, _ = w.rstr(hdr, 16 + w.SHM_ATTACHED_F.size)
        if handle != self.handle or not 0 < granted <= nslots or size != slot_size:
            raise ProtocolError(-958, "SHM_ATTACHED does not match the request")
        self._shm = ShmSegment(self, segment, name, granted, size)
        return self._shm

    @property
    def shm(self) -> ShmSegment | None:
        """The attached segment, if any."""
        return self._shm

"""Producers: OPEN, DATA with credits, ACK and DROPPED bookkeeping, FLUSH,
CLOSE (docs/PROTOCOL.md 4.2, 5), and shared-memory slots (4.3).

Credits (5.1): available = OPENED.credits + sum of ACK.credits - buffers
sent; nothing is sent while it is 0, because a buffer sent without credit
makes the daemon close the handle.  A shared-memory slot reserves its
credit when it is acquired, so submit never waits."""
from __future__ import annotations

import ctypes
import mmap
import os
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _native
from . import _wire as w
from .errors import (ArgumentError, B2StreamError, ClosedError, OversizeError,
                     ProtocolError, ShmError, TimeoutError, error_for)

if TYPE_CHECKING:
    from .session import Session

_DEFAULT = object()          # "the session's request timeout"
_ZERO_COPY_MIN = 64 * 1024   # below this pyzmq copies anyway
_SHM_SLICE_MS = 100          # slot waits are sliced so ACKs keep being read


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


def _as_buffer(data: Any) -> memoryview:
    if isinstance(data, np.ndarray):
        # bytes of any dtype (datetime64 has no buffer format of its own)
        data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    mv = memoryview(data)
    if not mv.contiguous:
        mv = memoryview(mv.tobytes())
    return mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv


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

    def __init__(self, session: "Session", stream: str, handle: int, credits: int,
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
        return self.session.timeout if timeout is _DEFAULT else timeout

    def _usable(self) -> None:
        self.session._usable()
        if self.closed is not None:
            raise self.closed

    def wait_credit(self, timeout: Any = _DEFAULT) -> int:
        """Wait until a credit is available; returns how many are.  timeout
        in seconds (default: the session's request timeout; None: no limit;
        0: do not wait).  TimeoutError when none came."""
        from .session import _Deadline
        deadline = _Deadline(self._timeout(timeout))
        while True:
            self._usable()
            if self.credits > 0:
                return self.credits
            if deadline.passed():
                raise TimeoutError(-951, f"no credit from the daemon for stream "
                                         f"'{self.stream}' in time")
            self.session._pump(deadline)

    def send(self, data: Any, timeout: Any = _DEFAULT, copy: bool | None = None) -> int:
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
        until the session's next call returns after it went out."""
        mv = _as_buffer(data)
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
        hdr = w.header(w.DATA, w.DATA_F.pack(self.next_id, self.handle))
        self.session._send([hdr, mv], copy=not zero_copy)
        self.credits -= 1
        self.bytes += n
        self.next_id += 1
        return self.next_id - 1

    def try_send(self, data: Any, copy: bool | None = None) -> bool:
        """Non-blocking send: False (nothing sent) when no credit is
        available now, else as :meth:`send`."""
        self.session._pump(_DeadlineNow())       # take in queued ACKs first
        if self.credits <= 0:
            self._usable()
            return False
        self.send(data, timeout=0, copy=copy)
        return True

    def _result(self) -> FlushResult:
        dropped = self.dropped - self._drops_at_flush
        self._drops_at_flush = self.dropped
        if self._rejections:
            first = self._rejections[0]
            self._rejections = []
            raise first
        return FlushResult(self.upto[self.ack_level], dropped)

    def flush(self, timeout: Any = _DEFAULT) -> FlushResult:
        """Make everything sent so far durable (committed and fsynced,
        whatever the stream's ack level) and wait for the daemon to say so.
        Raises the first per-buffer rejection since the previous flush (e.g.
        OversizeError, with ``ref_index`` = the buffer id); drops are
        counted in the result."""
        from .session import _Deadline
        self._usable()
        self.session._request(w.FLUSH, w.HANDLE_F.pack(self.handle), 0, w.FLUSHED,
                              _Deadline(self._timeout(timeout)))
        return self._result()

    def close(self, timeout: Any = _DEFAULT) -> FlushResult:
        """CLOSE the handle and wait until every buffer reached the stream's
        ack level (or was dropped or rejected); results as :meth:`flush`.
        Idempotent; the shared-memory segment goes with the handle."""
        from .session import _Deadline
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

    def attach_shm(self, nslots: int = 16, slot_size: int = 4 << 20) -> "ShmSegment":
        """Ask the daemon for a shared-memory segment of nslots slots of
        slot_size bytes and map it (the daemon may grant fewer slots).
        OSError EOPNOTSUPP when the daemon offers none; BusyError when this
        handle has one already."""
        from .errors import BusyError
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
    def shm(self) -> "ShmSegment | None":
        """The attached segment, if any."""
        return self._shm


class _DeadlineNow:
    """A deadline that has passed: take only what is queued."""

    def left(self) -> float:
        return 0.0

    def passed(self) -> bool:
        return True


# Header fields of proto/shm.h's b2s_shm_header read from the mapping
# (geometry, written once by the daemon before the name is published).
_SHM_GEOMETRY = struct.Struct("=QIIIIQQQQQ")
_SHM_MAGIC = 0x314D485353324230


class ShmSlot:
    """One acquired slot: fill :attr:`buffer` (or an :meth:`array` view of
    it) in place, then :meth:`submit` it (or :meth:`cancel`).  As a context
    manager it submits on success (the whole slot unless ``nbytes`` was
    set) and cancels on an exception."""

    def __init__(self, seg: "ShmSegment", index: int) -> None:
        self.segment = seg
        self.index = index
        #: writable memoryview of the slot's bytes in the shared mapping
        self.buffer = seg._view(index)
        self.nbytes: int | None = None
        self.done = False

    def array(self, dtype: Any = np.uint8, shape: Any = None) -> np.ndarray:
        """A writable numpy view of the slot (no copy); shape defaults to as
        many items as fit."""
        dt = np.dtype(dtype)
        if shape is None:
            shape = (len(self.buffer) // dt.itemsize,)
        count = int(np.prod(shape))
        if count * dt.itemsize > len(self.buffer):
            raise OversizeError(-953, f"{count * dt.itemsize} bytes do not fit a slot "
                                      f"of {len(self.buffer)}")
        self.nbytes = count * dt.itemsize
        return np.frombuffer(self.buffer, dtype=dt, count=count).reshape(shape)

    def submit(self, nbytes: int | None = None) -> int:
        """Hand the slot's first nbytes (default: what :meth:`array` views,
        else the whole slot) to the daemon; returns the buffer id."""
        n = nbytes if nbytes is not None else (self.nbytes or len(self.buffer))
        bid = self.segment._submit(self.index, n)
        self.done = True
        return bid

    def cancel(self) -> None:
        """Give the slot and its credit back unsent."""
        if not self.done:
            self.segment._cancel(self.index)
            self.done = True

    def __enter__(self) -> "ShmSlot":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.done:
            return
        if exc_type is None:
            self.submit()
        else:
            self.cancel()


class ShmSegment:
    """A producer's shared-memory segment (proto/shm.h).  The slot state
    transitions (compare-and-swap on the slot's state word) run in
    libb2s_py; the slots' bytes are views of this process's own mmap of
    /dev/shm/NAME, which stays mapped as long as any view of it lives."""

    def __init__(self, producer: Producer, segment: int, name: str, nslots: int,
                 slot_size: int) -> None:
        self.producer = producer
        self.segment = segment
        self.name = name
        lib = _native.lib()
        code = ctypes.c_int(0)
        h = lib.b2spy_shm_attach(name.encode(), ctypes.byref(code))
        if not h:
            raise error_for(code.value, f"shared memory {name}")
        self._h: int | None = h
        try:
            if lib.b2spy_shm_nslots(h) != nslots or lib.b2spy_shm_slot_size(h) != slot_size:
                raise ShmError(-947, f"{name} is not the segment the daemon announced")
            fd = os.open("/dev/shm/" + name.lstrip("/"), os.O_RDWR)
            try:
                self._map = mmap.mmap(fd, 0)
            finally:
                os.close(fd)
            (magic, _v, _hs, n, _ds, size, stride, _do, data_off,
             total) = _SHM_GEOMETRY.unpack_from(self._map, 0)
            if (magic != _SHM_MAGIC or n != nslots or size != slot_size
                    or total != len(self._map)
                    or data_off + stride * (n - 1) + size > total):
                raise ShmError(-947, f"{name}: header does not match its mapping")
        except BaseException:
            lib.b2spy_shm_detach(h)
            self._h = None
            raise
        self.nslots = nslots
        self.slot_size = slot_size
        self._data_offset = data_off
        self._stride = stride
        self._mv = memoryview(self._map)

    def _view(self, index: int) -> memoryview:
        start = self._data_offset + index * self._stride
        return self._mv[start:start + self.slot_size]

    def _handle(self) -> int:
        if not self._h:
            raise ClosedError(-950, "segment detached")
        return self._h

    def acquire(self, timeout: Any = _DEFAULT) -> ShmSlot:
        """Wait up to timeout seconds (default: the session's request
        timeout; None: no limit) for a credit and a FREE slot, and reserve
        both.  TimeoutError; ClosedError when the daemon reclaimed the
        segment."""
        from .session import _Deadline
        p = self.producer
        deadline = _Deadline(p._timeout(timeout))
        p.wait_credit(deadline.left())
        p.credits -= 1                       # reserved for this slot's submit
        slot = ctypes.c_uint32(0)
        try:
            while True:
                left = deadline.left()
                ms = _SHM_SLICE_MS if left is None else min(_SHM_SLICE_MS, int(left * 1000))
                rc = _native.lib().b2spy_shm_acquire(self._handle(), ms, ctypes.byref(slot))
                if rc == 0:
                    return ShmSlot(self, slot.value)
                if rc != -951 or deadline.passed():
                    raise error_for(rc, f"no free slot in {self.name}"
                                    if rc == -951 else f"slot of {self.name}")
                p.session._pump(_DeadlineNow())
                p._usable()
        except BaseException:
            p.credits += 1
            raise

    def _submit(self, index: int, nbytes: int) -> int:
        p = self.producer
        p._usable()
        if not 0 < nbytes <= self.slot_size:
            raise OversizeError(-953, f"{nbytes} bytes for a slot of {self.slot_size}")
        bid = p.next_id
        rc = _native.lib().b2spy_shm_submit(self._handle(), index, nbytes, bid)
        if rc < 0:
            raise error_for(rc, f"submit of slot {index}")
        body = w.SHM_SUBMIT_F.pack(bid, p.handle, self.segment, index, nbytes)
        # the slot comes back when the daemon reclaims the segment should
        # this send fail
        p.session._send([w.header(w.SHM_SUBMIT, body)])
        p.next_id += 1
        p.bytes += nbytes
        return bid

    def _cancel(self, index: int) -> None:
        rc = _native.lib().b2spy_shm_cancel(self._handle(), index)
        if rc < 0:
            raise error_for(rc, f"cancel of slot {index}")
        self.producer.credits += 1

    def send(self, data: Any, timeout: Any = _DEFAULT) -> int:
        """Copy data into a slot and submit it (for sources that do not
        fill slots in place); returns the buffer id."""
        mv = _as_buffer(data)
        with self.acquire(timeout) as slot:
            if mv.nbytes > self.slot_size:
                raise OversizeError(-953, f"{mv.nbytes} bytes for a slot of {self.slot_size}")
            slot.buffer[:mv.nbytes] = mv
            return slot.submit(mv.nbytes)

    def detach(self) -> None:
        """Unmap (the daemon unlinks the segment when the handle closes).
        Views of slots stay valid memory until they are dropped."""
        if self._h:
            _native.lib().b2spy_shm_detach(self._h)
            self._h = None

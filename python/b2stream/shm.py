"""Shared-memory slots of a producer (docs/PROTOCOL.md 4.3, proto/b2s_shm.h).

A slot and a credit are reserved together at acquire, so submit never
waits and never sends without credit; cancel returns both.  The slot state
transitions are compare-and-swaps done in libb2s_py (proto/shm.c); the
slots' bytes are numpy views of this process's own mapping of
/dev/shm/NAME."""
from __future__ import annotations

import ctypes
import mmap
import os
import struct
from typing import Any

import numpy as np

from . import _native
from . import _wire as w
from ._buffer import as_bytes_view
from ._conn import DEFAULT, _Deadline, _DeadlineNow
from .errors import ClosedError, OversizeError, ShmError, error_for

_SHM_SLICE_MS = 100          # slot waits are sliced so ACKs keep being read
SHM_MAX_SLOTS = 4096         # proto/b2s_shm.h B2S_SHM_MAX_SLOTS: shm.slots' bound
SHM_MAX_SLOT_SIZE = 1 << 30  # B2S_SHM_MAX_SLOT_SIZE


# Header fields of proto/b2s_shm.h's b2s_shm_header read from the mapping
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

    def submit(self, nbytes: int | None = None, *, frame: int | None = None,
               ts: int | None = None, user: Any = None) -> int:
        """Hand the slot's first nbytes (default: what :meth:`array` views,
        else the whole slot) to the daemon; returns the buffer id.  frame,
        ts, user: the buffer's record, as for :meth:`Producer.send`."""
        n = nbytes if nbytes is not None else (self.nbytes or len(self.buffer))
        bid = self.segment._submit(self.index, n, frame=frame, ts=ts, user=user)
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
    """A producer's shared-memory segment (proto/b2s_shm.h).  The slot state
    transitions (compare-and-swap on the slot's state word) run in
    libb2s_py; the slots' bytes are views of this process's own mmap of
    /dev/shm/NAME, which stays mapped as long as any view of it lives."""

    def __init__(self, producer: Any, segment: int, name: str, nslots: int,
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
        #: slots granted: at most the count asked for, the daemon's
        #: shm.slots, and what its memory limit leaves room for
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

    def acquire(self, timeout: Any = DEFAULT) -> ShmSlot:
        """Wait up to timeout seconds (default: the session's request
        timeout; None: no limit) for a credit and a FREE slot, and reserve
        both.  TimeoutError; ClosedError when the daemon reclaimed the
        segment."""
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

    def _submit(self, index: int, nbytes: int, frame: int | None = None,
                ts: int | None = None, user: Any = None) -> int:
        p = self.producer
        p._usable()
        rec = p._record(frame, ts, user)
        if not 0 < nbytes <= self.slot_size:
            raise OversizeError(-953, f"{nbytes} bytes for a slot of {self.slot_size}")
        bid = p.next_id
        rc = _native.lib().b2spy_shm_submit(self._handle(), index, nbytes, bid)
        if rc < 0:
            raise error_for(rc, f"submit of slot {index}")
        body = w.SHM_SUBMIT_F.pack(bid, p.handle, self.segment, index, nbytes)
        # the slot comes back when the daemon reclaims the segment should
        # this send fail
        if rec is None:
            p.session._send([p.session._hdr(w.SHM_SUBMIT, body)])
        else:
            p.session._send([p.session._hdr(w.SHM_SUBMIT, body, w.SHM_SUBMIT_RECORD), rec])
        p.next_id += 1
        p.bytes += nbytes
        return bid

    def _cancel(self, index: int) -> None:
        rc = _native.lib().b2spy_shm_cancel(self._handle(), index)
        if rc < 0:
            raise error_for(rc, f"cancel of slot {index}")
        self.producer.credits += 1

    def send(self, data: Any, timeout: Any = DEFAULT, *, frame: int | None = None,
             ts: int | None = None, user: Any = None) -> int:
        """Copy data into a slot and submit it (for sources that do not
        fill slots in place); returns the buffer id.  frame, ts, user: the
        buffer's record, as for :meth:`Producer.send` (which also checks a
        numpy array against a b2nd stream's dtype and image shape)."""
        if hasattr(data, "dtype") and hasattr(data, "shape"):
            self.producer.check_array(data)
        mv = as_bytes_view(data)
        with self.acquire(timeout) as slot:
            if mv.nbytes > self.slot_size:
                raise OversizeError(-953, f"{mv.nbytes} bytes for a slot of {self.slot_size}")
            slot.buffer[:mv.nbytes] = mv
            return slot.submit(mv.nbytes, frame=frame, ts=ts, user=user)

    def detach(self) -> None:
        """Unmap (the daemon unlinks the segment when the handle closes).
        Views of slots stay valid memory until they are dropped."""
        if self._h:
            _native.lib().b2spy_shm_detach(self._h)
            self._h = None

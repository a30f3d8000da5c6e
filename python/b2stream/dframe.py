"""Reading a distributed frame: one logical Blosc2 sparse frame whose chunks
are objects in an object store (a Ceph RADOS pool, or a local store
directory), written by several ranks, with one committer keeping its index
(cluster/include/b2s_dframe.h).  Readers see the committed chunks only.

URLs: ``rados://POOL/NAME`` (Ceph configuration from ``ceph_conf``, else
``$CEPH_CONF``, else librados's own search) and ``dir:///ABS/DIR/NAME``
(a local store directory), ``NAME`` being the frame's name.

:meth:`DistributedFrame.follow` follows the committed count as it grows:
through the committer's COMMITTED messages (PUB/SUB, decoded by
:mod:`b2stream._dmsg`), or by re-reading the count every 200 ms when no
endpoint is given."""
from __future__ import annotations

import ctypes
import errno
import os
import time
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from . import _dmsg, _native
from .errors import ArgumentError, ChunkIndexError, error_for
from ._ndarray import NdArray
from .frame import B2ndInfo, Frame, native_record, read_b2nd, read_series
from .record import Record

POLL_S = 0.2        # re-read period without the committer's endpoint
QUIET_S = 2.0       # with it: re-read after this long without a message
_ARG = -999         # B2S_E_ARG


@dataclass(frozen=True)
class DistributedParams:
    """The frame's parameters (its NAME.meta): compression defaults of its
    exports, the size of every chunk, the ranks and how frames are dealt."""

    typesize: int
    chunk_nbytes: int
    ranks: int
    frames_per_block: int
    codec: int
    clevel: int
    blocksize: int
    splitmode: int


def parse_url(url: str) -> tuple[str, str]:
    """``(store URL, frame name)`` of ``rados://POOL/NAME`` or
    ``dir:///ABS/DIR/NAME``; ArgumentError for anything else."""
    if url.startswith("rados://"):
        pool, sep, name = url[len("rados://"):].partition("/")
        if not pool or not sep:
            raise ArgumentError(_ARG, f"{url}: a RADOS frame is rados://POOL/NAME")
        store = "rados://" + pool
    elif url.startswith("dir://"):
        path = url[len("dir://"):]
        store, _, name = path.rpartition("/")
        if not path.startswith("/") or not store:
            raise ArgumentError(_ARG, f"{url}: a local store's frame is dir:///ABS/DIR/NAME")
    else:
        raise ArgumentError(_ARG, f"{url}: not a rados:// or dir:// URL")
    try:
        _dmsg.committed_prefix(name)      # the frame-name rule
    except Exception:
        raise ArgumentError(_ARG, f"{url}: frame name {name!r} is not 1..160 bytes "
                                  "of [A-Za-z0-9._-] starting with no '.'") from None
    return store, name


def rados_built() -> bool:
    """Whether the loaded library has the RADOS store (librados)."""
    return bool(_native.lib().b2spy_store_have_rados())


def is_url(target) -> bool:
    return isinstance(target, str) and target.startswith(("rados://", "dir://"))


class DistributedFrame(NdArray):
    """A distributed frame opened for reading.

    >>> with DistributedFrame("rados://b2s/run42", ceph_conf="/etc/ceph/ceph.conf") as f:
    ...     print(len(f), f.closed)
    ...     first = f.chunk(0)            # numpy array (b2nd) or uint8 array
    ...     for i, img in f.follow("tcp://committer:5560"):
    ...         ...
    """

    def __init__(self, url: str, ceph_conf: str | os.PathLike | None = None) -> None:
        self.url = url
        self.store_url, self.name = parse_url(url)
        self._h: int | None = None
        if url.startswith("dir://") and not os.path.isdir(self.store_url):
            # the local store makes a missing directory: not for a reader
            raise error_for(-errno.ENOENT, f"{url}: no store directory {self.store_url}")
        code = ctypes.c_int(0)
        msg = ctypes.create_string_buffer(512)
        conf = os.fsencode(ceph_conf) if ceph_conf is not None else None
        h = _native.lib().b2spy_dframe_open(self.store_url.encode(), self.name.encode(),
                                            conf, ctypes.byref(code), msg, len(msg))
        if not h:
            raise error_for(code.value, f"{url}: {msg.value.decode(errors='replace')}")
        self._h = h
        self._committed, self._closed = 0, False
        p = (ctypes.c_int32 * 9)()
        _native.lib().b2spy_dframe_params(h, p)
        self.params = DistributedParams(*p[:8])
        self._b2nd = read_b2nd(_native.lib().b2spy_dframe_b2nd, h, self.params.typesize,
                               url) if p[8] else None
        self.refresh()

    def _handle(self) -> int:
        if not self._h:
            raise ValueError("frame is closed")
        return self._h

    # -- the committed prefix ------------------------------------------------

    def refresh(self) -> int:
        """Re-read the committed count and the closed flag from the store;
        returns the count."""
        h, closed = ctypes.c_int64(0), ctypes.c_int(0)
        rc = _native.lib().b2spy_dframe_refresh(self._handle(), ctypes.byref(h),
                                                ctypes.byref(closed))
        if rc < 0:
            raise error_for(rc, f"{self.url}: committed count: {self._store_words()}")
        self._committed, self._closed = h.value, bool(closed.value)
        return self._committed

    @property
    def committed(self) -> int:
        """Chunks 0 .. committed-1 are readable (as of the last refresh)."""
        return self._committed

    @property
    def closed(self) -> bool:
        """True once the frame is finished: committed will not grow."""
        return self._closed

    def __len__(self) -> int:
        """Images along dimension 0 for a b2nd frame, else chunks (both
        committed)."""
        return self.shape[0] if self._b2nd is not None and self._b2nd.shape else self._committed

    # -- the N-d array (_ndarray.NdArray) ------------------------------------

    def _nd_count(self) -> int:
        return self._committed

    def _nd_chunk(self, j: int) -> np.ndarray:
        return self.chunk(j, raw=True)

    def _nd_gather(self):
        return _native.lib().b2spy_dframe_gather, (self._handle(),), ()

    @property
    def b2nd(self) -> B2ndInfo | None:
        """The b2nd metadata of the frame's exports, or None."""
        return self._b2nd

    @property
    def series(self) -> dict:
        """The series metadata as a dict (empty when none)."""
        return read_series(_native.lib().b2spy_dframe_series, self._handle(), self.url)

    # -- chunks and records --------------------------------------------------

    def _index(self, i: int) -> int:
        n = self._committed
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise ChunkIndexError(-969, f"{self.url}: chunk {i} of {n} committed")
        return j

    def _store_words(self) -> str:
        return _native.lib().b2spy_store_last_error().decode(errors="replace")

    def _error(self, code: int, i: int):
        words = self._store_words()
        return error_for(code, f"{self.url}: chunk {i}: {words or _native.strerror(code)}",
                         ref_index=i)

    def raw_chunk(self, i: int) -> bytes:
        """Committed chunk i as stored (a Blosc2 chunk)."""
        j = self._index(i)
        lib = _native.lib()
        n = lib.b2spy_dframe_chunk_raw(self._handle(), j, None, 0)
        if n < 0:
            raise self._error(int(n), i)
        buf = ctypes.create_string_buffer(max(int(n), 1))
        n = lib.b2spy_dframe_chunk_raw(self._handle(), j, buf, len(buf))
        if n < 0:
            raise self._error(int(n), i)
        return buf.raw[:n]

    def read_chunk_into(self, i: int, out) -> int:
        """Decompress committed chunk i into a writable buffer of at least
        ``params.chunk_nbytes`` bytes; returns the bytes written."""
        j = self._index(i)
        mv = memoryview(out).cast("B")
        if mv.readonly:
            raise ValueError("read_chunk_into needs a writable buffer")
        addr = ctypes.addressof(ctypes.c_char.from_buffer(mv)) if len(mv) else None
        rc = _native.lib().b2spy_dframe_chunk_decompress(self._handle(), j, addr, len(mv))
        if rc < 0:
            raise self._error(rc, i)
        return rc

    def chunk_bytes(self, i: int) -> bytes:
        """Committed chunk i decompressed, as bytes."""
        return self.chunk(i, raw=True).tobytes()

    def chunk(self, i: int, raw: bool = False, stored: bool = False) -> Any:
        """Committed chunk i decompressed: a read-only array typed from the
        b2nd metadata and shaped :attr:`B2ndInfo.item_shape` (an image,
        for one image a chunk), else (or with raw=True) a flat uint8 array.
        stored=True: the chunk as stored (:meth:`raw_chunk`)."""
        if stored:
            return self.raw_chunk(i)
        buf = np.empty(self.params.chunk_nbytes, dtype=np.uint8)
        n = self.read_chunk_into(i, buf)
        buf = buf[:n]
        if raw or self._b2nd is None:
            return buf
        return self._b2nd.item_from_bytes(buf)

    def record(self, i: int) -> Record:
        """The record of committed chunk i (frame number, timestamp, xxh64,
        gap flags, user part), from the frame's index."""
        j = self._index(i)
        return native_record(_native.lib().b2spy_dframe_record, self._handle(), j,
                             f"{self.url}: record {j}")

    def __iter__(self) -> Iterator[np.ndarray]:
        """The committed images (along dimension 0) of a b2nd frame, else
        the committed chunks as uint8 arrays."""
        if self._b2nd is not None and self._b2nd.shape:
            yield from self._nd_iter()
            return
        for i in range(self._committed):
            yield self.chunk(i)

    # -- following ------------------------------------------------------------

    def follow(self, committer_pub: str | None = None, start: int = 0,
               timeout: float | None = None, raw: bool = False
               ) -> Iterator[tuple[int, np.ndarray]]:
        """``(index, chunk)`` for every committed chunk from ``start``, as
        the committed count grows, until the frame is closed (or ``timeout``
        seconds pass without a new chunk).

        With ``committer_pub`` (the committer's PUB endpoint) every
        COMMITTED message of this frame moves the count, and the count is
        re-read from the store after 2 s without a message (which covers a
        message sent before the subscription took hold).  Without it the
        count is re-read every 200 ms."""
        sub = _subscribe(committer_pub, self.name) if committer_pub else None
        try:
            self.refresh()             # after subscribing: nothing is missed
            nxt, last = start, time.monotonic()
            while True:
                while nxt < self._committed:
                    yield nxt, self.chunk(nxt, raw=raw)
                    nxt, last = nxt + 1, time.monotonic()
                if self._closed:
                    return
                wait = QUIET_S if sub else POLL_S
                if timeout is not None:
                    wait = min(wait, timeout - (time.monotonic() - last))
                    if wait <= 0:
                        return
                self._wait(sub, wait)
        finally:
            if sub is not None:
                sub.close(linger=0)

    def _wait(self, sub, wait: float) -> None:
        """Wait for COMMITTED messages (at most ``wait`` s), or sleep, then
        refresh when the count may have moved."""
        if sub is None:
            time.sleep(wait)
            self.refresh()
            return
        if not sub.poll(int(wait * 1000)):
            if wait >= QUIET_S:
                self.refresh()
            return
        import zmq
        h, closed = self._committed, False
        while True:
            try:
                buf = sub.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            try:
                m = _dmsg.decode(buf)
            except Exception:
                continue                # a malformed message moves nothing
            if m.type == _dmsg.COMMITTED and m.name == self.name:
                h, closed = max(h, m.index), closed or m.closed
        # chunks are read through the store, whose count must move first
        if h > self._committed or closed:
            self.refresh()

    # -- life cycle ---------------------------------------------------------------

    def close(self) -> None:
        """Release the frame and its store (idempotent)."""
        if self._h:
            _native.lib().b2spy_dframe_close(self._h)
            self._h = None

    def __enter__(self) -> "DistributedFrame":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _subscribe(endpoint: str, name: str):
    """A SUB socket on the committer's PUB for this frame's COMMITTED."""
    import zmq
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, _dmsg.committed_prefix(name))
    sub.connect(endpoint)
    return sub


def open(target, ceph_conf: str | os.PathLike | None = None, **kw):
    """A :class:`DistributedFrame` for ``rados://POOL/NAME`` or
    ``dir:///ABS/DIR/NAME``, else a local :class:`Frame` (file or sparse
    directory; ``kw`` go to it)."""
    if is_url(target):
        return DistributedFrame(target, ceph_conf=ceph_conf)
    if ceph_conf is not None:
        raise ArgumentError(_ARG, "ceph_conf goes with a rados:// frame")
    return Frame(target, **kw)

"""Reading frames on local disk (contiguous files and sparse directories),
without python-blosc2, through the project's own C frame reader.

A frame the daemon is writing can be read at any time: every committed
chunk is complete on disk, and :meth:`Frame.refresh` re-opens the frame to
see the chunks committed since.

Acquisition metadata (docs/METADATA.md): :attr:`Frame.series` is the
stream's series metadata, :meth:`Frame.record` the record of a chunk, read
from the companion records frame beside the data frame."""
from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from . import _msgpack, _native
from ._ndarray import NdArray, unblock
from .errors import ChunkIndexError, FrameError, error_for
from .record import Record

_MAX_DIM = 16


@dataclass(frozen=True)
class B2ndInfo:
    """The b2nd metalayer: how the frame's chunks form an N-d array."""

    shape: tuple[int, ...]
    chunkshape: tuple[int, ...]
    blockshape: tuple[int, ...]
    dtype: np.dtype

    @property
    def item_shape(self) -> tuple[int, ...]:
        """The shape a chunk is given in: an image's (``chunkshape``
        without its leading 1) when each chunk holds one image of a stream
        growing along dimension 0, else ``chunkshape``."""
        cs = tuple(self.chunkshape)
        return cs[1:] if len(cs) > 1 and cs[0] == 1 else cs

    def chunk_from_bytes(self, buf) -> np.ndarray:
        """One decompressed chunk as an array of ``chunkshape`` (zero-copy
        when its blocks are laid out in C order, i.e. each block spans the
        trailing dimensions of the chunk)."""
        flat = np.frombuffer(buf, dtype=self.dtype)
        return unblock(flat, self.chunkshape, self.blockshape)

    def item_from_bytes(self, buf) -> np.ndarray:
        """One decompressed chunk as a read-only array of
        :attr:`item_shape` (an image, for one image a chunk)."""
        a = self.chunk_from_bytes(buf)
        if a.shape == tuple(self.chunkshape):
            a = a.reshape(self.item_shape)
        a.flags.writeable = False
        return a


def native_record(getter, handle: int, j: int, what: str) -> Record:
    """Record j through a flat C getter of libb2s_py (b2spy_records_get,
    b2spy_dframe_record)."""
    frame, xxh, flags, ulen = (ctypes.c_uint64(), ctypes.c_uint64(),
                               ctypes.c_uint32(), ctypes.c_uint32())
    ts, present, kind = ctypes.c_int64(), ctypes.c_int(), ctypes.c_int()
    user = ctypes.c_void_p()
    rc = getter(handle, j, ctypes.byref(frame), ctypes.byref(ts), ctypes.byref(xxh),
                ctypes.byref(present), ctypes.byref(flags), ctypes.byref(kind),
                ctypes.byref(user), ctypes.byref(ulen))
    if rc < 0:
        raise error_for(rc, what, ref_index=j)
    raw = ctypes.string_at(user.value, ulen.value) if kind.value else None
    return Record(frame.value if present.value & 1 else None,
                  ts.value if present.value & 2 else None, xxh.value, flags.value,
                  _msgpack.unpackb(raw) if kind.value == 1 else raw)


def read_b2nd(getter, handle: int, typesize: int, what: str) -> B2ndInfo | None:
    """The b2nd metadata through a flat C getter (b2spy_frame_b2nd,
    b2spy_dframe_b2nd); None when there is none."""
    shape = (ctypes.c_int64 * _MAX_DIM)()
    cs = (ctypes.c_int32 * _MAX_DIM)()
    bs = (ctypes.c_int32 * _MAX_DIM)()
    dt = ctypes.create_string_buffer(256)
    nd = getter(handle, shape, cs, bs, dt, len(dt))
    if nd < 0:
        raise error_for(nd, f"{what}: b2nd metalayer")
    if nd == 0:
        return None
    dtype = np.dtype(dt.value.decode()) if dt.value else np.dtype(f"V{typesize}")
    return B2ndInfo(tuple(shape[:nd]), tuple(cs[:nd]), tuple(bs[:nd]), dtype)


def read_series(getter, handle: int, what: str) -> dict:
    """The series map through a flat C getter (b2spy_frame_series,
    b2spy_dframe_series) as a dict."""
    buf = ctypes.create_string_buffer(4096)
    n = getter(handle, buf, len(buf))
    if n > len(buf):
        buf = ctypes.create_string_buffer(int(n))
        n = getter(handle, buf, len(buf))
    if n < 0:
        raise error_for(int(n), f"{what}: series metadata")
    value = _msgpack.unpackb(buf.raw[:n])
    if not isinstance(value, dict):
        raise FrameError(-971, f"{what}: series metadata is no map")
    return value


class Frame(NdArray):
    """A Blosc2 frame opened read-only.  A frame with a b2nd metalayer
    reads as a read-only numpy-like array (``shape``, ``dtype``, ``len``,
    ``f[i]``, ``f[2:4]``, ``f[i, y0:y1, x0:x1]``, ``f[[1, 5]]``,
    ``f[:, y, x]``, ``np.asarray(f)``, iteration over images), decoding
    only the chunks (and blocks) a selection needs.

    >>> with Frame("data/detector1.b2frame") as f:
    ...     first = f[0]                # the first image
    ...     series = f[:, 100, 200]     # one pixel across every image
    ...     whole = f.to_numpy()
    """

    #: threads a selection decodes on (as python-blosc2's nthreads)
    nthreads: int = os.cpu_count() or 1

    def __init__(self, path: str | os.PathLike, retries: int = 3) -> None:
        self.path = os.fspath(path)
        self._h: int | None = None
        self._rec_h: int | None = None
        self._rec_tried = False
        self._open(retries)

    def _open(self, retries: int) -> None:
        lib = _native.lib()
        code = ctypes.c_int(0)
        msg = ctypes.create_string_buffer(512)
        for attempt in range(max(1, retries)):
            h = lib.b2spy_frame_open(self.path.encode(), ctypes.byref(code), msg, len(msg))
            if h:
                self._h = h
                break
            if code.value == -2:     # ENOENT: no point retrying
                break
            time.sleep(0.01 * (attempt + 1))
        if not self._h:
            raise error_for(code.value, f"{self.path}: {msg.value.decode(errors='replace')}")
        self._b2nd = self._read_b2nd()

    def _handle(self) -> int:
        if not self._h:
            raise ValueError("frame is closed")
        return self._h

    # -- acquisition metadata ------------------------------------------------

    @property
    def series(self) -> dict:
        """The series metadata (the vlmetalayer ``series``) as a dict;
        empty when the frame has none."""
        return read_series(_native.lib().b2spy_frame_series, self._handle(), self.path)

    def _records(self) -> int | None:
        """The records frame's handle, opened on first use; None when the
        data frame has none."""
        if not self._rec_tried:
            code = ctypes.c_int(0)
            msg = ctypes.create_string_buffer(512)
            self._rec_h = _native.lib().b2spy_records_open(
                self.path.encode(), ctypes.byref(code), msg, len(msg)) or None
            if self._rec_h is None and code.value != -2:
                raise error_for(code.value, f"{self.path}: records frame: "
                                            f"{msg.value.decode(errors='replace')}")
            self._rec_tried = True
        return self._rec_h

    @property
    def has_records(self) -> bool:
        """True when a records frame lies beside the data frame."""
        return self._records() is not None

    def record(self, i: int) -> Record | None:
        """The record of chunk i (frame number, timestamp, checksum, gap
        flags, user part), or None when the frame has no records frame.
        ChunkIndexError outside the data frame's chunks; IntegrityError
        (B2S_E_PAIR) when the records frame lacks it."""
        j = self._index(i)
        r = self._records()
        if r is None:
            return None
        lib = _native.lib()
        if j >= lib.b2spy_records_count(r):
            raise error_for(-933, f"{self.path}: no record for chunk {j}", ref_index=j)
        return native_record(lib.b2spy_records_get, r, j, f"{self.path}: record {j}")

    @property
    def image_shape(self) -> tuple[int, int] | None:
        """``(y, x)`` of one image of a detector's frame of flattened
        images (b2nd ``(images, pixels)`` whose series says
        ``image_size_y * image_size_x == pixels``, docs/SOURCES.md), else
        None."""
        nd = self._b2nd
        if nd is None or len(nd.shape) != 2 or tuple(nd.chunkshape)[0] != 1:
            return None
        s = self.series
        y, x = s.get("image_size_y"), s.get("image_size_x")
        if not isinstance(y, int) or not isinstance(x, int) or y <= 0 or x <= 0:
            return None
        return (y, x) if y * x == nd.shape[1] else None

    def image(self, i: int) -> np.ndarray:
        """Image i along dimension 0: shaped ``(y, x)`` for a frame of
        flattened images (:attr:`image_shape`), else as ``self[i]``."""
        a = self[i]
        shp = self.image_shape
        return a.reshape(shp) if shp is not None else a

    def _read_b2nd(self) -> B2ndInfo | None:
        return read_b2nd(_native.lib().b2spy_frame_b2nd, self._handle(), self.typesize,
                         self.path)

    # -- what the frame holds ----------------------------------------------

    @property
    def b2nd(self) -> B2ndInfo | None:
        """The b2nd metadata, or None when the frame is not an N-d array."""
        return self._b2nd

    @property
    def typesize(self) -> int:
        return int(_native.lib().b2spy_frame_typesize(self._handle()))

    @property
    def nchunks(self) -> int:
        """Chunks in the frame as of the open (or the last refresh)."""
        return int(_native.lib().b2spy_frame_nchunks(self._handle()))

    def __len__(self) -> int:
        """Images along dimension 0 for a b2nd frame, else chunks."""
        return self.shape[0] if self._b2nd is not None and self._b2nd.shape else self.nchunks

    # -- the N-d array (_ndarray.NdArray) ------------------------------------

    def _nd_count(self) -> int:
        return self.nchunks

    def _nd_chunk(self, j: int) -> np.ndarray:
        return self.chunk(j, raw=True)

    def _nd_gather(self):
        return (_native.lib().b2spy_frame_gather, (self._handle(), self.path.encode()),
                (max(1, int(self.nthreads)),))

    @property
    def sparse(self) -> bool:
        return bool(_native.lib().b2spy_frame_is_sparse(self._handle()))

    def chunk_nbytes(self, i: int) -> int:
        """Decompressed size of chunk i."""
        n = _native.lib().b2spy_frame_chunk_nbytes(self._handle(), self._index(i))
        if n < 0:
            raise self._error(int(n), i)
        return int(n)

    def _index(self, i: int) -> int:
        n = self.nchunks
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise ChunkIndexError(-969, f"chunk {i} of a frame of {n} chunks")
        return j

    def _error(self, code: int, i: int):
        reason = _native.lib().b2spy_frame_last_reason(self._handle()).decode(errors="replace")
        return error_for(code, f"{self.path}: chunk {i}: {reason or _native.strerror(code)}",
                         ref_index=i)

    def read_chunk_into(self, i: int, out) -> int:
        """Decompress chunk i into a writable buffer (e.g. a numpy array);
        returns the bytes written."""
        j = self._index(i)
        mv = memoryview(out).cast("B")
        if mv.readonly:
            raise ValueError("read_chunk_into needs a writable buffer")
        addr = ctypes.addressof(ctypes.c_char.from_buffer(mv)) if len(mv) else None
        rc = _native.lib().b2spy_frame_chunk_decompress(self._handle(), j, addr, len(mv))
        if rc < 0:
            raise self._error(rc, i)
        return rc

    def chunk(self, i: int, raw: bool = False, stored: bool = False) -> Any:
        """Chunk i decompressed: a read-only array typed from the b2nd
        metadata and shaped :attr:`B2ndInfo.item_shape` (an image, for one
        image a chunk), else, or with raw=True, a flat uint8 array.
        stored=True: the chunk as stored (bytes of the Blosc2 chunk; its
        XXH64 is the ``xxh64`` of its record)."""
        if stored:
            return self.raw_chunk(i)
        buf = np.empty(self.chunk_nbytes(i), dtype=np.uint8)
        n = self.read_chunk_into(i, buf)
        buf = buf[:n]
        if raw or self._b2nd is None:
            return buf
        return self._b2nd.item_from_bytes(buf)

    def raw_chunk(self, i: int) -> bytes:
        """Chunk i as stored (a special entry as its 32-byte special
        chunk)."""
        j = self._index(i)
        lib = _native.lib()
        n = lib.b2spy_frame_chunk_raw(self._handle(), j, None, 0)
        if n < 0:
            raise self._error(int(n), i)
        buf = ctypes.create_string_buffer(max(int(n), 1))
        n = lib.b2spy_frame_chunk_raw(self._handle(), j, buf, len(buf))
        if n < 0:
            raise self._error(int(n), i)
        return buf.raw[:n]

    def __iter__(self) -> Iterator[np.ndarray]:
        """The images (along dimension 0) of a b2nd frame, else the
        chunks as uint8 arrays."""
        if self._b2nd is not None and self._b2nd.shape:
            yield from self._nd_iter()
            return
        for i in range(self.nchunks):
            yield self.chunk(i)

    def to_numpy(self) -> np.ndarray:
        """The whole frame: for a b2nd frame the N-d array of
        :attr:`shape` (a writable copy), else the concatenated bytes as
        uint8."""
        if self._b2nd is None:
            parts = [self.chunk(i, raw=True) for i in range(self.nchunks)]
            return np.concatenate(parts) if parts else np.empty(0, np.uint8)
        return np.array(self[...])

    # -- life cycle -------------------------------------------------------------

    def refresh(self) -> int:
        """Re-open the frame to see chunks committed since; returns nchunks."""
        self.close()
        self._open(retries=5)
        return self.nchunks

    def close(self) -> None:
        """Release the frame (idempotent)."""
        if self._rec_h:
            _native.lib().b2spy_records_close(self._rec_h)
        self._rec_h, self._rec_tried = None, False
        if self._h:
            _native.lib().b2spy_frame_close(self._h)
            self._h = None

    def __enter__(self) -> "Frame":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

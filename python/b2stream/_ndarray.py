"""Frames of a b2nd array read as read-only numpy-like arrays (as h5py
datasets and python-blosc2 arrays are): ``shape``, ``dtype``, ``len``,
integer, slice and index-array selection over images and within images,
``__array__``, iteration over images.

A selection decodes only the chunks it touches; when each chunk holds one
image (chunkshape ``(1, ...)``) and the selection within the images lies in
one chunk of the grid, it decodes only the run of blocks holding the items
it needs, for every image in one call into libb2s_py (``f[:, y, x]``
decodes one block per image).  Indexing is outer, as in h5py: each index
array selects along its own axis (at most one index array)."""
from __future__ import annotations

import ctypes
import itertools
from typing import Any, Iterator

import numpy as np

from .errors import error_for


def _c_order_blocks(chunkshape, blockshape) -> bool:
    # Blocks are runs of the chunk's C order when, leaving out dimensions of
    # extent 1 and the whole ones at the end, at most one dimension is left
    # (core/include/b2s_blockorder.h: the rule the daemon's workers follow).
    dims = [(int(c), int(b)) for c, b in zip(chunkshape, blockshape) if int(c) != 1]
    while dims and dims[-1][0] == dims[-1][1]:
        dims.pop()
    return len(dims) <= 1


def unblock(flat: np.ndarray, chunkshape, blockshape) -> np.ndarray:
    """A chunk's items, stored block after block (b2nd), as an array of
    chunkshape.  Blocks that do not divide the chunk keep the flat layout
    (shape ``(n,)``)."""
    chunkshape = tuple(int(c) for c in chunkshape)
    blockshape = tuple(int(b) for b in blockshape)
    n = int(np.prod(chunkshape)) if chunkshape else flat.size
    if flat.size != n:
        return flat
    if _c_order_blocks(chunkshape, blockshape):
        return flat.reshape(chunkshape)
    if any(c % b for c, b in zip(chunkshape, blockshape)):
        return flat
    grid = tuple(c // b for c, b in zip(chunkshape, blockshape))
    nd = len(chunkshape)
    a = flat.reshape(grid + blockshape)
    # (g0, g1, ..., b0, b1, ...) -> (g0, b0, g1, b1, ...)
    order = [i for d in range(nd) for i in (d, nd + d)]
    return np.ascontiguousarray(a.transpose(order)).reshape(chunkshape)


def chunks_per_row(shape, chunkshape) -> int:
    """Chunks in one slab along dimension 0: the chunk grid over the other
    dimensions (0 when one of them is empty)."""
    per = 1
    for s, c in zip(shape[1:], chunkshape[1:]):
        if s <= 0:
            return 0
        per *= -(-s // c)
    return per


def real_shape(info, nchunks: int) -> tuple[int, ...]:
    """The array's shape with the images the frame holds: the metalayer's
    when its first dimension matches the whole slabs of chunks present,
    else those slabs (a stream's template says 0; the daemon brings the
    metalayer up to date at durable commits only)."""
    shape = list(info.shape)
    if not shape:
        return ()
    per = chunks_per_row(shape, info.chunkshape)
    if per == 0:
        return tuple(shape)
    rows = nchunks // per
    c0 = info.chunkshape[0]
    if not (shape[0] and -(-shape[0] // c0) == rows):
        shape[0] = rows * c0
    return tuple(shape)


def _axis(k: Any, n: int, d: int) -> tuple[np.ndarray, bool]:
    """One axis of a selection: (indices, dropped)."""
    if isinstance(k, slice):
        return np.arange(*k.indices(n), dtype=np.int64), False
    if isinstance(k, (int, np.integer)):
        i = int(k)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
        return np.array([j], dtype=np.int64), True
    a = np.asarray(k)
    if a.dtype == bool:
        if a.shape != (n,):
            raise IndexError(f"boolean index of shape {a.shape} for axis {d} "
                             f"with size {n}")
        return np.nonzero(a)[0].astype(np.int64), False
    if a.dtype.kind not in "iu" or a.ndim != 1:
        raise IndexError("only integers, slices, ellipsis and 1-d integer or boolean "
                         "arrays are valid indices")
    a = a.astype(np.int64)
    a = np.where(a < 0, a + n, a)
    if a.size and (a.min() < 0 or a.max() >= n):
        raise IndexError(f"index out of bounds for axis {d} with size {n}")
    return a, False


def normalize(key: Any, shape: tuple[int, ...]) -> list[tuple[np.ndarray, bool]]:
    """A numpy-style key as one (indices, dropped) per axis."""
    key = key if isinstance(key, tuple) else (key,)
    ell = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(ell) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if ell:
        i = ell[0]
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices: array is {len(shape)}-dimensional, "
                         f"but {len(key)} were indexed")
    key = key + (slice(None),) * (len(shape) - len(key))
    sel = [_axis(k, n, d) for d, (k, n) in enumerate(zip(key, shape))]
    if sum(1 for k in key if not isinstance(k, (slice, int, np.integer))) > 1:
        raise IndexError("at most one index array (indexing is outer, as in h5py)")
    return sel


def _contiguous_c(local: list[np.ndarray], cs: tuple[int, ...]) -> bool:
    """Whether the items local selects (one index array per axis of a
    chunk after the first) are one run in C order: single indices, then
    one ascending range, then whole axes."""
    j = 0
    while j < len(local) and local[j].size == 1:
        j += 1
    if j == len(local):
        return True
    if not np.all(np.diff(local[j]) == 1):
        return False
    return all(np.array_equal(b, np.arange(c)) for b, c in zip(local[j + 1:], cs[j + 1:]))


class NdArray:
    """Mixin of Frame and DistributedFrame.  The host gives ``b2nd``,
    ``_nd_count()`` (chunks readable), ``_nd_chunk(j)`` (chunk j decoded,
    flat, in stored order) and ``_nd_gather()`` (its libb2s_py gather
    function, its arguments before the chunks and after the sizes)."""

    _nd_pos: Any = None

    def _nd_need(self):
        info = self.b2nd
        if info is None:
            raise TypeError("the frame has no b2nd metalayer: it is no N-d array "
                            "(read its chunks with chunk(i))")
        return info

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape, its first dimension the images the frame
        holds (as of the open or the last refresh)."""
        return real_shape(self._nd_need(), self._nd_count())

    @property
    def dtype(self) -> np.dtype:
        return self._nd_need().dtype

    @property
    def ndim(self) -> int:
        return len(self._nd_need().shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __array__(self, dtype=None, copy=None):
        a = self[...]
        return a.astype(dtype) if dtype is not None else a

    def _nd_iter(self) -> Iterator[np.ndarray]:
        for i in range(self.shape[0]):
            yield self[i]

    def _nd_posmap(self, info) -> np.ndarray:
        """For each item of a chunk (C order of chunkshape) its position in
        the chunk as stored (b2nd stores blocks one after the other)."""
        if self._nd_pos is None or self._nd_pos[0] is not info:
            n = int(np.prod(info.chunkshape))
            pos = unblock(np.arange(n, dtype=np.int64), info.chunkshape, info.blockshape)
            if pos.shape != tuple(info.chunkshape):
                pos = np.arange(n, dtype=np.int64).reshape(info.chunkshape)
            self._nd_pos = (info, pos, np.array_equal(pos.ravel(), np.arange(n)))
        return self._nd_pos

    def __getitem__(self, key: Any) -> Any:
        info = self._nd_need()
        shape = real_shape(info, self._nd_count())
        if isinstance(key, int) and info.chunkshape[0] == 1 and len(shape) > 1:
            return self._nd_image(info, shape, key)
        sel = normalize(key, shape)
        idx = [a for a, _ in sel]
        drop = tuple(0 if dropped else slice(None) for _, dropped in sel)
        if any(a.size == 0 for a in idx):
            out = np.empty(tuple(a.size for a in idx), dtype=info.dtype)[drop]
        else:
            out = self._nd_select(info, shape, idx)[drop]
        if out.ndim == 0:
            return out[()]
        out.flags.writeable = False
        return out

    def _nd_image(self, info, shape, i: int) -> np.ndarray:
        """f[i] of a frame of one image a chunk: the chunks of image i."""
        j = i + shape[0] if i < 0 else i
        if not 0 <= j < shape[0]:
            raise IndexError(f"index {i} is out of bounds for axis 0 with size {shape[0]}")
        if tuple(info.chunkshape[1:]) != tuple(shape[1:]):
            return self[(i,)]                  # images over several chunks
        _, _, c_order = self._nd_posmap(info)
        n = int(np.prod(info.chunkshape))
        out = np.empty(n, dtype=info.dtype)
        self._nd_run(np.array([j], dtype=np.int64), 0, n, out, info.dtype.itemsize)
        if not c_order:
            out = info.chunk_from_bytes(out)
        out = out.reshape(shape[1:])
        out.flags.writeable = False
        return out

    def _nd_select(self, info, shape, idx: list[np.ndarray]) -> np.ndarray:
        cs = tuple(info.chunkshape)
        rows = np.unique(idx[0])
        lo = [int(a.min()) for a in idx[1:]]
        hi = [int(a.max()) + 1 for a in idx[1:]]
        cell = [x // c for x, c in zip(lo, cs[1:])]
        one_cell = all((h - 1) // c == k for h, c, k in zip(hi, cs[1:], cell))
        if cs[0] == 1 and one_cell:
            vals = self._nd_blocks(info, shape, rows, cell, idx[1:])
        else:
            vals = self._nd_chunks(info, shape, rows, lo, hi, idx[1:])
        if rows.size != idx[0].size or not np.array_equal(rows, idx[0]):
            vals = vals[np.searchsorted(rows, idx[0])]
        return vals

    def _nd_blocks(self, info, shape, rows, cell, idx_in) -> np.ndarray:
        """Images rows, the items idx_in of one chunk-grid cell of each:
        only the blocks holding them are decoded."""
        cs = tuple(info.chunkshape)
        grid = [-(-s // c) for s, c in zip(shape[1:], cs[1:])]
        lin = int(np.ravel_multi_index(cell, grid)) if grid else 0
        per = chunks_per_row(shape, cs) or 1
        chunks = np.ascontiguousarray(rows * per + lin, dtype=np.int64)
        local = [a - k * c for a, k, c in zip(idx_in, cell, cs[1:])]
        _, pos, c_order = self._nd_posmap(info)
        itemsize = info.dtype.itemsize
        if c_order and _contiguous_c(local, cs[1:]):
            lens = tuple(a.size for a in local)
            start = int(np.ravel_multi_index([0] + [int(a[0]) for a in local], cs))
            nitems = int(np.prod(lens)) if lens else 1
            out = np.empty((rows.size, nitems), dtype=info.dtype)
            self._nd_run(chunks, start, nitems, out, itemsize)
            return out.reshape((rows.size,) + lens)
        p = pos[0][np.ix_(*local)] if local else pos[0]
        start, end = int(p.min()), int(p.max()) + 1
        out = np.empty((rows.size, end - start), dtype=info.dtype)
        self._nd_run(chunks, start, end - start, out, itemsize)
        return np.take(out, p - start, axis=1)

    def _nd_run(self, chunks, start, nitems, out, itemsize) -> None:
        fn, before, after = self._nd_gather()
        bad = ctypes.c_int64(-1)
        rc = fn(*before, chunks.ctypes.data, chunks.size, start * itemsize,
                out.ctypes.data, nitems * itemsize, *after, ctypes.byref(bad))
        if rc < 0:
            j = int(chunks[bad.value]) if 0 <= bad.value < chunks.size else -1
            raise self._error(rc, j)

    def _nd_chunks(self, info, shape, rows, lo, hi, idx_in) -> np.ndarray:
        """Images rows, the box lo..hi within them, from whole chunks."""
        cs = tuple(info.chunkshape)
        grid = [-(-s // c) for s, c in zip(shape[1:], cs[1:])]
        per = chunks_per_row(shape, cs) or 1
        box = np.zeros((rows.size,) + tuple(h - l for l, h in zip(lo, hi)),
                       dtype=info.dtype)
        cells = [range(l // c, (h - 1) // c + 1) for l, h, c in zip(lo, hi, cs[1:])]
        crows = rows // cs[0]
        for crow in np.unique(crows):
            at = np.nonzero(crows == crow)[0]
            within = rows[at] - crow * cs[0]
            for cell in itertools.product(*cells):
                lin = int(np.ravel_multi_index(cell, grid)) if grid else 0
                chunk = info.chunk_from_bytes(self._nd_chunk(int(crow) * per + lin))
                chunk = chunk.reshape(cs)
                src, dst = [within], [at]
                for k, c, l, h in zip(cell, cs[1:], lo, hi):
                    a, b = max(l, k * c), min(h, (k + 1) * c)
                    src.append(slice(a - k * c, b - k * c))
                    dst.append(slice(a - l, b - l))
                box[(dst[0],) + tuple(dst[1:])] = chunk[(src[0],) + tuple(src[1:])]
        rel = [a - l for a, l in zip(idx_in, lo)]
        return box[np.ix_(np.arange(rows.size), *rel)]

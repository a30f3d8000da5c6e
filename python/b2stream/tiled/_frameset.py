"""Several b2stream frames of one data key as one array, for the Tiled
adapter (no Tiled import here: the geometry and the reads are tested
without it).

The files are concatenated along dimension 0 in the order given: the
files of a rolled-over acquisition (docs/ACQUISITIONS.md 3.4), each a
contiguous ``.b2frame`` file or a sparse ``.b2frame`` directory, read by
the package's own frame reader (:class:`b2stream.Frame`).  A selection
opens only the files it covers, and each file decodes only the chunks
(and, for one image a chunk, the blocks) the selection needs.

Three layouts of a file's chunks, the same in every file of a set:

* ``b2nd``: a b2nd array; the items along dimension 0 are its images
  (shape, chunk shape, block shape and dtype from the metalayer);
* ``flat``: a detector's frame of flattened images, b2nd ``(images,
  pixels)`` whose series gives ``image_size_y * image_size_x == pixels``
  (docs/SOURCES.md), served as ``(images, y, x)``;
* ``chunks``: a frame without b2nd metalayer whose every chunk is one
  image of a given ``image_shape`` and ``dtype`` (they cannot be read from
  the file, so they must be given)."""
from __future__ import annotations

import math
import os
from typing import Any, Callable, Sequence

import numpy as np

from .._ndarray import normalize
from ..errors import ArgumentError, FrameError
from ..frame import Frame

#: the b2stream_acquisition keys (docs/ACQUISITIONS.md 3.5) checked and shown
ACQ_KEY = "b2stream_acquisition"


class NotYetWritten(FrameError):
    """A selection reaches frames the files do not hold yet (a structure
    registered ahead of the data, as Tiled's writer does while a run goes
    on)."""


def _uri_to_path(uri: str) -> str:
    if uri.startswith("file://"):
        from urllib.parse import unquote, urlparse
        u = urlparse(uri)
        if u.netloc not in ("", "localhost"):
            raise ArgumentError(-902, f"{uri}: not a local file URI")
        return unquote(u.path)
    return uri


class FrameSet:
    """Files ``paths`` (paths or ``file://`` URIs; ``None`` for a file this
    read will not touch, as Tiled's catalog leaves them when it resolves
    only the URIs a slice needs) as one array along dimension 0.

    ``frames_per_file``: items along dimension 0 in every file but the
    last (0 or None: read from the files, which opens each of them).
    ``image_shape`` and ``dtype``: the image of a frame without b2nd
    metalayer (layout ``chunks``); for a b2nd frame they must agree with
    the file (``image_shape`` may turn a b2nd ``(images, pixels)`` frame
    into images)."""

    def __init__(self, paths: Sequence[str | None], *, frames_per_file: int | None = None,
                 image_shape: Sequence[int] | None = None, dtype: Any = None,
                 opener: Callable[[str], Frame] = Frame) -> None:
        if not paths:
            raise ArgumentError(-902, "a frame set needs at least one file")
        self.paths = [None if p is None else _uri_to_path(os.fspath(p)) for p in paths]
        self.frames_per_file = int(frames_per_file or 0)
        if self.frames_per_file < 0:
            raise ArgumentError(-902, f"frames_per_file {frames_per_file} is negative")
        self._want_shape = tuple(int(v) for v in image_shape) if image_shape else None
        self._want_dtype = np.dtype(dtype) if dtype is not None else None
        self._opener = opener
        self._frames: dict[int, Frame] = {}
        self._layout: tuple[str, tuple[int, ...], np.dtype, tuple[int, ...]] | None = None

    # -- files ---------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.paths)

    def frame(self, i: int) -> Frame:
        """File i, opened on first use, its layout checked against the set's."""
        f = self._frames.get(i)
        if f is not None:
            return f
        path = self.paths[i]
        if path is None:
            raise ArgumentError(-902, f"file {i} of the set was not resolved")
        f = self._opener(path)
        try:
            lay = self._layout_of(f, path)
            if self._layout is None:
                self._layout = lay
            elif lay != self._layout:
                raise FrameError(-971, f"{path}: {lay[0]} {lay[1]} {lay[2].str} does not "
                                       f"match the set's {self._layout[0]} "
                                       f"{self._layout[1]} {self._layout[2].str}")
        except BaseException:
            f.close()
            raise
        self._frames[i] = f
        return f

    def _layout_of(self, f: Frame, path: str):
        """(layout, item shape, dtype, chunk shape over the item) of one file."""
        nd = f.b2nd
        if nd is None:
            if self._want_shape is None or self._want_dtype is None:
                raise FrameError(-971, f"{path}: no b2nd metalayer: give image_shape and "
                                       "dtype to read its chunks as images")
            return ("chunks", self._want_shape, self._want_dtype, self._want_shape)
        if self._want_dtype is not None and self._want_dtype != nd.dtype:
            raise FrameError(-971, f"{path}: dtype {nd.dtype.str}, the set says "
                                   f"{self._want_dtype.str}")
        img = f.image_shape
        if self._want_shape is not None and len(self._want_shape) == 2 and img is None \
                and len(nd.shape) == 2 \
                and math.prod(self._want_shape) == nd.shape[1] and nd.chunkshape[0] == 1:
            img = self._want_shape
        if img is not None:
            if self._want_shape is not None and tuple(img) != self._want_shape:
                raise FrameError(-971, f"{path}: images {tuple(img)}, the set says "
                                       f"{self._want_shape}")
            return ("flat", tuple(img), nd.dtype, tuple(img))
        item = tuple(nd.shape[1:])
        if self._want_shape is not None and item != self._want_shape:
            raise FrameError(-971, f"{path}: items {item}, the set says {self._want_shape}")
        return ("b2nd", item, nd.dtype, tuple(nd.chunkshape[1:]))

    def _first(self) -> Frame:
        for i, p in enumerate(self.paths):
            if p is not None:
                return self.frame(i)
        raise ArgumentError(-902, "no file of the set was resolved")

    @property
    def layout(self) -> str:
        self._first()
        return self._layout[0]

    @property
    def item_shape(self) -> tuple[int, ...]:
        """The shape of one item along dimension 0 (an image)."""
        self._first()
        return self._layout[1]

    @property
    def dtype(self) -> np.dtype:
        self._first()
        return self._layout[2]

    def file_length(self, i: int) -> int:
        """Items along dimension 0 that file i holds now."""
        f = self.frame(i)
        return len(f) if self._layout[0] != "chunks" else f.nchunks

    def lengths(self) -> list[int]:
        """Items per file (opens every file)."""
        return [self.file_length(i) for i in range(len(self.paths))]

    def starts(self, total: int | None = None) -> list[int]:
        """Where each file's first item sits in the set."""
        n = self.frames_per_file
        if n:
            return [i * n for i in range(len(self.paths))]
        out, at = [], 0
        for length in self.lengths():
            out.append(at)
            at += length
        return out

    def total(self) -> int:
        """Items the files hold now."""
        n = self.frames_per_file
        if n:
            return n * (len(self.paths) - 1) + self.file_length(len(self.paths) - 1)
        return sum(self.lengths())

    def chunks(self, total: int | None = None) -> tuple[tuple[int, ...], ...]:
        """Dask-style chunks of ``(total, *item_shape)``: along dimension 0
        the frame's chunks (one image each, as the daemon writes them),
        restarting at each file; within an image the b2nd chunk grid."""
        total = self.total() if total is None else total
        c0 = 1
        f = self._first()
        if self._layout[0] == "b2nd":
            c0 = int(f.b2nd.chunkshape[0])
        dim0: list[int] = []
        starts = self.starts() + [None]
        for i in range(len(self.paths)):
            lo = starts[i]
            hi = total if starts[i + 1] is None else min(starts[i + 1], total)
            left = max(0, hi - lo)
            while left > 0:
                dim0.append(min(c0, left))
                left -= dim0[-1]
        rest = []
        for s, c in zip(self._layout[1], self._layout[3]):
            full, part = divmod(s, c) if c else (1, 0)
            rest.append((c,) * full + ((part,) if part else ()) if c else (s,))
        return (tuple(dim0),) + tuple(rest)

    def files_for(self, lo: int, hi: int, total: int | None = None) -> list[int]:
        """The files holding items lo .. hi-1 (needs ``frames_per_file``
        or opens every file)."""
        if hi <= lo:
            return []
        n = self.frames_per_file
        if n:
            last = len(self.paths) - 1
            return list(range(min(lo // n, last), min((hi - 1) // n, last) + 1))
        starts = self.starts()
        a = int(np.searchsorted(starts, lo, side="right")) - 1
        b = int(np.searchsorted(starts, hi - 1, side="right")) - 1
        return list(range(max(a, 0), b + 1))

    # -- reading ---------------------------------------------------------------

    def read(self, key: Any, shape: Sequence[int]) -> np.ndarray:
        """``array[key]`` of the array of ``shape``: ``(*lead, *item_shape)``,
        its leading dimensions (often one: items; two for Bluesky's
        ``(events, frames per event, ...)``) covering the items in C order.
        Integers, slices (any step) and ``...``; indexing as numpy's."""
        shape = tuple(int(s) for s in shape)
        item = self.item_shape
        nlead = len(shape) - len(item)
        if nlead < 1 or tuple(shape[nlead:]) != item:
            raise FrameError(-971, f"shape {shape} does not end with the images' {item}")
        sel = normalize(key, shape)
        idx = [a for a, _ in sel]
        drop = tuple(0 if d else slice(None) for _, d in sel)
        out_shape = tuple(a.size for a in idx)
        if any(a.size == 0 for a in idx):
            return np.empty(out_shape, dtype=self.dtype)[drop]
        lead = idx[:nlead]
        grid = np.meshgrid(*lead, indexing="ij")
        items = np.ravel_multi_index(grid, shape[:nlead]).ravel() if nlead > 1 \
            else lead[0]
        vals = self._read_items(items.astype(np.int64), idx[nlead:])
        return vals.reshape(out_shape)[drop]

    def _read_items(self, items: np.ndarray, img_idx: list[np.ndarray]) -> np.ndarray:
        """Items ``items`` (any order, repeats allowed), each cut to the
        outer product of ``img_idx``."""
        rows = np.unique(items)
        out = np.empty((rows.size,) + tuple(a.size for a in img_idx), dtype=self.dtype)
        starts = self.starts()
        at = 0
        for i in self.files_for(int(rows[0]), int(rows[-1]) + 1):
            lo = starts[i]
            hi = starts[i + 1] if i + 1 < len(starts) else None
            mine = rows[(rows >= lo) & ((rows < hi) if hi is not None else True)]
            if mine.size == 0:
                continue
            out[at:at + mine.size] = self._read_file(i, mine - lo, img_idx)
            at += mine.size
        if at != rows.size:
            raise NotYetWritten(-969, f"items {int(rows[0])}..{int(rows[-1])}: the set's "
                                      f"files hold {self.total()}")
        if rows.size != items.size or not np.array_equal(rows, items):
            out = out[np.searchsorted(rows, items)]
        return out

    def _read_file(self, i: int, local: np.ndarray, img_idx: list[np.ndarray]) -> np.ndarray:
        f = self.frame(i)
        need = int(local[-1]) + 1
        if need > self.file_length(i):
            f.refresh()                        # committed since the open?
            if need > self.file_length(i):
                raise NotYetWritten(-969, f"{self.paths[i]}: item {need - 1} not written "
                                          f"yet (the file holds {self.file_length(i)})")
        rows = _as_key(local)
        layout, item, dtype, _ = self._layout
        if layout == "b2nd":
            return f[(rows,) + tuple(_as_key(a) for a in img_idx)]
        if layout == "flat":
            ys, xs = img_idx
            y0, y1 = int(ys.min()), int(ys.max()) + 1
            w = item[1]
            part = f[rows, y0 * w:y1 * w].reshape(local.size, y1 - y0, w)
            return part[np.ix_(np.arange(local.size), ys - y0, xs)]
        imgs = np.empty((local.size,) + tuple(a.size for a in img_idx), dtype=dtype)
        want = math.prod(item) * dtype.itemsize
        for k, j in enumerate(local):
            raw = f.chunk(int(j), raw=True)
            if raw.size != want:
                raise FrameError(-971, f"{self.paths[i]}: chunk {int(j)} is {raw.size} "
                                       f"bytes, an image of {item} {dtype.str} is {want}")
            img = raw.view(dtype).reshape(item)
            imgs[k] = img[np.ix_(*img_idx)] if img_idx else img
        return imgs

    # -- what the files say ----------------------------------------------------

    def series(self) -> dict:
        """The first resolved file's series metadata."""
        return self._first().series

    def gaps(self, limit: int = 1000) -> tuple[int, list[int]]:
        """(count, first ``limit`` positions) of the gap chunks, from the
        records companions (zeros in the data: docs/METADATA.md 2)."""
        count, first = 0, []
        starts = self.starts()
        for i in range(len(self.paths)):
            f = self.frame(i)
            if not f.has_records:
                continue
            for j in range(f.nchunks):
                rec = f.record(j)
                if rec.gap:
                    count += 1
                    if len(first) < limit:
                        first.append(starts[i] + j)
        return count, first

    def close(self) -> None:
        for f in self._frames.values():
            f.close()
        self._frames.clear()

    def __enter__(self) -> "FrameSet":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _as_key(a: np.ndarray):
    """An index array as a slice when it is an ascending run with one step
    (what the frame reader reads best), else as it is."""
    if a.size == 1:
        return slice(int(a[0]), int(a[0]) + 1)
    d = np.diff(a)
    if d.size and d[0] > 0 and np.all(d == d[0]):
        return slice(int(a[0]), int(a[-1]) + 1, int(d[0]))
    return a

"""The Tiled adapter: b2stream frames served as arrays (docs/INTEGRATIONS.md,
section Tiled).

``B2frameAdapter`` serves one frame (contiguous file or sparse directory)
or the files of a rolled-over acquisition, concatenated along dimension 0,
as one array node, for the mimetype :data:`MIMETYPE`.  Tiled builds it
with ``from_uris`` when it registers files (``tiled serve directory``,
``tiled register``) and with ``from_catalog`` for every request; a read
opens only the files its slice covers (with ``frames_per_file`` given,
the catalog resolves only their URIs: ``supports_lazy_assets``) and
decodes only the chunks, and within one image a chunk only the blocks,
the slice needs."""
from __future__ import annotations

import base64
import math
import os
from typing import Any, List, Optional, Sequence

import numpy as np
from tiled.adapters.core import Adapter
from tiled.adapters.utils import DataNotReadyError
from tiled.ndslice import NDBlock, NDSlice
from tiled.structures.array import ArrayStructure, BuiltinDtype
from tiled.structures.core import Spec, StructureFamily
from tiled.structures.data_source import Asset, DataSource, Management

from . import MIMETYPE
from ._frameset import ACQ_KEY, FrameSet, NotYetWritten

#: gap positions listed in a node's metadata at most (the count is whole)
GAPS_LISTED = 1000


def jsonable(v: Any) -> Any:
    """Series metadata (msgpack values) as JSON for Tiled's catalog: bytes
    as ``{"base64": ...}``, non-finite floats as strings, keys as str."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, np.generic):
        return jsonable(v.item())
    return v


def _uri(path: str) -> str:
    from tiled.utils import ensure_uri
    return ensure_uri(path)


class B2frameAdapter(Adapter[ArrayStructure]):
    """b2stream frames as one Tiled array.

    ``data_uris``: the files in order (``file://`` URIs or paths); the
    catalog gives ``None`` for those a read does not touch.
    ``structure``: the node's, from the catalog (its shape may split
    dimension 0 as Bluesky's ``(events, frames per event, ...)`` does);
    ``None``: from the files.  ``frames_per_file``, ``image_shape``,
    ``dtype``: as :class:`~b2stream.tiled._frameset.FrameSet`."""

    structure_family = StructureFamily.array
    supports_lazy_assets = True

    def __init__(self, data_uris: Sequence[Optional[str]], structure: Optional[ArrayStructure] = None,
                 *, metadata: Optional[dict] = None, specs: Optional[List[Spec]] = None,
                 frames_per_file: Optional[int] = None,
                 image_shape: Optional[Sequence[int]] = None, dtype: Optional[str] = None) -> None:
        self._set = FrameSet(list(data_uris), frames_per_file=frames_per_file,
                             image_shape=image_shape, dtype=dtype)
        self._parameters = {k: v for k, v in (("frames_per_file", frames_per_file),
                                              ("image_shape", image_shape),
                                              ("dtype", dtype)) if v}
        if structure is None:
            total = self._set.total()
            structure = ArrayStructure(
                data_type=BuiltinDtype.from_numpy_dtype(self._set.dtype),
                shape=(total, *self._set.item_shape),
                chunks=self._set.chunks(total))
            if metadata is None:
                metadata = self._describe(total)
        super().__init__(structure, metadata=metadata, specs=specs)

    # -- how Tiled makes it ------------------------------------------------

    @classmethod
    def from_uris(cls, *data_uris: str, **kwargs: Any) -> "B2frameAdapter":
        """Registration: the files' structure and series metadata.  Several
        URIs are the files of one acquisition, in order; their
        ``frames_per_file`` is taken from their series when they say it."""
        if len(data_uris) > 1 and "frames_per_file" not in kwargs:
            kwargs["frames_per_file"] = _frames_per_file(data_uris) or None
        return cls(list(data_uris), **kwargs)

    @classmethod
    def from_catalog(cls, data_source: DataSource, node: Any, /,
                     **kwargs: Any) -> "B2frameAdapter":
        if "data_uris" not in kwargs:
            kwargs["data_uris"] = [a.data_uri for a in data_source.assets
                                   if a.parameter == "data_uris"]
        return cls(structure=data_source.structure, metadata=node.metadata_,
                   specs=node.specs, **kwargs)

    @classmethod
    def file_indices_for_slice(cls, structure: ArrayStructure, n: int, slice: Any,
                               properties: Optional[dict] = None,
                               parameters: Optional[dict] = None) -> Optional[List[int]]:
        """The files a read of ``slice`` touches, from the geometry alone
        (Tiled's catalog then resolves only their URIs); ``None`` when the
        parameters do not give it (no ``frames_per_file`` or
        ``image_shape``)."""
        p = parameters or {}
        per_file, img = p.get("frames_per_file"), p.get("image_shape")
        if not per_file or not img:
            return None
        shape = tuple(structure.shape)
        nlead = len(shape) - len(img)
        if nlead < 1 or not shape[0]:
            return None
        per_index = math.prod(shape[1:nlead])
        k = tuple(slice) if slice is not None and slice is not Ellipsis else ()
        k0 = k[0] if k and k[0] is not Ellipsis else builtins_slice(None)
        if isinstance(k0, (int, np.integer)):
            i = int(k0) + (shape[0] if k0 < 0 else 0)
            lo, hi = i, i + 1
        else:
            r = range(*k0.indices(shape[0]))
            if not r:
                return []
            lo, hi = min(r), max(r) + 1
        a, b = lo * per_index // per_file, (hi * per_index - 1) // per_file
        return list(range(max(a, 0), min(b, n - 1) + 1))

    def generate_data_sources(self, mimetype: str, item: Any, is_directory: bool,
                              size: Optional[int] = None) -> List[DataSource]:
        """Registration of one file or sparse directory: one asset."""
        return [self.data_source([str(item)], mimetype)]

    def data_source(self, paths: Sequence[str], mimetype: str = MIMETYPE) -> DataSource:
        """The catalog's record of this adapter over ``paths``."""
        from tiled.client.register import dict_or_none
        assets = [Asset(data_uri=_uri(p), is_directory=os.path.isdir(p),
                        parameter="data_uris", num=i,
                        size=None if os.path.isdir(p) else os.path.getsize(p))
                  for i, p in enumerate(paths)]
        return DataSource(structure_family=StructureFamily.array, mimetype=mimetype,
                          structure=dict_or_none(self.structure()),
                          parameters=self._parameters_for_catalog(),
                          management=Management.external, assets=assets)

    def _parameters_for_catalog(self) -> dict:
        p = dict(self._parameters)
        if self._set.frames_per_file:
            p["frames_per_file"] = self._set.frames_per_file
        p.setdefault("image_shape", list(self._set.item_shape))
        return p

    # -- reading -----------------------------------------------------------

    def read(self, slice: NDSlice = NDSlice(...)) -> np.ndarray:
        key = tuple(slice) if slice else (Ellipsis,)
        try:
            return self._set.read(key, self._structure.shape)
        except NotYetWritten as e:
            raise DataNotReadyError(str(e)) from e

    def read_block(self, block: NDBlock, slice: NDSlice = NDSlice(...)) -> np.ndarray:
        where = NDBlock(*block).slice_from_chunks(self._structure.chunks)
        arr = self.read(where)
        return arr[tuple(slice)] if slice else arr

    # -- what the node says --------------------------------------------------

    def _describe(self, total: int) -> dict:
        """The node's metadata at registration: the first file's series
        metadata, and under ``_b2stream`` what the reader found."""
        meta = jsonable(self._set.series())
        count, first = self._set.gaps(GAPS_LISTED)
        meta["_b2stream"] = {
            "layout": self._set.layout,
            "files": len(self._set),
            "frames": total,
            "frames_per_file": self._set.frames_per_file,
            "sparse": [self._set.frame(i).sparse for i in range(len(self._set))],
            "gaps": count,
            "gap_positions": first,
        }
        return meta

    def close(self) -> None:
        self._set.close()

    def __del__(self) -> None:
        try:
            self._set.close()
        except Exception:
            pass


builtins_slice = slice


def _frames_per_file(data_uris: Sequence[str]) -> int:
    """``frames_per_file`` of an acquisition's files, from the first file's
    ``b2stream_acquisition`` series map (0 when it does not say)."""
    from ..frame import Frame
    from ._frameset import _uri_to_path
    with Frame(_uri_to_path(data_uris[0])) as f:
        acq = f.series.get(ACQ_KEY)
    n = acq.get("frames_per_file") if isinstance(acq, dict) else None
    return n if isinstance(n, int) and n > 0 else 0

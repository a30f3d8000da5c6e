"""The consolidator for bluesky-tiled-plugins' ``TiledWriter``: a run's
StreamResource and StreamDatum documents for b2stream frames become the
data source of one array node per data key (docs/INTEGRATIONS.md,
section Tiled).

The documents are those of docs/INTEGRATIONS.md 1.3: one StreamResource
per file of an acquisition's channel (mimetype
``application/x-b2stream-frame``), StreamDatum ``indices`` counted in
events within that file.  bluesky-tiled-plugins' default consolidator
takes one StreamResource per data key and refuses a second
(``update_from_stream_resource``); a rolled-over acquisition has one per
file, so this one appends each further file as the next ``data_uris``
asset (``num`` = file number - 1) after checking that it continues the
same acquisition, channel and image, and that its number is the next.
A StreamDatum must continue the data where the last one stopped (its
file's ``first_frame`` plus its start, in frames, is the count so far):
the node's array is the files concatenated, so a document that skipped
or repeated frames would misplace every later one, and is refused."""
from __future__ import annotations

import math
from typing import Any

from bluesky_tiled_plugins.writing.consolidators import CONSOLIDATOR_REGISTRY, ConsolidatorBase
from tiled.structures.data_source import Asset

from . import MIMETYPE

#: StreamResource parameters that every file of one data key must share
SHARED = ("acquisition_id", "channel", "dtype", "shape", "image_shape", "layout",
          "frames_per_file", "chunk_shape")


class B2frameConsolidator(ConsolidatorBase):
    """One data key's b2stream files, from their StreamResource documents."""

    supported_mimetypes = {MIMETYPE}
    join_method = "stack"

    def __init__(self, stream_resource: dict, descriptor: dict) -> None:
        super().__init__(stream_resource, descriptor)
        p = self._sres_parameters
        self._first = dict(p)
        self._frame_shape = tuple(p.get("image_shape") or p.get("shape") or ())
        if not self._frame_shape:
            raise ValueError(f"{self.data_key}: the StreamResource gives no frame shape "
                             "(parameters.shape)")
        if tuple(self.datum_shape[-len(self._frame_shape):]) != self._frame_shape:
            raise ValueError(f"{self.data_key}: the data key's shape {self.datum_shape} "
                             f"does not end with the frame's {self._frame_shape}")
        self._per_event = math.prod(self.datum_shape[:-len(self._frame_shape)])
        self._files: dict[str, dict] = {}
        self.assets = []
        self._add_file(stream_resource)

    # -- files ---------------------------------------------------------------

    def _add_file(self, sres: dict) -> None:
        p = sres["parameters"]
        number = int(p.get("file", 1))
        if self.assets:
            last = self.assets[-1].num + 1
            if number != last + 1:
                raise ValueError(f"{self.data_key}: file {number} follows file {last}; "
                                 f"the StreamResource of file {last + 1} is missing")
            if not self._first.get("frames_per_file"):
                raise ValueError(f"{self.data_key}: a second file of an acquisition "
                                 "armed with frames_per_file 0 (one file)")
        first_frame = int(p.get("first_frame", 0))
        per_file = int(self._first.get("frames_per_file") or 0)
        if per_file and first_frame != (number - 1) * per_file:
            raise ValueError(f"{self.data_key}: file {number} starts at frame {first_frame}, "
                             f"not {(number - 1) * per_file}")
        self.assets.append(Asset(data_uri=sres["uri"], is_directory=bool(p.get("sparse")),
                                 parameter="data_uris", num=number - 1))
        self._files[sres["uid"]] = {"file": number, "first_frame": first_frame}

    def update_from_stream_resource(self, stream_resource: dict) -> None:
        """The next file of the same data key."""
        p = stream_resource["parameters"]
        for k in SHARED:
            if p.get(k) != self._first.get(k):
                raise ValueError(f"{self.data_key}: file {p.get('file')} has {k} "
                                 f"{p.get(k)!r}, the first file {self._first.get(k)!r}")
        if stream_resource["mimetype"] != self.mimetype:
            raise ValueError(f"{self.data_key}: mimetype {stream_resource['mimetype']!r} "
                             f"after {self.mimetype!r}")
        self._sres_parameters = p
        self._add_file(stream_resource)

    # -- data ----------------------------------------------------------------

    def consume_stream_datum(self, doc: dict):
        f = self._files.get(doc["stream_resource"])
        if f is None:
            raise ValueError(f"{self.data_key}: StreamDatum of an unknown StreamResource "
                             f"{doc['stream_resource']}")
        start, stop = doc["indices"]["start"], doc["indices"]["stop"]
        at = f["first_frame"] + start * self._per_event
        have = self._num_rows * self._per_event
        if stop < start or at != have:
            raise ValueError(f"{self.data_key}: StreamDatum for frames {at} .. "
                             f"{f['first_frame'] + stop * self._per_event - 1} of file "
                             f"{f['file']}, the data so far ends at frame {have - 1}")
        return super().consume_stream_datum(doc)

    @property
    def chunks(self) -> tuple[tuple[int, ...], ...]:
        """One event a chunk along dimension 0 (its frames are that many
        Blosc2 chunks), the rest whole: what the files hold, whatever
        ``chunk_shape`` the documents give."""
        return ((1,) * self._num_rows or (0,),) + tuple((d,) for d in self.datum_shape)

    def adapter_parameters(self) -> dict:
        """What :class:`~b2stream.tiled.B2frameAdapter` takes."""
        out: dict[str, Any] = {"image_shape": list(self._frame_shape)}
        if self._first.get("frames_per_file"):
            out["frames_per_file"] = int(self._first["frames_per_file"])
        if self._first.get("dtype"):
            out["dtype"] = self._first["dtype"]
        return out


def register_consolidator() -> None:
    """Make ``TiledWriter`` use :class:`B2frameConsolidator` for
    ``application/x-b2stream-frame``."""
    CONSOLIDATOR_REGISTRY[MIMETYPE] = B2frameConsolidator

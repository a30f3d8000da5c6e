"""Sessions: a connection to b2streamd on which a program opens producers
(one per stream it writes) and follows (one per stream it reads).

A session, and the producers and follows opened on it, belong to one
thread at a time; use one session per thread."""
from __future__ import annotations

from typing import Any

from . import _msgpack
from . import _wire as w
from . import record as _rec
from ._conn import DEFAULT_TIMEOUT, ENDPOINT_ENV, Connection, default_endpoint
from .consumer import Follow, _Layout, series_from_stats
from .errors import ProtocolError
from .producer import Producer

__all__ = ["Session", "default_endpoint", "DEFAULT_TIMEOUT", "ENDPOINT_ENV"]


class Session(Connection):
    """A session with b2streamd.

    >>> with Session("ipc:///run/b2stream/b2streamd.sock", name="cam") as s:
    ...     print(s.ping(), s.stats()["daemon"]["version"])

    Session(endpoint=None, *, name="", roles=("producer", "consumer"),
    timeout=5.0, curve_server_key=None, curve_secret_key=None,
    curve_public_key=None, context=None): ``endpoint`` is ``ipc://PATH``
    or ``tcp://HOST:PORT`` (None: :func:`default_endpoint`); ``timeout``
    the seconds every request (and the handshake) may take.  For a tcp://
    endpoint of a daemon configured with ``curve:``, ``curve_server_key``
    (the daemon's public key) and ``curve_secret_key`` (this client's; its
    public key is derived unless ``curve_public_key`` is given): each a
    Z85 key or the path of a key file as ``b2stream keygen`` writes it.
    """

    def __enter__(self) -> "Session":
        return self

    def open(self, stream: str, template: str = "", *, meta: dict | None = None) -> "Producer":
        """Open stream for writing (creating it from template when it does
        not exist and a template is named).  meta (protocol version 2):
        series metadata merged into the stream's before the handle is made,
        as :meth:`Producer.set_meta` does.  See :class:`Producer`."""
        if not stream:
            raise ValueError("empty stream name")
        body = w.wstr(stream) + w.wstr(template)
        if meta:
            self._need_v2("series metadata")
            extra = [_msgpack.pack_map(meta, "series metadata")]
            _, hdr, _ = self._request(w.OPEN, body, w.OPEN_META, w.OPENED, extra=extra,
                                      about=stream)
        else:
            _, hdr, _ = self._request(w.OPEN, body, 0, w.OPENED, about=stream)
        return Producer(self, stream, *w.OPENED_F.unpack_from(hdr, 16))

    def follow(self, stream: str, start: int | str = 0, *, mode: str = "decompressed",
               timeout: float | None = None, resume: bool = False,
               dtype: Any = None, shape: Any = None, records: bool = False,
               on_series: Any = None, series_interval: float = 1.0) -> "Follow":
        """Follow stream: an iterator of ``(index, data)`` for every chunk
        committed from ``start`` on (an index, or ``"end"`` for the chunks
        committed after now), each exactly once and in order.  See
        :class:`~b2stream.consumer.Follow` for mode, timeout, resume, dtype,
        shape and records (``(index, data, record)`` with each chunk's
        :class:`~b2stream.record.Record`; protocol version 2), on_series
        and series_interval (a callback given the new series metadata when
        a META changed it, looked at every series_interval seconds of
        iteration)."""
        return Follow(self, stream, start, mode=mode, timeout=timeout, resume=resume,
                      dtype=dtype, shape=shape, records=records, on_series=on_series,
                      series_interval=series_interval)

    def series(self, stream: str) -> dict:
        """The stream's series metadata (docs/METADATA.md) as the daemon
        has it now, from its STATS: the merged result of every META, which
        the frame holds from the next commit on."""
        info = self.stats(stream).get("streams", {}).get(stream, {})
        value = series_from_stats(info)
        if value is None:
            raise ProtocolError(-958, "the daemon's STATS carry no series metadata "
                                      "(a daemon older than this package)")
        if not isinstance(value, dict):
            raise ProtocolError(-958, "series metadata from the daemon is no map")
        return value

    def read(self, stream: str, index: int, *, decompressed: bool = True,
             dtype: Any = None, shape: Any = None, layout: Any = "auto",
             record: bool = False) -> Any:
        """Chunk index of stream read through the daemon: decompressed, it
        comes as a numpy array when the stream has b2nd metadata (or dtype
        is given), else as bytes; compressed, as bytes of the chunk as
        stored.  ChunkIndexError when the chunk is not committed yet.
        record (protocol version 2): returns ``(data, record)`` with the
        chunk's :class:`~b2stream.record.Record`."""
        if record:
            self._need_v2("records")
        body = w.READ_F.pack(index, 0) + w.wstr(stream)
        flags = (w.READ_DECOMPRESS if decompressed else 0) | (w.READ_RECORD if record else 0)
        rflags, _, frames, _ = self._request_all(w.READ, body, flags, w.CHUNK,
                                                about=stream)
        want = 2 if record else 1
        if len(frames) != want or bool(rflags & w.CHUNK_RECORD) != record:
            raise ProtocolError(-958, f"CHUNK with {len(frames)} frames after the "
                                      f"header, {want} expected")
        payload = frames[0]
        if not decompressed:
            data = payload.bytes
        else:
            lay = _Layout.make(self, stream, dtype, shape) if layout == "auto" else layout
            data = lay.convert(payload)
        if not record:
            return data
        try:
            return data, _rec.decode(frames[1].bytes)
        except _rec.RecordFrameError as exc:
            raise ProtocolError(-958, f"CHUNK record: {exc}") from None

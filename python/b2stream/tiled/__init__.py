"""b2stream frames in Tiled (``pip install b2stream[tiled]``;
docs/INTEGRATIONS.md, section Tiled).

* :class:`B2frameAdapter` (``b2stream.tiled:B2frameAdapter``) serves a
  frame, or an acquisition's rolled-over files, as one array, for the
  mimetype :data:`MIMETYPE` (``application/x-b2stream-frame``).
* :func:`walk_b2frames` (``b2stream.tiled:walk_b2frames``) registers the
  frames of a directory for ``tiled serve directory``.
* :class:`B2frameConsolidator` turns a run's StreamResource and
  StreamDatum documents into the node's data source for
  bluesky-tiled-plugins' ``TiledWriter``; importing this package registers
  it for the mimetype when bluesky-tiled-plugins is installed.

Names load on first use, so ``MIMETYPE`` and the frame set
(``b2stream.tiled._frameset``) need no Tiled."""
from __future__ import annotations

import importlib

MIMETYPE = "application/x-b2stream-frame"

_WHERE = {
    "B2frameAdapter": "adapter", "jsonable": "adapter",
    "walk_b2frames": "walker",
    "B2frameConsolidator": "consolidator", "register_consolidator": "consolidator",
    "FrameSet": "_frameset",
}

__all__ = ["MIMETYPE", *_WHERE]


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f".{where}", __name__), name)
    except ImportError as e:
        if e.name and e.name.split(".")[0] in ("tiled", "bluesky_tiled_plugins", "event_model"):
            raise ImportError(f"b2stream.tiled.{name} needs {e.name.split('.')[0]}: "
                              "pip install 'b2stream[tiled]'") from e
        raise
    globals()[name] = value
    return value


def _autoregister() -> None:
    """The consolidator into bluesky-tiled-plugins' registry, when it is
    installed (a writer that imports b2stream.tiled needs no more)."""
    try:
        import bluesky_tiled_plugins.writing.consolidators  # noqa: F401
    except ImportError:
        return
    __getattr__("register_consolidator")()


_autoregister()

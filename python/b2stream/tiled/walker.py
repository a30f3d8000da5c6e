"""Directory registration of b2stream frames for ``tiled serve directory``
and ``tiled register`` (``--walker b2stream.tiled:walk_b2frames``).

Tiled's default walkers see a ``.b2frame`` file, its records companion
``X.records.b2frame`` (whose key, the name without suffixes, is the data
frame's: both would be dropped as a collision) and a sparse ``.b2frame``
directory (a directory to walk into).  This walker, run before them,
takes every ``.b2frame`` file and directory of a directory:

* the files of one acquisition's channel (their series metadata's
  ``b2stream_acquisition`` names the same ``id`` and ``channel``) become
  one node ``{id}_{channel}``, the files in ``file`` order concatenated
  along dimension 0; a set whose numbers are not 1 .. n is not served
  (logged), since concatenating around a missing file would misplace
  every later frame;
* any other frame becomes a node of its own, keyed as Tiled keys files;
* records companions (files or sparse directories) are not nodes (their
  gaps are in the data node's metadata), nor directories to walk into.

Frames that cannot be opened are logged and left out."""
from __future__ import annotations

import collections
from pathlib import Path

import anyio
from tiled.client.register import create_node_or_drop_collision, logger

from ..errors import FrameError
from ..frame import Frame
from ._frameset import ACQ_KEY
from .adapter import MIMETYPE, B2frameAdapter

RECORDS_SUFFIX = ".records.b2frame"


def is_frame(path: Path) -> bool:
    return path.name.endswith(".b2frame") and not path.name.endswith(RECORDS_SUFFIX)


def acquisition_of(path: Path):
    """(id, channel, file) from the frame's ``b2stream_acquisition``, or None."""
    with Frame(str(path)) as f:
        acq = f.series.get(ACQ_KEY)
    if not isinstance(acq, dict):
        return None
    ident, channel, number = acq.get("id"), acq.get("channel"), acq.get("file")
    if isinstance(ident, str) and isinstance(channel, str) and isinstance(number, int):
        return ident, channel, number
    return None


def group_frames(paths):
    """(acquisition groups {(id, channel): [(file, path)] sorted},
    single frames [path], failures [(path, error)])."""
    groups, singles, failed = collections.defaultdict(list), [], []
    for p in sorted(paths):
        try:
            acq = acquisition_of(p)
        except Exception as e:   # any frame we cannot open: logged, not served
            failed.append((p, e))
            continue
        if acq is None:
            singles.append(p)
        else:
            groups[acq[:2]].append((acq[2], p))
    for members in groups.values():
        members.sort()
    return dict(groups), singles, failed


async def _register(node, key, paths, settings) -> None:
    cls = settings.adapters_by_mimetype.get(MIMETYPE, B2frameAdapter)
    try:
        adapter = await anyio.to_thread.run_sync(
            lambda: cls.from_uris(*[str(p) for p in paths]))
        data_source = adapter.data_source([str(p) for p in paths], MIMETYPE)
    except FrameError as e:      # not an array (no b2nd metalayer), damaged...
        logger.warning("    SKIPPED: b2stream frames %s: %s", [str(p) for p in paths], e)
        return
    except Exception:
        logger.exception("    SKIPPED: b2stream frames %s", [str(p) for p in paths])
        return
    logger.info("    b2stream: %d file(s) as '%s'", len(paths), key)
    await create_node_or_drop_collision(
        node, key=key, structure_family=adapter.structure_family,
        metadata=dict(adapter.metadata()), specs=adapter.specs,
        data_sources=[data_source])


async def walk_b2frames(node, path, files, directories, settings):
    """A Tiled walker: registers the frames among ``files`` and
    ``directories`` and returns the rest for the next walkers."""
    frames = [p for p in list(files) + list(directories) if is_frame(p)]
    rest_files = [p for p in files if not is_frame(p) and not p.name.endswith(RECORDS_SUFFIX)]
    rest_dirs = [p for p in directories
                 if not is_frame(p) and not p.name.endswith(RECORDS_SUFFIX)]
    groups, singles, failed = group_frames(frames)
    for p, e in failed:
        logger.warning("    SKIPPED: b2stream frame '%s': %s", p, e)
    for (ident, channel), members in groups.items():
        numbers = [n for n, _ in members]
        if numbers != list(range(1, len(numbers) + 1)):
            logger.error("    SKIPPED: acquisition %s channel %s: files %s are not 1..%d",
                         ident, channel, numbers, len(numbers))
            continue
        await _register(node, settings.key_from_filename(f"{ident}_{channel}"),
                        [p for _, p in members], settings)
    for p in singles:
        await _register(node, settings.key_from_filename(p.name), [p], settings)
    return rest_files, rest_dirs

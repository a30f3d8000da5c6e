"""b2stream.tiled's frame set (the reads under the Tiled adapter) on frames
the real daemon writes, without Tiled: a frame that grows while it is
read, frames without b2nd metalayer, Bluesky's (events, frames per
event, ...) shape, and files that do not belong together."""
from __future__ import annotations

import numpy as np
import pytest

import b2stream
from b2stream.errors import FrameError
from b2stream.tiled import MIMETYPE
from b2stream.tiled._frameset import FrameSet, NotYetWritten


def _imgs(n, seed=0):
    return np.random.default_rng(seed).integers(0, 60000, (n, 64, 32), dtype=np.uint16)


def test_mimetype_needs_no_tiled():
    assert MIMETYPE == "application/x-b2stream-frame"


def test_a_growing_frame_reads_what_was_committed_and_refreshes(daemon):
    ref = _imgs(6, 1)
    with b2stream.Session(daemon.endpoint) as s, s.open("img") as p:
        for a in ref[:3]:
            p.send(a)
        p.flush()
        fs = FrameSet([daemon.frame("img")])
        assert fs.total() == 3 and fs.item_shape == (64, 32)
        with pytest.raises(NotYetWritten, match="not written yet"):
            fs.read((slice(2, 5),), (6, 64, 32))     # a structure ahead of the data
        for a in ref[3:]:
            p.send(a)
        p.flush()
        got = fs.read((slice(2, 5), slice(8, 40)), (6, 64, 32))   # re-opened for it
        np.testing.assert_array_equal(got, ref[2:5, 8:40])
        fs.close()


def test_events_of_several_frames(daemon):
    """(events, frames per event, y, x): the frames in C order."""
    ref = _imgs(6, 2)
    with b2stream.Session(daemon.endpoint) as s, s.open("img") as p:
        for a in ref:
            p.send(a)
        p.flush()
    with FrameSet([daemon.frame("img")]) as fs:
        ev = ref.reshape(3, 2, 64, 32)
        np.testing.assert_array_equal(fs.read((1,), (3, 2, 64, 32)), ev[1])
        np.testing.assert_array_equal(fs.read((slice(None), 1, 5), (3, 2, 64, 32)),
                                      ev[:, 1, 5])
        with pytest.raises(FrameError, match="does not end with"):
            fs.read((0,), (3, 2, 32, 64))


def test_chunks_without_b2nd_need_their_image(daemon):
    ref = np.arange(5 * 6, dtype="<u4").reshape(5, 2, 3)
    with b2stream.Session(daemon.endpoint) as s, s.open("w") as p:
        for a in ref:
            p.send(a.tobytes())
        p.flush()
    with pytest.raises(FrameError, match="give image_shape and dtype"):
        FrameSet([daemon.frame("w")]).item_shape
    with FrameSet([daemon.frame("w")], image_shape=(2, 3), dtype="<u4") as fs:
        assert fs.layout == "chunks" and fs.total() == 5
        np.testing.assert_array_equal(fs.read((slice(1, 4), 1), (5, 2, 3)), ref[1:4, 1])
    with FrameSet([daemon.frame("w")], image_shape=(4, 3), dtype="<u4") as fs:
        with pytest.raises(FrameError, match="an image of"):
            fs.read((0,), (5, 4, 3))


def test_files_that_do_not_match_are_refused(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("img") as p:
            p.send(_imgs(1)[0])
            p.flush()
        with s.open("tiles") as p:
            p.send(np.zeros((2, 8, 8), np.float32))
            p.flush()
    with FrameSet([daemon.frame("img"), daemon.frame("tiles")]) as fs:
        with pytest.raises(FrameError, match="does not match the set's"):
            fs.lengths()
    with pytest.raises(FrameError, match="dtype"):
        FrameSet([daemon.frame("img")], dtype="<f4").item_shape

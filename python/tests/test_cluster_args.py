"""ClusterProducer without a daemon: routing arithmetic, wrong use, and
the error classes of the distributed-stream codes."""
from __future__ import annotations

import pytest

from b2stream import errors
from b2stream.cluster import ClusterProducer


def test_codes_and_classes():
    c = errors.CODES
    assert (c["WRONG_RANK"], c["NEED_FRAME"], c["OBJ_CONFLICT"], c["STORE"]) == \
        (-931, -930, -929, -928)
    assert type(errors.error_for(c["WRONG_RANK"])) is errors.WrongRankError
    assert type(errors.error_for(c["NEED_FRAME"])) is errors.NeedFrameError
    assert isinstance(errors.error_for(c["NEED_FRAME"]), ValueError)
    assert type(errors.error_for(c["STORE"])) is errors.StoreError
    assert isinstance(errors.error_for(c["WRONG_RANK"]), errors.ClusterError)


@pytest.mark.parametrize("endpoints, kw, why", [
    ([], {}, "1 to 1024"),
    (["ipc://x"] * 1025, {}, "1 to 1024"),
    (["ipc://a", ""], {}, "non-empty"),
    (["ipc://a"], {"frames_per_block": 0}, "frames_per_block"),
    (["ipc://a"], {"frames_per_block": 1.5}, "frames_per_block"),
])
def test_wrong_use(endpoints, kw, why):
    with pytest.raises(errors.ArgumentError, match=why):
        ClusterProducer(endpoints, "s", **kw)


def test_owner_arithmetic():
    c = ClusterProducer.__new__(ClusterProducer)   # no connections needed
    c._ranks = [None] * 3
    c.frames_per_block = 4
    assert [c.owner(f) for f in range(14)] == \
        [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0]
    c.frames_per_block = 1
    assert [c.owner(f) for f in (0, 1, 2, 3, 3001)] == [0, 1, 2, 0, 1]

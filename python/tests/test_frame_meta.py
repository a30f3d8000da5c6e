"""Frame.series and Frame.record on frames core's paired writer made
(py_make_pair, as the daemon writes them), without the daemon."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess

import numpy as np
import pytest

from b2stream import Frame, errors
from b2stream import _msgpack

MAKE_PAIR = os.environ.get("B2S_MAKE_PAIR", "")
SERIES = {"sample": "Fe2O3", "energy_eV": 7112.0, "shape": [2, 3], "ok": True,
          "raw": b"\x00\x01", "n": -5, "big": 2**64 - 1, "none": None}


pair_chunk0: dict[str, bytes] = {}     # path -> chunk 0 as compressed


def _xxh64(data: bytes) -> int | None:
    name = ctypes.util.find_library("xxhash")
    if not name:
        return None
    lib = ctypes.CDLL(name)
    lib.XXH64.restype = ctypes.c_uint64
    lib.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return lib.XXH64(data, len(data), 0)


@pytest.fixture(params=["contiguous", "sparse"])
def pair(request, tmp_path):
    if not MAKE_PAIR or not os.access(MAKE_PAIR, os.X_OK):
        pytest.skip("B2S_MAKE_PAIR does not name the built helper")
    series = tmp_path / "series.mp"
    # nil values are dropped by the writer: "none" must not come back
    series.write_bytes(_msgpack.packb(SERIES))
    path = str(tmp_path / "det.b2frame")
    out = subprocess.run([MAKE_PAIR, path, str(series)]
                         + (["sparse"] if request.param == "sparse" else []),
                         check=True, capture_output=True, text=True).stdout
    pair_chunk0[path] = bytes.fromhex(out.strip())
    return path


def test_series(pair):
    with Frame(pair) as f:
        want = {k: v for k, v in SERIES.items() if v is not None}
        assert f.series == want


def test_records(pair):
    with Frame(pair) as f:
        assert f.has_records and f.nchunks == 4
        recs = [f.record(i) for i in range(4)]
        assert [r.frame for r in recs] == [100, 101, 102, 103]
        assert [r.ts for r in recs] == [1700000000000000000 + k for k in range(4)]
        assert [r.user for r in recs] == [None, {"e": 1.0}, None, b"raw"]
        assert [r.flags for r in recs] == [0, 0, 3, 0]
        assert recs[2].gap and recs[2].dropped and not recs[2].rejected
        assert not recs[1].gap
        assert all(isinstance(r.xxh64, int) for r in recs)
        assert len({r.xxh64 for r in recs}) == 4
        assert f.record(-1) == recs[3]
        np.testing.assert_array_equal(f.chunk(1).view("<u4"), np.arange(1000) * 2)
        np.testing.assert_array_equal(f.chunk(2), np.zeros(4000, np.uint8))   # the gap
        with pytest.raises(errors.ChunkIndexError):
            f.record(4)


def test_record_checksum_is_of_the_stored_chunk(pair):
    # the helper printed chunk 0 as it handed it to the writer
    if _xxh64(b"") is None:
        pytest.skip("libxxhash not found")
    with Frame(pair) as f:
        assert f.record(0).xxh64 == _xxh64(pair_chunk0[pair])


def test_frame_without_records(pair):
    rpath = pair.replace(".b2frame", ".records.b2frame")
    assert os.path.exists(rpath)
    (shutil.rmtree if os.path.isdir(rpath) else os.unlink)(rpath)
    with Frame(pair) as f:
        assert not f.has_records and f.record(0) is None
        assert f.series["sample"] == "Fe2O3"

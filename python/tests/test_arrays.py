"""Frames read as read-only numpy-like arrays (as h5py datasets and
python-blosc2 arrays are), on frames the real daemon wrote; python-blosc2
from the reference venv reads the same frames whole."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import b2stream
from b2stream import errors


def _images(n, shape=(64, 32), seed=1):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 4000, size=(n,) + shape, dtype=np.uint16)


def _write(daemon, stream, images):
    with b2stream.Session(daemon.endpoint) as s, s.open(stream) as p:
        for a in images:
            p.send(a)
        p.flush()


def test_frame_indexing_like_numpy(daemon):
    ref = _images(10)
    _write(daemon, "img", ref)
    with b2stream.Frame(daemon.frame("img")) as f:
        assert f.shape == (10, 64, 32) and len(f) == 10 and f.ndim == 3
        assert f.dtype == np.dtype("<u2") and f.size == ref.size
        keys = [3, -1, slice(2, 4), (3, slice(5, 9), slice(2, 7)), [1, 5], [5, 1, 5],
                (slice(None), 7, 9), (slice(None, None, 3), slice(None), 4),
                (Ellipsis, 3), (4, 10), np.array([True] * 3 + [False] * 7),
                (slice(1, 8, 2), slice(60, None), slice(0, 32, 5)), slice(7, 3),
                (2, [0, 63], slice(None)), (slice(None), slice(16, 33), slice(None))]
        for key in keys:
            got = f[key]
            want = ref[key]
            assert got.shape == want.shape, key
            np.testing.assert_array_equal(got, want)
            if isinstance(got, np.ndarray):
                assert not got.flags.writeable, key
        assert isinstance(f[3, 4, 5], np.uint16) and f[3, 4, 5] == ref[3, 4, 5]
        np.testing.assert_array_equal(np.asarray(f), ref)
        np.testing.assert_array_equal(f.to_numpy(), ref)
        assert [int(a[0, 0]) for a in f] == [int(a[0, 0]) for a in ref]
        got = f[2]
        with pytest.raises(ValueError):
            got[0, 0] = 1                      # read-only
        for bad in (10, -11, (0, 64), (0, 0, 0, 0), [3, 12]):
            with pytest.raises(IndexError):
                f[bad]
        with pytest.raises(IndexError):
            f[[1, 2], [3, 4]]                  # outer indexing: one array


def test_blocked_chunks_of_several_images(daemon):
    # tiles: chunks of 2x8x8 stored as blocks of 1x4x4; sent in C order
    ref = np.arange(6 * 8 * 8, dtype=np.float32).reshape(6, 8, 8)
    _write(daemon, "tiles", [ref[i:i + 2] for i in range(0, 6, 2)])
    with b2stream.Frame(daemon.frame("tiles")) as f:
        assert f.shape == (6, 8, 8) and len(f) == 6 and f.chunk(1).shape == (2, 8, 8)
        for key in (3, slice(1, 5), (slice(None), 3, 5), (slice(1, 4), slice(2, 7), 1),
                    [4, 0], (5, slice(None), slice(3, 8))):
            np.testing.assert_array_equal(f[key], ref[key])


def test_images_and_stored_chunks(daemon):
    ref = _images(5, seed=2)
    _write(daemon, "img", ref)
    with b2stream.Session(daemon.endpoint) as s:
        with s.follow("img", timeout=10) as fo:
            got = [next(fo) for _ in range(5)]
        with s.follow("img", mode="compressed", timeout=10) as fo:
            stored = [next(fo)[1] for _ in range(5)]
    for (i, a), want in zip(got, ref):
        assert a.shape == (64, 32) and not a.flags.writeable
        np.testing.assert_array_equal(a, want)
    with b2stream.Frame(daemon.frame("img")) as f:
        assert f.chunk(0).shape == (64, 32) and not f.chunk(0).flags.writeable
        assert [f.chunk(i, stored=True) for i in range(5)] == stored


def _venv_python():
    venv = os.environ.get("B2S_VENV") or os.path.join(
        os.path.dirname(__file__), "..", "..", ".venv")
    py = os.path.join(venv, "bin", "python")
    if not os.access(py, os.X_OK):
        pytest.skip("no reference venv (B2S_VENV, or .venv): scripts/make-venv makes it")
    return py


def test_python_blosc2_sees_every_image(daemon, tmp_path):
    py = _venv_python()
    ref = _images(7, seed=3)
    with b2stream.Session(daemon.endpoint) as s, s.open("img") as p:
        for a in ref[:4]:
            p.send(a)
        p.flush()                              # a durable commit: shape 4
        path = daemon.frame("img")
        np.save(tmp_path / "ref.npy", ref)
        code = ("import sys, blosc2, numpy as np; a = blosc2.open(sys.argv[1]); "
                "r = np.load(sys.argv[2])[:int(sys.argv[3])]; "
                "assert a.shape == r.shape, a.shape; "
                "assert (a[:] == r).all() and (a[:, 5, 6] == r[:, 5, 6]).all(); print('ok')")
        run = subprocess.run([py, "-c", code, path, str(tmp_path / "ref.npy"), "4"],
                             capture_output=True, text=True, timeout=120)
        assert run.stdout.strip() == "ok", run.stderr
        for a in ref[4:]:
            p.send(a)
    daemon.stop()                              # the close: shape 7
    run = subprocess.run([py, "-c", code, path, str(tmp_path / "ref.npy"), "7"],
                         capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "ok", run.stderr
    with b2stream.Frame(path) as f:
        assert f.b2nd.shape == (7, 64, 32) and f.shape == (7, 64, 32)


def test_no_b2nd_frame_is_no_array(daemon):
    _write(daemon, "w", [b"abcd" * 4])
    with b2stream.Frame(daemon.frame("w")) as f:
        assert len(f) == 1 and bytes(f.chunk(0)) == b"abcd" * 4
        with pytest.raises(TypeError):
            f.shape
        with pytest.raises(TypeError):
            f[0]
    assert issubclass(errors.ClosedError, ConnectionError)

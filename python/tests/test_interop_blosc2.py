"""Interoperability with python-blosc2 (which bundles c-blosc2), both ways.

Frames written by the real daemon and by the CLI -- contiguous, sparse,
with records, series metadata, b2nd, gaps, and one still being written --
open in python-blosc2 with equal bytes; python-blosc2 appends to our
closed frames and we read the result; frames and NDArrays python-blosc2
writes open in b2stream.  python-blosc2 runs in the pinned reference
interpreter ($B2S_VENV, else <source root>/.venv; see scripts/make-venv)
through blosc2_ref.py; these tests skip when it is missing."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import b2stream
from b2stream import Frame

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLI = os.environ.get("B2S_CLI", "")


def _venv_python() -> str:
    venv = os.environ.get("B2S_VENV") or os.path.join(ROOT, ".venv")
    return os.path.join(venv, "bin", "python")


def ref(*args) -> dict:
    py = _venv_python()
    if not os.access(py, os.X_OK):
        pytest.skip(f"no reference interpreter at {py} (run scripts/make-venv)")
    p = subprocess.run([py, os.path.join(HERE, "blosc2_ref.py"), *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def ref_data(seed: int, i: int, nbytes: int) -> bytes:
    """blosc2_ref.data, computed here with the same numpy generator."""
    rng = np.random.default_rng(seed * 1000003 + i)
    return (rng.integers(0, 40, nbytes // 2, dtype=np.uint16)
            .tobytes().ljust(nbytes, b"\0"))


def sha(b) -> str:
    return hashlib.sha256(bytes(b)).hexdigest()


def cli(*args, check=True) -> subprocess.CompletedProcess:
    if not CLI:
        pytest.skip("B2S_CLI does not name the built b2stream")
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, timeout=120)
    if check:
        assert p.returncode == 0, p.stderr.decode()
    return p


def ours(path: str) -> list[str]:
    """SHA-256 of every chunk as b2stream's reader decompresses it."""
    with Frame(path) as f:
        return [sha(f.chunk(i, raw=True)) for i in range(f.nchunks)]


def unbytes(v):
    if isinstance(v, dict):
        if set(v) == {"bytes"}:
            return bytes.fromhex(v["bytes"])
        return {k: unbytes(x) for k, x in v.items()}
    if isinstance(v, list):
        return [unbytes(x) for x in v]
    return v


def assert_same(path: str, expect_chunks: list[bytes] | None = None) -> dict:
    """python-blosc2 reads PATH with the bytes, vlmeta["series"] and
    records b2stream reads."""
    got = ref("read", path)
    mine = ours(path)
    assert got["chunks"] == mine
    if expect_chunks is not None:
        assert mine == [sha(c) for c in expect_chunks]
    with Frame(path) as f:
        if "series" in got["vlmeta"] or f.series:
            assert unbytes(got["vlmeta"]["series"]) == f.series
    return got


def assert_records_same(path: str) -> None:
    rec = path[:-len(".b2frame")] + ".records.b2frame"
    got = ref("read", rec)
    assert got["chunks"] == ours(rec)
    assert got["vlmeta"]["b2stream"]["records"] == 1


SEND = [np.arange(2048, dtype=np.uint32) * (i + 1) % 97 for i in range(12)]


def _fill(d, stream: str, meta=None, n=len(SEND)) -> None:
    with b2stream.Session(d.endpoint) as s:
        with s.open(stream, meta=meta) as p:
            for i in range(n):
                p.send(SEND[i], frame=100 + i, ts=1_700_000_000_000_000_000 + i,
                       user={"exposure_ms": i})
            assert p.flush().upto == n


@pytest.mark.parametrize("stream", ["w", "r"])   # contiguous, sparse
def test_constant_and_zero_images_open_in_blosc2(daemon, stream):
    """Zero images become special chunks stored as repeated values, which
    c-blosc2 sizes by the frame's typesize: the value must be one item."""
    zero = np.zeros(2048, np.uint32)
    ones = np.full(2048, 7, np.uint32)
    sent = [zero, ones, zero, SEND[0], zero]
    with b2stream.Session(daemon.endpoint) as s, s.open(stream) as p:
        for i, a in enumerate(sent):
            p.send(a, frame=i)
        assert p.flush().upto == len(sent)
    daemon.stop()
    assert_same(daemon.frame(stream), [a.tobytes() for a in sent])


@pytest.mark.parametrize("stream", ["w", "r"])   # contiguous, sparse
def test_daemon_frames_open_in_blosc2(daemon, stream):
    _fill(daemon, stream, meta={"detector": "eiger", "energy_eV": 12400.0,
                                "axes": ["omega"], "raw": b"\x00\xff"})
    daemon.stop()
    path = daemon.frame(stream)
    got = assert_same(path, [a.tobytes() for a in SEND])
    assert got["contiguous"] == (stream == "w")
    assert unbytes(got["vlmeta"]["series"]) == {
        "detector": "eiger", "energy_eV": 12400.0, "axes": ["omega"], "raw": b"\x00\xff"}
    assert_records_same(path)


def test_b2nd_frame_with_gaps_opens_as_ndarray(make_daemon):
    d = make_daemon()
    with open(d.config) as f:
        text = f.read()
    text = text.replace("templates:\n",
                        "  gimg:\n    typesize: 2\n    filters: [bitshuffle]\n"
                        "    order: frame_number\n    reorder_window: 4\n"
                        "    b2nd: {shape: [0, 64, 32], chunkshape: [1, 64, 32], "
                        "blockshape: [1, 16, 32], dtype: \"<u2\"}\n"
                        "templates:\n", 1)
    with open(d.config, "w") as f:
        f.write(text)
    d.start()
    imgs = {fn: (np.arange(64 * 32, dtype=np.uint16).reshape(64, 32) * (fn + 3)).astype("<u2")
            for fn in (0, 1, 2, 5, 6)}
    with b2stream.Session(d.endpoint) as s:
        with s.open("gimg", meta={"pixel_size_m": 75e-6}) as p:
            for fn, a in imgs.items():
                p.send(a, frame=fn)
            p.flush()
    d.stop()
    path = d.frame("gimg")
    zero = np.zeros((64, 32), "<u2")
    expect = [imgs.get(fn, zero).tobytes() for fn in range(7)]
    got = assert_same(path, expect)
    assert got["kind"] == "NDArray" and got["dtype"] == "<u2"
    assert got["shape"] == [7, 64, 32]            # the daemon grows dimension 0
    assert got["chunks"][3] == got["chunks"][4] == sha(zero.tobytes())
    assert got["images"] == [sha(c) for c in expect]
    with Frame(path) as f:
        assert [f.record(i).flags & 1 for i in range(7)] == [0, 0, 0, 1, 1, 0, 0]
    assert_records_same(path)


def test_b2nd_slice_across_gaps(make_daemon):
    d = make_daemon()
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("templates:\n",
                             "  gimg:\n    typesize: 2\n    order: frame_number\n"
                             "    reorder_window: 4\n"
                             "    b2nd: {shape: [0, 64, 32], chunkshape: [1, 64, 32], "
                             "blockshape: [1, 16, 32], dtype: \"<u2\"}\n"
                             "templates:\n", 1))
    d.start()
    with b2stream.Session(d.endpoint) as s:
        with s.open("gimg") as p:
            for fn in (0, 5):
                p.send(np.full((64, 32), fn + 1, "<u2"), frame=fn)
            p.flush()
    d.stop()
    got = ref("read", d.frame("gimg"))
    assert got["shape"] == [6, 64, 32] and len(got["images"]) == 6
    assert "array_error" not in got
    a = np.zeros((6, 64, 32), "<u2")
    a[0], a[5] = 1, 6
    assert got["array_sha"] == sha(a.tobytes())


def test_frame_being_written_opens_in_blosc2(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("w", meta={"run": 1}) as p:
            for i in range(5):
                p.send(SEND[i])
            assert p.flush().upto == 5
            first = assert_same(daemon.frame("w"))
            assert first["nchunks"] >= 5
            assert first["chunks"][:5] == [sha(a.tobytes()) for a in SEND[:5]]
            for i in range(5, 12):
                p.send(SEND[i])
            p.set_meta(run=2)
            assert p.flush().upto == 12
            again = assert_same(daemon.frame("w"), [a.tobytes() for a in SEND])
            assert unbytes(again["vlmeta"]["series"]) == {"run": 2}


@pytest.mark.parametrize("layout", ["contiguous", "sparse"])
def test_cli_frames_open_in_blosc2_and_take_appends(tmp_path, layout):
    raw = b"".join(ref_data(7, i, 65536) for i in range(5)) + ref_data(7, 5, 1000)
    src = tmp_path / "raw.bin"
    src.write_bytes(raw)
    out = str(tmp_path / "p.b2frame")
    cli("pack", "--codec", "zstd", "--typesize", "2", "--filters", "bitshuffle",
        "--chunk-bytes", "64K", *(["--sparse"] if layout == "sparse" else []), src, out)
    chunks = [raw[i:i + 65536] for i in range(0, len(raw), 65536)]
    assert_same(out, chunks)
    # python-blosc2 appends to the closed frame; b2stream reads the result
    got = ref("append", out, 9, 3, 65536)
    added = [ref_data(9, i, 65536) for i in range(3)]
    assert got["chunks"] == [sha(c) for c in chunks + added] == ours(out)
    assert cli("verify", out).stdout.decode().startswith("ok: 9 chunks")
    assert cli("cat", out).stdout == raw + b"".join(added)
    conv = str(tmp_path / "c.b2frame")
    cli("convert", out, conv, "--contiguous" if layout == "sparse" else "--sparse")
    assert_same(conv, chunks + added)


def test_daemon_frame_takes_blosc2_appends(daemon):
    _fill(daemon, "w", meta={"detector": "x"}, n=4)
    daemon.stop()
    path = daemon.frame("w")
    got = ref("append", path, 3, 2, 8192)
    expect = [a.tobytes() for a in SEND[:4]] + [ref_data(3, i, 8192) for i in range(2)]
    assert got["chunks"] == ours(path) == [sha(c) for c in expect]
    assert cli("cat", path).stdout == b"".join(expect)


def test_daemon_keeps_chunks_blosc2_appended(daemon):
    _fill(daemon, "w", n=4)
    daemon.stop()
    path = daemon.frame("w")
    ref("append", path, 3, 2, 8192)
    expect = [a.tobytes() for a in SEND[:4]] + [ref_data(3, i, 8192) for i in range(2)]
    daemon.start()
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("w") as p:
            p.send(SEND[4])
            p.flush()
    daemon.stop()
    assert ours(path)[:7] == [sha(c) for c in expect + [SEND[4].tobytes()]]
    assert ref("read", path)["chunks"] == ours(path)


@pytest.mark.parametrize("layout", ["contiguous", "sparse"])
def test_blosc2_schunks_open_in_b2stream(tmp_path, layout):
    path = str(tmp_path / "ref.b2frame")
    got = ref("write-schunk", path, layout, 5, 6, 40000)
    expect = [ref_data(5, i, 40000) for i in range(6)]
    assert got["chunks"] == ours(path) == [sha(c) for c in expect]
    with Frame(path) as f:
        assert f.series == {"detector": "ref", "energy_eV": 12400.0, "axes": [1, 2, 3]}
        assert f.sparse == (layout == "sparse")
    assert cli("cat", path).stdout == b"".join(expect)
    assert cli("verify", path).stdout.decode().startswith("ok: 6 chunks")
    info = cli("info", path, "--json").stdout.decode()
    assert '"series"' in info and '"kind"' in info


def test_blosc2_ndarray_opens_in_b2stream(tmp_path):
    path = str(tmp_path / "nd.b2nd")
    got = ref("write-ndarray", path, 11)
    a = np.random.default_rng(11).integers(0, 1000, (6, 40, 30), dtype=np.uint16)
    assert got["source_sha"] == got["array_sha"] == sha(a.tobytes())
    with Frame(path) as f:
        assert f.b2nd.shape == (6, 40, 30) and f.b2nd.chunkshape == (1, 40, 30)
        assert f.b2nd.dtype == np.dtype("<u2")
        assert np.array_equal(f.to_numpy(), a)
        assert f.series == {"detector": "nd"}
    assert got["chunks"] == ours(path)
    assert cli("verify", path).stdout.decode().startswith("ok: 6 chunks")


@pytest.mark.parametrize("layout", ["contiguous", "sparse"])
def test_distributed_export_opens_in_blosc2(tmp_path, layout):
    make = os.environ.get("B2S_MAKE_DFRAME", "")
    if not make or not os.access(make, os.X_OK):
        pytest.skip("B2S_MAKE_DFRAME does not name the built helper")
    store = tmp_path / "store"
    subprocess.run([make, str(store), "df", "50", "50", "gap=7", "close"],
                   check=True, capture_output=True)
    out = str(tmp_path / "df.b2frame")
    cli("convert", f"dir://{store}/df", out, *(["--sparse"] if layout == "sparse" else []))
    got = assert_same(out)
    assert got["nchunks"] == 50 and got["contiguous"] == (layout == "contiguous")
    assert_records_same(out)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))

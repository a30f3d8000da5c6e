"""Images sent in C order to b2nd streams whose blocks are not runs of that
order (docs/PROTOCOL.md 3.5): every way a shaped array comes in -- send of
C-ordered, Fortran-ordered, flat, strided arrays and bytes, try_send,
shared-memory slots filled in place, ShmSegment.send, b2stream produce --
is stored block after block and reads back as sent through the Frame
reader, a live follow, READ and python-blosc2 (the reference venv's), with
blockshapes that differ from the chunkshape in every dimension."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import b2stream
from b2stream import errors

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLI = os.environ.get("B2S_CLI", "")

# name: (dtype, chunkshape, blockshape); shape is (0,) + chunkshape[1:]
STREAMS = {
    # the report's: 128x128 uint16 images in blocks of 32x32
    "sq": ("<u2", (1, 128, 128), (1, 32, 32)),
    # every dimension split: 4 images of 48x40 a chunk, blocks of 2x16x8
    "cube": ("<f4", (4, 48, 40), (2, 16, 8)),
    # four dimensions, each split
    "hyper": ("<i2", (2, 6, 8, 10), (1, 3, 2, 5)),
    # whole rows: block order is C order, nothing to move (the control)
    "rows": ("<u2", (1, 128, 128), (1, 16, 128)),
    # whole along a leading dimension of 2 images: no run of the C order
    "lead": ("<u2", (2, 8, 8), (2, 4, 8)),
}


def _b2nd(dtype, cs, bs) -> str:
    shape = [0] + list(cs[1:])
    return (f"{{shape: {shape}, chunkshape: {list(cs)}, blockshape: {list(bs)}, "
            f"dtype: \"{dtype}\"}}")


def _config() -> str:
    out = []
    for name, (dt, cs, bs) in STREAMS.items():
        out.append(f"  {name}:\n    typesize: {np.dtype(dt).itemsize}\n"
                   f"    b2nd: {_b2nd(dt, cs, bs)}\n"
                   f"    durability: {{ack: write, group_count: 4, group_interval_ms: 5}}\n")
    return "".join(out)


TEMPLATE = f"""\
  squares:
    typesize: 2
    b2nd: {_b2nd("<u2", (1, 128, 128), (1, 32, 32))}
    durability: {{ack: write, group_count: 4, group_interval_ms: 5}}
"""


@pytest.fixture
def bdaemon(make_daemon):
    d = make_daemon(TEMPLATE)
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("templates:\n", _config() + "templates:\n", 1))
    d.start()
    return d


def _item_shape(cs):
    return tuple(cs[1:]) if cs[0] == 1 else tuple(cs)


def _chunks(name, n, seed):
    dt, cs, _ = STREAMS[name]
    rng = np.random.default_rng(seed)
    shape = (n,) + _item_shape(cs)
    if np.dtype(dt).kind == "f":
        return rng.standard_normal(shape).astype(dt)
    return rng.integers(0, 30000, size=shape).astype(dt)


def _as_array(name, chunks):
    """The frame's whole array: the chunks' images one after the other."""
    cs = STREAMS[name][1]
    return np.concatenate([c.reshape(cs) for c in chunks])


def _blosc2_check(path, want, tmp_path):
    """python-blosc2 reads the frame as an array: whole, one image, one
    pixel across images, a box; each compared with want."""
    venv = os.environ.get("B2S_VENV") or os.path.join(ROOT, ".venv")
    py = os.path.join(venv, "bin", "python")
    if not os.access(py, os.X_OK):
        pytest.skip(f"no reference interpreter at {py} (run scripts/make-venv)")
    ref = tmp_path / "want.npy"
    np.save(ref, want)
    code = """if True:
        import json, sys, blosc2, numpy as np
        a = blosc2.open(sys.argv[1]); r = np.load(sys.argv[2])
        mid = tuple(s // 2 for s in r.shape[1:])
        box = tuple(slice(s // 5, s - s // 7) for s in r.shape)
        print(json.dumps({"shape": list(a.shape), "chunks": list(a.chunks),
                          "blocks": list(a.blocks),
                          "all": bool(np.array_equal(a[:], r)),
                          "images": [bool(np.array_equal(a[i], r[i]))
                                     for i in range(r.shape[0])],
                          "pixel": bool(np.array_equal(a[(slice(None),) + mid],
                                                       r[(slice(None),) + mid])),
                          "box": bool(np.array_equal(a[box], r[box]))}))
    """
    run = subprocess.run([py, "-c", code, path, str(ref)], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["shape"] == list(want.shape)
    assert got == dict(got, all=True, pixel=True, box=True,
                       images=[True] * want.shape[0]), got
    return got


def _send_every_way(s, name, chunks, tmp_path):
    """Send chunks[i] by way i; returns how many were sent."""
    dt, cs, _ = STREAMS[name]
    item = _item_shape(cs)
    size = int(np.prod(cs)) * np.dtype(dt).itemsize
    ways = []
    with s.open(name) as p:
        def strided(c):
            wide = np.zeros(c.shape[:-1] + (2 * c.shape[-1],), dtype=c.dtype)
            wide[..., ::2] = c
            return wide[..., ::2]                  # not contiguous
        ways += [lambda c: p.send(c),
                 lambda c: p.send(np.asfortranarray(c)),
                 lambda c: p.send(c.reshape(-1)),
                 lambda c: p.send(c.tobytes()),
                 lambda c: p.send(strided(c)),
                 lambda c: p.send(c.reshape(cs)),
                 lambda c: p.try_send(c) or pytest.fail("no credit")]
        for way, c in zip(ways, chunks):
            way(c)
        seg = p.attach_shm(nslots=4, slot_size=size)
        n = len(ways)
        with seg.acquire(timeout=10) as slot:      # filled in place
            slot.array(dt, item)[...] = chunks[n]
        seg.send(chunks[n + 1], timeout=10)
        with seg.acquire(timeout=10) as slot:      # a flat view, in place
            slot.array(dt, (chunks[n + 2].size,))[...] = chunks[n + 2].reshape(-1)
        p.flush()
    n += 3
    if CLI:
        raw = tmp_path / "stack.raw"
        np.ascontiguousarray(chunks[n:n + 2]).tofile(raw)   # numpy's own C order
        run = subprocess.run([CLI, "produce", "--endpoint", s.endpoint, "--stream", name,
                              "--chunk-bytes", str(size), str(raw)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert "2 buffers" in run.stdout and "0 refused" in run.stdout, run.stdout
        n += 2
    return n


@pytest.mark.parametrize("name", list(STREAMS))
def test_every_way_in_reads_back_as_sent(bdaemon, name, tmp_path):
    chunks = _chunks(name, 12, seed=len(name))
    with b2stream.Session(bdaemon.endpoint) as s:
        with s.follow(name, timeout=30) as live:
            n = _send_every_way(s, name, chunks, tmp_path)
            got = [live.next() for _ in range(n)]
        for (i, a), want in zip(got, chunks):
            assert a.shape == want.shape, (i, a.shape)
            np.testing.assert_array_equal(a, want, err_msg=f"live chunk {i}")
        with s.follow(name, mode="notify", timeout=30) as notes:
            for i in range(n):
                assert next(notes) == (i, None)
                np.testing.assert_array_equal(notes.read(i), chunks[i])
        np.testing.assert_array_equal(s.read(name, n - 1), chunks[n - 1])
        nd = s.stats(name)["streams"][name]["b2nd"]
        assert tuple(nd["blockshape"]) == STREAMS[name][2]
    want = _as_array(name, chunks[:n])
    bdaemon.stop()                                  # the close: the whole shape
    path = bdaemon.frame(name)
    with b2stream.Frame(path) as f:
        assert f.shape == want.shape and f.b2nd.blockshape == STREAMS[name][2]
        np.testing.assert_array_equal(f[:], want)
        np.testing.assert_array_equal(np.asarray(f), want)
        for i in (0, 3, want.shape[0] - 1):
            np.testing.assert_array_equal(f[i], want[i])
        mid = tuple(s // 2 for s in want.shape[1:])
        np.testing.assert_array_equal(f[(slice(None),) + mid], want[(slice(None),) + mid])
        box = tuple(slice(s // 5, s - s // 7) for s in want.shape)
        np.testing.assert_array_equal(f[box], want[box])
        for i in range(n):
            np.testing.assert_array_equal(f.chunk(i), chunks[i])
    got = _blosc2_check(path, want, tmp_path)
    assert tuple(got["blocks"]) == STREAMS[name][2]


def test_stored_bytes_are_blocks(bdaemon):
    # the chunk as stored decompresses to the blocks one after the other
    # (blocks of 32x32 in C order of the 4x4 grid), as c-blosc2 lays b2nd
    # chunks out; the image went in C order
    img = np.arange(128 * 128, dtype="<u2").reshape(128, 128)
    with b2stream.Session(bdaemon.endpoint) as s:
        with s.open("sq") as p:
            p.send(img)
            p.flush()
        stored = s.read("sq", 0, dtype="<u2")
    blocks = img.reshape(4, 32, 4, 32).transpose(0, 2, 1, 3).reshape(-1)
    np.testing.assert_array_equal(stored, blocks)


def test_a_stream_made_from_a_template_reorders_too(bdaemon, tmp_path):
    chunks = _chunks("sq", 3, seed=9)
    with b2stream.Session(bdaemon.endpoint) as s:
        with s.open("made", template="squares") as p:
            for c in chunks:
                p.send(c)
            p.flush()
        with s.follow("made", timeout=30) as fo:
            for c in chunks:
                np.testing.assert_array_equal(next(fo)[1], c)
    bdaemon.stop()
    with b2stream.Frame(bdaemon.frame("made")) as f:
        np.testing.assert_array_equal(f[:], chunks)
    _blosc2_check(bdaemon.frame("made"), chunks, tmp_path)


def test_wrong_arrays_are_refused_before_sending(bdaemon):
    with b2stream.Session(bdaemon.endpoint) as s, s.open("cube") as p:
        good = _chunks("cube", 1, seed=1)[0]
        for bad in (good[:2], good.astype("<f8"), good.reshape(4, 40, 48),
                    good[0], good.reshape(-1)[:-1]):
            with pytest.raises(errors.ArgumentError, match=r"which takes float32 arrays of shape \(4, 48, 40\)"):
                p.send(bad)
        with pytest.raises(errors.ArgumentError):
            p.attach_shm(nslots=2, slot_size=good.nbytes).send(good[1:])
        assert p.stats().sent == 0


def test_blocks_that_cannot_tile_the_chunk_are_refused(make_daemon):
    d = make_daemon()
    with open(d.config) as f:
        text = f.read()
    bad = ("  odd:\n    b2nd: {shape: [0, 100, 100], chunkshape: [1, 100, 100], "
           "blockshape: [1, 32, 32]}\n")
    with open(d.config, "w") as f:
        f.write(text.replace("templates:\n", bad + "templates:\n", 1))
    run = subprocess.run([os.environ["B2S_DAEMON"], "--check-config", d.config],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert ("streams.odd.b2nd.blockshape: dimension 1: 32 does not divide the "
            "chunk's 100") in run.stderr + run.stdout


def test_import_of_gzip_chunks_with_the_exported_b2nd(bdaemon, tmp_path):
    # a dataset of gzip chunks (h5py) carrying the b2nd of a frame whose
    # blocks are whole in a leading dimension of 2: import compresses the
    # chunks in C order, so it must not take those blocks for runs
    if not CLI:
        pytest.skip("B2S_CLI does not name the built b2stream")
    chunks = _chunks("lead", 4, seed=3)
    with b2stream.Session(bdaemon.endpoint) as s, s.open("lead") as p:
        for c in chunks:
            p.send(c)
        p.flush()
    bdaemon.stop()
    want = _as_array("lead", chunks)
    h5 = str(tmp_path / "x.h5")
    run = subprocess.run([CLI, "export", bdaemon.frame("lead"), h5], capture_output=True,
                         text=True, timeout=120)
    if run.returncode == 2 and "unknown command" in run.stderr:
        pytest.skip("this b2stream was built without libhdf5")
    assert run.returncode == 0, run.stderr
    venv = os.environ.get("B2S_VENV") or os.path.join(ROOT, ".venv")
    py = os.path.join(venv, "bin", "python")
    if not os.access(py, os.X_OK):
        pytest.skip(f"no reference interpreter at {py} (run scripts/make-venv)")
    gz = str(tmp_path / "gz.h5")
    code = """if True:
        import sys, h5py, hdf5plugin, numpy as np
        with h5py.File(sys.argv[1]) as f:
            d = f["data"]; a = d[:]; attrs = dict(d.attrs)
        with h5py.File(sys.argv[2], "w") as g:
            n = g.create_dataset("data", data=a, chunks=(2, 8, 8), compression="gzip")
            for k, v in attrs.items():
                n.attrs[k] = v
        np.save(sys.argv[3], a)
    """
    run = subprocess.run([py, "-c", code, h5, gz, str(tmp_path / "h5.npy")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "h5.npy"), want)   # h5py's reading
    back = str(tmp_path / "back.b2frame")
    run = subprocess.run([CLI, "import", gz, back], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    with b2stream.Frame(back) as f:
        np.testing.assert_array_equal(f[:], want)
    _blosc2_check(back, want, tmp_path)

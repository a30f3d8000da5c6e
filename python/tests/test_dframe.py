"""DistributedFrame on frames the C library wrote (py_make_dframe, with the
calls of ranks and committer): on a local store always, on Ceph RADOS when
B2S_CEPH_CONF names a test cluster's configuration (scripts/
ceph-test-cluster), and the COMMITTED messages of b2s_dmsg.h."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import subprocess
import threading
import time
import uuid

import numpy as np
import pytest

import b2stream
from b2stream import _dmsg, dframe, errors

MAKE_DFRAME = os.environ.get("B2S_MAKE_DFRAME", "")
COMMITTER = os.environ.get("B2S_COMMITTER", "")
CEPH_CONF = os.environ.get("B2S_CEPH_CONF", "")
CEPH_POOL = os.environ.get("B2S_CEPH_POOL", "b2stream")
ITEMS, TS0 = 2048, 1700000000000000000


def expected(k: int) -> np.ndarray:
    """Chunk k as tests/support/dframe_fill.h makes it."""
    return ((np.arange(ITEMS, dtype=np.int64) + 7 * k) % 65536).astype("<u2")


def _xxh64(data: bytes) -> int | None:
    name = ctypes.util.find_library("xxhash")
    if not name:
        return None
    lib = ctypes.CDLL(name)
    lib.XXH64.restype = ctypes.c_uint64
    lib.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return lib.XXH64(data, len(data), 0)


class Store:
    """Where a test's frames live: a store URL for the helper, the frame
    URL for readers, the Ceph configuration (None for a local store)."""

    def __init__(self, kind: str, tmp_path) -> None:
        self.kind = kind
        self.ceph_conf = CEPH_CONF if kind == "rados" else None
        if kind == "rados":
            self.url = "rados://" + CEPH_POOL
        else:
            self.url = str(tmp_path / "store")

    def frame_url(self, name: str) -> str:
        return f"{self.url}/{name}" if self.kind == "rados" else f"dir://{self.url}/{name}"

    def make(self, name: str, nchunks: int, commit: int, *extra: str) -> None:
        env = dict(os.environ)
        if self.ceph_conf:
            env["CEPH_CONF"] = self.ceph_conf
        subprocess.run([MAKE_DFRAME, self.url, name, str(nchunks), str(commit), *extra],
                       check=True, capture_output=True, env=env)


@pytest.fixture(params=["local", "rados"])
def store(request, tmp_path):
    if not MAKE_DFRAME or not os.access(MAKE_DFRAME, os.X_OK):
        pytest.skip("B2S_MAKE_DFRAME does not name the built helper")
    if request.param == "rados" and not CEPH_CONF:
        pytest.skip("RADOS: set B2S_CEPH_CONF to a test cluster's ceph.conf "
                    "(scripts/ceph-test-cluster prints it)")
    if request.param == "rados" and not b2stream.dframe.rados_built():
        pytest.skip("RADOS: this build has no librados")
    return Store(request.param, tmp_path)


def unique(stem: str) -> str:
    # a RADOS pool outlives the test: every run gets its own frames
    return f"{stem}-{uuid.uuid4().hex[:12]}"


def test_committed_prefix(store):
    name = unique("pre")
    store.make(name, 5, 3)
    with b2stream.open(store.frame_url(name), ceph_conf=store.ceph_conf) as f:
        assert isinstance(f, b2stream.DistributedFrame)
        assert (len(f), f.committed, f.closed) == (3, 3, False)
        p = f.params
        assert (p.typesize, p.chunk_nbytes, p.ranks, p.frames_per_block) == (2, 4096, 1, 1)
        assert f.b2nd.shape == (0, 64, 32) and f.b2nd.chunkshape == (1, 64, 32)
        assert f.b2nd.dtype == np.dtype("<u2")
        for k in range(3):
            a = f.chunk(k)
            assert a.shape == (64, 32) and a.dtype == np.dtype("<u2")
            assert np.array_equal(a.reshape(-1), expected(k))
            assert f.chunk_bytes(k) == expected(k).tobytes()
            r = f.record(k)
            assert (r.frame, r.ts, r.flags, r.gap) == (k, TS0 + k, 0, False)
            want = _xxh64(f.raw_chunk(k))
            if want is not None:
                assert r.xxh64 == want
        assert f.record(1).user == {"e": 1.0}
        assert f.record(0).user is None
        assert [int(a.reshape(-1)[0]) for a in f] == [0, 7, 14]
        # stored but not committed: not there for readers
        with pytest.raises(errors.ChunkIndexError):
            f.chunk(3)
        with pytest.raises(errors.ChunkIndexError):
            f.record(3)


def test_refresh_sees_commit_and_close(store):
    name = unique("grow")
    store.make(name, 4, 1)
    with b2stream.DistributedFrame(store.frame_url(name), ceph_conf=store.ceph_conf) as f:
        assert len(f) == 1
        store.make(name, 4, 4, "close")
        assert len(f) == 1                  # as of the last refresh
        assert f.refresh() == 4 and f.closed
        assert np.array_equal(f.chunk(-1).reshape(-1), expected(3))


def test_gap_and_series(store, tmp_path):
    name = unique("gap")
    series = tmp_path / "series.mp"
    series.write_bytes(b2stream._msgpack.packb({"sample": "Fe2O3", "n": 3}))
    store.make(name, 4, 4, "gap=2", f"series={series}")
    with b2stream.open(store.frame_url(name), ceph_conf=store.ceph_conf) as f:
        assert f.series == {"sample": "Fe2O3", "n": 3}
        r = f.record(2)
        assert r.gap and r.frame == 2
        assert not f.chunk(2).any()
        assert f.chunk(2).shape == (64, 32)
        assert np.array_equal(f.chunk(3).reshape(-1), expected(3))


def test_open_errors(tmp_path):
    if not MAKE_DFRAME:
        pytest.skip("B2S_MAKE_DFRAME does not name the built helper")
    with pytest.raises(errors.ArgumentError):
        b2stream.open("rados://pool-only")
    with pytest.raises(errors.ArgumentError):
        b2stream.open("dir://relative/x")
    with pytest.raises(errors.ArgumentError):
        b2stream.open("dir:///tmp/.hidden")
    with pytest.raises(errors.ArgumentError):
        b2stream.open(str(tmp_path / "x.b2frame"), ceph_conf="/etc/ceph/ceph.conf")
    (tmp_path / "store").mkdir()
    with pytest.raises(FileNotFoundError):
        b2stream.open(f"dir://{tmp_path}/store/absent")
    with pytest.raises(FileNotFoundError):
        b2stream.open(f"dir://{tmp_path}/nostore/absent")
    assert not (tmp_path / "nostore").exists()


# ---- following -------------------------------------------------------------


class Collector(threading.Thread):
    """Runs follow() and records what it yields and when it ended."""

    def __init__(self, f, **kw) -> None:
        super().__init__(daemon=True)
        self.f, self.kw = f, kw
        self.got: list[tuple[int, bytes]] = []
        self.error: BaseException | None = None
        self.ended = threading.Event()

    def run(self) -> None:
        try:
            for i, a in self.f.follow(**self.kw):
                self.got.append((i, a.tobytes()))
        except BaseException as exc:        # reported by the test
            self.error = exc
        self.ended.set()

    def wait_for(self, n: int, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while len(self.got) < n and time.monotonic() < deadline and not self.ended.is_set():
            time.sleep(0.01)
        return len(self.got) >= n


def publish_until(pub, name: str, h: int, closed: bool, c: Collector, n: int) -> None:
    """A committer stand-in: COMMITTED(h) every 50 ms until the follower
    has n chunks (repeated, as a message sent before the subscription took
    hold is lost)."""
    deadline = time.monotonic() + 20
    while len(c.got) < n and not c.ended.is_set() and time.monotonic() < deadline:
        pub.send(_dmsg.encode_committed(name, h, closed))
        # another frame's message must move nothing
        pub.send(_dmsg.encode_committed(name + "x", h + 100, True))
        time.sleep(0.05)


def test_follow_committer_messages(store, tmp_path, monkeypatch):
    import zmq
    # only messages can move the count within this test: no silent re-read
    monkeypatch.setattr(dframe, "QUIET_S", 120.0)
    name = unique("fol")
    store.make(name, 6, 2)
    endpoint = f"ipc://{tmp_path}/committer.pub"
    pub = zmq.Context.instance().socket(zmq.PUB)
    pub.bind(endpoint)
    try:
        with b2stream.open(store.frame_url(name), ceph_conf=store.ceph_conf) as f:
            c = Collector(f, committer_pub=endpoint, start=0)
            c.start()
            assert c.wait_for(2, 20), c.error
            store.make(name, 6, 4)
            publish_until(pub, name, 4, False, c, 4)
            assert c.wait_for(4, 20), c.error
            assert not c.ended.is_set()
            store.make(name, 6, 6, "close")
            publish_until(pub, name, 6, True, c, 6)
            assert c.ended.wait(20), "follow did not end at closed"
            assert c.error is None
            assert [i for i, _ in c.got] == list(range(6))
            for i, data in c.got:
                assert data == expected(i).tobytes()
    finally:
        pub.close(linger=0)


def test_follow_real_committer(tmp_path):
    """follow() on the PUB of a real b2stream-committer, which commits what
    rank 0 (played by py_make_dframe) announces and closes the frame at END."""
    if not MAKE_DFRAME or not COMMITTER or not os.access(COMMITTER, os.X_OK):
        pytest.skip("B2S_MAKE_DFRAME and B2S_COMMITTER must name the built programs")
    store = Store("local", tmp_path)
    name = unique("live")
    store.make(name, 0, 0)
    pull, pub = f"ipc://{tmp_path}/pull", f"ipc://{tmp_path}/pub"
    with open(tmp_path / "committer.log", "wb") as log:
        committer = subprocess.Popen(
            [COMMITTER, "--store", store.url, "--pull", pull, "--pub", pub,
             "--frame", name, "--sync", "none", "--gap-timeout-ms", "60000"],
            stdout=log, stderr=log)
    try:
        store.make(name, 2, 0, f"written={pull}")
        with b2stream.open(store.frame_url(name)) as f:
            c = Collector(f, committer_pub=pub, start=0)
            c.start()
            assert c.wait_for(2, 20), c.error
            store.make(name, 4, 0, f"written={pull}", "end")
            assert c.ended.wait(20), "follow did not end when the committer closed the frame"
            assert c.error is None and f.closed and len(f) == 4
            assert [i for i, _ in c.got] == [0, 1, 2, 3]
            assert all(data == expected(i).tobytes() for i, data in c.got)
    finally:
        committer.terminate()
        committer.wait(20)


def test_follow_polls_without_endpoint(store):
    name = unique("poll")
    store.make(name, 3, 1)
    with b2stream.open(store.frame_url(name), ceph_conf=store.ceph_conf) as f:
        c = Collector(f, start=0)
        c.start()
        assert c.wait_for(1, 20), c.error
        store.make(name, 3, 3, "close")
        assert c.ended.wait(20) and c.error is None
        assert [i for i, _ in c.got] == [0, 1, 2]


def test_follow_timeout(store):
    name = unique("idle")
    store.make(name, 2, 2)
    with b2stream.open(store.frame_url(name), ceph_conf=store.ceph_conf) as f:
        t0 = time.monotonic()
        got = [i for i, _ in f.follow(start=1, timeout=0.3)]
        assert got == [1] and time.monotonic() - t0 < 10


# ---- the message codec -------------------------------------------------------


def test_committed_message_bytes():
    m = _dmsg.encode_committed("run1", 5, True)
    assert m == b"B2DM\x01\x03\x04\x00run1" + struct.pack("<QB", 5, 1)
    assert m.startswith(_dmsg.committed_prefix("run1"))
    d = _dmsg.decode(m)
    assert (d.type, d.name, d.index, d.closed) == (_dmsg.COMMITTED, "run1", 5, True)
    w = _dmsg.decode(b"B2DM\x01\x01\x01\x00a" + struct.pack("<QII", 9, 3, 2) + b"\x80\x80")
    assert (w.type, w.index, w.rank, w.rec) == (_dmsg.WRITTEN, 9, 3, b"\x80\x80")
    e = _dmsg.decode(b"B2DM\x01\x02\x01\x00a" + struct.pack("<QI", 0, 1))
    assert (e.type, e.index, e.rank) == (_dmsg.END, 0, 1)


@pytest.mark.parametrize("buf, code", [
    (b"B2DX\x01\x03\x01\x00a" + struct.pack("<QB", 1, 0), "PROTO"),
    (b"B2DM\x02\x03\x01\x00a" + struct.pack("<QB", 1, 0), "PROTO_VERSION"),
    (b"B2DM\x01\x03\x01\x00a" + struct.pack("<QB", 1, 0) + b"\x00", "PROTO"),
    (b"B2DM\x01\x03\x01\x00a" + struct.pack("<QB", 1, 2), "PROTO"),
    (b"B2DM\x01\x03\x01\x00a" + struct.pack("<QB", 1 << 62, 0), "PROTO"),
    (b"B2DM\x01\x03\x03\x00a/b" + struct.pack("<QB", 1, 0), "PROTO"),
    (b"B2DM\x01\x03\x09\x00a" + struct.pack("<QB", 1, 0), "PROTO"),
    (b"B2DM\x01\x09\x01\x00a" + struct.pack("<QB", 1, 0), "PROTO"),
    (b"B2DM\x01\x01\x01\x00a" + struct.pack("<QII", 1, 0, 0), "PROTO"),
    (b"B2DM\x01\x02\x01\x00a" + struct.pack("<QI", 1, 1024), "PROTO"),
    (b"B2DM\x01", "PROTO"),
])
def test_malformed_messages(buf, code):
    with pytest.raises(errors.ProtocolError) as ei:
        _dmsg.decode(buf)
    assert ei.value.code == errors.CODES["B2S_E_" + code]


def test_distributed_frame_as_array(store):
    name = unique("nd")
    store.make(name, 5, 4)
    ref = np.stack([expected(k).reshape(64, 32) for k in range(4)])
    with b2stream.open(store.frame_url(name), ceph_conf=store.ceph_conf) as f:
        assert f.shape == (4, 64, 32) and len(f) == 4 and f.dtype == np.dtype("<u2")
        for key in (2, -1, slice(1, 3), (1, slice(3, 9), slice(5, 30)), [3, 0],
                    (slice(None), 10, 20), (Ellipsis, 7)):
            got = f[key]
            np.testing.assert_array_equal(got, ref[key])
            assert not got.flags.writeable
        np.testing.assert_array_equal(np.asarray(f), ref)
        assert len(list(f)) == 4
        assert f.chunk(1, stored=True) == f.raw_chunk(1)
        with pytest.raises(IndexError):
            f[4]                                # stored, not committed

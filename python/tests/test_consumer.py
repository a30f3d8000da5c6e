"""Consumers against the real daemon: follow from the start and from the
end, N-d chunk layouts, notify mode, a daemon restart under a consumer,
and local frame reads while the daemon writes."""
from __future__ import annotations

import signal

import numpy as np
import pytest

import b2stream
from b2stream import errors


def _produce(endpoint: str, stream: str, items, flush: bool = True) -> None:
    with b2stream.Session(endpoint) as s, s.open(stream) as p:
        for it in items:
            p.send(it)
        if flush:
            p.flush()


def test_follow_from_start_and_from_end(daemon):
    _produce(daemon.endpoint, "w", [bytes([i]) * 100 for i in range(3)])
    with b2stream.Session(daemon.endpoint) as s:
        with s.follow("w", timeout=10) as head, s.follow("w", "end", timeout=10) as tail:
            assert head.start == 0 and tail.start == 3
            assert [next(head)[0] for _ in range(3)] == [0, 1, 2]
            with pytest.raises(errors.TimeoutError):
                tail.next(timeout=0.2)
            _produce(daemon.endpoint, "w", [b"late" * 10])
            assert tail.next() == (3, b"late" * 10)
            assert head.next() == (3, b"late" * 10)
        with pytest.raises(errors.ChunkIndexError):
            s.follow("w", start=99)
        with s.follow("w", start=2, timeout=10) as mid:
            assert next(mid)[0] == 2


def test_notify_and_compressed_modes(daemon):
    _produce(daemon.endpoint, "w", [b"abc" * 1000] * 2)
    with b2stream.Session(daemon.endpoint) as s:
        with s.follow("w", mode="notify", timeout=10) as f:
            assert [next(f) for _ in range(2)] == [(0, None), (1, None)]
            assert f.read(1) == b"abc" * 1000
        with s.follow("w", mode="compressed", timeout=10) as f:
            index, chunk = next(f)
            assert index == 0 and isinstance(chunk, bytes) and len(chunk) < 3000
            assert s.read("w", 0, decompressed=False) == chunk


def test_blocked_chunk_layout(daemon):
    # blocks of 1x4x4 inside chunks of 2x8x8: the C-ordered chunk sent is
    # stored block after block, and comes back as the 2x8x8 array
    ref = np.arange(2 * 8 * 8, dtype=np.float32).reshape(2, 8, 8)
    _produce(daemon.endpoint, "tiles", [ref.reshape(-1)])
    with b2stream.Session(daemon.endpoint) as s, s.follow("tiles", timeout=10) as f:
        index, a = next(f)
        stored = s.read("tiles", 0, dtype=np.float32)   # the items as stored
    assert index == 0 and a.shape == (2, 8, 8)
    np.testing.assert_array_equal(a, ref)
    grid = ref.reshape(2, 1, 2, 4, 2, 4).transpose(0, 2, 4, 1, 3, 5)
    np.testing.assert_array_equal(stored, grid.reshape(-1))
    with b2stream.Frame(daemon.frame("tiles")) as fr:
        np.testing.assert_array_equal(fr.to_numpy(), ref)


def test_daemon_restart_under_a_consumer(daemon):
    _produce(daemon.endpoint, "w", [b"before%d" % i for i in range(3)])
    s = b2stream.Session(daemon.endpoint, timeout=20)
    plain = b2stream.Session(daemon.endpoint)
    try:
        f = s.follow("w", timeout=20, resume=True)
        g = plain.follow("w", timeout=20)
        assert [next(f)[1] for _ in range(3)] == [b"before0", b"before1", b"before2"]
        assert [next(g)[0] for _ in range(3)] == [0, 1, 2]
        assert daemon.stop(signal.SIGTERM) == 0
        daemon.start()
        _produce(daemon.endpoint, "w", [b"after%d" % i for i in range(2)])
        # the resuming follow goes on exactly where it was
        assert [next(f) for _ in range(2)] == [(3, b"after0"), (4, b"after1")]
        # the plain one reports the end of its session
        with pytest.raises(errors.ClosedError):
            g.next(timeout=10)
        f.unfollow()
    finally:
        s.close()
        plain.close()


def test_frame_read_while_the_daemon_writes(daemon):
    imgs = [np.full((1, 64, 32), i, np.uint16) for i in range(10)]
    with b2stream.Session(daemon.endpoint) as s, s.open("img") as p:
        for a in imgs[:4]:
            p.send(a)
        p.flush()
        fr = b2stream.Frame(daemon.frame("img"))
        try:
            assert fr.nchunks == 4
            assert fr.b2nd.dtype == np.uint16 and fr.b2nd.chunkshape == (1, 64, 32)
            for a in imgs[4:]:
                p.send(a)
            p.flush()
            assert fr.refresh() == 10
            assert fr.chunk(-1).shape == (64, 32) and int(fr.chunk(9)[3, 3]) == 9
            out = np.empty(64 * 32, np.uint16)
            assert fr.read_chunk_into(5, out) == out.nbytes and (out == 5).all()
            np.testing.assert_array_equal(fr.to_numpy(), np.concatenate(imgs))
            with pytest.raises(errors.ChunkIndexError):
                fr.chunk(10)
        finally:
            fr.close()
    with pytest.raises(FileNotFoundError):
        b2stream.Frame(daemon.dir + "/data/none.b2frame")


def test_stats_and_ping(daemon):
    _produce(daemon.endpoint, "w", [b"x" * 500])
    with b2stream.Session(daemon.endpoint, roles=()) as s:
        st = s.stats()
        assert st["streams"]["w"]["committed"] == 1
        assert "daemon" in st
        assert 0 <= s.ping() < 5


def test_daemon_killed_under_a_consumer(daemon):
    # no message announces a SIGKILL: the session notices the silence by an
    # unanswered PING, and the resuming follow carries on after the restart
    _produce(daemon.endpoint, "w", [b"one", b"two"])
    with b2stream.Session(daemon.endpoint, timeout=1.0) as s:
        f = s.follow("w", timeout=30, resume=True)
        assert [next(f) for _ in range(2)] == [(0, b"one"), (1, b"two")]
        daemon.stop(signal.SIGKILL)
        with pytest.raises(errors.TimeoutError):
            f.next(timeout=0.5)
        daemon.start()
        _produce(daemon.endpoint, "w", [b"three"])
        assert next(f) == (2, b"three")
        f.unfollow()
    with b2stream.Session(daemon.endpoint, timeout=1.0) as s:
        f = s.follow("w", start="end", timeout=30)
        daemon.stop(signal.SIGKILL)
        with pytest.raises(errors.ClosedError):
            next(f)

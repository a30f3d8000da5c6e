"""Producers against the real daemon: round trips, credits, drops, errors,
shared memory, both transports."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import b2stream
from b2stream import errors
from conftest import CLI, DTYPES, dtype_stream, free_port


def _sample(dt: np.dtype, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    a = raw.view(dt).reshape(shape)
    if dt.kind == "b":
        a = (raw.reshape(shape) & 1).astype(bool)
    elif dt.kind in "fc":
        a = np.nan_to_num(a)     # NaN != NaN would spoil the comparison
    return a


@pytest.mark.parametrize("dt", DTYPES)
def test_round_trip_every_b2nd_dtype(daemon, dt):
    dtype = np.dtype(dt)
    stream = dtype_stream(dt)
    sent = [_sample(dtype, (2, 8), i) for i in range(3)]
    with b2stream.Session(daemon.endpoint) as s:
        with s.open(stream) as p:
            for a in sent:
                p.send(a)
            assert p.flush() == b2stream.FlushResult(3, 0)
        with s.follow(stream, timeout=10) as f:
            got = [next(f) for _ in range(3)]
    for i, (index, a) in enumerate(got):
        assert index == i
        assert a.dtype == dtype and a.shape == (2, 8)
        assert a.tobytes() == sent[i].tobytes()
    with b2stream.Frame(daemon.frame(stream)) as fr:
        whole = fr.to_numpy()
    assert whole.shape == (6, 8) and whole.dtype == dtype
    assert whole.tobytes() == b"".join(a.tobytes() for a in sent)


def test_bytes_stream_and_counters(daemon):
    bufs = [bytes([i]) * (1000 + i) for i in range(20)]
    with b2stream.Session(daemon.endpoint) as s:
        p = s.open("w")
        ids = [p.send(b) for b in bufs]
        assert ids == list(range(20))
        res = p.close()
        assert res.upto == 20 and res.dropped == 0
        st = p.stats()
        assert (st.sent, st.bytes, st.acked, st.dropped, st.rejected) == (
            20, sum(map(len, bufs)), 20, 0, 0)
        assert st.ack_level == b2stream.WRITTEN and st.policy == b2stream.BLOCK
        for i in (0, 7, 19):
            assert s.read("w", i) == bufs[i]
    with b2stream.Frame(daemon.frame("w")) as fr:
        assert [fr.chunk(i).tobytes() for i in range(fr.nchunks)] == bufs


def test_zero_copy_and_large_buffers(daemon):
    big = np.arange(1 << 20, dtype=np.uint32)            # 4 MiB
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("w") as p:
            p.send(big, copy=False)
            p.send(big.tobytes())                          # bytes: never copied
            p.send(big[::2])                               # made contiguous
            p.flush()
        assert s.read("w", 0, dtype=np.uint32).tobytes() == big.tobytes()
        assert s.read("w", 1) == big.tobytes()
        assert s.read("w", 2, dtype="<u4").tobytes() == big[::2].tobytes()


def test_sparse_and_template_and_fsync_streams(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        for stream, tmpl in (("r", ""), ("f", ""), ("made.new", "tm")):
            with s.open(stream, tmpl) as p:
                for i in range(5):
                    p.send(bytes([i + 1]) * 4096)
                assert p.flush().upto == 5
        assert s.stats("made.new")["streams"]["made.new"]["committed"] == 5
    with b2stream.Frame(daemon.frame("r")) as fr:
        assert fr.sparse and fr.nchunks == 5
        assert fr.chunk(4).tobytes() == bytes([5]) * 4096


def test_block_policy_credits_and_nonblocking_send(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("bl") as p:
            assert p.credits <= 2
            n = 0
            while p.try_send(os.urandom(256 * 1024)):   # never more than credits
                n += 1
                if n > 50:
                    break
            assert 1 <= n
            for _ in range(30):
                p.send(os.urandom(64 * 1024), timeout=10)
            assert p.flush(timeout=30).upto == n + 30


def test_drop_newest_counts_drops(daemon):
    payload = os.urandom(1 << 20)
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("dn") as p:
            for _ in range(40):
                p.send(payload, timeout=10)
            res = p.flush(timeout=30)
            st = p.stats()
        assert res.upto == 40
        assert res.dropped == st.dropped
        committed = s.stats("dn")["streams"]["dn"]["committed"]
        assert committed + st.dropped == 40


def test_errors(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        with pytest.raises(errors.NoStreamError) as ei:
            s.open("nope")
        assert ei.value.code == -955 and ei.value.message
        with pytest.raises(errors.NoTemplateError):
            s.open("nope2", "no-such-template")
        with pytest.raises(errors.StreamNameError):
            s.open("../etc", "tm")
        with pytest.raises(errors.NoStreamError):
            s.follow("nope")
        with pytest.raises(errors.NoStreamError):
            s.stats("nope")
        with pytest.raises(errors.ChunkIndexError):
            s.read("w", 12345)
        p = s.open("w")
        with pytest.raises(errors.OversizeError):
            p.send(b"x" * (s.max_buffer + 1))
        with pytest.raises(errors.ArgumentError):
            p.send(b"")
        p.close()
        with pytest.raises(errors.ClosedError):
            p.send(b"late")
        # a b2nd stream takes only whole chunks: rejected per buffer, and
        # the rejection is raised by flush with the buffer's id
        with s.open("img") as q:
            q.send(np.zeros((1, 64, 32), np.uint16))
            q.send(b"short")
            with pytest.raises(errors.FrameError) as ei:
                q.flush()
            assert ei.value.code == -966 and ei.value.ref_index == 1
            assert q.stats().rejected == 1
        assert s.ping() >= 0
    with pytest.raises(FileNotFoundError):
        b2stream.Session("ipc://" + daemon.dir + "/run/missing.sock")


def test_shared_memory_slots(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        assert s.shm_offered
        with s.open("img") as p:
            seg = p.attach_shm(nslots=4, slot_size=64 * 32 * 2)
            with pytest.raises(errors.BusyError):
                p.attach_shm(4, 4096)
            for i in range(12):
                with seg.acquire(timeout=10) as slot:
                    a = slot.array(np.uint16, (1, 64, 32))
                    a[...] = i
            with seg.acquire() as slot:            # cancelled: never sent
                slot.cancel()
            seg.send(np.full((1, 64, 32), 99, np.uint16))
            assert p.flush().upto == 13
        with s.follow("img", timeout=10) as f:
            got = [next(f) for _ in range(13)]
    assert [int(a[0, 0]) for _, a in got] == list(range(12)) + [99]
    assert all(a.shape == (64, 32) and (a == a[0, 0]).all() for _, a in got)


def _keygen(path: str) -> str:
    out = subprocess.run([CLI, "keygen", path], check=True, capture_output=True, text=True)
    return out.stdout.strip().split()[-1]


def test_tcp_with_curve_keys(make_daemon, tmp_path):
    if not CLI:
        pytest.skip("B2S_CLI not set")
    server_pub = _keygen(str(tmp_path / "server.key"))
    client_pub = _keygen(str(tmp_path / "client.key"))
    _keygen(str(tmp_path / "stranger.key"))
    (tmp_path / "authorized").write_text(f"# clients\n{client_pub}\n")
    (tmp_path / "server.pub").write_text(server_pub + "\n")
    port = free_port()
    d = make_daemon(f"curve:\n  secret_key_file: {tmp_path}/server.key\n"
                    f"  authorized_keys_file: {tmp_path}/authorized\n",
                    listen_extra=f"tcp://127.0.0.1:{port}")
    d.start()
    ep = f"tcp://127.0.0.1:{port}"
    assert b2stream.read_key(tmp_path / "server.pub") == server_pub
    with b2stream.Session(ep, curve_server_key=tmp_path / "server.pub",
                          curve_secret_key=tmp_path / "client.key") as s:
        with s.open("w") as p:
            p.send(b"over curve" * 100)
            p.flush()
        assert s.read("w", 0) == b"over curve" * 100
        with s.follow("w", timeout=10) as f:
            assert next(f) == (0, b"over curve" * 100)
    with pytest.raises(errors.AuthError):
        b2stream.Session(ep, timeout=3, curve_server_key=server_pub,
                         curve_secret_key=tmp_path / "stranger.key")

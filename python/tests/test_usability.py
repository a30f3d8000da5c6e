"""What a beamline user trips on, against the real daemon: read-only
images of the image shape, a true resume point, a two-producer
frame-number stream that loses nothing, checks of numpy buffers, a dead
daemon seen at once, error words, series metadata from a follow."""
from __future__ import annotations

import pydoc
import signal
import time

import numpy as np
import pytest

import b2stream
from b2stream import errors

ORDERED = """\
  ord:
    order: frame_number
    reorder_window: 256
    queue_depth: 64
    durability: {ack: write, group_count: 8, group_interval_ms: 5}
"""


def test_follow_images_are_read_only_and_image_shaped(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("img") as p:
            for i in range(3):
                p.send(np.full((64, 32), i + 1, np.uint16))
            p.flush()
        with s.follow("img", timeout=10) as f:
            for i in range(3):
                index, a = next(f)
                assert index == i and a.shape == (64, 32) and a.dtype == np.uint16
                assert not a.flags.writeable and int(a[5, 5]) == i + 1
                with pytest.raises(ValueError):
                    a[0, 0] = 7
        a = s.read("img", 1)
        assert a.shape == (64, 32) and not a.flags.writeable


def test_unfollow_returns_a_true_resume_point(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("w") as p:
            for i in range(200):
                p.send(b"chunk%04d" % i)
            p.flush()
        seen = []
        f = s.follow("w", timeout=10)
        for _ in range(10):
            seen.append(next(f)[1])
        s.ping()                      # the daemon pushes more meanwhile
        at = f.unfollow()
        assert at == 10
        with s.follow("w", at, timeout=10) as g:
            for _ in range(190):
                seen.append(next(g)[1])
    assert seen == [b"chunk%04d" % i for i in range(200)]


def _frame_buf(f: int) -> bytes:
    return (b"f%05d" % f) * 2000


def test_two_producers_frame_number_order_lose_nothing(make_daemon):
    d = make_daemon(ORDERED)
    d.start()
    n = 400
    with b2stream.Session(d.endpoint) as sa, b2stream.Session(d.endpoint) as sb:
        pa = sa.open("two", template="ord")
        pb = sb.open("two")
        pa.send(_frame_buf(0), frame=0)
        pa.flush()                    # the first frame number is 0
        for f in range(1, n):         # buffers big enough to be in flight
            (pa if f % 2 == 0 else pb).send(_frame_buf(f), frame=f)
        # the recipe: the other producer's buffers reached the daemon
        # (a round trip on its session) before this one flushes
        sb.ping()
        pa.flush()
        pb.flush()
        pa.close()
        pb.close()
        with sa.follow("two", timeout=10, records=True) as fo:
            got = [next(fo) for _ in range(n)]
    assert [bytes(data) for _, data, _ in got] == [_frame_buf(f) for f in range(n)]
    assert [r.frame for _, _, r in got] == list(range(n))
    assert not any(r.gap for _, _, r in got)


def test_missing_frame_number_says_so(make_daemon):
    d = make_daemon(ORDERED)
    d.start()
    with b2stream.Session(d.endpoint) as s, s.open("o", template="ord") as p:
        p.send(b"x" * 16)
        with pytest.raises(errors.ArgumentError) as ei:
            p.flush()
    assert "frame number" in ei.value.message and "'o'" in ei.value.message


def test_producer_checks_arrays_against_the_b2nd_stream(daemon):
    with b2stream.Session(daemon.endpoint) as s, s.open("img") as p:
        assert p.array_spec() == (np.dtype("<u2"), (64, 32))
        for bad in (np.zeros((64, 32), np.int16), np.zeros((32, 64), np.uint16),
                    np.zeros((2, 32, 32), np.uint16)):
            with pytest.raises(errors.ArgumentError, match="img"):
                p.send(bad)
        assert p.stats().sent == 0             # nothing went out
        if s.shm_offered:
            seg = p.attach_shm(2, 64 * 32 * 2)
            with pytest.raises(errors.ArgumentError):
                seg.send(np.zeros((64, 32), np.float16))
            seg.send(np.zeros((64, 32), np.uint16))
        p.send(np.zeros((64, 32), np.uint16))
        p.send(np.zeros((1, 64, 32), np.uint16))
        p.send(b"\0" * (64 * 32 * 2 - 2))        # bytes: only the daemon checks
        with pytest.raises(errors.FrameError) as ei:
            p.flush()
    assert ei.value.code == errors.CODES["B2S_E_CHUNK_SIZE"]
    assert "b2nd chunk is 4096 bytes" in ei.value.message


def test_dead_daemon_ends_a_blocked_send_with_closed_error(daemon):
    s = b2stream.Session(daemon.endpoint, timeout=30)
    try:
        p = s.open("bl")
        while p.credits > 0:
            p.send(b"x" * 1024, timeout=0)
        daemon.proc.send_signal(signal.SIGSTOP)   # a blocked wait, then the kill
        try:
            for _ in range(500):               # credits of ACKs already queued
                try:
                    p.send(b"y" * 1024, timeout=0.3)
                except errors.TimeoutError:    # a stopped daemon: slow, not gone
                    break
            else:
                pytest.fail("a stopped daemon kept giving credit")
            daemon.proc.send_signal(signal.SIGKILL)
        finally:
            daemon.proc.send_signal(signal.SIGCONT)
        t0 = time.monotonic()
        with pytest.raises(errors.ClosedError) as ei:
            p.send(b"z" * 1024, timeout=20)
        # the closed connection, not the session timeout's PING probe (30 s)
        assert time.monotonic() - t0 < 15 and isinstance(ei.value, ConnectionError)
    finally:
        s.close()


def test_error_words(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        for call in (lambda: s.open("nosuch"), lambda: s.follow("nosuch"),
                     lambda: s.read("nosuch", 0), lambda: s.stats("nosuch")):
            with pytest.raises(errors.NoStreamError, match="'nosuch'"):
                call()
    assert errors.code_name(-955) == "B2S_E_NOSTREAM"
    assert all(errors.CODES[errors.code_name(v)] == v for v in errors.CODES.values())
    assert errors.CODES["NOSTREAM"] == errors.CODES["B2S_E_NOSTREAM"] == -955
    text = pydoc.render_doc(b2stream.Producer.send)
    assert "object at 0x" not in text and "<session timeout>" in text


def test_timeout_words():
    import zmq
    ctx = zmq.Context.instance()
    silent = ctx.socket(zmq.ROUTER)
    port = silent.bind_to_random_port("tcp://127.0.0.1")
    try:
        with pytest.raises(errors.TimeoutError) as ei:
            b2stream.Session(f"tcp://127.0.0.1:{port}", timeout=0.3)
        assert "0x" not in str(ei.value) and "handshake" in str(ei.value)
    finally:
        silent.close(0)


def test_follow_series_and_its_updates(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("w", meta={"sample": "Fe2O3"}) as p:
            p.send(b"a" * 8)
            p.flush()
            seen = []
            with s.follow("w", timeout=10, on_series=seen.append,
                          series_interval=0.0) as f:
                assert f.series == {"sample": "Fe2O3"}
                next(f)
                p.set_meta(energy_eV=7112.0)
                p.send(b"b" * 8)
                p.flush()
                next(f)
                assert seen == [{"sample": "Fe2O3", "energy_eV": 7112.0}]
                assert f.series == seen[-1]
        assert s.series("w") == {"sample": "Fe2O3", "energy_eV": 7112.0}

"""Arguments a user of docs/PYTHON.md may get wrong, against the real
daemon: each refused with ArgumentError (a ValueError) and a sentence,
nothing sent; what the daemon grants is what the objects say; and what
Follow.read returns in each mode."""
from __future__ import annotations

import numpy as np
import pytest

import b2stream
from b2stream import errors


@pytest.mark.parametrize("kw, why", [
    ({"nslots": 0}, "nslots 0 is outside 1 .. 4096"),
    ({"nslots": 5000}, "nslots 5000 is outside 1 .. 4096"),
    ({"nslots": -1}, "nslots -1 is outside"),
    ({"nslots": 1.5}, "nslots must be an integer"),
    ({"nslots": "4"}, "nslots must be an integer"),
    ({"slot_size": 0}, "slot_size 0 is outside 1 byte .. 1 GiB"),
    ({"slot_size": 2 << 30}, "slot_size .* is outside"),
])
def test_attach_shm_arguments(daemon, kw, why):
    with b2stream.Session(daemon.endpoint) as s, s.open("w") as p:
        with pytest.raises(errors.ArgumentError, match=why) as ei:
            p.attach_shm(**dict({"nslots": 4, "slot_size": 4096}, **kw))
        assert isinstance(ei.value, ValueError)
        assert p.shm is None
        seg = p.attach_shm(nslots=2, slot_size=4096)     # the handle is fine
        assert seg.nslots == 2


def test_attach_shm_above_max_buffer(daemon):
    with b2stream.Session(daemon.endpoint) as s, s.open("w") as p:
        with pytest.raises(errors.OversizeError, match="at most"):
            p.attach_shm(nslots=2, slot_size=p.max_buffer + 1)


def test_granted_slots_are_the_segments(make_daemon):
    d = make_daemon("shm: {slots: 3}\n")
    d.start()
    with b2stream.Session(d.endpoint) as s, s.open("w") as p:
        seg = p.attach_shm(nslots=100, slot_size=4096)
        assert seg.nslots == 3                          # the daemon's shm.slots
        slots = [seg.acquire(timeout=5) for _ in range(3)]
        assert sorted(x.index for x in slots) == [0, 1, 2]
        for x in slots:
            x.buffer[:4] = b"abcd"
            x.submit(4)
        assert p.flush().upto == 3


@pytest.mark.parametrize("kw, why", [
    ({"frame": 1.5}, r"frame must be an integer \(0 .. 2\*\*64-1\), not 1.5 of type float"),
    ({"frame": "7"}, "frame must be an integer"),
    ({"frame": True}, "frame must be an integer"),
    ({"frame": -1}, r"frame -1 is outside 0 .. 2\*\*64-1"),
    ({"frame": 2**64}, "is outside"),
    ({"ts": 2.5}, "ts must be an integer"),
    ({"ts": 2**63}, "ts .* is outside"),
    ({"user": [1, 2]}, "user must be a dict .* or bytes, not list"),
    ({"user": "text"}, "user must be a dict .* or bytes, not str"),
    ({"user": {"x": object()}}, "user map cannot be sent"),
    ({"user": b"u" * 4097}, "user part of 4097 bytes encoded; at most 4096"),
])
def test_record_arguments(daemon, kw, why):
    with b2stream.Session(daemon.endpoint) as s, s.open("w") as p:
        for send in (p.send, p.try_send):
            with pytest.raises(errors.ArgumentError, match=why):
                send(b"x" * 64, **kw)
        seg = p.attach_shm(nslots=1, slot_size=64)
        with pytest.raises(errors.ArgumentError, match=why):
            seg.send(b"x" * 64, **kw)
        with seg.acquire(timeout=5) as slot:
            with pytest.raises(errors.ArgumentError, match=why):
                slot.submit(64, **kw)
            slot.cancel()
        assert p.stats().sent == 0


def test_numpy_integers_are_integers(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("w") as p:
            p.send(b"y" * 64, frame=np.uint64(2**63 + 5), ts=np.int64(-3))
            p.flush()
        _, rec = s.read("w", 0, record=True)
    assert (rec.frame, rec.ts) == (2**63 + 5, -3)


def test_follow_read_in_every_mode(daemon):
    # img: b2nd <u2 images of 64x32; the same read whatever the follow's mode
    imgs = np.arange(3 * 64 * 32, dtype="<u2").reshape(3, 64, 32)
    with b2stream.Session(daemon.endpoint) as s:
        with s.open("img") as p:
            for a in imgs:
                p.send(a)
            p.flush()
        for mode in ("decompressed", "compressed", "notify"):
            with s.follow("img", mode=mode, timeout=10) as f:
                next(f)
                a = f.read(2)
                assert isinstance(a, np.ndarray) and a.shape == (64, 32), mode
                assert not a.flags.writeable
                np.testing.assert_array_equal(a, imgs[2])
                raw = f.read(2, decompressed=False)
                assert isinstance(raw, bytes) and raw == s.read("img", 2, decompressed=False)
                a, rec = f.read(1, record=True)
                np.testing.assert_array_equal(a, imgs[1])
                assert rec.xxh64 is not None
                with pytest.raises(errors.ChunkIndexError):
                    f.read(3)
        # a follow given a dtype reads in it, in every mode
        with s.follow("img", mode="notify", dtype="<u1", timeout=10) as f:
            assert f.read(0).shape == (64 * 32 * 2,)
        # a stream of bytes reads as bytes
        with s.open("w") as p:
            p.send(b"plain" * 10)
            p.flush()
        with s.follow("w", mode="notify", timeout=10) as f:
            assert f.read(0) == b"plain" * 10

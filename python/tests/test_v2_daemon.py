"""Protocol version 2 against the real daemon: the negotiation (a daemon
that speaks only version 1 gets the fallback), then records and series
metadata end to end, which need a daemon of version 2 and skip otherwise."""
from __future__ import annotations

import os

import numpy as np
import pytest
import zmq

import b2stream
from b2stream import Frame, errors
from b2stream import _wire as w


def _v2(s: b2stream.Session) -> None:
    if s.protocol_version == 1:
        pytest.skip("this daemon speaks protocol version 1 only: records and "
                    "series metadata are not served (no v2 daemon in this build)")


def _raw_hello_v2(endpoint: str) -> tuple[int, int, int]:
    """(type, version, ref_index or 0) of the daemon's answer to a bare
    version-2 HELLO."""
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    try:
        body = w.HELLO_F.pack(os.getpid(), 0) + w.wstr("raw")
        sock.send(w.header(w.HELLO, body, w.HELLO_PRODUCER, 1, 2))
        assert sock.poll(5000), "no answer to HELLO"
        hdr = sock.recv()
        _, version, mtype, flags, tag, _ = w.PREFIX.unpack_from(hdr)
        if mtype == w.ERROR:
            ref_index, code, _, _ = w.ERROR_F.unpack_from(hdr, 16)
            assert code == errors.CODES["B2S_E_PROTO_VERSION"] and flags & w.ERROR_CLOSED_SESSION
            return mtype, version, ref_index
        sock.send(w.header(w.BYE, version=version))
        return mtype, version, 0
    finally:
        sock.close()


def test_negotiation_with_this_daemon(daemon):
    mtype, version, ref_index = _raw_hello_v2(daemon.endpoint)
    with b2stream.Session(daemon.endpoint) as s:
        if mtype == w.ERROR:          # a version-1 daemon: the fallback
            assert (version, ref_index & 0xFF, ref_index >> 8) == (1, 1, 1)
            assert s.protocol_version == 1
        else:
            assert (mtype, version, s.protocol_version) == (w.WELCOME, 2, 2)
        assert s.ping() >= 0          # the session works in either version
        with s.open("w") as p:
            p.send(np.arange(256, dtype=np.uint32))
            assert p.flush().upto == 1
    with b2stream.Session(daemon.endpoint, protocol=1) as s:
        assert s.protocol_version == 1
        with s.follow("w", timeout=10) as f:
            index, data = next(f)
        assert index == 0 and bytes(data) == np.arange(256, dtype=np.uint32).tobytes()


def test_version_1_session_refuses_v2_calls(daemon):
    with b2stream.Session(daemon.endpoint, protocol=1) as s:
        with s.open("w") as p:
            with pytest.raises(errors.ProtocolError) as ei:
                p.send(b"abcd", frame=1)
            assert ei.value.code == errors.CODES["B2S_E_PROTO_VERSION"]
            with pytest.raises(errors.ProtocolError):
                p.set_meta(sample="x")
            p.send(b"abcd")               # the session goes on
            assert p.flush().upto == 1


def test_records_and_series_end_to_end(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        _v2(s)
        with s.open("w", meta={"sample": "Fe2O3", "energy_eV": 7112.0}) as p:
            for i in range(5):
                p.send(np.full(256, i, np.uint32), frame=1000 + i, ts=1700000000000000000 + i,
                       user={"exposure_ms": 10} if i % 2 else b"raw%d" % i)
            assert p.set_meta(energy_eV=None, temperature_K=80.5) == 5
            assert p.flush().upto == 5
        with s.follow("w", records=True, timeout=10) as f:
            got = [next(f) for _ in range(5)]
        for i, (index, data, rec) in enumerate(got):
            assert index == i and np.array_equal(np.frombuffer(data, np.uint32),
                                                  np.full(256, i, np.uint32))
            assert (rec.frame, rec.ts, rec.flags) == (1000 + i, 1700000000000000000 + i, 0)
            assert rec.user == ({"exposure_ms": 10} if i % 2 else b"raw%d" % i)
            assert rec.xxh64 is not None
        data, rec = s.read("w", 3, record=True)
        assert rec == got[3][2]
    with Frame(daemon.frame("w")) as fr:
        assert fr.series == {"sample": "Fe2O3", "temperature_K": 80.5}
        assert fr.record(3) == got[3][2]


def test_series_limits_are_errors(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        _v2(s)
        with s.open("w") as p:
            with pytest.raises(errors.SeriesError):
                p.set_meta({"k" * 65: 1})
            with pytest.raises(errors.SeriesError):
                p.set_meta(big="x" * (70 << 10))
            p.set_meta(ok=1)              # the handle stays usable

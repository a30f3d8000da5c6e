"""Protocol version 2 on the client side, without the real daemon: a
scripted stand-in daemon (a ZeroMQ ROUTER) checks what the package sends
against the reference bytes of docs/PROTOCOL.md 9.3 and answers as a
version-2 daemon would; records and error codes are decoded alone."""
from __future__ import annotations

import struct
import threading

import pytest
import zmq

import b2stream
from b2stream import _wire as w
from b2stream import errors
from b2stream import record as rec

H = bytes.fromhex
# PROTOCOL.md 9.3: the DATA's record (frame 1007, ts_ns, user {"exp": 10})
# and the same record as stored (xxh64 0x0123456789abcdef added)
REC_1007 = H("ef03000000000000" "15cd853dfe9c9717" "0000000000000000"
             "0b000000" "0600" "81a36578700a")
REC_1007_STORED = H("ef03000000000000" "15cd853dfe9c9717" "efcdab8967452301"
                    "0f000000" "0600" "81a36578700a")


class FakeDaemon:
    """Answers one session from a thread: HELLO in `version` (refusing
    higher ones as a daemon of that version does), OPEN, DATA (ACK each),
    META, FOLLOW (then `after_follow` messages), READ, FLUSH, CLOSE,
    UNFOLLOW.  Every message received is kept in `got`."""

    def __init__(self, version: int = 2, after_follow=None, vrange=None) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.endpoint = f"inproc://fake-{id(self)}"
        self.sock.bind(self.endpoint)
        self.version = version
        self.vrange = vrange or (1, version)
        self.after_follow = after_follow or (lambda v, tag: [])
        self.got: list[list[bytes]] = []
        self.data = 0
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def session(self, **kw) -> b2stream.Session:
        return b2stream.Session(self.endpoint, context=self.ctx, timeout=2, **kw)

    def _send(self, ident, frames) -> None:
        self.sock.send_multipart([ident] + frames)

    def _run(self) -> None:
        while not self.stop:
            if not self.sock.poll(50):
                continue
            ident, *frames = self.sock.recv_multipart()
            self.got.append(frames)
            _, v, mtype, flags, tag, _ = w.PREFIX.unpack_from(frames[0])
            for reply in self._answer(v, mtype, flags, tag, frames):
                self._send(ident, reply)

    def _answer(self, v, mtype, flags, tag, frames):
        hdr = lambda t, body=b"", f=0, tg=tag: w.header(t, body, f, tg, v)  # noqa: E731
        if mtype == w.HELLO:
            if v > self.version:
                body = w.ERROR_F.pack(self.vrange[0] + 256 * self.vrange[1], -957, 0, w.HELLO)
                return [[w.header(w.ERROR, body + w.wstr("version"), w.ERROR_CLOSED_SESSION,
                                  tag, 1)]]
            body = w.WELCOME_F.pack(1 << 20, 0, 5, 1, self.version) + w.wstr("fake 0.2")
            return [[hdr(w.WELCOME, body)]]
        if mtype == w.OPEN:
            return [[hdr(w.OPENED, w.OPENED_F.pack(1, 16, 1 << 20, 2, 1))]]
        if mtype == w.DATA:
            self.data += 1
            return [[hdr(w.ACK, w.ACK_F.pack(self.data, 0, 1, 1, 2), tg=0)]]
        if mtype == w.META:
            return [[hdr(w.META_OK, w.META_OK_F.pack(self.data, 1))]]
        if mtype == w.FOLLOW:
            start = w.FOLLOW_F.unpack_from(frames[0], 16)[0]
            return [[hdr(w.FOLLOWING, w.FOLLOWING_F.pack(start, start + 1, 2))]] + \
                self.after_follow(v, flags)
        if mtype == w.READ:
            index = w.READ_F.unpack_from(frames[0], 16)[0]
            f = w.CHUNK_RECORD if flags & w.READ_RECORD else 0
            out = [hdr(w.CHUNK, w.CHUNK_F.pack(index, 0, 3, 3), f), b"abc"]
            return [out + ([REC_1007_STORED] if f else [])]
        if mtype == w.FLUSH:
            return [[hdr(w.FLUSHED, w.FLUSHED_F.pack(self.data, 1))]]
        if mtype == w.CLOSE:
            return [[hdr(w.CLOSED, w.CLOSED_F.pack(self.data, 0, 1))]]
        if mtype == w.UNFOLLOW:
            return [[hdr(w.UNFOLLOWED, w.UNFOLLOWED_F.pack(8, 2))]]
        return []

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        self.sock.close(0)
        self.ctx.term()


@pytest.fixture
def fake():
    made = []

    def make(**kw) -> FakeDaemon:
        d = FakeDaemon(**kw)
        made.append(d)
        return d
    yield make
    for d in made:
        d.close()


def _notify_7(v, flags):
    return [[w.header(w.NOTIFY, w.NOTIFY_F.pack(7, 8, 2, 1), w.NOTIFY_RECORDS, 0, v),
             REC_1007_STORED]]


def test_producer_bytes_are_the_reference(fake):
    d = fake(after_follow=_notify_7)
    with d.session(name="cam0") as s:
        assert s.protocol_version == 2
        p = s.open("det1", "tmpl", meta={"gain": 1.5})
        for i in range(7):
            p.send(bytes([i]) * 10)
        p.send(b"x" * 10, frame=1007, ts=1700000000123456789, user={"exp": 10})
        assert p.set_meta(gain=None, sample="Fe2") == 8
        p.close()
    _, opened, *datas = d.got[:10]
    assert opened == [H("4232535702020100020000000000000004006465743104007" "46d706c"),
                      H("81a46761696ecb3ff8000000000000")]
    assert all(len(f) == 2 and f[0][6] == 0 for f in datas[:7])   # no record flag
    assert datas[7] == [H("42325357020301000000000000000000" "070000000000000001000000"),
                        b"x" * 10, REC_1007]
    assert d.got[10] == [H("42325357020e00000300000000000000" "01000000"),
                         H("82a46761696ec0a673616d706c65a3466532")]


def test_hello_bytes(fake):
    d = fake()
    with d.session(name="cam0", roles=("producer",)) as s:
        assert s.protocol_version == 2 and s.server == "fake 0.2"
    # 9.3's HELLO but for the pid and ping_ms (the package promises none)
    hello = d.got[0][0]
    assert hello[:16] == H("42325357020101000100000000000000")
    assert hello[20:] == bytes(4) + H("0400") + b"cam0"


def test_follow_notify_with_records(fake):
    d = fake(after_follow=_notify_7)
    with d.session() as s:
        with s.follow("det1", start=7, mode="notify", records=True, timeout=2) as f:
            index, data, r = next(f)
            assert d.got[1][0][:8] == H("423253570208") + struct.pack("<H", w.FOLLOW_RECORDS)
        assert (index, data) == (7, None)
        assert r == rec.Record(1007, 1700000000123456789, 0x0123456789ABCDEF, 0, {"exp": 10})
        assert not (r.gap or r.dropped or r.rejected)
        data, r2 = s.read("det1", 7, decompressed=False, record=True)
        assert data == b"abc" and r2 == r
        assert d.got[-1][0][6:8] == struct.pack("<H", w.READ_RECORD)


def test_follow_pushed_chunks_with_records(fake):
    gap = rec.RECORD.pack(9, 0, 5, rec.PRESENT_FRAME | rec.PRESENT_XXH64, 3, 0)

    def push(v, flags):
        assert flags & w.FOLLOW_RECORDS and flags & w.FOLLOW_PUSH_COMPRESSED
        f = w.CHUNK_PUSHED | w.CHUNK_RECORD
        return [[w.header(w.CHUNK, w.CHUNK_F.pack(0, 2, 3, 3), f, 0, v), b"abc", REC_1007_STORED],
                [w.header(w.CHUNK, w.CHUNK_F.pack(1, 2, 3, 3), f, 0, v), b"def", gap]]
    d = fake(after_follow=push)
    with d.session() as s:
        with s.follow("det1", mode="compressed", records=True, timeout=2) as f:
            assert next(f)[:2] == (0, b"abc")
            index, data, r = next(f)
    assert (index, data, r.frame, r.ts, r.xxh64, r.user) == (1, b"def", 9, None, 5, None)
    assert r.gap and r.dropped and not r.rejected


def test_missing_records_frame_ends_the_follow(fake):
    def bad(v, flags):       # flag set, records frame missing
        return [[w.header(w.NOTIFY, w.NOTIFY_F.pack(0, 1, 2, 1), w.NOTIFY_RECORDS, 0, v)]]
    d = fake(after_follow=bad)
    with d.session() as s:
        f = s.follow("det1", mode="notify", records=True, timeout=2)
        with pytest.raises(errors.ProtocolError, match="frames after the header"):
            next(f)


def test_fallback_to_version_1_and_v2_calls_refused(fake):
    d = fake(version=1)
    with d.session() as s:
        assert s.protocol_version == 1
        assert [m[0][4] for m in d.got] == [2, 1]          # HELLO v2, then v1
        p = s.open("det1")
        assert d.got[-1] == [d.got[-1][0]] and d.got[-1][0][4] == 1
        for call in (lambda: p.send(b"x", frame=1), lambda: p.set_meta(a=1),
                     lambda: s.open("det1", meta={"a": 1}),
                     lambda: s.follow("det1", records=True),
                     lambda: s.read("det1", 0, record=True)):
            with pytest.raises(errors.ProtocolError) as ei:
                call()
            assert ei.value.code == errors.CODES["B2S_E_PROTO_VERSION"]
        p.send(b"plain")
        assert p.flush().upto == 1


def test_no_version_in_common(fake):
    d = fake(version=1, vrange=(3, 4))
    with pytest.raises(errors.ProtocolError) as ei:
        d.session()
    assert ei.value.code == -957


def test_protocol_1_asked(fake):
    d = fake()
    with d.session(protocol=1) as s:
        assert s.protocol_version == 1
    assert d.got[0][0][4] == 1


def test_record_encode_decode():
    assert rec.encode(1007, 1700000000123456789, {"exp": 10}) == REC_1007
    assert rec.encode() == bytes(30)
    assert rec.encode(user=b"raw")[24:] == H("000000000300") + b"raw"
    assert rec.decode(REC_1007).user == {"exp": 10}
    assert rec.decode(rec.encode(user=b"\x81")).user == b"\x81"     # raw stays raw
    two = REC_1007_STORED + rec.encode(ts=-5)
    assert [r.ts for r in rec.decode_many(two, 2)] == [1700000000123456789, -5]
    with pytest.raises(ValueError):
        rec.encode(user=b"x" * 4097)
    with pytest.raises(ValueError):
        rec.encode(frame=-1)


@pytest.mark.parametrize("raw, why", [
    (bytes(29), "under"),
    (rec.RECORD.pack(0, 0, 0, 0x10, 0, 0), "unknown bits"),
    (rec.RECORD.pack(0, 0, 0, 0, 8, 0), "unknown bits"),
    (rec.RECORD.pack(5, 0, 0, 0, 0, 0), "without its present bit"),
    (rec.RECORD.pack(0, 0, 0, 0, 0, 2) + b"x", "does not fit"),
    (rec.RECORD.pack(0, 0, 0, 8, 0, 1) + b"\x01", "no map"),
    (rec.RECORD.pack(0, 0, 0, 8, 0, 2) + b"\x81\xa1", "user map"),
    (bytes(31), "after the record"),
])
def test_record_rules(raw, why):
    with pytest.raises(rec.RecordFrameError, match=why):
        rec.decode(raw)


def test_new_error_codes_by_family():
    c = errors.CODES
    assert (c["LOCKED"], c["FRAME_LATE"], c["FRAME_DUP"], c["LIMIT"]) == (-943, -942, -941, -940)
    assert (c["SERIES_FORMAT"], c["SERIES_SIZE"]) == (-939, -936)
    assert (c["RECORD"], c["CHECKSUM"]) == (-935, -932)
    expect = {"LOCKED": errors.LockedError, "LIMIT": errors.LimitError,
              "FRAME_LATE": errors.FrameLateError, "FRAME_DUP": errors.FrameDupError,
              "SERIES_FORMAT": errors.SeriesError, "SERIES_KEY": errors.SeriesError,
              "SERIES_VALUE": errors.SeriesError, "SERIES_SIZE": errors.SeriesError,
              "RECORD": errors.RecordError, "RECORD_USER": errors.RecordError,
              "PAIR": errors.IntegrityError, "CHECKSUM": errors.IntegrityError}
    for name, cls in expect.items():
        e = errors.error_for(c[name], "x")
        assert type(e) is cls and errors.code_name(e.code) == "B2S_E_" + name
    assert isinstance(errors.error_for(c["FRAME_LATE"]), errors.FrameOrderError)
    assert isinstance(errors.error_for(c["LIMIT"]), errors.BusyError)
    assert isinstance(errors.error_for(c["SERIES_KEY"]), ValueError)
    assert isinstance(errors.error_for(c["CHECKSUM"]), errors.FrameError)


def test_cluster_error_codes_by_family():
    c = errors.CODES
    assert (c["WRONG_RANK"], c["NEED_FRAME"], c["OBJ_CONFLICT"], c["STORE"]) == (-931, -930, -929, -928)
    for name, cls in (("WRONG_RANK", errors.WrongRankError), ("NEED_FRAME", errors.NeedFrameError),
                      ("OBJ_CONFLICT", errors.StoreError), ("STORE", errors.StoreError)):
        e = errors.error_for(c[name], "x")
        assert type(e) is cls and errors.code_name(e.code) == "B2S_E_" + name
    assert isinstance(errors.error_for(c["WRONG_RANK"]), errors.ClusterError)
    assert isinstance(errors.error_for(c["NEED_FRAME"]), ValueError)
    assert isinstance(errors.error_for(c["STORE"]), OSError)


def test_error_names_match_the_c_library():
    from b2stream import _native
    try:
        _native.lib()
    except OSError:
        pytest.skip("libb2s_py not built")
    for name, code in errors.CODES.items():
        assert _native.strerror(code) != _native.strerror(-12345), name
    assert "checksum" in _native.strerror(errors.CODES["B2S_E_CHECKSUM"])
    assert "late" in _native.strerror(errors.CODES["B2S_E_FRAME_LATE"])
    assert "rank" in _native.strerror(errors.CODES["B2S_E_WRONG_RANK"])

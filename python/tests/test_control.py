"""b2stream.Control (python/b2stream/control.py): the event-stream reader on
exact bytes, the arguments it refuses before any request, token files,
and the real daemon's HTTP listener: one that does not serve the
acquisition API is ControlUnreachable with what it answered, never a
crash or a silent empty result."""
from __future__ import annotations

import os
import stat
import subprocess
import time

import pytest

from b2stream import Control, ControlError, ControlUnreachable, WaitTimeout
from b2stream.control import _SseReader, _error_from, read_token_file

from conftest import CLI, free_port

TOKEN = "abcdefghijklmnopqrstuvwxyz0123456789-_AB"


def _events(text: bytes, step: int):
    r = _SseReader()
    out = []
    for i in range(0, len(text), step):
        out += list(r.feed(text[i:i + step]))
    return r, [(e.event, e.id, e.data) for e in out]


def test_sse_reader():
    text = (b"\xef\xbb\xbfretry: 2000\n: keepalive\n\n"
            b"id: 5f0c2a9e4b7d1c3a-1\nevent: started\ndata: {\"server\":\"x\"}\n\n"
            b"id: 5f0c2a9e4b7d1c3a-2\r\nevent: progress\r\ndata:{\"a\":1}\r\n\r\n"
            b"data: one\rdata: two\r\r"
            b"event: ignored\n\n"
            b"data: cut")
    want = [("started", "5f0c2a9e4b7d1c3a-1", {"server": "x"}),
            ("progress", "5f0c2a9e4b7d1c3a-2", {"a": 1}),
            ("message", "5f0c2a9e4b7d1c3a-2", "one\ntwo")]
    for step in (1, 2, 5, len(text)):
        r, got = _events(text, step)
        assert got == want, step
        assert r.retry_ms == 2000
        assert r.last_id == "5f0c2a9e4b7d1c3a-2"
    r = _SseReader()
    with pytest.raises(ControlUnreachable, match="line over 64 KiB"):
        list(r.feed(b"x" * (70 << 10)))


def test_error_bodies():
    e = _error_from(409, b'{"error":{"code":"files_exist","message":"x exists",'
                         b'"status":409,"field":"file_template"}}')
    assert type(e) is ControlError
    assert (e.code, e.status, e.message, e.field) == ("files_exist", 409, "x exists",
                                                      "file_template")
    assert str(e) == "files_exist (409): x exists (field file_template)"
    e = _error_from(504, b'{"error":{"code":"wait_timeout","message":"ran out",'
                         b'"status":504},"acquisition":{"id":"a","state":"writing",'
                         b'"counters":{"frames_committed":7}}}')
    assert isinstance(e, WaitTimeout) and isinstance(e, TimeoutError)
    assert e.acquisition.state == "writing" and e.acquisition.committed == 7
    e = _error_from(404, b"<html>Not Found</html>")
    assert isinstance(e, ControlUnreachable)
    assert "HTTP 404, not an error of the acquisition API" in str(e)


def test_arguments():
    c = Control("http://127.0.0.1:1")
    with pytest.raises(ValueError, match="not an acquisition id"):
        c.get("../x")
    with pytest.raises(ValueError, match="not an acquisition id"):
        c.stop("a/stop")
    with pytest.raises(ValueError, match="exactly one of stream and source"):
        c.arm("a", directory="/d")
    with pytest.raises(ValueError, match="exactly one of stream and source"):
        c.arm("a", directory="/d", stream="s", source="tcp://x:1")
    with pytest.raises(ValueError, match="template goes with stream"):
        c.arm("a", directory="/d", source="tcp://x:1", template="t")
    with pytest.raises(ValueError, match="exactly one of committed and state"):
        c.wait("a")
    with pytest.raises(ValueError, match="not http"):
        Control("ftp://x")
    with pytest.raises(ValueError, match="not a token"):
        Control(token="short")


def test_unreachable():
    c = Control(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ControlUnreachable, match="cannot reach"):
        c.list()
    with pytest.raises(ControlUnreachable, match="cannot reach"):
        c.wait("a", state="done", timeout=0)
    with pytest.raises(ControlUnreachable, match="cannot reach"):
        next(c.events())


def test_token_file(tmp_path):
    f = tmp_path / "tokens"
    f.write_text(f"# tokens\n\n{TOKEN} alice\nsecond-token-is-never-read-xxxxxxxxxxxx\n")
    assert read_token_file(str(f)) == TOKEN
    assert Control("http://127.0.0.1:1", token_file=str(f))._token == TOKEN
    os.environ["B2STREAM_TOKEN_FILE"] = str(f)
    try:
        assert Control("http://127.0.0.1:1")._token == TOKEN
    finally:
        del os.environ["B2STREAM_TOKEN_FILE"]
    f.write_text("short alice\n")
    with pytest.raises(ValueError, match="line 1: not a token"):
        read_token_file(str(f))
    f.write_text("# nothing\n")
    with pytest.raises(ValueError, match="no token"):
        read_token_file(str(f))


def test_token_from_cli(tmp_path):
    """The file `b2stream token` writes is what Control reads."""
    if not CLI:
        pytest.skip("B2S_CLI does not name the built b2stream")
    f = tmp_path / "tokens"
    out = subprocess.run([CLI, "token", str(f), "bluesky"], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    assert read_token_file(str(f)) == out and len(out) == 43


def test_daemon_without_acquisitions(make_daemon):
    """A listener without acquisitions: configured: GET /api/v1 says so, and
    every other route is the contract's acquisitions_off; a URL that is
    not the API's is ControlUnreachable with what the listener said."""
    port = free_port()
    d = make_daemon(f'http: {{listen: "127.0.0.1:{port}"}}\n')
    d.start()
    c = Control(f"http://127.0.0.1:{port}", token=TOKEN)
    deadline = time.monotonic() + 20
    while True:
        try:
            api = c.api()
            break
        except ControlUnreachable:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert api["api"] == "1.0" and api["acquisitions"] is False
    for call in (c.list, lambda: c.get("a"), lambda: c.stop("a"),
                 lambda: c.abort("a"), lambda: c.files("a"),
                 lambda: c.arm("a", stream="w", directory="/tmp"),
                 lambda: c.wait("a", state="done", timeout=0)):
        with pytest.raises(ControlError) as e:
            call()
        assert (e.value.code, e.value.status) == ("acquisitions_off", 404)
    other = Control(f"http://127.0.0.1:{port}/thumb", token=TOKEN)
    with pytest.raises(ControlUnreachable, match="HTTP 404, not an error of the acquisition API"):
        other.list()
    assert d.stop() == 0

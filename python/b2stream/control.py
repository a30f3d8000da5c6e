"""The client of the acquisition control API (docs/ACQUISITIONS.md section
9): :class:`Control` arms, lists, reads, stops, aborts and waits for
acquisitions over the daemon's HTTP listener, and follows its server-sent
events, with the standard library only (urllib for requests, http.client
for the event stream).

Every error answer of the API (section 9.3) raises :class:`ControlError`
carrying its stable ``code``, the HTTP ``status``, the daemon's
``message``, the ``field`` at fault and, for a wait, the ``acquisition``
as it was; a wait that ran out raises its subclass :class:`WaitTimeout`.
A daemon that cannot be reached, or an answer that is not one of the API,
raises :class:`ControlUnreachable`."""
from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Iterator

__all__ = ["Control", "ControlError", "WaitTimeout", "ControlUnreachable",
           "Acquisition", "Event", "read_token_file", "DEFAULT_URL"]

DEFAULT_URL = "http://127.0.0.1:9464"
_MAX_ANSWER = 16 << 20          # bytes of one answer
_MAX_LINE = 64 << 10            # bytes of one event-stream line
_MAX_DATA = 1 << 20             # bytes of one event's data
_WAIT_SLICE = 60.0              # the wait route's longest timeout (9.4)


class ControlError(Exception):
    """An error answer of the control API: ``code`` (section 12, stable),
    ``status``, ``message``, ``field`` (or None), ``acquisition`` (a wait's
    error: the acquisition as it was, or None)."""

    def __init__(self, code: str, status: int, message: str,
                 field: str | None = None,
                 acquisition: dict | None = None) -> None:
        self.code, self.status, self.message = code, status, message
        self.field, self.acquisition = field, acquisition
        text = f"{code} ({status}): {message}"
        if field:
            text += f" (field {field})"
        super().__init__(text)


class WaitTimeout(ControlError, TimeoutError):
    """504 ``wait_timeout``: the wait's time ran out; ``acquisition`` says
    how far it got."""


class ControlUnreachable(ConnectionError):
    """No daemon answered, or what answered is not the acquisition API."""


class Acquisition(dict):
    """An acquisition object (section 9.5) as a dict, with ``status``: the
    HTTP status it came with (201 a new arm, 200 a repeated one, 202 a
    stop or abort that started the end)."""

    status: int = 200

    @property
    def id(self) -> str:
        return self["id"]

    @property
    def state(self) -> str:
        return self["state"]

    @property
    def committed(self) -> int:
        return self["counters"]["frames_committed"]


@dataclass
class Event:
    """One server-sent event: ``id`` (EPOCH-SEQ), ``event`` (armed,
    writing, progress, file, loss, closing, end, events_lost, started),
    ``data`` (the decoded JSON, or the text when it is not JSON)."""
    id: str
    event: str
    data: Any


def _token_ok(t: str) -> bool:
    ok = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=")
    return 32 <= len(t) <= 512 and set(t) <= ok


def read_token_file(path: str) -> str:
    """The token of a token file: the first word of its first line that is
    not blank or a ``#`` comment (the daemon's ``http.token_file`` format,
    as ``b2stream token`` writes it)."""
    with open(path, encoding="ascii", errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            tok = line.split()[0]
            if not _token_ok(tok):
                raise ValueError(f"{path}: line {n}: not a token (32 to 512 of "
                                 "A-Z a-z 0-9 - . _ ~ + / =)")
            return tok
    raise ValueError(f"{path}: no token in the file")


def _check_id(acq_id: str) -> str:
    ok = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
    if (not isinstance(acq_id, str) or not 1 <= len(acq_id.encode()) <= 64
            or acq_id.startswith(".") or not set(acq_id) <= ok):
        raise ValueError(f"{acq_id!r} is not an acquisition id (1 to 64 of "
                         "A-Z a-z 0-9 . _ -, not starting with '.')")
    return acq_id


def _error_from(status: int, body: bytes) -> Exception:
    try:
        err = json.loads(body)["error"]
        code = err["code"]
        if not isinstance(code, str) or not code:
            raise TypeError
    except (ValueError, KeyError, TypeError):
        head = body[:120].decode("utf-8", "replace")
        return ControlUnreachable(f"HTTP {status}, not an error of the "
                                  f"acquisition API: {head!r}")
    cls = WaitTimeout if code == "wait_timeout" else ControlError
    acq = json.loads(body).get("acquisition")   # beside "error" (WaitError)
    return cls(code, status, str(err.get("message", "")),
               err.get("field") if isinstance(err.get("field"), str) else None,
               Acquisition(acq) if isinstance(acq, dict) else None)


class Control:
    """The control API of one daemon.

    ``url``: its HTTP listener (default ``$B2STREAM_URL``, else
    ``http://127.0.0.1:9464``); ``token`` or ``token_file`` (default
    ``$B2STREAM_TOKEN_FILE``): the bearer token sent with every request;
    ``timeout``: seconds for a request that is not a wait or the event
    stream."""

    def __init__(self, url: str | None = None, *, token: str | None = None,
                 token_file: str | None = None, timeout: float = 30.0) -> None:
        url = url or os.environ.get("B2STREAM_URL") or DEFAULT_URL
        p = urllib.parse.urlsplit(url)
        if p.scheme not in ("http", "https") or not p.netloc or p.query or p.fragment:
            raise ValueError(f"{url!r} is not http://HOST:PORT")
        self.url = url.rstrip("/")
        if token is None:
            token_file = token_file or os.environ.get("B2STREAM_TOKEN_FILE") or None
            if token_file:
                token = read_token_file(token_file)
        elif not _token_ok(token):
            raise ValueError("not a token (32 to 512 of A-Z a-z 0-9 - . _ ~ + / =)")
        self._token = token
        self.timeout = timeout

    # ---- requests ----------------------------------------------------------

    def _headers(self, accept: str = "application/json") -> dict:
        h = {"Accept": accept}
        if self._token:
            h["Authorization"] = "Bearer " + self._token
        return h

    def _call(self, method: str, path: str, body: Any = None,
              query: dict | None = None, timeout: float | None = None) -> tuple[int, Any]:
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(
                {k: v for k, v in query.items() if v is not None})
        data = None
        headers = self._headers()
        if body is not None:
            data = json.dumps(body, allow_nan=False).encode()
            headers["Content-Type"] = "application/json"
        elif method == "POST":
            data = b""
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as r:
                status, raw = r.status, r.read(_MAX_ANSWER + 1)
        except urllib.error.HTTPError as e:
            raw = e.read(_MAX_ANSWER + 1)
            raise _error_from(e.code, raw) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise ControlUnreachable(f"cannot reach {self.url}: {reason}") from None
        if len(raw) > _MAX_ANSWER:
            raise ControlUnreachable(f"the answer is over {_MAX_ANSWER} bytes")
        try:
            return status, json.loads(raw)
        except ValueError:
            raise ControlUnreachable(f"HTTP {status}: the answer is not JSON") from None

    def _acq(self, method: str, path: str, **kw) -> Acquisition:
        status, o = self._call(method, path, **kw)
        if not isinstance(o, dict) or "id" not in o:
            raise ControlUnreachable(f"HTTP {status}: the answer is not an acquisition")
        a = Acquisition(o)
        a.status = status
        return a

    # ---- routes ------------------------------------------------------------

    def api(self) -> dict:
        """``GET /api/v1``: version, limits, whether auth is on, the newest
        event id."""
        return self._call("GET", "/api/v1")[1]

    def arm(self, id: str, *, directory: str, stream: str | None = None,
            source: str | None = None, template: str | None = None,
            create_directory: bool | None = None,
            file_template: str | None = None, frames: int | None = None,
            frames_per_file: int | None = None,
            first_frame: int | None = None, series: dict | None = None,
            overwrite: str | None = None,
            on_loss: str | None = None) -> Acquisition:
        """Arm (section 3.1): exactly one of ``stream`` (with ``template``)
        and ``source``; members left None take the daemon's defaults.  The
        answer's ``status`` is 201 for a new acquisition, 200 for a
        repeated arm (section 6.2)."""
        if (stream is None) == (source is None):
            raise ValueError("give exactly one of stream and source")
        if template is not None and stream is None:
            raise ValueError("template goes with stream")
        inp: dict = {"stream": stream} if stream is not None else {"source": source}
        if template is not None:
            inp["template"] = template
        body = {"id": _check_id(id), "input": inp, "directory": directory}
        for k, v in (("create_directory", create_directory),
                     ("file_template", file_template), ("frames", frames),
                     ("frames_per_file", frames_per_file),
                     ("first_frame", first_frame), ("series", series),
                     ("overwrite", overwrite), ("on_loss", on_loss)):
            if v is not None:
                body[k] = v
        return self.arm_body(body)

    def arm_body(self, body: dict) -> Acquisition:
        """Arm with a whole request body, as section 3.1 has it."""
        return self._acq("POST", "/api/v1/acquisitions", body=body)

    def list(self, state: str | None = None) -> list[Acquisition]:
        """Every held acquisition (all pages), in the order they were
        armed; ``state``: a comma-separated list of states, or ``active``."""
        out: list[Acquisition] = []
        after = None
        while True:
            _, page = self._call("GET", "/api/v1/acquisitions",
                                 query={"state": state, "after": after})
            out += [Acquisition(a) for a in page["acquisitions"]]
            after = page.get("next")
            if not after:
                return out

    def get(self, id: str) -> Acquisition:
        """One acquisition (``GET /api/v1/acquisitions/ID``)."""
        return self._acq("GET", f"/api/v1/acquisitions/{_check_id(id)}")

    def files(self, id: str, channel: str | None = None) -> list[dict]:
        """Its file objects (all pages), in channel then number order."""
        out: list[dict] = []
        query: dict = {"channel": channel}
        while True:
            _, page = self._call("GET", f"/api/v1/acquisitions/{_check_id(id)}/files",
                                 query=query)
            out += page["files"]
            nxt = page.get("next")
            if not nxt:
                return out
            query = {"channel": nxt["channel"], "after": nxt["after"]}

    def stop(self, id: str) -> Acquisition:
        """Stop: drain, commit, close (section 7.1); the answer is
        ``closing`` (202) or the acquisition as it was (200)."""
        return self._acq("POST", f"/api/v1/acquisitions/{_check_id(id)}/stop")

    def abort(self, id: str) -> Acquisition:
        """Abort: no more frames, keep what is committed (section 7.2)."""
        return self._acq("POST", f"/api/v1/acquisitions/{_check_id(id)}/abort")

    def wait(self, id: str, *, committed: int | None = None,
             state: str | None = None, timeout: float = 10.0,
             allow_loss: bool | None = None) -> Acquisition:
        """Wait until ``frames_committed >= committed`` or ``state`` is
        reached (writing, closing, done, aborted, failed, interrupted,
        ended).  ``timeout`` in seconds, in all: longer than 60 s is asked
        again every 60 s.  Raises :class:`WaitTimeout` when it runs out,
        :class:`ControlError` ``wait_unreachable`` or ``frames_lost``."""
        if (committed is None) == (state is None):
            raise ValueError("give exactly one of committed and state")
        deadline = time.monotonic() + timeout
        while True:
            left = max(0.0, deadline - time.monotonic())
            part = min(left, _WAIT_SLICE)
            q = {"committed": committed, "state": state, "timeout": f"{part:.3f}",
                 "allow_loss": None if allow_loss is None else str(bool(allow_loss)).lower()}
            try:
                return self._acq("GET", f"/api/v1/acquisitions/{_check_id(id)}/wait",
                                 query=q, timeout=part + 15)
            except WaitTimeout:
                if left <= part:
                    raise

    def events(self, acquisition: str | None = None,
               last_event_id: str | None = None, *,
               reconnect: bool = True) -> Iterator[Event]:
        """The server-sent events (section 10), as :class:`Event` items.
        A dropped connection is made again with ``Last-Event-ID`` (after
        the stream's ``retry`` delay), so no event still held is missed;
        ``reconnect=False`` ends the iterator instead.  Close it (or leave
        the loop) to disconnect."""
        if acquisition is not None:
            _check_id(acquisition)
        parts = urllib.parse.urlsplit(self.url)
        path = "/api/v1/events"
        if acquisition is not None:
            path += "?acquisition=" + acquisition
        reader = _SseReader()
        if last_event_id:
            reader.last_id = last_event_id
        first = True
        while True:
            conn_cls = (http.client.HTTPSConnection if parts.scheme == "https"
                        else http.client.HTTPConnection)
            # the daemon comments every 5 s: 30 s of silence is a dead link
            conn = conn_cls(parts.netloc, timeout=30)
            try:
                headers = self._headers("text/event-stream")
                if reader.last_id:
                    headers["Last-Event-ID"] = reader.last_id
                try:
                    conn.request("GET", path, headers=headers)
                    r = conn.getresponse()
                except (OSError, http.client.HTTPException) as e:
                    if first or not reconnect:
                        raise ControlUnreachable(f"cannot reach {self.url}: {e}") from None
                    r = None
                if r is not None:
                    if r.status != 200:
                        raise _error_from(r.status, r.read(64 << 10))
                    first = False
                    reader.reset_stream()
                    try:
                        while True:
                            chunk = r.read1(65536)
                            if not chunk:
                                break
                            yield from reader.feed(chunk)
                    except (OSError, http.client.HTTPException):
                        pass
            finally:
                conn.close()
            if not reconnect:
                return
            time.sleep(reader.retry_ms / 1000 if reader.retry_ms is not None else 2.0)


class _SseReader:
    """WHATWG HTML's event-stream interpretation, bounded."""

    def __init__(self) -> None:
        self.last_id = ""
        self.retry_ms: int | None = None
        self.reset_stream()

    def reset_stream(self) -> None:
        self._buf = b""
        self._data: list[str] = []
        self._event = ""
        self._bom = True
        self._cr = False

    def feed(self, chunk: bytes) -> Iterator[Event]:
        if self._bom:
            if len(self._buf + chunk) < 3 and b"\xef\xbb\xbf".startswith(self._buf + chunk):
                self._buf += chunk
                return
            chunk = self._buf + chunk
            self._buf = b""
            if chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
            self._bom = False
        if self._cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._cr = False
        buf = self._buf + chunk
        lines = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self._buf = lines.pop()
        if buf.endswith(b"\r"):
            self._cr = True
        if len(self._buf) > _MAX_LINE:
            raise ControlUnreachable("the event stream has a line over 64 KiB")
        for line in lines:
            ev = self._line(line.decode("utf-8", "replace"))
            if ev is not None:
                yield ev

    def _line(self, line: str) -> Event | None:
        if line == "":
            if not self._data:
                self._event = ""
                return None
            text = "\n".join(self._data)
            self._data = []
            name, self._event = self._event or "message", ""
            try:
                data = json.loads(text)
            except ValueError:
                data = text
            return Event(self.last_id, name, data)
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            if sum(len(d) for d in self._data) > _MAX_DATA:
                raise ControlUnreachable("the event stream has an event over 1 MiB")
        elif name == "id" and "\0" not in value:
            self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

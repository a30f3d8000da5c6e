"""The connection under a session: one ZeroMQ DEALER socket to b2streamd
(docs/PROTOCOL.md sections 1, 4.1, 4.5, 4.6), its message pump and the
requests that need no producer or follow (PING, STATS).

One message pump per session: every message read goes through
``_dispatch``, which routes it to the producer (by handle) or follow (by
follow id) it is about, or parks it as the reply a request waits for (by
tag).  Waiting calls loop on ``_pump``, so ACK, DROPPED and pushed chunks
are never lost while a request is outstanding.

A session, and the producers and follows opened on it, belong to one
thread at a time; use one session per thread."""
from __future__ import annotations

import json
import os
import time
from typing import Any, Iterable

import zmq

from . import _wire as w
from .errors import (AuthError, B2StreamError, ClosedError, NoEntryError,
                     NoStreamError, ProtocolError, TimeoutError, error_for, naming)
from .keys import is_key, public_key, read_key

CODE_PROTO_VERSION = -957      # B2S_E_PROTO_VERSION

#: Environment variable naming the daemon's endpoint (as in libclient).
ENDPOINT_ENV = "B2STREAM_ENDPOINT"
DEFAULT_TIMEOUT = 5.0
_EV_AUTH = (zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
            | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL)
_EV_GONE = zmq.EVENT_DISCONNECTED
_SLICE = 0.5          # longest single poll: KeyboardInterrupt and PING stay timely


def default_endpoint() -> str:
    """$B2STREAM_ENDPOINT, else the socket the shipped configuration binds
    (ipc://$RUNTIME_DIRECTORY/b2streamd.sock, else ipc://run/b2streamd.sock)."""
    env = os.environ.get(ENDPOINT_ENV)
    if env:
        return env
    run = os.environ.get("RUNTIME_DIRECTORY")
    return f"ipc://{run}/b2streamd.sock" if run else "ipc://run/b2streamd.sock"


def _key(value: str | os.PathLike | None) -> str | None:
    """A Z85 key given as the key itself or as the path of a key file."""
    if value is None:
        return None
    text = os.fspath(value)
    return text if is_key(text) else read_key(text)


class _Deadline:
    """Monotonic deadline; timeout None waits without limit."""

    def __init__(self, timeout: float | None) -> None:
        self.end = None if timeout is None else time.monotonic() + max(0.0, timeout)

    def left(self) -> float | None:
        return None if self.end is None else max(0.0, self.end - time.monotonic())

    def passed(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end


class _DeadlineNow:
    """A deadline that has passed: take only what is queued."""

    def left(self) -> float:
        return 0.0

    def passed(self) -> bool:
        return True


class _SessionTimeout:
    """The default of timeout arguments: the session's request timeout."""

    def __repr__(self) -> str:
        return "<session timeout>"


#: default of timeout arguments: the session's request timeout
DEFAULT = _SessionTimeout()

#: what each request asks, for messages (no message type numbers)
_ASKS = {w.HELLO: "the handshake (HELLO)", w.OPEN: "opening the stream (OPEN)",
         w.FLUSH: "the flush (FLUSH)", w.CLOSE: "closing the handle (CLOSE)",
         w.SHM_ATTACH: "the shared-memory request (SHM_ATTACH)",
         w.FOLLOW: "the follow (FOLLOW)", w.READ: "the chunk read (READ)",
         w.UNFOLLOW: "ending the follow (UNFOLLOW)", w.STATS: "the statistics (STATS)",
         w.PING: "the ping (PING)", w.META: "the series metadata change (META)"}


class Connection:
    """A session's connection (see :class:`b2stream.Session`).

    ``endpoint``: ``ipc://PATH`` or ``tcp://HOST:PORT`` (None: the default
    endpoint).  ``timeout``: seconds every request (and the handshake) may
    take.  For a tcp:// endpoint of a daemon configured with ``curve:``,
    give ``curve_server_key`` (the daemon's public key) and
    ``curve_secret_key`` (this client's; its public key is derived unless
    ``curve_public_key`` is given): each a Z85 key or the path of a key
    file as ``b2stream keygen`` writes it.  ``protocol``: the highest
    protocol version to ask for (2: records and series metadata; the
    session falls back to 1 with a daemon that speaks only 1, see
    :attr:`protocol_version`).
    """

    def __init__(self, endpoint: str | None = None, *, name: str = "",
                 roles: Iterable[str] = ("producer", "consumer"),
                 timeout: float = DEFAULT_TIMEOUT,
                 curve_server_key: str | os.PathLike | None = None,
                 curve_secret_key: str | os.PathLike | None = None,
                 curve_public_key: str | os.PathLike | None = None,
                 context: zmq.Context | None = None,
                 protocol: int = w.VERSION_MAX) -> None:
        self.endpoint = endpoint or default_endpoint()
        self.name = name
        self.timeout = float(timeout)
        if not 1 <= protocol <= w.VERSION_MAX:
            raise ValueError(f"protocol must be 1 .. {w.VERSION_MAX}")
        self._protocol_max = protocol
        #: the version the session speaks (docs/PROTOCOL.md 8.1)
        self.protocol_version = protocol
        self._roles = set(roles)
        bad = self._roles - {"producer", "consumer"}
        if bad:
            raise ValueError(f"unknown roles {sorted(bad)}")
        self._curve = None
        if curve_server_key is not None:
            secret = _key(curve_secret_key)
            if secret is None:
                raise ValueError("curve_server_key needs curve_secret_key")
            public = _key(curve_public_key) or public_key(secret)
            self._curve = (_key(curve_server_key), secret, public)
        self._ctx = context or zmq.Context.instance()
        self._sock: zmq.Socket | None = None
        self._monitor: zmq.Socket | None = None
        self._next_tag = 0
        self._waiting: set[int] = set()
        self._replies: dict[int, Any] = {}
        self.producers: dict[int, Any] = {}   # handle -> Producer
        self.follows: dict[int, Any] = {}     # follow id -> Follow
        self._dead: B2StreamError | None = None
        self._last_send = time.monotonic()
        self._connect(_Deadline(self.timeout), check_path=True)

    # -- connection --------------------------------------------------------------

    def _connect(self, deadline: _Deadline, check_path: bool) -> None:
        if check_path and self.endpoint.startswith("ipc://"):
            path = self.endpoint[len("ipc://"):]
            if not os.path.exists(path):
                raise NoEntryError(-2, f"{path}: no such socket (is b2streamd running?)")
        sock = self._ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDTIMEO, int(self.timeout * 1000))
        events = _EV_GONE
        if self._curve:
            server, secret, public = self._curve
            sock.curve_serverkey = server.encode()
            sock.curve_secretkey = secret.encode()
            sock.curve_publickey = public.encode()
            # a refused CurveZMQ handshake sends nothing: watch for it
            events |= _EV_AUTH
        # a daemon that dies closes the connection: the monitor says so at
        # once, so a call waiting on it ends with ClosedError, not a timeout
        self._monitor = sock.get_monitor_socket(events)
        self._poller = zmq.Poller()
        self._poller.register(sock, zmq.POLLIN)
        self._poller.register(self._monitor, zmq.POLLIN)
        sock.connect(self.endpoint)
        self._sock = sock
        self._dead = None
        self._last_recv = time.monotonic()
        self._probe_sent: float | None = None
        flags = ((w.HELLO_PRODUCER if "producer" in self._roles else 0)
                 | (w.HELLO_CONSUMER if "consumer" in self._roles else 0))
        try:
            mflags, hdr, _ = self._hello(flags, deadline)
        except BaseException:
            self._close_socket()
            raise
        (self.max_buffer, self.daemon_timeout_ms, self.session_id,
         vmin, vmax) = w.WELCOME_F.unpack_from(hdr, 16)
        self.server, _ = w.rstr(hdr, 16 + w.WELCOME_F.size)
        self.shm_offered = bool(mflags & w.WELCOME_SHM)

    def _hello(self, flags: int, deadline: _Deadline):
        """HELLO in the highest version asked for; after a daemon's ERROR
        B2S_E_PROTO_VERSION (its range in ref_index, PROTOCOL.md 8), HELLO
        again in the highest version both speak.  Sets protocol_version
        from the WELCOME's prefix."""
        body = w.HELLO_F.pack(os.getpid(), 0) + w.wstr(self.name)
        self.protocol_version = self._protocol_max
        try:
            reply = self._request_all(w.HELLO, body, flags, w.WELCOME, deadline)
        except ProtocolError as exc:
            vmin, vmax = exc.ref_index & 0xFF, exc.ref_index >> 8 & 0xFF
            v = min(vmax, self.protocol_version - 1)
            if exc.code != CODE_PROTO_VERSION or not (v >= 1 and v >= vmin):
                raise
            # the refusal ended no session of ours: ask again in v
            self._dead = None
            self.protocol_version = v
            reply = self._request_all(w.HELLO, body, flags, w.WELCOME, deadline)
        if reply[3] > self.protocol_version:
            raise ProtocolError(-958, f"WELCOME in version {reply[3]}, above "
                                      f"the {self.protocol_version} asked for")
        self.protocol_version = reply[3]
        return reply[:3]

    def _hdr(self, mtype: int, body: bytes = b"", flags: int = 0, tag: int = 0) -> bytes:
        """A header in the session's version."""
        return w.header(mtype, body, flags, tag, self.protocol_version)

    def _need_v2(self, what: str) -> None:
        if self.protocol_version < 2:
            raise ProtocolError(CODE_PROTO_VERSION,
                                f"{what} needs protocol version 2; the daemon "
                                f"speaks version {self.protocol_version}")

    def _close_monitor(self) -> None:
        if self._monitor is not None and self._sock is not None:
            try:
                self._sock.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
            self._monitor = None

    def _close_socket(self, linger_ms: int = 0) -> None:
        self._close_monitor()
        if self._sock is not None:
            self._sock.close(linger=linger_ms)
            self._sock = None

    def reconnect(self, timeout: float | None = None) -> None:
        """Start a new session on the same endpoint (after the daemon ended
        the old one, e.g. it restarted).  Producers of the old session are
        closed; follows must follow again (``Follow`` does it when asked
        to resume).  Waits up to timeout (default: the request timeout) for
        the daemon to answer."""
        self._close_socket()
        err = self._dead or ClosedError(-950, "session replaced")
        for p in list(self.producers.values()):
            p._on_closed_by(err)
        self.producers.clear()
        self._waiting.clear()
        self._replies.clear()
        self._connect(_Deadline(self.timeout if timeout is None else timeout),
                      check_path=False)

    @property
    def alive(self) -> bool:
        """False once the daemon ended the session or it was closed."""
        return self._sock is not None and self._dead is None

    def close(self) -> None:
        """Say BYE and close the socket (waiting at most 1 s to deliver it).
        Producers and follows still open are dropped without their results:
        close them first.  Idempotent."""
        if self._sock is None:
            return
        if self._dead is None:
            try:
                self._sock.send(self._hdr(w.BYE), zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
        self._close_socket(linger_ms=1000)
        self._dead = self._dead or ClosedError(-950, "session closed")

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._close_socket()
        except Exception:
            pass

    # -- sending and the pump --------------------------------------------------------

    def _usable(self) -> None:
        if self._dead is not None:
            raise self._dead
        if self._sock is None:
            raise ClosedError(-950, "session closed")

    def _tag(self) -> int:
        self._next_tag = self._next_tag % 0xFFFFFFFF + 1
        return self._next_tag

    def _send(self, frames: list, copy: bool = True) -> None:
        self._usable()
        try:
            self._sock.send_multipart(frames, copy=copy)  # type: ignore[union-attr]
        except zmq.Again:
            raise TimeoutError(-951, "the daemon does not take messages (send timed out)")
        self._last_send = time.monotonic()

    def _request(self, mtype: int, body: bytes, flags: int, want: int,
                 deadline: _Deadline | None = None, extra: list | None = None,
                 about: str = ""):
        """Send a request (header, then the extra frames) and wait for its
        direct reply: (flags, header, payload frame or None).  Raises the
        daemon's ERROR as an exception."""
        rflags, hdr, frames, _ = self._request_all(mtype, body, flags, want, deadline, extra,
                                                   about)
        return rflags, hdr, (frames[0] if frames else None)

    def _request_all(self, mtype: int, body: bytes, flags: int, want: int,
                     deadline: _Deadline | None = None, extra: list | None = None,
                     about: str = ""):
        """As _request; returns (flags, header, frames after the header,
        the reply's version).  about: the stream the request names, put in
        the message of a NoStreamError."""
        deadline = deadline or _Deadline(self.timeout)
        tag = self._tag()
        self._waiting.add(tag)
        try:
            self._send([self._hdr(mtype, body, flags, tag)] + (extra or []))
            while tag not in self._replies:
                if deadline.passed():
                    what = _ASKS.get(mtype, f"message type {mtype:#04x}")
                    raise TimeoutError(-951, f"the daemon did not answer {what} "
                                             f"in time")
                self._pump(deadline)
                if self._dead is not None and tag not in self._replies:
                    raise self._dead
        finally:
            self._waiting.discard(tag)
        reply = self._replies.pop(tag)
        if isinstance(reply, B2StreamError):
            raise (naming(reply, about) if about and isinstance(reply, NoStreamError)
                   else reply)
        rtype, rflags, hdr, frames, version = reply
        if rtype != want:
            raise ProtocolError(-958, f"unexpected answer (type {rtype:#04x}) to "
                                      f"{_ASKS.get(mtype, hex(mtype))}")
        return rflags, hdr, frames, version

    def _pump(self, deadline: _Deadline | None) -> bool:
        """Wait (at most one slice) for a message and dispatch it.  True when
        one was handled."""
        self._usable()
        left = deadline.left() if deadline else None
        slice_s = _SLICE if left is None else min(left, _SLICE)
        self._ping_if_idle()
        if self._dead is not None:
            return True
        sock = self._sock
        assert sock is not None
        ready = dict(self._poller.poll(int(slice_s * 1000)))
        if self._monitor is not None and self._monitor in ready:
            self._check_monitor()
            if self._dead is not None:
                return True
        if sock not in ready:
            return False
        handled = False
        while True:      # everything queued, but never block
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return handled
            # stop after a reply: the messages behind it may be about the
            # handle or follow it creates, which the caller registers first
            if self._dispatch(frames) or self._dead is not None or self._sock is None:
                return True
            handled = True

    def _check_monitor(self) -> None:
        from zmq.utils.monitor import recv_monitor_message
        mon = self._monitor
        assert mon is not None
        while mon.poll(0):
            ev = recv_monitor_message(mon)
            if ev["event"] & _EV_AUTH:
                self._dead = AuthError(-948, "CurveZMQ handshake refused: this key is "
                                             "not authorized or the server key is wrong",
                                       closed="session")
                raise self._dead
            if ev["event"] & _EV_GONE and self._dead is None:
                self._connection_lost()

    def _connection_lost(self) -> None:
        """The daemon closed the connection: take in what it sent before
        (its last ERROR, pushed chunks), then end the session."""
        sock = self._sock
        while sock is not None and self._dead is None:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            self._dispatch(frames)
        if self._dead is None:
            self._end_session(ClosedError(
                -950, "the daemon closed the connection (it stopped or was killed)",
                closed="session"))

    def _ping_if_idle(self) -> None:
        """PING as the daemon asks (PROTOCOL.md 4.6), and probe a daemon
        silent for a request timeout: when its PONG does not come within
        another one, the daemon is gone (killed, host down) and the session
        ends with ClosedError, as the protocol tells a client to conclude."""
        now = time.monotonic()
        if self._probe_sent is not None:
            if now - self._probe_sent > self.timeout:
                self._end_session(ClosedError(
                    -950, f"the daemon answered no PING for {self.timeout:g} s",
                    closed="session"))
            return
        t = getattr(self, "daemon_timeout_ms", 0)
        if now - self._last_recv > self.timeout:
            self._send([self._hdr(w.PING, w.PING_F.pack(0))])
            self._probe_sent = now
        elif t and now - self._last_send > t / 3000.0:
            self._send([self._hdr(w.PING, w.PING_F.pack(0))])

    def _end_session(self, exc: B2StreamError) -> None:
        self._dead = exc
        for p in self.producers.values():
            p._on_closed_by(exc)
        for f in self.follows.values():
            f._on_error(exc)

    def _dispatch(self, frames: list) -> bool:
        """Route one message; True when it was the reply to a request."""
        hdr = frames[0].bytes
        self._last_recv = time.monotonic()
        self._probe_sent = None
        try:
            mtype, flags, tag, version = w.decode_prefix(hdr)
            # ERROR keeps its layout in every version (PROTOCOL.md 8)
            if version != self.protocol_version and mtype not in (w.ERROR, w.WELCOME):
                raise ValueError(f"version {version} in a version "
                                 f"{self.protocol_version} session")
        except ValueError as exc:
            self._dead = ProtocolError(-958, f"daemon sent a bad header: {exc}",
                                       closed="session")
            return False
        rest = frames[1:]
        if mtype == w.ERROR:
            return self._on_error(flags, tag, hdr)
        if mtype == w.ACK or mtype == w.DROPPED:
            handle = (w.ACK_F.unpack_from(hdr, 16)[2] if mtype == w.ACK
                      else w.DROPPED_F.unpack_from(hdr, 16)[1])
            p = self.producers.get(handle)
            if p is not None:
                p._on_message(mtype, hdr)
            return False
        if mtype == w.NOTIFY or (mtype == w.CHUNK and flags & w.CHUNK_PUSHED):
            fid = (w.NOTIFY_F.unpack_from(hdr, 16)[2] if mtype == w.NOTIFY
                   else w.CHUNK_F.unpack_from(hdr, 16)[1])
            f = self.follows.get(fid)
            if f is not None:
                f._on_message(mtype, flags, hdr, rest)
            return False
        if mtype in (w.FLUSHED, w.CLOSED):
            handle = (w.FLUSHED_F.unpack_from(hdr, 16)[1] if mtype == w.FLUSHED
                      else w.CLOSED_F.unpack_from(hdr, 16)[2])
            p = self.producers.get(handle)
            if p is not None:
                p._on_message(mtype, hdr)
        if tag in self._waiting:
            self._replies[tag] = (mtype, flags, hdr, rest, version)
            return True
        return False

    def _on_error(self, flags: int, tag: int, hdr: bytes) -> bool:
        ref_index, code, ref_id, ref_type = w.ERROR_F.unpack_from(hdr, 16)
        text, _ = w.rstr(hdr, 16 + w.ERROR_F.size)
        closed = ("session" if flags & w.ERROR_CLOSED_SESSION
                  else "ref" if flags & w.ERROR_CLOSED_REF else None)
        exc = error_for(code, text, ref_type=ref_type, ref_id=ref_id,
                        ref_index=ref_index, closed=closed)
        if ref_id and ref_type in (w.OPEN, w.DATA, w.FLUSH, w.CLOSE, w.SHM_ATTACH,
                                   w.SHM_SUBMIT, w.META):
            p = self.producers.get(ref_id)
            if p is not None:
                p._on_error(exc)
        elif ref_id and ref_type in (w.FOLLOW, w.READ, w.UNFOLLOW):
            f = self.follows.get(ref_id)
            if f is not None:
                f._on_error(exc)
        if closed == "session" and ref_type == w.HELLO:
            self._dead = exc          # a refused handshake: nothing else to end
        elif closed == "session":
            self._end_session(exc)
        if tag and tag in self._waiting:
            self._replies[tag] = exc
            return True
        return False

    # -- requests ------------------------------------------------------------------

    def ping(self, timeout: float | None = None) -> float:
        """PING the daemon; returns the round trip in seconds."""
        t0 = time.monotonic()
        nonce = int(t0 * 1e9) & 0xFFFFFFFFFFFFFFFF
        _, hdr, _ = self._request(w.PING, w.PING_F.pack(nonce), 0, w.PONG,
                                  _Deadline(self.timeout if timeout is None else timeout))
        if w.PONG_F.unpack_from(hdr, 16)[0] != nonce:
            raise ProtocolError(-958, "PONG with another nonce")
        return time.monotonic() - t0

    def stats(self, stream: str = "") -> dict:
        """The daemon's statistics (PROTOCOL.md 3.24) as a dict: the whole
        daemon, or one stream (NoStreamError when it does not exist)."""
        _, _, payload = self._request(w.STATS, w.wstr(stream), 0, w.STATS_REPLY,
                                      about=stream)
        if payload is None:
            raise ProtocolError(-958, "STATS_REPLY without its JSON")
        return json.loads(payload.bytes.decode("utf-8"))

"""Cluster producers: the ranks of a distributed stream (one b2streamd per
node, ``format: distributed``), each buffer sent to the rank that owns its
frame number: rank ``(frame // frames_per_block) % len(endpoints)``, as
the daemons' ``cluster:`` section says.  A rank refuses another rank's
frame with :class:`~b2stream.errors.WrongRankError` and a buffer without
a frame number with :class:`~b2stream.errors.NeedFrameError`.

Per rank the frame numbers sent and not yet acknowledged at the stream's
ack level are kept in send order (ACKs are cumulative by buffer id, so
the acknowledged ones are a prefix).  After a rank failed, read them with
:meth:`ClusterProducer.unacked`, :meth:`~ClusterProducer.reconnect` the
rank and send them again: storing a frame twice is harmless."""
from __future__ import annotations

from collections import deque
from typing import Any, Sequence

from ._conn import DEFAULT, _DeadlineNow
from .errors import (CODES, ArgumentError, B2StreamError, ClosedError, NeedFrameError,
                     TimeoutError)
from .producer import FlushResult, Producer
from .record import int_field
from .session import Session

MAX_RANKS = 1024


class _Rank:
    """One rank's session, producer and unacknowledged frame numbers."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.session: Session | None = None
        self.producer: Producer | None = None
        self.pending: deque[int] = deque()   # frames of buffers acked_seen..
        self.acked_seen = 0
        self.failed: list[int] = []          # sends that failed for the rank

    def trim(self) -> None:
        p = self.producer
        if p is None:
            return
        acked = p.upto[p.ack_level]
        while self.acked_seen < acked and self.pending:
            self.pending.popleft()
            self.acked_seen += 1
        self.acked_seen = max(self.acked_seen, acked)

    def drop(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session = self.producer = None
        self.pending.clear()
        self.acked_seen = 0
        self.failed.clear()


class ClusterProducer:
    """A producer over every rank of a distributed stream.

    >>> eps = ["tcp://n0:5555", "tcp://n1:5555", "tcp://n2:5555"]
    >>> with ClusterProducer(eps, "detector", frames_per_block=4) as c:
    ...     for f, image in enumerate(images):
    ...         c.send(image, frame=f)
    ...     c.flush()

    endpoints: the ranks' producer endpoints in rank order (the daemons'
    ``cluster.ranks``); template and meta as for :meth:`Session.open`
    (meta goes to rank 0: every rank merges into the same series); other
    keywords (name, timeout, curve_*) go to every :class:`Session`."""

    def __init__(self, endpoints: Sequence[str], stream: str, template: str = "", *,
                 frames_per_block: int = 1, meta: dict | None = None,
                 **session_kw: Any) -> None:
        endpoints = list(endpoints)
        if not 1 <= len(endpoints) <= MAX_RANKS:
            raise ArgumentError(-999, f"1 to {MAX_RANKS} rank endpoints, not "
                                      f"{len(endpoints)}")
        if not all(isinstance(e, str) and e for e in endpoints):
            raise ArgumentError(-999, "every rank endpoint is a non-empty string")
        if not isinstance(frames_per_block, int) or frames_per_block < 1:
            raise ArgumentError(-999, f"frames_per_block must be >= 1, not "
                                      f"{frames_per_block!r}")
        if not stream:
            raise ValueError("empty stream name")
        self.stream = stream
        self.template = template
        self.frames_per_block = frames_per_block
        self._session_kw = dict(session_kw, roles=("producer",))
        self._ranks = [_Rank(e) for e in endpoints]
        try:
            for i in range(len(self._ranks)):
                self._connect(i)
            if meta:
                self.producer(0).set_meta(meta)
        except BaseException:
            self.close(timeout=1.0, quiet=True)
            raise

    def _named(self, rank: int, exc: BaseException) -> BaseException:
        """A b2stream error of one rank as the same class, its message
        starting with the rank and its endpoint, and ``rank`` set."""
        if not isinstance(exc, B2StreamError) or getattr(exc, "rank", None) is not None:
            return exc
        where = f"rank {rank} ({self._ranks[rank].endpoint})"
        new = type(exc)(exc.code, f"{where}: {exc.message}", ref_type=exc.ref_type,
                        ref_id=exc.ref_id, ref_index=exc.ref_index, closed=exc.closed)
        new.rank = rank
        return new.with_traceback(exc.__traceback__)

    def _connect(self, rank: int) -> None:
        r = self._ranks[rank]
        try:
            r.session = Session(r.endpoint, **self._session_kw)
        except B2StreamError as exc:
            raise self._named(rank, exc) from None
        try:
            r.producer = r.session.open(self.stream, self.template)
        except B2StreamError as exc:
            r.drop()
            raise self._named(rank, exc) from None
        except BaseException:
            r.drop()
            raise

    # -- routing -------------------------------------------------------------------

    @property
    def ranks(self) -> int:
        """Number of ranks."""
        return len(self._ranks)

    def owner(self, frame: int) -> int:
        """The rank that owns frame number frame."""
        return (frame // self.frames_per_block) % len(self._ranks)

    def producer(self, rank: int) -> Producer:
        """Rank's :class:`Producer` (stats, set_meta)."""
        p = self._ranks[rank].producer
        if p is None:
            exc = ArgumentError(-999, f"rank {rank} ({self._ranks[rank].endpoint}) is "
                                      f"not connected")
            exc.rank = rank
            raise exc
        return p

    def send(self, data: Any, frame: int | None = None, timeout: Any = DEFAULT,
             copy: bool | None = None, *, ts: int | None = None,
             user: Any = None) -> tuple[int, int]:
        """Send one buffer to the rank owning frame (as
        :meth:`Producer.send`); returns (rank, buffer id on that rank).
        NeedFrameError, nothing sent, without a frame number."""
        if frame is None:
            raise NeedFrameError(CODES["B2S_E_NEED_FRAME"], "a distributed stream needs "
                                                      "a frame number with every buffer")
        frame = int_field("frame", frame, 0, 2**64 - 1, "0 .. 2**64-1")
        rank = self.owner(frame)
        r = self._ranks[rank]
        p = self.producer(rank)
        try:
            bid = p.send(data, timeout, copy, frame=frame, ts=ts, user=user)
        except (TimeoutError, ClosedError) as exc:
            r.failed.append(frame)              # still the caller's to deliver
            raise self._named(rank, exc) from None
        except B2StreamError as exc:
            raise self._named(rank, exc) from None
        r.trim()
        r.pending.append(frame)
        return rank, bid

    def flush(self, timeout: Any = DEFAULT) -> list[FlushResult]:
        """:meth:`Producer.flush` on every rank, in rank order; raises the
        first failure after trying every rank."""
        results, first = [], None
        for rank, r in enumerate(self._ranks):
            try:
                results.append(self.producer(rank).flush(timeout))
            except Exception as exc:            # noqa: BLE001 - re-raised below
                first = first or self._named(rank, exc)
            finally:
                r.trim()
        if first is not None:
            raise first
        return results

    # -- failures ------------------------------------------------------------------

    def unacked(self, rank: int) -> list[int]:
        """Frame numbers given to rank and not acknowledged: those sent and
        not acknowledged at the stream's ack level (nor dropped or
        rejected), in send order, then those whose send raised
        TimeoutError or ClosedError since the rank's last (re)connect."""
        r = self._ranks[rank]
        if r.session is not None and r.session.alive:
            try:
                r.session._pump(_DeadlineNow())     # ACKs already queued
            except Exception:                       # noqa: BLE001 - a dead rank
                pass
        r.trim()
        return list(r.pending) + r.failed

    def reconnect(self, rank: int) -> None:
        """Close rank's session (its unacknowledged frames are forgotten:
        read :meth:`unacked` first), connect and open the stream again."""
        self._ranks[rank].drop()
        self._connect(rank)

    def close(self, timeout: Any = DEFAULT, quiet: bool = False) -> None:
        """Close every producer and session; raises the first failure
        (after closing everything) unless quiet.  Idempotent."""
        first = None
        for rank, r in enumerate(self._ranks):
            try:
                if r.producer is not None:
                    r.producer.close(timeout)
            except Exception as exc:            # noqa: BLE001 - re-raised below
                first = first or self._named(rank, exc)
            finally:
                r.drop()
        if first is not None and not quiet:
            raise first

    def __enter__(self) -> "ClusterProducer":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(timeout=None if exc_type is None else 1.0, quiet=exc_type is not None)

"""A follow with resume=True across a daemon restart, SIGTERM and kill -9,
on a stream of the configuration and on one made from a template: the
restarted daemon knows the latter only once a producer opens it again, and
the follow waits for it (docs/PYTHON.md), then goes on from the next index
with nothing lost or repeated."""
from __future__ import annotations

import signal

import pytest

import b2stream
from b2stream import errors


def _produce(endpoint, stream, template, tag, n):
    with b2stream.Session(endpoint) as s, s.open(stream, template=template) as p:
        for i in range(n):
            p.send(b"%s-%d" % (tag, i) * 20)
        p.flush()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill9"])
@pytest.mark.parametrize("stream, template", [("w", ""), ("made", "tm")],
                         ids=["configured", "template"])
def test_resume_after_restart(daemon, sig, stream, template):
    _produce(daemon.endpoint, stream, template, b"before", 3)
    with b2stream.Session(daemon.endpoint, timeout=20) as s, \
            s.follow(stream, timeout=20, resume=True) as f:
        assert [next(f) for _ in range(3)] == [(i, b"before-%d" % i * 20) for i in range(3)]
        daemon.stop(sig)
        daemon.start()
        if template:
            # the restarted daemon does not know the stream until a producer
            # opens it: the step's timeout passes saying so, the follow stays
            with pytest.raises(errors.TimeoutError, match="not known to the restarted daemon"):
                f.next(timeout=0.5)
            with b2stream.Session(daemon.endpoint) as probe:
                with pytest.raises(errors.NoStreamError):
                    probe.read(stream, 0)
        _produce(daemon.endpoint, stream, template, b"after", 2)
        assert [next(f) for _ in range(2)] == [(3 + i, b"after-%d" % i * 20) for i in range(2)]
        assert f.read(4) == b"after-1" * 20
    with b2stream.Frame(daemon.frame(stream)) as fr:
        assert fr.nchunks == 5


def test_resume_waits_for_a_stream_within_no_timeout(daemon):
    # timeout None: the follow waits as long as it takes, here until a
    # producer on another thread opens the stream again
    import threading
    _produce(daemon.endpoint, "late", "tm", b"x", 1)
    with b2stream.Session(daemon.endpoint, timeout=20) as s, \
            s.follow("late", timeout=None, resume=True) as f:
        assert next(f)[0] == 0
        daemon.stop(signal.SIGKILL)
        daemon.start()
        seen = threading.Event()

        def produce_once_waiting():
            seen.wait(60)
            _produce(daemon.endpoint, "late", "tm", b"y", 1)
        t = threading.Thread(target=produce_once_waiting)
        t.start()
        try:
            with pytest.raises(errors.TimeoutError):
                f.next(timeout=0.2)             # not there yet
            seen.set()
            assert f.next() == (1, b"y-0" * 20)
        finally:
            seen.set()
            t.join()


def test_a_follow_without_resume_still_fails_at_once(daemon):
    with b2stream.Session(daemon.endpoint) as s:
        with pytest.raises(errors.NoStreamError, match="nope"):
            s.follow("nope", resume=True)

"""ClusterProducer against real daemons: ranks of one cluster sharing a
local directory store; the test stands in for the committer (a PULL
socket on the committer endpoint) and checks which rank reported which
frame."""
from __future__ import annotations

import shutil
import struct
import tempfile

import signal

import numpy as np
import pytest
import zmq

from b2stream import ClusterProducer, Session, errors

CHUNK = 4096


def _cluster(make_daemon, n: int, fpb: int, queue_depth: int = 64):
    tmp = tempfile.mkdtemp(prefix="b2s-cluster-py-")
    ds = [make_daemon() for _ in range(n)]
    eps = [d.endpoint for d in ds]
    commit = f"ipc://{tmp}/commit.sock"
    for rank, d in enumerate(ds):
        with open(d.config, "a") as f:
            f.write("  dist:\n    format: distributed\n    chunk_nbytes: 4096\n"
                    f"    codec: lz4\n    queue_depth: {queue_depth}\n"
                    "    durability: {ack: write}\n"
                    f"cluster:\n  storage: {tmp}/store\n  rank: {rank}\n"
                    f"  committer: {commit}\n  frames_per_block: {fpb}\n"
                    "  ranks: [" + ", ".join(eps) + "]\n")
    pull = zmq.Context.instance().socket(zmq.PULL)
    pull.bind(commit)
    for d in ds:
        d.start()
    return tmp, ds, eps, pull


def _written(pull, want: int, timeout_ms: int = 20000) -> dict[int, int]:
    """frame -> rank of the WRITTEN messages, until `want` frames."""
    got: dict[int, int] = {}
    while len(got) < want:
        assert pull.poll(timeout_ms), f"only {len(got)} of {want} frames reported"
        m = pull.recv()
        assert m[:4] == b"B2DM" and m[4] == 1
        if m[5] != 1:                       # END
            continue
        (nlen,) = struct.unpack_from("<H", m, 6)
        assert m[8:8 + nlen] == b"dimg"
        index, rank = struct.unpack_from("<QI", m, 8 + nlen)
        got[index] = rank
    return got


def _buf(f: int) -> np.ndarray:
    return (np.arange(CHUNK // 4, dtype="<u4") + f * 1000).astype("<u4")


def test_plain_producer_gets_wrong_rank(make_daemon):
    tmp, ds, eps, pull = _cluster(make_daemon, 2, 2)
    try:
        # a frame is made once a majority of its ranks (here both) have
        # opened its stream (DISTRIBUTED.md 9): rank 1 opens it too
        with Session(eps[0]) as s, Session(eps[1]) as s1, s1.open("dimg", "dist"):
            p = s.open("dimg", "dist")
            for f in range(4):                  # rank 0 owns 0, 1
                p.send(_buf(f), frame=f)
            with pytest.raises(errors.WrongRankError) as ei:
                p.flush()
            assert "frame number 2 belongs to rank 1, not to this rank 0" in str(ei.value)
            assert eps[1] in ei.value.message
            p.send(_buf(0))                     # no frame number
            with pytest.raises(errors.NeedFrameError):
                p.flush()
            assert p.stats().rejected == 3
            p.close()
        assert _written(pull, 2) == {0: 0, 1: 0}
    finally:
        pull.close(0)
        shutil.rmtree(tmp, ignore_errors=True)


def test_cluster_producer_routes_to_owners(make_daemon):
    tmp, ds, eps, pull = _cluster(make_daemon, 3, 2)
    try:
        with ClusterProducer(eps, "dimg", "dist", frames_per_block=2) as a, \
                ClusterProducer(eps, "dimg", "dist", frames_per_block=2) as b:
            assert a.ranks == 3 and [a.owner(f) for f in range(7)] == [0, 0, 1, 1, 2, 2, 0]
            for f in range(60):                 # interleaved: even a, odd b
                rank, _ = (b if f % 2 else a).send(_buf(f), frame=f)
                assert rank == a.owner(f)
            with pytest.raises(errors.NeedFrameError):
                a.send(_buf(0))
            a.flush()
            b.flush()
            assert all(a.unacked(r) == [] and b.unacked(r) == [] for r in range(3))
        got = _written(pull, 60)
        assert got == {f: (f // 2) % 3 for f in range(60)}
    finally:
        pull.close(0)
        shutil.rmtree(tmp, ignore_errors=True)


def test_rank_killed_resend_unacked(make_daemon):
    tmp, ds, eps, pull = _cluster(make_daemon, 2, 1, queue_depth=4)
    try:
        with ClusterProducer(eps, "dimg", "dist", timeout=2.0) as c:
            for f in range(20):
                c.send(_buf(f), frame=f)
            ds[1].stop(signal.SIGKILL)
            closed = 0
            for f in range(20, 40):             # rank 1 owns the odd ones
                try:
                    c.send(_buf(f), frame=f, timeout=5.0)
                except errors.ClosedError as exc:   # the dead rank's connection
                    assert f % 2 == 1
                    # the error says which rank, where
                    assert exc.rank == 1 and exc.message.startswith(f"rank 1 ({eps[1]}): ")
                    closed += 1
            assert closed >= 1          # the first ones may go out on credit
            again = c.unacked(1)
            assert set(range(21, 40, 2)) <= set(again)
            ds[1].start()
            c.reconnect(1)
            for f in again:
                c.send(_buf(f), frame=f)
            c.flush()
        got = _written(pull, 40)
        assert got == {f: f % 2 for f in range(40)}
    finally:
        pull.close(0)
        shutil.rmtree(tmp, ignore_errors=True)

"""A whole acquisition against the real daemon, driven by b2stream.Control
and by `b2stream acq` (docs/ACQUISITIONS.md): arm, frames from a
producer of the package, wait for the committed count, stop, the end;
the events of the run in order; the refusals turned into the contract's
codes; and the frames read back from the acquisition's files equal to
what was sent."""
from __future__ import annotations

import json
import os
import subprocess
import time

import numpy as np
import pytest

import b2stream
from b2stream import Control, ControlError, WaitTimeout

from conftest import CLI, Daemon, _need_daemon, free_port

N = 12
SHAPE = (16, 24)


def _config(port: int, root: str) -> str:
    return f"""\
listen: [ipc://d.sock]
run_dir: run
data_dir: data
workers: 2
log_level: debug
http:
  listen: "127.0.0.1:{port}"
  token_file: tokens
acquisitions:
  roots: [{root}]
  disk_floor: 0
streams:
  det:
    acquisitions: only
    typesize: 2
    b2nd: {{shape: [0, {SHAPE[0]}, {SHAPE[1]}], chunkshape: [1, {SHAPE[0]}, {SHAPE[1]}], dtype: "<u2"}}
    durability: {{ack: write, group_count: 4, group_interval_ms: 5}}
"""


@pytest.fixture
def acq_daemon():
    _need_daemon()
    if not CLI:
        pytest.skip("B2S_CLI does not name the built b2stream")
    d = Daemon()
    root = os.path.join(d.dir, "acq")
    os.makedirs(os.path.join(root, "scan"))
    port = free_port()
    with open(d.config, "w") as f:
        f.write(_config(port, root))
    tokens = os.path.join(d.dir, "tokens")
    token = subprocess.run([CLI, "token", tokens, "pytest"], check=True,
                           capture_output=True, text=True).stdout.strip()
    try:
        d.start()
    except RuntimeError as e:
        d.cleanup()
        pytest.skip(f"this build's daemon does not take acquisitions: yet ({e})"[:300])
    c = Control(f"http://127.0.0.1:{port}", token_file=tokens)
    deadline = time.monotonic() + 20
    while True:   # the listener may come up after the ipc socket
        try:
            api = c.api()
            break
        except b2stream.ControlUnreachable as e:
            if "cannot reach" in str(e) and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            d.cleanup()
            pytest.skip(f"this build's daemon does not serve the acquisition API yet: {e}")
    assert api["acquisitions"] is True and api["auth"]["changes"] is True
    yield d, c, root, tokens, token
    assert d.stop() == 0
    d.cleanup()


def _cli(tokens: str, c: Control, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "acq", *args, "--url", c.url, "--token-file", tokens],
                          capture_output=True, text=True, timeout=120)


def _send(d: Daemon, images: np.ndarray) -> None:
    with b2stream.Session(d.endpoint) as s:
        with s.open("det") as p:
            for im in images:
                p.send(im)
            fl = p.flush()
            assert fl.dropped == 0


def test_whole_acquisition_with_control(acq_daemon):
    d, c, root, tokens, token = acq_daemon
    directory = os.path.join(root, "scan")
    a = c.arm("scan-1", stream="det", directory=directory, frames=0,
              frames_per_file=5, series={"sample": "lyso-3"})
    assert a.status == 201 and a.state in ("armed", "writing")
    assert a.committed == 0
    assert a["armed_by"] == "pytest"
    # the same arm again answers the same acquisition (6.2)
    again = c.arm("scan-1", stream="det", directory=directory, frames=0,
                  frames_per_file=5, series={"sample": "lyso-3"})
    assert again.status == 200 and again.id == "scan-1"
    # other parameters under that id: id_conflict; the input is busy
    with pytest.raises(ControlError) as e:
        c.arm("scan-1", stream="det", directory=directory, frames=3)
    assert (e.value.code, e.value.status) == ("id_conflict", 409)
    with pytest.raises(ControlError) as e:
        c.arm("scan-2", stream="det", directory=directory)
    assert e.value.code == "input_busy"
    c.wait("scan-1", state="writing", timeout=20)
    images = (np.arange(N * SHAPE[0] * SHAPE[1], dtype="<u2") * 7).reshape(N, *SHAPE)
    _send(d, images)
    w = c.wait("scan-1", committed=N, timeout=30)
    assert w.committed >= N
    with pytest.raises(WaitTimeout) as e:
        c.wait("scan-1", committed=N + 1, timeout=0)
    assert e.value.acquisition.committed == N
    s = c.stop("scan-1")
    assert s.status in (200, 202)
    end = c.wait("scan-1", state="ended", timeout=30)
    assert end.state == "done" and end["end_reason"] == "stop"
    assert end["counters"]["loss"] is False
    assert end.committed == N
    files = c.files("scan-1")
    assert [f["number"] for f in files] == [1, 2, 3]
    assert [f["frames"] for f in files] == [5, 5, 2]
    # the frames back from the files, in order, equal to what was sent
    got = np.concatenate([b2stream.Frame(f["path"])[:] for f in files])
    assert np.array_equal(got.reshape(N, *SHAPE), images)
    assert any(x.id == "scan-1" and x.state == "done" for x in c.list())


def _events_served(c: Control) -> None:
    try:
        next(c.events(reconnect=False), None)
    except (b2stream.ControlUnreachable, ControlError) as e:
        if getattr(e, "code", "not_found") == "not_found" or "HTTP 404" in str(e):
            pytest.skip(f"this build's daemon does not serve /api/v1/events yet: {e}")
        raise


def test_events_of_a_run(acq_daemon):
    d, c, root, tokens, token = acq_daemon
    before = c.api().get("last_event_id")
    if before is None:
        pytest.skip("this build's daemon has no events yet (no last_event_id)")
    directory = os.path.join(root, "scan")
    c.arm("ev-1", stream="det", directory=directory, frames=N, frames_per_file=5)
    c.wait("ev-1", state="writing", timeout=20)
    _send(d, np.zeros((N, *SHAPE), dtype="<u2"))
    c.wait("ev-1", state="ended", timeout=30)
    names = []
    for ev in c.events(acquisition="ev-1", last_event_id=before):
        names.append(ev.event)
        if ev.event == "end":
            assert ev.data["state"] == "done"
            break
    assert names[0] == "armed" and "writing" in names
    assert names.index("closing") < names.index("end")
    assert names.count("file") >= 3


def test_whole_acquisition_with_cli(acq_daemon):
    d, c, root, tokens, token = acq_daemon
    directory = os.path.join(root, "scan")
    r = _cli(tokens, c, "arm", "cli-1", "--stream", "det", "--directory", directory,
             "--frames", str(N), "--json")
    assert r.returncode == 0, r.stderr
    armed = json.loads(r.stdout)
    assert armed["id"] == "cli-1" and armed["request"]["frames"] == N
    r = _cli(tokens, c, "wait", "cli-1", "--state", "writing", "--timeout", "20")
    assert r.returncode == 0, r.stderr
    images = np.full((N, *SHAPE), 3, dtype="<u2")
    _send(d, images)
    # frames reached: it ends by itself (7.3)
    r = _cli(tokens, c, "wait", "cli-1", "--state", "done", "--timeout", "30")
    assert r.returncode == 0, r.stderr
    assert "state:            done" in r.stdout
    assert f"frames_committed: {N}" in r.stdout
    r = _cli(tokens, c, "status", "cli-1")
    assert r.returncode == 0 and "state:            done" in r.stdout
    r = _cli(tokens, c, "list")
    assert f"cli-1 done {N}/{N} files=1" in r.stdout
    # refusals: one line with the contract's code, exit 1
    r = _cli(tokens, c, "arm", "cli-2", "--stream", "det", "--directory", "/etc")
    assert r.returncode == 1 and "outside_roots (403)" in r.stderr
    r = _cli(tokens, c, "arm", "cli-1", "--stream", "det", "--directory", directory)
    assert r.returncode == 1 and "id_conflict (409)" in r.stderr
    r = _cli(tokens, c, "status", "nope")
    assert r.returncode == 1 and "no_such_acquisition (404)" in r.stderr
    r = _cli(tokens, c, "wait", "cli-1", "--committed", str(N + 5), "--timeout", "0")
    assert r.returncode == 1 and "wait_unreachable (409)" in r.stderr
    # no token, a wrong one: 401 with the code
    r = subprocess.run([CLI, "acq", "stop", "cli-1", "--url", c.url],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "auth_required (401)" in r.stderr
    wrong = os.path.join(d.dir, "wrong")
    subprocess.run([CLI, "token", wrong], check=True, capture_output=True)
    r = _cli(wrong, c, "stop", "cli-1")
    assert r.returncode == 1 and "auth_invalid (401)" in r.stderr

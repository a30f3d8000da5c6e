"""The examples as programs: a producer streaming a numpy stack, and the
running-mean consumer ended by Ctrl-C (SIGINT), which must leave cleanly."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import numpy as np

import b2stream

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
# the package of this tree, whatever the working directory
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _run(args, cwd):
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, args[0])] + args[1:],
                          cwd=cwd, env=ENV, capture_output=True, text=True, timeout=120)


def test_produce_stack_socket_and_shm(daemon, tmp_path):
    stack = np.arange(6 * 64 * 32, dtype=np.uint16).reshape(6, 1, 64, 32)
    np.save(tmp_path / "stack.npy", stack)
    for extra in ([], ["--shm"]):
        out = _run(["produce_stack.py", "--endpoint", daemon.endpoint, "img",
                    str(tmp_path / "stack.npy")] + extra, tmp_path)
        assert out.returncode == 0, out.stderr
        assert "6 images" in out.stdout and "0 dropped, 0 rejected" in out.stdout
    with b2stream.Frame(daemon.frame("img")) as f:
        whole = f.to_numpy()
    np.testing.assert_array_equal(whole, np.concatenate([stack.reshape(6, 64, 32)] * 2))


def _wait_output(proc, text: str, timeout: float = 30) -> str:
    """Read the child's stdout (raw, so nothing hides in a buffer select
    cannot see) until text appears; returns what was read."""
    seen = b""
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            seen += chunk
            if text.encode() in seen:
                return seen.decode()
    raise AssertionError(f"the example did not print {text!r}; it printed {seen!r}")


def test_running_mean_leaves_cleanly_on_ctrl_c(daemon, tmp_path):
    proc = subprocess.Popen([sys.executable, os.path.join(EXAMPLES, "running_mean.py"),
                             "--endpoint", daemon.endpoint, "--every", "1", "--from-start",
                             "img"],
                            cwd=tmp_path, env=dict(ENV, PYTHONUNBUFFERED="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with b2stream.Session(daemon.endpoint) as s:
            with s.open("img") as p:
                for i in range(4):
                    p.send(np.full((1, 64, 32), 2 * i, np.uint16))
                p.flush()
            out = _wait_output(proc, "4 images")
            proc.send_signal(signal.SIGINT)
            rest, err = proc.communicate(timeout=20)
            out += rest
            assert proc.returncode == 0, err
            assert "running mean of 4 images" in out
            mean = np.load(tmp_path / "img-mean.npy")
            assert mean.shape == (64, 32) and np.allclose(mean, 3.0)
            deadline = time.monotonic() + 10      # its session is gone (BYE)
            while s.stats()["daemon"]["sessions"] != 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert s.stats()["daemon"]["sessions"] == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

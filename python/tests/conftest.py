"""Fixtures: the real b2streamd of the build ($B2S_DAEMON) on a temporary
directory with its own configuration, as tests/daemon_harness.c starts it."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

DAEMON = os.environ.get("B2S_DAEMON", "")
CLI = os.environ.get("B2S_CLI", "")

# The dtypes a b2nd stream may declare (config/stream_check.c sizes
# b, i, u, f, c, S, U, V, m, M): one stream per dtype, 2 x 8 items a chunk.
DTYPES = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8",
          "<f2", "<f4", "<f8", "<c8", "<c16", "|S5", "<U3", "|V6",
          "<m8[s]", "<M8[ms]", ">i4", ">f8"]


def dtype_stream(dt: str) -> str:
    sub = {"<": "l", ">": "b", "|": "n", "[": "_", "]": ""}
    return "nd-" + "".join(sub.get(c, c) for c in dt)


def _dtype_streams() -> str:
    import numpy as np
    out = []
    for dt in DTYPES:
        size = np.dtype(dt).itemsize
        out.append(f"  {dtype_stream(dt)}:\n"
                   f"    typesize: {size}\n"
                   f"    b2nd: {{shape: [0, 8], chunkshape: [2, 8], dtype: \"{dt}\"}}\n"
                   f"    durability: {{ack: write, group_count: 4, group_interval_ms: 5}}\n")
    return "".join(out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """One daemon on its own directory: dir/run/d.sock, frames in dir/data."""

    def __init__(self, yaml_extra: str = "", listen_extra: str = "") -> None:
        self.dir = tempfile.mkdtemp(prefix="b2sd-py-")
        self.sock_path = os.path.join(self.dir, "run", "d.sock")
        self.endpoint = "ipc://" + self.sock_path
        self.log = os.path.join(self.dir, "daemon.log")
        self.config = os.path.join(self.dir, "b2streamd.yaml")
        self.proc: subprocess.Popen | None = None
        listen = "[ipc://d.sock" + (", " + listen_extra if listen_extra else "") + "]"
        with open(self.config, "w") as f:
            base = BASE_CONFIG.format(listen=listen)
            f.write(base.replace("templates:\n", _dtype_streams() + "templates:\n")
                    + yaml_extra)

    def start(self) -> None:
        try:
            os.unlink(self.sock_path)   # a killed daemon's socket would pass for the new one
        except FileNotFoundError:
            pass
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([DAEMON, "--config", self.config],
                                         stdout=log, stderr=log)
        deadline = time.monotonic() + 20
        while not os.path.exists(self.sock_path):
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited {self.proc.returncode}: "
                                   + open(self.log).read()[-2000:])
            if time.monotonic() > deadline:
                raise RuntimeError("daemon did not start")
            time.sleep(0.01)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc is None:
            return 0
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def frame(self, stream: str) -> str:
        return os.path.join(self.dir, "data", stream + ".b2frame")

    def cleanup(self) -> None:
        if self.proc is not None:
            self.stop(signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)


BASE_CONFIG = """\
listen: {listen}
run_dir: run
data_dir: data
workers: 2
max_buffer: 8MiB
log_level: debug
streams:
  w:
    typesize: 4
    durability: {{ack: write, group_count: 8, group_interval_ms: 5}}
  f:
    codec: lz4
    io: buffered
    durability: {{ack: fsync, group_count: 4, group_interval_ms: 5}}
  r:
    format: sparse
    durability: {{ack: receipt, group_count: 4, group_interval_ms: 5}}
  dn:
    codec: zstd
    clevel: 9
    queue_depth: 1
    backpressure: drop-newest
  bl:
    queue_depth: 2
    backpressure: block
  img:
    typesize: 2
    codec: zstd
    clevel: 1
    filters: [bitshuffle]
    b2nd: {{shape: [0, 64, 32], chunkshape: [1, 64, 32], blockshape: [1, 16, 32], dtype: "<u2"}}
    durability: {{ack: write, group_count: 8, group_interval_ms: 5}}
  tiles:
    typesize: 4
    b2nd: {{shape: [0, 8, 8], chunkshape: [2, 8, 8], blockshape: [1, 4, 4], dtype: "<f4"}}
    durability: {{ack: write, group_count: 8, group_interval_ms: 5}}
templates:
  tm:
    codec: lz4
"""


def _need_daemon() -> None:
    if not DAEMON or not os.access(DAEMON, os.X_OK):
        pytest.skip("B2S_DAEMON does not name the built b2streamd")


@pytest.fixture
def daemon():
    """A running daemon, stopped and removed after the test."""
    _need_daemon()
    d = Daemon()
    d.start()
    yield d
    d.cleanup()


@pytest.fixture
def make_daemon():
    """Factory for daemons with extra configuration (not started)."""
    _need_daemon()
    made = []

    def make(yaml_extra: str = "", listen_extra: str = "") -> Daemon:
        d = Daemon(yaml_extra, listen_extra)
        made.append(d)
        return d
    yield make
    for d in made:
        d.cleanup()

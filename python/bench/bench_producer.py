#!/usr/bin/python3
"""Python producer throughput against the C client on the same daemon.

Starts the build's b2streamd on a temporary directory, then per round
sends the same COUNT buffers of SIZE bytes (default 4 MiB, compressible
16-bit detector-like images) once with the C client (`b2stream produce`,
libclient's b2sc_send) and once with b2stream.Producer.send, alternating
which side goes first, each into a fresh stream, each timed from connect
to the end of flush.  Prints min/median/max MB/s per side and the ratio of
the medians (target >= 0.9).  Then consumer throughput: a follow receiving
the stream's chunks decompressed by the daemon as numpy arrays.

    bench_producer.py [--rounds 5] [--count 32] [--size 4M] [--daemon PATH] [--c-producer PATH]

b2sc_send copies each buffer into a fresh zmq message, and glibc serves a
fresh 4 MiB allocation with mmap (new pages to fault in) until its dynamic
threshold has risen; --c-heap-malloc sets MALLOC_MMAP_THRESHOLD_ for the C
side so both sides copy into reused heap memory.

Defaults for the paths: $B2S_DAEMON / $B2S_C_PRODUCER, else
build/daemon/b2streamd and build/python/bench_c_producer under the current
directory (run it from the source root after ninja -C build)."""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import b2stream  # noqa: E402

CONFIG = """\
listen: [ipc://d.sock]
run_dir: run
data_dir: data
workers: {workers}
max_buffer: 64MiB
memory_limit: 1GiB
log_level: warning
templates:
  bench:
    typesize: 2
    codec: lz4
    clevel: 1
    filters: [shuffle]
    io: buffered
    durability: {{ack: write, group_count: 64, group_interval_ms: 50}}
    backpressure: block
    queue_depth: 64
"""


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("ib")
    return int(float(t[:-1]) * units[t[-1]]) if t[-1] in units else int(t)


def data(size: int, count: int) -> np.ndarray:
    n = size // 2
    rng = np.random.default_rng(1)
    base = (np.arange(n, dtype=np.uint32) % 4096).astype(np.uint16)
    return np.stack([base + rng.integers(0, 16, n, dtype=np.uint16) + i for i in range(count)])


class Daemon:
    def __init__(self, path: str, workers: int) -> None:
        self.dir = tempfile.mkdtemp(prefix="b2s-pybench-")
        with open(os.path.join(self.dir, "b2streamd.yaml"), "w") as f:
            f.write(CONFIG.format(workers=workers))
        sock = os.path.join(self.dir, "run", "d.sock")
        self.endpoint = "ipc://" + sock
        self.log = open(os.path.join(self.dir, "daemon.log"), "wb")
        self.proc = subprocess.Popen([path, "--config", os.path.join(self.dir, "b2streamd.yaml")],
                                     stdout=self.log, stderr=self.log)
        for _ in range(2000):
            if os.path.exists(sock):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        self.close()
        raise SystemExit("b2streamd did not start")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_c(prog: str, endpoint: str, stream: str, file: str, size: int,
          heap_malloc: bool = False) -> float:
    env = dict(os.environ)
    if heap_malloc:
        env["MALLOC_MMAP_THRESHOLD_"] = str(max(size * 2, 1 << 20))
    out = subprocess.run([prog, endpoint, stream, "bench", file, str(size)],
                         check=True, stdout=subprocess.PIPE, text=True, env=env)
    return float(out.stdout.split()[-1])     # its own connect-to-flush time


def run_py(endpoint: str, stream: str, stack: np.ndarray) -> float:
    t0 = time.monotonic()
    with b2stream.Session(endpoint, name="bench") as s, s.open(stream, "bench") as p:
        for image in stack:
            p.send(image, timeout=60)
        p.flush(timeout=120)
    return time.monotonic() - t0


def run_consumer(endpoint: str, stream: str, count: int) -> float:
    t0 = time.monotonic()
    with b2stream.Session(endpoint, name="bench-consumer") as s, \
            s.follow(stream, 0, timeout=60, dtype=np.uint16) as f:
        total = 0
        for _, a in f:
            total += int(a[0])        # touch the array
            if _ == count - 1:
                break
    return time.monotonic() - t0


def summary(name: str, rates: list[float]) -> float:
    med = statistics.median(rates)
    print(f"{name:<22} min {min(rates):8.1f}  median {med:8.1f}  max {max(rates):8.1f} MB/s")
    return med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--count", type=int, default=32)
    ap.add_argument("--size", type=parse_size, default=4 << 20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--daemon", default=os.environ.get("B2S_DAEMON", "build/daemon/b2streamd"))
    ap.add_argument("--c-heap-malloc", action="store_true",
                    help="C side: allocate its message copies from the heap, not mmap")
    ap.add_argument("--c-producer", default=os.environ.get("B2S_C_PRODUCER",
                                                            "build/python/bench_c_producer"))
    args = ap.parse_args()

    stack = data(args.size, args.count)
    mb = stack.nbytes / 1e6
    d = Daemon(args.daemon, args.workers)
    file = os.path.join(d.dir, "stack.raw")
    stack.tofile(file)
    rates = {"C client": [], "Python": [], "Python consumer": []}
    try:
        for r in range(args.rounds):
            order = ("c", "py") if r % 2 == 0 else ("py", "c")
            for side in order:
                if side == "c":
                    rates["C client"].append(mb / run_c(args.c_producer, d.endpoint, f"c{r}", file,
                                                        args.size, args.c_heap_malloc))
                else:
                    rates["Python"].append(mb / run_py(d.endpoint, f"py{r}", stack))
            rates["Python consumer"].append(mb / run_consumer(d.endpoint, f"py{r}", args.count))
    finally:
        d.close()
    print(f"{args.rounds} rounds of {args.count} x {args.size} bytes, "
          f"{args.workers} workers, lz4 clevel 1 + shuffle"
          + (", C side with heap malloc" if args.c_heap_malloc else ""))
    c = summary("C client producer", rates["C client"])
    p = summary("Python producer", rates["Python"])
    summary("Python consumer", rates["Python consumer"])
    ratio = p / c
    print(f"Python / C producer (median): {ratio:.2f}x (target >= 0.90)")
    return 0 if ratio >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Reading a frame as an array: b2stream.Frame against python-blosc2 on the
same frame, in the same run.

The build's b2streamd writes COUNT detector-like images (512x512 uint16,
chunks of one image, blocks of 32 rows, lz4 + shuffle) into a b2nd stream
and is stopped (its close brings the b2nd shape up to the images).  Then,
per round, alternating which side goes first:

* ``f[i]``: 50 whole images at random indexes (the same for both sides);
* ``f[:, y, x]``: one pixel's time series across all COUNT images, at 5
  random pixels (both sides decode one block per image).

Prints per operation the min/median/max time over the rounds for
b2stream.Frame and for ``blosc2.open(path)``, and the ratio of the medians
(python-blosc2 time / b2stream time: >= 1.0 means b2stream is as fast).

Run it with the reference venv's interpreter (python-blosc2 lives there;
b2stream reads frames without pyzmq), from the source root after
``ninja -C build``; the frame is written through /usr/bin/python3, which
has pyzmq:

    $B2S_VENV/bin/python python/bench/bench_index.py [--rounds 7] [--count 1000]

Paths: $B2S_DAEMON (else build/daemon/b2streamd), $B2STREAM_LIB (else
build/python/libb2s_py.so)."""
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

CONFIG = """\
listen: [ipc://d.sock]
run_dir: run
data_dir: data
workers: 2
max_buffer: 64MiB
log_level: warning
streams:
  det:
    typesize: 2
    codec: lz4
    clevel: 5
    filters: [shuffle]
    io: buffered
    b2nd: {shape: [0, 512, 512], chunkshape: [1, 512, 512], blockshape: [1, 32, 512], dtype: "<u2"}
    durability: {ack: write, group_count: 64, group_interval_ms: 50}
"""


def images(count: int):
    """Detector-like frames: Poisson counts over a slowly moving pattern."""
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:512, 0:512]
    for i in range(count):
        lam = 50 + 40 * np.sin((xx + 3 * i) / 37.0) * np.cos(yy / 53.0)
        yield rng.poisson(np.maximum(lam, 1)).astype(np.uint16)


def produce(workdir: str, count: int, daemon: str) -> str:
    """Run in /usr/bin/python3: the daemon writes the frame; its path."""
    import b2stream
    cfg = os.path.join(workdir, "b2streamd.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    sock = os.path.join(workdir, "run", "d.sock")
    proc = subprocess.Popen([daemon, "--config", cfg], cwd=workdir)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the daemon did not start")
            time.sleep(0.01)
        with b2stream.Session("ipc://" + sock, timeout=30) as s, s.open("det") as p:
            for img in images(count):
                p.send(img, timeout=30)
            p.flush(timeout=60)
    finally:
        proc.terminate()
        proc.wait(60)
    return os.path.join(workdir, "data", "det.b2frame")


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--produce", help=argparse.SUPPRESS)
    args = ap.parse_args()
    daemon = os.environ.get("B2S_DAEMON", "build/daemon/b2streamd")
    os.environ.setdefault("B2STREAM_LIB", os.path.abspath("build/python/libb2s_py.so"))
    if args.produce:
        print(produce(args.produce, args.count, os.path.abspath(daemon)))
        return 0

    import blosc2
    import b2stream
    work = tempfile.mkdtemp(prefix="b2s-bench-index-")
    try:
        out = subprocess.run(["/usr/bin/python3", __file__, "--produce", work,
                              "--count", str(args.count)],
                             check=True, capture_output=True, text=True)
        path = out.stdout.strip().splitlines()[-1]
        ours = b2stream.Frame(path)
        ref = blosc2.open(path)
        assert ours.shape == ref.shape == (args.count, 512, 512), (ours.shape, ref.shape)
        rng = np.random.default_rng(1)
        idx = [int(i) for i in rng.integers(0, args.count, 50)]
        pix = [(int(y), int(x)) for y, x in rng.integers(0, 512, (5, 2))]
        for i in idx[:3]:                         # same bytes, and a warm cache
            assert np.array_equal(ours[i], ref[i])
        for y, x in pix[:2]:
            assert np.array_equal(ours[:, y, x], ref[:, y, x])
        ops = {
            "f[i]": lambda a: [a[i] for i in idx],
            "f[:, y, x]": lambda a: [a[:, y, x] for y, x in pix],
        }
        per = {"f[i]": len(idx), "f[:, y, x]": len(pix)}
        res = {(op, side): [] for op in ops for side in ("b2stream", "python-blosc2")}
        for r in range(args.rounds):
            for op, fn in ops.items():
                sides = [("b2stream", ours), ("python-blosc2", ref)]
                if r % 2:
                    sides.reverse()
                for side, arr in sides:
                    res[(op, side)].append(timed(lambda: fn(arr)) / per[op])
        print(f"frame: {args.count} images 512x512 uint16, lz4+shuffle, blocks 1x32x512; "
              f"{args.rounds} rounds, alternating; numpy {np.__version__}, "
              f"python-blosc2 {blosc2.__version__}")
        for op in ops:
            meds, mins = {}, {}
            for side in ("b2stream", "python-blosc2"):
                t = res[(op, side)]
                meds[side] = statistics.median(t)
                mins[side] = min(t)
                print(f"  {op:11s} {side:14s} min {min(t) * 1e3:8.3f} ms  "
                      f"median {meds[side] * 1e3:8.3f} ms  max {max(t) * 1e3:8.3f} ms")
            print(f"  {op:11s} ratio (python-blosc2 / b2stream): medians "
                  f"{meds['python-blosc2'] / meds['b2stream']:.2f}x, minimums "
                  f"{mins['python-blosc2'] / mins['b2stream']:.2f}x")
        ours.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""b2stream export against cp of the frame and against the path users have
today: python-blosc2 decompressing the frame's images and h5py +
hdf5plugin compressing them again with the Blosc2 filter.

Run with the reference interpreter (scripts/make-venv), from the build:

    $B2S_VENV/bin/python bench/bench_export.py --cli build/tools/b2stream \\
        [--gib 2] [--rounds 3] [--dir DIR]

The frame holds --gib GiB of 16-bit 1024 x 1024 detector images (a smooth
background with shot noise and a few bright peaks, frame k shifted by k),
written by python-blosc2 as b2nd chunks of one image, lz4 + shuffle at
clevel 5 (b2stream's defaults).  Each round runs the three sides in turn,
the order rotating from round to round; files are in the page cache (the
frame is read once before the first round) and outputs are removed after
each run and the dirty pages written back (untimed) before the next, so
all three sides write into the page cache and the ratios compare work,
not the disk.  Prints min / median / max seconds per side
and the ratios of the medians: cp / export (target >= 0.5) and recompress
/ export (target >= 10); then the same for the CPU seconds each side used
(user + system), which a busy shared machine disturbs less."""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

RECOMPRESS = r"""
import sys, blosc2, h5py, hdf5plugin
src, out = sys.argv[1], sys.argv[2]
a = blosc2.open(src)
with h5py.File(out, "w") as f:
    d = f.create_dataset("data", shape=a.shape, dtype=a.dtype, chunks=(1,) + a.shape[1:],
                         **hdf5plugin.Blosc2(cname="lz4", clevel=5,
                                             filters=hdf5plugin.Blosc2.SHUFFLE))
    for i in range(a.shape[0]):
        d[i] = a[i]
"""


def detector_image(k: int, rng: np.random.Generator) -> np.ndarray:
    y, x = np.mgrid[0:1024, 0:1024].astype(np.float32)
    r = np.hypot(x - 512 - k % 7, y - 500 + k % 5)
    bg = 20 + 0.01 * x + 40 * np.exp(-((r - 300) / 40) ** 2)
    img = rng.poisson(bg).astype(np.uint16)
    peaks = rng.integers(0, 1024, (50, 2))
    img[peaks[:, 0], peaks[:, 1]] = 60000
    return img


def make_frame(path: str, nimg: int) -> None:
    import blosc2
    rng = np.random.default_rng(1)
    nd = blosc2.empty((nimg, 1024, 1024), dtype=np.uint16, urlpath=path, mode="w",
                      chunks=(1, 1024, 1024),
                      cparams={"codec": blosc2.Codec.LZ4, "clevel": 5, "nthreads": 2,
                               "filters": [blosc2.Filter.SHUFFLE]})
    base = [detector_image(k, rng) for k in range(16)]
    for i in range(nimg):
        nd[i] = base[i % 16] + np.uint16(i % 3)
    del nd


def timed(cmd: list[str], cpu: list[float]) -> float:
    """Wall seconds of cmd; its user + system CPU seconds appended to cpu
    (the figure that does not depend on what else the machine runs)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    t = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True, help="the built b2stream")
    ap.add_argument("--gib", type=float, default=2.0, help="image bytes in GiB (default 2)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where the files go (default a temp dir)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-export-", dir=args.dir)
    try:
        nimg = max(1, int(args.gib * (1 << 30)) // (2 << 20))
        frame = os.path.join(work, "images.b2nd")
        t0 = time.perf_counter()
        make_frame(frame, nimg)
        fsize = os.path.getsize(frame)
        print(f"frame: {nimg} images of 1024 x 1024 u2 = {nimg * 2 / 1024:.2f} GiB, "
              f"{fsize / (1 << 30):.3f} GiB on disk (ratio {nimg * (2 << 20) / fsize:.2f}), "
              f"made in {time.perf_counter() - t0:.1f} s")
        with open(frame, "rb") as f:          # into the page cache
            while f.read(64 << 20):
                pass
        out = os.path.join(work, "out")
        script = os.path.join(work, "recompress.py")
        with open(script, "w") as f:
            f.write(RECOMPRESS)
        sides = {
            "cp": ["cp", frame, out],
            "export": [args.cli, "export", frame, out],
            "recompress": [sys.executable, script, frame, out],
        }
        times: dict[str, list[float]] = {k: [] for k in sides}
        cpus: dict[str, list[float]] = {k: [] for k in sides}
        names = list(sides)
        for r in range(args.rounds):
            order = names[r % 3:] + names[:r % 3]
            for name in order:
                times[name].append(timed(sides[name], cpus[name]))
                if name == "export":
                    osize = os.path.getsize(out)
                os.unlink(out)
                os.sync()   # untimed: no side pays for the last one's writeback
            print(f"round {r + 1}: " + "  ".join(f"{n} {times[n][-1]:.3f} s" for n in names),
                  flush=True)
        med = {n: statistics.median(t) for n, t in times.items()}
        for n in names:
            t = times[n]
            print(f"{n:10s} min {min(t):.3f}  median {med[n]:.3f}  max {max(t):.3f} s"
                  f"  ({fsize / med[n] / (1 << 20):.0f} MiB/s of frame)")
        cmed = {n: statistics.median(t) for n, t in cpus.items()}
        print("CPU seconds (user + system), median: " +
              "  ".join(f"{n} {cmed[n]:.3f}" for n in names))
        print(f"CPU ratios: cp / export {cmed['cp'] / cmed['export']:.2f}, "
              f"recompress / export {cmed['recompress'] / cmed['export']:.1f}")
        print(f"export HDF5 size {osize / (1 << 30):.3f} GiB ({osize / fsize:.4f} x frame)")
        print(f"export speed / cp speed (median): {med['cp'] / med['export']:.2f}x (target >= 0.5)")
        print(f"export vs recompress (median): {med['recompress'] / med['export']:.1f}x faster "
              f"(target >= 10)")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

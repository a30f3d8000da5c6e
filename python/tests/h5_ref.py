"""The h5py + hdf5plugin side of test_export_h5.py, run by the pinned
reference interpreter ($B2S_VENV/bin/python): reads an HDF5 file the way
analysis scripts do and prints what it saw as one JSON object.

    h5_ref.py images FILE DATASET   every image (index along dimension 0)
                                    as the SHA-256 of its C-order bytes
    h5_ref.py tree FILE             every group and dataset: attributes,
                                    shape, dtype, small values
    h5_ref.py swmr FILE DATASET N TIMEOUT
                                    open with swmr=True, refresh until the
                                    dataset has N images; the counts seen
"""
from __future__ import annotations

import hashlib
import json
import sys
import time

import h5py
import hdf5plugin  # noqa: F401  (registers the Blosc2 and bitshuffle filters)
import numpy as np


def plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.generic):
        return plain(v.item())
    return v


def images(path: str, name: str) -> dict:
    with h5py.File(path, "r") as f:
        d = f[name]
        a = d[...]
        out = {"shape": list(d.shape), "dtype": d.dtype.str, "chunks": list(d.chunks),
               "filters": {k: list(v) for k, v in d._filters.items()},
               "images": [hashlib.sha256(np.ascontiguousarray(a[i]).tobytes()).hexdigest()
                          for i in range(a.shape[0])]}
        heads = []
        for i in range(min(-(-a.shape[0] // d.chunks[0]), 4)):
            off = (i * d.chunks[0],) + (0,) * (len(d.shape) - 1)
            heads.append(d.id.read_direct_chunk(off)[1][:16].hex())
        out["chunk_heads"] = heads
        return out


def tree(path: str) -> dict:
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            e = {"attrs": {k: plain(v) for k, v in obj.attrs.items()}}
            if isinstance(obj, h5py.Dataset):
                e.update(kind="dataset", shape=list(obj.shape), dtype=obj.dtype.str)
                if obj.size <= 4096 and "data/data" not in name:
                    v = obj[()]
                    if obj.dtype.kind == "O":
                        v = obj.asstr()[()]
                    e["value"] = plain(v)
            else:
                e["kind"] = "group"
            out[name] = e
        f.visititems(visit)
        out["/"] = {"attrs": {k: plain(v) for k, v in f.attrs.items()}, "kind": "group"}
    return out


def swmr(path: str, name: str, want: int, timeout: float) -> dict:
    seen = []
    deadline = time.monotonic() + timeout
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        d = f[name]
        while True:
            d.refresh()
            n = d.shape[0]
            if not seen or seen[-1] != n:
                seen.append(n)
            if n >= want or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        a = d[...]
        return {"seen": seen,
                "images": [hashlib.sha256(np.ascontiguousarray(a[i]).tobytes()).hexdigest()
                           for i in range(a.shape[0])]}


def write(path: str, how: str, seed: int) -> dict:
    """A (5, 40, 30) uint16 dataset /data written by h5py: gzip, none
    (contiguous), blosc2 (hdf5plugin's filter, b2nd chunks) or bslz4."""
    a = np.random.default_rng(seed).integers(0, 500, (5, 40, 30), dtype=np.uint16)
    kw = {"gzip": dict(chunks=(2, 40, 30), compression="gzip"),
          "none": {},
          "blosc2": dict(chunks=(1, 40, 30), **hdf5plugin.Blosc2(cname="zstd")),
          "bslz4": dict(chunks=(1, 20, 30), **hdf5plugin.Bitshuffle(cname="lz4"))}[how]
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=a, **kw)
    return {"sha": hashlib.sha256(a.tobytes()).hexdigest()}


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "images":
        r = images(sys.argv[2], sys.argv[3])
    elif cmd == "tree":
        r = tree(sys.argv[2])
    elif cmd == "swmr":
        r = swmr(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    elif cmd == "write":
        r = write(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        raise SystemExit(f"unknown command {cmd}")
    json.dump(r, sys.stdout)

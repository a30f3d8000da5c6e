"""The python-blosc2 side of test_interop_blosc2.py, run by the pinned
reference interpreter ($B2S_VENV/bin/python): python-blosc2 reads, appends
to or writes a frame and prints what it saw as one JSON object.

    blosc2_ref.py read PATH
    blosc2_ref.py append PATH SEED COUNT NBYTES
    blosc2_ref.py write-schunk PATH contiguous|sparse SEED COUNT NBYTES
    blosc2_ref.py write-ndarray PATH SEED [BLOCKSHAPE]

Chunks are given as the SHA-256 of their decompressed bytes; the data a
command writes comes from data(seed, i, nbytes), which the test computes
too."""
from __future__ import annotations

import hashlib
import json
import sys

import blosc2
import numpy as np


def data(seed: int, i: int, nbytes: int) -> bytes:
    """Compressible but not trivial bytes for chunk i."""
    rng = np.random.default_rng(seed * 1000003 + i)
    return (rng.integers(0, 40, nbytes // 2, dtype=np.uint16)
            .tobytes().ljust(nbytes, b"\0"))


def sha(b) -> str:
    return hashlib.sha256(bytes(b)).hexdigest()


def jsonable(v):
    if isinstance(v, (bytes, bytearray)):
        return {"bytes": bytes(v).hex()}
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def describe(obj) -> dict:
    out: dict = {"kind": type(obj).__name__}
    if isinstance(obj, blosc2.NDArray):
        out.update(shape=list(obj.shape), chunks=list(obj.chunks),
                   blocks=list(obj.blocks), dtype=obj.dtype.str)
        # one index of dimension 0 at a time, and the whole array at once
        # (b2nd slicing across chunks, which fails where single ones work)
        if obj.ndim:
            out["images"] = [sha(np.ascontiguousarray(obj[i]).tobytes())
                             for i in range(obj.shape[0])]
        try:
            out["array_sha"] = sha(np.ascontiguousarray(obj[...]).tobytes())
        except RuntimeError as e:
            out["array_error"] = str(e)
        sc = obj.schunk
    else:
        sc = obj
    out["nchunks"] = sc.nchunks
    out["typesize"] = sc.typesize
    out["contiguous"] = bool(sc.contiguous)
    out["chunks"] = [sha(sc.decompress_chunk(i)) for i in range(sc.nchunks)]
    out["nbytes"] = [len(sc.decompress_chunk(i)) for i in range(sc.nchunks)]
    out["stored"] = [sha(sc.get_chunk(i)) for i in range(sc.nchunks)]
    out["b2nd_meta"] = jsonable(sc.meta["b2nd"]) if "b2nd" in sc.meta else None
    out["blocksize"] = [int.from_bytes(sc.get_chunk(i)[8:12], "little")
                        for i in range(sc.nchunks)]
    out["meta"] = sorted(sc.meta.keys())
    out["vlmeta"] = {k: jsonable(sc.vlmeta[k]) for k in sc.vlmeta.keys()}
    return out


def main(argv: list[str]) -> dict:
    cmd, path = argv[0], argv[1]
    if cmd == "read":
        return describe(blosc2.open(path, mode="r"))
    if cmd == "append":
        seed, count, nbytes = (int(x) for x in argv[2:5])
        obj = blosc2.open(path, mode="a")
        sc = obj.schunk if isinstance(obj, blosc2.NDArray) else obj
        for i in range(count):
            sc.append_data(data(seed, i, nbytes))
        return describe(blosc2.open(path, mode="r"))
    if cmd == "write-schunk":
        layout = argv[2]
        seed, count, nbytes = (int(x) for x in argv[3:6])
        sc = blosc2.SChunk(chunksize=nbytes, urlpath=path, mode="w",
                           contiguous=(layout == "contiguous"),
                           cparams={"typesize": 2, "codec": blosc2.Codec.ZSTD,
                                    "clevel": 5, "nthreads": 1},
                           meta={"kind": b"ref"})
        for i in range(count):
            sc.append_data(data(seed, i, nbytes))
        sc.vlmeta["series"] = {"detector": "ref", "energy_eV": 12400.0,
                               "axes": [1, 2, 3]}
        del sc
        return describe(blosc2.open(path, mode="r"))
    if cmd == "write-ndarray":
        seed = int(argv[2])
        rng = np.random.default_rng(seed)
        blocks = tuple(int(x) for x in argv[3].split(",")) if len(argv) > 3 else (1, 10, 30)
        a = rng.integers(0, 1000, (6, 40, 30), dtype=np.uint16)
        nd = blosc2.asarray(a, urlpath=path, mode="w", chunks=(1, 40, 30),
                            blocks=blocks,
                            cparams={"nthreads": 1, "codec": blosc2.Codec.LZ4})
        nd.schunk.vlmeta["series"] = {"detector": "nd"}
        del nd
        out = describe(blosc2.open(path, mode="r"))
        out["source_sha"] = sha(a.tobytes())
        return out
    raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    json.dump(main(sys.argv[1:]), sys.stdout)

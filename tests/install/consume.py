"""Consumer of the package install test, run by the wheel's interpreter:
checks that b2stream and its native library come from the wheel, then that
the stream read live from the daemon (pyzmq) and the frame file read with
libb2s_py both hold exactly the buffers install-producer sent.

    python consume.py ENDPOINT STREAM FRAME COUNT PREFIX
(ENDPOINT '-': only the frame file; PREFIX: where b2stream must live.)"""
import os
import sys

import numpy as np

import b2stream
from b2stream import _native

NITEMS = 64 * 1024


def expected(b: int) -> bytes:
    i = np.arange(NITEMS, dtype=np.uint32)
    return (np.uint32(b * 1000) + i % 4096).astype("<u4").tobytes()


def check(what: str, index: int, data) -> None:
    if isinstance(data, (bytes, bytearray, memoryview)):
        got = bytes(data)
    else:
        got = np.ascontiguousarray(data).tobytes()
    if got != expected(index):
        sys.exit(f"consume: {what} chunk {index}: bytes differ ({len(got)} bytes)")


def main() -> None:
    endpoint, stream, frame, count, prefix = sys.argv[1:6]
    count = int(count)
    for path in (b2stream.__file__, _native.lib()._name):
        if not os.path.realpath(path).startswith(os.path.realpath(prefix)):
            sys.exit(f"consume: {path} is not from the wheel under {prefix}")
    if endpoint != "-":
        with b2stream.Session(endpoint, name="install-test") as s:
            f = s.follow(stream, 0, timeout=10.0)
            for _ in range(count):
                index, data = next(f)
                check("followed", index, data)
    fr = b2stream.Frame(frame)
    if fr.nchunks != count:
        sys.exit(f"consume: {frame} has {fr.nchunks} chunks, expected {count}")
    for i in range(count):
        check("frame", i, fr.chunk(i, raw=True))
    print(f"consume: {count} chunks match, live and from {frame}")


main()

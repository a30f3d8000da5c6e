"""The Stream V2 messages tickit-devices recorded from an EIGER2 Si 16M,
read with readers b2stream did not write, for tests/test_daemon_stream2.c.

usage: python capture_ref.py pixels CAPDIR OUT
    The image message's pixels, as the bitshuffle filter of hdf5plugin
    decodes its bslz4 data (written as an HDF5 chunk, read back through
    the filter), to OUT raw; prints "Y X DTYPE".
usage: python capture_ref.py check CAPDIR FRAME PIXELS
    python-blosc2 opens FRAME: one image of PIXELS, and a series
    metadata map holding every field of the start message (cbor2 reads
    it), its byte strings as bytes, arm_date as its text.

Run by the reference venv's python (scripts/make-venv: cbor2, h5py,
hdf5plugin, python-blosc2)."""
import datetime
from collections.abc import Mapping
import os
import sys
import tempfile

import blosc2
import cbor2
import h5py
import hdf5plugin
import numpy as np


def load(capdir, kind):
    with open(os.path.join(capdir, kind + ".cbor"), "rb") as f:
        return cbor2.loads(f.read())     # tag 55799 or not, the same map


def pixels(capdir, out):
    img = load(capdir, "image")
    (name, arr), = img["data"].items()
    shape, typed = arr.value                       # tag 40: [shape, tag 69]
    assert typed.tag == 69, typed.tag              # uint16, little endian
    algo, elem, framed = typed.value.value         # tag 56500
    assert (algo, elem) == ("bslz4", 2), (algo, elem)
    with tempfile.TemporaryDirectory() as tmp:
        with h5py.File(os.path.join(tmp, "x.h5"), "w") as f:
            d = f.create_dataset("d", shape=tuple(shape), dtype="<u2",
                                 chunks=tuple(shape),
                                 **hdf5plugin.Bitshuffle(cname="lz4"))
            d.id.write_direct_chunk((0, 0), framed)
            pix = d[:]
    pix.tofile(out)
    print(shape[0], shape[1], pix.dtype.str)


def same(a, b):
    if isinstance(b, datetime.datetime):           # stored as its text
        return datetime.datetime.fromisoformat(a) == b
    if isinstance(b, Mapping):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def check(capdir, frame, want):
    start = load(capdir, "start")
    a = blosc2.open(frame)
    series = a.schunk.vlmeta["series"]
    y, x = start["image_size_y"], start["image_size_x"]
    assert a.shape == (start["number_of_images"], y * x), a.shape
    w = np.fromfile(want, dtype="<u2")
    assert (a[0] == w).all(), "pixels differ"
    assert (a[0].reshape(y, x) == w.reshape(y, x)).all()
    bad = [k for k in start if k != "type" and
           (k not in series or not same(series[k], start[k]))]
    assert not bad, "series metadata differs in %s" % bad
    assert series["channel"] == start["channels"][0], series["channel"]
    assert series["image_dtype"] == "uint16", series.get("image_dtype")
    print("ok: %d fields of the start, %dx%d image" % (len(start) - 1, y, x))


if __name__ == "__main__":
    if sys.argv[1] == "pixels":
        pixels(sys.argv[2], sys.argv[3])
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4])

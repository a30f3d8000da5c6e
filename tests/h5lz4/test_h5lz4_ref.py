"""Cross-check of the bslz4/lz4 -> Blosc2 conversion against the reference
implementations: framings written by the HDF5 filters (bitshuffle's `bshuf`
through Debian's python3-hdf5plugin, and the pinned venv's hdf5plugin), read
back raw with h5py's direct chunk read, converted by h5lz4_conv, and the
resulting chunks decoded by python-blosc2 (c-blosc2).  Also our own framing.
Prints the share of images stored without recompression per set.

Run with the venv's python (B2S_VENV, else <source>/.venv); exits 77 (skip)
when neither the venv nor Debian's h5py/hdf5plugin is there."""
import os
import subprocess
import sys
import tempfile

from venv_ref import in_venv

CONV = os.environ["B2S_H5CONV"]
SHAPES = [(514, 1030), (512, 1030), (37, 91), (3, 5), (64, 64), (1, 4101)]
DTYPES = ["u1", "u2", "u4"]

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "ref_framings.py")


def generate(python, where):
    r = subprocess.run([python, GEN, where, repr(SHAPES), repr(DTYPES)],
                       capture_output=True, text=True)
    if r.returncode:
        print("generator %s failed: %s" % (python, r.stderr.strip()[-300:]))
        return False
    return True


def check_b2nd(args, pix, name):
    """Padded chunks as rows of a flattened b2nd array whose 1-D blocks are
    the chunk's blocks: python-blosc2 slices them like any array."""
    import blosc2
    import numpy as np
    r = subprocess.run(args + ["pad"], capture_output=True, text=True)
    assert r.returncode == 0, (name, r.stderr)
    path, blocksize = r.stdout.split()[0], int(r.stdout.split()[3])
    chunk = open(args[6], "rb").read()
    npix, es = pix.size, pix.dtype.itemsize
    a = blosc2.zeros(shape=(2, npix), chunks=(1, npix),
                     blocks=(1, blocksize // es), dtype=pix.dtype)
    assert a.schunk.chunksize == len(blosc2.decompress2(chunk)), name
    a.schunk.update_chunk(1, chunk)
    flat = pix.ravel()
    assert np.array_equal(a[1], flat), name
    assert np.array_equal(a[:, npix // 3: npix // 2 + 7][1], flat[npix // 3: npix // 2 + 7]), name
    assert not a[0].any()
    return path


def check_set(label, where, own):
    import blosc2
    import numpy as np
    paths = {"verbatim": 0, "patched": 0, "recompressed": 0}
    n = 0
    for shape in SHAPES:
        for dt in DTYPES:
            for kind in ("bslz4", "lz4"):
                name = "%s_%s_%dx%d" % (kind, dt, *shape)
                pix = np.fromfile(os.path.join(where, name + ".pix"), dtype=dt)
                es = pix.dtype.itemsize
                src = os.path.join(where, name + (".pix" if own else ".h5lz4"))
                out = os.path.join(where, name + (".own" if own else "") + ".chunk")
                args = [CONV, kind, str(es), str(es), str(pix.nbytes), src, out]
                r = subprocess.run(args + (["frame"] if own else []),
                                   capture_output=True, text=True)
                assert r.returncode == 0, (name, r.stderr)
                paths[r.stdout.split()[0]] += 1
                chunk = open(out, "rb").read()
                back = blosc2.decompress2(chunk)
                assert back == pix.tobytes(), name
                n += 1
                if pix.nbytes >= 32:
                    check_b2nd(args + (["frame"] if own else []), pix, name)
    share = (paths["verbatim"] + paths["patched"]) / n
    print("%s: %d images, %s, stored without recompression: %.0f%%"
          % (label, n, paths, 100 * share))
    return n


def main():
    vpy, rc = in_venv()
    if vpy is None:
        return rc
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        sets = [("debian hdf5plugin (bshuf filter)", "/usr/bin/python3"),
                ("venv hdf5plugin", vpy)]
        for label, py in sets:
            where = os.path.join(tmp, str(len(label)))
            os.mkdir(where)
            if not generate(py, where):
                if py == vpy:
                    return 1
                print("%s: not installed, set skipped" % label)
                continue
            total += check_set(label, where, False)
            if py == vpy:
                total += check_set("own bitshuffle+lz4 framing", where, True)
    print("all %d chunks decode in python-blosc2 to the pixels" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())

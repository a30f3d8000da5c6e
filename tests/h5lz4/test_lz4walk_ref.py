"""The LZ4 sequence walk that lets the detector source store a stream
without decoding it must vouch only for blocks that c-blosc2's own LZ4
decodes, to the same bytes: damaged LZ4 blocks the walk vouched for
(lz4walk_cases, checked there against liblz4), stored in Blosc2 chunks as
the source stores streams, decoded by python-blosc2 (c-blosc2 with its
bundled LZ4).

Run with the venv's python (B2S_VENV, else <source>/.venv); exits 77 (skip)
without it."""
import os
import struct
import subprocess
import sys
import tempfile

from venv_ref import in_venv

CASES = os.environ["B2S_LZ4WALK"]


def main():
    vpy, rc = in_venv()
    if vpy is None:
        return rc
    import blosc2
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cases")
        subprocess.run([CASES, "20000", "7", path], check=True)
        data = open(path, "rb").read()
    at, n, bad = 0, 0, 0
    while at < len(data):
        (clen,) = struct.unpack_from("<I", data, at)
        chunk = data[at + 4:at + 4 + clen]
        at += 4 + clen
        (nb,) = struct.unpack_from("<I", data, at)
        want = data[at + 4:at + 4 + nb]
        at += 4 + nb
        try:
            got = blosc2.decompress(chunk)
        except Exception:  # noqa: BLE001 - any refusal is a disagreement
            got = None
        n += 1
        if got != want:
            bad += 1
    print("%d vouched blocks, c-blosc2 %s disagrees on %d" % (n, blosc2.blosclib_version, bad))
    return 0 if n >= 20000 and bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Framings written by the HDF5 filters, for tests: for every shape, dtype
and kind (bslz4 through bitshuffle's filter, lz4 through the HDF5 LZ4
filter), a dataset of N images chunked one image a chunk, each chunk read
back raw with h5py's direct chunk read.  Writes NAME.h5lz4 and NAME.pix
for image 0 and NAME.K.h5lz4, NAME.K.pix for image K > 0, NAME being
KIND_DTYPE_YxX.

usage: python ref_framings.py OUT "SHAPES" "DTYPES" [N]
Run by the interpreter whose h5py and hdf5plugin are to be checked
(Debian's python3-hdf5plugin, or the pinned venv's)."""
import ast
import sys
import warnings

import h5py
import hdf5plugin
import numpy as np

warnings.simplefilter("ignore")


def main(out, shapes, dtypes, n):
    rng = np.random.default_rng(5)
    with h5py.File(out + "/x.h5", "w") as f:
        for shape in shapes:
            for dt in dtypes:
                pix = rng.poisson(0.3, size=(n,) + shape).astype(dt)
                pix[:, 0, 0] = np.iinfo(dt).max
                for kind, filt in (("bslz4", hdf5plugin.Bitshuffle(lz4=True)),
                                   ("lz4", hdf5plugin.LZ4())):
                    name = "%s_%s_%dx%d" % (kind, dt, *shape)
                    d = f.create_dataset(name, data=pix, chunks=(1,) + shape,
                                         **filt)
                    for k in range(n):
                        _, raw = d.id.read_direct_chunk((k, 0, 0))
                        stem = out + "/" + name + ("" if k == 0 else ".%d" % k)
                        open(stem + ".h5lz4", "wb").write(raw)
                        pix[k].tofile(stem + ".pix")


if __name__ == "__main__":
    main(sys.argv[1], ast.literal_eval(sys.argv[2]),
         ast.literal_eval(sys.argv[3]),
         int(sys.argv[4]) if len(sys.argv) > 4 else 1)

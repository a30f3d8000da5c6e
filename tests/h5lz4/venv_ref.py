"""The reference venv (scripts/make-venv: python-blosc2, h5py, hdf5plugin
pinned) for the scripts of this folder: $B2S_VENV, else $B2S_SRC/.venv."""
import os
import subprocess
import sys


def venv_python():
    v = os.environ.get("B2S_VENV") or os.path.join(os.environ.get("B2S_SRC", "."), ".venv")
    p = os.path.join(v, "bin", "python")
    return p if os.path.exists(p) else None


def in_venv():
    """(the venv's python, None) when this process is it; else (None,
    exit status): 77 (skipped) without a venv, or the status of this
    script run again by the venv's python."""
    vpy = venv_python()
    if vpy is None:
        print("no venv (B2S_VENV): skipped")
        return None, 77
    if os.path.realpath(sys.executable) != os.path.realpath(vpy):
        return None, subprocess.call([vpy] + sys.argv)
    return vpy, None

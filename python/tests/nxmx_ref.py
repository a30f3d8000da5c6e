"""The NeXus readers of the field on an export, run by the pinned reference
interpreter ($B2S_VENV/bin/python, tests/python-ref/requirements.txt);
prints what each saw as one JSON object.

    nxmx_ref.py geometry FILE    DIALS's reader (PyPI nxmx): the geometry it
                                 derives (pixel size, distance and beam centre
                                 from the detector's dependency chain,
                                 wavelength, scan axis), names, times
    nxmx_ref.py validate FILE    nxvalidate against NXmx and the base classes:
                                 its error and warning counts and messages
    nxmx_ref.py pyfai FILE RAW.npy START.json
                                 pyFAI's integration of image 0 of FILE with
                                 the geometry built from FILE alone, against
                                 that of RAW (the pixels sent) with the
                                 geometry of the start message
    nxmx_ref.py blosc2 FRAME...  python-blosc2 opens each frame as an NDArray:
                                 shape, each image's SHA-256, slices
    nxmx_ref.py bad-b2nd FRAME   writes a b2nd frame of unpadded chunks with
                                 python-blosc2; what c-blosc2 reads of it
    nxmx_ref.py strings FILE     string types (ASCII or UTF-8), image shapes
    nxmx_ref.py links FILE       the external links of /entry/data
    nxmx_ref.py arrays FILE      the detector's mask, flatfield and flags
    nxmx_ref.py plugins FILE     image 0 read by a script: h5py, silx.io.open,
                                 with and without hdf5plugin / HDF5_PLUGIN_PATH
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import sys
from contextlib import redirect_stdout

import h5py
import hdf5plugin  # noqa: F401  (h5py needs it imported before it reads chunks)
import numpy as np


def _str(v):
    return v.decode() if isinstance(v, bytes) else (None if v is None else str(v))


def geometry(path: str) -> dict:
    import nxmx
    with h5py.File(path, "r") as f:
        entry = nxmx.NXmx(f).entries[0]
        inst = entry.instruments[0]
        det = inst.detectors[0]
        mod = det.modules[0]
        fast, slow = mod.fast_pixel_direction, mod.slow_pixel_direction
        # pixel (0, 0)'s corner and the unit pixel steps in the lab frame
        base = nxmx.get_cumulative_transformation(
            nxmx.get_dependency_chain(fast.depends_on))[0]
        origin = base[:3, 3] / 1000.0                      # mm -> m
        fvec = base[:3, :3] @ np.asarray(fast.vector, float)
        svec = base[:3, :3] @ np.asarray(slow.vector, float)
        px = float(fast[()].to("m").magnitude[0])
        py = float(slow[()].to("m").magnitude[0])
        normal = np.cross(fvec, svec)
        # where the beam (the z axis) meets the detector plane, in pixels
        t = float(origin @ normal) / float(normal[2])
        hit = np.array([0.0, 0.0, t]) - origin
        chain = nxmx.get_dependency_chain(entry.samples[0].depends_on)
        axes = nxmx.get_rotation_axes(chain)
        scan = [str(n) for n, s in zip(axes.names, axes.is_scan_axis) if s]
        scan_axis = None
        for a in chain:
            if a.path.split("/")[-1] in scan:
                v = a[()].to("deg").magnitude
                scan_axis = {"name": a.path.split("/")[-1], "vector": list(map(float, a.vector)),
                             "start": float(v[0]), "increment": float(v[1] - v[0]),
                             "n": int(v.size)}
        beam = inst.beams[0]
        flux = beam.total_flux
        source = entry.source.name if entry._sources else None
        return {
            "pixel_size": [px, py],
            "fast_vector": list(map(float, fvec)), "slow_vector": list(map(float, svec)),
            "distance": float(t),
            "distance_field": float(det.distance.to("m").magnitude),
            "beam_center": [float(hit @ fvec) / px, float(hit @ svec) / py],
            "wavelength": float(np.squeeze(beam.incident_wavelength.to("angstrom").magnitude)),
            "flux": None if flux is None else float(flux.to("Hz").magnitude),
            "axes": [str(n) for n in axes.names],
            "scan_axis": scan_axis,
            "image_shape": list(map(int, mod.data_size)),
            "sensor": [det.sensor_material, float(det.sensor_thickness.to("m").magnitude)],
            "saturation_value": det.saturation_value,
            "description": det.description, "serial_number": det.serial_number,
            "pixel_mask": None if det.pixel_mask is None else list(det.pixel_mask.shape),
            "instrument": inst.name if "name" in inst else None,
            "source": source,
            "sample": entry.samples[0].name if "name" in entry.samples[0] else None,
            "start_time": entry.start_time.isoformat(),
            "end_time": entry.end_time.isoformat() if entry.end_time else None,
            "end_time_estimated": entry.end_time_estimated.isoformat(),
            "definition": entry.definition,
        }


def validate(path: str) -> dict:
    """nxvalidate's messages with their levels: "error" and "warning" ones,
    each with the path of the group or field it was checking."""
    # its log handler asks for the terminal's width
    os.get_terminal_size = lambda *a: os.terminal_size((400, 50))
    import logging
    from nxvalidate import validate as nxv

    class Keep(logging.Handler):
        def emit(self, record):
            msg = re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage())
            if record.levelno == logging.CRITICAL:     # its 'Field: PATH' lines
                self.where = msg.strip()
            elif record.levelno >= logging.WARNING:
                self.out.append({"level": record.levelname.lower(),
                                 "where": self.where, "message": msg.strip()})

    out = {"nxdl": _nxdl_path(nxv)}
    for what in ("application", "base"):
        keep = Keep()
        keep.out, keep.where = [], ""
        nxv.logger.handlers = [keep]
        nxv.logger.setLevel(logging.WARNING)
        nxv.logger.total = {"warning": 0, "error": 0}
        with redirect_stdout(io.StringIO()):
            if what == "application":
                nxv.validate_application(path)
            else:
                nxv.validate_file(path)
        out[what] = {"errors": nxv.logger.total["error"],
                     "warnings": nxv.logger.total["warning"], "messages": keep.out}
        for m in keep.out:
            if m["level"] == "error":
                m["nxmx_says"] = _nxmx_says(out["nxdl"], m)
    return out


def _nxdl_path(nxv) -> str:
    return os.path.join(os.path.dirname(nxv.__file__), "definitions",
                        "applications", "NXmx.nxdl.xml")


def _nxmx_says(nxdl: str, m: dict) -> str | None:
    """Why NXmx's own text does not require what nxvalidate 0.3.5b3 calls
    missing (it reads every element without minOccurs as required, where
    NXDL makes recommended="true" and optional="true" ones optional), or
    that NXmx places the group where the base class has none; None when
    NXmx does require it."""
    import xml.etree.ElementTree as ET
    ns = "{http://definition.nexusformat.org/nxdl/3.1}"
    root = ET.parse(nxdl).getroot()
    where, msg = m["where"], m["message"]
    if msg.endswith("is an invalid class in NXentry"):
        cls = msg.split()[0]
        entry = root.find(f"{ns}group[@type='NXentry']")
        if entry is not None and entry.find(f"{ns}group[@type='{cls}']") is not None:
            return f"NXmx places {cls} in NXentry"
        return None
    if msg.startswith("This required field") and where.startswith("Field: "):
        name, kinds = where.split("/")[-1], ("field",)
    elif "group(s) are in the NeXus file" in msg:
        name, kinds = msg.split()[1], ("group",)
    else:
        return None
    if name == "NXdetector_channel":
        # the NXmx nxvalidate ships (2024) predates NIAC's making it optional
        return 'optional="true" in NXmx since nexusformat/definitions#1535 (2025)'
    for kind in kinds:
        for el in root.iter(f"{ns}{kind}"):
            if el.get("name" if kind == "field" else "type") != name:
                continue
            for a in ("recommended", "optional"):
                if el.get(a) == "true":
                    return f'{a}="true" in NXmx'
            if el.get("minOccurs") == "0":
                return 'minOccurs="0" in NXmx'
    return None


def silx_default(path: str) -> dict:
    """What silx plots: the NXdata it finds from the root's @default."""
    from silx.io import nxdata, open as silx_open
    with silx_open(path) as f:
        d = nxdata.get_default(f)
        return {"found": d is not None and d.is_valid,
                "signal": None if d is None else d.signal.name,
                "shape": None if d is None else list(d.signal.shape),
                "interpretation": None if d is None else d.interpretation}


def pyfai(path: str, raw: str, start: str) -> dict:
    import pyFAI.detectors
    from pyFAI.integrator.azimuthal import AzimuthalIntegrator
    g = geometry(path)
    s = json.load(open(start))
    with h5py.File(path, "r") as f:
        d = f["entry/data"]
        name = "data" if "data" in d else "data_000001"
        img = d[name][0]
        mask = f["entry/instrument/detector/pixel_mask"][()] if \
            "pixel_mask" in f["entry/instrument/detector"] else None

    def curve(image, px, py, shape, dist, bx, by, wl, mask):
        det = pyFAI.detectors.Detector(pixel1=py, pixel2=px, max_shape=shape)
        ai = AzimuthalIntegrator(dist=dist, poni1=by * py, poni2=bx * px,
                                 detector=det, wavelength=wl * 1e-10)
        r = ai.integrate1d(image, 200, unit="2th_deg", mask=mask,
                           method=("no", "histogram", "cython"))
        return r.radial, r.intensity

    # from the file alone: the geometry nxmx derives, the image and mask read
    a = curve(img, *g["pixel_size"], tuple(g["image_shape"]), g["distance"],
              *g["beam_center"], g["wavelength"], None if mask is None else mask & 0xFFFF)
    # from the pixels sent and the start message
    pix = np.load(raw)
    m2 = np.load(raw.replace(".npy", ".mask.npy")) if os.path.exists(
        raw.replace(".npy", ".mask.npy")) else None
    b = curve(pix, s["pixel_size_x"], s["pixel_size_y"], pix.shape,
              s["detector_translation"][2], s["beam_center_x"], s["beam_center_y"],
              s["incident_wavelength"], None if m2 is None else m2 & 0xFFFF)
    return {"radial_max_diff": float(np.max(np.abs(a[0] - b[0]))),
            "intensity_max_diff": float(np.nanmax(np.abs(a[1] - b[1]))),
            "intensity_max": float(np.nanmax(b[1])), "points": int(len(a[1])),
            "image_equal": bool(np.array_equal(img, pix))}


def blosc2(paths: list[str]) -> dict:
    """Each frame as python-blosc2's NDArray: every image's SHA-256, and
    whether slices that end in the chunk's last (partial) block read the
    same items as the whole image."""
    import blosc2 as b2
    out = {}
    for p in paths:
        a = b2.open(p)
        v = a[...]
        ok = all(np.array_equal(a[i, -5:, 3:-3], v[i, -5:, 3:-3]) and
                 np.array_equal(a[i, 1:4], v[i, 1:4]) for i in range(v.shape[0]))
        out[p] = {"shape": list(v.shape), "dtype": v.dtype.str,
                  "chunks": list(a.chunks), "blocks": list(a.blocks),
                  "images": [hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()
                             for x in v],
                  "slices_ok": bool(ok)}
    return out


def bad_b2nd(path: str) -> dict:
    """A b2nd array (2, 10, 30) u2 in blocks (1, 3, 30) whose chunk 0 c-blosc2
    is given as 600 bytes (not padded to the 720 of whole blocks, as import
    used to write them): what c-blosc2 then reads of it."""
    import blosc2 as b2
    a = b2.zeros((2, 10, 30), dtype="<u2", chunks=(1, 10, 30), blocks=(1, 3, 30),
                 urlpath=path, mode="w")
    a.schunk.update_chunk(0, b2.compress2(np.arange(300, dtype="<u2").tobytes(),
                                          typesize=2, blocksize=180))
    del a
    a = b2.open(path)
    try:
        a[...]
        return {"full_read": "ok"}
    except Exception as e:  # noqa: BLE001  (what it says is the result)
        return {"full_read": f"{type(e).__name__}: {e}"}


def strings(path: str) -> dict:
    """Every string attribute and dataset of the file (and of the data
    files it links to): how many, and those stored as UTF-8 although
    ASCII; the image datasets' shapes."""
    n, bad, images = 0, [], []

    def kind(tid, value: bytes):
        nonlocal n
        if tid.get_class() != h5py.h5t.STRING:
            return
        n += 1
        if tid.get_cset() != h5py.h5t.CSET_ASCII and all(c < 0x80 for c in value):
            bad.append(value.decode())

    def raw(v):
        if isinstance(v, bytes):
            return v
        if isinstance(v, str):
            return v.encode()
        if isinstance(v, np.ndarray):
            return b"".join(raw(x) for x in v.ravel())
        return b""

    def visit(obj):
        for k in obj.attrs:
            kind(obj.attrs.get_id(k).get_type(), raw(obj.attrs[k]))
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "SOU":
            kind(obj.id.get_type(), raw(obj[()]))

    with h5py.File(path, "r") as f:
        visit(f)
        f.visititems(lambda name, obj: visit(obj))
        d = f["entry/data"]
        for name in sorted(d):
            ds = d[name]
            images.append({"name": name, "shape": list(ds.shape),
                           "maxshape": list(ds.maxshape), "chunks": list(ds.chunks)})
            if ds.file != f:
                visit(ds.file)
                ds.file.visititems(lambda name, obj: visit(obj))
    return {"strings": n, "utf8_but_ascii": bad, "image_datasets": images}


def links(path: str) -> dict:
    with h5py.File(path, "r") as f:
        d = f["entry/data"]
        return {k: [d.get(k, getlink=True).filename, d.get(k, getlink=True).path]
                for k in d if isinstance(d.get(k, getlink=True), h5py.ExternalLink)}


def arrays(path: str) -> dict:
    with h5py.File(path, "r") as f:
        det = f["entry/instrument/detector"]
        out = {}
        for k in ("pixel_mask", "detectorSpecific/pixel_mask", "flatfield"):
            if k in det:
                out[k] = hashlib.sha256(np.ascontiguousarray(det[k][()]).tobytes()).hexdigest()
        for k in ("pixel_mask_applied", "flatfield_applied", "countrate_correction_applied",
                  "virtual_pixel_interpolation_applied", "threshold_energy"):
            if k in det:
                out[k] = det[k][()].item()
        return out


def plugins(path: str) -> dict:
    """Image 0 read by a script in a fresh interpreter, each way."""
    import subprocess
    read = ("import hashlib, numpy as np, {mod}; f = {open}(sys.argv[1]); "
            "print(hashlib.sha256(np.ascontiguousarray(f['/entry/data/data'][0])"
            ".tobytes()).hexdigest())")
    ways = {
        "h5py": ("h5py", "h5py.File", False, False),
        "h5py + import hdf5plugin": ("h5py, hdf5plugin", "h5py.File", False, False),
        "h5py + HDF5_PLUGIN_PATH": ("h5py", "h5py.File", True, False),
        "silx.io.open": ("silx.io", "silx.io.open", False, False),
        "silx.io.open + import hdf5plugin": ("silx.io, hdf5plugin", "silx.io.open", False, False),
    }
    env0 = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    out = {}
    for name, (mod, opener, path_env, _) in ways.items():
        env = dict(env0)
        if path_env:
            env["HDF5_PLUGIN_PATH"] = hdf5plugin.PLUGIN_PATH
        p = subprocess.run([sys.executable, "-c", "import sys; " + read.format(mod=mod, open=opener),
                            path], capture_output=True, text=True, env=env, timeout=120)
        last = (p.stderr.strip().splitlines() or [""])[-1]
        out[name] = p.stdout.strip() if p.returncode == 0 else last
    return out


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "geometry":
        r = geometry(sys.argv[2])
    elif cmd == "validate":
        r = validate(sys.argv[2])
    elif cmd == "pyfai":
        r = pyfai(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "silx":
        r = silx_default(sys.argv[2])
    elif cmd == "blosc2":
        r = blosc2(sys.argv[2:])
    elif cmd == "bad-b2nd":
        r = bad_b2nd(sys.argv[2])
    elif cmd == "strings":
        r = strings(sys.argv[2])
    elif cmd == "links":
        r = links(sys.argv[2])
    elif cmd == "arrays":
        r = arrays(sys.argv[2])
    elif cmd == "plugins":
        r = plugins(sys.argv[2])
    else:
        raise SystemExit(f"unknown command {cmd}")
    json.dump(r, sys.stdout, default=str)

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
    nxmx_ref.py blosc2 FRAME...  python-blosc2 opens each frame as an NDArray
                                 and reads it whole: shape, dtype, SHA-256
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
    import blosc2 as b2
    out = {}
    for p in paths:
        a = b2.open(p)
        v = a[...]
        out[p] = {"shape": list(v.shape), "dtype": v.dtype.str,
                  "chunks": list(a.chunks), "blocks": list(a.blocks),
                  "sha": hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()}
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
    else:
        raise SystemExit(f"unknown command {cmd}")
    json.dump(r, sys.stdout, default=str)

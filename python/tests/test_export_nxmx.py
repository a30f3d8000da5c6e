"""b2stream export of a detector's series as NeXus NXmx, judged by the
readers of the field (the pinned reference interpreter, nxmx_ref.py):
DIALS's nxmx reader gives the start message's geometry, nxvalidate finds
no error NXmx's own text does not excuse, pyFAI integrates image 0 from
the file alone to the curve of the pixels sent and the start message, silx
finds the plot.  The frames are the real daemon's, from a Stream V2 series
sent as a detector sends it (s2_send.py).  Also import (chunks padded to
whole blocks, python-blosc2 reading every frame) and what a script must do
to read the compressed images (docs/EXPORT.md 5)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time

import numpy as np
import pytest

import conftest
from test_interop_blosc2 import HERE, _venv_python, cli

zmq = pytest.importorskip("zmq")
pytest.importorskip("cbor2")
from s2_send import Series  # noqa: E402

BEAMLINE = {"source_name": "Diamond Light Source", "source_type": "Synchrotron X-ray Source",
            "source_probe": "x-ray", "instrument_name": "DIAMOND BEAMLINE I04",
            "sample_name": "lysozyme", "beam_flux": 2.5e12}
SOURCE = """sources:
  - kind: dectris-stream2
    endpoint: 'ipc://{dir}/det.sock'
    template: tm
    name: 'det-{{series_id}}-{{channel}}'
    series_timeout_ms: 20000
    layout: {layout}
"""
STREAM = "det-1-threshold_1"


def ref(*args, timeout=600) -> dict:
    py = _venv_python()
    if not os.access(py, os.X_OK):
        pytest.skip(f"no reference interpreter at {py} (run scripts/make-venv)")
    p = subprocess.run([py, os.path.join(HERE, "nxmx_ref.py"), *map(str, args)],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def h5ref(*args) -> dict:
    py = _venv_python()
    p = subprocess.run([py, os.path.join(HERE, "h5_ref.py"), *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def export(*args) -> str:
    p = cli("export", *args, check=False)
    if p.returncode == 2 and b"unknown command" in p.stderr:
        pytest.skip("this b2stream was built without libhdf5")
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


def sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


class Made:
    """A series the daemon stored: its frame and the series sent."""

    def __init__(self, daemon: conftest.Daemon, series: Series):
        self.daemon, self.series = daemon, series
        self.frame = daemon.frame(STREAM)

    def images(self) -> list[str]:
        zero = np.zeros((self.series.ny, self.series.nx), self.series.dtype)
        return [sha(zero if i in self.series.skip else self.series.image(i))
                for i in range(self.series.nimages)]


_made: dict = {}


def stored(layout="flat", dtype="uint16", beamline=True) -> Made:
    """The daemon's frames of one Stream V2 series (image 3 never sent: a
    gap), made once per module."""
    key = (layout, dtype, beamline)
    if key in _made:
        return _made[key]
    if not conftest.DAEMON or not os.access(conftest.DAEMON, os.X_OK):
        pytest.skip("B2S_DAEMON does not name the built b2streamd")
    d = conftest.Daemon()
    with open(d.config, "a") as f:
        f.write(SOURCE.format(dir=d.dir, layout=layout))
    d.start()
    s = Series(dtype=dtype, skip={3}, beamline=BEAMLINE if beamline else None)
    with zmq.Context() as ctx, ctx.socket(zmq.PUSH) as push:
        push.bind(f"ipc://{d.dir}/det.sock")
        s.send(push)
        deadline = time.monotonic() + 60
        done = f"stream {STREAM}: closed for good"
        while done not in open(d.log).read():
            assert time.monotonic() < deadline, open(d.log).read()[-3000:]
            time.sleep(0.05)
        push.setsockopt(zmq.LINGER, 0)
    d.stop()
    _made[key] = Made(d, s)
    return _made[key]


@pytest.fixture(scope="module", autouse=True)
def _cleanup():
    yield
    for m in _made.values():
        m.daemon.cleanup()
    _made.clear()


def out_name(tmp_path, layout: str) -> str:
    return str(tmp_path / ("x_master.h5" if layout == "dectris" else "x.h5"))


CASES = [(fl, codec, hl) for fl in ("flat", "images") for codec in ("blosc2", "bslz4")
         for hl in ("nxmx", "dectris")]


@pytest.mark.parametrize("frame_layout,codec,layout", CASES)
def test_dials_nxmx_reads_the_start_geometry(tmp_path, frame_layout, codec, layout):
    m = stored(frame_layout)
    out = out_name(tmp_path, layout)
    assert export(m.frame, out, "--layout", layout, "--codec", codec) == "exported 6 chunks\n"
    g = ref("geometry", out)
    s = m.series.start_fields()
    assert g["definition"] == "NXmx"
    assert g["pixel_size"] == [s["pixel_size_x"], s["pixel_size_y"]]
    # the McStas frame: pixels along -x (fast) and -y (slow) seen from the sample
    assert g["fast_vector"] == [-1, 0, 0] and g["slow_vector"] == [0, -1, 0]
    assert g["distance"] == pytest.approx(s["detector_translation"][2], abs=1e-12)
    assert g["distance_field"] == s["detector_translation"][2]
    assert g["beam_center"] == pytest.approx([s["beam_center_x"], s["beam_center_y"]],
                                             abs=1e-9)
    assert g["wavelength"] == s["incident_wavelength"]
    assert g["image_shape"] == [s["image_size_y"], s["image_size_x"]]
    # the goniometer map: omega scanned from 90 by 0.1, phi fixed, phi on omega
    assert g["axes"] == ["phi", "omega"]
    sc = g["scan_axis"]
    assert sc["name"] == "omega" and sc["vector"] == [-1, 0, 0] and sc["n"] == 6
    assert sc["start"] == 90.0 and sc["increment"] == pytest.approx(0.1)
    assert g["sensor"] == ["Si", 0.00045]
    assert g["saturation_value"] == 65534 and isinstance(g["saturation_value"], int)
    assert g["description"] == "Dectris EIGER2 Si 500K" and g["serial_number"] == "E-32-0105"
    assert g["pixel_mask"] == [514, 1030]
    assert (g["instrument"], g["source"], g["sample"]) == (
        "DIAMOND BEAMLINE I04", "Diamond Light Source", "lysozyme")
    assert g["flux"] == 2.5e12
    # times in UTC from series_date, the first image's (the daemon keeps it
    # as a series key), not arm_date a second before it: the first image's
    # start, the last one's stop (image 5: 50 ms + 9.9 ms)
    import b2stream
    assert b2stream.Frame(m.frame).series["series_date"] == "2026-11-28T10:00:01.000+00:00"
    assert g["start_time"] == "2026-11-28T10:00:01+00:00"
    assert g["end_time"] == g["end_time_estimated"] == "2026-11-28T10:00:01.059900+00:00"
    # and every image equal to what was sent, the gap a zero image
    name = "entry/data/data" if layout == "nxmx" else "entry/data/data_000001"
    got = h5ref("images", out, name)
    n = got["shape"][0]
    assert got["images"] == m.images()[:n]


def _unexcused(v: dict) -> list:
    return [e for e in v["messages"] if e["level"] == "error" and not e.get("nxmx_says")]


@pytest.mark.parametrize("frame_layout,codec,layout", CASES)
def test_nxvalidate_finds_no_nxmx_error(tmp_path, frame_layout, codec, layout):
    m = stored(frame_layout)
    out = out_name(tmp_path, layout)
    export(m.frame, out, "--layout", layout, "--codec", codec)
    r = ref("validate", out)
    for what in ("application", "base"):
        assert _unexcused(r[what]) == [], (what, r[what]["messages"])
        # what it did flag: fields NXmx recommends or makes optional
        for e in r[what]["messages"]:
            if e["level"] == "error":
                assert ("recommended" in e["nxmx_says"] or "optional" in e["nxmx_says"]
                        or "places NXsource" in e["nxmx_says"]), e


def test_nxvalidate_without_beamline_facts(tmp_path):
    """No beamline map and no options: the names NXmx requires are missing,
    and nxvalidate says so (they are not made up)."""
    m = stored("flat", beamline=False)
    out = str(tmp_path / "x.h5")
    export(m.frame, out, "--layout", "nxmx")
    missing = {e["where"] for e in _unexcused(ref("validate", out)["application"])}
    assert "Field: /entry/instrument/name" in missing
    assert "Field: /entry/sample/name" in missing
    # given on the command line instead
    out2 = str(tmp_path / "y.h5")
    export(m.frame, out2, "--layout", "nxmx", "--instrument-name", "I04",
           "--sample-name", "thaumatin", "--source-name", "Diamond",
           "--source-type", "Synchrotron X-ray Source", "--beam-flux", "1e12")
    r = ref("validate", out2)
    assert _unexcused(r["application"]) == [] and _unexcused(r["base"]) == []
    g = ref("geometry", out2)
    assert (g["instrument"], g["sample"], g["source"], g["flux"]) == (
        "I04", "thaumatin", "Diamond", 1e12)


def test_options_override_the_series_and_refuse_bad_values(tmp_path):
    m = stored("flat")
    out = str(tmp_path / "x.h5")
    export(m.frame, out, "--layout", "dectris", "--sample-name", "insulin")
    assert ref("geometry", out)["sample"] == "insulin"
    for bad in (["--source-type", "Candle"], ["--source-probe", "rays"],
                ["--beam-flux", "-1"], ["--beam-flux", "lots"]):
        p = cli("export", m.frame, str(tmp_path / "y.h5"), "--layout", "nxmx", *bad,
                check=False)
        assert p.returncode == 2 and not (tmp_path / "y.h5").exists(), bad
    p = cli("export", m.frame, str(tmp_path / "z.h5"), "--sample-name", "a", check=False)
    assert p.returncode == 2      # plain layout has no NXsample


@pytest.mark.parametrize("frame_layout,codec,layout", [
    ("flat", "blosc2", "nxmx"), ("images", "bslz4", "dectris")])
def test_pyfai_integrates_from_the_file_alone(tmp_path, frame_layout, codec, layout):
    m = stored(frame_layout)
    out = out_name(tmp_path, layout)
    export(m.frame, out, "--layout", layout, "--codec", codec)
    np.save(tmp_path / "raw.npy", m.series.image(0))
    np.save(tmp_path / "raw.mask.npy", m.series.mask)
    (tmp_path / "start.json").write_text(json.dumps(
        {k: v for k, v in m.series.start_fields().items()
         if k in ("pixel_size_x", "pixel_size_y", "detector_translation",
                  "beam_center_x", "beam_center_y", "incident_wavelength")}))
    r = ref("pyfai", out, tmp_path / "raw.npy", tmp_path / "start.json")
    assert r["image_equal"] and r["points"] == 200 and r["intensity_max"] > 0
    assert r["radial_max_diff"] <= 1e-9 and r["intensity_max_diff"] <= 1e-6 * r["intensity_max"]


@pytest.mark.parametrize("layout", ["nxmx", "dectris"])
def test_silx_finds_the_plot(tmp_path, layout):
    m = stored("flat")
    out = out_name(tmp_path, layout)
    export(m.frame, out, "--layout", layout)
    r = ref("silx", out)
    # (the dectris layout's signal data_000001 resolves to its data file's)
    assert r["found"] and r["signal"] == "/entry/data/data"
    assert r["shape"] == [6, 514, 1030] and r["interpretation"] in ("image", None)


@pytest.mark.parametrize("layout", ["nxmx", "dectris"])
def test_strings_are_ascii_and_shapes_fixed(tmp_path, layout):
    """Durin and cnxvalidate ask HDF5 for ASCII strings, which it does not
    convert from UTF-8: every ASCII string is stored as ASCII.  The image
    datasets have a fixed shape (neggia reads no extensible-array index)."""
    m = stored("images")
    out = out_name(tmp_path, layout)
    export(m.frame, out, "--layout", layout, "--codec", "bslz4",
           *(["--images-per-file", "4"] if layout == "dectris" else []))
    r = ref("strings", out)
    assert r["strings"] > 50
    assert r["utf8_but_ascii"] == [], r["utf8_but_ascii"]
    shapes = r["image_datasets"]
    if layout == "dectris":
        assert [s["shape"][0] for s in shapes] == [4, 2]
        assert [s["name"] for s in shapes] == ["data_000001", "data_000002"]
    else:
        assert [s["name"] for s in shapes] == ["data"] and shapes[0]["shape"][0] == 6
    for s in shapes:
        assert None not in s["maxshape"] and s["chunks"] == [1, 514, 1030]


def test_dectris_layout_files(tmp_path):
    """The master and its data files as a DECTRIS detector writes them:
    /entry/data/data_NNNNNN external links by file name alone, the
    detectorSpecific fields neggia and Durin read."""
    m = stored("flat")
    out = str(tmp_path / "x_master.h5")
    export(m.frame, out, "--layout", "dectris", "--codec", "bslz4", "--images-per-file", "4")
    assert sorted(os.listdir(tmp_path)) == ["x_data_000001.h5", "x_data_000002.h5",
                                            "x_master.h5"]
    t = h5ref("tree", out)
    spec = "entry/instrument/detector/detectorSpecific/"
    assert t[spec + "nimages"]["value"] == 6 and t[spec + "ntrigger"]["value"] == 1
    assert t[spec + "x_pixels_in_detector"]["value"] == 1030
    assert t[spec + "y_pixels_in_detector"]["value"] == 514
    assert t[spec + "saturation_value"]["value"] == 65534
    assert t[spec + "pixel_mask"]["shape"] == [514, 1030] and t[spec + "pixel_mask"]["dtype"] == "<u4"
    links = ref("links", out)
    assert links == {"data_000001": ["x_data_000001.h5", "/entry/data/data"],
                     "data_000002": ["x_data_000002.h5", "/entry/data/data"]}
    # read from elsewhere: the links resolve beside the master
    moved = tmp_path / "moved"
    moved.mkdir()
    for f in os.listdir(tmp_path):
        if f.endswith(".h5"):
            os.rename(tmp_path / f, moved / f)
    a = h5ref("images", moved / "x_data_000001.h5", "entry/data/data")["images"]
    b = h5ref("images", moved / "x_data_000002.h5", "entry/data/data")["images"]
    assert a + b == m.images()
    # a master file that exists: nothing written, nothing removed
    (tmp_path / "y_data_000002.h5").write_bytes(b"keep")
    p = cli("export", m.frame, str(tmp_path / "y_master.h5"), "--layout", "dectris",
            "--images-per-file", "4", check=False)
    assert p.returncode == 1
    assert (tmp_path / "y_data_000002.h5").read_bytes() == b"keep"
    assert not (tmp_path / "y_master.h5").exists()
    assert not (tmp_path / "y_data_000001.h5").exists()


def test_pixel_mask_and_flatfield_from_the_companions(tmp_path):
    m = stored("flat")
    out = str(tmp_path / "x.h5")
    export(m.frame, out, "--layout", "nxmx")
    r = ref("arrays", out)
    assert r["pixel_mask"] == sha(m.series.mask.astype("<u4"))
    assert r["detectorSpecific/pixel_mask"] == r["pixel_mask"]
    assert r["flatfield"] == sha(m.series.flatfield.astype("<f4"))
    assert r["pixel_mask_applied"] == 1 and r["flatfield_applied"] == 0
    assert r["countrate_correction_applied"] == 1
    assert r["virtual_pixel_interpolation_applied"] == 1
    assert r["threshold_energy"] == 6000.0


@pytest.mark.parametrize("dtype", ["uint8", "uint16"])
@pytest.mark.parametrize("codec", ["blosc2", "bslz4"])
def test_import_pads_chunks_python_blosc2_reads(tmp_path, dtype, codec):
    """Issue: import of a bslz4 export of 514 x 1030 images made chunks of
    1,058,840 bytes in blocks of 3 rows, which c-blosc2 reads only padded
    to whole blocks (1,062,960): every import now reads in python-blosc2,
    slices across the last block too, and verify says ok only for such."""
    m = stored("flat", dtype)
    out = str(tmp_path / "x.h5")
    export(m.frame, out, "--layout", "nxmx", "--codec", codec)
    back = str(tmp_path / "back.b2frame")
    assert cli("import", out, back).stdout.decode() == "imported 6 chunks\n"
    assert cli("verify", back).stdout.decode().startswith("ok: 6 chunks")
    r = ref("blosc2", back)[back]
    assert r["shape"] == [6, 514, 1030] and r["chunks"] == [1, 514, 1030]
    assert r["images"] == m.images()
    assert r["slices_ok"]


def test_verify_agrees_with_c_blosc2_on_unpadded_chunks(tmp_path):
    """A b2nd frame with a chunk not padded to whole blocks (what import
    used to write), made by c-blosc2 itself: it cannot read the array, and
    verify fails rather than saying ok."""
    bad = str(tmp_path / "bad.b2frame")
    r = ref("bad-b2nd", bad)
    assert r["full_read"].startswith("RuntimeError"), r
    p = cli("verify", bad, check=False)
    assert p.returncode == 1 and b"c-blosc2 cannot read it" in p.stderr


def test_reading_needs_hdf5plugin_or_the_plugin_path(tmp_path):
    """docs/EXPORT.md 5: h5py and silx.io.open load no filter by themselves;
    `import hdf5plugin` before reading, or HDF5_PLUGIN_PATH, does."""
    m = stored("flat")
    out = str(tmp_path / "x.h5")
    export(m.frame, out, "--layout", "nxmx")
    r = ref("plugins", out)
    assert r["h5py"].startswith("OSError") and r["silx.io.open"].startswith("OSError")
    want = sha(m.series.image(0))
    assert r["h5py + import hdf5plugin"] == want
    assert r["silx.io.open + import hdf5plugin"] == want
    assert r["h5py + HDF5_PLUGIN_PATH"] == want

"""b2stream export: frames as HDF5 files, read back by h5py + hdf5plugin
(the pinned reference interpreter, see test_interop_blosc2.py) image for
image equal to the frame; the NXmx layout checked for its groups, NX_class
attributes, units and the fields filled from the series metadata."""
from __future__ import annotations

import json
import os
import subprocess
import time

import numpy as np
import pytest

import b2stream
from b2stream import Frame
from test_interop_blosc2 import CLI, HERE, _venv_python, cli, ref, ref_data, sha


def h5ref(*args, timeout=300) -> dict:
    py = _venv_python()
    if not os.access(py, os.X_OK):
        pytest.skip(f"no reference interpreter at {py} (run scripts/make-venv)")
    p = subprocess.run([py, os.path.join(HERE, "h5_ref.py"), *map(str, args)],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def export(*args) -> str:
    p = cli("export", *args, check=False)
    if p.returncode == 2 and b"unknown command" in p.stderr:
        pytest.skip("this b2stream was built without libhdf5")
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


def images_of(path: str) -> list[str]:
    """SHA-256 of every image (row of chunks along dimension 0) of a b2nd
    frame, as b2stream's reader assembles them."""
    with Frame(path) as f:
        a = f.to_numpy()
    return [sha(np.ascontiguousarray(a[i]).tobytes()) for i in range(a.shape[0])]


STREAM = """\
  xi:
    typesize: 2
    codec: {codec}
    filters: [bitshuffle]
    order: frame_number
    reorder_window: 4
    b2nd: {{shape: [0, 96, 128], chunkshape: [1, 96, 128], blockshape: [1, {bh}, 128], dtype: "<u2"}}
"""

# Stream V2 start field names (docs/EXPORT.md 2.3 maps exactly these), a
# producer's own keys beside them
SERIES = {"incident_energy": 12398.419843320026, "pixel_size_x": 75e-6, "pixel_size_y": 75e-6,
          "beam_center_x": 61.5, "beam_center_y": 47.25, "detector_distance": 0.15,
          "count_time": 0.01, "goniometer": {"omega": {"start": 10.0, "increment": 0.5}},
          "detector_description": "EIGER2 X 16M", "beamline": {"sample_name": "lysozyme"},
          "operator": "ana", "axes": ["omega"], "threshold_keV": 6.5, "energy_eV": 8000}


def image(fn: int) -> np.ndarray:
    rng = np.random.default_rng(fn)
    return rng.poisson(3 + fn, (96, 128)).astype("<u2")


@pytest.fixture
def images_frame(make_daemon, request):
    """A daemon-written b2nd frame of 96 x 128 u2 images, frame numbers 0..9
    without 4 and 5 (gaps), with records and series metadata."""
    codec, bh = getattr(request, "param", ("lz4", 96))
    d = make_daemon()
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("templates:\n", STREAM.format(codec=codec, bh=bh)
                             + "templates:\n", 1))
    d.start()
    sent = [fn for fn in range(10) if fn not in (4, 5)]
    with b2stream.Session(d.endpoint) as s:
        with s.open("xi", meta=SERIES) as p:
            for fn in sent:
                p.send(image(fn), frame=fn, ts=1_750_000_000_000_000_000 + fn * 10_000_000,
                       user={"shutter": fn % 2})
            p.flush()
    d.stop()
    return d.frame("xi")


@pytest.mark.parametrize("codec", ["blosc2", "bslz4"])
@pytest.mark.parametrize("layout", ["plain", "nxmx"])
def test_export_reads_back_equal(images_frame, tmp_path, codec, layout):
    out = str(tmp_path / "x.h5")
    assert export(images_frame, out, "--codec", codec, "--layout", layout) == "exported 10 chunks\n"
    name = "entry/data/data" if layout == "nxmx" else "data"
    got = h5ref("images", out, name)
    assert got["shape"] == [10, 96, 128] and got["dtype"] == "<u2"
    assert got["chunks"] == [1, 96, 128]
    assert got["images"] == images_of(images_frame)
    zero = sha(np.zeros((96, 128), "<u2").tobytes())
    assert got["images"][4] == got["images"][5] == zero
    assert got["images"][6] == sha(image(6).tobytes())
    assert list(got["filters"]) == (["32026"] if codec == "blosc2" else ["32008"])


def test_blosc2_chunks_are_the_stored_ones(images_frame, tmp_path):
    """No recompression: each HDF5 chunk embeds the frame's chunk as stored
    (its Blosc2 header right after the one-chunk frame's header)."""
    out = str(tmp_path / "x.h5")
    export(images_frame, out)
    got = h5ref("images", out, "data")
    # chunk_heads: the first 16 bytes of each HDF5 chunk, a frame's magic
    assert all(bytes.fromhex(h)[:10] == b"\x9e\xa8b2frame\x00" for h in got["chunk_heads"])


@pytest.mark.parametrize("images_frame", [("lz4", 24)], indirect=True)
def test_bslz4_reframes_lz4_bitshuffle_chunks(images_frame, tmp_path):
    """Chunks stored as bitshuffle + LZ4 keep their LZ4 blocks: the HDF5
    chunk's block size is the Blosc2 chunk's blocksize, not bitshuffle's
    default of 8192 bytes, and the images still read back equal."""
    out = str(tmp_path / "x.h5")
    export(images_frame, out, "--codec", "bslz4")
    got = h5ref("images", out, "data")
    stored = ref("read", images_frame)["blocksize"]
    heads = [bytes.fromhex(h) for h in got["chunk_heads"]]
    assert stored[0] == 24 * 128 * 2
    assert [int.from_bytes(h[8:12], "big") for h in heads] == stored[:len(heads)]
    assert got["images"] == images_of(images_frame)


@pytest.mark.parametrize("codec", ["blosc2", "bslz4"])
def test_blocks_out_of_c_order(tmp_path, codec):
    """python-blosc2 NDArray whose blocks split the last dimension: blosc2
    chunks go through the filter's b2nd path, bslz4 ones are put in C order."""
    src = str(tmp_path / "nd.b2nd")
    ref("write-ndarray", src, 4, "1,8,16")
    out = str(tmp_path / "x.h5")
    export(src, out, "--codec", codec)
    a = np.random.default_rng(4).integers(0, 1000, (6, 40, 30), dtype=np.uint16)
    got = h5ref("images", out, "data")
    assert got["images"] == [sha(a[i].tobytes()) for i in range(6)]


@pytest.mark.parametrize("codec", ["blosc2", "bslz4"])
def test_frame_without_b2nd_is_one_dimension(tmp_path, codec):
    raw = b"".join(ref_data(2, i, 40000) for i in range(3)) + ref_data(2, 3, 1000)
    (tmp_path / "raw").write_bytes(raw)
    src = str(tmp_path / "p.b2frame")
    cli("pack", "--typesize", "2", "--chunk-bytes", "40000", tmp_path / "raw", src)
    out = str(tmp_path / "x.h5")
    export(src, out, "--codec", codec)
    got = h5ref("images", out, "data")
    assert got["shape"] == [4 * 20000] and got["chunks"] == [20000]
    py = _venv_python()
    p = subprocess.run([py, "-c", "import h5py, hdf5plugin, sys; "
                        "sys.stdout.buffer.write(h5py.File(sys.argv[1])['data'][...].tobytes())",
                        out], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == raw + b"\0" * (4 * 40000 - len(raw))


def test_nxmx_structure(images_frame, tmp_path):
    out = str(tmp_path / "x.h5")
    export(images_frame, out, "--layout", "nxmx")
    t = h5ref("tree", out)
    nx = {name: e["attrs"].get("NX_class") for name, e in t.items() if e["kind"] == "group"}
    assert nx["entry"] == "NXentry" and nx["entry/data"] == "NXdata"
    assert nx["entry/instrument"] == "NXinstrument"
    assert nx["entry/instrument/detector"] == "NXdetector"
    assert nx["entry/instrument/beam"] == "NXbeam"
    assert nx["entry/sample"] == "NXsample"
    assert nx["entry/sample/transformations"] == "NXtransformations"
    assert t["entry"]["attrs"]["default"] == "data"
    assert t["/"]["attrs"]["NX_class"] == "NXroot" and t["/"]["attrs"]["default"] == "entry"
    assert t["/"]["attrs"]["file_name"] == out and t["/"]["attrs"]["HDF5_Version"]
    assert t["entry/definition"]["value"] == "NXmx"
    assert t["entry/data"]["attrs"]["signal"] == "data"
    assert t["entry/data/data"]["shape"] == [10, 96, 128]

    def field(name, units):
        e = t[name]
        assert e["attrs"].get("units") == units, name
        return e["value"]

    det = "entry/instrument/detector/"
    assert field("entry/instrument/beam/incident_wavelength", "angstrom") == pytest.approx(1.0)
    assert field("entry/instrument/beam/incident_energy", "eV") == pytest.approx(12398.42, rel=1e-6)
    assert field(det + "x_pixel_size", "m") == pytest.approx(75e-6)
    assert field(det + "y_pixel_size", "m") == pytest.approx(75e-6)
    assert field(det + "beam_center_x", "pixel") == 61.5
    assert field(det + "beam_center_y", "pixel") == 47.25
    assert field(det + "distance", "m") == pytest.approx(0.15)
    assert field(det + "count_time", "s") == pytest.approx(0.01)
    assert t[det + "description"]["value"] == "EIGER2 X 16M"
    assert t["entry/sample/name"]["value"] == "lysozyme"
    omega = t["entry/sample/transformations/omega"]
    assert omega["attrs"]["units"] == "deg" and omega["attrs"]["transformation_type"] == "rotation"
    assert omega["attrs"]["vector"] == [-1.0, 0.0, 0.0] and omega["attrs"]["depends_on"] == "."
    assert omega["value"] == pytest.approx([10.0 + 0.5 * i for i in range(10)])
    assert t["entry/sample/transformations/omega_end"]["value"] == pytest.approx(
        [10.5 + 0.5 * i for i in range(10)])
    assert t["entry/sample/depends_on"]["value"] == "/entry/sample/transformations/omega"
    # the distance places the detector: its chain starts at the translation
    assert t[det + "depends_on"]["value"] == "/entry/instrument/detector/transformations/translation"
    assert t[det + "transformations/translation"]["value"] == 0.15
    assert t[det + "module/data_size"]["value"] == [96, 128]
    # every key is an attribute of /entry/series; a key of another name
    # (energy_eV) is mapped to nothing
    other = t["entry/series"]["attrs"]
    assert other["operator"] == "ana" and other["threshold_keV"] == 6.5
    assert json.loads(other["axes"]) == ["omega"] and other["energy_eV"] == 8000
    assert other["count_time"] == 0.01
    assert json.loads(t["entry"]["attrs"]["series"]) == SERIES
    # the records, gaps marked
    rec = "entry/records/"
    assert t[rec + "gap"]["value"] == [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]
    assert t[rec + "frame_number"]["value"] == list(range(10))
    ts = t[rec + "timestamp"]["value"]
    assert t[rec + "timestamp"]["attrs"]["units"] == "ns"
    assert [ts[i] for i in (0, 3, 6)] == [1_750_000_000_000_000_000 + i * 10_000_000
                                          for i in (0, 3, 6)]
    assert [t[rec + "flags"]["value"][i] & 1 for i in range(10)] == [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]
    users = t[rec + "user"]["value"]
    assert json.loads(users[7]) == {"shutter": 1}
    with Frame(images_frame) as f:
        assert t[rec + "xxh64"]["value"] == [f.record(i).xxh64 for i in range(10)]
    # a producer's record times are ns since the epoch (no arm_date)
    assert t["entry/start_time"]["value"] == "2025-06-15T15:06:40.000000000Z"
    assert t["entry/end_time"]["value"] == "2025-06-15T15:06:40.090000000Z"
    assert t["entry/end_time_estimated"]["value"] == t["entry/end_time"]["value"]


def test_export_refuses_existing_output_and_bad_options(images_frame, tmp_path):
    out = tmp_path / "x.h5"
    out.write_bytes(b"keep")
    p = cli("export", images_frame, out, check=False)
    if p.returncode == 2 and b"unknown command" in p.stderr:
        pytest.skip("this b2stream was built without libhdf5")
    assert p.returncode == 1 and out.read_bytes() == b"keep"
    assert p.stderr.decode().count("\n") == 1
    assert cli("export", images_frame, tmp_path / "y.h5", "--codec", "gzip",
               check=False).returncode == 2
    assert cli("export", images_frame, tmp_path / "y.h5", "--layout", "cbf",
               check=False).returncode == 2
    assert not (tmp_path / "y.h5").exists()


def _import(*args) -> str:
    p = cli("import", *args, check=False)
    if p.returncode == 2 and b"unknown command" in p.stderr:
        pytest.skip("this b2stream was built without libhdf5")
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


@pytest.mark.parametrize("layout", ["plain", "nxmx"])
def test_import_round_trip_is_bit_exact(images_frame, tmp_path, layout):
    """export (blosc2) then import: the same stored chunks, byte for byte,
    the same b2nd metalayer and series metadata."""
    out = str(tmp_path / "x.h5")
    export(images_frame, out, "--layout", layout)
    back = str(tmp_path / "back.b2frame")
    assert _import(out, back) == "imported 10 chunks\n"
    a, b = ref("read", images_frame), ref("read", back)
    assert b["stored"] == a["stored"] and b["chunks"] == a["chunks"]
    assert b["b2nd_meta"] == a["b2nd_meta"]
    assert b["vlmeta"]["series"] == a["vlmeta"]["series"]
    assert cli("verify", back).stdout.decode().startswith("ok: 10 chunks")


@pytest.mark.parametrize("how", ["gzip", "none", "blosc2", "bslz4"])
def test_import_datasets_others_wrote(tmp_path, how):
    """Datasets h5py writes: through HDF5 (gzip, contiguous, bitshuffle+LZ4
    by our decoder) or, for hdf5plugin's Blosc2 filter, chunk by chunk."""
    src = str(tmp_path / "in.h5")
    want = h5ref("write", src, how, 8)["sha"]
    back = str(tmp_path / "back.b2frame")
    _import(src, back, *(["--sparse"] if how == "none" else []))
    with Frame(back) as f:
        arr = f.to_numpy()
        assert arr.shape == (5, 40, 30) and arr.dtype == np.dtype("<u2")
        assert f.sparse == (how == "none")
    assert sha(arr.tobytes()) == want
    assert ref("read", back)["array_sha"] == want


def test_import_refuses_and_leaves_nothing(images_frame, tmp_path):
    out = str(tmp_path / "x.h5")
    export(images_frame, out)
    p = cli("import", out, images_frame, check=False)   # FRAME exists
    assert p.returncode == 1 and p.stderr.decode().count("\n") == 1
    assert images_of(images_frame)                      # untouched
    p = cli("import", out, tmp_path / "y.b2frame", "--dataset", "/nope", check=False)
    assert p.returncode == 1 and not (tmp_path / "y.b2frame").exists()
    (tmp_path / "bad.h5").write_bytes(b"not hdf5")
    p = cli("import", tmp_path / "bad.h5", tmp_path / "z.b2frame", check=False)
    assert p.returncode == 1 and not (tmp_path / "z.b2frame").exists()


def test_follow_grows_for_a_swmr_reader(make_daemon, tmp_path):
    """export --follow while the daemon appends: an h5py reader opened with
    swmr=True sees the dataset grow and reads every image equal; the export
    ends once the daemon has closed the frame."""
    d = make_daemon()
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("templates:\n", STREAM.format(codec="lz4", bh=96)
                             + "templates:\n", 1))
    d.start()
    out = str(tmp_path / "live.h5")
    with b2stream.Session(d.endpoint) as s:
        with s.open("xi") as p:
            for fn in range(3):
                p.send(image(fn), frame=fn)
            p.flush()
            if not CLI:
                pytest.skip("B2S_CLI does not name the built b2stream")
            exp = subprocess.Popen([CLI, "export", "--follow", d.frame("xi"), out],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                line = exp.stdout.readline().decode()
                if not line and b"unknown command" in exp.stderr.read():
                    pytest.skip("this b2stream was built without libhdf5")
                assert line == "following after 3 chunks\n"
                reader = subprocess.Popen(
                    [_venv_python(), os.path.join(HERE, "h5_ref.py"), "swmr", out,
                     "data", "12", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                first = 3
                for fn in range(3, 12):
                    time.sleep(0.15)
                    p.send(image(fn), frame=fn)
                    p.flush()
                got_out, got_err = reader.communicate(timeout=120)
                assert reader.returncode == 0, got_err.decode()
            finally:
                if exp.poll() is None and d.proc is None:
                    exp.terminate()
        # the stream's handle is closed here; the daemon closes the frame at stop
    d.stop()
    rest, err = exp.communicate(timeout=60)
    assert exp.returncode == 0, err.decode()
    assert rest.decode() == "exported 12 chunks\n"
    seen = json.loads(got_out)
    assert seen["seen"][0] >= first and seen["seen"][-1] == 12
    assert len(seen["seen"]) >= 2            # it grew under the reader
    assert seen["images"] == [sha(image(fn).tobytes()) for fn in range(12)]
    assert h5ref("images", out, "data")["images"] == seen["images"]


@pytest.mark.parametrize("codec", ["blosc2", "bslz4"])
def test_debian_hdf5_with_hdf5plugin_filters_reads_export(images_frame, tmp_path, codec):
    """The C library readers link (Debian's HDF5 1.10, h5dump) loads
    hdf5plugin's filter plugins through HDF5_PLUGIN_PATH and reads the
    images equal to the frame's."""
    import shutil
    if shutil.which("h5dump") is None:
        pytest.skip("h5dump missing (Debian: apt-get install hdf5-tools)")
    py = _venv_python()
    if not os.access(py, os.X_OK):
        pytest.skip(f"no reference interpreter at {py} (run scripts/make-venv)")
    plugins = subprocess.run([py, "-c", "import hdf5plugin; print(hdf5plugin.PLUGIN_PATH)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    out = str(tmp_path / "x.h5")
    export(images_frame, out, "--codec", codec, "--layout", "nxmx")
    raw = tmp_path / "images.bin"
    p = subprocess.run(["h5dump", "-d", "/entry/data/data", "-b", "LE", "-o", str(raw), out],
                       capture_output=True, env=dict(os.environ, HDF5_PLUGIN_PATH=plugins),
                       timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    with Frame(images_frame) as f:
        assert raw.read_bytes() == f.to_numpy().tobytes()


FLAT = """\
  xf:
    typesize: 2
    codec: lz4
    filters: [bitshuffle]
    order: frame_number
    reorder_window: 4
    b2nd: {shape: [0, 12288], chunkshape: [1, 12288], blockshape: [1, 4096], dtype: "<u2"}
"""


@pytest.fixture
def flat_frame(make_daemon, request):
    """A daemon-written frame of flattened 96 x 128 u2 images (as a
    detector source's layout: flat), frame 2 a gap, whose series says the
    image shape (or the series given as the parameter)."""
    meta = getattr(request, "param", {"image_size_x": 128, "image_size_y": 96})
    d = make_daemon()
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("templates:\n", FLAT + "templates:\n", 1))
    d.start()
    with b2stream.Session(d.endpoint) as s:
        with s.open("xf", meta=meta) as p:
            for fn in (0, 1, 3):
                p.send(image(fn).reshape(-1), frame=fn)
            p.flush()
    d.stop()
    return d.frame("xf")


def test_flat_frame_images(flat_frame, tmp_path):
    """Frame.image gives (y, x) images of a frame of flattened images, and
    export gives the NeXus dataset (images, y, x), read back equal."""
    with Frame(flat_frame) as f:
        assert f.image_shape == (96, 128)
        assert f.shape == (4, 12288)
        assert (f.image(3) == image(3)).all()
        assert (f.image(2) == 0).all()
    out = str(tmp_path / "x.h5")
    export(flat_frame, out, "--layout", "nxmx")
    got = h5ref("images", out, "entry/data/data")
    assert got["shape"] == [4, 96, 128] and got["chunks"] == [1, 96, 128]
    zero = sha(np.zeros((96, 128), "<u2").tobytes())
    assert got["images"] == [sha(image(0).tobytes()), sha(image(1).tobytes()), zero,
                             sha(image(3).tobytes())]


def test_image_shape_none_without_flattened_images(images_frame):
    with Frame(images_frame) as f:
        assert f.image_shape is None
        assert f.image(6).shape == (96, 128)


@pytest.mark.parametrize("flat_frame", [{"image_size_x": 2, "image_size_y": 2**63 + 6144}],
                         indirect=True)
def test_flat_frame_with_a_wrapping_shape_stays_flat(flat_frame, tmp_path):
    """y * x that equals the pixels only modulo 2**64 is no image shape."""
    with Frame(flat_frame) as f:
        assert f.image_shape is None
    out = str(tmp_path / "x.h5")
    export(flat_frame, out, "--layout", "nxmx")
    assert h5ref("images", out, "entry/data/data")["shape"] == [4, 12288]

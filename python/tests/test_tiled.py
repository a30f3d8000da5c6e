"""b2stream.tiled against a real Tiled server (docs/INTEGRATIONS.md, section
Tiled).

The real daemon writes the frames through the package's producer: a
contiguous b2nd frame of images with a gap, a sparse one, a b2nd 2-D
frame of four rows a chunk, a detector's flat frame, and a rolled-over
acquisition of three files named and described as docs/ACQUISITIONS.md
3.3-3.5 has them.  ``tiled serve directory`` (Tiled 0.2.20, the pinned
venv of tests/python-tiled, through tiled_server.py) serves them with
the adapter and walker registered on its command line; Tiled's HTTP
client (tiled_client.py, in that venv) reads slices that must equal the
images sent.  The server's frame reader is instrumented, so the tests
count the chunks and bytes each slice decoded.  A second server, ``tiled
serve config`` over a writable catalog, takes a run's documents
(composed and validated by event-model) through bluesky-tiled-plugins'
TiledWriter and the consolidator, and serves the data key across the
files.  Skipped, saying so, without the venv (scripts/make-venv tiled)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest

import b2stream
from conftest import Daemon, _need_daemon, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIMETYPE = "application/x-b2stream-frame"
API_KEY = "secret"
Y, X = 48, 40                       # the images: 48 x 40 u2, blocks of 12 rows
BLOCK_BYTES = 12 * X * 2
CHUNK_BYTES = Y * X * 2

STREAMS = f"""\
  tc:
    typesize: 2
    codec: zstd
    clevel: 1
    filters: [bitshuffle]
    order: frame_number
    reorder_window: 4
    b2nd: {{shape: [0, {Y}, {X}], chunkshape: [1, {Y}, {X}], blockshape: [1, 12, {X}], dtype: "<u2"}}
    durability: {{ack: write, group_count: 4, group_interval_ms: 5}}
  ts:
    typesize: 2
    format: sparse
    b2nd: {{shape: [0, {Y}, {X}], chunkshape: [1, {Y}, {X}], blockshape: [1, 12, {X}], dtype: "<u2"}}
    durability: {{ack: write, group_count: 4, group_interval_ms: 5}}
  t2:
    typesize: 4
    codec: lz4
    b2nd: {{shape: [0, 24], chunkshape: [4, 24], blockshape: [2, 24], dtype: "<f4"}}
    durability: {{ack: write, group_count: 4, group_interval_ms: 5}}
  tf:
    typesize: 2
    codec: lz4
    filters: [bitshuffle]
    b2nd: {{shape: [0, {Y * X}], chunkshape: [1, {Y * X}], blockshape: [1, {12 * X}], dtype: "<u2"}}
    durability: {{ack: write, group_count: 4, group_interval_ms: 5}}
""" + "".join(f"""\
  acq-{n}:
    typesize: 2
    codec: lz4
    path: acq/acq7_data_{n:06}.b2frame
    b2nd: {{shape: [0, {Y}, {X}], chunkshape: [1, {Y}, {X}], blockshape: [1, 12, {X}], dtype: "<u2"}}
    durability: {{ack: write, group_count: 4, group_interval_ms: 5}}
""" for n in (1, 2, 3))

PER_FILE = 4
ACQ_FRAMES = 10                     # files of 4, 4 and 2 frames


def venv_python() -> str:
    venv = os.environ.get("B2S_TILED_VENV") or os.path.join(ROOT, ".venv-tiled")
    py = os.path.join(venv, "bin", "python")
    if not os.access(py, os.X_OK):
        pytest.skip(f"no Tiled venv at {venv} (scripts/make-venv tiled makes it)")
    return py


def images(n: int, seed: int, shape=(Y, X), dtype=np.uint16) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal((n, *shape)).astype(dtype)
    return rng.integers(0, 4000, (n, *shape), dtype=dtype)


def acq_series(n: int, frames: int) -> dict:
    """A file's series as docs/ACQUISITIONS.md 3.5 has the daemon write it."""
    return {"sample": "lysozyme", "energy_eV": 12398.4,
            "b2stream_acquisition": {
                "id": "acq7", "input": "stream:det", "channel": "data", "file": n,
                "first_frame": (n - 1) * PER_FILE, "frames_per_file": PER_FILE,
                "frames_expected": ACQ_FRAMES, "armed_at": "2025-01-01T00:00:00Z",
                "state": "done", "frames": frames, "last_file": n == 3, "files": 3}}


def write_frames(d: Daemon, out: str) -> dict:
    """Every frame of the tests, written by the daemon; the images each
    must serve saved as NAME.npy in out."""
    ref = {}
    with b2stream.Session(d.endpoint) as s:
        tc = images(12, 1)
        with s.open("tc", meta={"sample": "Fe2O3", "blob": b"\x00\x01"}) as p:
            for fn in range(12):
                if fn != 4:                          # frame 4 never comes: a gap
                    p.send(tc[fn], frame=fn)
            p.flush()
        tc[4] = 0
        ref["tc"] = tc
        ts = images(9, 2)
        with s.open("ts", meta={"sample": "sparse"}) as p:
            for a in ts:
                p.send(a)
            p.flush()
        ref["ts"] = ts
        t2 = images(20, 3, shape=(24,), dtype=np.float32)
        with s.open("t2") as p:
            for k in range(5):
                p.send(t2[4 * k:4 * k + 4])          # four rows a chunk
            p.flush()
        ref["t2"] = t2
        tf = images(6, 4)
        with s.open("tf", meta={"image_size_y": Y, "image_size_x": X}) as p:
            for a in tf:
                p.send(a.reshape(-1))                # flattened, as a detector sends
            p.flush()
        ref["tf"] = tf
        acq = images(ACQ_FRAMES, 5)
        for n in (1, 2, 3):
            part = acq[(n - 1) * PER_FILE:n * PER_FILE]
            with s.open(f"acq-{n}", meta=acq_series(n, len(part))) as p:
                for a in part:
                    p.send(a)
                p.flush()
        ref["acq7_data"] = acq
    for name, a in ref.items():
        np.save(os.path.join(out, name + ".npy"), a)
    return ref


class Server:
    """A ``tiled serve ...`` of the Tiled venv on a free port, its frame
    reader traced to self.trace."""

    def __init__(self, args: list[str], workdir: str, ready: str) -> None:
        self.py = venv_python()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/api/v1"
        self.trace = os.path.join(workdir, f"trace-{self.port}.jsonl")
        self.log = os.path.join(workdir, f"tiled-{self.port}.log")
        env = dict(os.environ, B2S_TILED_TRACE=self.trace, PYTHONUNBUFFERED="1")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [self.py, os.path.join(HERE, "tiled_server.py"), "serve", *args,
                 "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir)
        deadline = time.monotonic() + 120
        while ready not in self.output():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("tiled serve did not come up: " + self.output()[-3000:])
            time.sleep(0.1)

    def output(self) -> str:
        with open(self.log, errors="replace") as f:
            return f.read()

    def traced(self) -> list[dict]:
        """The opens and decodes traced since the last call."""
        if not os.path.exists(self.trace):
            return []
        with open(self.trace) as f:
            lines = f.readlines()
        os.unlink(self.trace)
        self.opened = [json.loads(x)["open"] for x in lines if '"open"' in x]
        return [json.loads(x) for x in lines if '"open"' not in x]

    decodes = traced

    def client(self, *args) -> dict:
        p = subprocess.run([self.py, os.path.join(HERE, "tiled_client.py"), *map(str, args)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-4000:] + self.output()[-3000:]
        return json.loads(p.stdout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The frames, and ``tiled serve directory`` over them."""
    venv_python()
    _need_daemon()
    out = str(tmp_path_factory.mktemp("tiled"))
    d = Daemon()
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("templates:\n", STREAMS + "templates:\n", 1))
    os.makedirs(os.path.join(d.dir, "data", "acq"))
    served_dir = os.path.join(d.dir, "data")
    try:
        d.start()
        ref = write_frames(d, out)
        d.stop()
        srv = Server(["directory", served_dir, "--api-key", API_KEY,
                      "--walker", "b2stream.tiled:walk_b2frames",
                      "--adapter", f"{MIMETYPE}=b2stream.tiled:B2frameAdapter"],
                     out, ready="Indexing complete.")
        try:
            yield srv, out, ref, d
        finally:
            srv.stop()
    finally:
        d.cleanup()


def read(served, key: str, *slices: str) -> dict:
    srv, out, _, _ = served
    srv.decodes()
    got = srv.client("read", srv.url, key, os.path.join(out, key.split("/")[-1] + ".npy"),
                     *slices)
    for r in got["results"]:
        assert r["equal"], (key, r)
    return got


def test_contiguous_b2nd_images_with_a_gap(served):
    got = read(served, "tc", "...", "3:7", "4", "2, 10:20, 5", "::-3, 5, 3:30:2", "11:")
    assert got["shape"] == [12, Y, X] and got["dtype"] == "<u2"
    assert got["chunks"] == [[1] * 12, [Y], [X]]
    md = got["metadata"]
    assert md["sample"] == "Fe2O3" and md["blob"] == {"base64": "AAE="}
    assert md["_b2stream"]["gaps"] == 1 and md["_b2stream"]["gap_positions"] == [4]
    assert md["_b2stream"]["sparse"] == [False]


def test_sparse_frame(served):
    got = read(served, "ts", "...", "0:2", "8, :, 39", "1:9:4, 20:40")
    assert got["shape"] == [9, Y, X] and got["metadata"]["_b2stream"]["sparse"] == [True]
    assert got["metadata"]["sample"] == "sparse"


def test_b2nd_2d_four_rows_a_chunk(served):
    got = read(served, "t2", "...", "3:9", "17", "5:13, 2:20:3")
    assert got["shape"] == [20, 24] and got["dtype"] == "<f4"
    assert got["chunks"] == [[4] * 5, [24]]


def test_flat_frame_served_as_images(served):
    got = read(served, "tf", "...", "2", "1:4, 13:30, 7:9", ":, 47, 39")
    assert got["shape"] == [6, Y, X]
    assert got["metadata"]["_b2stream"]["layout"] == "flat"


def test_rolled_over_acquisition_is_one_array(served):
    """Three files of one acquisition's channel, one node, concatenated."""
    got = read(served, "acq/acq7_data", "...", "3:6", "8:10", "4", "::3, 0:12",
               "9, 47, 39")
    assert got["shape"] == [ACQ_FRAMES, Y, X]
    b2s = got["metadata"]["_b2stream"]
    assert b2s["files"] == 3 and b2s["frames_per_file"] == PER_FILE
    assert got["metadata"]["b2stream_acquisition"]["file"] == 1
    srv = served[0]
    out = srv.output()
    # the records companions are no nodes (their key would collide with
    # the data frame's and drop both)
    assert "COLLISION" not in out, out[-3000:]


def _cost(served, key, s):
    srv = served[0]
    read(served, key, s)
    return srv.decodes()


def test_a_slice_decodes_only_the_chunks_it_touches(served):
    for a, b in ((0, 1), (2, 5), (0, 12), (7, 12)):
        log = _cost(served, "tc", f"{a}:{b}")
        chunks = sorted(c for e in log for c in e["chunks"])
        assert chunks == list(range(a, b)), (a, b, log)
        assert all(e["nbytes"] == CHUNK_BYTES and e["offset"] == 0 for e in log)


def test_a_region_of_an_image_decodes_only_its_blocks(served):
    log = _cost(served, "tc", "3:6, 0:12, :")          # the first block of 3 images
    assert sorted(c for e in log for c in e["chunks"]) == [3, 4, 5]
    assert all(e["offset"] == 0 and e["nbytes"] == BLOCK_BYTES for e in log), log
    log = _cost(served, "tc", ":, 30, 7")               # one pixel of every image
    assert sorted(c for e in log for c in e["chunks"]) == list(range(12))
    assert all(e["nbytes"] == 2 for e in log), log
    assert sum(e["nbytes"] * len(e["chunks"]) for e in log) == 12 * 2   # a run per chunk


def test_a_slice_of_an_acquisition_opens_only_its_files(served):
    log = _cost(served, "acq/acq7_data", "5:7")             # frames 5, 6: file 2 only
    assert {os.path.basename(e["path"]) for e in log} == {"acq7_data_000002.b2frame"}
    # the catalog resolved file 2's URI alone (frames_per_file): no other opened
    assert {os.path.basename(p) for p in served[0].opened} == {"acq7_data_000002.b2frame"}
    assert sorted(c for e in log for c in e["chunks"]) == [1, 2]
    log = _cost(served, "acq/acq7_data", "3:9")             # across all three files
    per_file = {}
    for e in log:
        per_file.setdefault(os.path.basename(e["path"]), []).extend(e["chunks"])
    assert {k: sorted(v) for k, v in per_file.items()} == {
        "acq7_data_000001.b2frame": [3], "acq7_data_000002.b2frame": [0, 1, 2, 3],
        "acq7_data_000003.b2frame": [0]}


# -- the StreamResource side: TiledWriter and the consolidator ---------------

def _spec(d: Daemon, tmp: str, per_event: int = 1) -> str:
    files = []
    for n in (1, 2, 3):
        path = os.path.join(d.dir, "data", "acq", f"acq7_data_{n:06}.b2frame")
        frames = min(PER_FILE, ACQ_FRAMES - (n - 1) * PER_FILE)
        files.append({"uri": "file://localhost" + path, "file": n,
                      "first_frame": (n - 1) * PER_FILE, "frames": frames,
                      "sparse": False})
    spec = {"data_key": "det", "frame_shape": [Y, X], "dtype": "<u2",
            "per_event": per_event, "frames_per_file": PER_FILE, "files": files}
    path = os.path.join(tmp, f"spec-{per_event}.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


CATALOG = """\
authentication:
  single_user_api_key: {key}
trees:
  - path: /
    tree: catalog
    args:
      uri: sqlite:///{dir}/catalog.db
      init_if_not_exists: true
      writable_storage:
        - {dir}/writable
        - duckdb:///{dir}/tabular.duckdb
      readable_storage:
        - {data}
      adapters_by_mimetype:
        {mimetype}: b2stream.tiled:B2frameAdapter
"""


def test_a_run_written_by_tiledwriter_reads_across_the_files(served, tmp_path):
    srv0, out, ref, d = served
    cat = tmp_path / "cat"
    (cat / "writable").mkdir(parents=True)
    cfg = tmp_path / "config.yml"
    cfg.write_text(CATALOG.format(key=API_KEY, dir=cat, data=os.path.join(d.dir, "data"),
                                  mimetype=MIMETYPE))
    srv = Server(["config", str(cfg)], str(tmp_path), ready="Uvicorn running")
    try:
        npy = os.path.join(out, "acq7_data.npy")
        got = srv.client("run", srv.url, _spec(d, str(tmp_path)), npy,
                         "...", "2:7", "9", "3:9, :, 0:12, 5")
        assert got["resources"] == 3 and got["datums"] == 6   # split inside files too
        assert got["shape"] == [ACQ_FRAMES, 1, Y, X]
        for r in got["results"]:
            assert r["equal"], r
        srv.decodes()
        srv.client("run", srv.url, _spec(d, str(tmp_path)), npy, "5:7")
        log = srv.decodes()
        assert {os.path.basename(e["path"]) for e in log} == {"acq7_data_000002.b2frame"}
        assert {os.path.basename(p) for p in srv.opened} == {"acq7_data_000002.b2frame"}
        assert sorted(c for e in log for c in e["chunks"]) == [1, 2]
    finally:
        srv.stop()


def test_the_consolidator_refuses_documents_that_would_misplace_frames(served, tmp_path):
    srv = served[0]
    got = srv.client("refusals", _spec(served[3], str(tmp_path)))
    whole = got["whole"]
    assert whole["error"] is None and whole["class"] == "B2frameConsolidator"
    assert whole["shape"] == [ACQ_FRAMES, 1, Y, X]
    assert [a[0] for a in whole["assets"]] == [0, 1, 2]
    assert whole["parameters"] == {"image_shape": [Y, X], "frames_per_file": PER_FILE,
                                   "dtype": "<u2"}
    assert "file 3 follows file 1" in got["missing_file"]["error"]
    assert "the data so far ends at frame 3" in got["skipped_datum"]["error"]
    assert "dtype" in got["other_dtype"]["error"]

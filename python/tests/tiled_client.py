"""The Tiled side of test_tiled.py, run by the interpreter of the Tiled venv
($B2S_TILED_VENV/bin/python): Tiled's own HTTP client reads what a real
``tiled serve`` serves, bluesky-tiled-plugins' TiledWriter writes runs to
it, event-model composes and validates the documents.  Prints one JSON
object.

    tiled_client.py read URL KEY NPY SLICE...       c[KEY][SLICE] == npy[SLICE]
    tiled_client.py run URL SPEC.json NPY SLICE...  a run's documents through
                                                    TiledWriter, then
                                                    c[run][stream][key][SLICE]
    tiled_client.py refusals SPEC.json              documents the consolidator
                                                    must refuse

SLICE is numpy's text (``3:7``, ``2, 10:20, 5``, ``...``).  SPEC.json
gives the files of one data key as docs/INTEGRATIONS.md 1.3 has them:
``{"data_key", "frame_shape", "dtype", "per_event", "frames_per_file",
"files": [{"uri", "file", "first_frame", "frames", "sparse"}]}``."""
from __future__ import annotations

import copy
import json
import sys

import numpy as np

API_KEY = "secret"


def parse(text: str):
    return eval(f"np.s_[{text}]", {"np": np})   # the tests' own slices


def client(url: str):
    from tiled.client import from_uri
    return from_uri(url, api_key=API_KEY)


def compare(node, ref, slices) -> list[dict]:
    out = []
    for s in slices:
        got = np.asarray(node[parse(s)])
        want = ref[parse(s)]
        out.append({"slice": s, "equal": bool(got.shape == want.shape
                                               and np.array_equal(got, want)),
                    "shape": list(got.shape), "want_shape": list(want.shape),
                    "dtype": got.dtype.str})
    return out


def cmd_read(url, key, npy, *slices) -> dict:
    node = client(url)[key]
    ref = np.load(npy)
    return {"shape": list(node.shape), "dtype": node.dtype.str,
            "chunks": [list(c) for c in node.chunks],
            "metadata": dict(node.metadata), "results": compare(node, ref, slices)}


def documents(spec: dict, split_at: int | None = None) -> list[tuple[str, dict]]:
    """A run with one stream of one external data key: a StreamResource per
    file and StreamDatum documents split at file boundaries (and, when
    split_at is given, inside files too), each validated by event-model."""
    from event_model import DocumentNames, compose_run, schema_validators
    k = spec["per_event"]
    run = compose_run(metadata={"plan_name": "b2stream_tiled_test"})
    desc = run.compose_descriptor(
        name="primary",
        data_keys={spec["data_key"]: {
            "source": "b2stream:test", "dtype": "array", "dtype_numpy": spec["dtype"],
            "shape": [k, *spec["frame_shape"]], "external": "STREAM:"}})
    docs = [("start", run.start_doc), ("descriptor", desc.descriptor_doc)]
    seq = 1
    for f in spec["files"]:
        params = {"chunk_shape": [1, k, *spec["frame_shape"]], "acquisition_id": "acq7",
                  "channel": "data", "file": f["file"], "first_frame": f["first_frame"],
                  "frames_per_file": spec["frames_per_file"], "dtype": spec["dtype"],
                  "shape": spec["frame_shape"], "layout": "images",
                  "records": f["uri"].rsplit("/", 1)[-1].replace(".b2frame", ".records.b2frame"),
                  "sparse": f["sparse"]}
        res = run.compose_stream_resource(mimetype="application/x-b2stream-frame",
                                          uri=f["uri"], data_key=spec["data_key"],
                                          parameters=params)
        docs.append(("stream_resource", res.stream_resource_doc))
        events = f["frames"] // k
        cuts = sorted({0, events, *([split_at] if split_at and split_at < events else [])})
        for a, b in zip(cuts, cuts[1:]):
            d = res.compose_stream_datum(indices={"start": a, "stop": b},
                                         seq_nums={"start": seq, "stop": seq + b - a},
                                         descriptor=desc.descriptor_doc)
            seq += b - a
            docs.append(("stream_datum", d))
    docs.append(("stop", run.compose_stop()))
    for name, doc in docs:
        schema_validators[getattr(DocumentNames, name)].validate(doc)
    return docs


def cmd_run(url, spec_path, npy, *slices) -> dict:
    import b2stream.tiled  # noqa: F401  (registers the consolidator)
    from bluesky_tiled_plugins import TiledWriter
    spec = json.load(open(spec_path))
    c = client(url)
    docs = documents(spec, split_at=1)
    writer = TiledWriter(c)
    for name, doc in docs:
        writer(name, copy.deepcopy(doc))
    uid = docs[0][1]["uid"]
    run = client(url)[uid]
    stream = run["primary"]
    node = stream[spec["data_key"]]
    ref = np.load(npy)
    k = spec["per_event"]
    ref = ref.reshape((ref.shape[0] // k, k) + ref.shape[1:])
    return {"run": uid, "shape": list(node.shape), "dtype": node.dtype.str,
            "datums": sum(1 for n, _ in docs if n == "stream_datum"),
            "resources": sum(1 for n, _ in docs if n == "stream_resource"),
            "results": compare(node, ref, slices)}


def cmd_refusals(spec_path) -> dict:
    """Each malformed document sequence fed to the consolidator alone; the
    error it raises (or None: accepted)."""
    import b2stream.tiled  # noqa: F401
    from bluesky_tiled_plugins.writing.consolidators import consolidator_factory
    spec = json.load(open(spec_path))
    docs = documents(spec)
    desc = docs[1][1]
    sres = [d for n, d in docs if n == "stream_resource"]
    datums = [d for n, d in docs if n == "stream_datum"]

    def feed(resources, data):
        try:
            c = consolidator_factory(resources[0], desc)
            by_uid = {resources[0]["uid"]}
            for r in resources[1:]:
                c.update_from_stream_resource(r)
                by_uid.add(r["uid"])
            for d in data:
                c.consume_stream_datum(d)
            return {"error": None, "shape": list(c.structure().shape),
                    "assets": [[a.num, a.data_uri, a.is_directory] for a in c.assets],
                    "parameters": c.adapter_parameters(), "class": type(c).__name__}
        except Exception as e:   # the refusal under test
            return {"error": f"{type(e).__name__}: {e}"}

    bad_dtype = copy.deepcopy(sres[1])
    bad_dtype["parameters"]["dtype"] = "<f4"
    return {
        "whole": feed(sres, datums),
        "missing_file": feed([sres[0], sres[2]], [datums[0], datums[2]]),
        "skipped_datum": feed(sres, [datums[0], datums[2]]),
        "other_dtype": feed([sres[0], bad_dtype], datums[:2]),
    }


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    print(json.dumps({"read": cmd_read, "run": cmd_run, "refusals": cmd_refusals}[cmd](*args)))

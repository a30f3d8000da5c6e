"""Tiled's own command line (``tiled serve ...``), run by the interpreter of
the Tiled venv ($B2S_TILED_VENV) for test_tiled.py, with the frame reader
instrumented when $B2S_TILED_TRACE names a file: every decode the server
asks of b2stream's frame reader appends one JSON line there,
``{"path", "chunks", "offset", "nbytes"}`` (a run of bytes of each chunk
named: ``_nd_run``, the block reader) or ``{"path", "chunks": [j],
"offset": 0, "nbytes": whole}`` (one whole chunk: ``Frame.chunk``), and every open
of a frame ``{"open": path}``.  So a
test counts what a slice cost in chunks and bytes, not in time."""
import json
import os
import sys

TRACE = os.environ.get("B2S_TILED_TRACE")

if TRACE:
    from b2stream.frame import Frame

    def _log(entry):
        with open(TRACE, "a") as f:
            f.write(json.dumps(entry) + "\n")

    _run, _chunk, _open = Frame._nd_run, Frame.chunk, Frame._open

    def traced_open(self, retries):
        _log({"open": self.path})
        return _open(self, retries)

    def traced_run(self, chunks, start, nitems, out, itemsize):
        _log({"path": self.path, "chunks": [int(c) for c in chunks],
              "offset": int(start) * itemsize, "nbytes": int(nitems) * itemsize})
        return _run(self, chunks, start, nitems, out, itemsize)

    def traced_chunk(self, i, raw=False, stored=False):
        out = _chunk(self, i, raw=raw, stored=stored)
        if not stored:
            _log({"path": self.path, "chunks": [int(i)], "offset": 0,
                  "nbytes": int(self.chunk_nbytes(i))})
        return out

    Frame._nd_run, Frame.chunk, Frame._open = traced_run, traced_chunk, traced_open

from tiled.commandline.main import main  # noqa: E402

sys.argv[0] = "tiled"
sys.exit(main())

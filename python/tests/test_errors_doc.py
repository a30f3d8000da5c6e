"""The errors table of docs/PYTHON.md against the classes: each row's
classes derive from exactly the built-ins its last column names (and
their built-in bases), from the family it names before a colon, and the
codes it lists raise those classes."""
from __future__ import annotations

import builtins
import os
import re

import pytest

from b2stream import errors

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "PYTHON.md")

# The built-ins the package's classes may derive from.
BUILTINS = ("ValueError", "LookupError", "IndexError", "OSError", "FileNotFoundError",
            "PermissionError", "TimeoutError", "ConnectionError", "MemoryError",
            "TypeError", "KeyError")


def _rows() -> list[tuple[str, str, str]]:
    text = open(DOC, encoding="utf-8").read()
    table = text.split("| class | codes | also a |", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 3, line
        rows.append((cells[0], cells[1], cells[2]))
    return rows


def _cls(name: str) -> type:
    return getattr(errors, name.removeprefix("errors."))


def _split_paren(cell: str) -> tuple[str, str]:
    """'A (B)' -> ('A', 'B')."""
    m = re.fullmatch(r"(.*?)\s*(?:\((.*)\))?", cell)
    return m.group(1).strip(), (m.group(2) or "").strip()


def _builtins(cell: str) -> set[type]:
    return {getattr(builtins, n.strip()) for n in cell.split(",") if n.strip()}


def _closure(listed: set[type]) -> set[type]:
    return {getattr(builtins, b) for b in BUILTINS
            if any(issubclass(x, getattr(builtins, b)) for x in listed)}


def _derived(cls: type) -> set[type]:
    return {getattr(builtins, b) for b in BUILTINS if issubclass(cls, getattr(builtins, b))}


def _codes(cell: str) -> list[str]:
    """The B2S_E_ names of a codes cell: ranges give their ends, '_KEY'
    continues the first name's prefix."""
    names, prefix = [], None
    for tok in re.split(r"[,…()]", cell):
        tok = tok.strip()
        if tok.startswith("B2S_E_"):
            names.append(tok)
            prefix = prefix or tok.rsplit("_", 1)[0]
        elif tok.startswith("_") and prefix:
            names.append(prefix + tok)
    return names


def test_every_row_matches_its_classes():
    rows = _rows()
    assert len(rows) >= 20
    seen = set()
    for cls_cell, codes_cell, also_cell in rows:
        plain, paren = _split_paren(cls_cell)
        also, also_paren = _split_paren(also_cell)
        base = None
        if ":" in plain:
            base_name, plain = plain.split(":", 1)
            base = _cls(base_name.strip(" `"))
        classes = [_cls(n.strip(" `")) for n in plain.split(",")]
        subs = [_cls(n.strip(" `")) for n in paren.split(",") if n.strip()]
        want = _builtins(also)
        want_sub = _builtins(also_paren) if also_paren else set()
        for cls in classes:
            assert issubclass(cls, errors.B2StreamError), cls
            assert _derived(cls) == _closure(want), (cls_cell, cls, _derived(cls))
            if base is not None:
                assert issubclass(cls, base), (cls, base)
                assert _derived(base) <= _closure(want), (base, _derived(base))
            seen.add(cls)
        for sub in subs:
            assert issubclass(sub, classes[0]), (sub, classes[0])
            assert _derived(sub) == _closure(want | want_sub), (cls_cell, sub)
            seen.add(sub)
        for name in _codes(codes_cell.split("(")[0]):
            exc = errors.error_for(errors.CODES[name], "x")
            assert isinstance(exc, tuple(classes)), (name, type(exc))
        for name in _codes(codes_cell.split("(", 1)[1]) if "(" in codes_cell else []:
            exc = errors.error_for(errors.CODES[name], "x")
            assert isinstance(exc, tuple(subs)), (name, type(exc))
    # every exception class the package defines has its row
    defined = {v for v in vars(errors).values()
               if isinstance(v, type) and issubclass(v, errors.B2StreamError)
               and v is not errors.B2StreamError}
    bases_only = {errors.StreamError, errors.FrameOrderError, errors.ClusterError}
    assert defined - bases_only <= seen, defined - bases_only - seen


@pytest.mark.parametrize("name, family, builtin, not_builtin", [
    ("STREAM_NAME", errors.StreamNameError, ValueError, LookupError),
    ("NOSTREAM", errors.NoStreamError, LookupError, ValueError),
    ("NOTEMPLATE", errors.NoTemplateError, LookupError, ValueError),
])
def test_stream_errors_as_the_table_says(name, family, builtin, not_builtin):
    exc = errors.error_for(errors.CODES[name], "x")
    assert type(exc) is family and isinstance(exc, errors.StreamError)
    assert isinstance(exc, builtin) and not isinstance(exc, not_builtin)

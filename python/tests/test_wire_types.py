"""The Python package's message types and docs/PROTOCOL.md against the one
list of message types in proto/b2s_wire_types.h: a type added, renumbered
or documented differently in one place shows up here."""
import os
import re

from b2stream import _wire

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def listed_types():
    """(name, value, since) of every X(...) line, requests first."""
    with open(os.path.join(ROOT, "proto", "b2s_wire_types.h")) as f:
        text = f.read()
    rows = re.findall(r"X\((\w+), (0x[0-9A-Fa-f]+), (\d)\)", text)
    return [(n, int(v, 16), int(s)) for n, v, s in rows]


def test_list_is_complete():
    rows = listed_types()
    assert len(rows) == 29
    assert len({v for _, v, _ in rows}) == len(rows)
    assert [n for n, _, _ in rows[:2]] == ["HELLO", "OPEN"]


def test_python_constants_match():
    for name, value, _ in listed_types():
        assert getattr(_wire, name) == value, name
    # and the package defines no message type the list lacks
    listed = {v for _, v, _ in listed_types()}
    block = open(_wire.__file__).read()
    types_part = block[block.index("# client -> daemon"):block.index("HELLO_PRODUCER")]
    defined = {int(v, 16) for v in re.findall(r"0x[0-9A-Fa-f]{2}\b", types_part)}
    assert defined == listed


def test_protocol_md_headings_match():
    with open(os.path.join(ROOT, "docs", "PROTOCOL.md")) as f:
        doc = f.read()
    for name, value, since in listed_types():
        # each type has a heading "NAME (0xNN), client → daemon" or
        # "daemon → client", possibly shared with a sibling (FLUSH, CLOSE);
        # a type of a later version says so in its own heading
        pattern = r"^#+ .*\b%s \(0x%02X\)" % (name, value)
        m = re.search(pattern, doc, re.M)
        assert m, f"{name} (0x{value:02X}) has no heading in PROTOCOL.md"
        heading = doc[m.start():doc.index("\n", m.start())]
        direction = "daemon → client" if value & 0x80 else "client → daemon"
        assert direction in heading, heading
        if since > 1:
            assert f"since v{since}" in heading, heading
        else:
            assert "since v" not in heading, heading
        # and its row in the type table of section 3 gives the same version
        row = re.search(r"^\| 0x%02X \| %s \|.*\| v(\d) \|$" % (value, name),
                        doc, re.M)
        assert row and int(row.group(1)) == since, f"{name} row of the type table"

"""The package's msgpack codec (b2stream._msgpack), without the daemon:
byte for byte against msgpack-python where it is installed, and against
the reference bytes of docs/PROTOCOL.md 9.3."""
from __future__ import annotations

import math

import pytest

from b2stream import _msgpack as m

VALUES = [
    None, True, False, 0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32,
    2**63, 2**64 - 1, -1, -32, -33, -128, -129, -2**15, -2**15 - 1, -2**31,
    -2**31 - 1, -2**63, 0.0, -0.0, 1.5, 1e300, math.inf, "", "a" * 31, "a" * 32,
    "é", "a" * 255, "a" * 256, "b" * 65536, b"", b"x", b"x" * 255, b"x" * 256,
    b"y" * 65536, [], [1] * 15, [1] * 16, [0] * 65536, {}, {"k": 1},
    {str(i): i for i in range(15)}, {str(i): i for i in range(16)},
    {"a": {"b": [1, {"c": None, "d": b"\0"}]}, "e": [True, 2.5, "s"]},
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: repr(v)[:30])
def test_shortest_form_as_msgpack_python(value):
    ref = pytest.importorskip("msgpack")
    enc = m.packb(value)
    assert enc == ref.packb(value, use_bin_type=True)
    assert m.unpackb(enc) == value or (value != value)


def test_reference_bytes_of_the_protocol():
    # PROTOCOL.md 9.3: the OPEN metadata, the META map and a user map
    assert m.packb({"gain": 1.5}) == bytes.fromhex("81a46761696ecb3ff8000000000000")
    assert m.packb({"gain": None, "sample": "Fe2"}) == bytes.fromhex(
        "82a46761696ec0a673616d706c65a3466532")
    assert m.packb({"exp": 10}) == bytes.fromhex("81a36578700a")


def test_every_encoding_decodes():
    # longer forms than the shortest are valid msgpack too
    assert m.unpackb(bytes.fromhex("cd0001")) == 1
    assert m.unpackb(bytes.fromhex("d3ffffffffffffffff")) == -1
    assert m.unpackb(bytes.fromhex("d90161")) == "a"
    assert m.unpackb(bytes.fromhex("dc0001c0")) == [None]
    assert m.unpackb(bytes.fromhex("de0001a161c3")) == {"a": True}
    assert m.unpackb(bytes.fromhex("ca3fc00000")) == 1.5


@pytest.mark.parametrize("raw, why", [
    ("", "past the end"), ("0102", "after the msgpack value"),
    ("c1", "not supported"), ("d40100", "not supported"),        # ext
    ("a2c328", "UTF-8"), ("82a16101a16102", "twice"),
    ("81900a", "array or a map"), ("dd7fffffff", "longer than the buffer"),
    ("a5616263", "past the end"), ("cf0102", "past the end"),
])
def test_strict_decoder(raw, why):
    with pytest.raises(m.MsgpackError, match=why):
        m.unpackb(bytes.fromhex(raw))


def test_depth_limit():
    deep_ok = "91" * (m.MAX_DEPTH + 1) + "c0"
    assert m.unpackb(bytes.fromhex(deep_ok)) is not None
    with pytest.raises(m.MsgpackError, match="deeper"):
        m.unpackb(bytes.fromhex("91" * (m.MAX_DEPTH + 2) + "c0"))


def test_encoder_refuses():
    for bad in (2**64, -2**63 - 1, object(), {1.5j: 1}):
        with pytest.raises(m.MsgpackError):
            m.packb(bad)
    with pytest.raises(m.MsgpackError, match="not a string"):
        m.pack_map({1: 2})
    np = pytest.importorskip("numpy")
    assert m.packb({"n": np.int32(-5), "f": np.float64(0.5)}) == m.packb({"n": -5, "f": 0.5})

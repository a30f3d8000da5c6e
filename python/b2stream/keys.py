"""CurveZMQ key files (docs/PROTOCOL.md 1.1, proto/b2s_curve_key.h): one Z85
key of 40 characters on the first line that is neither blank nor a '#'
comment, as `b2stream keygen FILE` writes them."""
from __future__ import annotations

import os

_Z85 = set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
           ".-:+=^!/*?&<>()[]{}@%$#")


def is_key(word: str) -> bool:
    """A Z85 CurveZMQ key: 40 characters of the Z85 alphabet."""
    return len(word) == 40 and all(c in _Z85 for c in word)


def parse_key(text: str) -> str:
    """The first key of a key file's text; ValueError when there is none or
    a line before it is neither blank, a comment nor a key."""
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if is_key(words[0]):
            return words[0]
        if words[0].startswith("#"):
            continue
        raise ValueError(f"not a CurveZMQ key file line: {line[:60]!r}")
    raise ValueError("no CurveZMQ key found")


def read_key(path: str | os.PathLike) -> str:
    """The Z85 key held by the key file at path."""
    with open(path, "r", encoding="ascii", errors="replace") as f:
        return parse_key(f.read(1 << 20))


def public_key(secret: str) -> str:
    """The public key of a Z85 secret key."""
    import zmq
    return zmq.curve_public(secret.encode()).decode()

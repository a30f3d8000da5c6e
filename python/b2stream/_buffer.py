"""Buffers handed to the package: anything with the buffer protocol, numpy
arrays of any dtype, as one flat run of bytes."""
from __future__ import annotations

from typing import Any

import numpy as np


def as_bytes_view(data: Any) -> memoryview:
    if isinstance(data, np.ndarray):
        # bytes of any dtype (datetime64 has no buffer format of its own)
        data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    mv = memoryview(data)
    if not mv.c_contiguous:     # a Fortran-ordered view is contiguous too
        mv = memoryview(mv.tobytes())
    return mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv

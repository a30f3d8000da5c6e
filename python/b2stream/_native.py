"""ctypes bindings of libb2s_py (python/b2s_py.c), loaded on first use.

Lookup order: $B2STREAM_LIB (a path, as the build tree's tests set it), the
library installed beside this package, then the system's library path."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (POINTER, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint32, c_uint64,
                    c_void_p)

_lib: ctypes.CDLL | None = None


def _candidates() -> list[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    found = ctypes.util.find_library("b2s_py")
    return [p for p in (os.environ.get("B2STREAM_LIB"),
                        os.path.join(here, "libb2s_py.so"), found) if p]


def _declare(lib: ctypes.CDLL) -> None:
    sigs = {
        "b2spy_strerror": (c_char_p, [c_int]),
        "b2spy_frame_open": (c_void_p, [c_char_p, POINTER(c_int), c_char_p, c_size_t]),
        "b2spy_frame_close": (None, [c_void_p]),
        "b2spy_frame_nchunks": (c_int64, [c_void_p]),
        "b2spy_frame_typesize": (c_int32, [c_void_p]),
        "b2spy_frame_is_sparse": (c_int, [c_void_p]),
        "b2spy_frame_chunk_nbytes": (c_int64, [c_void_p, c_int64]),
        "b2spy_frame_chunk_decompress": (c_int, [c_void_p, c_int64, c_void_p, c_size_t]),
        "b2spy_frame_chunk_raw": (c_int64, [c_void_p, c_int64, c_void_p, c_size_t]),
        "b2spy_frame_gather": (c_int, [c_void_p, c_char_p, c_void_p, c_int64, c_int64,
                                       c_void_p, c_size_t, c_int, POINTER(c_int64)]),
        "b2spy_frame_last_reason": (c_char_p, [c_void_p]),
        "b2spy_frame_b2nd": (c_int, [c_void_p, POINTER(c_int64), POINTER(c_int32),
                                     POINTER(c_int32), c_char_p, c_size_t]),
        "b2spy_frame_series": (c_int64, [c_void_p, c_void_p, c_size_t]),
        "b2spy_records_open": (c_void_p, [c_char_p, POINTER(c_int), c_char_p, c_size_t]),
        "b2spy_records_close": (None, [c_void_p]),
        "b2spy_records_count": (c_int64, [c_void_p]),
        "b2spy_records_get": (c_int, [c_void_p, c_int64, POINTER(c_uint64), POINTER(c_int64),
                                      POINTER(c_uint64), POINTER(c_int), POINTER(c_uint32),
                                      POINTER(c_int), POINTER(c_void_p), POINTER(c_uint32)]),
        "b2spy_store_have_rados": (c_int, []),
        "b2spy_store_last_error": (c_char_p, []),
        "b2spy_dframe_open": (c_void_p, [c_char_p, c_char_p, c_char_p, POINTER(c_int),
                                         c_char_p, c_size_t]),
        "b2spy_dframe_close": (None, [c_void_p]),
        "b2spy_dframe_refresh": (c_int, [c_void_p, POINTER(c_int64), POINTER(c_int)]),
        "b2spy_dframe_params": (None, [c_void_p, POINTER(c_int32)]),
        "b2spy_dframe_b2nd": (c_int, [c_void_p, POINTER(c_int64), POINTER(c_int32),
                                      POINTER(c_int32), c_char_p, c_size_t]),
        "b2spy_dframe_chunk_raw": (c_int64, [c_void_p, c_int64, c_void_p, c_size_t]),
        "b2spy_dframe_chunk_decompress": (c_int, [c_void_p, c_int64, c_void_p, c_size_t]),
        "b2spy_dframe_gather": (c_int, [c_void_p, c_void_p, c_int64, c_int64,
                                        c_void_p, c_size_t, POINTER(c_int64)]),
        "b2spy_dframe_record": (c_int, [c_void_p, c_int64, POINTER(c_uint64), POINTER(c_int64),
                                        POINTER(c_uint64), POINTER(c_int), POINTER(c_uint32),
                                        POINTER(c_int), POINTER(c_void_p), POINTER(c_uint32)]),
        "b2spy_dframe_series": (c_int64, [c_void_p, c_void_p, c_size_t]),
        "b2spy_shm_attach": (c_void_p, [c_char_p, POINTER(c_int)]),
        "b2spy_shm_detach": (None, [c_void_p]),
        "b2spy_shm_nslots": (c_uint32, [c_void_p]),
        "b2spy_shm_slot_size": (c_uint64, [c_void_p]),
        "b2spy_shm_acquire": (c_int, [c_void_p, c_int, POINTER(c_uint32)]),
        "b2spy_shm_submit": (c_int, [c_void_p, c_uint32, c_uint64, c_uint64]),
        "b2spy_shm_cancel": (c_int, [c_void_p, c_uint32]),
        "b2spy_shm_slot_state": (c_int, [c_void_p, c_uint32]),
        "b2spy_curve_key_read": (c_int, [c_char_p, c_char_p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


def lib() -> ctypes.CDLL:
    """The loaded library; OSError naming the places tried when absent."""
    global _lib
    if _lib is None:
        tried = []
        for path in _candidates():
            try:
                cand = ctypes.CDLL(path)
            except OSError as exc:
                tried.append(f"{path}: {exc}")
                continue
            _declare(cand)
            _lib = cand
            break
        else:
            raise OSError("libb2s_py not found (set B2STREAM_LIB); tried "
                          + ("; ".join(tried) or "nothing"))
    return _lib


def strerror(code: int) -> str:
    return lib().b2spy_strerror(code).decode()

"""Writes the Stream V2 seed messages of tests/fuzz/corpus/stream2 with
python3-cbor2 (Debian) and the bitshuffle module (Debian `bitshuffle`), an
encoder independent of the project's.  Each message begins with the
self-described CBOR tag 55799, as a detector sends it; start_bare is, like
the start recorded from an EIGER2 Si 16M that tickit-devices ships,
untagged, without image_dtype and image_size_x/y, with its arrays as plain
byte strings and threshold_energy for a channel it does not list.
Run: /usr/bin/python3 stream2_seeds.py DIR"""
import struct
import sys

import bitshuffle
import cbor2
import numpy as np
from cbor2 import CBORTag


def bslz4(a):
    """The bitshuffle HDF5 filter's framing: sizes, then the LZ4 blocks."""
    body = bitshuffle.compress_lz4(a.ravel(), 0).tobytes()
    block = 8192  # bitshuffle default block: 8192 bytes of elements
    return struct.pack(">QI", a.nbytes, block) + body


def md(a, comp=None):
    tag = {"u1": 64, "u2": 69, "u4": 70, "f4": 85}[a.dtype.str[1:]]
    payload = a.tobytes()
    if comp == "bslz4":
        payload = CBORTag(56500, ["bslz4", a.dtype.itemsize, bslz4(a)])
    return CBORTag(40, [list(a.shape), CBORTag(tag, payload)])


def main(out):
    ch = ["threshold_1", "threshold_2"]
    ff = np.linspace(0.5, 1.5, 24, dtype="<f4").reshape(4, 6)
    mask = (np.arange(24, dtype="<u4") % 5 == 0).astype("<u4").reshape(4, 6)
    start = {
        "type": "start", "series_id": 3, "series_unique_id": "s-3",
        "arm_date": CBORTag(0, "2026-11-28T10:00:00.000+00:00"),
        "beam_center_x": 2.5, "beam_center_y": 1.5, "channels": ch,
        "count_time": 0.01, "countrate_correction_enabled": True,
        "countrate_correction_lookup_table": CBORTag(70, np.arange(16, dtype="<u4").tobytes()),
        "detector_description": "EIGER2 test", "detector_serial_number": "E-0",
        "detector_translation": [0.0, 0.0, 0.12],
        "flatfield": {c: md(ff) for c in ch}, "flatfield_enabled": True,
        "frame_time": 0.01,
        "goniometer": {"omega": {"increment": 0.1, "start": 10.0},
                       "kappa": {"increment": 0.0, "start": 0.0}},
        "image_dtype": "uint16", "image_size_x": 6, "image_size_y": 4,
        "incident_energy": 12400.0, "incident_wavelength": 1.0,
        "number_of_images": 5, "pixel_mask": {c: md(mask) for c in ch},
        "pixel_mask_enabled": True, "pixel_size_x": 7.5e-05,
        "pixel_size_y": 7.5e-05, "saturation_value": 65534,
        "sensor_material": "Si", "sensor_thickness": 0.00045,
        "threshold_energy": {"threshold_1": 6000.0, "threshold_2": 9000.0},
        "user_data": {"sample": "lysozyme", "n": [1, 2, 3]},
        "virtual_pixel_interpolation_enabled": False,
    }
    px = (np.arange(24) % 251).astype("<u2").reshape(4, 6)
    image = {
        "type": "image", "series_id": 3, "series_unique_id": "s-3",
        "image_id": 3, "series_date": CBORTag(0, "2026-11-28T10:00:01.000+00:00"),
        "start_time": [30000000, 1000000000], "stop_time": [40000000, 1000000000],
        "real_time": [9999000, 1000000000], "user_data": "frame three",
        "data": {"threshold_1": md(px, "bslz4"), "threshold_2": md(px)},
    }
    end = {"type": "end", "series_id": 3, "series_unique_id": "s-3"}
    bare = {
        "type": "start", "series_id": 4, "series_unique_id": "s-4",
        "arm_date": CBORTag(0, "2026-11-28T11:00:00.000+01:00"),
        "channels": ["threshold_1"], "countrate_correction_enabled": True,
        "countrate_correction_lookup_table": b"\0\0\0\0",
        "flatfield": {"threshold_1": b"\0\0\0\0"},
        "pixel_mask": {"threshold_1": b"\0\0\0\0"},
        "goniometer": {"chi": {"increment": 0.0, "start": 30.0}},
        "number_of_images": 2,
        "threshold_energy": {"threshold_1": 6750.0, "threshold_2": 18900.0},
    }
    self_described = lambda m: cbor2.dumps(CBORTag(55799, m))
    for name, data in (("start_full", self_described(start)),
                       ("image_bslz4", self_described(image)),
                       ("end", self_described(end)),
                       ("start_bare", cbor2.dumps(bare))):
        with open("%s/%s.cbor" % (out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])

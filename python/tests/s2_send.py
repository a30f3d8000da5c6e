"""A DECTRIS Stream V2 series as a detector sends it (CBOR, written from
DECTRIS's stream_v2 README with python3-cbor2, independent of the daemon's
decoder), for the tests that export what the daemon stored from it.

    series = Series(ny=514, nx=1030, dtype="uint16", nimages=6)
    series.send(push_socket)             # start, images, end
    series.image(i)                      # the pixels of image i
"""
from __future__ import annotations

import cbor2
import numpy as np

# RFC 8746 typed-array tags (little endian)
TAGS = {"uint8": 64, "uint16": 69, "uint32": 70, "float32": 85}
SELF_DESCRIBED = 55799               # DECTRIS tags every message with it


def mdarray(a: np.ndarray) -> cbor2.CBORTag:
    """A 2-D array as Stream V2 sends it: tag 40 [[y, x], typed array]."""
    tag = TAGS[a.dtype.name]
    return cbor2.CBORTag(40, [list(a.shape),
                              cbor2.CBORTag(tag, np.ascontiguousarray(a).astype(
                                  a.dtype.newbyteorder("<")).tobytes())])


class Series:
    def __init__(self, ny=514, nx=1030, dtype="uint16", nimages=6, series_id=1,
                 channel="threshold_1", skip=(), beamline=None, tagged=False,
                 arrays=True, extra=None):
        self.ny, self.nx, self.dtype, self.nimages = ny, nx, dtype, nimages
        self.series_id, self.channel, self.skip = series_id, channel, set(skip)
        self.beamline, self.tagged, self.arrays = beamline, tagged, arrays
        self.extra = extra or {}
        self.uid = f"uid-{series_id}"
        rng = np.random.default_rng(7)
        # bits 0 (gap) and 1 (dead) on a few pixels, as an EIGER's mask
        self.mask = np.zeros((ny, nx), "<u4")
        self.mask[rng.integers(0, ny, 40), rng.integers(0, nx, 40)] = 2
        self.mask[:, nx // 2] = 1
        self.flatfield = (1 + rng.random((ny, nx)) * 0.05).astype("<f4")

    def start_fields(self) -> dict:
        """The start message's fields (as the series metadata holds them)."""
        f = {
            "type": "start",
            "series_id": self.series_id,
            "series_unique_id": self.uid,
            "arm_date": cbor2.CBORTag(0, "2026-11-28T10:00:00.000+00:00"),
            "beam_center_x": 512.5,
            "beam_center_y": 256.25,
            "channels": [self.channel],
            "count_time": 0.0099,
            "countrate_correction_enabled": True,
            "detector_description": "Dectris EIGER2 Si 500K",
            "detector_serial_number": "E-32-0105",
            "detector_translation": [0.0, 0.0, 0.1234],
            "flatfield_enabled": False,
            "frame_time": 0.01,
            "goniometer": {"omega": {"increment": 0.1, "start": 90.0},
                           "phi": {"increment": 0.0, "start": 12.5}},
            "image_dtype": self.dtype,
            "image_size_x": self.nx,
            "image_size_y": self.ny,
            "incident_energy": 12398.419843320026,
            "incident_wavelength": 1.0,
            "number_of_images": self.nimages,
            "pixel_mask_enabled": True,
            "pixel_size_x": 7.5e-05,
            "pixel_size_y": 7.5e-05,
            "saturation_value": {"uint8": 254, "uint16": 65534}.get(self.dtype, 1000000),
            "sensor_material": "Si",
            "sensor_thickness": 0.00045,
            "threshold_energy": {self.channel: 6000.0},
            "virtual_pixel_interpolation_enabled": True,
            "user_data": {"operator": "ana"},
        }
        if self.arrays:
            f["pixel_mask"] = {self.channel: mdarray(self.mask)}
            f["flatfield"] = {self.channel: mdarray(self.flatfield)}
        if self.beamline is not None:
            f["beamline"] = self.beamline
        f.update(self.extra)
        return f

    def image(self, i: int) -> np.ndarray:
        rng = np.random.default_rng(1000 + i)
        top = {"uint8": 200, "uint16": 60000, "uint32": 1 << 20}[self.dtype]
        a = rng.poisson(2 + i, (self.ny, self.nx))
        a[(self.ny // 3) % self.ny, :] = top       # a bright row
        return np.minimum(a, top).astype(self.dtype)

    def _send(self, sock, msg: dict) -> None:
        obj = cbor2.CBORTag(SELF_DESCRIBED, msg) if self.tagged else msg
        sock.send(cbor2.dumps(obj))

    def send(self, sock) -> None:
        self._send(sock, self.start_fields())
        for i in range(self.nimages):
            if i in self.skip:
                continue
            t0 = 10_000_000 * i                       # 100 ns time base
            self._send(sock, {
                "type": "image", "series_id": self.series_id,
                "series_unique_id": self.uid, "image_id": i,
                "series_date": cbor2.CBORTag(0, "2026-11-28T10:00:01.000+00:00"),
                "start_time": [t0 // 100, 10_000_000],
                "stop_time": [(t0 + 9_900_000) // 100, 10_000_000],
                "real_time": [99_000, 10_000_000],
                "data": {self.channel: mdarray(self.image(i))}})
        self._send(sock, {"type": "end", "series_id": self.series_id,
                          "series_unique_id": self.uid})

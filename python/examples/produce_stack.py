#!/usr/bin/python3
"""Producer: stream a numpy stack (a .npy file, or synthetic images) one
image per buffer, each becoming one chunk of the stream's frame.

    python3 produce_stack.py [--endpoint ...] [--template detector] STREAM [STACK.npy]

The daemon withholds credit when its queue is full (policy block); send()
waits for it.  flush() at the end makes every image durable."""
import argparse
import time

import numpy as np

import b2stream


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stream")
    ap.add_argument("stack", nargs="?", help=".npy file (default: 100 synthetic 512x512 images)")
    ap.add_argument("--endpoint", default=None)
    ap.add_argument("--template", default="", help="create the stream from this template")
    ap.add_argument("--shm", action="store_true", help="fill shared-memory slots in place")
    args = ap.parse_args()

    if args.stack:
        stack = np.load(args.stack, mmap_mode="r")
    else:
        y, x = np.mgrid[0:512, 0:512]
        stack = np.stack([((x + y + 7 * i) % 4096).astype(np.uint16) for i in range(100)])

    t0 = time.monotonic()
    with b2stream.Session(args.endpoint, name="produce-stack") as s, \
            s.open(args.stream, args.template) as p:
        if args.shm:
            seg = p.attach_shm(nslots=8, slot_size=stack[0].nbytes)
            for image in stack:
                with seg.acquire() as slot:
                    slot.array(image.dtype, image.shape)[...] = image
        else:
            for image in stack:
                p.send(image)
        result = p.flush()
        st = p.stats()
    dt = time.monotonic() - t0
    print(f"{st.sent} images, {st.bytes / dt / 1e6:.1f} MB/s, "
          f"{result.upto} settled, {st.dropped} dropped, {st.rejected} rejected")


if __name__ == "__main__":
    main()

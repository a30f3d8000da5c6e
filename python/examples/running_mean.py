#!/usr/bin/python3
"""Live consumer: follow a stream of images and keep a running mean image.

    python3 running_mean.py [--endpoint ipc://run/b2streamd.sock] detector1

Each chunk arrives decompressed by the daemon, as a numpy array shaped and
typed from the stream's b2nd metadata.  Ctrl-C ends the follow cleanly."""
import argparse

import numpy as np

import b2stream


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stream")
    ap.add_argument("--endpoint", default=None)
    ap.add_argument("--from-start", action="store_true",
                    help="include the images already in the stream")
    ap.add_argument("--every", type=int, default=100, help="print every N images")
    args = ap.parse_args()

    mean, n = None, 0
    with b2stream.Session(args.endpoint, name="running-mean") as s, \
            s.follow(args.stream, 0 if args.from_start else "end", resume=True) as images:
        try:
            for index, image in images:
                image = image.astype(np.float64)
                mean = image if mean is None else mean + (image - mean) / (n + 1)
                n += 1
                if n % args.every == 0:
                    print(f"{n} images (last {index}): mean {mean.mean():.3f}, "
                          f"min {mean.min():.3f}, max {mean.max():.3f}")
        except KeyboardInterrupt:
            pass
    if mean is not None:
        np.save(f"{args.stream}-mean.npy", mean)
        print(f"running mean of {n} images saved to {args.stream}-mean.npy")


if __name__ == "__main__":
    main()

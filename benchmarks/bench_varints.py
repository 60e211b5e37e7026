"""decode_example / parse_single_example on one record of 784 int64 values, per width.

CPU time per record (best of 7), so that other processes on the machine matter less.
Set ``TFE_PER_VARINT=1`` to force the per-varint loops (the "before" numbers).

python -m benchmarks.bench_varints
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
import timeit
from collections.abc import Callable
from unittest import mock

import numpy as np

import tfrecord_engine as tfe
from tfrecord_engine.example import pbwire, wire

_CASES = {
    "pixels 0..255 (1-2 B)": (0, 256),
    "small 0..127 (1 B)": (0, 128),
    "0..2^40 (1-6 B)": (0, 2**40),
    "+-2^40 (half 10 B)": (-(2**40), 2**40),
    "negative (10 B)": (-1000, 0),
}


def _best_us(fn: Callable[[], object], n: int = 300) -> float:
    return min(timeit.repeat(fn, number=n, repeat=7, timer=time.process_time)) / n * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    spec = {"x": tfe.FixedLenFeature([784], "int64")}
    loops = contextlib.ExitStack()
    if os.environ.get("TFE_PER_VARINT") == "1":
        loops.enter_context(mock.patch.object(pbwire, "NUMPY_MIN_BYTES", 1 << 62))
        loops.enter_context(mock.patch.object(wire, "NUMPY_MIN_BYTES", 1 << 62))
    with loops:
        print(f"{'784 int64 values':24s} {'decode_example':>16s} {'parse_single':>14s}")
        for name, (lo, hi) in _CASES.items():
            values = rng.integers(lo, hi, 784, dtype=np.int64)
            record = tfe.encode_example({"x": values, "y": [1]})
            decode = _best_us(functools.partial(tfe.decode_example, record))
            parse = _best_us(functools.partial(tfe.parse_single_example, record, spec))
            print(f"{name:24s} {decode:13.1f} us {parse:11.1f} us")


if __name__ == "__main__":
    main()

"""Decode alone: ``BatchDecoder`` on one batch of records of each shape vs ``tf.io.parse_example``.

Separates the decode from the read and pipeline costs of the parsed-batch rows of
``benchmarks.bench_shapes``: the same records (read once into memory, in file order or a
seeded shuffle across the shape's files) are decoded by both, alternately, several times.

Run: ``python -m benchmarks.bench_decode_alone [--shapes wide,detection] [--sizes 256,4096]``.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.shape_baselines import tf_parse
from benchmarks.shape_cases import _tf_numpy
from benchmarks.shapes import SHAPES, write_shape
from tfrecord_engine import kernels
from tfrecord_engine.example.batch import BatchDecoder, join_records

EXAMPLE_SHAPES = ("image", "detection", "tokens", "mixed", "ragged", "tabular", "wide")


def _records(shape: str, n: int, shuffle: bool) -> list[bytes]:
    paths = write_shape(SHAPES[shape], 20000)
    raw = tfe.RecordDataset(paths)
    idx = np.random.default_rng(7).permutation(len(raw))[:n] if shuffle else np.arange(n)
    return list(raw[idx.tolist()])


def _best_median(fn: Callable[[], Any], reps: int, budget: float = 0.4) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        k = 0
        while True:
            fn()
            k += 1
            dt = time.perf_counter() - t0
            if dt > budget:
                break
        out.append(dt / k)
    return out


def _case(name: str, size: int, shuffle: bool, reps: int, tf: Any) -> str:
    """One line: ours and TensorFlow's decode of one batch, µs a record (best/median)."""
    shape = SHAPES[name]
    records = _records(name, size, shuffle)
    dec = BatchDecoder(shape.features)
    buf, starts, ends = join_records(records)

    def ours() -> None:
        cols = dec.columns(buf, starts, ends)
        assert cols is not None
        dec.assemble(cols, 0, len(records))

    ours()
    ours()
    times: dict[str, list[float]] = {"ours": []}
    theirs: Callable[[], Any] | None = None
    if tf is not None:
        t_in = tf.constant(records)
        fn = tf.function(tf_parse(shape))

        def theirs() -> None:
            _tf_numpy(fn(t_in))

        theirs()
        times["tf"] = []
    for _ in range(reps):
        times["ours"] += _best_median(ours, 1)
        if theirs is not None:
            times["tf"] += _best_median(theirs, 1)
    us = {k: [t / size * 1e6 for t in v] for k, v in times.items()}
    line = f"{name:10s} B={size:5d} {'shuf' if shuffle else 'seq '}"
    line += f" ours {min(us['ours']):7.2f}/{statistics.median(us['ours']):7.2f} us/rec"
    if theirs is not None:
        line += f" tf {min(us['tf']):7.2f}/{statistics.median(us['tf']):7.2f}"
        best = min(us["tf"]) / min(us["ours"])
        med = statistics.median(us["tf"]) / statistics.median(us["ours"])
        line += f" ratio best {best:5.2f} med {med:5.2f}"
    st = dec.stats
    return line + f" [fb {st.fallback_records} tpl {st.template_records} walk {st.walked_records}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=",".join(EXAMPLE_SHAPES))
    ap.add_argument("--sizes", default="256,4096")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-tf", action="store_true")
    args = ap.parse_args()
    if not kernels.wait(300):
        raise SystemExit("the compiled kernels did not load")
    tf = None if args.no_tf else importlib.import_module("tensorflow")
    for name in args.shapes.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            for shuffle in (False, True):
                print(_case(name, size, shuffle, args.reps, tf), flush=True)


if __name__ == "__main__":
    main()

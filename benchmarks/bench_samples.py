"""``__getitems__`` of a few records: one compiled decode for all of them, or one a record.

    python -m benchmarks.bench_samples
    python -m benchmarks.bench_samples --shapes mixed,ragged --sizes 8,64 --rounds 5

A PyTorch map-style loader hands each batch of sampler indices to ``__getitems__``.
Below ``SAMPLES_WALK_MIN_HELD`` records (``SAMPLES_WALK_MIN`` where random reads go to
the files) they are decoded record by record with ``ds[i]``'s decoder. This times its
two ways, alternating in one process on the same datasets and indices:

- ``per record``: ``SingleDecoder.sample_list``, one compiled decode call a record;
- ``one call``: ``SingleDecoder.sample_batch`` (the default): the records joined, their
  numbers decoded by one compiled call (``kernels`` ``decode_many``), then the spec's
  take per record.

Both read the records the same way (``read_few``). Shapes: the matrix's
(``benchmarks.shapes``) and ``bench_thresholds``' held-out and third-set ones.
Prints µs per record, the best of ``--rounds`` rounds of best-of-3, and the ratio.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

import numpy as np

import tfrecord_engine as tfe
from benchmarks.bench_thresholds import RECORDS, shape_named
from benchmarks.common import best_seconds
from benchmarks.shapes import write_shape
from tfrecord_engine import kernels
from tfrecord_engine.data.single import SingleDecoder

_SHAPES = "image,detection,tokens,mixed,ragged,tabular,wide,captioned,audio,clicks,product"


@contextlib.contextmanager
def _record_by_record() -> Iterator[None]:
    """``sample_batch`` as it was before it: ``sample_list``."""
    real = SingleDecoder.sample_batch
    SingleDecoder.sample_batch = SingleDecoder.sample_list  # type: ignore[method-assign]
    try:
        yield
    finally:
        SingleDecoder.sample_batch = real  # type: ignore[method-assign]


def _rows(name: str, sizes: list[int], rounds: int) -> list[str]:
    shape = shape_named(name)
    ds = tfe.RecordDataset(write_shape(shape, RECORDS), features=shape.features)
    n = len(ds)
    rng = np.random.default_rng(3)
    rows = []
    for size in sizes:
        lists = [rng.integers(0, n, size).tolist() for _ in range(max(8, 4096 // size))]

        def calls(lists: list[list[int]] = lists) -> None:
            for k in lists:
                ds.__getitems__(k)

        calls()  # (the files' copies made, the kernels compiled)
        times: dict[str, list[float]] = {"per record": [], "one call": []}
        for _ in range(rounds):
            with _record_by_record():
                times["per record"].append(best_seconds(calls))
            times["one call"].append(best_seconds(calls))
        per = min(times["per record"]) / (len(lists) * size) * 1e6
        one = min(times["one call"]) / (len(lists) * size) * 1e6
        path = "record by record" if not ds._walk_beats_single(size) else "batch decode"
        rows.append(
            f"| {name} | `__getitems__({size})` ({path}) | {per:.2f} | {one:.2f} "
            f"| {per / one:.2f}x |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=_SHAPES, help="the matrix's or held-out shapes")
    parser.add_argument("--sizes", default="8,32,64", help="records per call")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not kernels.ready():
        raise SystemExit("the compiled kernels are not loaded: install the fast extra")
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| shape | call | per record, µs a record | one call, µs a record | speed-up |")
    print("|---|---|---:|---:|---:|")
    for name in args.shapes.split(","):
        for row in _rows(name, sizes, args.rounds):
            print(row, flush=True)


if __name__ == "__main__":
    main()

"""Lists of numbers as ``VarLenFeature`` against ``RaggedFeature``: parsed epochs, A/B.

    python -m benchmarks.bench_list_kinds                   # clips, tokens, detection
    python -m benchmarks.bench_list_kinds --shapes clips --rounds 7

A ``VarLenFeature`` gives a ``SparseValue`` whose ``indices`` hold a ``[row, position]``
pair of int64 for every value: 16 bytes for each 4-byte float32 sample or 8-byte int64
id. ``RaggedFeature`` of the same key gives the same values with one row split a record
(a ``RaggedValue``), as TensorFlow's ``RaggedFeature`` does. For each shape one process
alternates, round after round, ``batches(n)`` (in order and shuffled, 256 and 4,096)
with every ``VarLenFeature`` of the shape's spec and with each made a ``RaggedFeature``
of the same dtype, and prints the best and median epoch of each. Shapes: the matrix's
and the survey's (``benchmarks.shapes``, ``benchmarks.survey_shapes``; 20,000 records).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Mapping
from typing import Any

import tfrecord_engine as tfe
from benchmarks.shapes import write_shape
from benchmarks.survey_shapes import ALL_SHAPES

RECORDS = 20_000
CASES = ((256, False), (256, True), (4096, False), (4096, True))


def as_ragged(features: Mapping[str, Any]) -> dict[str, Any]:
    """``features`` with every ``VarLenFeature`` made a ``RaggedFeature`` of its dtype."""
    return {
        key: tfe.RaggedFeature(spec.dtype) if isinstance(spec, tfe.VarLenFeature) else spec
        for key, spec in features.items()
    }


def compare(name: str, rounds: int) -> list[str]:
    """Markdown rows for one shape: case, each kind's best / median epoch, the ratio."""
    shape = ALL_SHAPES[name]
    if shape.is_sequence or not any(
        isinstance(s, tfe.VarLenFeature) for s in shape.features.values()
    ):
        raise SystemExit(f"{name}: no VarLenFeature in an Example spec to compare")
    paths = write_shape(shape, RECORDS)
    kinds = {
        "VarLenFeature": tfe.RecordDataset(paths, features=shape.features),
        "RaggedFeature": tfe.RecordDataset(paths, features=as_ragged(shape.features)),
    }
    rows = []
    for size, shuffle in CASES:
        times: dict[str, list[float]] = {kind: [] for kind in kinds}
        for r in range(rounds + 1):  # (round 0 warms up, untimed)
            for kind, ds in kinds.items():
                t0 = time.perf_counter()
                for _batch in ds.batches(size, shuffle=shuffle, seed=r):
                    pass
                if r:
                    times[kind].append(time.perf_counter() - t0)
        best = {k: min(v) * 1e3 for k, v in times.items()}
        median = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        order = "shuffled" if shuffle else "in order"
        rows.append(
            f"| {name} | {size:,}, {order} | {best['VarLenFeature']:.0f} / "
            f"{median['VarLenFeature']:.0f} ms | {best['RaggedFeature']:.0f} / "
            f"{median['RaggedFeature']:.0f} ms | "
            f"{best['VarLenFeature'] / best['RaggedFeature']:.2f}x |"
        )
    for ds in kinds.values():
        ds.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="clips,tokens,detection")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print("| shape | batches | VarLenFeature best / median | RaggedFeature | speed-up |")
    print("|---|---|---:|---:|---:|")
    for name in args.shapes.split(","):
        for row in compare(name, args.rounds):
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

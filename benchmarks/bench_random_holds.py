"""Random reads with and without their whole-file copies (``random_holds``), A/B.

    python -m benchmarks.bench_random_holds
    python -m benchmarks.bench_random_holds --shapes image,mixed --rounds 3

For each record shape of the matrix (20,000 records in four files, ``benchmarks.shapes``),
one process opens the same files twice, ``RecordDataset(..., random_holds=True)`` (the
default) and ``random_holds=False``, and times on each: ``ds[i]`` over 2,000 random
indices, ``__getitems__`` of 60 random lists of 64, and raw random batches of 1,024 over
a permutation of all records. One untimed pass of each first (the copies are made
there), then the two settings alternate, ``--rounds`` times, each case the best of
three runs. Prints one Markdown row per shape: µs per call (``ds[i]``, ``__getitems__``)
and µs per record (raw batches), without → with the copies, best of the rounds.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.common import best_seconds
from benchmarks.shapes import SHAPES, Shape, write_shape

RECORDS = 20_000


def _specs(shape: Shape) -> dict[str, Any]:
    if shape.is_sequence:
        return {"context_features": shape.features, "sequence_features": shape.sequence_features}
    return {"features": shape.features}


def run_shape(name: str, rounds: int) -> str:
    """One Markdown row: shape, ``ds[i]``, ``__getitems__(64)``, raw batches of 1,024."""
    shape = SHAPES[name]
    paths = write_shape(shape, RECORDS)
    rng = np.random.default_rng(1)
    opened = {
        on: (
            tfe.RecordDataset(paths, random_holds=on, **_specs(shape)),
            tfe.RecordDataset(paths, random_holds=on),
        )
        for on in (True, False)
    }
    n = len(opened[True][0])
    one = rng.integers(0, n, 2000).tolist()
    lists = [rng.integers(0, n, 64).tolist() for _ in range(60)]
    order = rng.permutation(n)
    chunks = [order[i : i + 1024] for i in range(0, n, 1024)]

    def measure(on: bool) -> tuple[float, float, float]:
        ds, raw = opened[on]
        item = best_seconds(lambda: [ds[i] for i in one]) / len(one)
        few = best_seconds(lambda: [ds.__getitems__(k) for k in lists]) / len(lists)
        batch = best_seconds(lambda: [raw[c] for c in chunks]) / n
        return item * 1e6, few * 1e6, batch * 1e6

    measure(True)  # untimed: the copies are made here
    measure(False)
    got: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    for _ in range(rounds):
        for on in (True, False):
            got[on].append(measure(on))
    on = np.min(np.array(got[True]), axis=0)
    off = np.min(np.array(got[False]), axis=0)
    return (
        f"| {name} | {off[0]:.1f} → {on[0]:.1f} | {off[1]:.0f} → {on[1]:.0f} "
        f"| {off[2]:.2f} → {on[2]:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print("| shape | `ds[i]`, µs | `__getitems__(64)`, µs | raw batches of 1,024, µs a record |")
    print("|---|---:|---:|---:|")
    for name in args.shapes.split(","):
        print(run_shape(name, args.rounds), flush=True)


if __name__ == "__main__":
    main()

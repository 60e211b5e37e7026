"""Epochs of a mix (``sample_from_datasets``) against one dataset of the same files.

    python -m benchmarks.bench_mix                       # six shapes, in order and shuffled
    python -m benchmarks.bench_mix --shapes tokens,image --rounds 9
    python -m benchmarks.bench_mix --before              # also mixes read as before

For each shape of the matrix (``benchmarks.shapes``, 20,000 records in four files), one
process alternates, round after round: ``RecordDataset(all four files).batches(256)``
and ``sample_from_datasets([first two files, last two], seed=0).batches(256)``, in
order and shuffled, and with ``--before`` the mix read as mixes were until 2026-11-28
(each chunk's records as ``bytes`` objects joined again for the decoder, on one
read-ahead thread, no file held in an epoch in order: ``LeafSource.read_spans``
declining chunks over several datasets, files held for shuffled epochs only, the
epoch given one thread; the read of a held file as a view of
the epoch's region, which single datasets share, is not undone). Prints the best and
median epoch of each, and the mix's ratio to the dataset (best / median; above 1: the
mix is slower).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.shapes import SHAPES, write_shape
from tfrecord_engine import kernels
from tfrecord_engine.data import epochs, leaves

RECORDS = 20_000
BATCH = 256


def _old_read_spans(self: leaves.LeafSource, indices: Sequence[int] | Any) -> Any:
    """``LeafSource.read_spans`` as it was: spans only for one dataset's records."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    groups = self._groups(idx)
    if len(groups) != 1:
        return None
    d, _, local = groups[0]
    return self.datasets[d].read_spans(local)


_FILES_TO_HOLD = epochs.files_to_hold


def _old_files_to_hold(*args: Any, in_order: bool = False) -> list[Any]:
    """``files_to_hold`` as a mix's epoch used it then: files held for shuffled epochs
    only (an epoch in order took the copies earlier epochs kept)."""
    return _FILES_TO_HOLD(*args, in_order=False)


@contextlib.contextmanager
def read_as_before(on: bool) -> Iterator[None]:
    """Mixes read as before 2026-11-28 while inside (``on``), as now otherwise.

    Holds and threads are patched where ``epochs.start_epoch`` finds them, which mixes
    and datasets now share: only the case run inside sees them."""
    cls = leaves.LeafSource
    spans = cls.read_spans
    hold, threads = epochs.files_to_hold, epochs.read_ahead_threads
    if on:
        cls.read_spans = _old_read_spans  # type: ignore[method-assign]
        epochs.files_to_hold = _old_files_to_hold  # type: ignore[assignment]
        epochs.read_ahead_threads = lambda *args: 1
    try:
        yield
    finally:
        cls.read_spans = spans  # type: ignore[method-assign]
        epochs.files_to_hold, epochs.read_ahead_threads = hold, threads


def run_shape(name: str, rounds: int, before: bool) -> list[str]:
    """Lines of ``name``: each case's best / median epoch, in order and shuffled."""
    shape = SHAPES[name]
    if shape.is_sequence:
        raise SystemExit(f"{name}: SequenceExample shapes are not mixed here")
    paths = write_shape(shape, RECORDS)

    def dataset(files: list[str]) -> tfe.RecordDataset:
        return tfe.RecordDataset(files, features=shape.features)

    one = dataset(paths)
    mix = tfe.sample_from_datasets([dataset(paths[:2]), dataset(paths[2:])], seed=0)
    cases: list[tuple[str, Any, bool]] = [("one dataset", one, False), ("mix", mix, False)]
    if before:
        cases.append(("mix read as before", mix, True))
    lines = []
    for shuffle in (False, True):
        times: dict[str, list[float]] = {label: [] for label, _, _ in cases}
        for r in range(rounds + 1):
            for label, ds, old in cases:
                with read_as_before(old):
                    t0 = time.perf_counter()
                    for _batch in ds.batches(BATCH, shuffle=shuffle, seed=1, epoch=r):
                        pass
                    if r:  # (round 0 warms up: files held, kernels compiled)
                        times[label].append(time.perf_counter() - t0)
        base = times["one dataset"]
        cells = []
        for label, got in times.items():
            best, median = min(got), statistics.median(got)
            ratio = f", {best / min(base):.2f} / {median / statistics.median(base):.2f}x"
            cells.append(
                f"{label} {best * 1e3:.1f} / {median * 1e3:.1f} ms" + ("" if got is base else ratio)
            )
        order = "shuffled" if shuffle else "in order"
        lines.append(f"{name} {order}: " + " | ".join(cells))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="tokens,mixed,image,detection,ragged,tabular")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--before", action="store_true", help="also mixes read as before")
    args = ap.parse_args()
    if not kernels.wait(300):
        raise SystemExit("the compiled kernels did not load")
    for name in args.shapes.split(","):
        for line in run_shape(name, args.rounds, args.before):
            print(line, flush=True)


if __name__ == "__main__":
    main()

"""Later epochs of one dataset, in file order and shuffled, alternating: an A/B tool.

For each shape of the matrix (``benchmarks.shapes``, 20,000 records, its cached files),
one ``RecordDataset`` runs ``--rounds`` rounds of an in-order epoch and a shuffled epoch
of parsed batches, and the best epoch time of each order is printed. Within one process
the two orders share the dataset's in-memory copies, as a training loop's epochs do.

To compare two commits, run it from each checkout in turn, alternating (each process
imports the checkout it runs in)::

    git worktree add /tmp/old <commit>
    for i in 1 2; do
      (cd /tmp/old && PYTHONPATH=. python -m benchmarks.bench_epoch_orders --shapes image)
      PYTHONPATH=. python -m benchmarks.bench_epoch_orders --shapes image
    done

``--gather`` turns off the views of a shared region (every batch across files gathered
into a new buffer, as before regions); ``--separate`` gives each file its own copy.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.shape_cases import ours_for
from benchmarks.shapes import SHAPES, write_shape
from tfrecord_engine import kernels

RECORDS = 20_000


def epoch_times(name: str, batch: int, rounds: int) -> tuple[float, float]:
    """Best seconds of an in-order and of a shuffled epoch of shape ``name``."""
    shape = SHAPES[name]
    ds = ours_for(shape, write_shape(shape, RECORDS)).ds
    best = {False: float("inf"), True: float("inf")}
    with ds:
        for _ in range(rounds):
            for shuffle in (False, True):
                t0 = time.perf_counter()
                for _batch in ds.batches(batch, shuffle=shuffle, seed=1):
                    pass
                best[shuffle] = min(best[shuffle], time.perf_counter() - t0)
    return best[False], best[True]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="image,detection,sequence,ragged,wide")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--gather", action="store_true", help="no views of a shared region")
    ap.add_argument("--separate", action="store_true", help="one copy per file, no region")
    args = ap.parse_args()
    if args.gather:
        from tfrecord_engine.data import gather

        gather._VIEW_BYTES = 1 << 62
    if args.separate:
        from tfrecord_engine.data import epochs

        epochs.RecordBatchIterator._joint = lambda self: None  # type: ignore[method-assign]
    if not kernels.wait(300):
        raise SystemExit("the compiled kernels did not load")
    for name in args.shapes.split(","):
        in_order, shuffled = epoch_times(name, args.batch, args.rounds)
        print(
            f"{name:10s} batches of {args.batch}: in order {in_order * 1e3:7.1f} ms, "
            f"shuffled {shuffled * 1e3:7.1f} ms (best of {args.rounds})",
            flush=True,
        )


if __name__ == "__main__":
    main()

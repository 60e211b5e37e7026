"""When dense decodes walk a batch's chunks on the thread pool: an alternating A/B.

The compiled dense decode (``tfrecord_engine.example.dense``) walks the ~1 MB chunks of
a batch on a small thread pool only where that pays: not inside an epoch that already
decodes on several read-ahead threads, and not for a spec whose kernel costs under
``POOL_MIN_KERNEL_S`` of CPU per MB. This tool runs each epoch
twice in turn in one process, with that choice ("now") and with the pool wherever a
batch has two chunks or more ("always"), and prints best and median epoch times::

    python -m benchmarks.bench_dense_pool                       # image, tabular, wide, MNIST-like
    python -m benchmarks.bench_dense_pool --shapes tabular --rounds 12

Shapes: the matrix's (``benchmarks.shapes``, 20,000 records, their cached files) and
``mnist`` (70,000 MNIST-like records, ``benchmarks.data.mnist_like``: index, label, 784-byte
image as a string). Epochs: parsed batches of 256 in order and shuffled, 4,096 in order,
with ``batches``' defaults (read-ahead threads included).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Iterator

import tfrecord_engine as tfe
from benchmarks.common import patched
from benchmarks.data import MNIST_SPEC, mnist_like
from benchmarks.shape_cases import ours_for
from benchmarks.shapes import SHAPES, write_shape
from tfrecord_engine.data import epochs
from tfrecord_engine.example import dense

RECORDS = 20_000
EPOCHS = ((256, False), (256, True), (4096, False))


@contextlib.contextmanager
def _always_the_pool() -> Iterator[None]:
    """The choice before it was measured: the pool for every batch of two chunks."""
    with (
        patched(dense, "POOL_MIN_KERNEL_S", 0.0),
        patched(epochs, "on_calling_thread", contextlib.nullcontext),
    ):
        yield


def _dataset(name: str) -> tfe.RecordDataset:
    if name == "mnist":
        return tfe.RecordDataset(mnist_like(), features=MNIST_SPEC)
    shape = SHAPES[name]
    return ours_for(shape, write_shape(shape, RECORDS)).ds


def _epoch(ds: tfe.RecordDataset, batch: int, shuffle: bool) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter()
        for _ in ds.batches(batch, shuffle=shuffle, seed=1):
            pass
        return time.perf_counter() - start

    return run


def compare(name: str, rounds: int) -> list[str]:
    """One line per epoch kind of shape ``name``: ms best / median, each way, and the
    speed-up of the current choice."""
    ds = _dataset(name)
    lines = []
    with ds:
        for batch, shuffle in EPOCHS:
            run = _epoch(ds, batch, shuffle)
            times: dict[str, list[float]] = {"always": [], "now": []}
            for _ in range(rounds + 1):  # (the first round untimed)
                with _always_the_pool():
                    times["always"].append(run())
                times["now"].append(run())
            old, new = (sorted(times[k][1:]) for k in ("always", "now"))
            mid_old, mid_new = statistics.median(old), statistics.median(new)
            lines.append(
                f"| {name} | {batch} | {'shuffled' if shuffle else 'in order'} "
                f"| {old[0] * 1e3:.1f} / {mid_old * 1e3:.1f} "
                f"| {new[0] * 1e3:.1f} / {mid_new * 1e3:.1f} "
                f"| {old[0] / new[0]:.2f}x / {mid_old / mid_new:.2f}x |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", default=["image", "tabular", "wide", "mnist"])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    print("| shape | batch | order | pool always, ms best / median | now | speed-up |")
    print("|---|---:|---|---:|---:|---:|")
    for name in args.shapes:
        for line in compare(name, args.rounds):
            print(line, flush=True)


if __name__ == "__main__":
    main()

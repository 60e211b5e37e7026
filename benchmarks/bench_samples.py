"""``__getitems__`` of a few records: one compiled decode for all of them, or one a record.

    python -m benchmarks.bench_samples
    python -m benchmarks.bench_samples --shapes mixed,ragged --sizes 8,64 --rounds 5
    python -m benchmarks.bench_samples --columns --shapes wide,tabular --sizes 8,16,64,128
    python -m benchmarks.bench_samples --templates --shapes mnist,clicks --sizes 64,128,256

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
With ``--columns``, ``ds[list]`` instead (a columnar batch of up to ``SMALL_BATCH``
records of a spec of scalars only): record by record in Python, as it was for every
such spec, against now (specs of 16 keys or more batch-decoded from 16 records on).

With ``--templates``, random ``ds[list]`` batches (a columnar batch decode, as
``__getitems__`` of 96 records or more takes): the template chooser counting each
chunk as a full one (as before) against as its share of ``chunk_records`` (now);
``mnist`` (a 28x28 ``RawFeature`` and a label, records of one layout) is a shape here.

Prints µs per record, the best of ``--rounds`` rounds of best-of-3, and the ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
from collections.abc import Callable, Iterator

import numpy as np

import tfrecord_engine as tfe
from benchmarks.bench_thresholds import RECORDS, shape_named
from benchmarks.common import DATA_DIR, best_seconds, patched
from benchmarks.shapes import write_shape
from tfrecord_engine import kernels
from tfrecord_engine.example.single import SingleDecoder

_SHAPES = "image,detection,tokens,mixed,ragged,tabular,wide,captioned,audio,clicks,product"


def _alternate(  # noqa: PLR0917 - the A/B's settings, each used once
    ds: tfe.RecordDataset,
    call: Callable[[list[int]], object],
    sizes: list[int],
    rounds: int,
    old: Callable[[], contextlib.AbstractContextManager[None]],
    seed: int,
    lists: tuple[int, int],
) -> Iterator[tuple[int, float, float]]:
    """Per size: ``(size, µs a record inside old(), µs a record now)`` of ``call`` over
    random index lists of ``ds`` (``lists``: at least that many, and that many records
    a size in all), the two ways alternating; the best of ``rounds`` best-of-3."""
    rng = np.random.default_rng(seed)
    least, records = lists
    for size in sizes:
        batch = [
            rng.integers(0, len(ds), size).tolist() for _ in range(max(least, records // size))
        ]

        def calls(batch: list[list[int]] = batch) -> None:
            for k in batch:
                call(k)

        calls()  # (the files' copies made, the kernels compiled, templates learnt)
        times: list[list[float]] = [[], []]
        for _ in range(rounds):
            with old():
                times[0].append(best_seconds(calls))
            times[1].append(best_seconds(calls))
        before, now = (min(t) / (len(batch) * size) * 1e6 for t in times)
        yield size, before, now


def _rows(name: str, sizes: list[int], rounds: int) -> list[str]:
    """``__getitems__``: ``sample_list`` (one compiled call a record, as before) against
    ``sample_batch`` (now)."""
    ds = _dataset(name)
    old = functools.partial(patched, SingleDecoder, "sample_batch", SingleDecoder.sample_list)
    rows = []
    for size, per, one in _alternate(ds, ds.__getitems__, sizes, rounds, old, 3, (8, 4096)):
        path = "record by record" if not ds._walk_beats_single(size) else "batch decode"
        rows.append(
            f"| {name} | `__getitems__({size})` ({path}) | {per:.2f} | {one:.2f} "
            f"| {per / one:.2f}x |"
        )
    return rows


def columns_rows(name: str, sizes: list[int], rounds: int) -> list[str]:
    """``ds[list]`` (the columnar batch): walked record by record (``SMALL_BATCH``'s
    path, forced) against what the dataset does now, alternating."""
    from tfrecord_engine.data import dataset as dataset_module
    from tfrecord_engine.example import single as single_module

    ds = _dataset(name)
    old = functools.partial(
        patched, single_module, "_WIDE_COLUMNS_MAX", dataset_module.SMALL_BATCH + 1
    )
    return [
        f"| {name} | `ds[list of {size}]` | {per:.2f} | {now:.2f} | {per / now:.2f}x |"
        for size, per, now in _alternate(ds, ds.__getitem__, sizes, rounds, old, 4, (8, 2048))
    ]


def templates_rows(name: str, sizes: list[int], rounds: int) -> list[str]:
    """Random ``ds[list]`` batches: every chunk counted as a full one by the template
    chooser (as before) against its share of one (now), alternating."""
    from tfrecord_engine.example import template

    def full(self: template.TemplateCosts, records: int | None) -> float:
        del self, records
        return 1.0

    ds = _dataset(name)
    old = functools.partial(patched, template.TemplateCosts, "share", full)
    return [
        f"| {name} | `ds[list of {size}]` | {f:.2f} | {now:.2f} | {f / now:.2f}x |"
        for size, f, now in _alternate(ds, ds.__getitem__, sizes, rounds, old, 6, (16, 8192))
    ]


def _dataset(name: str) -> tfe.RecordDataset:
    if name == "mnist":
        path = write_mnist(RECORDS)
        return tfe.RecordDataset(path, features=MNIST)
    shape = shape_named(name)
    return tfe.RecordDataset(write_shape(shape, RECORDS), features=shape.features)


MNIST = {"image": tfe.RawFeature([28, 28], "uint8"), "label": tfe.FixedLenFeature([], "int64")}


def write_mnist(records: int) -> str:
    """``records`` MNIST-like records (one layout: the templates' best case), written once
    (atomically, with their index) under the benchmarks' data folder."""
    path = DATA_DIR / f"samples-mnist-{records}.tfrecord"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(7)
        with tfe.TFRecordWriter(str(path), index=True) as w:
            w.write_many(
                tfe.encode_example(
                    {"image": rng.integers(0, 256, 784, np.uint8).tobytes(), "label": i % 10}
                )
                for i in range(records)
            )
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=_SHAPES, help="the matrix's or held-out shapes")
    parser.add_argument("--sizes", default="8,32,64", help="records per call")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--columns",
        action="store_true",
        help="ds[list] instead: record by record (all specs) against now (many keys batched)",
    )
    parser.add_argument(
        "--templates",
        action="store_true",
        help="ds[list] instead: the template chooser counting full chunks against shares",
    )
    args = parser.parse_args()
    if not kernels.ready():
        raise SystemExit("the compiled kernels are not loaded: install the fast extra")
    sizes = [int(s) for s in args.sizes.split(",")]
    before, now = (
        ("every chunk a full one", "its share of one (now)")
        if args.templates
        else ("record by record", "now")
        if args.columns
        else ("per record", "one call")
    )
    print(f"| shape | call | {before}, µs a record | {now}, µs a record | speed-up |")
    print("|---|---|---:|---:|---:|")
    for name in args.shapes.split(","):
        run = templates_rows if args.templates else columns_rows if args.columns else _rows
        got = run(name, sizes, args.rounds)
        for row in got:
            print(row, flush=True)


if __name__ == "__main__":
    main()

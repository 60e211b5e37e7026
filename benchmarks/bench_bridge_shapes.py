"""The tf.data bridge on the record shapes of the matrix, alternating configurations.

    python -m benchmarks.bench_bridge_shapes --shapes detection,tokens --workers 0,1 --shuffled
    python -m benchmarks.bench_bridge_shapes --readahead 0,2
    python -m benchmarks.bench_bridge_shapes --chunk-batches auto,16 --shuffled
    python -m benchmarks.bench_bridge_shapes --shapes tokens,detection --varlen ragged,sparse
    python -m benchmarks.bench_bridge_shapes --shapes wide,tabular --blocks on,off
    python -m benchmarks.bench_bridge_shapes --shapes ragged,tokens,image --floor

A focused A/B for the bridge rows of ``benchmarks.bench_shapes``: for each shape (20,000
records, ``benchmarks.shapes``), one process runs TensorFlow's pipeline
(``TFRecordDataset [-> shuffle(10000)] -> batch(256) -> map(parse, AUTOTUNE) ->
prefetch``), ``to_tf_dataset(ds, 256, workers=W, readahead=R, chunk_batches=C)`` for
each ``W``, ``R`` and ``C`` and the engine's numpy ``batches(256)``, round after round,
each consumed as the matrix does (a Python loop touching every tensor of each batch).
``--varlen sparse`` builds the bridge as it was before 2026-11-28 for
``VarLenFeature`` outputs (the engine's sparse indices, crossing as such) beside the
default (``ragged``: values and row splits, the ``SparseTensor`` made by TensorFlow).
``--blocks off`` builds the bridge as it was before 2026-11-29 for specs of many dense
features (one array per feature across the boundary, and string values as ``bytes``
objects) beside the default (``on``: blocks of
:data:`tfrecord_bridge.layout.BLOCK_MIN` or more features of one dtype and shape, and
short strings as rows, see ``tfrecord_bridge.dataset.uses_string_rows``).
Prints each case's records/s, its ratio to TensorFlow (best / median of the rounds:
same-process ratios, which on a busy machine move far less than absolute speeds) and
the median of its epochs' minor page faults (this process's, TensorFlow's threads
included).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import statistics
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.common import timed_with_faults
from benchmarks.shape_baselines import tf_parse
from benchmarks.shape_cases import SEED, TF_SHUFFLE_BUFFER, count, ours_for
from benchmarks.shapes import SHAPES, write_shape

RECORDS = 20_000
BATCH = 256


def _loop(pipe: Any, key: str) -> int:
    n = 0
    for batch in pipe:
        n += count(batch, key)
        for part in batch if isinstance(batch, tuple) else (batch,):
            for value in part.values():
                _ = value.shape
    return n


@contextlib.contextmanager
def _varlen_path(module: Any, how: str) -> Iterator[None]:
    """Builds bridges whose ``VarLenFeature`` outputs cross as ``how``: ``ragged`` (the
    default) or ``sparse`` (the engine's indices, as before: the copy step left out)."""
    if how not in ("ragged", "sparse"):
        raise ValueError(f"--varlen takes ragged or sparse, got {how!r}")
    real = module._varlen_as_ragged
    if how == "sparse":
        module._varlen_as_ragged = lambda ds: (ds, frozenset())
    try:
        yield
    finally:
        module._varlen_as_ragged = real


@contextlib.contextmanager
def _blocks(how: str) -> Iterator[None]:
    """Builds bridges whose dense features cross in blocks and short strings as rows
    (``on``, the default) or one array per feature and strings as objects (``off``)."""
    from tfrecord_bridge import dataset, layout

    if how not in ("on", "off"):
        raise ValueError(f"--blocks takes on or off, got {how!r}")
    real, rows = layout.BLOCK_MIN, dataset.uses_string_rows
    if how == "off":
        layout.BLOCK_MIN = 1 << 30
        dataset.uses_string_rows = lambda ds, workers=0: False
    try:
        yield
    finally:
        layout.BLOCK_MIN, dataset.uses_string_rows = real, rows


def run_shape(  # noqa: PLR0917 - a benchmark's knobs
    name: str,
    workers: list[int],
    shuffle: bool,
    rounds: int,
    readahead: tuple[int | None, ...] = (None,),
    chunk_batches: tuple[int | None, ...] = (None,),
    varlen: tuple[str, ...] = ("ragged",),
    blocks: tuple[str, ...] = ("on",),
    floor: bool = False,
) -> str:
    """One line: every case of shape ``name``, records/s and ratio to TensorFlow.

    ``floor``: also TensorFlow's pipeline with ``.cache()`` after its parse (filled by
    the untimed first run), whose epochs parse nothing: what consuming the batches
    alone costs a Python loop (the eager conversion of each element), which the bridge
    pays as TensorFlow's own pipeline does."""
    import tensorflow as tf

    from tfrecord_bridge import dataset as bridge_dataset

    shape = SHAPES[name]
    paths = write_shape(shape, RECORDS)
    ds = ours_for(shape, paths).ds
    raw = tf.data.TFRecordDataset(paths)
    if shuffle:
        raw = raw.shuffle(TF_SHUFFLE_BUFFER, seed=SEED)
    theirs = (
        raw.batch(BATCH)
        .map(tf_parse(shape), num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
    key = shape.count_key
    cases: dict[str, Callable[[], int]] = {"tf": lambda: _loop(theirs, key)}
    if floor:
        cached = raw.batch(BATCH).map(tf_parse(shape)).cache().prefetch(tf.data.AUTOTUNE)
        cases["tf consumed, parsed before (cache)"] = functools.partial(_loop, cached, key)
    for w, r, c, v, b in itertools.product(workers, readahead, chunk_batches, varlen, blocks):
        with _varlen_path(bridge_dataset, v), _blocks(b):
            bridge = bridge_dataset.to_tf_dataset(
                ds, BATCH, shuffle=shuffle, seed=SEED, workers=w, readahead=r, chunk_batches=c
            )
        label = f"bridge workers={w}"
        if len(readahead) > 1:
            label += f" readahead={'auto' if r is None else r}"
        if len(chunk_batches) > 1:
            label += f" chunk_batches={'auto' if c is None else c}"
        if len(varlen) > 1:
            label += f" varlen={v}"
        if len(blocks) > 1:
            label += f" blocks={b}"
        cases[label] = functools.partial(_loop, bridge, key)
    cases["numpy batches"] = lambda: sum(
        count(b, key) for b in ds.batches(BATCH, shuffle=shuffle, seed=SEED)
    )
    times: dict[str, list[float]] = {k: [] for k in cases}
    faults: dict[str, list[int]] = {k: [] for k in cases}
    for run in cases.values():
        run()  # untimed: traces functions, starts decode workers
    for _ in range(rounds):
        for label, run in cases.items():
            got, seconds, faulted = timed_with_faults(run)
            times[label].append(seconds)
            faults[label].append(faulted)
            if got != len(ds):
                raise RuntimeError(f"{name}, {label}: {got} records, expected {len(ds)}")
    best, median = min(times["tf"]), statistics.median(times["tf"])
    cells = [
        f"{label}: {len(ds) / min(t) / 1e3:.0f}k/s "
        f"{best / min(t):.2f}/{median / statistics.median(t):.2f} "
        f"({statistics.median(faults[label]):.0f} faults)"
        for label, t in times.items()
    ]
    order = "shuffled" if shuffle else "sequential"
    return f"{name} {order}: " + " | ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--workers", default="0", help="comma-separated, e.g. 0,1")
    parser.add_argument(
        "--readahead", default="auto", help="comma-separated, e.g. 0,2 (auto: default)"
    )
    parser.add_argument(
        "--chunk-batches", default="auto", help="comma-separated, e.g. auto,16 (auto: default)"
    )
    parser.add_argument(
        "--varlen", default="ragged", help="comma-separated: ragged (default), sparse (before)"
    )
    parser.add_argument(
        "--blocks", default="on", help="comma-separated: on (default), off (before)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shuffled", action="store_true", help="also the shuffled epochs")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also TensorFlow's batches parsed before (.cache()): consuming them alone",
    )
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    readahead = tuple(None if r == "auto" else int(r) for r in args.readahead.split(","))
    chunks = tuple(None if c == "auto" else int(c) for c in args.chunk_batches.split(","))
    varlen = tuple(args.varlen.split(","))
    blocks = tuple(args.blocks.split(","))
    for shuffle in (False, True) if args.shuffled else (False,):
        for name in args.shapes.split(","):
            line = run_shape(
                name, workers, shuffle, args.rounds, readahead, chunks, varlen, blocks, args.floor
            )
            print(line, flush=True)


if __name__ == "__main__":
    main()

"""The rows of the shape matrix (``benchmarks.bench_shapes``), one group per child process.

:func:`tf_rows` imports TensorFlow (parsed batches, the bridge, raw reads against
TensorFlow); :func:`torch_rows` never does (random access, PyTorch loaders, first
epochs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.bench_shapes import Row, explain, native_sequence, target_of
from benchmarks.common import Measurement, compare
from benchmarks.shape_baselines import ProtobufDataset, padding_collate, tf_parse
from benchmarks.shapes import Shape

Case = tuple[str, Callable[[], tuple[int, int]]]
SEED = 1
LOADER_BATCH = 256
#: Decode processes of the bridge: 0, its default (decoding in the ``numpy_function``
#: call). With 1, measured on every shape here (2 cores, alternating, 4 runs each), the
#: bridge was 0.3-0.8x as fast on image, detection, tokens and wide (their chunks
#: outgrow the decode pool's 16 MB shared-memory slots and cross the pipe) and at best
#: even elsewhere.
BRIDGE_WORKERS = 0
TF_SHUFFLE_BUFFER = 10_000


def count(value: Any, key: str) -> int:
    """Records in a batch of any form this module meets (ours, TensorFlow's, collated)."""
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return count(value[0], key)  # parse_sequence_example: (context, lists, lengths)
    if isinstance(value, dict):
        return count(value[key] if key in value else next(iter(value.values())), key)
    if isinstance(value, tfe.SparseValue):
        return int(value.dense_shape[0])
    if isinstance(value, tfe.RaggedValue):
        return len(value.row_splits) - 1
    if hasattr(value, "dense_shape"):  # tf.SparseTensor
        return int(value.dense_shape[0])
    if hasattr(value, "row_splits"):  # tf.RaggedTensor
        return int(value.row_splits.shape[0]) - 1
    if hasattr(value, "_fields"):  # PaddedValue
        return count(value[0], key)
    if hasattr(value, "shape"):
        return int(value.shape[0])
    return len(value)


@dataclass
class Ours:
    """Our parsed access to a shape's files: a parsed dataset, or (SequenceExample before
    ``RecordDataset`` parses them) a raw one and a batch parser."""

    ds: tfe.RecordDataset
    parse: Callable[[list[bytes]], Any] | None
    label: str

    def batch(self, records: Any) -> Any:
        return records if self.parse is None else self.parse(records)


def _parse_sequences(records: list[bytes], context: Any, sequence: Any) -> dict[str, Any]:
    """A batch of SequenceExamples as one dict: context and feature lists side by side."""
    ctx, lists, _ = tfe.parse_sequence_example(records, context, sequence)
    return {**ctx, **lists}


def ours_for(shape: Shape, paths: list[str]) -> Ours:
    if not shape.is_sequence:
        return Ours(tfe.RecordDataset(paths, features=shape.features), None, "")
    if native_sequence():
        ds = tfe.RecordDataset(
            paths, context_features=shape.features, sequence_features=shape.sequence_features
        )
        return Ours(ds, None, "")
    parse = functools.partial(
        _parse_sequences, context=shape.features, sequence=shape.sequence_features
    )
    return Ours(tfe.RecordDataset(paths), parse, " (raw + `parse_sequence_example`)")


def _row(  # noqa: PLR0917 - a row's fields, in the table's order
    shape: Shape, access: str, kind: str, ours: Measurement, anchor: Measurement, path: str = ""
) -> Row:
    """``ours`` against ``anchor``: the ratio of their times (speed of ours over the anchor's)."""
    return Row(
        shape=shape.name,
        access=access,
        kind=kind,
        ours=ours.name,
        anchor=anchor.name,
        ours_rps=ours.records_per_s,
        anchor_rps=anchor.records_per_s,
        ratio=anchor.seconds / ours.seconds,
        ratio_median=anchor.median_seconds / ours.median_seconds,
        ours_peak_mb=ours.peak_rss / 1e6,
        anchor_peak_mb=anchor.peak_rss / 1e6,
        target=target_of(shape.name, kind),
        path=path,
    )


def _epoch(batches: Callable[[], Iterable[Any]], key: str) -> Callable[[], tuple[int, int]]:
    def run() -> tuple[int, int]:
        return sum(count(b, key) for b in batches()), 0

    return run


# ---- with TensorFlow -------------------------------------------------------------------------


def _tf_numpy(batch: Any) -> Any:
    """TensorFlow's outputs as numpy through their component arrays (the fast way)."""
    if isinstance(batch, tuple):
        return tuple(_tf_numpy(b) for b in batch)
    out: dict[str, Any] = {}
    for key, value in batch.items():
        if hasattr(value, "dense_shape"):
            out[key] = tfe.SparseValue(
                value.indices.numpy(), value.values.numpy(), value.dense_shape.numpy()
            )
        elif hasattr(value, "row_splits"):
            out[key] = tfe.RaggedValue(value.flat_values.numpy(), value.row_splits.numpy())
        else:
            out[key] = value.numpy()
    return out


def tf_rows(shape: Shape, paths: list[str], quick: bool) -> list[Row]:
    """Parsed batches, the bridge and raw reads, against TensorFlow's pipelines."""
    import tensorflow as tf

    ours = ours_for(shape, paths)
    n = len(ours.ds)
    key = shape.count_key
    parse = tf_parse(shape)
    path = explain(ours.ds)

    def tf_pipeline(size: int, shuffle: bool) -> Any:
        raw = tf.data.TFRecordDataset(paths)
        if shuffle:
            raw = raw.shuffle(TF_SHUFFLE_BUFFER, seed=SEED)
        return (
            raw.batch(size)
            .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )

    def ours_case(size: int, shuffle: bool) -> Case:
        def batches() -> Iterable[Any]:
            return (ours.batch(b) for b in ours.ds.batches(size, shuffle=shuffle, seed=SEED))

        order = "shuffled" if shuffle else "in order"
        return f"`batches({size})`, {order}{ours.label}", _epoch(batches, key)

    def tf_case(size: int, shuffle: bool) -> Case:
        pipe = tf_pipeline(size, shuffle)
        shuffled = f".shuffle({TF_SHUFFLE_BUFFER})" if shuffle else ""
        name = f"tf.data{shuffled}.batch({size}).map(parse)"
        return name, _epoch(lambda: (_tf_numpy(b) for b in pipe), key)

    rows: list[Row] = []
    combos = [(size, shuffle) for shuffle in (False, True) for size in (256, 4096)]
    cases: list[Case] = []
    for size, shuffle in combos:
        cases += [ours_case(size, shuffle), tf_case(size, shuffle)]
    got = compare(cases, warmup=1)
    mine = {}
    for k, (size, shuffle) in enumerate(combos):
        order = "shuffled" if shuffle else "sequential"
        o, t = got[2 * k], got[2 * k + 1]
        _check(o, n)
        rows.append(_row(shape, f"parsed batches of {size}, {order} / TF", "parsed", o, t, path))
        mine[(size, shuffle)] = o
    rows.extend(
        _row(
            shape,
            f"sequential / shuffled, ours, batches of {size}",
            "seq_vs_shuffled",
            mine[(size, False)],
            mine[(size, True)],
        )
        for size in (256, 4096)
    )
    if ours.parse is None:  # the bridge takes parsed datasets (features=, sequence_features=)
        rows.extend(
            _bridge_row(shape, ours.ds, tf_pipeline(256, shuffle), path, shuffle)
            for shuffle in (False, True)
        )
    rows += _raw_rows(shape, paths, tf)
    return rows


def _bridge_row(shape: Shape, ds: tfe.RecordDataset, theirs: Any, path: str, shuffle: bool) -> Row:
    from tfrecord_bridge import to_tf_dataset

    bridge = to_tf_dataset(ds, 256, shuffle=shuffle, seed=SEED, workers=BRIDGE_WORKERS)

    def loop(pipe: Any) -> Callable[[], tuple[int, int]]:
        def run() -> tuple[int, int]:
            n = 0
            for batch in pipe:  # a training loop's step: every tensor of the batch touched
                n += count(batch, shape.count_key)
                # parse_sequence_example gives (context, lists, lengths); the bridge one dict
                for part in batch if isinstance(batch, tuple) else (batch,):
                    for value in part.values():
                        _ = value.shape
            return n, 0

        return run

    order = "shuffled" if shuffle else "sequential"
    shuffled = f".shuffle({TF_SHUFFLE_BUFFER})" if shuffle else ""
    ours, tf_side = compare(
        [
            (
                f"`to_tf_dataset(ds, 256, shuffle={shuffle}, workers={BRIDGE_WORKERS})`",
                loop(bridge),
            ),
            (f"tf.data{shuffled}.batch(256).map(parse)", loop(theirs)),
        ],
        warmup=1,
    )
    _check(ours, len(ds))
    return _row(
        shape,
        f"tf.data bridge, batches of 256, {order}, Python loop / TF",
        "bridge",
        ours,
        tf_side,
        path,
    )


def _raw_rows(shape: Shape, paths: list[str], tf: Any) -> list[Row]:
    """Raw random batches of 1,024 against TF's sequential raw read: the default
    (guarded) reads and ``mapped_reads=True`` (straight out of the maps), both with the
    2x target, measured in one alternation."""
    raw = tfe.RecordDataset(paths)
    mapped = tfe.RecordDataset(paths, mapped_reads=True)
    n = len(raw)
    order = np.random.default_rng(SEED).permutation(n)
    chunks = [order[i : i + 1024] for i in range(0, n, 1024)]

    # Consumed as a loop consumes them (every other row too): one batch alive at a time,
    # each record's length read. Keeping every batch of the epoch (until 2026-11-28)
    # measured the kernel handing the process hundreds of MB of new pages, on both
    # sides (docs/benchmarks.md).
    def read(ds: tfe.RecordDataset) -> Callable[[], tuple[int, int]]:
        def run() -> tuple[int, int]:
            records = nbytes = 0
            for c in chunks:
                batch = ds[c]
                records += len(batch)
                nbytes += sum(map(len, batch))
            return records, nbytes

        return run

    pipe = tf.data.TFRecordDataset(paths).batch(1024).prefetch(tf.data.AUTOTUNE)

    def theirs() -> tuple[int, int]:
        records = nbytes = 0
        for b in pipe:
            batch = b.numpy()
            records += len(batch)
            nbytes += sum(map(len, batch))
        return records, nbytes

    o, m, t = compare(
        [
            ("raw `ds[list of 1,024]`, random", read(raw)),
            ("raw `ds[list of 1,024]`, random, `mapped_reads=True`", read(mapped)),
            ("tf.data raw `.batch(1024)`, in order", theirs),
        ],
        warmup=1,
    )
    if (m.records, m.nbytes) != (o.records, o.nbytes):
        raise RuntimeError(f"{m.name}: {m.records} records, {o.records} by default")
    return [
        _row(shape, "raw random batches of 1,024 / TF sequential raw read", "raw", o, t),
        _row(
            shape,
            "raw random batches of 1,024, mapped_reads=True / TF sequential raw read",
            "raw",
            m,
            t,
        ),
    ]


def _check(m: Measurement, n: int) -> None:
    if m.records != n:
        raise RuntimeError(f"{m.name}: an epoch gave {m.records} of {n} records")


# ---- without TensorFlow ----------------------------------------------------------------------


def torch_rows(shape: Shape, paths: list[str], quick: bool) -> list[Row]:
    """Random access, PyTorch loaders and first epochs, against the protobuf Dataset."""
    ours = ours_for(shape, paths)
    base = ProtobufDataset(paths, shape)
    n = len(base)
    rng = np.random.default_rng(SEED)
    per_case = min(n, 1024 if quick else 8192)
    path = explain(ours.ds)
    rows: list[Row] = []

    def calls(size: int) -> list[list[int]]:
        return [rng.integers(0, n, size).tolist() for _ in range(max(1, per_case // size))]

    for size in (8, 64, 1024):
        lists = calls(size)

        def mine(lists: list[list[int]] = lists) -> tuple[int, int]:
            got = (ours.batch(ours.ds.__getitems__(i)) for i in lists)
            return sum(count(b, shape.count_key) for b in got), 0

        def theirs(lists: list[list[int]] = lists) -> tuple[int, int]:
            return sum(len([base[i] for i in idx]) for idx in lists), 0

        o, t = compare(
            [(f"`__getitems__({size})`{ours.label}", mine), ("`[ds[i] for i in idx]`", theirs)],
            warmup=1,
        )
        kind = "getitems64" if size == 64 else "getitems"
        rows.append(
            _row(shape, f"random `__getitems__({size})` / protobuf Dataset", kind, o, t, path)
        )
    one = rng.integers(0, n, per_case).tolist()
    single = ours.ds if ours.parse is None else _single_parser(shape, ours.ds)
    o, t = compare(
        [
            (f"`ds[i]`{ours.label}", lambda: (sum(1 for i in one if single[i] is not None), 0)),
            ("protobuf `ds[i]`", lambda: (sum(1 for i in one if base[i] is not None), 0)),
        ],
        warmup=1,
    )
    rows.append(_row(shape, "random `ds[i]` / protobuf Dataset", "item", o, t, path))
    rows += _loader_rows(shape, ours, base, path)
    rows.append(_first_epoch_row(shape, paths))
    return rows


class _SingleSequence:
    """``ds[i]`` of a raw dataset parsed as one SequenceExample (before native support)."""

    def __init__(self, shape: Shape, raw: tfe.RecordDataset) -> None:
        self.raw, self.shape = raw, shape

    def __getitem__(self, i: int) -> Any:
        return tfe.parse_single_sequence_example(
            self.raw[i], self.shape.features, self.shape.sequence_features
        )


def _single_parser(shape: Shape, raw: tfe.RecordDataset) -> _SingleSequence:
    return _SingleSequence(shape, raw)


def _loader_rows(shape: Shape, ours: Ours, base: ProtobufDataset, path: str) -> list[Row]:
    from torch.utils.data import DataLoader

    from tfrecord_engine.torch import RecordIterableDataset

    key = shape.count_key
    collate = ours.parse  # SequenceExample fallback: the loader's collate parses the batch
    how = "default collate" if collate is None else "collate_fn=parse_sequence_example"
    rows = []
    for workers in (0, 2):
        kwargs: dict[str, Any] = {"batch_size": LOADER_BATCH, "shuffle": True}
        kwargs["num_workers"] = workers
        if collate is not None:
            kwargs["collate_fn"] = collate
        mine: DataLoader[Any] = DataLoader(ours.ds, **kwargs)  # type: ignore[arg-type]
        kwargs["collate_fn"] = padding_collate
        theirs: DataLoader[Any] = DataLoader(base, **kwargs)  # type: ignore[arg-type]
        cases: list[Case] = [
            (f"`DataLoader(ds)`, {how}", _epoch(functools.partial(iter, mine), key)),
            ("`DataLoader(protobuf ds)`", _epoch(functools.partial(iter, theirs), key)),
        ]
        if workers == 0:
            it = RecordIterableDataset(
                ours.ds, LOADER_BATCH, shuffle=True, seed=SEED, batch_transform=collate
            )
            loader: DataLoader[Any] = DataLoader(it, batch_size=None)
            cases.append(
                ("`tfe.torch.RecordIterableDataset`", _epoch(functools.partial(iter, loader), key))
            )
        got = compare(cases, warmup=1)
        for m in got:
            _check(m, len(base))
        access = f"DataLoader map-style, workers={workers} / protobuf Dataset"
        rows.append(_row(shape, access, "loader", got[0], got[1], path))
        if workers == 0:
            access = "`tfrecord_engine.torch`, workers=0 / protobuf Dataset"
            rows.append(_row(shape, access, "torch", got[2], got[1], path))
    return rows


def _first_epoch_row(shape: Shape, paths: list[str]) -> Row:
    """The first shuffled epoch of a new dataset against an in-order epoch of a new one."""

    def epoch(shuffle: bool) -> Callable[[], tuple[int, int]]:
        def run() -> tuple[int, int]:
            ours = ours_for(shape, paths)
            with ours.ds:
                batches = ours.ds.batches(LOADER_BATCH, shuffle=shuffle, seed=SEED)
                return sum(count(ours.batch(b), shape.count_key) for b in batches), 0

        return run

    shuffled, in_order = compare(
        [
            ("first shuffled epoch, new dataset", epoch(True)),
            ("in-order epoch, new dataset", epoch(False)),
        ]
    )
    return _row(
        shape,
        "first shuffled epoch / in-order epoch (new dataset, batches of 256)",
        "first_epoch",
        shuffled,
        in_order,
    )

"""The readers a user would pick instead of ours, on the same file in the same run.

    python -m benchmarks.bench_peers

One file for every reader: the 70,000-record MNIST-like file with its records sorted by
label (``index`` is the file position, ``label`` grows with it), in TFRecord form, and
the same records in an ArrayRecord file (``group_size:1,uncompressed``) for Grain. Every reader
delivers the three features (``index``, ``label``, the 784-byte ``image``) of every
record to Python, in one process:

- ours: ``RecordDataset(path, features=...).batches(256)`` (one process, ``workers=0``);
- TensorFlow: ``TFRecordDataset.batch(256).map(parse_example, AUTOTUNE).prefetch``, the
  shuffled mode with ``.shuffle(10000)`` before ``.batch``;
- NVIDIA DALI: ``fn.readers.tfrecord`` on a CPU-only pipeline (``device_id=None``,
  ``num_threads=2``, batches of 256; its index from ``tfr index --format dali``), the
  shuffled mode with ``random_shuffle=True`` (its default buffer, ``initial_fill=1024``);
- the ``tfrecord`` package: ``tfrecord_loader`` (one dict of numpy arrays per record),
  the shuffled mode through its ``shuffle_iterator`` with a queue of 10,000;
- Grain over ArrayRecord: ``grain.MapDataset.source(ArrayRecordDataSource)``, each
  record parsed with protobuf's ``Example.FromString`` into numpy, ``.batch(256)``;
  shuffled with ``.shuffle(seed)`` (a global shuffle: random access to the source).

The random-access mode reads one epoch as lists of 64 random indices: ``ds[indices]``
(parsed) against ``ArrayRecordDataSource.__getitems__`` plus the same protobuf parse.

Shuffle quality, from the ``index`` values in output order: Spearman's rank correlation
of file position against output position over the whole epoch (1 for a sequential read;
about 1 for a small shuffle buffer; about 0 for a global shuffle), and how many of the
10 labels appear among the first 100 records output (a buffer of 10,000 on a
label-sorted file shows 1 or 2 labels, a global shuffle all 10). The correlation over
only the first 100 records says nothing: a buffer shuffles those as well as a global
shuffle does, which is why the first 100 are judged by their labels.

Ratios: "vs TF" is TensorFlow's time over the reader's (>1: faster than TensorFlow), "ours
vs it" the reader's time over ours (>1: ours faster), each as the ratio of the best runs
and of the medians, all from this one run.
"""

from __future__ import annotations

import importlib.util
import platform
from collections.abc import Callable
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.common import Measurement, compare, proto_parse, tfrecord_package
from benchmarks.data import MNIST_SPEC, array_record_copy, dali_index, mnist_like

BATCH = 256
RANDOM_BATCH = 64
SHUFFLE_BUFFER = 10_000
SEED = 1
SPEC: dict[str, Any] = MNIST_SPEC

Case = tuple[str, Callable[[], tuple[int, int]]]


def spearman(order: np.ndarray[Any, Any]) -> float:
    """Rank correlation of file position (the values) against output position."""
    n = len(order)
    if n < 2:
        return float("nan")
    ranks = np.empty(n, dtype=np.float64)
    ranks[np.argsort(order, kind="stable")] = np.arange(n, dtype=np.float64)
    return float(np.corrcoef(ranks, np.arange(n, dtype=np.float64))[0, 1])


def labels_in_first(order: np.ndarray[Any, Any], labels: np.ndarray[Any, Any], k: int = 100) -> int:
    """How many distinct labels the first ``k`` records output carry."""
    return len(np.unique(labels[order[:k]]))


class Orders:
    """The ``index`` column of each case's latest epoch, in output order."""

    def __init__(self) -> None:
        self.seen: dict[str, np.ndarray[Any, Any]] = {}

    def record(self, name: str, chunks: list[np.ndarray[Any, Any]]) -> int:
        order = np.concatenate(chunks).astype(np.int64)
        self.seen[name] = order
        return len(order)


def _ours(path: str, orders: Orders, name: str, shuffle: bool) -> Case:
    ds = tfe.RecordDataset(path, features=SPEC)

    def run() -> tuple[int, int]:
        chunks = [b["index"] for b in ds.batches(BATCH, shuffle=shuffle, seed=SEED)]
        return orders.record(name, chunks), 0

    return name, run


def _ours_random(path: str, orders: Orders, name: str, perm: list[list[int]]) -> Case:
    ds = tfe.RecordDataset(path, features=SPEC)

    def run() -> tuple[int, int]:
        chunks = [ds[idx]["index"] for idx in perm]
        return orders.record(name, chunks), 0

    return name, run


def _tf(path: str, orders: Orders, name: str, shuffle: bool) -> Case:
    import tensorflow as tf

    spec = {
        "index": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "image": tf.io.FixedLenFeature([], tf.string),
    }

    def run() -> tuple[int, int]:
        raw = tf.data.TFRecordDataset(path)
        if shuffle:
            raw = raw.shuffle(SHUFFLE_BUFFER, seed=SEED)
        pipe = (
            raw.batch(BATCH)
            .map(lambda b: tf.io.parse_example(b, spec), num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )
        chunks = []
        for batch in pipe:
            batch["image"].numpy()
            batch["label"].numpy()
            chunks.append(batch["index"].numpy())
        return orders.record(name, chunks), 0

    return name, run


def _dali(path: str, n: int, orders: Orders, name: str, shuffle: bool) -> Case:
    import nvidia.dali.tfrecord as tfrec
    from nvidia.dali import fn, pipeline_def

    index = dali_index(path)

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=SEED)  # type: ignore[untyped-decorator]
    def pipe() -> Any:
        out = fn.readers.tfrecord(
            path=path,
            index_path=index,
            features={
                "index": tfrec.FixedLenFeature([], tfrec.int64, -1),
                "label": tfrec.FixedLenFeature([], tfrec.int64, -1),
                "image": tfrec.FixedLenFeature([], tfrec.string, ""),
            },
            random_shuffle=shuffle,
            pad_last_batch=True,  # each epoch ends on a batch boundary: the padding is cut
            name="reader",
        )
        return out["index"], out["label"], out["image"]  # type: ignore[call-overload,index,unused-ignore]

    p = pipe()
    p.build()
    steps = -(-n // BATCH)

    def run() -> tuple[int, int]:
        chunks = []
        for _ in range(steps):
            idx, label, image = p.run()
            np.asarray(image.as_tensor())
            np.asarray(label.as_tensor())
            chunks.append(np.asarray(idx.as_tensor()).reshape(-1))
        order = np.concatenate(chunks)[:n]  # the last batch's padding repeats a record
        return orders.record(name, [order]), 0

    return name, run


def _tfrecord_pkg(path: str, orders: Orders, name: str, shuffle: bool) -> Case:
    tfrecord = tfrecord_package()
    tfrecord_loader = tfrecord.tfrecord_loader
    shuffle_iterator = tfrecord.iterator_utils.shuffle_iterator

    description = {"index": "int", "label": "int", "image": "byte"}

    def run() -> tuple[int, int]:
        it = tfrecord_loader(path, None, description)
        if shuffle:
            it = shuffle_iterator(it, SHUFFLE_BUFFER)
        order = [int(r["index"][0]) for r in it]
        return orders.record(name, [np.asarray(order)]), 0

    return name, run


def _grain_ar(ar_path: str, orders: Orders, name: str, shuffle: bool) -> Case:
    import grain
    from array_record.python.array_record_data_source import ArrayRecordDataSource

    source = ArrayRecordDataSource([ar_path])
    parse = proto_parse()

    def run() -> tuple[int, int]:
        ds = grain.MapDataset.source(source)
        if shuffle:
            ds = ds.shuffle(seed=SEED)
        ds = ds.map(parse).batch(BATCH)
        chunks = [b["index"] for b in ds]
        return orders.record(name, chunks), 0

    return name, run


def _ar_random(ar_path: str, orders: Orders, name: str, perm: list[list[int]]) -> Case:
    from array_record.python.array_record_data_source import ArrayRecordDataSource

    source = ArrayRecordDataSource([ar_path])
    parse = proto_parse()

    def run() -> tuple[int, int]:
        chunks = []
        for idx in perm:
            samples = [parse(r) for r in source.__getitems__(idx)]
            chunks.append(np.asarray([s["index"] for s in samples]))
        return orders.record(name, chunks), 0

    return name, run


def has_dali() -> bool:
    """DALI's wheels exist for Linux x86_64 only (the ``bench`` extra's marker)."""
    return importlib.util.find_spec("nvidia.dali") is not None


def _row(
    mode: str,
    *,
    m: Measurement,
    tf: Measurement | None,
    ours: Measurement,
    orders: Orders,
    labels: Any,
) -> str:
    def ratio(slow: Measurement | None, fast: Measurement) -> str:
        if slow is None:
            return "-"
        best = slow.seconds / fast.seconds
        return f"{best:.2f}x / {slow.median_seconds / fast.median_seconds:.2f}x"

    order = orders.seen[m.name]
    return (
        f"| {mode} | {m.name} | {m.records_per_s:,.0f} | {ratio(tf, m)} | {ratio(m, ours)} "
        f"| {spearman(order):.3f} | {labels_in_first(order, labels)} |"
    )


def run() -> str:
    """Runs every mode; returns a Markdown table."""
    path = mnist_like(label_sorted=True)
    n = len(tfe.RecordDataset(path))
    ar_path = array_record_copy(path)
    labels = tfe.RecordDataset(path, features=SPEC)[np.arange(n)]["label"]
    rng = np.random.default_rng(SEED)
    permutation = rng.permutation(n)
    perm = [permutation[i : i + RANDOM_BATCH].tolist() for i in range(0, n, RANDOM_BATCH)]
    dali = has_dali()
    orders = Orders()
    lines = [
        f"### Peers, MNIST-like label-sorted file ({n:,} records, same file for each)",
        "",
        "| mode | reader | records/s | vs TF (best / median) | ours vs it (best / median) "
        "| Spearman rho, epoch | labels in first 100 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for mode, shuffle in (("sequential", False), ("shuffled", True)):
        what = "global shuffle" if shuffle else "sequential"
        cases = [
            _ours(path, orders, f"ours `batches({BATCH})` {what}", shuffle),
            _tf(path, orders, "TF" + (f" `shuffle({SHUFFLE_BUFFER})`" if shuffle else ""), shuffle),
        ]
        if dali:
            label = "DALI CPU" + (" `random_shuffle`" if shuffle else "")
            cases.append(_dali(path, n, orders, label, shuffle))
        cases.append(
            _tfrecord_pkg(
                path,
                orders,
                "tfrecord pkg" + (f" `shuffle_iterator({SHUFFLE_BUFFER})`" if shuffle else ""),
                shuffle,
            )
        )
        cases.append(
            _grain_ar(
                ar_path, orders, "Grain/ArrayRecord" + (" `shuffle`" if shuffle else ""), shuffle
            )
        )
        ms = compare(cases, warmup=1)
        ours, tf = ms[0], ms[1]
        lines.extend(_row(mode, m=m, tf=tf, ours=ours, orders=orders, labels=labels) for m in ms)
    ours_r, ar_r = compare(
        [
            _ours_random(path, orders, f"ours `ds[list of {RANDOM_BATCH}]`", perm),
            _ar_random(
                ar_path, orders, f"ArrayRecord `__getitems__({RANDOM_BATCH})` + protobuf", perm
            ),
        ],
        warmup=1,
    )
    lines.append(
        _row("random access", m=ours_r, tf=None, ours=ours_r, orders=orders, labels=labels)
    )
    lines.append(_row("random access", m=ar_r, tf=None, ours=ours_r, orders=orders, labels=labels))
    if not dali:
        lines.append(
            f"\nDALI: not installed on {platform.machine()} (its wheels are Linux x86_64)."
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())

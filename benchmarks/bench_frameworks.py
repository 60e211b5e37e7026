"""Ours through PyTorch and Grain against the readers their users pick, same records, one run.

    python -m benchmarks.bench_frameworks

Three tables on the 70,000-record MNIST-like file (``index``, ``label``, 784-byte
``image``), everything in one process (``num_workers=0``; the machine has 2 cores):

1. PyTorch ``DataLoader`` epochs, shuffled, default collate, batches of 64 and 256:
   map-style ``RecordDataset(path, features=...)`` with ``shuffle=True`` (a global
   shuffle; the loader calls ``__getitems__`` once per batch), and
   ``tfrecord_engine.torch.RecordIterableDataset`` (``batch_size=None``), against the
   ``tfrecord`` package's ``TFRecordDataset`` (``shuffle_queue_size=10000``) in the same
   loader. Ratio: the ``tfrecord`` package's time over ours, same batch size.
2. Grain epochs, ``MapDataset.source(...).shuffle(seed).batch(256)``: our parsed
   ``RecordDataset`` as the source, and our raw source batched then parsed by
   ``tfe.parse_example`` (the fast recipe), against Grain over the same records in an
   ArrayRecord file (``ArrayRecordDataSource``, each record parsed with protobuf's
   ``Example.FromString``). Ratio: Grain/ArrayRecord's time over ours.
3. Per call, random indices (the calls map-style loaders make): ours against ArrayRecord's
   ``ArrayRecordDataSource.__getitem__`` (which calls ``ArrayRecordReader.read([i])``, a
   parallel read of one record), ``ArrayRecordReader.read(i, i + 1)`` (its fastest single
   read, no thread pool), ``read(list of 64)``, and the ``tfrecord``
   package's indexed reader (``tfrecord_loader(..., index_path, shard=(i, n))``, which is
   how it reads record ``i``), on the same records; records per CPU second, best and median
   of 7 rounds (:func:`benchmarks.bench_percall.rates`). Ratio: ours over the peer.

Epoch tables: best of ``TFE_BENCH_REPEATS`` (3) alternating runs and their median
(:func:`benchmarks.common.compare`), as ratios of the best runs and of the medians.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.bench_percall import rates
from benchmarks.common import Measurement, compare, proto_parse, tfrecord_package
from benchmarks.data import MNIST_SPEC, array_record_copy, dali_index, mnist_like

SPEC: dict[str, Any] = MNIST_SPEC
DESCRIPTION = {"index": "int", "label": "int", "image": "byte"}
SHUFFLE_QUEUE = 10_000
SEED = 1
LIST = 64
#: Per-call targets of issue 19 (records/s on this file, one process).
TARGETS = {"parsed ds[i]": 100_000, "raw ds[i]": 300_000, "parsed ds[list of 64]": 300_000}

Case = tuple[str, Callable[[], tuple[int, int]]]


def _ratio(slow: Measurement, fast: Measurement) -> str:
    best = slow.seconds / fast.seconds
    return f"{best:.2f}x / {slow.median_seconds / fast.median_seconds:.2f}x"


def _epoch_table(title: str, rows: list[tuple[Measurement, Measurement]]) -> list[str]:
    lines = [
        f"### {title}",
        "",
        "| ours | records/s | peer | records/s | ours vs peer (best / median) |",
        "|---|---:|---|---:|---:|",
    ]
    lines.extend(
        f"| {ours.name} | {ours.records_per_s:,.0f} | {peer.name} | {peer.records_per_s:,.0f} "
        f"| {_ratio(peer, ours)} |"
        for ours, peer in rows
    )
    return lines


def _count(batch: dict[str, Any]) -> int:
    return len(batch["label"])


def torch_rows(path: str) -> list[str]:
    """DataLoader epochs: map-style and ``tfe.torch`` against the ``tfrecord`` package."""
    from torch.utils.data import DataLoader

    from tfrecord_engine.torch import RecordIterableDataset

    tfrecord = tfrecord_package()
    ds = tfe.RecordDataset(path, features=SPEC)
    n = len(ds)

    def loop(loader: Any) -> tuple[int, int]:
        return sum(_count(b) for b in loader), 0

    def map_style(size: int) -> Case:
        loader: DataLoader[Any] = DataLoader(ds, batch_size=size, shuffle=True)  # type: ignore[arg-type]
        return f"map-style `RecordDataset`, batch {size}", lambda: loop(loader)

    def iterable(size: int) -> Case:
        it = RecordIterableDataset(ds, size, shuffle=True, seed=SEED)
        loader = DataLoader(it, batch_size=None)
        return f"`tfe.torch.RecordIterableDataset`, batch {size}", lambda: loop(loader)

    def theirs(size: int) -> Case:
        pkg = tfrecord.torch.TFRecordDataset(
            path, None, DESCRIPTION, shuffle_queue_size=SHUFFLE_QUEUE
        )
        loader = DataLoader(pkg, batch_size=size)
        return f"`tfrecord` `TFRecordDataset`, batch {size}", lambda: loop(loader)

    rows = []
    for size in (64, 256):
        ours_map, ours_it, peer = compare([map_style(size), iterable(size), theirs(size)])
        if ours_map.records != n:
            raise RuntimeError(f"map-style epoch gave {ours_map.records} of {n} records")
        rows += [(ours_map, peer), (ours_it, peer)]
    return _epoch_table(
        f"PyTorch DataLoader epochs, shuffled, one process ({n:,} MNIST-like records)", rows
    )


def grain_rows(path: str, ar_path: str) -> list[str]:
    """Grain epochs: our source (parsed, and raw + batched parse) against ArrayRecord."""
    import grain
    from array_record.python.array_record_data_source import ArrayRecordDataSource

    parsed = tfe.RecordDataset(path, features=SPEC)
    raw = tfe.RecordDataset(path)
    source = ArrayRecordDataSource([ar_path])
    parse = proto_parse()

    def epoch(ds: Any) -> tuple[int, int]:
        return sum(_count(b) for b in ds), 0

    def ours_parsed() -> tuple[int, int]:
        return epoch(grain.MapDataset.source(parsed).shuffle(seed=SEED).batch(256))

    def ours_recipe() -> tuple[int, int]:
        ds = grain.MapDataset.source(raw).shuffle(seed=SEED).batch(256, batch_fn=list)
        return epoch(ds.map(lambda records: tfe.parse_example(records, SPEC)))

    def theirs() -> tuple[int, int]:
        ds = grain.MapDataset.source(source).shuffle(seed=SEED).map(parse).batch(256)
        return epoch(ds)

    a, b, peer = compare(
        [
            ("Grain over `RecordDataset(features=)`", ours_parsed),
            ("Grain over raw `RecordDataset` + `tfe.parse_example` per batch", ours_recipe),
            ("Grain over `ArrayRecordDataSource` + protobuf parse", theirs),
        ]
    )
    return _epoch_table(
        "Grain `MapDataset` epochs, global shuffle, batches of 256, one process",
        [(a, peer), (b, peer)],
    )


def _summary(values: list[float]) -> tuple[float, float]:
    return max(values), float(statistics.median(values))


def percall_rows(path: str, ar_path: str) -> list[str]:
    """Per-call random access, ours and the peers on the same records and indices."""
    from array_record.python.array_record_data_source import ArrayRecordDataSource
    from array_record.python.array_record_module import ArrayRecordReader

    tfrecord = tfrecord_package()
    parsed = tfe.RecordDataset(path, features=SPEC)
    raw = tfe.RecordDataset(path)
    n = len(raw)
    source = ArrayRecordDataSource([ar_path])
    reader = ArrayRecordReader(ar_path, "readahead_buffer_size:0")
    index = dali_index(path)
    parse = proto_parse()
    rng = np.random.default_rng(0)
    one = rng.integers(0, n, 100_000).tolist()
    lists = [rng.integers(0, n, LIST).tolist() for _ in range(2_000)]

    def tfrecord_indexed(k: int) -> object:
        return next(iter(tfrecord.tfrecord_loader(path, index, DESCRIPTION, shard=(one[k], n))))

    pairs: list[tuple[str, Callable[[int], object], int, str, Callable[[int], object], int]] = [
        ("raw ds[i]", lambda k: raw[one[k]], len(one),
         "ArrayRecord `DataSource[i]`", lambda k: source[one[k]], len(one)),
        ("raw ds[i]", lambda k: raw[one[k]], len(one),
         "ArrayRecord `reader.read(i, i + 1)`", lambda k: reader.read(one[k], one[k] + 1),
         len(one)),
        ("raw ds[list of 64]", lambda k: raw[lists[k]], len(lists),
         "ArrayRecord `reader.read(list of 64)`", lambda k: reader.read(lists[k]), len(lists)),
        ("parsed ds[i]", lambda k: parsed[one[k]], len(one),
         "ArrayRecord `DataSource[i]` + protobuf parse", lambda k: parse(source[one[k]]),
         len(one)),
        ("parsed ds[i]", lambda k: parsed[one[k]], len(one),
         "`tfrecord` indexed reader (`shard=(i, n)`)", tfrecord_indexed, len(one)),
        ("parsed ds[list of 64]", lambda k: parsed[lists[k]], len(lists),
         "ArrayRecord `__getitems__(64)` + protobuf parse",
         lambda k: [parse(r) for r in source.__getitems__(lists[k])], len(lists)),
    ]  # fmt: skip
    lines = [
        f"### Per call, random indices, one process ({n:,} MNIST-like records)",
        "",
        "| ours | records/s best / median | target | peer | records/s best / median "
        "| ours vs peer (best / median) |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for what, fn, calls, peer_name, peer_fn, peer_calls in pairs:
        per = LIST if "list" in what else 1
        ours = _summary(rates(fn, calls, per))
        peer = _summary(rates(peer_fn, peer_calls, per))
        target = TARGETS.get(what)
        lines.append(
            f"| `{what}` | {ours[0]:,.0f} / {ours[1]:,.0f} | "
            + (f"{target:,}" if target else "-")
            + f" | {peer_name} | {peer[0]:,.0f} / {peer[1]:,.0f} "
            f"| {ours[0] / peer[0]:.2f}x / {ours[1] / peer[1]:.2f}x |"
        )
    return lines


def run() -> str:
    """Runs the three tables; returns Markdown."""
    path = mnist_like()
    ar_path = array_record_copy(path)
    lines = torch_rows(path)
    lines += ["", *grain_rows(path, ar_path)]
    lines += ["", *percall_rows(path, ar_path)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())

"""Framing throughput: read + CRC verify and write, ours vs TensorFlow, same files, one run.

Each read row also runs the physical bound, one crc32c pass over the mapped file: the
"against the bound" rows give the fraction of it that ours reaches (a ratio below 1).

python -m benchmarks.bench_framing
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

import tfrecord_engine as tfe
from benchmarks.common import Measurement, compare, repeats, table
from benchmarks.data import raw_file, raw_records
from tfrecord_engine import kernels

SMALL = ("small-856B", 70_000, 856)
LARGE = ("large-100KB", 2_000, 100_000)


def _read_cases(path: str) -> list[tuple[str, Callable[[], tuple[int, int]]]]:
    import tensorflow as tf

    def ours() -> tuple[int, int]:
        n = b = 0
        for r in tfe.read_records(path):
            n += 1
            b += len(r)
        return n, b

    def theirs() -> tuple[int, int]:
        n = b = 0
        for batch in tf.data.TFRecordDataset(path).batch(4096):
            n += int(batch.shape[0])
            b += int(tf.reduce_sum(tf.strings.length(batch)))
        return n, b

    return [("tfe.read_records", ours), ("TFRecordDataset.batch(4096)", theirs)]


def _bound_case(path: str) -> tuple[str, Callable[[], tuple[int, int]]]:
    """The physical bound of read + CRC: one ``crc32c`` pass over the whole mapped file
    (every byte read once from the page cache, no framing, no copy)."""
    import mmap

    import crc32c

    n = len(tfe.Index.build(path))

    def bound() -> tuple[int, int]:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            crc32c.crc32c(m)
            return n, len(m)

    return ("crc32c over the mapped file", bound)


def _write_cases(records: list[bytes], out: str) -> list[tuple[str, Callable[[], tuple[int, int]]]]:
    import tensorflow as tf

    nbytes = sum(len(r) for r in records)

    def ours() -> tuple[int, int]:
        with tfe.TFRecordWriter(out) as w:
            for r in records:
                w.write(r)
        return len(records), nbytes

    def ours_fast() -> tuple[int, int]:
        # durable=False: no fsync at close, as TensorFlow's writer (still atomic).
        with tfe.TFRecordWriter(out, durable=False) as w:
            for r in records:
                w.write(r)
        return len(records), nbytes

    def ours_many() -> tuple[int, int]:
        with tfe.TFRecordWriter(out) as w:
            w.write_many(records)
        return len(records), nbytes

    def ours_many_fast() -> tuple[int, int]:
        # durable=False: no fsync at close, as TensorFlow's writer (still atomic).
        with tfe.TFRecordWriter(out, durable=False) as w:
            w.write_many(records)
        return len(records), nbytes

    def theirs() -> tuple[int, int]:
        with tf.io.TFRecordWriter(out) as w:
            for r in records:
                w.write(r)
        return len(records), nbytes

    return [
        ("tfe write", ours),
        ("tfe write durable=False", ours_fast),
        ("tfe write_many", ours_many),
        ("tfe write_many durable=False", ours_many_fast),
        ("tf.io.TFRecordWriter", theirs),
    ]


def _per_record_cases(
    records: list[bytes], out: str
) -> list[tuple[str, Callable[[], tuple[int, int]]]]:
    """One ``write()`` per record, as tutorials do, with the default durability (atomic
    publish, fsync at close): with and without the index, with and without numba."""
    import tensorflow as tf

    nbytes = sum(len(r) for r in records)

    def ours(index: bool, compiled: bool) -> Callable[[], tuple[int, int]]:
        def run() -> tuple[int, int]:
            with kernels.switched(compiled), tfe.TFRecordWriter(out, index=index) as w:
                for r in records:
                    w.write(r)
            return len(records), nbytes

        return run

    def theirs() -> tuple[int, int]:
        with tf.io.TFRecordWriter(out) as w:
            for r in records:
                w.write(r)
        return len(records), nbytes

    return [
        ("tfe write", ours(index=False, compiled=True)),
        ("tfe write index=True", ours(index=True, compiled=True)),
        ("tfe write TFE_KERNELS=0", ours(index=False, compiled=False)),
        ("tfe write index=True TFE_KERNELS=0", ours(index=True, compiled=False)),
        ("tf.io.TFRecordWriter", theirs),
    ]


def run() -> str:
    """Runs the framing benchmarks; returns Markdown tables."""
    rows: list[tuple[str, Measurement, Measurement | None]] = []
    for name, n, size in (SMALL, LARGE):
        path, _, _ = raw_file(name, n, size)
        ours, theirs, bound = compare([*_read_cases(path), _bound_case(path)])
        rows.append((f"read + CRC, {name}", ours, theirs))
        rows.append((f"read + CRC, {name}, against the bound", ours, bound))
    wrows: list[tuple[str, Measurement, Measurement | None]] = []
    prows: list[tuple[str, Measurement, Measurement | None]] = []
    with tempfile.TemporaryDirectory() as d:
        for name, n, size in (SMALL, LARGE):
            records = raw_records(n, size, seed=1)
            cases = _write_cases(records, os.path.join(d, "w.tfrecord"))
            one, one_fast, many, fast, theirs = compare(cases)
            wrows.append((f"write, {name}", one, theirs))
            wrows.append((f"write durable=False, {name}", one_fast, theirs))
            wrows.append((f"write_many, {name}", many, theirs))
            wrows.append((f"write_many durable=False, {name}", fast, theirs))
        name, n, size = SMALL
        records = raw_records(n, size, seed=1)
        cases = _per_record_cases(records, os.path.join(d, "p.tfrecord"))
        plain, indexed, plain0, indexed0, theirs = compare(cases, repeats(7), warmup=1)
        prows.append((f"write(), {name}", plain, theirs))
        prows.append((f"write(), index=True, {name}", indexed, theirs))
        prows.append((f"write(), TFE_KERNELS=0, {name}", plain0, theirs))
        prows.append((f"write(), index=True, TFE_KERNELS=0, {name}", indexed0, theirs))
        prows.append((f"write(), index=True vs without, {name}", indexed, plain))
        prows.append((f"write(), index=True vs without, TFE_KERNELS=0, {name}", indexed0, plain0))
    return "\n\n".join(
        (
            table("Framing: read + CRC verify", rows),
            table("Framing: write", wrows),
            table(
                "Framing: one write() per record, default durability (atomic, fsync at close)",
                prows,
            ),
        )
    )


if __name__ == "__main__":
    print(run())

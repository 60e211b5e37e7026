"""Chunk sizes of epochs in file order: the byte cap alone against whole chunks for many keys.

    python -m benchmarks.bench_chunks                     # wide, many-keys, image, detection
    python -m benchmarks.bench_chunks --shapes wide,tokens --rounds 9

An epoch in file order reads, checks and decodes chunks of at most
``epochs.CHUNK_BYTES`` of records, but a spec of at least ``epochs.MANY_KEYS`` keys
takes chunks of 4,096 records, as a shuffled epoch does (within
``epochs.MANY_KEYS_CHUNK_BYTES``). For each shape one process
alternates, round after round, ``batches(256)`` in order with that rule and with it
off (``MANY_KEYS`` out of reach: the byte cap alone), and prints each one's best and
median epoch and the chunk each took. Shapes: those of the matrix
(``benchmarks.shapes``, 20,000 records in four files) and ``many-keys``, 12,000
records of 120 ``float32[8]`` keys in a shuffled order per record (5.5 KB), written
to a temporary folder removed afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import tfrecord_engine as tfe
from benchmarks.shape_cases import ours_for
from benchmarks.shapes import SHAPES, write_shape
from tfrecord_engine import kernels
from tfrecord_engine.data import epochs

RECORDS = 20_000
MANY_KEYS = 120
MANY_KEYS_RECORDS = 12_000
BATCH = 256


@contextlib.contextmanager
def many_keys_dataset(records: int = MANY_KEYS_RECORDS) -> Iterator[tfe.RecordDataset]:
    """A dataset of ``records`` records of :data:`MANY_KEYS` float32[8] keys, each record
    with its keys in its own order, in a temporary folder (removed on exit)."""
    rng = np.random.default_rng(7)
    names = [f"f{j:03d}" for j in range(MANY_KEYS)]
    features = {name: tfe.FixedLenFeature([8], "float32") for name in names}
    with tempfile.TemporaryDirectory(prefix="tfe-bench-chunks-") as tmp:
        path = str(Path(tmp) / "many-keys.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            for _ in range(records):
                order = rng.permutation(MANY_KEYS)
                w.write(
                    tfe.encode_example({names[j]: rng.random(8, dtype=np.float32) for j in order})
                )
        ds = tfe.RecordDataset(path, features=features)
        try:
            yield ds
        finally:
            ds.close()


def compare(name: str, ds: tfe.RecordDataset, rounds: int) -> str:
    """One line: the epoch with whole chunks for many keys and with the byte cap alone."""
    many = epochs.MANY_KEYS
    settings = {"many keys, whole chunks": many, "bytes only": 1 << 30}
    times: dict[str, list[float]] = {label: [] for label in settings}
    chunks: dict[str, int] = {}
    record_bytes = ds._opened().record_bytes
    keys = len(ds.features or ())
    try:
        for r in range(rounds + 1):
            for label, value in settings.items():
                epochs.MANY_KEYS = value
                chunks[label] = epochs.chunk_records(record_bytes, keys)
                t0 = time.perf_counter()
                for _batch in ds.batches(BATCH):
                    pass
                if r:  # (round 0 warms up: files held, kernels compiled)
                    times[label].append(time.perf_counter() - t0)
    finally:
        epochs.MANY_KEYS = many
    cells = [
        f"{label} ({chunks[label]} records a chunk) {min(got) * 1e3:.1f} / "
        f"{statistics.median(got) * 1e3:.1f} ms"
        for label, got in times.items()
    ]
    base, now = times["bytes only"], times["many keys, whole chunks"]
    ratio = f"{min(base) / min(now):.2f} / {statistics.median(base) / statistics.median(now):.2f}x"
    return f"{name} ({keys} keys, {record_bytes:,.0f} B): " + " | ".join(cells) + f" | {ratio}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="wide,many-keys,image,detection")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    if not kernels.wait(300):
        raise SystemExit("the compiled kernels did not load")
    for name in args.shapes.split(","):
        if name == "many-keys":
            with many_keys_dataset() as ds:
                print(compare(name, ds, args.rounds), flush=True)
            continue
        shape = SHAPES[name]
        ds = ours_for(shape, write_shape(shape, RECORDS)).ds
        print(compare(name, ds, args.rounds), flush=True)


if __name__ == "__main__":
    main()

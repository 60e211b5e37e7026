"""One side of :mod:`benchmarks.bench_guard`: times every row with whatever
``tfrecord_engine`` is first on ``sys.path`` (the baseline's checkout or this one).

python benchmarks/guard_child.py DATA_DIR REPEATS  ->  one JSON object of records/s
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import tfrecord_engine as tfe


def best(fn: Callable[[], int], repeats: int) -> float:
    """Records per second of the fastest of ``repeats`` runs (after one warm-up)."""
    fn()
    times = []
    n = 0
    for _ in range(repeats):
        t = time.perf_counter()
        n = fn()
        times.append(time.perf_counter() - t)
    return n / min(times)


def rows(data: Path, repeats: int) -> dict[str, float]:
    small, large = str(data / "small.tfrecord"), str(data / "large.tfrecord")
    examples = str(data / "examples.tfrecord")
    shards = sorted(str(p) for p in data.glob("shard-*.tfrecord"))
    spec = {"x": tfe.FixedLenFeature([], "int64"), "b": tfe.FixedLenFeature([], "string")}
    out: dict[str, float] = {}

    def read_all(path: str) -> Callable[[], int]:
        return lambda: sum(1 for _ in tfe.read_records(path))

    out["read_records, 856 B"] = best(read_all(small), repeats)
    out["read_records, 100 KB"] = best(read_all(large), repeats)
    raw = tfe.RecordDataset(small)
    parsed = tfe.RecordDataset(examples, features=spec)
    many = tfe.RecordDataset(shards)
    out["raw batches(256), 856 B"] = best(lambda: sum(map(len, raw.batches(256))), repeats)
    out["raw batches(256, shuffle), 856 B"] = best(
        lambda: sum(map(len, raw.batches(256, shuffle=True))), repeats
    )
    out["parsed batches(256), 856 B"] = best(
        lambda: sum(len(b["x"]) for b in parsed.batches(256)), repeats
    )
    out["parsed batches(256, shuffle), 856 B"] = best(
        lambda: sum(len(b["x"]) for b in parsed.batches(256, shuffle=True)), repeats
    )
    out["raw batches(256, shuffle), 20 shards"] = best(
        lambda: sum(map(len, many.batches(256, shuffle=True))), repeats
    )
    picks = np.random.default_rng(1).integers(0, len(raw), 20_000).tolist()
    out["raw ds[i], 856 B"] = best(lambda: sum(1 for i in picks if raw[i]), repeats)
    return out


if __name__ == "__main__":
    print(json.dumps(rows(Path(sys.argv[1]), int(sys.argv[2]))))

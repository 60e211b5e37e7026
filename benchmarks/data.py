"""Benchmark datasets, written once by TensorFlow's own writer and cached in DATA_DIR."""

from __future__ import annotations

import numpy as np

from benchmarks.common import DATA_DIR

_VERSION = "v1"


def _write_with_tf(path: str, records: list[bytes]) -> None:
    import tensorflow as tf

    with tf.io.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)


def raw_records(n: int, size: int, seed: int) -> list[bytes]:
    """``n`` random payloads of exactly ``size`` bytes."""
    rng = np.random.default_rng(seed)
    blob = rng.integers(0, 256, size=n * size, dtype=np.uint8).tobytes()
    return [blob[i * size : (i + 1) * size] for i in range(n)]


def raw_file(name: str, n: int, size: int, seed: int = 0) -> tuple[str, int, int]:
    """A file of ``n`` random ``size``-byte records; returns (path, n, payload bytes)."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / f"{name}-{_VERSION}.tfrecord"
    if not path.exists():
        tmp = path.with_suffix(".partial")
        _write_with_tf(str(tmp), raw_records(n, size, seed))
        tmp.replace(path)
    return str(path), n, n * size

"""Benchmark datasets, written once by TensorFlow's own writer and cached in DATA_DIR."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import tfrecord_engine as tfe
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


def _examples_file(name: str, n: int, make: object) -> str:
    """Writes ``n`` tf.train.Examples built by ``make(tf, i)`` with TensorFlow, once."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / f"{name}-{_VERSION}.tfrecord"
    if not path.exists():
        import tensorflow as tf

        tmp = path.with_suffix(".partial")
        with tf.io.TFRecordWriter(str(tmp)) as w:
            for i in range(n):
                w.write(make(tf, i).SerializeToString())  # type: ignore[operator]
        tmp.replace(path)
    return str(path)


#: The spec of :func:`mnist_like`'s records (the image as its encoded string).
MNIST_SPEC: dict[str, Any] = {
    "index": tfe.FixedLenFeature([], "int64"),
    "label": tfe.FixedLenFeature([], "int64"),
    "image": tfe.FixedLenFeature([], "string"),
}


def mnist_like(n: int = 70_000, label_sorted: bool = False) -> str:
    """MNIST-like Examples: int64 ``index``, int64 ``label``, 784-byte ``image`` (~856 B)."""
    rng = np.random.default_rng(7)
    images = rng.integers(0, 256, size=(n, 784), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n)
    if label_sorted:
        labels = np.sort(labels)

    def make(tf: object, i: int) -> object:
        t = tf.train  # type: ignore[attr-defined]
        return t.Example(
            features=t.Features(
                feature={
                    "index": t.Feature(int64_list=t.Int64List(value=[i])),
                    "label": t.Feature(int64_list=t.Int64List(value=[int(labels[i])])),
                    "image": t.Feature(bytes_list=t.BytesList(value=[images[i].tobytes()])),
                }
            )
        )

    return _examples_file("mnist-sorted" if label_sorted else "mnist", n, make)


def tabular(n: int = 200_000) -> str:
    """Tabular Examples: 64 float32 ``x``, 16 int64 ``ids`` up to 2**40, int64 ``label``."""
    rng = np.random.default_rng(11)
    xs = rng.standard_normal((n, 64)).astype(np.float32)
    ids = rng.integers(0, 2**40, size=(n, 16))
    labels = rng.integers(0, 2, size=n)

    def make(tf: object, i: int) -> object:
        t = tf.train  # type: ignore[attr-defined]
        return t.Example(
            features=t.Features(
                feature={
                    "x": t.Feature(float_list=t.FloatList(value=xs[i].tolist())),
                    "ids": t.Feature(int64_list=t.Int64List(value=ids[i].tolist())),
                    "label": t.Feature(int64_list=t.Int64List(value=[int(labels[i])])),
                }
            )
        )

    return _examples_file("tabular", n, make)


def ragged_text(n: int = 50_000) -> str:
    """Text-like Examples: variable-length int64 ``tokens`` (1-64) and 0-4 ``tags`` strings."""
    rng = np.random.default_rng(13)
    lengths = rng.integers(1, 65, size=n)
    ntags = rng.integers(0, 5, size=n)

    def make(tf: object, i: int) -> object:
        t = tf.train  # type: ignore[attr-defined]
        toks = rng.integers(0, 30_000, size=int(lengths[i])).tolist()
        tags = [b"tag%d" % k for k in rng.integers(0, 100, size=int(ntags[i]))]
        return t.Example(
            features=t.Features(
                feature={
                    "tokens": t.Feature(int64_list=t.Int64List(value=toks)),
                    "tags": t.Feature(bytes_list=t.BytesList(value=tags)),
                }
            )
        )

    return _examples_file("ragged", n, make)


def array_record_copy(path: str) -> str:
    """The records of the TFRecord file ``path``, in order, in an ArrayRecord file (cached).

    ``group_size:1`` (one record per chunk), as ArrayRecord's documentation advises for
    random access, which is how Grain reads a data source; ``uncompressed``, its fastest
    reads (the default, zstd, decompresses each record: measured 2-3x slower batched reads
    on these records, which do not compress).
    """
    from array_record.python.array_record_module import ArrayRecordWriter

    import tfrecord_engine as tfe

    out = DATA_DIR / (path.rsplit("/", 1)[-1].rsplit(".", 1)[0] + "-g1u.array_record")
    if not out.exists():
        tmp = out.with_suffix(".partial")
        writer = ArrayRecordWriter(str(tmp), "group_size:1,uncompressed")
        for record in tfe.read_records(path):
            writer.write(record)
        writer.close()
        tmp.replace(out)
    return str(out)


def dali_index(path: str) -> str:
    """DALI's text index of ``path`` (also the ``tfrecord`` package's), written once by
    ``tfr index --format dali`` as a user would.
    """
    import subprocess
    import sys

    from tfrecord_engine.cli.files import dali_index_path

    out = dali_index_path(path)
    if not os.path.exists(out):
        subprocess.run(
            [sys.executable, "-m", "tfrecord_engine.cli", "index", "--format", "dali", path],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return out


#: The wide-record files: feature names and kinds (a spec can be built from these).
WIDE_SCALARS = 200
WIDE_SELECT_FROM = 1000


def wide_kinds(count: int, seed: int) -> list[str]:
    """The kind of each feature ``f0000``.. of a wide file: "int64", "float32" or "string"."""
    rng = np.random.default_rng(seed)
    kinds = ["int64", "float32"] if count == WIDE_SCALARS else ["int64", "float32", "string"]
    return [kinds[k] for k in rng.integers(0, len(kinds), size=count)]


def _wide_file(name: str, n: int, count: int, seed: int) -> str:
    """``n`` Examples of ``count`` scalar features; int64 values of varied varint widths."""
    kinds = wide_kinds(count, seed)
    rng = np.random.default_rng(seed + 1)
    # Widths 1..10 bytes: magnitudes up to 2**bits for random bits, and some negatives.
    bits = rng.integers(1, 63, size=(n, count))
    ints = rng.integers(0, 2**62, size=(n, count)) % (np.int64(1) << bits)
    ints[rng.random((n, count)) < 0.05] *= -1
    floats = rng.standard_normal((n, count)).astype(np.float32)

    def make(tf: object, i: int) -> object:
        t = tf.train  # type: ignore[attr-defined]
        feature = {}
        for j, kind in enumerate(kinds):
            if kind == "int64":
                f = t.Feature(int64_list=t.Int64List(value=[int(ints[i, j])]))
            elif kind == "float32":
                f = t.Feature(float_list=t.FloatList(value=[float(floats[i, j])]))
            else:
                f = t.Feature(bytes_list=t.BytesList(value=[b"v%d" % ints[i, j]]))
            feature[f"f{j:04d}"] = f
        return t.Example(features=t.Features(feature=feature))

    return _examples_file(name, n, make)


def wide_scalars(n: int = 16_384) -> str:
    """Examples of 200 scalar features ``f0000``..``f0199``, int64 and float32 mixed."""
    return _wide_file("wide200", n, WIDE_SCALARS, 17)


def wide_select(n: int = 8_192) -> str:
    """Examples of 1,000 scalar features (int64, float32, short strings) for a 1-key spec."""
    return _wide_file("wide1000", n, WIDE_SELECT_FROM, 19)

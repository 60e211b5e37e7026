"""TFRecords as tables: Arrow reads, Parquet -> TFRecord writes, Spark's tasks.

Run: ``python -m benchmarks.bench_arrow [--records N] [--no-spark]`` (needs the ``arrow``
and ``tf`` extras; the Spark rows need the ``spark`` extra and Java 17).

Two record shapes, written once: MNIST-like (an int64 index and label, a 784-byte
image) and detection-like (variable-length box coordinates and class ids, a caption,
an image of a few hundred bytes). Per shape, in one process, alternating, best of
``TFE_BENCH_REPEATS`` (default 3) runs:

- reading every record into parsed columns, batches of 4,096: ``tfrecord_engine.arrow``'s
  record batches vs our numpy batch path (``RecordDataset.batches`` with features: the
  ratio is the cost of Arrow's assembly) and vs ``tf.data`` + ``tf.io.parse_example``
  turned into numpy (``.numpy()`` of every output);
- Parquet -> TFRecord (4 indexed shards): ``tfrecord_engine.arrow.write`` (encoding a
  column at a time) vs reading the rows and writing each with ``tfe.encode_example``
  into a ``TFRecordWriter``.

Then Spark (``local[2]``), one large file of the MNIST-like records: the tasks of a
``spark.read.format("tfrecord")`` scan (cut at record boundaries; spark-tfrecord reads
a file in one task, its ``isSplitable`` being false) and its time against Spark
reading the same rows from Parquet, both with ``spark.sql.files.maxPartitionBytes`` /
``maxPartitionBytes`` of 8 MiB, summing a column so every row is decoded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from benchmarks.data import MNIST_SPEC

from .common import compare, repeats, table

MNIST: dict[str, Any] = MNIST_SPEC
DETECTION: dict[str, Any] = {
    "boxes": tfe.VarLenFeature("float32"),
    "classes": tfe.VarLenFeature("int64"),
    "caption": tfe.FixedLenFeature([], "string"),
    "image": tfe.FixedLenFeature([], "string"),
}
BATCH = 4096


def _mnist(i: int, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "index": i,
        "label": int(rng.integers(0, 10)),
        "image": rng.integers(0, 256, 784, dtype=np.uint8).tobytes(),
    }


def _detection(i: int, rng: np.random.Generator) -> dict[str, Any]:
    k = int(rng.integers(0, 8))
    return {
        "boxes": rng.random(4 * k, dtype=np.float32),
        "classes": rng.integers(0, 90, k),
        "caption": f"image {i} with {k} objects".encode(),
        "image": rng.integers(0, 256, int(rng.integers(200, 600)), dtype=np.uint8).tobytes(),
    }


def write_file(
    path: Path, n: int, row: Callable[[int, np.random.Generator], dict[str, Any]]
) -> int:
    """``n`` Examples in one indexed file; returns the file's size."""
    rng = np.random.default_rng(0)
    with tfe.TFRecordWriter(path, index=True, durable=False) as w:
        w.write_many(tfe.encode_example(row(i, rng)) for i in range(n))
    return os.path.getsize(path)


def _tf_spec(tf: Any, spec: dict[str, Any]) -> dict[str, Any]:
    dtypes = {"int64": tf.int64, "float32": tf.float32, "string": tf.string}
    out = {}
    for key, s in spec.items():
        if isinstance(s, tfe.VarLenFeature):
            out[key] = tf.io.VarLenFeature(dtypes[s.dtype])
        else:
            out[key] = tf.io.FixedLenFeature(list(s.shape), dtypes[s.dtype])
    return out


def read_rows(tf: Any, name: str, path: Path, spec: dict[str, Any], size: int) -> str:
    """The three readers of one file, as a table."""
    import tfrecord_engine.arrow as tfa

    ds = tfe.RecordDataset(str(path), spec)
    n = len(ds)
    tf_spec = _tf_spec(tf, spec)
    pipeline = (
        tf.data.TFRecordDataset(str(path))
        .batch(BATCH)
        .map(lambda x: tf.io.parse_example(x, tf_spec), num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )

    def arrow() -> tuple[int, int]:
        return sum(b.num_rows for b in tfa.reader(str(path), spec, batch_size=BATCH)), size

    dense = next(k for k, v in spec.items() if isinstance(v, tfe.FixedLenFeature))

    def numpy_path() -> tuple[int, int]:
        return sum(len(b[dense]) for b in ds.batches(BATCH)), size

    def tf_numpy() -> tuple[int, int]:
        count = 0
        for batch in pipeline:
            for value in batch.values():  # every output as numpy, as ours are
                if isinstance(value, tf.SparseTensor):
                    value.indices.numpy()
                    value.values.numpy()
                else:
                    value.numpy()
            count += int(batch[dense].shape[0])
        return count, size

    ours, ours_np, theirs = compare(
        [
            ("tfrecord_engine.arrow", arrow),
            ("RecordDataset.batches (numpy)", numpy_path),
            ("tf.data + tf.io.parse_example -> numpy", tf_numpy),
        ],
        repeats=repeats(3),
        warmup=1,
    )
    return table(
        f"Parsed columns, {name} ({n:,} records, batches of {BATCH})",
        [("Arrow vs our numpy batches", ours, ours_np), ("Arrow vs tf.io -> numpy", ours, theirs)],
    )


def write_rows(name: str, parquet: Path, out: Path, size: int) -> str:
    """Parquet -> 4 indexed TFRecord shards, both ways, as a table."""
    import pyarrow.parquet as pq

    import tfrecord_engine.arrow as tfa
    from tfrecord_engine.hosts.arrow.writer import encode_batch

    n = pq.ParquetFile(parquet).metadata.num_rows

    def vectorized() -> tuple[int, int]:
        paths = tfa.write(str(parquet), str(out / "a" / "t"), num_shards=4)
        return sum(len(tfe.Index.load(p)) for p in paths), size

    def per_row() -> tuple[int, int]:
        rows = pq.read_table(parquet).to_pylist()
        (out / "b").mkdir(exist_ok=True)
        done = 0
        for s in range(4):
            part = rows[s * n // 4 : (s + 1) * n // 4]
            with tfe.TFRecordWriter(out / "b" / f"t-{s}.tfrecord", index=True) as w:
                w.write_many(tfe.encode_example(_typed(r)) for r in part)
            done += len(part)
        return done, size

    batches = pq.read_table(parquet).to_batches(max_chunksize=8192)
    rows = [_typed(r) for r in pq.read_table(parquet).to_pylist()]

    def encode_columns() -> tuple[int, int]:
        return sum(len(encode_batch(b)[1]) for b in batches), size

    def encode_rows() -> tuple[int, int]:
        return len([tfe.encode_example(r) for r in rows]), size

    ours, theirs, ours_enc, theirs_enc = compare(
        [
            ("tfrecord_engine.arrow.write", vectorized),
            ("per-row encode_example + TFRecordWriter", per_row),
            ("columns encoded (Arrow batches in memory)", encode_columns),
            ("encode_example per row (dicts in memory)", encode_rows),
        ],
        repeats=repeats(3),
    )
    return table(
        f"Parquet -> TFRecord, {name} ({n:,} rows, 4 indexed shards)",
        [("write, end to end", ours, theirs), ("encoding alone", ours_enc, theirs_enc)],
    )


def _typed(row: dict[str, Any]) -> dict[str, Any]:
    """A row of Python values as encode_example takes it (typed lists, no nulls)."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, list):
            kind = (
                np.float32
                if key == "boxes" or (value and isinstance(value[0], float))
                else np.int64
            )
            out[key] = np.asarray(value, kind)
        elif value is not None:
            out[key] = value
    return out


def spark_rows(path: Path, parquet: Path, n: int) -> str:
    """One large file read by Spark local[2]: tasks and time, vs Parquet."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from tfrecord_engine.spark import TFRecordDataSource

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.files.maxPartitionBytes", str(8 << 20))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(TFRecordDataSource)
    tracker = spark.sparkContext.statusTracker()

    def run(group: str, df: Any) -> tuple[float, int]:
        df.agg({"label": "sum"}).collect()  # untimed: starts the Python workers
        best = float("inf")
        tasks = 0
        for k in range(repeats(3)):
            spark.sparkContext.setJobGroup(f"{group}-{k}", group)
            t = time.perf_counter()
            total = df.agg({"label": "sum"}).collect()[0][0]
            best = min(best, time.perf_counter() - t)
            assert total is not None
            stages = [
                s
                for j in tracker.getJobIdsForGroup(f"{group}-{k}")
                for s in tracker.getJobInfo(j).stageIds
            ]
            tasks = int(tracker.getStageInfo(min(stages)).numTasks)
        return best, tasks

    schema = "index bigint, label bigint, image binary"
    ours = spark.read.format("tfrecord").schema(schema).option("maxPartitionBytes", 8 << 20)
    ours_s, ours_tasks = run("tfrecord", ours.load(str(path)))
    pq_s, pq_tasks = run("parquet", spark.read.parquet(str(parquet)))
    spark.stop()
    size = os.path.getsize(path)
    return "\n".join(
        [
            f"### Spark local[2], one {size / 1e6:.0f} MB TFRecord file ({n:,} records)",
            "",
            "| reader | tasks of the scan | best s | rec/s | vs Parquet |",
            "|---|---:|---:|---:|---:|",
            f"| spark.read.format('tfrecord') (ours) | {ours_tasks} | {ours_s:.2f} | "
            f"{n / ours_s:,.0f} | {pq_s / ours_s:.2f}x |",
            "| spark-tfrecord (isSplitable false: one task per file) | 1 | - | - | - |",
            f"| spark.read.parquet, same rows | {pq_tasks} | {pq_s:.2f} | {n / pq_s:,.0f} "
            "| 1.00x |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import pyarrow.parquet as pq
    import tensorflow as tf

    import tfrecord_engine.arrow as tfa

    root = Path(tempfile.mkdtemp(prefix="bench-arrow-"))
    try:
        shapes = [("MNIST-like", MNIST, _mnist), ("detection-like", DETECTION, _detection)]
        for name, spec, row in shapes:
            path = root / f"{name}.tfrecord"
            size = write_file(path, args.records, row)
            print(read_rows(tf, name, path, spec, size), "\n", flush=True)
            parquet = root / f"{name}.parquet"
            pq.write_table(tfa.read_table(str(path)), parquet)
            out = root / f"{name}-out"
            out.mkdir()
            print(write_rows(name, parquet, out, size), "\n", flush=True)
        if args.no_spark:
            return
        if shutil.which("java") is None:
            print("(Spark rows skipped: no java on PATH)")
            return
        mnist = root / "MNIST-like.tfrecord"
        print(spark_rows(mnist, root / "MNIST-like.parquet", args.records), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

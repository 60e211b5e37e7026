"""``spark.read/write.format("tfrecord")`` on real PySpark 4 in local[2]."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import tfrecord_engine as tfe
import tfrecord_engine.arrow as tfa
from tests.snippets import section
from tfrecord_engine.index.placement import index_path_for

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tables.md"


def _table(n: int) -> Any:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "score": pa.array([i / 2 for i in range(n)], pa.float32()),
            "name": [f"n{i}" if i % 5 else None for i in range(n)],
            "tags": pa.array([[i, i + 1][: i % 3] for i in range(n)], pa.list_(pa.int64())),
        }
    )


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _scan_tasks(spark: Any, group: str) -> int:
    """Tasks of the first stage of the jobs of ``group`` (the scan)."""
    tracker = spark.sparkContext.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds]
    return int(tracker.getStageInfo(min(stages)).numTasks)


def test_read_infers_the_schema_and_reads_every_row(spark: Any, tmp_path: Path) -> None:
    table = _table(50)
    tfa.write(table, str(tmp_path / "in" / "t"), num_shards=2)
    df = spark.read.format("tfrecord").load(str(tmp_path / "in"))
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("id", "bigint"),
        ("name", "string"),
        ("score", "float"),
        ("tags", "array<bigint>"),
    ]
    rows = sorted(df.collect(), key=lambda r: r.id)
    assert [r.asDict() for r in rows] == sorted(
        ({k: row[k] for k in ("id", "name", "score", "tags")} for row in table.to_pylist()),
        key=lambda r: r["id"],
    )


def test_one_large_file_is_read_by_many_tasks(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "big.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(tfe.encode_example({"id": i, "pad": bytes(100)}) for i in range(4000))
    size = os.path.getsize(path)
    df = (
        spark.read.format("tfrecord")
        .option("maxPartitionBytes", size // 8)
        .schema("id bigint")
        .load(str(path))
    )
    spark.sparkContext.setJobGroup("big-scan", "one file, many tasks")
    try:
        assert df.agg({"id": "sum"}).collect()[0][0] == sum(range(4000))
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert _scan_tasks(spark, "big-scan") >= 8  # spark-tfrecord reads a file in one task


def test_record_types_and_a_given_schema(spark: Any, tmp_path: Path) -> None:
    seq = pa.table(
        {
            "id": [1, 2],
            "steps": pa.array([[[1, 2], [3]], []], pa.list_(pa.list_(pa.int64()))),
        }
    )
    tfa.write(seq, str(tmp_path / "seq" / "s"), record_type="SequenceExample")
    df = spark.read.format("tfrecord").option("recordType", "SequenceExample")
    rows = sorted(df.load(str(tmp_path / "seq")).collect(), key=lambda r: r.id)
    assert [r.steps for r in rows] == [[[1, 2], [3]], []]
    raw = spark.read.format("tfrecord").option("recordType", "ByteArray")
    got = raw.load(str(tmp_path / "seq")).collect()
    assert [r.byteArray for r in got] == [
        r for p in sorted((tmp_path / "seq").glob("*.tfrecord")) for r in tfe.read_records(p)
    ]
    tfa.write(_table(5), str(tmp_path / "g" / "t"))
    given = spark.read.format("tfrecord").schema("id int, name string, tags array<int>")
    rows = sorted(given.load(str(tmp_path / "g")).collect(), key=lambda r: r.id)
    assert [(r.id, r.name, r.tags) for r in rows][:3] == [
        (0, None, []),
        (1, "n1", [1]),
        (2, "n2", [2, 3]),
    ]


def test_damaged_records_raise_or_are_skipped(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "d" / "d.tfrecord"
    path.parent.mkdir()
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(tfe.encode_example({"id": i}) for i in range(20))
    start = int(tfe.Index.load(str(path)).offsets[7])
    blob = bytearray(path.read_bytes())
    blob[start + 12 + 2] ^= 0xFF  # record 7's data no longer matches its CRC
    path.write_bytes(bytes(blob))
    with pytest.raises(Exception, match=re.escape(str(path))):
        spark.read.format("tfrecord").schema("id bigint").load(str(path.parent)).collect()
    skipped = spark.read.format("tfrecord").schema("id bigint").option("onDamage", "skip")
    ids = sorted(r.id for r in skipped.load(str(path.parent)).collect())
    assert ids == [i for i in range(20) if i != 7]


def test_writes_round_trip_with_an_index_per_file(spark: Any, tmp_path: Path) -> None:
    table = _table(30)
    df = spark.createDataFrame(table).repartition(3)
    out = tmp_path / "out"
    df.write.format("tfrecord").mode("overwrite").option("codec", "gzip").save(str(out))
    shards = sorted(str(p) for p in out.glob("part-*.tfrecord.gz"))
    assert len(shards) == 3
    assert all(os.path.exists(index_path_for(p)) for p in shards)
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [".tfeidx"]
    back = tfa.read_table(shards, columns=["id", "name", "tags"]).sort_by("id")
    assert back.to_pydict() == table.select(["id", "name", "tags"]).to_pydict()
    # GZIP shards read back by Spark, cut at the writer's restart points.
    again = spark.read.format("tfrecord").option("numPartitions", 6).load(str(out))
    assert sorted(r.id for r in again.select("id").collect()) == list(range(30))


def test_save_modes(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "m"
    one = spark.createDataFrame([(1,)], "id bigint")
    two = spark.createDataFrame([(2,)], "id bigint")
    one.write.format("tfrecord").mode("overwrite").save(str(out))
    two.write.format("tfrecord").mode("append").save(str(out))
    read = spark.read.format("tfrecord").schema("id bigint")
    assert sorted(r.id for r in read.load(str(out)).collect()) == [1, 2]
    with pytest.raises(Exception, match="already holds data"):
        two.write.format("tfrecord").mode("append").option("saveMode", "errorifexists").save(
            str(out)
        )
    before = _files(out)
    two.write.format("tfrecord").mode("append").option("saveMode", "ignore").save(str(out))
    assert _files(out) == before
    one.write.format("tfrecord").mode("overwrite").save(str(out))
    assert [r.id for r in read.load(str(out)).collect()] == [1]


def test_a_failed_job_publishes_nothing_and_removes_nothing(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.functions import udf

    out = tmp_path / "f"
    spark.createDataFrame([(1,)], "id bigint").write.format("tfrecord").mode("append").save(
        str(out)
    )
    before = _files(out)

    def check(i: int) -> int:
        if i == 13:
            raise ValueError("boom")
        return i

    # (A lambda: Spark reads no type hints from it.)
    fail_on_13 = udf(lambda i: check(i), "bigint")  # noqa: PLW0108

    df = spark.range(40).repartition(4).select(fail_on_13("id").alias("id"))
    with pytest.raises(Exception, match="boom"):
        df.write.format("tfrecord").mode("overwrite").save(str(out))
    assert _files(out) == before  # nor a staging folder: every listed name is a shard
    assert not [p for p in out.iterdir() if p.name.startswith(".tfe-staging")]


def test_partition_by_folders(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "p"
    df = spark.range(12).selectExpr("id", "id % 3 AS part")
    df.write.format("tfrecord").mode("overwrite").option("partitionBy", "part").save(str(out))
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["part=0", "part=1", "part=2"]
    back = spark.read.format("tfrecord").load(str(out))
    assert back.schema["part"].dataType.simpleString() == "bigint"
    rows = sorted((r.id, r.part) for r in back.collect())
    assert rows == [(i, i % 3) for i in range(12)]


def test_docs_spark_recipe_runs_as_written(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (setup,) = section("Sample data", DOCS)
    (code,) = section("Spark", DOCS)
    printed: list[str] = []
    namespace = {"print": lambda *a: printed.append(" ".join(map(str, a)))}
    exec(compile(setup + "\n" + code, "docs/tables.md", "exec"), namespace)
    shown = re.search(r"\n## Spark\n.*?It prints:\n\n```\n(.*?)```", DOCS.read_text(), re.S)
    assert shown is not None
    assert printed == shown.group(1).splitlines()
    assert sorted(p.name for p in (tmp_path / "out" / "train").glob("part-*"))


def test_records_tensorflow_wrote_read_as_tensorflow_parses_them(
    spark: Any, tmp_path: Path
) -> None:
    tf = pytest.importorskip("tensorflow")
    path = str(tmp_path / "tf" / "x.tfrecord")
    os.makedirs(os.path.dirname(path))
    values = []
    with tf.io.TFRecordWriter(path) as w:
        for i in range(6):
            feature = {
                "i": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, -(2**40)])),
                "f": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 3])),
                "b": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"x" * i])),
            }
            record = tf.train.Example(features=tf.train.Features(feature=feature))
            w.write(record.SerializeToString())
            values.append(record.SerializeToString())
    spec = {
        "i": tf.io.FixedLenFeature([2], tf.int64),
        "f": tf.io.FixedLenFeature([], tf.float32),
        "b": tf.io.FixedLenFeature([], tf.string),
    }
    theirs = tf.io.parse_example(tf.constant(values), spec)
    df = spark.read.format("tfrecord").schema("i array<bigint>, f float, b binary")
    rows = df.load(path).collect()
    assert [r.i for r in rows] == theirs["i"].numpy().tolist()
    assert [r.f for r in rows] == theirs["f"].numpy().tolist()
    assert [bytes(r.b) for r in rows] == theirs["b"].numpy().tolist()
    assert np.array_equal(np.array([r.f for r in rows], np.float32), theirs["f"].numpy())

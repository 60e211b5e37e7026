"""TFRecord files in Spark 4, in pure Python: ``spark.read.format("tfrecord")`` and
``df.write.format("tfrecord")`` through Spark's Python Data Source API.

Needs the ``spark`` extra (PySpark >= 4.0 and pyarrow; Spark itself needs Java 17);
importing this module without PySpark raises
:class:`~tfrecord_engine.MissingDependencyError`. TensorFlow is never needed, nor a JVM
library: the records are read and written by the Python workers, as Arrow batches.

The options are spark-tfrecord's (``recordType`` = ``Example`` | ``SequenceExample`` |
``ByteArray``, ``codec``), so its users' code ports unchanged once the source is
registered; ours add a damage policy (``onDamage``), read-task sizes
(``maxPartitionBytes``, ``numPartitions``), schema inference's sample
(``sampleRecords``), ``partitionBy`` and ``saveMode`` as options (Spark offers neither
to Python data sources). docs/tables.md has the table of options and the recipes.

Example (needs a Spark session; not run as a doctest)::

    from pyspark.sql import SparkSession
    from tfrecord_engine.spark import TFRecordDataSource

    spark = SparkSession.builder.getOrCreate()
    spark.dataSource.register(TFRecordDataSource)
    df = spark.read.format("tfrecord").load("data/train")   # schema inferred
    df.write.format("tfrecord").mode("overwrite").option("codec", "gzip").save("out")
"""

from __future__ import annotations

from typing import Any

from .hosts.spark.source import TFRecordDataSource

__all__ = ["TFRecordDataSource", "register"]


def register(spark: Any) -> None:
    """Registers :class:`TFRecordDataSource` with a Spark session (``"tfrecord"``).

    The same as ``spark.dataSource.register(TFRecordDataSource)``.
    """
    spark.dataSource.register(TFRecordDataSource)

"""``TFRecordDataSource``: TFRecord files in Spark 4's Python Data Source API."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .files import find_files
from .options import parse_options
from .reader import TFRecordReader
from .schema import infer_spark_schema
from .writer import TFRecordWriteJob

__all__ = ["TFRecordDataSource"]


class TFRecordDataSource(DataSource):  # type: ignore[misc]  # Spark's class is untyped
    """TFRecord files as a Spark data source named ``"tfrecord"``.

    Register it once per session, then read and write with spark-tfrecord's options
    (``recordType``: ``Example``, ``SequenceExample`` or ``ByteArray``; ``codec``;
    a schema given with ``.schema(...)`` or inferred from the first records)::

        spark.dataSource.register(TFRecordDataSource)
        df = spark.read.format("tfrecord").load("data/train")
        df.write.format("tfrecord").mode("overwrite").save("out/train")

    Reads are cut at record boundaries from the files' indexes (one large file is read
    by many tasks), with every CRC checked; writes publish their shards (each with its
    index) when the job commits, and nothing when it fails. docs/tables.md lists the
    options.
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.read.format("tfrecord")``."""
        return "tfrecord"

    def schema(self) -> StructType:
        """The schema inferred from the first records (``sampleRecords``), with the
        columns of ``key=value`` partition folders (driver)."""
        options = parse_options(self.options)
        return infer_spark_schema(find_files(options.paths, options.storage_options), options)

    def reader(self, schema: StructType) -> TFRecordReader:
        """The reader of the DataFrame ``schema``."""
        return TFRecordReader(parse_options(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> TFRecordWriteJob:
        """The write job of a DataFrame of ``schema`` (``overwrite``: ``mode("overwrite")``)."""
        return TFRecordWriteJob(parse_options(self.options), schema, overwrite)

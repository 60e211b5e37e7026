"""``spark.read/write.format("tfrecord")`` over ``s3://`` with the ``storageOptions``
option, on real PySpark 4 in local[2], with fsspec's global configuration pointing at a
decoy (``s3_explicit``): the driver's listing, indexes and commit and the tasks' reads
and writes pass only if the option reached them."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

import tfrecord_engine as tfe
import tfrecord_engine.arrow as tfa
from tfrecord_engine.storage import remote

from ..spark.conftest import spark  # noqa: F401 - the session fixture of tests/spark
from .conftest import S3Explicit

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")


def _listing(s3: S3Explicit, folder: str) -> list[str]:
    fs, inner = remote.filesystem(folder, s3.options)
    return sorted(p[len(inner) + 1 :] for p in fs.find(inner))


@pytest.mark.slow
def test_spark_reads_and_writes_s3_with_storage_options(
    spark: Any,  # noqa: F811 - the fixture imported above
    s3_explicit: S3Explicit,
) -> None:
    s3 = s3_explicit
    table = pa.table({"id": pa.array(range(60), pa.int64()), "group": [i % 2 for i in range(60)]})
    tfa.write(table, f"{s3.url}/in/t", num_shards=2, storage_options=s3.options)
    options = json.dumps(s3.options)

    # A folder URL, walked with the options; the schema inferred from its records.
    df = spark.read.format("tfrecord").option("storageOptions", options).load(f"{s3.url}/in")
    assert sorted(r.id for r in df.collect()) == list(range(60))
    assert s3.endpoint.secret not in df._jdf.queryExecution().toString()

    out = f"{s3.url}/out"
    (
        df.repartition(2)
        .write.format("tfrecord")
        .option("storage_options", options)
        .option("partitionBy", "group")
        .mode("overwrite")
        .save(out)
    )
    written = _listing(s3, out)
    assert not [p for p in written if p.startswith(".tfe-staging-")]
    shards = [p for p in written if p.endswith(".tfrecord") and "/.tfeidx/" not in p]
    assert {p.split("/", 1)[0] for p in shards} == {"group=0", "group=1"}
    assert all(
        f"{p.rsplit('/', 1)[0]}/.tfeidx/{p.rsplit('/', 1)[1]}.tfeidx" in written for p in shards
    )

    back = spark.read.format("tfrecord").option("storageOptions", options).load(out)
    rows = sorted((r.id, r.group) for r in back.collect())
    assert rows == [(i, i % 2) for i in range(60)]
    ds = tfe.RecordDataset(f"{out}/group=1/*.tfrecord", storage_options=s3.options)
    assert len(ds) == 30

"""One local Spark session (``local[2]``) for all of tests/spark, with the TFRecord data
source registered.

Skipped without PySpark or Java, except under ``TFE_REQUIRE_FRAMEWORKS=1`` (``make test``,
CI), where either missing is an error. Spark's Python workers run this interpreter
(``PYSPARK_PYTHON``).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ..optional import require

HERE = os.path.dirname(__file__)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # PySpark 4 warns that it does not support pandas 3 yet (its pandas APIs: unused here).
    for item in items:
        if str(item.fspath).startswith(HERE):
            item.add_marker(
                pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
            )


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The session: two local cores, no UI, quiet logs, the ``tfrecord`` format registered."""
    require("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if os.environ.get("TFE_REQUIRE_FRAMEWORKS") == "1":
            raise RuntimeError("Spark needs Java 17: install openjdk-17-jre-headless")
        pytest.skip("Spark needs Java 17 (java not found)")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from tfrecord_engine.spark import TFRecordDataSource

    session = (
        SparkSession.builder.master("local[2]")
        .appName("tfrecord-engine-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(TFRecordDataSource)
    try:
        yield session
    finally:
        session.stop()

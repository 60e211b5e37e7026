"""Spark's Python Data Source over TFRecord files: the machinery behind
:mod:`tfrecord_engine.spark`.

Internal: :mod:`tfrecord_engine.spark` is the public front. The modules:

- :mod:`.options`: the data source's options (spark-tfrecord's names, and ours);
- :mod:`.files`: the files of a read, with the values of Hive-style ``key=value``
  folders (``partitionBy``);
- :mod:`.schema`: Spark schemas to Arrow schemas and back, and a schema inferred from a
  sample of records;
- :mod:`.reader`: the partitions (cut at record boundaries from the indexes) and the
  read tasks, which yield Arrow record batches;
- :mod:`.writer`: write tasks staging shards and their indexes, published by the job's
  commit (nothing on abort);
- :mod:`.source`: the ``DataSource`` itself.

Needs the ``spark`` extra (pyspark >= 4.0, which brings pyarrow's requirement too);
importing it without pyspark raises :class:`~tfrecord_engine.MissingDependencyError`.
"""

from __future__ import annotations

import importlib.util

from ...errors import MissingDependencyError, install_hint


def _installed(name: str) -> bool:
    # find_spec, not an import: cheap, and it never half-imports pyspark.
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


if not (_installed("pyspark") and _installed("pyarrow")):
    raise MissingDependencyError(
        f"tfrecord_engine.spark needs PySpark 4 and pyarrow: {install_hint('spark')}"
    )

"""Ray Data over TFRecord files: an index-split reader and an atomic, indexed writer.

Needs the ``ray`` extra (``pip install -e '.[ray]'`` in a clone); importing this module
without Ray raises :class:`~tfrecord_engine.MissingDependencyError` at once. TensorFlow is
never needed.

Reading (:func:`read_tfrecords`, :class:`TFRecordDatasource`): the driver opens every
file's sidecar index (built and saved when missing, see :meth:`tfrecord_engine.Index.open`)
and cuts each file into read tasks at record boundaries, by bytes. A big file is spread
over many tasks; a GZIP/ZLIB file is cut at its restart points (our writer's, or the
member starts of a multi-member GZIP file; a foreign single stream stays one task).
Every task knows its exact row count before anything runs, so ``ds.count()`` reads no
data. Each task reads its records with every CRC
checked and yields Arrow blocks: one ``record`` column of bytes, or one column per
feature of ``features=`` (parsed as :func:`tfrecord_engine.parse_example` parses them).

Writing (:func:`write_tfrecords`, :class:`TFRecordDatasink`): each write task writes its
shards with :class:`tfrecord_engine.TFRecordWriter` (and their indexes) into a hidden
staging folder inside the destination; when every task has succeeded the driver renames
them to their final, deterministic names ``<prefix>-00000-of-00012<suffix>``. A failed
write publishes nothing and removes the staging folder.

At cluster scale: :func:`verify` checks every CRC of every file in Ray tasks and returns
the damage as data; :func:`build_indexes` builds missing sidecars in Ray tasks;
:func:`count` adds up the indexes. docs/frameworks.md ("Ray Data") has the details.

The machinery lives in ``tfrecord_engine.hosts.ray`` (internal); this module is its
public name.
"""

from __future__ import annotations

from .hosts.ray.checks import FileCheck, build_indexes, count, verify
from .hosts.ray.read import DEFAULT_RECORDS_PER_BLOCK, TFRecordDatasource, read_tfrecords
from .hosts.ray.write import TFRecordDatasink, write_tfrecords

__all__ = [
    "DEFAULT_RECORDS_PER_BLOCK",
    "FileCheck",
    "TFRecordDatasink",
    "TFRecordDatasource",
    "build_indexes",
    "count",
    "read_tfrecords",
    "verify",
    "write_tfrecords",
]

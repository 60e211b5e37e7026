"""Apache Beam I/O for TFRecord files, split at record boundaries by the sidecar index.

The ``beam`` extra (``pip install -e '.[beam]'`` in a clone). Reading and writing:

- :class:`ReadTFRecords` matches file patterns, then reads each file through a
  **splittable DoFn** whose restriction is a range of record numbers. The pieces are cut
  at record boundaries taken from each file's index (the ``.tfeidx`` sidecar, built on
  the worker when missing), so one big file spreads over many bundles, and the runner may
  split a piece again while it is read (dynamic rebalancing). GZIP/ZLIB files split only
  at their restart points (our writer's full flushes, the member starts of bgzip,
  concatenated or appended GZIP files); a single stream without any is one piece.
  Every CRC is checked by this package's reader (no ``crcmod``); under
  ``on_damage="skip"`` the damaged regions come out as
  :class:`~tfrecord_engine.DamageReport` values on a tagged output, ``"damage"``.
- :class:`WriteTFRecords` writes shards with :class:`~tfrecord_engine.TFRecordWriter`
  (``index=True`` by default) into a hidden temporary folder beside the output, and
  publishes each shard and its index together once every bundle has finished.

Whole-file operations on the workers (docs/scale-out.md): :class:`BuildIndexes`,
:class:`VerifyShards` (damage as data), :class:`CountRecords` (from indexes, no data
read) and :class:`Reshard` (a seeded global permutation into shards of even sizes).

How a read is cut (one file of ``n`` records)::

    match patterns -> Reshuffle -> index each file -> restriction [0, n + 1)
      positions 0 .. n-1: the records; position n: the file's damage reports (if any)
      initial split: at record boundaries about ``desired_bundle_bytes`` apart
      try_split: any record (plain files) or the next restart point (GZIP/ZLIB)

The transforms live in ``tfrecord_engine.hosts.beam`` (internal); this module is their
public name. Only these two import ``apache_beam``; the rest of the package never does.
"""

from __future__ import annotations

from .hosts.beam.pieces import DEFAULT_BUNDLE_BYTES, detect_compression
from .hosts.beam.read import DAMAGE, RECORDS, ReadTFRecords
from .hosts.beam.reshard import Reshard
from .hosts.beam.tools import FILES, TOTAL, BuildIndexes, CountRecords, VerifyShards
from .hosts.beam.write import DEFAULT_SHARD_NAME_TEMPLATE, WriteTFRecords
from .hosts.fileops import FileCount, IndexSummary, ShardReport

__all__ = [
    "DAMAGE",
    "DEFAULT_BUNDLE_BYTES",
    "DEFAULT_SHARD_NAME_TEMPLATE",
    "FILES",
    "RECORDS",
    "TOTAL",
    "BuildIndexes",
    "CountRecords",
    "FileCount",
    "IndexSummary",
    "ReadTFRecords",
    "Reshard",
    "ShardReport",
    "VerifyShards",
    "WriteTFRecords",
    "detect_compression",
]

"""Sharded output: ``prefix-00000-of-00010.tfrecord`` files written one after another."""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import TracebackType
from typing import Final

from ..errors import InvalidArgumentError
from ..records.compression import Compression
from ..writing.writer import TFRecordWriter
from .common import is_remote

__all__ = ["ShardedWriter", "resolve_shards", "shard_paths"]

_EXTENSIONS: Final = {Compression.NONE: "", Compression.GZIP: ".gz", Compression.ZLIB: ".zz"}


def shard_paths(prefix: str, shards: int, compression: Compression) -> list[str]:
    """Shard names as Beam and TFDS spell them (at least 5 digits), plus ``.gz``/``.zz``.

    >>> shard_paths("out/train", 2, Compression.GZIP)
    ['out/train-00000-of-00002.tfrecord.gz', 'out/train-00001-of-00002.tfrecord.gz']
    """
    width = max(5, len(str(shards)))
    ext = ".tfrecord" + _EXTENSIONS[compression]
    return [f"{prefix}-{i:0{width}d}-of-{shards:0{width}d}{ext}" for i in range(shards)]


def resolve_shards(total: int, shards: int | None, per_shard: int | None) -> int:
    """The number of shards from ``--shards`` or ``--records-per-shard`` (default 1).

    >>> resolve_shards(10, None, 4), resolve_shards(10, 3, None), resolve_shards(0, None, 4)
    (3, 3, 1)
    """
    if shards is not None and per_shard is not None:
        raise InvalidArgumentError("give --shards or --records-per-shard, not both")
    if per_shard is not None:
        return max(1, -(-total // per_shard))
    return 1 if shards is None else shards


class ShardedWriter:
    """Writes ``total`` records into ``shards`` files of sizes that differ by at most one.

    Each shard is a :class:`~tfrecord_engine.TFRecordWriter` (atomic, optionally with its
    sidecar index), opened when its first record arrives and published when it is full,
    so at most one file is open. Shards that receive no record (more shards than
    records) are written empty. Writing more or fewer than ``total`` records raises.
    """

    def __init__(
        self,
        prefix: str,
        total: int,
        shards: int,
        compression: Compression,
        *,
        index: bool = True,
    ) -> None:
        if shards < 1:
            raise InvalidArgumentError(f"need at least one shard, got {shards}")
        self.paths = shard_paths(prefix, shards, compression)
        self.total = total
        self.counts = [(i + 1) * total // shards - i * total // shards for i in range(shards)]
        self._compression = compression
        self._index = index
        self._shard = 0
        self._written = 0  # records in the current shard
        self._writer: TFRecordWriter | None = None
        parent = os.path.dirname(prefix)
        if parent and not is_remote(prefix):
            os.makedirs(parent, exist_ok=True)

    def _publish_full(self) -> None:
        # Publish the current shard once full, and every empty shard after it.
        while self._shard < len(self.paths) and self._written >= self.counts[self._shard]:
            writer = self._writer or TFRecordWriter(
                self.paths[self._shard], self._compression, index=self._index
            )
            self._writer = None
            writer.close()
            self._shard += 1
            self._written = 0

    def write_many(self, records: Iterable[bytes]) -> None:
        """Writes records in order, moving to the next shard when one is full."""
        for record in records:
            self._publish_full()
            if self._shard >= len(self.paths):
                raise InvalidArgumentError(f"more than the {self.total} records announced")
            if self._writer is None:
                self._writer = TFRecordWriter(
                    self.paths[self._shard], self._compression, index=self._index
                )
            self._writer.write(record)
            self._written += 1

    def close(self) -> None:
        """Publishes the remaining shards; raises if fewer records came than announced."""
        self._publish_full()
        if self._shard < len(self.paths):
            written = sum(self.counts[: self._shard]) + self._written
            self.abort()
            raise InvalidArgumentError(f"{written} records written, {self.total} announced")

    def abort(self) -> None:
        """Drops the shard being written (shards already published stay)."""
        if self._writer is not None:
            self._writer.abort()
            self._writer = None

    def __enter__(self) -> ShardedWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
